//! Issue 48 (part): `ctl ack ALERT|BOARD` acknowledges the console's alerts as
//! its button does, with the caller's user name; `ctl boards N` lists a board's
//! alerts; without the console, `ctl ack` says there is nothing to acknowledge
//! and why.

use super::*;
use common::hall::{Hall, standing as hall_standing};

/// The number (`A12`) of the first alert line of `ctl boards N`'s output.
fn first_alert(detail: &str) -> Option<String> {
    detail
        .lines()
        .skip_while(|l| !l.starts_with("alerts ("))
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .map(str::to_string)
}

/// Two boards with an illegal move each (an alert each on the console):
/// `ctl ack A<N>` acknowledges board 1's, `ctl ack 2` every one standing on
/// board 2; the console's page shows who acknowledged them, and so do `ctl
/// boards N` and `--json`, after a SIGKILL too. An alert that is not one is
/// refused with what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_ack_acknowledges_as_the_console_does() {
    let dir = tempfile::tempdir().unwrap();
    let illegal = || hall_standing("24 lift e2 P\n24.8 place e5 P\n");
    let mut hall = Hall::open(dir.path(), vec![illegal(), illegal()], "").await;
    let bus = hall.bus.clone();
    let mut alert = None;
    for _ in 0..100 {
        alert = first_alert(&ok(&bus, &["boards", "1"]).await);
        if alert.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let alert = alert.expect("no alert listed for board 1 in 20 s");
    let detail = ok(&bus, &["boards", "1"]).await;
    assert!(
        detail.contains(" irregular (Art. 7.5.1): illegal move (white: e2 e5); not acknowledged"),
        "{detail}"
    );

    let said = ok(&bus, &["ack", &alert]).await;
    assert!(said.starts_with(&format!("board 1 (board1): {alert} ")), "{said}");
    assert!(
        said.contains(&format!("; acknowledged by {} at ", me())),
        "{said}"
    );
    let mut said = String::new();
    for _ in 0..100 {
        said = ok(&bus, &["ack", "2"]).await;
        if !said.contains("nothing to acknowledge") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        said.starts_with("board 2 (board2): 1 alert(s) acknowledged:\n  A"),
        "{said}"
    );
    let again = ok(&bus, &["ack", "2"]).await;
    assert_eq!(
        again,
        "board 2 (board2): nothing to acknowledge: no alert stands unacknowledged (`ctl boards 2` lists its alerts)\n"
    );
    let o = ctl(&bus, &["ack", "A99999"]).await;
    assert_eq!(o.code, 1, "{}", o.err);
    assert!(
        o.err
            .contains("no alert A99999: the console keeps each board's last 40 alerts"),
        "{}",
        o.err
    );

    // The console's page says who acknowledged them.
    let (cookie, _) = hall.login().await;
    let state = hall
        .get("/arbiter/api/state", &[("Cookie", &cookie)])
        .await
        .json();
    for b in state["boards"].as_array().unwrap() {
        let alerts = b["alerts"].as_array().unwrap();
        assert!(!alerts.is_empty(), "{b}");
        assert!(alerts.iter().all(|a| a["acked_by"] == me()), "{b}");
    }

    // Kept: after SIGKILL `ctl boards` still shows them acknowledged.
    hall.kill();
    hall.start().await;
    let detail = ok(&bus, &["boards", "1"]).await;
    assert!(
        detail.contains(&format!("; acknowledged by {} at ", me())),
        "{detail}"
    );
    let json: serde_json::Value = serde_json::from_str(&ok(&bus, &["boards", "2", "--json"]).await).unwrap();
    assert_eq!(json["alerts"][0]["acked_by"], me(), "{json}");
    assert!(
        json["alerts"][0]["alert"].as_str().unwrap().starts_with('A'),
        "{json}"
    );
}

/// Without the console there is nothing to acknowledge, and `ctl ack` says why
/// and where to look instead (exit status 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_console_ctl_ack_says_why_there_is_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg) = desk(d, "").await;
    let _boards = three_playing(d, "486", [standing(""), standing(""), standing("")]);
    let _daemon = start(&cfg, d, &address);
    property_is(&address, 1, "Status", "playing").await;
    for target in ["1", "A3"] {
        let o = ctl(&address, &["ack", target]).await;
        assert_eq!(o.code, 1, "{target}: {}", o.err);
        assert!(
            o.err.contains("the arbiters' console is off (no [http] arbiters in the configuration): alerts are kept and acknowledged only by the console"),
            "{target}: {}",
            o.err
        );
    }
    let o = ctl(&address, &["ack", "17"]).await;
    assert_eq!(
        (o.code, o.err.trim()),
        (1, "eboard-bridge ctl: no board 17: boards are 1-3")
    );
}
