//! The arbiters' console in headless Chromium (over the DevTools protocol),
//! against the real binary bridging emulated boards: signing in, an illegal
//! move at the top within a second, decisions behind their confirmation that
//! reach the PGN, D-Bus and the clock, and the decisions and acknowledgements
//! still there after a SIGKILL and a restart.
//!
//! `EB_SCREENSHOT=docs/arbiter-console.png cargo test --test console` also
//! writes the screenshot of the console with its alerts that docs/ shows.

mod common;

use std::time::{Duration, Instant};

use common::browser::{Browser, CHROMIUM};
use common::hall::{Hall, PASSWORD, USER, standing};
use common::{Need, Within, need};
use serde_json::Value;

/// The first board's card on the page: its id, urgency and alerts.
const TOP: &str = r#"(() => {
  const c = document.querySelector('section.board');
  if (!c) return null;
  return { board: c.dataset.board, urgency: c.querySelector('.urgency')?.textContent,
    alerts: [...c.querySelectorAll('li.alert')].map(a => a.textContent) };
})()"#;

/// Fills the sign-in form and sends it.
fn sign_in(user: &str, password: &str) -> String {
    format!(
        r#"(() => {{ document.getElementById('user').value = {user:?};
  document.getElementById('password').value = {password:?};
  document.getElementById('go').click(); return true; }})()"#
    )
}

/// Chooses `action` on the card of `board` and opens its dialog.
fn open_action(board: &str, action: &str) -> String {
    format!(
        r#"(() => {{ const c = document.querySelector('section.board[data-board="{board}"]');
  c.querySelector('select.action').value = {action:?}; c.querySelector('button.act').click();
  return document.getElementById('confirm').open; }})()"#
    )
}

/// Sets the dialog's fields (id → value).
fn fill(fields: &[(&str, &str)]) -> String {
    let sets: String = fields
        .iter()
        .map(|(id, v)| format!("document.getElementById({id:?}).value = {v:?};"))
        .collect();
    format!("(() => {{ {sets} return true; }})()")
}

const PRESS_OK: &str = "(() => { document.getElementById('confirm-ok').click(); return true; })()";

/// What the dialog asks to confirm (after the first press).
const WHAT: &str = "document.getElementById('confirm-what')?.textContent ?? ''";

