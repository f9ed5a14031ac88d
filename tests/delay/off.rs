//! `ctl delay off`: the held moves at once.

use super::*;

/// A delay of 30 s: six plies on D-Bus and none for the spectators; `ctl
/// delay off` (journaled, with who decided) publishes them within a second on
/// `/api/boards` and in the folder, and later moves at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_delay_off_publishes_the_held_moves_at_once() {
    let plies = 10;
    let (log, _) = game_log(plies, 62);
    let (hall, board) = Hall::open(log, "30s", None).await;
    let seen = Seen::default();
    let dbus = watch_dbus(&hall.address, seen.clone()).await;
    let daemon = hall.run();
    let watchers = [
        watch_boards(hall.http, seen.clone()),
        watch_folder(hall.game_file(), seen.clone()),
    ];
    wait_for("six plies on D-Bus", 60, || seen.count("dbus") >= 6).await;
    assert_eq!(
        seen.count("api/boards"),
        0,
        "nothing for the spectators within 30 s"
    );
    assert_eq!(seen.count("folder"), 0);
    let held = seen.count("dbus");
    let out = common::process::ctl(&hall.address, &["delay", "off"]).await;
    let lifted = Instant::now();
    assert_eq!(out.code, 0, "{}{}", out.out, out.err);
    assert!(
        out.out.contains("every move held is published now"),
        "{}",
        out.out
    );
    wait_for("the held plies on /api/boards and in the folder", 5, || {
        seen.count("api/boards") >= held && seen.count("folder") >= held
    })
    .await;
    for surface in ["api/boards", "folder"] {
        let at = seen.of(surface)[&held];
        let after = at.saturating_duration_since(lifted);
        assert!(
            after < Duration::from_secs(1),
            "{surface}: {after:?} after ctl delay off"
        );
        eprintln!("measured: {surface}: the {held} plies held {after:?} after ctl delay off");
    }
    // Later moves at once.
    wait_for("every ply on D-Bus", 60, || seen.count("dbus") >= plies).await;
    wait_for("every ply on /api/boards", 5, || {
        seen.count("api/boards") >= plies
    })
    .await;
    let lag = seen.of("api/boards")[&plies].saturating_duration_since(seen.of("dbus")[&plies]);
    assert!(lag < Duration::from_secs(1), "the last ply {lag:?} after D-Bus");
    assert_eq!(
        common::process::ctl(&hall.address, &["delay"]).await.out,
        "broadcast delay: off\n"
    );
    let journal = std::fs::read_to_string(hall.path().join("state/broadcast/delays.esl")).unwrap();
    let me = eboard_bridge::bus::user_name(unsafe { libc::getuid() });
    assert!(journal.contains(&format!("note decided by {me}\n")), "{journal}");
    assert!(
        journal.contains("arbiter SetBroadcastDelay 0 \"off\"\n"),
        "{journal}"
    );
    assert!(
        journal.contains("note configured {\"delay\":\"30s\",\"rounds\":{}}\n"),
        "{journal}"
    );
    // A delay that does not read is refused with what to write.
    let bad = common::process::ctl(&hall.address, &["delay", "soon"]).await;
    assert_eq!(bad.code, 2);
    assert!(bad.err.contains("15m, 90s, 1h30m or off"), "{}", bad.err);
    // `ctl delay 3` may mean round 3: a duration alone needs its unit.
    let bare = common::process::ctl(&hall.address, &["delay", "3"]).await;
    assert_eq!(bare.code, 2);
    assert!(bare.err.contains("give the duration its unit"), "{}", bare.err);
    assert_eq!(
        common::process::ctl(&hall.address, &["delay"]).await.out,
        "broadcast delay: off\n",
        "nothing changed by a refused call"
    );
    for w in watchers {
        w.abort();
    }
    dbus.abort();
    daemon.stop().await;
    board.abort();
}
