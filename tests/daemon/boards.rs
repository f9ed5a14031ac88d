//! One daemon with its boards: a game published on D-Bus and in the broadcast
//! folder, boards away and back, plugged in, named by serial number; the bus name.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_game_over_a_pty_is_published_on_dbus_and_in_the_broadcast_folder() {
    let dir = tempfile::tempdir().unwrap();
    // A client listening before the daemon starts.
    let (game, expected, emulator, link, address, (client, mut signals)) = immortal_heard(dir.path()).await;

    let daemon = Daemon::start(
        vec![link.clone()],
        config(dir.path()),
        BusChoice::Address(address),
    )
    .within(30, "the daemon to start")
    .await
    .unwrap();
    let live = common::replayed::collect(&daemon);
    let (id, path, snap) = daemon.boards()[0].clone();
    assert_eq!(id, "board0");
    wait_for("every move", 60, || snap.borrow().moves.len() == expected.len()).await;

    // The properties, read over the bus.
    let proxy = common::board_proxy(&client, &path).await;
    let moves: Vec<String> = proxy.get_property("Moves").await.unwrap();
    assert_eq!(moves, expected);
    let fen: String = proxy.get_property("Fen").await.unwrap();
    let mut end = game.start.clone();
    for m in &game.moves {
        end.play_unchecked(*m);
    }
    assert_eq!(fen, eboard_bridge::rules::game_fen(&end));
    let pgn: String = proxy.get_property("Pgn").await.unwrap();
    assert_eq!(pgn_moves(&pgn), vec![expected.clone()]);
    assert!(
        pgn.contains("[Round \"4.7\"]") && pgn.contains("[White \"Anderssen, Adolf\"]"),
        "{pgn}"
    );
    let connected: bool = proxy.get_property("Connected").await.unwrap();
    assert!(connected);

    // The signals, in order.
    let mut made = Vec::new();
    while made.len() < expected.len() {
        let msg = next_signal(&mut signals, 5, "a MoveMade signal per move").await;
        let (ply, san, _uci, _fen): (u32, String, String, String) = msg.body().deserialize().unwrap();
        made.push((ply, san));
    }
    let want: Vec<(u32, String)> = expected
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u32 + 1, s.clone()))
        .collect();
    assert_eq!(made, want);

    // The ObjectManager lists the board with its interface.
    let om = zbus::fdo::ObjectManagerProxy::builder(&client)
        .destination(BUS_NAME)
        .unwrap()
        .path(ROOT_PATH)
        .unwrap()
        .build()
        .within(10, "an ObjectManager proxy")
        .await
        .unwrap();
    let objects = om.get_managed_objects().await.unwrap();
    let listed: Vec<String> = objects.keys().map(|p| p.to_string()).collect();
    assert!(listed.contains(&path), "{listed:?}");
    assert!(
        objects
            .values()
            .any(|i| i.keys().any(|k| k.as_str() == BOARD_INTERFACE))
    );

    // A method with a bad argument gets a typed error.
    let err = proxy.call::<_, _, ()>("SetResult", &("2-0",)).await.unwrap_err();
    assert!(
        err.to_string().contains("org.eboardbridge.Error.InvalidArgument"),
        "{err}"
    );

    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
    // The recording replays, with no options, to what was published.
    let live = live.within(10, "the daemon's events to end").await.unwrap();
    let recording = dir.path().join("state/recordings/board0.esl");
    let n = common::replayed::assert_replays_as_published(&recording, "board0", &live);
    assert!(n > expected.len(), "{n} events for {} moves", expected.len());
    // The broadcast folder: one file per board and the round's combined file.
    let round = dir.path().join("live/round-4");
    let one = std::fs::read_to_string(round.join("game-7.pgn")).unwrap();
    let all = std::fs::read_to_string(round.join("games.pgn")).unwrap();
    assert_eq!(pgn_moves(&one), vec![expected.clone()]);
    assert_eq!(pgn_moves(&all), vec![expected]);
}

