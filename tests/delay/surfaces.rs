//! Every spectator surface the delay late, the arbiter's at once.

use super::*;

/// A delay of 3 s, 10 plies about 1.4 s apart: every surface watched from
/// the start (MQTT when Mosquitto is installed). D-Bus (and `ctl`) has each move at once, while no spectator's
/// surface has it; each spectator's surface has it no sooner than 3 s after
/// D-Bus, and within the delay and a second (the folder, LiveChess and
/// lichess: with their own pacing, as without a delay).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spectator_surface_shows_each_move_the_delay_late_and_the_arbiter_at_once() {
    let plies = 10;
    let delay = Duration::from_secs(3);
    let (log, _) = game_log(plies, 61);
    let mqtt_dir = tempfile::tempdir().unwrap();
    let mosquitto = broker(mqtt_dir.path()).await;
    let (hall, board) = Hall::open(log, "3s", mosquitto.as_ref().map(|m| m.0)).await;
    let seen = Seen::default();
    let dbus = watch_dbus(&hall.address, seen.clone()).await;
    let (watchers, _) = watch_spectators(&hall, mosquitto.as_ref().map(|m| m.0), &seen).await;
    let daemon = hall.run();
    // Mid-game: the arbiter's doors have moves the spectators do not.
    wait_for("four plies on D-Bus", 60, || seen.count("dbus") >= 4).await;
    let out = common::process::ctl(&hall.address, &["boards", "1"]).await;
    assert_eq!(out.code, 0, "{}{}", out.out, out.err);
    let on_bus = seen.count("dbus");
    assert!(
        seen.count("api/boards") < on_bus,
        "/api/boards has {} plies while D-Bus has {on_bus}",
        seen.count("api/boards")
    );
    assert_eq!(
        common::process::ctl(&hall.address, &["delay"]).await.out,
        "broadcast delay: 3s\n"
    );
    wait_for("every ply on D-Bus", 60, || seen.count("dbus") >= plies).await;
    wait_surfaces(
        &seen,
        &hall.lichess,
        &["api/boards", "folder", "sse", "livechess", "lichess"],
        plies,
        20,
    )
    .await;
    let mut said = Vec::new();
    let second = Duration::from_secs(1);
    said.push(judge(&seen, "api/boards", plies, delay, Some(second)));
    said.push(judge(&seen, "sse", plies, delay, Some(second)));
    said.push(judge(&seen, "folder", plies, delay, Some(second)));
    said.push(judge(&seen, "livechess", plies, delay, Some(2 * second)));
    said.push(judge(&seen, "lichess", plies, delay, Some(2 * second)));
    if mosquitto.is_some() {
        said.push(judge(&seen, "mqtt", plies, delay, Some(second)));
    }
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
