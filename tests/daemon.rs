//! The daemon end to end: a private D-Bus broker (busd, in process), virtual boards
//! on real pseudo-terminals, the broadcast folder on disk, and the real binary killed
//! with SIGKILL.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{
    Need, Within, bus_client, listen, need, pgn_games, pgn_moves, private_bus, quick, send_signal, wait_exit,
    wait_for,
};
use eboard_bridge::board::Orientation;
use eboard_bridge::bus::{BOARD_INTERFACE, BUS_NAME, ROOT_PATH};
use eboard_bridge::daemon::{BusChoice, Config, Daemon, DaemonError};
use eboard_bridge::device::{Emulator, EmulatorConfig};
use eboard_bridge::log::SensorLog;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::rules::EventKind;
use eboard_bridge::sim::{Hands, Style};
use futures_util::StreamExt;
use shakmaty::{Chess, Move, Position};

/// A sensor log of `moves` from `start` played by simulated hands.
fn game_log(start: &Chess, moves: &[Move], seed: u64) -> SensorLog {
    let mut hands = Hands::new(seed, quick(), Orientation::Normal);
    hands.board(start.board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    common::played_log(hands, start, moves, 1500)
}

fn sans(moves: &[Move]) -> Vec<String> {
    common::sans(&Chess::default(), moves)
}

/// Starts an emulator playing `log` and points `link` at it.
fn emulate(log: SensorLog, link: &Path, speed: f64) -> tokio::task::JoinHandle<()> {
    emulate_as(log, link, speed, "13579")
}

/// The same, for a board with this serial number.
fn emulate_as(log: SensorLog, link: &Path, speed: f64, serial: &str) -> tokio::task::JoinHandle<()> {
    let cfg = EmulatorConfig {
        speed,
        serial: serial.into(),
        ..EmulatorConfig::default()
    };
    emulate_with(log, link, cfg)
}

/// The same, the emulator set up with `cfg`.
fn emulate_with(log: SensorLog, link: &Path, cfg: EmulatorConfig) -> tokio::task::JoinHandle<()> {
    let emulator = Emulator::open().unwrap();
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(emulator.path(), link).unwrap();
    tokio::spawn(async move {
        let _ = emulator.run(&log, "generated", &cfg).await;
    })
}

fn config(dir: &Path) -> Config {
    Config::parse(
        &format!(
            "event = \"Test Open\"\nround = 4\noutput = \"{}\"\nstate = \"{}\"\n[[board]]\ndevice = \"{}\"\nnumber = 7\nwhite = \"Anderssen, Adolf\"\nblack = \"Kieseritzky, Lionel\"\n",
            dir.join("live").display(),
            dir.join("state").display(),
            dir.join("board0").display()
        ),
        "test.toml",
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_game_over_a_pty_is_published_on_dbus_and_in_the_broadcast_folder() {
    let dir = tempfile::tempdir().unwrap();
    let game = &pgn_games("games/immortal-games.pgn")[0];
    let expected = sans(&game.moves);
    let link = dir.path().join("board0");
    let emulator = emulate(game_log(&game.start, &game.moves, 42), &link, 8.0);
    let address = private_bus(dir.path()).await;

    // A client listening before the daemon starts.
    let (client, mut signals) = listen(&address, BOARD_INTERFACE, Some("MoveMade")).await;

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
    let proxy = zbus::Proxy::new(&client, BUS_NAME, path.as_str(), BOARD_INTERFACE)
        .within(10, "a proxy of the board")
        .await
        .unwrap();
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
        let msg = tokio::time::timeout(Duration::from_secs(5), signals.next())
            .await
            .expect("a MoveMade signal per move")
            .unwrap()
            .unwrap();
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
        let msg = tokio::time::timeout(Duration::from_secs(10), made.next())
            .await
            .expect("a MoveMade signal per move")
            .unwrap()
            .unwrap();
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
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();

    // The PropertiesChanged of a move: LastMove, Moves, Fen and Pgn in one signal.
    let mut together = 0;
    while let Ok(Some(Ok(msg))) = tokio::time::timeout(Duration::from_millis(200), changes.next()).await {
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boards_plugged_in_are_bridged_and_one_back_on_another_port_keeps_its_game() {
    let dir = tempfile::tempdir().unwrap();
    let devices = dir.path().join("eboard");
    let cfg = Config::parse(
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
    let first = emulate_as(
        game_log(&game.start, &game.moves[..10], 5),
        &devices.join("dgt_port1"),
        8.0,
        "24680",
    );
    wait_for("the board to be bridged", 10, || daemon.boards().len() == 1).await;
    let (id, _, snap) = daemon.boards()[0].clone();
    assert_eq!(id, "dgt_port1");
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
    let _second = emulate_as(
        game_log(&pos, &game.moves[12..20], 6),
        &devices.join("dgt_port2"),
        8.0,
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
    let _third = emulate_as(
        game_log(&game.start, short, 7),
        &devices.join("dgt_port3"),
        8.0,
        "11111",
    );
    wait_for("a second board", 10, || daemon.boards().len() == 2).await;
    let (id3, _, snap3) = daemon.boards()[1].clone();
    assert_eq!(id3, "dgt_port3");
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
    let cfg = Config::parse(
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

/// A real game from the standard start with at least 30 plies.
fn long_game() -> common::PgnGame {
    pgn_games("games/immortal-games.pgn")
        .into_iter()
        .find(|g| g.moves.len() >= 30 && g.start == Chess::default())
        .expect("a long game")
}

/// A configuration for the real binary: round 1, folders in `dir`.
fn run_config(dir: &Path) -> PathBuf {
    let cfg = dir.join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "round = 1\noutput = \"{}\"\nstate = \"{}\"\n",
            dir.join("live").display(),
            dir.join("state").display()
        ),
    )
    .unwrap();
    cfg
}

/// How many moves a broadcast PGN file holds (0 while it does not exist).
fn moves_in(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .ok()
        .map(|t| pgn_moves(&t).concat().len())
        .unwrap_or(0)
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_eboard-bridge"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_with_sigkill_resumes_the_same_game() {
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path());
    let live = dir.path().join("live/round-1/game-1.pgn");
    let start = || start_binary(&cfg, &link, None);
    let _first = emulate(game_log(&game.start, &game.moves[..16], 3), &link, 8.0);
    let mut daemon = start();
    wait_for("sixteen moves on disk", 30, || moves_in(&live) == 16).await;
    signal(&mut daemon, "KILL").await;
    // Restarted on the same board: the same game, every move, and it goes on.
    let mut pos = game.start.clone();
    for m in &game.moves[..16] {
        pos.play_unchecked(*m);
    }
    let _second = emulate(game_log(&pos, &game.moves[16..24], 4), &link, 8.0);
    std::fs::remove_file(&live).unwrap();
    let mut daemon = start();
    wait_for("twenty-four moves on disk", 30, || moves_in(&live) == 24).await;
    let text = std::fs::read_to_string(&live).unwrap();
    assert_eq!(pgn_moves(&text), vec![sans(&game.moves[..24])]);
    // SIGTERM: a clean stop.
    send_signal(daemon.0.id(), libc::SIGTERM);
    let status = wait_exit(&mut daemon.0, 30, "the daemon after SIGTERM").await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_with_a_torn_last_line_resumes_and_is_mended() {
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("state/recordings/board0.esl");
    // Killed in the middle of writing the last line.
    let (daemon, snap) = resume_from(
        dir.path(),
        "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n1 lift e2 P\n1.4 place e4 P\n2 li",
        1,
    )
    .await;
    assert_eq!(snap.borrow().moves, vec!["e4".to_string()]);
    assert_eq!(snap.borrow().status, "disconnected");
    daemon.shutdown().within(30, "the daemon to stop").await;
    // The torn line is gone; what the daemon added reads as a sensor log.
    let text = std::fs::read_to_string(&recording).unwrap();
    assert!(!text.contains("2 li"), "{text}");
    eboard_bridge::log::read_log(&recording).unwrap();
}

/// Arbiter decisions are part of the record: a result given over D-Bus comes back
/// after SIGKILL and after SIGTERM (properties and broadcast file), and `replay` of
/// the recording gives the same game and result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arbiters_result_survives_sigkill_and_sigterm_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path());
    let address = private_bus(dir.path()).await;
    let live = dir.path().join("live/round-1/game-1.pgn");
    let start = || start_binary(&cfg, &link, Some(&address));
    let client = bus_client(&address).await;
    let proxy = |c: zbus::Connection| async move {
        zbus::Proxy::new(&c, BUS_NAME, "/org/eboardbridge/board/board0", BOARD_INTERFACE)
            .within(10, "a proxy of board0")
            .await
            .unwrap()
    };
    let result_of = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("[Result \"").and_then(|r| r.strip_suffix("\"]")))
                    .map(str::to_string)
            })
            .unwrap_or_default()
    };
    let _board = emulate(game_log(&game.start, &game.moves[..12], 5), &link, 8.0);
    let mut daemon = start();
    wait_for("twelve moves on disk", 30, || moves_in(&live) == 12).await;
    let p = proxy(client.clone()).await;
    // Refused calls change nothing and are not journaled; the accepted one is.
    let huge = "x".repeat(1 << 20);
    assert!(
        p.call::<_, _, ()>("SetPosition", &(huge.as_str(),))
            .await
            .is_err()
    );
    p.call::<_, _, ()>("SetResult", &("1-0",)).await.unwrap();
    wait_for("1-0 on disk", 10, || result_of(&live) == "1-0").await;
    let recording = dir.path().join("state/recordings/board0.esl");
    let text = std::fs::read_to_string(&recording).unwrap();
    assert!(text.contains(" arbiter SetResult \"1-0\"\n"), "no arbiter record");
    assert!(
        text.len() < 200_000,
        "a refused call was journaled ({} bytes)",
        text.len()
    );

    for how in ["KILL", "TERM"] {
        signal(&mut daemon, how).await;
        std::fs::remove_file(&live).unwrap();
        daemon = start();
        wait_for("the game on disk again", 30, || moves_in(&live) == 12).await;
        assert_eq!(result_of(&live), "1-0", "after SIG{how}");
        property_is(&address, "Result", "1-0").await;
        property_is(&address, "Status", "finished").await;
    }
    signal(&mut daemon, "TERM").await;
    // The recording replays to the published game, result included.
    let log = eboard_bridge::log::read_log(&recording).unwrap();
    let r = eboard_bridge::output::replay::run(&log, "board0", eboard_bridge::rules::Config::default(), None)
        .unwrap();
    let g = r.core.games().last().unwrap();
    assert_eq!(g.moves.len(), 12);
    assert_eq!(g.result, Some(("1-0", "arbiter")));
}

/// A malformed line in the middle of a recording (a disk error, a hand edit) is
/// reported with its line and skipped: the board resumes every move around it
/// instead of failing to start (and taking the daemon down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_with_a_malformed_middle_line_resumes_every_move() {
    let dir = tempfile::tempdir().unwrap();
    let (daemon, snap) = resume_from(
        dir.path(),
        "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n1 lift e2 P\n1.4 place e4 P\n2 rx 8z zz\n3 lift e7 p\n3.4 place e5 p\n",
        2,
    )
    .await;
    assert_eq!(snap.borrow().moves, vec!["e4".to_string(), "e5".to_string()]);
    daemon.shutdown().within(30, "the daemon to stop").await;
}

/// A daemon resuming board0 from a recording with `text`, the board not plugged
/// in (the game comes from the recording alone), once `moves` moves are back.
async fn resume_from(
    dir: &Path,
    text: &str,
    moves: usize,
) -> (Daemon, tokio::sync::watch::Receiver<eboard_bridge::bus::Snapshot>) {
    let recording = dir.join("state/recordings/board0.esl");
    std::fs::create_dir_all(recording.parent().unwrap()).unwrap();
    std::fs::write(&recording, text).unwrap();
    let daemon = Daemon::start(vec![dir.join("board0")], config(dir), BusChoice::None)
        .within(30, "the daemon to start")
        .await
        .unwrap();
    let snap = daemon.boards()[0].2.clone();
    wait_for("the recorded moves", 10, || snap.borrow().moves.len() == moves).await;
    (daemon, snap)
}

/// A tag's value in a PGN file ("" while the file or the tag is missing).
fn tag_in(path: &Path, tag: &str) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            let start = format!("[{tag} \"");
            t.lines()
                .find_map(|l| l.strip_prefix(start.as_str()).and_then(|r| r.strip_suffix("\"]")))
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// A daemon process, killed however the test ends, and what it has logged.
struct Running(std::process::Child, std::sync::Arc<std::sync::Mutex<String>>);

impl Running {
    /// How many lines it has logged that contain `text`.
    fn logged(&self, text: &str) -> usize {
        self.1
            .lock()
            .unwrap()
            .lines()
            .filter(|l| l.contains(text))
            .count()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The real binary on the bus at `address` (`--bus session`), or on none.
fn start_binary(cfg: &Path, link: &Path, address: Option<&str>) -> Running {
    let mut cmd = std::process::Command::new(bin());
    cmd.args([
        "run",
        "--bus",
        if address.is_some() { "session" } else { "none" },
        "--config",
    ])
    .arg(cfg)
    .arg("--device")
    .arg(link);
    if let Some(a) = address {
        cmd.env("DBUS_SESSION_BUS_ADDRESS", a);
    }
    // Its log goes through this process (a file size limit set on the daemon
    // must not cut its own log short).
    let mut child = cmd.stderr(std::process::Stdio::piped()).spawn().unwrap();
    let err = child.stderr.take().unwrap();
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            eprintln!("{line}");
            kept.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    Running(child, log)
}

/// Sends the daemon SIG`how` (`KILL`, `TERM`, `HUP`) and, but for `HUP`, waits
/// (at most 30 s) for it to end.
async fn signal(Running(child, _): &mut Running, how: &str) {
    let number = match how {
        "KILL" => libc::SIGKILL,
        "TERM" => libc::SIGTERM,
        "HUP" => libc::SIGHUP,
        other => panic!("no signal {other} in these tests"),
    };
    send_signal(child.id(), number);
    if how != "HUP" {
        wait_exit(child, 30, &format!("the daemon after SIG{how}")).await;
    }
}

/// A proxy of board0 on the bus at `address` that reads its properties afresh
/// (a caching proxy waits on the signals of a daemon that may have been replaced).
async fn board0(address: &str) -> zbus::Proxy<'static> {
    let client = bus_client(address).await;
    zbus::proxy::Builder::new(&client)
        .destination(BUS_NAME)
        .unwrap()
        .path("/org/eboardbridge/board/board0")
        .unwrap()
        .interface(BOARD_INTERFACE)
        .unwrap()
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .within(10, "a proxy of board0")
        .await
        .unwrap()
}

/// A board standing in the start position, `more` records after it.
fn standing(more: &str) -> SensorLog {
    eboard_bridge::log::parse_log(
        &format!("# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n{more}"),
        "standing.esl",
    )
    .unwrap()
}

/// A daemon on a private bus in `dir` bridging board0 (`dir`/board0), once the
/// board is connected: the daemon, its snapshot, the bus address.
async fn bridged(
    dir: &Path,
    cfg: Config,
) -> (
    Daemon,
    tokio::sync::watch::Receiver<eboard_bridge::bus::Snapshot>,
    String,
) {
    let address = private_bus(dir).await;
    let daemon = Daemon::start(vec![dir.join("board0")], cfg, BusChoice::Address(address.clone()))
        .within(30, "the daemon to start")
        .await
        .unwrap();
    let snap = daemon.boards()[0].2.clone();
    wait_for("the board", 10, || snap.borrow().connected).await;
    (daemon, snap, address)
}

/// When board0's recording in `dir` says `bytes` were sent to the board (s).
fn sent_at(dir: &Path, bytes: &[u8]) -> Vec<f64> {
    let recording = eboard_bridge::log::read_log(&dir.join("state/recordings/board0.esl")).unwrap();
    recording
        .records
        .iter()
        .filter(|r| matches!(&r.kind, eboard_bridge::log::RecordKind::Tx(b) if b == bytes))
        .map(|r| r.time.micros() as f64 / 1e6)
        .collect()
}

/// Waits until `property` of board0 reads `want` (as its D-Bus value's text), at
/// most 20 s.
async fn property_is(address: &str, property: &str, want: &str) {
    let p = board0(address).await;
    let mut last = String::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::time::Instant::now() < until {
        let read = p.get_property::<zbus::zvariant::OwnedValue>(property);
        if let Ok(Ok(v)) = tokio::time::timeout(Duration::from_secs(1), read).await {
            last = if let Ok(s) = v.downcast_ref::<zbus::zvariant::Str>() {
                s.to_string()
            } else if let Ok(b) = v.downcast_ref::<bool>() {
                b.to_string()
            } else {
                format!("{v:?}")
            };
            if last == want {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out after 20 s waiting for {property} to be {want:?}: it is {last:?}");
}

/// Arbiter decisions are part of the record: players named, a take-back to ply 8
/// (7.5.1), a new game on the game under way (which is kept, `*` abandoned, in its
/// own file), a result for the new game. Across SIGKILL and SIGTERM the daemon
/// comes back with exactly that (files and D-Bus), and `replay` of the recording
/// gives the same games.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbiter_decisions_and_every_game_survive_sigkill_and_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path());
    let address = private_bus(dir.path()).await;
    let round = dir.path().join("live/round-1");
    let (first, second) = (round.join("game-1.pgn"), round.join("game-1-2.pgn"));
    let _board = emulate(game_log(&game.start, &game.moves[..12], 6), &link, 8.0);
    let mut daemon = start_binary(&cfg, &link, Some(&address));
    wait_for("twelve moves on disk", 30, || moves_in(&first) == 12).await;
    let p = board0(&address).await;
    // A time control set while moves are played would reset both clocks: refused.
    let e = p.call::<_, _, ()>("SetTimeControl", &("90",)).await.unwrap_err();
    assert!(e.to_string().contains("GameUnderWay"), "{e}");
    p.call::<_, _, ()>("SetPlayers", &("Anand, Viswanathan", "Carlsen, Magnus"))
        .await
        .unwrap();
    p.call::<_, _, ()>("Reinstate", &(8u32,)).await.unwrap();
    // An empty FEN is not a position: refused, nothing changes.
    assert!(p.call::<_, _, ()>("SetPosition", &("",)).await.is_err());
    p.call::<_, _, ()>("NewGame", &("",)).await.unwrap();
    p.call::<_, _, ()>("SetResult", &("0-1",)).await.unwrap();
    let check = |when: &str| {
        assert_eq!(moves_in(&first), 8, "{when}: the first game");
        assert_eq!(tag_in(&first, "Result"), "*", "{when}");
        assert_eq!(tag_in(&first, "Termination"), "abandoned", "{when}");
        assert_eq!(tag_in(&first, "White"), "Anand, Viswanathan", "{when}");
        assert_eq!(moves_in(&second), 0, "{when}: the second game");
        assert_eq!(tag_in(&second, "Result"), "0-1", "{when}");
        assert_eq!(tag_in(&second, "Black"), "Carlsen, Magnus", "{when}");
        let all = std::fs::read_to_string(round.join("games.pgn")).unwrap();
        assert_eq!(all.matches("[Event ").count(), 2, "{when}: games.pgn");
    };
    // The writer replaces each game's file, then games.pgn: wait for both.
    let on_disk = || {
        moves_in(&first) == 8
            && tag_in(&second, "Result") == "0-1"
            && std::fs::read_to_string(round.join("games.pgn"))
                .is_ok_and(|a| a.matches("[Event ").count() == 2)
    };
    wait_for("the new game's file", 10, on_disk).await;
    check("live");
    for how in ["KILL", "TERM"] {
        signal(&mut daemon, how).await;
        // The folder emptied by hand: the restart writes every game again.
        std::fs::remove_dir_all(&round).unwrap();
        daemon = start_binary(&cfg, &link, Some(&address));
        wait_for("both games on disk again", 30, on_disk).await;
        check(&format!("after SIG{how}"));
        property_is(&address, "Result", "0-1").await;
        property_is(&address, "White", "Anand, Viswanathan").await;
        property_is(&address, "Status", "finished").await;
    }
    signal(&mut daemon, "TERM").await;
    let recording = dir.path().join("state/recordings/board0.esl");
    let log = eboard_bridge::log::read_log(&recording).unwrap();
    let r = eboard_bridge::output::replay::run(&log, "board0", eboard_bridge::rules::Config::default(), None)
        .unwrap();
    let games: Vec<_> = r.core.games().collect();
    assert_eq!(games.len(), 2);
    assert_eq!(games[0].moves.len(), 8);
    assert_eq!(games[0].result, Some(("*", "abandoned")));
    assert_eq!(games[1].moves.len(), 0);
    assert_eq!(games[1].result, Some(("0-1", "arbiter")));
}

/// A configuration for round `round` whose board 7 (board0) has these players.
fn round_config(dir: &Path, round: u32, white: &str, black: &str) -> PathBuf {
    let cfg = dir.join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "event = \"Open\"\nround = {round}\noutput = \"{}\"\nstate = \"{}\"\n[[board]]\ndevice = \"{}\"\nnumber = 7\nwhite = \"{white}\"\nblack = \"{black}\"\n",
            dir.join("live").display(),
            dir.join("state").display(),
            dir.join("board0").display()
        ),
    )
    .unwrap();
    cfg
}

/// A new round by SIGHUP while a board is away: the game under way keeps its round
/// and players (nothing of it is written under the new round, not after a restart
/// either); when the board comes back showing the start position, the new game is
/// the new round's, with the new players, and the old one is kept, abandoned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_round_by_sighup_with_a_board_away_keeps_the_old_game_in_its_round() {
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let link = dir.path().join("board0");
    let address = private_bus(dir.path()).await;
    let cfg = round_config(dir.path(), 1, "White, Round1", "Black, Round1");
    let old = dir.path().join("live/round-1/game-7.pgn");
    let round2 = dir.path().join("live/round-2");
    let recording = dir.path().join("state/recordings/board0.esl");
    let board = emulate(game_log(&game.start, &game.moves[..6], 7), &link, 8.0);
    let mut daemon = start_binary(&cfg, &link, Some(&address));
    wait_for("six moves on disk", 30, || moves_in(&old) == 6).await;
    board.abort();
    property_is(&address, "Connected", "false").await;
    round_config(dir.path(), 2, "White, Round2", "Black, Round2");
    signal(&mut daemon, "HUP").await;
    wait_for("the configuration read again", 10, || {
        std::fs::read_to_string(&recording).is_ok_and(|t| t.contains("note configuration read again"))
    })
    .await;
    let old_game_kept = |when: &str| {
        assert_eq!(moves_in(&old), 6, "{when}");
        assert_eq!(tag_in(&old, "White"), "White, Round1", "{when}");
        assert_eq!(tag_in(&old, "Round"), "1.7", "{when}");
        assert!(
            common::pgn_files(&round2).is_empty(),
            "{when}: the new round has the old game"
        );
    };
    property_is(&address, "Round", "1").await;
    property_is(&address, "White", "White, Round1").await;
    old_game_kept("after SIGHUP");
    // Restarted with the new round's configuration, the board still away.
    signal(&mut daemon, "TERM").await;
    daemon = start_binary(&cfg, &link, Some(&address));
    property_is(&address, "Connected", "false").await;
    property_is(&address, "Round", "1").await;
    property_is(&address, "White", "White, Round1").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    old_game_kept("after a restart");
    // The board comes back set up for the new round, and a game starts.
    let _board = emulate(game_log(&Chess::default(), &game.moves[..2], 8), &link, 8.0);
    let new = round2.join("game-7.pgn");
    wait_for("the new round's game", 30, || moves_in(&new) == 2).await;
    assert_eq!(tag_in(&new, "White"), "White, Round2");
    assert_eq!(tag_in(&new, "Round"), "2.7");
    property_is(&address, "Round", "2").await;
    assert_eq!(moves_in(&old), 6);
    assert_eq!(tag_in(&old, "Termination"), "abandoned");
    assert_eq!(tag_in(&old, "White"), "White, Round1");
    signal(&mut daemon, "TERM").await;
}

/// A disk that fills and empties under the daemon (a file size limit set on the
/// running process with `prlimit`: its writes fail with EFBIG as on a full disk):
/// the game goes on and is published meanwhile, the journal holds what it cannot
/// write and writes it when the disk works again, tears no line, and a restart
/// after SIGKILL resumes every move published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_fills_and_empties_loses_no_published_move() {
    if !need(&[Need::Tool("prlimit", "util-linux")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path());
    let live = dir.path().join("live/round-1/game-1.pgn");
    let recording = dir.path().join("state/recordings/board0.esl");
    let size = || std::fs::metadata(&recording).map_or(0, |m| m.len());
    let _board = emulate(game_log(&game.start, &game.moves[..24], 9), &link, 1.0);
    let mut daemon = start_binary(&cfg, &link, None);
    let pid = daemon.0.id().to_string();
    let prlimit = |limit: &str| {
        let out = common::output_within(
            std::process::Command::new("prlimit").args(["--pid", &pid, &format!("--fsize={limit}:")]),
            10,
            "prlimit",
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    wait_for("four moves on disk", 30, || moves_in(&live) >= 4).await;
    // The disk is full: the recording cannot grow.
    let full = size();
    prlimit(&full.to_string());
    let at_full = moves_in(&live);
    wait_for("eight more moves published", 60, || {
        moves_in(&live) >= at_full + 8
    })
    .await;
    assert_eq!(size(), full, "the recording grew on a full disk");
    // Every input failed a write; the error is said once (a minute).
    assert_eq!(
        daemon.logged("cannot write"),
        1,
        "the write error is said once a minute"
    );
    let text = std::fs::read_to_string(&recording).unwrap();
    assert!(text.ends_with('\n'), "a torn line on a full disk");
    // Room again: what was held is written, the game goes on.
    prlimit("unlimited");
    wait_for("every move published", 60, || moves_in(&live) == 24).await;
    wait_for("the recording written again", 10, || size() > full).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    signal(&mut daemon, "KILL").await;
    let published = std::fs::read_to_string(&live).unwrap();
    eboard_bridge::log::read_log(&recording).expect("the recording reads whole");
    std::fs::remove_file(&live).unwrap();
    let mut daemon = start_binary(&cfg, &link, None);
    wait_for("every move resumed", 30, || moves_in(&live) == 24).await;
    assert_eq!(
        pgn_moves(&std::fs::read_to_string(&live).unwrap()),
        pgn_moves(&published)
    );
    assert_eq!(pgn_moves(&published), vec![sans(&game.moves[..24])]);
    signal(&mut daemon, "TERM").await;
}

/// The SIGKILL soak (`docs/RELIABILITY.md`): the daemon killed `SOAK_KILLS` times
/// (4 in CI; 100 for the documented figure) at random moments (`SOAK_SEED`) while
/// a game is played on the board, with an arbiter's call (`SetPlayers`) accepted
/// between kills. After every restart the published game has every move published
/// before the kill and the last decision stands; at the end the game is whole and
/// a result given just before the last kill stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_soak_loses_no_move_and_no_decision() {
    let kills: u32 = std::env::var("SOAK_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(4);
    let mut seed: u64 = std::env::var("SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut random = |lo: u64, hi: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (seed >> 33) % (hi - lo)
    };
    let dir = tempfile::tempdir().unwrap();
    let game = common::STANDARD_GAME_FILES
        .iter()
        .flat_map(|f| pgn_games(f))
        .filter(|g| g.start == Chess::default())
        .max_by_key(|g| g.moves.len())
        .unwrap();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path());
    let address = private_bus(dir.path()).await;
    let live = dir.path().join("live/round-1/game-1.pgn");
    // The game spread over the kills (a kill and a restart take about 1.6 s), at
    // most a ply every 0.7 s: a kill and a restart miss a ply or two, which the
    // daemon finds across the gap.
    let plies = game.moves.len().min(6 + 2 * kills as usize);
    let speed = (plies as f64 / (1.6 * f64::from(kills.max(1)))).clamp(0.3, 1.5);
    let _board = emulate(game_log(&game.start, &game.moves[..plies], 10), &link, speed);
    let p = board0(&address).await;
    let mut daemon = start_binary(&cfg, &link, Some(&address));
    let started = std::time::Instant::now();
    let mut decided: Option<String> = None;
    let mut decisions = 0;
    for i in 0..kills {
        tokio::time::sleep(Duration::from_millis(random(300, 1500))).await;
        if random(0, 2) == 0 {
            let white = format!("White {i}");
            let args = (white.as_str(), "Black");
            let call = p.call::<_, _, ()>("SetPlayers", &args);
            if let Ok(Ok(())) = tokio::time::timeout(Duration::from_secs(5), call).await {
                decided = Some(white);
                decisions += 1;
            }
            tokio::time::sleep(Duration::from_millis(random(0, 300))).await;
        }
        let before = moves_in(&live);
        signal(&mut daemon, "KILL").await;
        daemon = start_binary(&cfg, &link, Some(&address));
        wait_for("the game published again", 30, || moves_in(&live) >= before).await;
        if let Some(w) = &decided {
            property_is(&address, "White", w).await;
        }
    }
    wait_for("the whole game", 60 + 3 * plies as u64, || {
        moves_in(&live) == plies
    })
    .await;
    let published = pgn_moves(&std::fs::read_to_string(&live).unwrap());
    assert_eq!(published, vec![sans(&game.moves[..plies])]);
    p.call::<_, _, ()>("SetResult", &("1/2-1/2",)).await.unwrap();
    signal(&mut daemon, "KILL").await;
    std::fs::remove_file(&live).unwrap();
    let mut daemon = start_binary(&cfg, &link, Some(&address));
    wait_for("the game after the last kill", 30, || moves_in(&live) == plies).await;
    wait_for("the result after the last kill", 10, || {
        tag_in(&live, "Result") == "1/2-1/2"
    })
    .await;
    if let Some(w) = &decided {
        assert_eq!(tag_in(&live, "White"), *w);
    }
    signal(&mut daemon, "TERM").await;
    eprintln!(
        "soak: {kills} kills, {plies} plies, {} decisions, 0 moves and 0 decisions lost, {:.0} s",
        decisions + 1,
        started.elapsed().as_secs_f64()
    );
}

/// `ShowText`'s End is sent by the board's task and recorded; a later text replaces
/// an earlier one and its End (the first End no longer cuts the second text short).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_text_replaces_an_earlier_one_and_its_end_is_recorded() {
    use eboard_bridge::protocol::{ClockCommand, HostCommand};
    let dir = tempfile::tempdir().unwrap();
    let _board = emulate(standing(""), &dir.path().join("board0"), 1.0);
    let (daemon, _, address) = bridged(dir.path(), config(dir.path())).await;
    let p = board0(&address).await;
    p.call::<_, _, ()>("ShowText", &("FIRST", 1u32)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    p.call::<_, _, ()>("ShowText", &("SECOND", 2u32)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2600)).await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    let end = HostCommand::Clock(ClockCommand::End).encode();
    let second = HostCommand::Clock(ClockCommand::text("SECOND", false)).encode();
    let (ends, seconds) = (sent_at(dir.path(), &end), sent_at(dir.path(), &second));
    assert_eq!(seconds.len(), 1, "the second text is recorded");
    assert_eq!(ends.len(), 1, "one End, recorded: {ends:?}");
    let shown = ends[0] - seconds[0];
    assert!(
        (1.9..2.5).contains(&shown),
        "the second text was shown {shown:.2} s"
    );
}

/// Clock commands one at a time: the clock's version query at connect has its
/// acknowledgement dropped, so it is sent again, identical, 2 s later; a text asked
/// for meanwhile waits for it. A clock that never answers has the command sent four
/// times, 2 s apart, then `clock_unresponsive`, and the next command goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_commands_wait_for_their_ack_are_resent_and_given_up() {
    use eboard_bridge::protocol::{ClockCommand, HostCommand};
    let version = HostCommand::Clock(ClockCommand::Version).encode();
    let text = HostCommand::Clock(ClockCommand::text("HELLO", false)).encode();
    for dropped in [1, 100] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = EmulatorConfig {
            drop_acks: dropped,
            ..EmulatorConfig::default()
        };
        let _board = emulate_with(standing(""), &dir.path().join("board0"), cfg);
        let (daemon, _, address) = bridged(dir.path(), config(dir.path())).await;
        let mut events = daemon.events();
        let p = board0(&address).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        p.call::<_, _, ()>("ShowText", &("HELLO", 30u32)).await.unwrap();
        let wait = if dropped == 1 { 3 } else { 9 };
        tokio::time::sleep(Duration::from_secs(wait)).await;
        let mut unresponsive = Vec::new();
        while let Ok(e) = events.try_recv() {
            if let EventKind::ClockUnresponsive { command } = e.event.kind {
                unresponsive.push(command);
            }
        }
        daemon.shutdown().within(30, "the daemon to stop").await;
        let (versions, texts) = (sent_at(dir.path(), &version), sent_at(dir.path(), &text));
        let gaps: Vec<f64> = versions.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.iter().all(|g| (1.9..2.4).contains(g)),
            "resent 2 s apart: {gaps:?}"
        );
        assert_eq!(texts.len(), 1, "the text is sent once: {texts:?}");
        assert!(
            texts[0] > versions[versions.len() - 1],
            "the text waited for the query"
        );
        if dropped == 1 {
            assert_eq!(versions.len(), 2, "sent, dropped, sent again: {versions:?}");
            assert!(unresponsive.is_empty());
        } else {
            assert_eq!(versions.len(), 4, "{versions:?}");
            let hex: Vec<String> = version.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(unresponsive, vec![hex.join(" ")]);
            assert!(
                texts[0] - versions[3] >= 1.9,
                "the text goes once the query is given up"
            );
        }
    }
}

