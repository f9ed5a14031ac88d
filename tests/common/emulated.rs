//! Emulated boards for the tests: a game as simulated hands play it, and an
//! emulator playing a log on a pseudo-terminal behind a link.

use std::path::Path;

use eboard_bridge::board::Orientation;
use eboard_bridge::device::{Emulator, EmulatorConfig};
use eboard_bridge::log::SensorLog;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::Hands;
use shakmaty::{Chess, Move, Position};

/// A sensor log of `moves` from `start` played by simulated hands (`seed`), the
/// clock at 1:30:00 on both sides, `rest_ms` of rest after the last move.
pub fn hands_log(start: &Chess, moves: &[Move], seed: u64, rest_ms: u64) -> SensorLog {
    let mut hands = Hands::new(seed, super::quick(), Orientation::Normal);
    hands.board(start.board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    super::played_log(hands, start, moves, rest_ms)
}

/// An emulated board (serial number `serial`) playing `log` at `speed`, `link`
/// pointing at it.
pub fn emulate(log: SensorLog, link: &Path, speed: f64, serial: &str) -> tokio::task::JoinHandle<()> {
    let cfg = EmulatorConfig {
        speed,
        serial: serial.into(),
        ..EmulatorConfig::default()
    };
    emulate_with(log, link, cfg)
}

/// The same, the emulator set up with `cfg`; a link already there is replaced.
pub fn emulate_with(log: SensorLog, link: &Path, cfg: EmulatorConfig) -> tokio::task::JoinHandle<()> {
    let emulator = Emulator::open().unwrap();
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(emulator.path(), link).unwrap();
    tokio::spawn(async move {
        let _ = emulator.run(&log, "generated", &cfg).await;
    })
}
