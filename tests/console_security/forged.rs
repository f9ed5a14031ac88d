//! A forged line in the daemon's log (issue 60): a player's name with a
//! newline in a refused decision wrote a line of its own. Every value from
//! outside is logged escaped, on its line.

use serde_json::json;

use crate::common::hall::{Hall, standing};
use crate::common::wait_for;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newline_in_a_player_s_name_stays_one_line_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut hall = Hall::open(dir.path(), vec![standing("")], "").await;
    let (cookie, csrf) = hall.login().await;
    let forged = "Line1\nINFO eboard_bridge: FAKE LOG LINE";
    let coloured = "Red\u{1b}[31m\rCR\u{85}NEL\u{7}";
    for name in [forged, coloured] {
        let body = json!({"board": "board1", "method": "SetPlayers", "args": [name, "Black"]}).to_string();
        let a = hall
            .post(
                "/arbiter/api/decide",
                &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
                &body,
            )
            .await;
        assert!(
            a.status >= 400 && a.status != 401 && a.status != 403,
            "{}: {}",
            a.status,
            a.text()
        );
    }
    wait_for("both refusals in the log", 20, || {
        hall.log().matches("SetPlayers refused").count() >= 2
    })
    .await;
    hall.kill();
    let log = hall.log();
    for line in log.lines() {
        assert!(
            !line.contains("FAKE LOG LINE") || line.contains("SetPlayers refused"),
            "a forged line: {line:?}\n{log}"
        );
    }
    let refused = crate::common::line_with(&log, "FAKE LOG LINE");
    assert!(
        refused.contains("Line1\\nINFO eboard_bridge: FAKE LOG LINE"),
        "{refused}"
    );
    let bytes = log.as_bytes();
    assert!(!bytes.contains(&0x1b), "an escape in the log: {log}");
    assert!(!bytes.contains(&b'\r'), "a carriage return in the log: {log}");
    assert!(!bytes.contains(&0x07), "a bell in the log: {log}");
    assert!(!log.contains('\u{85}'), "a C1 NEL in the log: {log}");
    let coloured = crate::common::line_with(&log, "NEL");
    eprintln!("console: {}", refused.trim());
    eprintln!("console: {}", coloured.trim());
}
