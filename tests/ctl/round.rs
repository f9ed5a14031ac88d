//! Issue 48 (part): `ctl round N [--pairings FILE]` starts a round on every
//! board, kept across SIGKILL and reloads like `ctl pairings`; a reload says on
//! `ctl watch` (text and `--json`) what it did to what `ctl` set.

use super::watch::{lines_until, watching};
use super::*;

/// Board 1's game is under way, boards 2 and 3 stand in the start position.
/// `ctl round 2 --pairings FILE` (boards 1 and 2 in it) says what it did to
/// each board: board 1 keeps round 1 to its end, boards 2 and 3 are round 2 at
/// once (board 3 with the configuration's players). It holds across SIGKILL
/// and a SIGHUP with the configuration as it was, which `ctl watch` reports;
/// a configuration that moved on, or one that does not read, is reported too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_round_starts_a_round_on_every_board_and_a_reload_is_watched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg) = desk(d, "").await;
    let _boards = three_playing(d, "480", [opening(2, 48), standing(""), standing("")]);
    let (_text, mut text) = watching(&address, false, 0).await;
    let (_json, mut json) = watching(&address, true, 0).await;
    let daemon = start(&cfg, d, &address);
    wait_for("board 1's game under way", 30, || {
        plies_in(&d.join("live/round-1/game-1.pgn")) == 2
    })
    .await;
    property_is(&address, 3, "Status", "playing").await;

    let csv = d.join("r2.csv");
    std::fs::write(
        &csv,
        "board,white,black\n1,\"Ann, A\",\"Bob, B\"\n2,\"Cid, C\",\"Dan, D\"\n",
    )
    .unwrap();
    let said = ok(&address, &["round", "2", "--pairings", csv.to_str().unwrap()]).await;
    for says in [
        format!(
            "round 2 started on 3 board(s) (1-3), pairings from {}: each board's next game (or its game not begun) is round 2\n",
            csv.display()
        ),
        "board 1 (board1): its game under way (2 plies) stays in round 1 to its end; its next game is round 2 (Ann, A - Bob, B)\n".into(),
        "board 2 (board2): round 2 now: Cid, C - Dan, D\n".into(),
        "board 3 (board3): round 2 now: White 3 - Black 3\n".into(),
    ] {
        assert!(said.contains(&says), "{says:?} in:\n{said}");
    }
    let round2 = d.join("live/round-2");
    wait_for("board 2's game in round 2", 10, || {
        tag_in(&round2.join("game-2.pgn"), "White") == "Cid, C"
    })
    .await;
    assert_eq!(tag_in(&round2.join("game-2.pgn"), "Round"), "2.2");
    wait_for("board 3's game in round 2", 10, || {
        tag_in(&round2.join("game-3.pgn"), "Round") == "2.3"
    })
    .await;
    assert_eq!(tag_in(&round2.join("game-3.pgn"), "White"), "White 3");
    property_is(&address, 1, "Round", "1").await;
    property_is(&address, 1, "White", "White 1").await;

    // Kept: after SIGKILL, board 1's next game is round 2 with its pairing.
    daemon.kill();
    let daemon = start(&cfg, d, &address);
    property_is(&address, 2, "Round", "2").await;
    property_is(&address, 2, "White", "Cid, C").await;
    assert_eq!(
        daemon.logged("as before the restart, round 2 and the pairings set by `ctl round` stand"),
        1,
        "{}",
        daemon.log()
    );
    ok(&address, &["new-game", "1", "--force"]).await;
    property_is(&address, 1, "Round", "2").await;
    wait_for("board 1's next game in round 2", 10, || {
        tag_in(&round2.join("game-1.pgn"), "White") == "Ann, A"
    })
    .await;
    assert_eq!(tag_in(&round2.join("game-1.pgn"), "Round"), "2.1");

    // A reload with the configuration as it was keeps round 2, and says so on
    // `ctl watch`.
    common::send_signal(daemon.child.id(), libc::SIGHUP);
    let kept = "configuration read again: round 2 and the pairings set by `ctl round` stand: the file's round (1) and pairings are as they were";
    let seen = lines_until(&mut text, 20, |l| l.contains("daemon: configuration read again")).await;
    assert!(
        seen.last().unwrap().contains(&format!("daemon: {kept}")),
        "{seen:?}"
    );
    let seen = lines_until(&mut json, 20, |l| l.contains("\"reloaded\"")).await;
    let e: serde_json::Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert_eq!(
        (e["type"].as_str(), e["kind"].as_str(), e["round"].as_u64()),
        (Some("reloaded"), Some("kept"), Some(2))
    );
    assert!(
        e["words"]
            .as_str()
            .unwrap()
            .starts_with("round 2 and the pairings set by `ctl round` stand"),
        "{e}"
    );
    ok(&address, &["new-game", "3"]).await;
    property_is(&address, 3, "Round", "2").await;
    assert!(
        !d.join("live/round-1/game-3-2.pgn").exists(),
        "board 3 went back to round 1"
    );

    // The file moved on to round 3: it wins, and `ctl watch` says so loudly.
    edit_and_reload(&daemon, &cfg, "round = 1\n", "round = 3\n");
    let seen = lines_until(&mut text, 20, |l| l.contains("CONFIGURATION READ AGAIN")).await;
    assert!(
        seen.last().unwrap().contains(
            "daemon: CONFIGURATION READ AGAIN: the file's round 3 and its pairings replace round 2 and the pairings set by `ctl round` (the file changed since)"
        ),
        "{seen:?}"
    );
    let seen = lines_until(&mut json, 20, |l| l.contains("\"replaced\"")).await;
    let e: serde_json::Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert_eq!(
        (e["kind"].as_str(), e["round"].as_u64()),
        (Some("replaced"), Some(3))
    );

    // A configuration that does not read: the one running stays, and is said.
    std::fs::write(&cfg, "round = \"three\"\n").unwrap();
    common::send_signal(daemon.child.id(), libc::SIGHUP);
    let seen = lines_until(&mut text, 20, |l| l.contains("CONFIGURATION NOT READ AGAIN")).await;
    assert!(
        seen.last()
            .unwrap()
            .contains("daemon: CONFIGURATION NOT READ AGAIN: the one running stays: "),
        "{seen:?}"
    );
    let seen = lines_until(&mut json, 20, |l| l.contains("\"failed\"")).await;
    let e: serde_json::Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert!(e["words"].as_str().unwrap().contains("config.toml"), "{e}");

    // A round that is not one, a file that does not read: refused before
    // the daemon is asked.
    let o = ctl(&address, &["round", "0"]).await;
    assert_eq!(o.code, 2, "{}", o.err);
    let o = ctl(
        &address,
        &["round", "4", "--pairings", d.join("none.csv").to_str().unwrap()],
    )
    .await;
    // The file refused (as every refusal: exit status 1; issue 57).
    assert_eq!(o.code, 1, "{}", o.err);
    assert!(o.err.contains("none.csv"), "{}", o.err);
    drop(daemon);
}
