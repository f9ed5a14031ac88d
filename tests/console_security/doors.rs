//! Every door the same (issue 57): the same decision on the same game through
//! D-Bus (the method named after it, and `Decide`), `ctl` and the console's
//! API gets the same answer in the same words, and what is accepted is
//! journaled as the same `arbiter` record. A decision that reopens a finished
//! game, replaces it in its round, or ends one under way is refused at every
//! door unless confirmed, and then nothing changes.

use super::*;
use common::process::ctl;

/// Fool's mate, the board left as it stands: the game ends 0-1 when the mate
/// is made.
const MATE: &str = "1 lift f2 P\n1.2 place f3 P\n3 lift e7 p\n3.2 place e5 p\n5 lift g2 P\n5.3 place g4 P\n\
                    7 lift d8 q\n7.3 place h4 q\n";

/// Two plies, the game under way.
const TWO_PLIES: &str = "1 lift e2 P\n1.2 place e4 P\n3 lift e7 p\n3.2 place e5 p\n";

/// The position after 1. f3 (a position of board 1's game).
const AFTER_F3: &str = "rnbqkbnr/pppppppp/8/8/8/5P2/PPPPP1PP/RNBQKBNR b KQkq - 0 1";

/// The position after 2... Qh4#.
const MATED: &str = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3";

/// A method call on board `n`'s object: `Err((error name, message))` when refused.
async fn bus_call<B>(hall: &Hall, n: u64, method: &str, body: &B) -> Result<(), (String, String)>
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
{
    common::process::board_call(&hall.bus, &format!("board{n}"), method, body).await
}

/// Whether board `n`'s result is `want` (what it is, else).
async fn result_is(hall: &Hall, n: u64, want: &str) -> Result<(), String> {
    let b = hall.board(n).await;
    if b["Result"] == want {
        Ok(())
    } else {
        Err(b.to_string())
    }
}

/// Board `n`'s result and moves, as `/api/boards` shows them.
async fn game_of(hall: &Hall, n: u64) -> (Value, Value) {
    let b = hall.board(n).await;
    (b["Result"].clone(), b["Moves"].clone())
}

