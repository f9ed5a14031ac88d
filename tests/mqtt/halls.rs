//! Two halls bridged to a central broker, through a broker outage.

use super::*;

/// How much faster than a real board the halls' emulated boards play.
const HALLS_SPEED: f64 = 4.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_halls_on_one_central_broker_lose_nothing_through_a_broker_outage() {
    if !need(&BROKERS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (central_port, a_port) = (free_port(), free_port());
    let central = central_broker(d, central_port, &["hall-a", "hall-b"]).await;
    let mut hall_a = hall_broker(d, "hall-a", a_port, central_port).await;
    let room = Subscriber::start(central_port, "broadcast", "broadcast-room", "eboard/#").await;

    // Hall A: the daemon in this process, on a private D-Bus.
    let game_a = game("games/kasparov-deep-blue-1997.pgn");
    let game_b = game("games/nepomniachtchi-liren-game1.pgn");
    let link_a = d.join("board-a");
    // The games at four times a real board's pace (the quick hands of the
    // tests, as `tests/daemon` plays them at eight): what is checked is every
    // move through the outage, not their times.
    let emulator_a = common::emulated::emulate(
        game_log(&game_a.start, &game_a.moves, 3, 1000),
        &link_a,
        HALLS_SPEED,
        "1001",
    );
    let address = common::private_bus(d).await;
    let config_a = DaemonConfig::parse(
        &daemon_toml(d, "hall-a", "eboard-bridge", a_port, &link_a, true),
        "hall-a.toml",
    )
    .unwrap();
    let daemon_a = Daemon::start(
        vec![link_a.clone()],
        config_a,
        BusChoice::Address(address.clone()),
    )
    .within(30, "hall A's daemon to start")
    .await
    .unwrap();
    // Hall B: the real binary, killed at the end, with no broker of its own: it
    // publishes straight to the central broker, as its hall's user there.
    let link_b = d.join("board-b");
    let _emulator_b = common::emulated::emulate(
        game_log(&game_b.start, &game_b.moves, 4, 1000),
        &link_b,
        HALLS_SPEED,
        "1002",
    );
    let config_b = d.join("hall-b.toml");
    std::fs::write(
        &config_b,
        daemon_toml(d, "hall-b", "hall-b", central_port, &link_b, false),
    )
    .unwrap();
    let mut daemon_b = run_binary(&config_b, &link_b, &d.join("hall-b.log"));

    let events_a = "eboard/hall-a/boards/board_a/events";
    let events_b = "eboard/hall-b/boards/board_b/events";
    wait_for("both halls online at the central broker", 20, || {
        ["eboard/hall-a/status", "eboard/hall-b/status"]
            .iter()
            .all(|t| room.last(t).is_some_and(|m| m.payload == "online"))
    })
    .await;
    wait_for("hall A's sixth move", 30, || room.moves(events_a).len() >= 6).await;

    // Hall A's broker goes away while the game goes on 20 plies (and until the
    // central broker says its bridge is gone).
    hall_a.stop().await;
    let seen = room.moves(events_a).len();
    let snap_a = daemon_a.boards()[0].2.clone();
    let played_before = snap_a.borrow().moves.len();
    wait_for("20 plies played while hall A's broker is away", 60, || {
        snap_a.borrow().moves.len() >= played_before + 20
    })
    .await;
    wait_for("the central broker to say hall A's bridge is gone", 30, || {
        room.last("eboard/hall-a/bridge")
            .is_some_and(|m| m.payload == "0")
    })
    .await;
    let played_during = snap_a.borrow().moves.len();
    assert!(
        played_during >= played_before + 20,
        "the game went on: {played_before} then {played_during} plies"
    );
    assert!(
        room.moves(events_a).len() <= seen + 1,
        "nothing from hall A while its broker is away"
    );
    assert_eq!(
        room.last("eboard/hall-a/bridge").map(|m| m.payload),
        Some("0".into()),
        "the central broker says hall A's bridge is gone"
    );
    hall_a.restart().await;

    let expected_a = sans(&game_a.start, &game_a.moves);
    let expected_b = sans(&game_b.start, &game_b.moves);
    wait_for("every move of both games at the central broker", 120, || {
        room.moves(events_a).len() >= expected_a.len() && room.moves(events_b).len() >= expected_b.len()
    })
    .await;
    assert_eq!(room.moves(events_a), expected_a);
    assert_eq!(room.moves(events_b), expected_b);
    for topic in [events_a, events_b] {
        let all = room.in_order(topic);
        assert_eq!(all[0]["seq"], 1, "{topic} starts at 1");
        assert!(all.iter().any(|v| v["type"] == "game_start"), "{topic}");
    }
    let pgn = room.last("eboard/hall-b/boards/board_b/pgn").unwrap();
    assert!(pgn.payload.contains("[White \"White, A\"]"), "{}", pgn.payload);
    assert!(pgn.payload.contains(&expected_b[expected_b.len() - 1]));

    // Hall A's board stops: its retained state (read afresh) is its D-Bus properties.
    emulator_a.abort();
    let proxy = zbus::fdo::PropertiesProxy::builder(&common::bus_client(&address).await)
        .destination("org.eboardbridge")
        .unwrap()
        .path("/org/eboardbridge/board/board_a")
        .unwrap()
        .build()
        .within(10, "a properties proxy of hall A's board")
        .await
        .unwrap();
    let iface = zbus::names::InterfaceName::try_from("org.eboardbridge.Board1").unwrap();
    wait_for("hall A's board disconnected", 20, || !snap_a.borrow().connected).await;
    wait_for(
        "the state of a disconnected board at the central broker",
        20,
        || {
            room.last("eboard/hall-a/boards/board_a/state")
                .is_some_and(|m| m.payload.contains("\"Connected\":false"))
        },
    )
    .await;
    let props = proxy.get_all(iface).await.unwrap();
    let fresh = Subscriber::start(
        central_port,
        "broadcast",
        "late-reader",
        "eboard/hall-a/boards/+/state",
    )
    .await;
    wait_for("the retained state", 10, || !fresh.all().is_empty()).await;
    let retained = fresh.all()[0].clone();
    assert!(retained.retain, "the state is retained");
    let state: Value = serde_json::from_str(&retained.payload).unwrap();
    assert_eq!(props.len(), 23, "Board1 has 23 properties");
    assert_eq!(state["Tags"]["Board"], "1", "the board's tags: {state}");
    for (name, value) in &props {
        assert_eq!(state[name.as_str()], json_of(value), "{name}");
    }
    assert_eq!(state["Moves"].as_array().unwrap().len(), expected_a.len());
    fresh.stop();

    // Hall B's daemon dies: its last will says so.
    common::send_signal(daemon_b.0.id(), libc::SIGKILL);
    common::wait_exit(&mut daemon_b.0, 10, "hall B's daemon after SIGKILL").await;
    wait_for("hall B offline", 20, || {
        room.last("eboard/hall-b/status")
            .is_some_and(|m| m.payload == "offline")
    })
    .await;
    // Hall A's stops cleanly and says so itself.
    daemon_a.shutdown().within(30, "hall A's daemon to stop").await;
    wait_for("hall A offline", 20, || {
        room.last("eboard/hall-a/status")
            .is_some_and(|m| m.payload == "offline")
    })
    .await;
    room.stop();
    drop(central);
}
