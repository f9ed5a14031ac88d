//! The daemon end to end: a private D-Bus broker (busd, in process), virtual boards
//! on real pseudo-terminals, the broadcast folder on disk, and the real binary killed
//! with SIGKILL.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{listen, pgn_games, pgn_moves, private_bus};
use eboard_bridge::board::Orientation;
use eboard_bridge::bus::{BOARD_INTERFACE, BUS_NAME, ROOT_PATH};
use eboard_bridge::daemon::{BusChoice, Config, Daemon, DaemonError};
use eboard_bridge::device::{Emulator, EmulatorConfig};
use eboard_bridge::log::SensorLog;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::{Hands, Style};
use futures_util::StreamExt;
use shakmaty::{Chess, Move, Position};

/// Quick hands: the game is played in a few seconds of log time.
fn quick() -> Style {
    Style {
        think_ms: (150, 300),
        step_ms: (60, 120),
        retouch: 0,
        ..Style::default()
    }
}

/// A sensor log of `moves` from `start` played by simulated hands.
fn game_log(start: &Chess, moves: &[Move], seed: u64) -> SensorLog {
    let mut hands = Hands::new(seed, quick(), Orientation::Normal);
    hands.board(start.board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    common::played_log(hands, start, moves, 1500)
}

fn sans(moves: &[Move]) -> Vec<String> {
    let mut pos = Chess::default();
    moves
        .iter()
        .map(|m| shakmaty::san::SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string())
        .collect()
}

/// Starts an emulator playing `log` and points `link` at it.
fn emulate(log: SensorLog, link: &Path, speed: f64) -> tokio::task::JoinHandle<()> {
    emulate_as(log, link, speed, "13579")
}

/// The same, for a board with this serial number.
fn emulate_as(log: SensorLog, link: &Path, speed: f64, serial: &str) -> tokio::task::JoinHandle<()> {
    let emulator = Emulator::open().unwrap();
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(emulator.path(), link).unwrap();
    let cfg = EmulatorConfig {
        speed,
        serial: serial.into(),
        ..EmulatorConfig::default()
    };
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

async fn wait_for(what: &str, secs: u64, mut check: impl FnMut() -> bool) {
    let until = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(
            tokio::time::Instant::now() < until,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
    .await
    .unwrap();
    let (id, path, snap) = daemon.boards()[0].clone();
    assert_eq!(id, "board0");
    wait_for("every move", 60, || snap.borrow().moves.len() == expected.len()).await;

    // The properties, read over the bus.
    let proxy = zbus::Proxy::new(&client, BUS_NAME, path.as_str(), BOARD_INTERFACE)
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

    daemon.shutdown().await;
    emulator.abort();
    // The broadcast folder: one file per board and the round's combined file.
    let round = dir.path().join("live/round-4");
    let one = std::fs::read_to_string(round.join("game-7.pgn")).unwrap();
    let all = std::fs::read_to_string(round.join("games.pgn")).unwrap();
    assert_eq!(pgn_moves(&one), vec![expected.clone()]);
    assert_eq!(pgn_moves(&all), vec![expected]);
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
        .await
        .unwrap();
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
    daemon.shutdown().await;
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
    daemon.shutdown().await;

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
    let daemon = Daemon::start(vec![link], cfg, BusChoice::None).await.unwrap();
    let snap = daemon.boards()[0].2.clone();
    wait_for("four moves", 30, || snap.borrow().moves.len() == 4).await;
    assert!(
        snap.borrow().pgn.contains("[Round \"2.9\"]"),
        "{}",
        snap.borrow().pgn
    );
    daemon.shutdown().await;
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
    .await
    .unwrap();
    let other = tempfile::tempdir().unwrap();
    let second = Daemon::start(
        vec![other.path().join("board0")],
        config(other.path()),
        BusChoice::Address(address),
    )
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
    first.shutdown().await;
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
    let start = || {
        std::process::Command::new(bin())
            .args(["run", "--bus", "none", "--config"])
            .arg(&cfg)
            .arg("--device")
            .arg(&link)
            .spawn()
            .unwrap()
    };
    let _first = emulate(game_log(&game.start, &game.moves[..16], 3), &link, 8.0);
    let mut daemon = start();
    wait_for("sixteen moves on disk", 30, || moves_in(&live) == 16).await;
    daemon.kill().unwrap(); // SIGKILL
    daemon.wait().unwrap();
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
    unsafe_sigterm(daemon.id());
    let status = daemon.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

fn unsafe_sigterm(pid: u32) {
    std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .unwrap();
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
    daemon.shutdown().await;
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
    let start = || {
        std::process::Command::new(bin())
            .args(["run", "--bus", "session", "--config"])
            .arg(&cfg)
            .arg("--device")
            .arg(&link)
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .spawn()
            .unwrap()
    };
    let client = zbus::connection::Builder::address(address.as_str())
        .unwrap()
        .build()
        .await
        .unwrap();
    let proxy = |c: zbus::Connection| async move {
        zbus::Proxy::new(&c, BUS_NAME, "/org/eboardbridge/board/board0", BOARD_INTERFACE)
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
        std::process::Command::new("kill")
            .arg(format!("-{how}"))
            .arg(daemon.id().to_string())
            .status()
            .unwrap();
        daemon.wait().unwrap();
        std::fs::remove_file(&live).unwrap();
        daemon = start();
        wait_for("the game on disk again", 30, || moves_in(&live) == 12).await;
        assert_eq!(result_of(&live), "1-0", "after SIG{how}");
        let p = proxy(client.clone()).await;
        let mut result = String::new();
        for _ in 0..100 {
            if let Ok(r) = p.get_property::<String>("Result").await {
                result = r;
                if result == "1-0" {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(result, "1-0", "Result over D-Bus after SIG{how}");
        let mut status = String::new();
        for _ in 0..100 {
            status = p.get_property("Status").await.unwrap_or_default();
            if status == "finished" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(status, "finished", "after SIG{how}");
    }
    unsafe_sigterm(daemon.id());
    daemon.wait().unwrap();
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
    daemon.shutdown().await;
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
        .await
        .unwrap();
    let snap = daemon.boards()[0].2.clone();
    wait_for("the recorded moves", 10, || snap.borrow().moves.len() == moves).await;
    (daemon, snap)
}