/// The `arbiter` records of the recordings under `dir` naming `method`, each
/// without its time.
fn arbiter_records(dir: &std::path::Path, method: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "esl") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                for line in text.lines() {
                    if let Some((_, rest)) = line.split_once(' ')
                        && rest.starts_with(&format!("arbiter {method} "))
                    {
                        out.push(rest.to_string());
                    }
                }
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_door_gives_the_same_answer_in_the_same_words() {
    let dir = tempfile::tempdir().unwrap();
    let hall = Hall::open(dir.path(), vec![standing(MATE), standing(TWO_PLIES)], "").await;
    common::wait_until("board 1 mated and board 2 two plies in", 30, || async {
        let (one, two) = (hall.board(1).await, hall.board(2).await);
        if one["Result"] == "0-1" && two["Moves"].as_array().is_some_and(|m| m.len() == 2) {
            Ok(())
        } else {
            Err(format!("{one}\n{two}"))
        }
    })
    .await;
    let (cookie, csrf) = hall.login().await;
    let before = [game_of(&hall, 1).await, game_of(&hall, 2).await];

    // (board, method, its D-Bus arguments as JSON, ctl's words): each needs
    // confirming on its board (board 1's game is over, board 2's under way).
    let cases: Vec<(u64, &str, Value, Vec<String>)> = vec![
        (1, "NewGame", json!([""]), vec!["new-game".into(), "1".into()]),
        (
            1,
            "Reinstate",
            json!([1]),
            vec!["reinstate".into(), "1".into(), "1".into()],
        ),
        (
            1,
            "SetResult",
            json!(["1-0"]),
            vec!["result".into(), "1".into(), "1-0".into()],
        ),
        (1, "SetPosition", json!([AFTER_F3]), {
            let mut w = vec!["position".to_string(), "1".into()];
            w.extend(AFTER_F3.split(' ').map(str::to_string));
            w
        }),
        (2, "NewGame", json!([""]), vec!["new-game".into(), "2".into()]),
    ];
    for (n, method, args, words) in &cases {
        // The console: refused with the question to ask.
        let body = json!({"board": format!("board{n}"), "method": method, "args": args}).to_string();
        let console = post_decision(&hall, &cookie, &csrf, &body).await;
        assert_eq!(console.status, 409, "{method} on board {n}: {}", console.text());
        let what = console.json()["confirm"].as_str().unwrap_or_default().to_string();
        assert!(!what.is_empty(), "{method} on board {n}: {}", console.text());
        let refusal = format!("{what}; nothing was changed (run it again with --force to do it)");
        // D-Bus, the method named after the decision (no way to confirm).
        let named = match args.as_array().unwrap().as_slice() {
            [Value::String(s)] => bus_call(&hall, *n, method, &(s.as_str(),)).await,
            [Value::Number(p)] => bus_call(&hall, *n, method, &(p.as_u64().unwrap() as u32,)).await,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            named,
            Err(("org.eboardbridge.Error.NeedsForce".into(), refusal.clone())),
            "{method} on board {n} over D-Bus"
        );
        // D-Bus `Decide`, not confirmed.
        let decide = bus_call(&hall, *n, "Decide", &(*method, args.to_string().as_str(), false)).await;
        assert_eq!(
            decide,
            Err(("org.eboardbridge.Error.NeedsForce".into(), refusal.clone())),
            "{method} on board {n} over D-Bus Decide"
        );
        // ctl without --force.
        let argv: Vec<&str> = words.iter().map(String::as_str).collect();
        let o = ctl(&hall.bus, &argv).await;
        assert_eq!(o.code, 1, "ctl {argv:?}: {}{}", o.out, o.err);
        assert!(o.err.contains(&refusal), "ctl {argv:?}: {}", o.err);
    }
    // Nothing changed on either board.
    assert_eq!([game_of(&hall, 1).await, game_of(&hall, 2).await], before);
    // The round's results still say 1 game over, 0-1 (issue 57: an
    // unconfirmed new game erased it).
    let csv = ctl(&hall.bus, &["results", "--format", "csv"]).await;
    assert_eq!(csv.code, 0, "{}", csv.err);
    assert!(
        csv.out.lines().any(|l| l.starts_with("1,") && l.contains("0-1")),
        "{}",
        csv.out
    );

    // Issue 57, defect 3: the mated position set again, confirmed, leaves
    // the game over as the position says (before, it was reopened on the
    // mate); a result other than the mate's is refused with the article.
    let mut argv = vec!["position", "1"];
    argv.extend(MATED.split(' '));
    argv.push("--force");
    let o = ctl(&hall.bus, &argv).await;
    assert_eq!(o.code, 0, "{}{}", o.out, o.err);
    let o = ctl(&hall.bus, &["result", "1", "1-0", "--force"]).await;
    assert_eq!(o.code, 1, "{}{}", o.out, o.err);
    assert!(o.err.contains("checkmate (5.1.1)"), "{}", o.err);
    common::wait_until("board 1 still mated", 10, || result_is(&hall, 1, "0-1")).await;
    assert_eq!(game_of(&hall, 1).await, before[0].clone());

    // The same decision accepted at each door is the same record.
    let players = json!(["Ana, A", "Bo, B"]);
    bus_call(
        &hall,
        2,
        "Decide",
        &("SetPlayers", players.to_string().as_str(), false),
    )
    .await
    .unwrap();
    let body = json!({"board": "board2", "method": "SetPlayers", "args": players}).to_string();
    let console = post_decision(&hall, &cookie, &csrf, &body).await;
    assert_eq!(console.status, 200, "{}", console.text());
    let o = ctl(&hall.bus, &["players", "2", "Ana, A", "Bo, B"]).await;
    assert_eq!(o.code, 0, "{}{}", o.out, o.err);
    let records = arbiter_records(&hall.dir, "SetPlayers");
    assert_eq!(records.len(), 3, "{records:?}");
    assert!(records.iter().all(|r| *r == records[0]), "{records:?}");

    // Confirmed, the decision is made whichever door: a new game on the
    // finished board through D-Bus `Decide`, a result on the game under way
    // through the console (it needs no confirming there).
    bus_call(&hall, 1, "Decide", &("NewGame", "[\"\"]", true))
        .await
        .unwrap();
    common::wait_until("board 1's new game", 10, || result_is(&hall, 1, "")).await;
    let body = json!({"board": "board2", "method": "SetResult", "args": ["1/2-1/2"]}).to_string();
    let console = post_decision(&hall, &cookie, &csrf, &body).await;
    assert_eq!(console.status, 200, "{}", console.text());
    // The console takes every decision a board takes, undo included.
    let body = json!({"board": "board2", "method": "Undo", "args": []}).to_string();
    let console = post_decision(&hall, &cookie, &csrf, &body).await;
    assert_eq!(console.status, 200, "{}", console.text());
    common::wait_until("board 2's result taken back", 10, || result_is(&hall, 2, "")).await;
}
