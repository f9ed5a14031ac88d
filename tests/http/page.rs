//! The live page in headless Chromium, and a Bluetooth board's battery.

use super::*;

const PAGE_STATE: &str = r#"(() => {
  const card = document.querySelector('section.board');
  if (!card) return null;
  const text = sel => card.querySelector(sel)?.textContent ?? '';
  return {
    board: card.dataset.board,
    moves: [...card.querySelectorAll('.moves .mv')].map(e => e.textContent),
    white: text('.clock.white'), black: text('.clock.black'),
    running: card.querySelector('.clock.running')?.classList.contains('white') ? 'white'
      : card.querySelector('.clock.running') ? 'black' : 'none',
    players: [text('.player.white .name'), text('.player.black .name')],
    pieces: card.querySelectorAll('.diagram .pc').length,
    result: text('.result'),
    link: document.getElementById('link').textContent,
  };
})()"#;

fn clock_secs(text: &str) -> u64 {
    text.split(':')
        .fold(0, |acc, p| acc * 60 + p.parse::<u64>().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_page_in_chromium_follows_the_game() {
    if !need(&[Need::AnyTool(&CHROMIUM, "chromium")]) {
        return;
    }
    let _one = crate::common::browser::ONE_CHROMIUM.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let game = &mated_game();
    let expected = sans(&game.start, &game.moves);
    let result = if game.moves.len() % 2 == 1 { "1-0" } else { "0-1" };
    let (daemon, addr, emulator) =
        start_on_loopback(dir.path(), game_log(&game.start, &game.moves, 11, 3000), 3.0).await;
    let snap = daemon.boards()[0].2.clone();
    wait_for("some moves", 30, || snap.borrow().moves.len() >= 4).await;
    let mut browser = Browser::open(&format!("http://{addr}/"))
        .within(60, "headless Chromium to open the live page")
        .await;
    // The page shows the board with its moves so far, then follows the game live
    // from /api/events (no reload).
    let mut early = Value::Null;
    for _ in 0..100 {
        early = browser.eval(PAGE_STATE).await;
        if early["moves"].as_array().is_some_and(|m| m.len() >= 4) && early["link"] == "live" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let early_moves: Vec<String> = serde_json::from_value(early["moves"].clone()).unwrap();
    assert!(early_moves.len() >= 4, "{early}");
    assert!(
        early_moves.len() < expected.len(),
        "the page opened while the game plays: {early}"
    );
    assert_eq!(early_moves[..], expected[..early_moves.len()]);
    assert_eq!(early["board"], "board0");
    assert_eq!(
        early["players"],
        json!(["Anderssen, Adolf", "Kieseritzky, Lionel"])
    );
    assert_eq!(early["link"], "live");
    // Clocks: H:MM:SS near the 1:30:00 the clock started from; the one that runs
    // is the side to move.
    let (w, b) = (
        clock_secs(early["white"].as_str().unwrap()),
        clock_secs(early["black"].as_str().unwrap()),
    );
    assert!(
        (5200..=5400).contains(&w) && (5200..=5400).contains(&b),
        "{early}"
    );
    wait_for("the game's end", 90, || !snap.borrow().result.is_empty()).await;
    let mut last = Value::Null;
    for _ in 0..50 {
        last = browser.eval(PAGE_STATE).await;
        if last["result"] == result {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let moves: Vec<String> = serde_json::from_value(last["moves"].clone()).unwrap();
    assert_eq!(moves, expected, "{last}");
    assert_eq!(last["result"], result);
    let s = snap.borrow().clone();
    // The clocks as the board last reported them (a finished game's clock stands).
    for (side, ms) in [("white", s.white_clock_ms), ("black", s.black_clock_ms)] {
        let shown = clock_secs(last[side].as_str().unwrap()) as i64;
        assert!(
            (shown - ms / 1000).abs() <= 1,
            "{side}: page {shown} s, board {ms} ms"
        );
    }
    let mut end = game.start.clone();
    for m in &game.moves {
        end.play_unchecked(*m);
    }
    assert_eq!(last["pieces"], end.board().occupied().count());
    browser.close().await;
    stop(daemon, emulator).await;
}

/// A Bluetooth board answers the battery question: LiveChess clients get its
/// charge as `"84%"` in `eboards`, `/api/boards` as `Battery` (a wired board's is
/// null: the LiveChess test above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bluetooth_board_reports_its_battery() {
    let dir = tempfile::tempdir().unwrap();
    let game = &pgn_games("games/kasparov-deep-blue-1997.pgn")[0];
    let (daemon, addr, emulator) = start_board(
        dir.path(),
        game_log(&game.start, &game.moves[..6], 7, 1500),
        6.0,
        HttpConfig::on("127.0.0.1:0"),
        Some(84),
    )
    .await;
    let snap = daemon.boards()[0].2.clone();
    wait_for("the board's battery", 10, || snap.borrow().battery == Some(84)).await;

    let mut client = LiveChess::connect(addr, None).await;
    client.send(json!({"id": 1, "call": "eboards"})).await;
    let list = client.recv(5).await.unwrap();
    assert_eq!(list["param"][0]["serialnr"], "23946");
    assert_eq!(list["param"][0]["battery"], "84%", "{list}");

    let r = get(addr, "/api/boards", &[]).await;
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v[0]["Battery"], 84, "{}", v[0]);
    stop(daemon, emulator).await;
}