/// A move's signals go out before its snapshot is made; a client that reads the
/// properties the moment a `MoveMade` arrives must still see the position that
/// move led to. And the properties a move changes come in one `PropertiesChanged`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn properties_read_on_a_signal_show_the_move_and_change_in_one_signal() {
    let dir = tempfile::tempdir().unwrap();
    let game = &pgn_games("games/immortal-games.pgn")[0];
    let expected = sans(&game.moves);
    let link = dir.path().join("board0");
    let address = private_bus(dir.path()).await;
    let (client, mut made) = listen(&address, BOARD_INTERFACE, Some("MoveMade")).await;
    let rule = zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .interface("org.freedesktop.DBus.Properties")
        .unwrap()
        .member("PropertiesChanged")
        .unwrap()
        .build();
    let mut changes = zbus::MessageStream::for_match_rule(rule, &client, None)
        .within(10, "the bus to take a match rule for PropertiesChanged")
        .await
        .unwrap();
    let emulator = emulate(game_log(&game.start, &game.moves, 7), &link, 8.0);
    let daemon = Daemon::start(
        vec![link],
        config(dir.path()),
        BusChoice::Address(address.clone()),
    )
    .within(30, "the daemon to start")
    .await
    .unwrap();
    let proxy = board0(&address).await;

    // Each MoveMade, as it arrives: LastMove and Moves read over the bus at once.
    for ply in 1..=expected.len() as u32 {
        let msg = next_signal(&mut made, 10, "a MoveMade signal per move").await;
        let (p, san, uci, fen): (u32, String, String, String) = msg.body().deserialize().unwrap();
        assert_eq!((p, san.as_str()), (ply, expected[ply as usize - 1].as_str()));
        let (last, moves, now) = tokio::join!(
            proxy.get_property::<String>("LastMove"),
            proxy.get_property::<Vec<String>>("Moves"),
            proxy.get_property::<String>("Fen"),
        );
        // The board may be a move further on by the time the reads are answered,
        // never behind the signal.
        let moves = moves.unwrap();
        assert!(
            moves.len() >= ply as usize,
            "ply {ply}: Moves read after MoveMade has {} moves",
            moves.len()
        );
        if moves.len() == ply as usize {
            assert_eq!(last.unwrap(), uci, "ply {ply}");
            assert_eq!(now.unwrap(), fen, "ply {ply}");
        }
    }
    // The PropertiesChanged of a move: LastMove, Moves, Fen and Pgn in one signal.
    // Read until every move's has come (on a loaded machine the bus may hold them
    // past a moment's quiet), at most 10 s; then, the daemon stopped, whatever
    // else comes.
    let mut together = 0;
    let mut tally = |msg: zbus::Message| {
        let (iface, changed, _): (String, HashMap<String, zbus::zvariant::OwnedValue>, Vec<String>) =
            msg.body().deserialize().unwrap();
        assert_eq!(iface, BOARD_INTERFACE);
        if ["LastMove", "Moves", "Fen", "Pgn"]
            .iter()
            .all(|k| changed.contains_key(*k))
        {
            together += 1;
        }
        assert!(
            !changed.contains_key("LastMove") || changed.contains_key("Moves"),
            "a move's properties split over signals: {:?}",
            changed.keys().collect::<Vec<_>>()
        );
        together
    };
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    while let Ok(Some(Ok(msg))) = tokio::time::timeout_at(until, changes.next()).await {
        if tally(msg) == expected.len() {
            break;
        }
    }
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
    while let Ok(Some(Ok(msg))) = tokio::time::timeout(Duration::from_millis(200), changes.next()).await {
        tally(msg);
    }
    assert_eq!(
        together,
        expected.len(),
        "one PropertiesChanged per move, with all it changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_board_pulled_away_mid_game_comes_back_without_losing_a_move() {
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let expected = sans(&game.moves[..20]);
    let link = dir.path().join("board0");
    // The first part is played on the board; then it is unplugged.
    let first = emulate(game_log(&game.start, &game.moves[..10], 1), &link, 8.0);
    let daemon = Daemon::start(vec![link.clone()], config(dir.path()), BusChoice::None)
        .within(30, "the daemon to start")
        .await
        .unwrap();
    let live = common::replayed::collect(&daemon);
    let snap = daemon.boards()[0].2.clone();
    wait_for("ten moves", 30, || snap.borrow().moves.len() == 10).await;
    assert!(snap.borrow().connected);
    first.abort();
    wait_for("the board to go", 10, || !snap.borrow().connected).await;
    assert_eq!(snap.borrow().status, "disconnected");
    assert_eq!(snap.borrow().moves.len(), 10, "the game is kept while away");
    // Meanwhile two more moves were played; the board comes back showing them.
    let mut pos = game.start.clone();
    for m in &game.moves[..12] {
        pos.play_unchecked(*m);
    }
    let _second = emulate(game_log(&pos, &game.moves[12..20], 2), &link, 8.0);
    wait_for("the board to come back", 10, || snap.borrow().connected).await;
    wait_for("twenty moves", 30, || snap.borrow().moves.len() == 20).await;
    assert_eq!(snap.borrow().moves, expected);
    daemon.shutdown().within(30, "the daemon to stop").await;
    // Across the gap too, the recording replays to what was published.
    let live = live.within(10, "the daemon's events to end").await.unwrap();
    let recording = dir.path().join("state/recordings/board0.esl");
    common::replayed::assert_replays_as_published(&recording, "board0", &live);
    // The journal says where the line went: a `gap` right after the
    // disconnect's note, so that what the board did while away is judged by
    // the dump when it is back (the event campaign's seed 581).
    let log = eboard_bridge::log::read_log(&recording).unwrap();
    let note = log
        .records
        .iter()
        .position(
            |r| matches!(&r.kind, eboard_bridge::log::RecordKind::Note(n) if n.starts_with("disconnected")),
        )
        .expect("the disconnect journaled");
    assert!(
        matches!(&log.records[note + 1].kind, eboard_bridge::log::RecordKind::Gap(why) if why == "line lost"),
        "a gap where the line went: {:?}",
        log.records.get(note + 1).map(|r| &r.kind)
    );
}

