//! Throughput of the rules core on a long sensor log: `cargo bench --bench core`.
//!
//! The log is built by the simulated hands (`eboard_bridge::sim`): random legal
//! games with slides, retouches, captures in every order and clock presses, at a
//! fixed seed so that every run measures the same input. The board-level events
//! are decoded once (through the same decoder and player `replay` uses); the
//! figure is the rules core alone consuming them, then the whole `replay` path
//! in this process, then `eboard-bridge replay` as a whole process reading the log
//! from a file (written to the bench's temporary folder) and writing its output
//! to a file, in each output format.

use std::hint::black_box;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eboard_bridge::board::Orientation;
use eboard_bridge::log::{Header, LogWriter, Played, Player, SensorLog};
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::rules::{Config, Core};
use eboard_bridge::sim::{Hands, Seeded, Style};
use shakmaty::{Chess, Position};

const GAMES: usize = 200;
const MAX_PLIES: usize = 120;

fn long_log() -> (SensorLog, usize) {
    let mut pick = Seeded::new(2026);
    let mut hands = Hands::new(11, Style::default(), Orientation::Normal);
    let mut plies = 0;
    for _ in 0..GAMES {
        let mut pos = Chess::default();
        hands.board(pos.board());
        hands.set_clock(ClockTime::from_hms(1, 30, 0).expect("a valid time"));
        plies += hands.random_game(&mut pos, &mut pick, MAX_PLIES).len();
        hands.wait(5000);
    }
    let log = SensorLog {
        header: Header::default(),
        records: hands.records,
        lines: Vec::new(),
    };
    (log, plies)
}

/// Runs `eboard-bridge replay` on `log` `runs` times; the median wall time and
/// the output's size.
fn replay_process(log: &Path, format: &str, runs: usize) -> (Duration, u64) {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bench-core.{format}"));
    let mut times = Vec::new();
    for _ in 0..runs {
        let file = std::fs::File::create(&out).expect("the output file");
        let start = Instant::now();
        let status = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .args(["replay", "--format", format])
            .arg(log)
            .stdout(Stdio::from(file))
            .stderr(Stdio::null())
            .status()
            .expect("eboard-bridge runs");
        times.push(start.elapsed());
        assert!(status.success(), "replay --format {format} failed: {status}");
    }
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    (median(times), size)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let (log, plies) = long_log();
    let log_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-core.esl");
    {
        let file = std::io::BufWriter::new(std::fs::File::create(&log_path).expect("the log file"));
        let mut w = LogWriter::new(file, &log.header).expect("the log header");
        for r in &log.records {
            w.write(r).expect("a record");
        }
        w.flush().expect("the log written");
    }
    let steps = Player::play_log(&log, "bench").expect("the generated log plays");
    let events: Vec<_> = steps
        .iter()
        .filter_map(|s| match &s.what {
            Played::Board(ev) => Some((ev.clone(), s.time.micros())),
            _ => None,
        })
        .collect();
    let runs = 7;
    let mut core_times = Vec::new();
    let mut moves = 0;
    for _ in 0..runs {
        let start = Instant::now();
        let mut core = Core::new(Config::default());
        let mut out = 0;
        for (ev, t) in &events {
            core.input(black_box(ev), *t);
            out += core.take_events().len();
        }
        core.finish();
        black_box(out);
        core_times.push(start.elapsed());
        moves = core.games().map(|g| g.moves.len()).sum::<usize>();
    }
    let mut replay_times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let r = eboard_bridge::output::replay::run(&log, "bench", Config::default(), None).expect("plays");
        black_box(r.events.len());
        replay_times.push(start.elapsed());
    }
    let core = median(core_times);
    let replay = median(replay_times);
    let per_sec = |n: usize, d: Duration| n as f64 / d.as_secs_f64();
    println!(
        "long log: {} records, {} board events, {GAMES} games, {plies} plies played",
        log.records.len(),
        events.len()
    );
    println!("recorded moves: {moves}");
    println!(
        "rules core: {:.3} s median of {runs}, {:.0} events/s, {:.0} moves/s, {:.2} µs/event",
        core.as_secs_f64(),
        per_sec(events.len(), core),
        per_sec(moves, core),
        core.as_secs_f64() * 1e6 / events.len() as f64
    );
    println!(
        "replay (decoder + player + rules core): {:.3} s median of {runs}, {:.0} records/s",
        replay.as_secs_f64(),
        per_sec(log.records.len(), replay)
    );
    println!(
        "log file: {} ({} bytes)",
        log_path.display(),
        std::fs::metadata(&log_path).map_or(0, |m| m.len())
    );
    for format in ["text", "jsonl", "pgn"] {
        let (d, size) = replay_process(&log_path, format, runs);
        println!(
            "eboard-bridge replay --format {format} (whole process, log file in, {size} bytes out): {:.3} s median of {runs}, {:.0} records/s",
            d.as_secs_f64(),
            per_sec(log.records.len(), d)
        );
    }
    assert_eq!(moves, plies, "the bench log must replay to the moves played");
}
