//! `replay` over many short logs, as a whole process: `cargo bench --bench many`.
//!
//! An audit of a round, a season of a league or an anti-cheating review reads
//! hundreds of short recordings, not one long one. The simulated hands
//! (`eboard_bridge::sim`) play the games of `tests/data/games/` and seeded random
//! games into `LOGS` logs of about 200 board events each, written to the bench's
//! temporary folder; then, alternated in the same run:
//! - `eboard-bridge replay --format uci` with every log on one command line
//!   (`EB_MANY_BIN=PATH` adds another build of the binary, e.g. the previous
//!   commit's, so that two builds are compared in the same hour);
//! - the peer, a picochess-style FEN matcher in Python, on the same logs, when one
//!   is given (`EB_PEER=PATH`, default `../shared/peers/picochess_matcher.py`
//!   beside the checkout; it needs `python3` with the `chess` module).
//!
//! The figure is board events (`lift`, `place` and `board` records) per second of
//! CPU time (user + system of the process and its threads), the measure that does
//! not depend on how busy the other core is. `EB_MANY_LOGS=N` changes the number of
//! logs, `EB_MANY_RUNS=N` the number of alternated rounds (3).

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eboard_bridge::board::Orientation;
use eboard_bridge::log::{Header, LogWriter, SensorLog};
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::{Hands, Seeded, Style};
use shakmaty::{Chess, Position};

const LOGS: usize = 700;
/// Plies a log plays at most: about 200 board events with slides, captures and
/// retouches.
const PLIES: usize = 86;

/// The games of the repository's data, then random ones, one a log.
fn make_logs(dir: &Path, n: usize) -> Vec<PathBuf> {
    let mut known: Vec<common::PgnGame> = Vec::new();
    for file in [
        "games/immortal-games.pgn",
        "games/kasparov-deep-blue-1997.pgn",
        "games/nepomniachtchi-liren-game1.pgn",
        "games/anastasian-lewis.pgn",
        "games/molinari-bordais-1979.pgn",
        "games/stockfish-learning.pgn",
    ] {
        known.extend(
            common::pgn_games(file)
                .into_iter()
                .filter(|g| !g.moves.is_empty()),
        );
    }
    let mut pick = Seeded::new(36);
    let mut paths = Vec::with_capacity(n);
    for i in 0..n {
        let mut hands = Hands::new(i as u64 + 1, Style::default(), Orientation::Normal);
        hands.set_clock(ClockTime::from_hms(0, 5, 0).expect("a valid time"));
        match known.get(i) {
            Some(game) => {
                let mut pos = game.start.clone();
                hands.board(pos.board());
                for mv in game.moves.iter().take(PLIES) {
                    hands.play(&pos, mv);
                    pos.play_unchecked(*mv);
                }
            }
            None => {
                let mut pos = Chess::default();
                hands.board(pos.board());
                hands.random_game(&mut pos, &mut pick, PLIES);
            }
        }
        let log = SensorLog {
            header: Header::default(),
            records: hands.records,
            lines: Vec::new(),
        };
        let path = dir.join(format!("game-{i:04}.esl"));
        let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("a log file"));
        let mut w = LogWriter::new(file, &log.header).expect("the log header");
        for r in &log.records {
            w.write(r).expect("a record");
        }
        w.flush().expect("the log written");
        paths.push(path);
    }
    paths
}

/// Board events in the logs: `lift`, `place` and `board` records.
fn board_events(paths: &[PathBuf]) -> usize {
    paths
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .expect("a log")
                .lines()
                .filter(|l| matches!(l.split_whitespace().nth(1), Some("lift" | "place" | "board")))
                .count()
        })
        .sum()
}

