//! The daemon end to end: a private D-Bus broker (busd, in process), virtual boards
//! on real pseudo-terminals, the broadcast folder on disk, and the real binary killed
//! with SIGKILL.

mod boards;
mod clock;
use crate::common;
mod introspection;
mod resume;
mod sinks;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::emulated::{emulate as emulate_as, emulate_with};
use common::process::{Running, run_command, run_config, tag_in, test_open as config};
use common::{
    Need, Within, bus_client, listen, need, pgn_games, pgn_moves, plies_in, private_bus, send_signal,
    wait_exit, wait_for,
};
use eboard_bridge::board::Orientation;
use eboard_bridge::bus::{BOARD_INTERFACE, BUS_NAME, ROOT_PATH};
use eboard_bridge::daemon::{BusChoice, Daemon, DaemonConfig, DaemonError};
use eboard_bridge::device::EmulatorConfig;
use eboard_bridge::log::SensorLog;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::rules::EventKind;
use eboard_bridge::sim::Hands;
use futures_util::StreamExt;
use shakmaty::{Chess, Move, Position};

/// A sensor log of `moves` from `start` played by simulated hands.
fn game_log(start: &Chess, moves: &[Move], seed: u64) -> SensorLog {
    common::emulated::hands_log(start, moves, seed, 1500)
}

fn sans(moves: &[Move]) -> Vec<String> {
    common::sans(&Chess::default(), moves)
}

/// The Immortal Game (the first of `games/immortal-games.pgn`) as hands play it,
/// at 8x on an emulated board at `dir/board0`, and a private bus in `dir` with a
/// client listening to `MoveMade` from before a daemon starts: the game, its
/// SAN, the emulator's task, the board's link, the bus's address, the client
/// and its signals.
async fn immortal_heard(
    dir: &Path,
) -> (
    common::PgnGame,
    Vec<String>,
    tokio::task::JoinHandle<()>,
    PathBuf,
    String,
    (zbus::Connection, zbus::MessageStream),
) {
    let game = pgn_games("games/immortal-games.pgn").swap_remove(0);
    let link = dir.join("board0");
    let emulator = emulate(game_log(&game.start, &game.moves, 42), &link, 8.0);
    let expected = sans(&game.moves);
    let address = private_bus(dir).await;
    let heard = listen(&address, BOARD_INTERFACE, Some("MoveMade")).await;
    (game, expected, emulator, link, address, heard)
}

/// The next message of `signals`, which must come within `secs` (`what` says
/// which).
async fn next_signal(signals: &mut zbus::MessageStream, secs: u64, what: &str) -> zbus::Message {
    signals
        .next()
        .within(secs, what)
        .await
        .unwrap_or_else(|| panic!("the signals ended before {what}"))
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Starts an emulator playing `log` and points `link` at it.
fn emulate(log: SensorLog, link: &Path, speed: f64) -> tokio::task::JoinHandle<()> {
    emulate_as(log, link, speed, "13579")
}

/// A real game from the standard start with at least 30 plies.
fn long_game() -> common::PgnGame {
    common::game_of_at_least("games/immortal-games.pgn", 30)
}

/// A daemon resuming board0 from a recording with `text`, the board not plugged
/// in (the game comes from the recording alone), once `moves` moves are back.
async fn resume_from(
    dir: &Path,
    text: &str,
    moves: usize,
) -> (Daemon, tokio::sync::watch::Receiver<eboard_bridge::api::Snapshot>) {
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

/// The real binary on the bus at `address` (`--bus session`), or on none.
fn start_binary(cfg: &Path, link: &Path, address: Option<&str>) -> Running {
    Running::spawn(&mut run_command(cfg, &[link.to_path_buf()], address))
}

/// Sends the daemon SIG`how` (`KILL`, `TERM`, `HUP`) and, but for `HUP`, waits
/// (at most 30 s) for it to end.
async fn signal(Running { child, .. }: &mut Running, how: &str) {
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
    common::uncached_proxy(&client, "/org/eboardbridge/board/board0", BOARD_INTERFACE).await
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
    cfg: DaemonConfig,
) -> (
    Daemon,
    tokio::sync::watch::Receiver<eboard_bridge::api::Snapshot>,
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
    times_sent(&recording, bytes)
}

fn times_sent(recording: &SensorLog, bytes: &[u8]) -> Vec<f64> {
    recording
        .records
        .iter()
        .filter(|r| matches!(&r.kind, eboard_bridge::log::RecordKind::Tx(b) if b == bytes))
        .map(|r| r.time.micros() as f64 / 1e6)
        .collect()
}

/// How many times `bytes` went to board0 so far, read from its recording while the
/// daemon runs (0 while the recording cannot be read whole): for waiting on it.
fn sent_so_far(dir: &Path, bytes: &[u8]) -> usize {
    eboard_bridge::log::read_log(&dir.join("state/recordings/board0.esl"))
        .map_or(0, |recording| times_sent(&recording, bytes).len())
}

/// The steps of board0's recording so far (none while it cannot be read whole).
fn recorded_steps(dir: &Path) -> Vec<eboard_bridge::log::Step> {
    eboard_bridge::log::read_log(&dir.join("state/recordings/board0.esl"))
        .ok()
        .and_then(|recording| eboard_bridge::log::Player::play_log(&recording, "board0.esl").ok())
        .unwrap_or_default()
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

/// A configuration for round `round` whose board 7 (board0) has these players.
fn round_config(dir: &Path, round: u32, white: &str, black: &str) -> PathBuf {
    let text = format!(
        "event = \"Open\"\nround = {round}\noutput = \"{}\"\nstate = \"{}\"\n[[board]]\ndevice = \"{}\"\nnumber = 7\nwhite = \"{white}\"\nblack = \"{black}\"\n",
        dir.join("live").display(),
        dir.join("state").display(),
        dir.join("board0").display()
    );
    common::write_file(dir, "config.toml", &text)
}