/// An emulated board (serial number `serial`, at speed 8) playing `log`, plugged
/// into `port` of the folder `devices` (its link there).
fn plug_in(devices: &Path, port: &str, log: SensorLog, serial: &str) -> tokio::task::JoinHandle<()> {
    emulate_as(log, &devices.join(port), 8.0, serial)
}

/// Waits (at most 10 s) until `daemon` bridges `n` boards; the `n`th, which
/// must be named after its device `port`, as its snapshots.
async fn bridged_as(
    daemon: &Daemon,
    n: usize,
    port: &str,
) -> tokio::sync::watch::Receiver<eboard_bridge::api::Snapshot> {
    wait_for(&format!("{n} board(s) bridged"), 10, || {
        daemon.boards().len() == n
    })
    .await;
    let (id, _, snap) = daemon.boards()[n - 1].clone();
    assert_eq!(id, port);
    snap
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boards_plugged_in_are_bridged_and_one_back_on_another_port_keeps_its_game() {
    let dir = tempfile::tempdir().unwrap();
    let devices = dir.path().join("eboard");
    let cfg = DaemonConfig::parse(
        &format!(
            "output = \"{}\"\nstate = \"{}\"\ndevice_dir = \"{}\"\n[[board]]\nserial = \"24680\"\nnumber = 5\nwhite = \"Kasparov, Garry\"\n",
            dir.path().join("live").display(),
            dir.path().join("state").display(),
            devices.display()
        ),
        "test.toml",
    )
    .unwrap();
    let address = private_bus(dir.path()).await;
    let (_client, mut added) = listen(
        &address,
        "org.freedesktop.DBus.ObjectManager",
        Some("InterfacesAdded"),
    )
    .await;
    // No devices given: the daemon watches the directory, which the udev rules have
    // not even made yet.
    let daemon = Daemon::start(Vec::new(), cfg, BusChoice::Address(address))
        .within(30, "the daemon to start")
        .await
        .unwrap();
    assert!(daemon.boards().is_empty());
    std::fs::create_dir(&devices).unwrap();

    // A board is plugged in and ten moves are played.
    let game = &long_game();
    let first = plug_in(
        &devices,
        "dgt_port1",
        game_log(&game.start, &game.moves[..10], 5),
        "24680",
    );
    let snap = bridged_as(&daemon, 1, "dgt_port1").await;
    wait_for("ten moves", 30, || snap.borrow().moves.len() == 10).await;
    assert_eq!(snap.borrow().serial_number, "24680");

    // Unplugged (udev removes its link); two more moves are played meanwhile, and it
    // is plugged into another port, which gives it another name.
    first.abort();
    std::fs::remove_file(devices.join("dgt_port1")).unwrap();
    wait_for("the board to go", 10, || !snap.borrow().connected).await;
    let mut pos = game.start.clone();
    for m in &game.moves[..12] {
        pos.play_unchecked(*m);
    }
    let _second = plug_in(
        &devices,
        "dgt_port2",
        game_log(&pos, &game.moves[12..20], 6),
        "24680",
    );
    wait_for("the board to come back", 10, || snap.borrow().connected).await;
    wait_for("twenty moves", 30, || snap.borrow().moves.len() == 20).await;
    assert_eq!(snap.borrow().moves, sans(&game.moves[..20]));
    assert!(
        snap.borrow().device.ends_with("dgt_port2"),
        "{}",
        snap.borrow().device
    );
    assert_eq!(daemon.boards().len(), 1, "the same board, not a new one");

    // Another board (another serial number) is a board of its own.
    let short = &game.moves[..4];
    let _third = plug_in(&devices, "dgt_port3", game_log(&game.start, short, 7), "11111");
    let snap3 = bridged_as(&daemon, 2, "dgt_port3").await;
    wait_for("four moves on the second board", 30, || {
        snap3.borrow().moves.len() == 4
    })
    .await;
    // D-Bus clients were told of each new board, once.
    let mut paths = Vec::new();
    while let Ok(Some(Ok(msg))) = tokio::time::timeout(Duration::from_millis(300), added.next()).await {
        type Interfaces = HashMap<String, HashMap<String, zbus::zvariant::OwnedValue>>;
        let (path, interfaces): (zbus::zvariant::OwnedObjectPath, Interfaces) =
            msg.body().deserialize().unwrap();
        assert!(interfaces.contains_key(BOARD_INTERFACE), "{interfaces:?}");
        paths.push(path.to_string());
    }
    assert_eq!(
        paths,
        [
            "/org/eboardbridge/board/dgt_port1",
            "/org/eboardbridge/board/dgt_port3"
        ]
    );
    daemon.shutdown().within(30, "the daemon to stop").await;

    // The configuration knows the first board by its serial number: board 5, with
    // its player. The other takes the lowest free number.
    let round = dir.path().join("live/round-1");
    let five = std::fs::read_to_string(round.join("game-5.pgn")).unwrap();
    assert!(
        five.contains("[Round \"1.5\"]") && five.contains("[White \"Kasparov, Garry\"]"),
        "{five}"
    );
    assert_eq!(pgn_moves(&five), vec![sans(&game.moves[..20])]);
    let one = std::fs::read_to_string(round.join("game-1.pgn")).unwrap();
    assert_eq!(pgn_moves(&one), vec![sans(short)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_board_named_by_device_takes_its_number_from_its_serial_number() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("ttyACM0");
    let game = &long_game();
    let _board = emulate(game_log(&game.start, &game.moves[..4], 8), &link, 8.0);
    let cfg = DaemonConfig::parse(
        &format!(
            "round = 2\noutput = \"{}\"\nstate = \"{}\"\n[[board]]\nserial = \"13579\"\nnumber = 9\nblack = \"Nepomniachtchi, Ian\"\n",
            dir.path().join("live").display(),
            dir.path().join("state").display()
        ),
        "test.toml",
    )
    .unwrap();
    let daemon = Daemon::start(vec![link], cfg, BusChoice::None)
        .within(30, "the daemon to start")
        .await
        .unwrap();
    let snap = daemon.boards()[0].2.clone();
    wait_for("four moves", 30, || snap.borrow().moves.len() == 4).await;
    assert!(
        snap.borrow().pgn.contains("[Round \"2.9\"]"),
        "{}",
        snap.borrow().pgn
    );
    daemon.shutdown().within(30, "the daemon to stop").await;
    let nine = std::fs::read_to_string(dir.path().join("live/round-2/game-9.pgn")).unwrap();
    assert!(nine.contains("[Black \"Nepomniachtchi, Ian\"]"), "{nine}");
    assert_eq!(pgn_moves(&nine), vec![sans(&game.moves[..4])]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_daemon_on_the_same_bus_is_refused_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let address = private_bus(dir.path()).await;
    let first = Daemon::start(
        vec![dir.path().join("board0")],
        config(dir.path()),
        BusChoice::Address(address.clone()),
    )
    .within(30, "the daemon to start")
    .await
    .unwrap();
    let other = tempfile::tempdir().unwrap();
    let second = Daemon::start(
        vec![other.path().join("board0")],
        config(other.path()),
        BusChoice::Address(address),
    )
    .within(30, "the daemon to start")
    .await;
    match second {
        Err(e @ DaemonError::Name(_)) => {
            assert!(
                e.to_string().contains("cannot take the name org.eboardbridge"),
                "{e}"
            )
        }
        Err(e) => panic!("the wrong error: {e}"),
        Ok(_) => panic!("a second daemon took the name (or queued for it)"),
    }
    first.shutdown().within(30, "the daemon to stop").await;
}

/// What a line held before the daemon opened it (the board's bytes while
/// nobody read it: the daemon down, the line between its reopens) is stale and
/// is discarded at every opening: a field update and a clock report left on
/// the line are neither journaled nor judged (the event campaign's seed 1166:
/// a stale clock report, read as the first after a restart, said the wrong
/// side was to move and two plies were found in the wrong order). Each
/// opening of the line: the first, and again after the line went away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_line_held_before_it_was_opened_is_discarded() {
    use tokio::io::AsyncWriteExt;
    use tokio_serial::SerialPort;
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("board0");
    let journal = dir.path().join("state/recordings/board0.esl");
    // Stale: e2 emptied, and a clock report (White's running).
    let stale: [u8; 15] = [
        0x8e, 0x00, 0x05, 0x34, 0x00, 0x8d, 0x00, 0x0a, 0x01, 0x29, 0x27, 0x01, 0x29, 0x47, 0x09,
    ];
    let mut daemon = None;
    for opening in 0..2 {
        // A line (pseudo-terminal) whose board side is held open, as a board
        // keeps sending: what it writes waits in the line until it is read.
        let (mut master, slave) = tokio_serial::SerialStream::pair().unwrap();
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(slave.name().unwrap(), &link).unwrap();
        master.write_all(&stale).await.unwrap();
        master.flush().await.unwrap();
        if daemon.is_none() {
            daemon = Some(
                Daemon::start(vec![link.clone()], config(dir.path()), BusChoice::None)
                    .within(30, "the daemon to start")
                    .await
                    .unwrap(),
            );
        }
        let snap = daemon.as_ref().unwrap().boards()[0].2.clone();
        wait_for("the board connected", 10, || snap.borrow().connected).await;
        // Its start-up commands reached the board: the line was read from then.
        let mut asked = [0u8; 64];
        let n = tokio::io::AsyncReadExt::read(&mut master, &mut asked)
            .within(5, "the daemon's start-up commands")
            .await
            .unwrap();
        assert!(n > 0);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let text = std::fs::read_to_string(&journal).unwrap();
        let after = text.rsplit("gap connected").next().unwrap_or_default();
        assert!(
            !after.lines().any(|l| l.contains(" rx ")),
            "opening {opening}: bytes the line held before it was opened were read:\n{after}"
        );
        // The line goes away (the board unplugged) for the next opening.
        drop(master);
        drop(slave);
        let _ = std::fs::remove_file(&link);
        wait_for("the board away", 10, || !snap.borrow().connected).await;
    }
    daemon.unwrap().shutdown().within(30, "the daemon to stop").await;
}