/// CPU time (user + system) of the children waited for so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    assert_eq!(rc, 0, "getrusage");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Runs `cmd` with its output to `out`; (CPU time, wall time).
fn measure(mut cmd: Command, out: &Path) -> (Duration, Duration) {
    let file = std::fs::File::create(out).expect("the output file");
    let cpu = children_cpu();
    let start = Instant::now();
    let status = cmd
        .stdout(Stdio::from(file))
        .stderr(Stdio::inherit())
        .status()
        .expect("the command runs");
    let wall = start.elapsed();
    assert!(status.success(), "{cmd:?} failed: {status}");
    (children_cpu() - cpu, wall)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The peer, when it can run here: the script and why not otherwise.
fn peer() -> Result<PathBuf, String> {
    let script = std::env::var_os("EB_PEER").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/peers/picochess_matcher.py"),
        PathBuf::from,
    );
    if !script.exists() {
        return Err(format!("{} not found (EB_PEER=PATH names it)", script.display()));
    }
    let chess = Command::new("python3")
        .args(["-c", "import chess"])
        .stderr(Stdio::null())
        .status();
    match chess {
        Ok(s) if s.success() => Ok(script),
        _ => Err("python3 with the module chess is needed (pip install chess)".into()),
    }
}

fn main() {
    let env_n = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let n = env_n("EB_MANY_LOGS", LOGS);
    let runs = env_n("EB_MANY_RUNS", 3).max(1);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-many");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the bench folder");
    let paths = make_logs(&dir, n);
    let events = board_events(&paths);
    println!(
        "{n} logs, {events} board events ({:.0} a log)",
        events as f64 / n as f64
    );

    let mut bins = vec![(
        "this build".to_string(),
        PathBuf::from(env!("CARGO_BIN_EXE_eboard-bridge")),
    )];
    if let Some(other) = std::env::var_os("EB_MANY_BIN") {
        bins.push((
            format!("EB_MANY_BIN ({})", Path::new(&other).display()),
            PathBuf::from(other),
        ));
    }
    let peer = peer();
    if let Err(why) = &peer {
        println!("the peer is not measured: {why}");
    }
    let mut cpu: Vec<Vec<Duration>> = vec![Vec::new(); bins.len() + 1];
    let mut wall: Vec<Vec<Duration>> = vec![Vec::new(); bins.len() + 1];
    let mut outputs: Vec<PathBuf> = Vec::new();
    for _ in 0..runs {
        for (i, (_, bin)) in bins.iter().enumerate() {
            let out = dir.join(format!("out-{i}.uci"));
            let mut cmd = Command::new(bin);
            cmd.args(["replay", "--format", "uci"]).args(&paths);
            let (c, w) = measure(cmd, &out);
            cpu[i].push(c);
            wall[i].push(w);
            if outputs.len() <= i {
                outputs.push(out);
            }
        }
        if let Ok(script) = &peer {
            let out = dir.join("out-peer.uci");
            let mut cmd = Command::new("python3");
            cmd.arg(script).args(&paths);
            let (c, w) = measure(cmd, &out);
            cpu[bins.len()].push(c);
            wall[bins.len()].push(w);
        }
    }
    let rate = |d: Duration| events as f64 / d.as_secs_f64();
    let ours = median(cpu[0].clone());
    for (i, (name, _)) in bins.iter().enumerate() {
        let c = median(cpu[i].clone());
        let w = median(wall[i].clone());
        println!(
            "eboard-bridge replay --format uci, {name}: CPU {:.3} s, wall {:.3} s (medians of {runs}): {:.0} events/s of CPU, {:.0} of wall",
            c.as_secs_f64(),
            w.as_secs_f64(),
            rate(c),
            rate(w)
        );
    }
    if peer.is_ok() {
        let c = median(cpu[bins.len()].clone());
        let w = median(wall[bins.len()].clone());
        println!(
            "peer (picochess-style matcher, python3): CPU {:.3} s, wall {:.3} s (medians of {runs}): {:.0} events/s of CPU",
            c.as_secs_f64(),
            w.as_secs_f64(),
            rate(c)
        );
        println!(
            "ratio, CPU time: eboard-bridge is {:.0} times the peer",
            c.as_secs_f64() / ours.as_secs_f64()
        );
    }
    // Every log played to moves, in every build: the output names each log and
    // its games.
    for out in &outputs {
        let text = std::fs::read_to_string(out).expect("the output");
        let logs = text.lines().filter(|l| l.starts_with("# log ")).count();
        assert_eq!(logs, n, "{}: {logs} logs of {n} in the output", out.display());
        let moves = text.lines().filter(|l| !l.starts_with('#')).count();
        println!("{}: {moves} moves in {logs} logs", out.display());
    }
}