/// The arbiter's clock: `AddTime` and `SetClock` set the DGT 3000 (set-and-run,
/// the running side going on running), and the clock's next reports show it;
/// arguments the clock cannot show are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_arbiter_adds_time_and_sets_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = "0 clock left=0:05:00 right=0:05:00 running=left\n";
    let _board = emulate(standing(clock), &dir.path().join("board0"), 1.0);
    let mut cfg = config(dir.path());
    cfg.clock.white = eboard_bridge::daemon::config::WhiteSide::Left;
    let (daemon, snap, address) = bridged(dir.path(), cfg).await;
    wait_for("a clock report", 10, || snap.borrow().black_clock_ms == 300_000).await;
    let p = board0(&address).await;
    // Black's clock is stopped: exactly two minutes more.
    p.call::<_, _, ()>("AddTime", &("black", 120i32)).await.unwrap();
    wait_for("black +120 s", 10, || snap.borrow().black_clock_ms == 420_000).await;
    assert_eq!(snap.borrow().clock_running, "white", "the running side goes on");
    p.call::<_, _, ()>("SetClock", &(60_000i64, 90_000i64))
        .await
        .unwrap();
    wait_for("the clock set", 10, || snap.borrow().black_clock_ms == 90_000).await;
    let white = snap.borrow().white_clock_ms;
    assert!((57_000..=60_000).contains(&white), "white {white} ms");
    assert_eq!(snap.borrow().clock_running, "white");
    for (method, bad) in [
        ("AddTime", p.call::<_, _, ()>("AddTime", &("green", 1i32)).await),
        ("SetClock", p.call::<_, _, ()>("SetClock", &(-1i64, 0i64)).await),
        (
            "SetClock",
            p.call::<_, _, ()>("SetClock", &(36_000_000i64, 0i64)).await,
        ),
    ] {
        let e = bad.unwrap_err().to_string();
        assert!(e.contains("InvalidArgument"), "{method}: {e}");
    }
    daemon.shutdown().within(30, "the daemon to stop").await;
    // Accepted calls are part of the record.
    let text = std::fs::read_to_string(dir.path().join("state/recordings/board0.esl")).unwrap();
    assert!(text.contains(" arbiter AddTime \"black\" 120\n"), "{text}");
    assert!(text.contains(" arbiter SetClock 60000 90000\n"));
}

