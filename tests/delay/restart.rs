//! SIGKILL mid-window, and a start again.

use super::*;

/// A delay of 4 s; the daemon killed (SIGKILL) with moves held, started
/// again 1 s later: every ply reaches `/api/boards`, the folder, SSE,
/// LiveChess, lichess and MQTT (when Mosquitto is installed), none sooner than the delay after D-Bus had it (before the kill
/// or after the restart), none lost; the spectators never see fewer plies
/// than before the kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkill_mid_window_and_a_restart_publish_nothing_early_and_lose_nothing() {
    let plies = 14;
    let delay = Duration::from_secs(4);
    let (log, _) = game_log(plies, 63);
    let mqtt_dir = tempfile::tempdir().unwrap();
    let mosquitto = broker(mqtt_dir.path()).await;
    let (hall, board) = Hall::open(log, "4s", mosquitto.as_ref().map(|m| m.0)).await;
    let seen = Seen::default();
    let dbus = watch_dbus(&hall.address, seen.clone()).await;
    let (watchers, surfaces) = watch_spectators(&hall, mosquitto.as_ref().map(|m| m.0), &seen).await;
    let daemon = hall.run();
    wait_for("seven plies on D-Bus", 60, || seen.count("dbus") >= 7).await;
    daemon.kill();
    let on_bus = seen.count("dbus");
    let public = seen.count("api/boards");
    assert!(
        public + 2 <= on_bus,
        "moves held at the kill: {public} plies public, {on_bus} on D-Bus"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let daemon = hall.run();
    wait_for("every ply on D-Bus", 90, || seen.count("dbus") >= plies).await;
    wait_surfaces(&seen, &hall.lichess, &surfaces, plies, 20).await;
    let mut said = Vec::new();
    for s in &surfaces {
        said.push(judge(&seen, s, plies, delay, None));
    }
    let log = daemon.log();
    assert!(log.contains("rebuilt from the journal"), "{log}");
    for w in watchers {
        w.abort();
    }
    dbus.abort();
    daemon.stop().await;
    board.abort();
    for s in said {
        eprintln!("measured: {s}");
    }
}
