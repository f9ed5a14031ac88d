//! The console on a phone, in headless Chromium at 375 px: nothing wider than
//! the screen (the page does not scroll sideways), both clocks labelled White
//! and Black, the board's coordinates, and moves the daemon inferred across a
//! gap in the line marked as such.
//!
//! `EB_SCREENSHOT_PHONE=PATH cargo test --test suite console::phone` also writes a
//! picture of the console on the phone.

use std::time::Instant;

use eboard_bridge::protocol::{BoardMessage, Placement};
use serde_json::{Value, json};
use shakmaty::{Chess, Position};

use super::{SIGN_IN_READY, card_text, open_action, open_console, sign_in};
use crate::common::browser::{Browser, CHROMIUM};
use crate::common::hall::{Hall, PASSWORD, USER, standing};
use crate::common::{Need, need, play_uci};

/// The phone's width (CSS pixels) and height.
const WIDTH: u32 = 375;
const HEIGHT: u32 = 740;

/// A board dump of the position after `moves`, as an `rx` record's hex.
fn dump_after(moves: &[&str]) -> String {
    let moves: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
    let pos: Chess = play_uci(&moves);
    BoardMessage::BoardDump(Box::new(Placement::from_board(pos.board())))
        .encode()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What sticks out to the right of the screen: each element's tag, class and
/// right edge.
const WIDER: &str = r#"[...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
  .slice(0, 8).map(e => `${e.tagName}.${e.className} right=${e.getBoundingClientRect().right}`)"#;

/// The page's width and what it would scroll to.
const WIDTHS: &str = "({ inner: window.innerWidth, client: document.documentElement.clientWidth, \
  scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth })";

async fn fits(browser: &mut Browser, what: &str) {
    let w = browser.eval(WIDTHS).await;
    eprintln!("console: at {WIDTH} px, {what}: {w}");
    let scroll = w["scroll"]
        .as_u64()
        .unwrap_or(u64::MAX)
        .max(w["body"].as_u64().unwrap_or(u64::MAX));
    assert!(
        scroll <= u64::from(WIDTH),
        "{what}: the page is {scroll} px wide at {WIDTH} px; wider: {}",
        browser.eval(WIDER).await
    );
    // (A phone widens its viewport to a page wider than the screen.)
    assert_eq!(w["inner"], WIDTH, "the viewport is not {WIDTH} px wide: {w}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_375_px_nothing_is_clipped_and_clocks_coordinates_and_inferred_moves_are_shown() {
    if !need(&[Need::AnyTool(&CHROMIUM, "chromium")]) {
        return;
    }
    let _one = crate::common::browser::ONE_CHROMIUM.lock().await;
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    // Board 1: the line loses 1. e4 e5; a dump then shows them played, and the
    // daemon infers them. Board 2: a touch-move (its alert's long words).
    let logs = vec![
        standing(&format!("8 rx {}\n", dump_after(&["e2e4", "e7e5"]))),
        standing("16 lift g1 N\n20 place g1 N\n24 lift e2 P\n28 place e4 P\n"),
    ];
    let hall = Hall::open(dir.path(), logs, "").await;
    let (cookie, _) = hall.login().await;
    let until = Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let state = hall
            .get("/arbiter/api/state", &[("Cookie", &cookie)])
            .await
            .json();
        let b1 = state["boards"]
            .as_array()
            .and_then(|l| l.iter().find(|b| b["id"] == "board1").cloned())
            .unwrap_or(Value::Null);
        let b2_alert = state["boards"].as_array().is_some_and(|l| {
            l.iter()
                .any(|b| b["id"] == "board2" && b["alerts"].as_array().is_some_and(|a| !a.is_empty()))
        });
        if b1["inferred"] == json!([0, 1]) && b2_alert {
            assert_eq!(b1["moves"], json!(["e4", "e5"]));
            break;
        }
        assert!(
            Instant::now() < until,
            "board 1's inferred moves and board 2's alert not there in 30 s: {b1}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    let mut browser = open_console(&hall, WIDTH, HEIGHT).await;
    browser
        .call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 2, "mobile": true}),
        )
        .await;
    browser.wait_true("the sign-in page", 15, SIGN_IN_READY).await;
    fits(&mut browser, "the sign-in page").await;
    browser.eval(&sign_in(USER, PASSWORD)).await;
    browser
        .wait_true(
            "the console with its boards and board 2's alert",
            15,
            "document.querySelectorAll('section.board').length === 2 && !!document.querySelector('section.board li.alert')",
        )
        .await;
    fits(&mut browser, "the console").await;

    // Both clocks say whose they are.
    let clocks = browser
        .eval("[...document.querySelectorAll('section.board[data-board=\"board1\"] .clock')].map(c => c.textContent)")
        .await;
    assert_eq!(clocks, json!(["White 1:30:00", "Black 1:30:00"]));
    // The coordinates: the files along the first rank, the ranks up the a-file,
    // in the corners of their squares.
    let coords = browser
        .eval(
            "(() => { const c = document.querySelector('section.board[data-board=\"board1\"]');
              const t = s => [...c.querySelectorAll(s)].map(e => e.textContent).join('');
              return { files: t('.coord.file'), ranks: t('.coord.rank'),
                a1: t('[data-square=\"a1\"] .coord'),
                h1: c.querySelector('[data-square=\"h1\"] .coord').textContent }; })()",
        )
        .await;
    assert_eq!(
        coords,
        json!({"files": "abcdefgh", "ranks": "87654321", "a1": "1a", "h1": "h"})
    );
    // The inferred moves: marked, and the mark explained.
    let inferred = browser
        .eval("[...document.querySelectorAll('section.board[data-board=\"board1\"] .mv')].map(m => [m.textContent, m.classList.contains('inferred'), getComputedStyle(m).fontStyle])")
        .await;
    assert_eq!(
        inferred,
        json!([["e4?", true, "italic"], ["e5?", true, "italic"]])
    );
    let card = browser.eval(&card_text("board1")).await;
    assert!(
        card.as_str()
            .unwrap_or_default()
            .contains("inferred across a gap in the line"),
        "{card}"
    );
    if let Ok(path) = std::env::var("EB_SCREENSHOT_PHONE") {
        let png = browser.screenshot().await;
        std::fs::write(&path, png).unwrap();
        eprintln!("console: screenshot in {path}");
    }

    // A decision's dialog fits too.
    assert_eq!(
        browser.eval(&open_action("board1", "position")).await,
        Value::Bool(true)
    );
    let dialog = browser
        .eval("(() => { const d = document.getElementById('confirm'); return [d.scrollWidth, d.clientWidth, Math.round(d.getBoundingClientRect().right)]; })()")
        .await;
    let d: Vec<u64> = serde_json::from_value(dialog.clone()).unwrap();
    assert!(
        d[0] <= d[1] && d[2] <= u64::from(WIDTH),
        "the dialog is wider than the screen: {dialog}"
    );
    fits(&mut browser, "the decision's dialog").await;
    browser.close().await;
    eprintln!(
        "console: the phone test took {} ms",
        started.elapsed().as_millis()
    );
}