/// `SetTimeControl` before the first move sends the DGT 3000 a set-and-run of both
/// sides (recorded) and sets the `TimeControl` property (PGN syntax, seconds); a
/// time the clock cannot show is refused, not clamped. (The clock is set, not
/// started: starting it is drive mode's, still to come.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_control_sets_the_clock_and_the_property() {
    let dir = tempfile::tempdir().unwrap();
    let clock = "0 clock left=0:05:00 right=0:05:00 running=none\n";
    let _board = emulate(standing(clock), &dir.path().join("board0"), 1.0);
    let (daemon, snap, address) = bridged(dir.path(), config(dir.path())).await;
    let p = board0(&address).await;
    let e = p
        .call::<_, _, ()>("SetTimeControl", &("10:00:00",))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("InvalidArgument"), "{e}");
    p.call::<_, _, ()>("SetTimeControl", &("90",)).await.unwrap();
    assert_eq!(snap.borrow().time_control, "5400");
    property_is(&address, "TimeControl", "5400").await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    use eboard_bridge::protocol::{ClockCommand, ClockTime, Hms, HostCommand, RunFlags};
    let hms = Hms::from_time(ClockTime::from_hms(1, 30, 0).unwrap());
    let set = HostCommand::Clock(ClockCommand::SetAndRun {
        left: hms,
        right: hms,
        flags: RunFlags {
            left_runs: false,
            right_runs: false,
            paused: false,
            switch_on_lever: true,
        },
    });
    assert_eq!(
        sent_at(dir.path(), &set.encode()).len(),
        1,
        "one set-and-run of 1:30:00"
    );
}