fn card_text(board: &str) -> String {
    format!(r#"document.querySelector('section.board[data-board="{board}"]')?.textContent ?? ''"#)
}

async fn press_twice(browser: &mut Browser, expect: &str) {
    assert_eq!(browser.eval(PRESS_OK).await, Value::Bool(true));
    let what = browser.eval(WHAT).await;
    assert!(what.as_str().unwrap_or_default().contains(expect), "the dialog asks: {what}");
    // Nothing is decided before the second press.
    assert_eq!(browser.eval("document.getElementById('confirm').open").await, Value::Bool(true));
    assert_eq!(browser.eval(PRESS_OK).await, Value::Bool(true));
    browser
        .wait_true("the dialog to close", 10, "!document.getElementById('confirm').open")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_chromium_signs_in_ranks_alerts_decides_and_survives_a_kill() {
    if !need(&[Need::AnyTool(&CHROMIUM, "chromium")]) {
        return;
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Board 1: e2 to e5 after 24 s of log time (3 s at speed 8): an illegal move.
    // Boards 2 and 3 stand in the start position.
    let logs = vec![
        standing("24 lift e2 P\n24.8 place e5 P\n"),
        standing(""),
        standing(""),
    ];
    let mut hall = Hall::open(d, logs, "").await;
    let url = format!("http://{}/arbiter", hall.addr);
    let mut browser = Browser::open_sized(&url, 1280, 900)
        .within(60, "headless Chromium to open the console")
        .await;
    browser
        .wait_true("the sign-in page", 15, "location.pathname === '/arbiter/login' && !!document.getElementById('go')")
        .await;

    // A wrong password is refused and says so; the right one opens the console.
    browser.eval(&sign_in(USER, "not the password")).await;
    browser
        .wait_true("the refusal", 15, "document.getElementById('message').textContent.includes('wrong')")
        .await;
    assert_eq!(browser.eval("location.pathname").await, "/arbiter/login");
    browser.eval(&sign_in(USER, PASSWORD)).await;
    browser
        .wait_true(
            "the console with its boards",
            15,
            "location.pathname === '/arbiter' && document.querySelectorAll('section.board').length === 3",
        )
        .await;
    assert_eq!(browser.eval("document.getElementById('who').textContent").await, USER);

    // The illegal move: at the top of the page within a second of the daemon
    // seeing it (its irregularity in /api/boards).
    let until = Instant::now() + Duration::from_secs(30);
    while hall.board(1).await["Irregularity"].as_str().unwrap_or_default().is_empty() {
        assert!(Instant::now() < until, "no irregularity on board 1 in 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = Instant::now();
    let mut top = Value::Null;
    while seen.elapsed() < Duration::from_secs(2) {
        top = browser.eval(TOP).await;
        if top["board"] == "board1" && top["urgency"] == "irregular position" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let shown_after = seen.elapsed();
    assert_eq!(top["board"], "board1", "{top}");
    assert_eq!(top["urgency"], "irregular position", "{top}");
    assert!(shown_after < Duration::from_secs(1), "shown after {shown_after:?}");
    eprintln!("console: the illegal move at the top {} ms after the daemon saw it", shown_after.as_millis());
    let alert = top["alerts"][0].as_str().unwrap_or_default().to_string();
    assert!(alert.contains("illegal move") && alert.contains("7.5.1"), "{alert}");
    let highlighted = "document.querySelector('section.board[data-board=\"board1\"]').classList.contains('open') \
        && !!document.querySelector('section.board[data-board=\"board1\"] li.alert.new button.ack')";
    assert_eq!(browser.eval(highlighted).await, Value::Bool(true));
    if let Ok(path) = std::env::var("EB_SCREENSHOT") {
        // The page with its alert, as docs/ shows it.
        tokio::time::sleep(Duration::from_millis(600)).await;
        let png = browser.screenshot().await;
        std::fs::write(&path, png).unwrap();
        eprintln!("console: screenshot in {path}");
    }

    // Acknowledged: the alert says by whom, for every arbiter (the API).
    browser
        .eval("document.querySelector('section.board[data-board=\"board1\"] button.ack').click() ?? true")
        .await;
    browser
        .wait_true("the acknowledgement", 10, &format!("({}).includes('seen by {USER}')", card_text("board1")))
        .await;

    // "Set result 1-0" on board 2, confirmed: the PGN and D-Bus have it.
    assert_eq!(browser.eval(&open_action("board2", "result")).await, Value::Bool(true));
    browser.eval(&fill(&[("f-result", "1-0")])).await;
    press_twice(&mut browser, "Set the result of board 2 to 1-0").await;
    let until = Instant::now() + Duration::from_secs(20);
    while hall.property(2, "Result").await != "1-0" {
        assert!(Instant::now() < until, "D-Bus: board 2's Result is not 1-0 in 20 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pgn_has = |d: &std::path::Path| {
        common::pgn_files(&d.join("live"))
            .iter()
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("game-2")))
            .any(|p| std::fs::read_to_string(p).unwrap_or_default().contains("[Result \"1-0\"]"))
    };
    let until = Instant::now() + Duration::from_secs(20);
    while !pgn_has(d) {
        assert!(Instant::now() < until, "board 2's PGN has no [Result \"1-0\"] in 20 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    browser
        .wait_true("the decision in board 2's history", 10, &format!("({}).includes('SetResult')", card_text("board2")))
        .await;
    let journal = std::fs::read_dir(d.join("state"))
        .unwrap()
        .flatten()
        .flat_map(|e| walk(&e.path()))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .any(|t| t.contains(&format!("note decided by {USER}")) && t.contains("arbiter SetResult \"1-0\""));
    assert!(journal, "the recording journals the decision with the arbiter's name");

    // "Add 2 minutes to black" on board 3: its clock shows 1:32:00 for black.
    let before = hall.board(3).await["BlackClockMs"].as_i64().unwrap();
    assert_eq!(browser.eval(&open_action("board3", "addtime")).await, Value::Bool(true));
    browser
        .eval(&fill(&[("f-side", "black"), ("f-amount", "2"), ("f-unit", "60")]))
        .await;
    press_twice(&mut browser, "Add 120 s to black on board 3").await;
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let after = hall.board(3).await["BlackClockMs"].as_i64().unwrap_or(0);
        if (after - before - 120_000).abs() <= 1000 {
            break;
        }
        assert!(Instant::now() < until, "black's clock went from {before} to {after} ms, not 2 minutes more");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    browser
        .wait_true("the clock on the page", 10, &format!("({}).includes('1:32:00')", card_text("board3")))
        .await;

    // SIGKILL and a restart: the session is gone (back to the sign-in), the
    // decisions and the acknowledgement are not.
    hall.kill();
    hall.start().await;
    browser
        .wait_true("the sign-in page after the restart", 20, "location.pathname === '/arbiter/login'")
        .await;
    browser.eval(&sign_in(USER, PASSWORD)).await;
    browser
        .wait_true("the console again", 15, "document.querySelectorAll('section.board').length === 3")
        .await;
    browser
        .wait_true("board 2's decision", 10, &format!("({}).includes('SetResult')", card_text("board2")))
        .await;
    browser
        .wait_true("board 3's decision", 10, &format!("({}).includes('AddTime')", card_text("board3")))
        .await;
    browser
        .wait_true("the acknowledgement", 10, &format!("({}).includes('seen by {USER}')", card_text("board1")))
        .await;
    browser.close().await;
    eprintln!("console: the Chromium test took {} ms", started.elapsed().as_millis());
}

/// Every file under `path`.
fn walk(path: &std::path::Path) -> Vec<std::path::PathBuf> {
    if path.is_dir() {
        std::fs::read_dir(path)
            .map(|r| r.flatten().flat_map(|e| walk(&e.path())).collect())
            .unwrap_or_default()
    } else {
        vec![path.to_path_buf()]
    }
}