/// 80 moves (160 plies) with random think times through the daemon driving the
/// emulated DGT 3000 at 90+30: the clock is set at the start, and after every
/// completed move the clock shows the mover's time as the host's model has it
/// (to the second it shows) and the opponent's within a second of the model: no
/// drift. The published PGN is the replay of the recording.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_drives_the_clock_for_80_moves_without_drift() {
    use eboard_bridge::board::BoardEvent;
    use eboard_bridge::log::{Played, Player};
    use eboard_bridge::protocol::{AckKind, ClockCommand, HostInput, clock_code};
    let dir = tempfile::tempdir().unwrap();
    let moves = common::random_game(160, 3);
    let mut hands = Hands::new(
        5,
        Style {
            think_ms: (50, 400),
            step_ms: (30, 60),
            retouch: 0,
            slide: 0,
            ..Style::default()
        },
        Orientation::Normal,
    );
    hands.board(Chess::default().board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    let log = common::played_log(hands, &Chess::default(), &moves, 1500);
    let _board = emulate(log, &dir.path().join("board0"), 1.0);
    let text = format!(
        "output = \"{}\"\nstate = \"{}\"\n[[board]]\ndevice = \"{}\"\nnumber = 1\n[clock]\nmode = \"drive\"\ntime_control = \"90+30\"\n",
        dir.path().join("live").display(),
        dir.path().join("state").display(),
        dir.path().join("board0").display()
    );
    let (daemon, snap, _) = bridged(dir.path(), Config::parse(&text, "drive.toml").unwrap()).await;
    wait_for("160 plies", 240, || snap.borrow().moves.len() == 160).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(snap.borrow().time_control, "5400+30");
    let published = snap.borrow().pgn.clone();
    daemon.shutdown().within(30, "the daemon to stop").await;

    let path = dir.path().join("state/recordings/board0.esl");
    let recording = eboard_bridge::log::read_log(&path).unwrap();
    let replayed = eboard_bridge::output::replay::run(
        &recording,
        "board0.esl",
        eboard_bridge::rules::Config::default(),
        None,
    )
    .unwrap();
    let game = replayed.core.game().unwrap();
    assert_eq!(game.ply(), 160);
    assert_eq!(game.moves.iter().filter(|m| m.clk_ms.is_some()).count(), 160);
    // The live PGN's moves and clocks are the replay's.
    let moves_part = |pgn: &str| pgn[pgn.find("\n\n").unwrap()..].to_string();
    let replay_pgn =
        eboard_bridge::output::replay::game_pgn(game, &eboard_bridge::output::replay::Tags::unknown("?"));
    assert_eq!(moves_part(&published), moves_part(&replay_pgn));

    // What the clock was told and what it showed, in order.
    let steps = Player::play_log(&recording, "board0.esl").unwrap();
    let completed: Vec<(u64, u32)> = replayed
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::MoveCompleted { ply, .. } => Some(((e.t * 1e6).round() as u64, ply)),
            _ => None,
        })
        .collect();
    assert!(completed.len() >= 159, "{} moves completed", completed.len());
    let sets: Vec<(u64, ClockCommand)> = steps
        .iter()
        .filter_map(|s| match &s.what {
            Played::Host(HostInput::Command(eboard_bridge::protocol::HostCommand::Clock(
                c @ ClockCommand::SetAndRun { .. },
            ))) => Some((s.time.micros(), c.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        eboard_bridge::protocol::HostCommand::Clock(sets[0].1.clone()).encode(),
        [0x2b, 0x0a, 0x03, 0x0a, 1, 30, 0, 1, 30, 0, 0x08, 0],
        "1:30:00 on both sides at the start"
    );
    let mut checked = 0;
    for &(t, ply) in &completed {
        let clk = game.moves[ply as usize - 1].clk_ms.unwrap();
        let white_moved = ply % 2 == 1;
        // The set made for this move, its ack, and the clock's next report.
        let Some((ts, ClockCommand::SetAndRun { left, right, .. })) = sets.iter().find(|(ts, _)| *ts >= t)
        else {
            panic!("no set after ply {ply}")
        };
        let mover = if white_moved { left } else { right };
        assert_eq!(
            u64::from(mover.to_time().unwrap().millis()),
            clk / 1000 * 1000,
            "ply {ply}: the set carries the model's time"
        );
        let acked = steps
            .iter()
            .find(|s| {
                s.time.micros() >= *ts
                    && matches!(
                        s.what,
                        Played::Board(BoardEvent::ClockAck(AckKind::Command { command, .. }))
                            if command == clock_code::SET_AND_RUN
                    )
            })
            .map(|s| s.time.micros());
        let Some(acked) = acked else { continue };
        let shown = steps.iter().find_map(|s| match &s.what {
            Played::Board(BoardEvent::Clock(status)) if s.time.micros() > acked => {
                Some((s.time.micros(), *status))
            }
            _ => None,
        });
        let Some((tr, status)) = shown else { continue };
        if completed.iter().any(|&(tc, _)| tc > t && tc <= tr) {
            continue; // the next move came first
        }
        let (mine, theirs) = if white_moved {
            (status.left, status.right)
        } else {
            (status.right, status.left)
        };
        assert_eq!(
            u64::from(mine.millis()),
            clk / 1000 * 1000,
            "ply {ply}: the mover's time on the clock"
        );
        // The opponent's time in the model: its last clock minus the time since
        // the press.
        let theirs_model = if ply == 1 {
            5_400_000
        } else {
            game.moves[ply as usize - 2].clk_ms.unwrap()
        } as i64
            - ((tr - t) / 1000) as i64;
        let diff = i64::from(theirs.millis()) - theirs_model;
        assert!(
            diff.abs() <= 1000,
            "ply {ply}: the opponent's clock {diff} ms off the model"
        );
        checked += 1;
    }
    assert!(
        checked >= 120,
        "only {checked} moves had a report after their set"
    );
}

/// An 80-move game on the clock's own program, through the emulator and the
/// daemon: every move's `[%clk]` in the live PGN is the one `replay` gives for
/// the same sensor log (what the clock showed after the press).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_clocks_are_the_replay_s_for_80_moves() {
    let dir = tempfile::tempdir().unwrap();
    let moves = common::random_game(160, 21);
    // Played at the log's pace: a real clock runs in real time, and the daemon
    // ignores a report that falls faster than the time between reports allows.
    let style = Style {
        think_ms: (30, 400),
        step_ms: (20, 50),
        retouch: 0,
        slide: 0,
        ..Style::default()
    };
    let mut hands = Hands::new(9, style, Orientation::Normal);
    hands.board(Chess::default().board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    let log = common::played_log(hands, &Chess::default(), &moves, 1500);
    let replayed =
        eboard_bridge::output::replay::run(&log, "generated", eboard_bridge::rules::Config::default(), None)
            .unwrap();
    let _board = emulate(log, &dir.path().join("board0"), 1.0);
    let (daemon, snap, _) = bridged(dir.path(), config(dir.path())).await;
    wait_for("160 plies", 180, || snap.borrow().moves.len() == 160).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let published = snap.borrow().pgn.clone();
    daemon.shutdown().within(30, "the daemon to stop").await;
    // Moves and clocks (a move's time, `%emt`, is measured by the daemon, to
    // within the line's latency).
    let clocks = |pgn: &str| -> Vec<String> {
        pgn.split("[%clk ")
            .skip(1)
            .map(|s| s[..s.find(']').unwrap()].to_string())
            .collect()
    };
    let game = replayed.core.game().unwrap();
    let want = clocks(&eboard_bridge::output::replay::game_pgn(
        game,
        &eboard_bridge::output::replay::Tags::unknown("?"),
    ));
    assert_eq!(want.len(), 160);
    assert_eq!(clocks(&published), want);
    assert_eq!(pgn_moves(&published), vec![sans(&moves)]);
}

/// `[clock] show_moves`: after each completed move its SAN goes to the clock as
/// text, and the times come back 3 s later (an End).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_moves_puts_each_completed_move_on_the_clock() {
    use eboard_bridge::protocol::{ClockCommand, HostCommand};
    let dir = tempfile::tempdir().unwrap();
    let moves = "0 clock left=0:05:00 right=0:05:00 running=none\n\
                 1.000 lift e2 P\n1.400 place e4 P\n2.000 press left\n\
                 3.000 lift g8 n\n3.400 place f6 n\n4.000 press right\n";
    let _board = emulate(standing(moves), &dir.path().join("board0"), 1.0);
    let mut cfg = config(dir.path());
    cfg.clock.show_moves = true;
    let (daemon, snap, _) = bridged(dir.path(), cfg).await;
    wait_for("two moves", 10, || snap.borrow().moves.len() == 2).await;
    tokio::time::sleep(Duration::from_millis(3600)).await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    let text = |s: &str| {
        sent_at(
            dir.path(),
            &HostCommand::Clock(ClockCommand::text(s, false)).encode(),
        )
    };
    let (e4, nf6) = (text("e4"), text("Nf6"));
    assert_eq!((e4.len(), nf6.len()), (1, 1), "each move shown once");
    assert!(nf6[0] - e4[0] > 1.5, "e4 at {}, Nf6 at {}", e4[0], nf6[0]);
    // e4's End was replaced by Nf6; Nf6's came 3 s after it.
    let ends = sent_at(dir.path(), &HostCommand::Clock(ClockCommand::End).encode());
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert!(
        (2.9..3.5).contains(&(ends[0] - nf6[0])),
        "End {} s after Nf6",
        ends[0] - nf6[0]
    );
}

/// A DGT XL (clock version 1) has no text: `ShowText` goes to its six 7-segment
/// characters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xl_clock_gets_its_segment_display() {
    use eboard_bridge::protocol::HostCommand;
    let dir = tempfile::tempdir().unwrap();
    let cfg = EmulatorConfig {
        clock_version: (1, 14),
        serial: "13579".into(),
        ..EmulatorConfig::default()
    };
    let _board = emulate_with(standing(""), &dir.path().join("board0"), cfg);
    let (daemon, _, address) = bridged(dir.path(), config(dir.path())).await;
    // The version answer comes with the start-up commands.
    tokio::time::sleep(Duration::from_millis(500)).await;
    board0(&address)
        .await
        .call::<_, _, ()>("ShowText", &("Nf3", 2u32))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    let xl = HostCommand::Clock(eboard_bridge::clock::segments("Nf3", false)).encode();
    assert_eq!(
        xl,
        [0x2b, 0x0b, 0x03, 0x01, 0x4f, 0x71, 0x54, 0, 0, 0, 0, 0x01, 0]
    );
    assert_eq!(sent_at(dir.path(), &xl).len(), 1);
}
