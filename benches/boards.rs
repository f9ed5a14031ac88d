//! Many boards through one daemon: `cargo bench --bench boards`.
//!
//! `EB_BOARDS` emulated boards (default 256), each on a real pty with a DGT 3000
//! clock, play one random legal game each (fixed seeds, `EB_BOARDS_PLIES` plies,
//! default 40) at real speed, with the clock pressed after every move and no
//! retouch (clean games). One `eboard-bridge run --bus none` process bridges them
//! all (`EB_BOARDS_BIN=PATH`: that build of the binary instead). With
//! `EB_BOARDS_BUILD=1`, a release build of this crate runs beside it
//! (`cargo build --release --jobs 2` into a folder of its own) to load the machine.
//!
//! Printed: the daemon's peak resident memory (VmHWM), its CPU time over the play
//! as a share of one core, every game checked against the moves played (from the
//! broadcast folder's files), and the touch-move flags the daemon raised (none is
//! right: no game touches a piece it does not move).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eboard_bridge::board::Orientation;
use eboard_bridge::device::{Emulator, EmulatorConfig};
use eboard_bridge::log::{Header, SensorLog};
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::{Hands, Seeded, Style};
use shakmaty::san::SanPlus;
use shakmaty::{Chess, Position};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One board's game: the log and its moves in SAN.
fn game(seed: u64, plies: usize) -> (SensorLog, Vec<String>) {
    let style = Style {
        retouch: 0,
        ..Style::default()
    };
    let mut hands = Hands::new(seed, style, Orientation::Normal);
    let mut pick = Seeded::new(seed ^ 0x5eed);
    let mut pos = Chess::default();
    hands.board(pos.board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).expect("a time"));
    // A random wait first, so that the boards do not move in step.
    hands.wait(pick.range(0, 3000));
    let mut at = pos.clone();
    let sans = hands
        .random_game(&mut pos, &mut pick, plies)
        .into_iter()
        .map(|mv| {
            let san = SanPlus::from_move(at.clone(), mv).to_string();
            at.play_unchecked(mv);
            san
        })
        .collect();
    hands.wait(3000);
    let log = SensorLog {
        header: Header::default(),
        records: hands.records,
        lines: Vec::new(),
    };
    (log, sans)
}

/// The SAN moves of every game in the PGN files under `dir`.
fn games_on_disk(dir: &Path) -> Vec<Vec<String>> {
    let mut games = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return games;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.starts_with("game-") || !name.ends_with(".pgn") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let mut moves = Vec::new();
        let mut depth = 0usize;
        let mut body = String::new();
        for line in text.lines().filter(|l| !l.starts_with('[')) {
            for c in line.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth = depth.saturating_sub(1),
                    _ if depth == 0 => body.push(c),
                    _ => {}
                }
            }
            body.push(' ');
        }
        for t in body.split_whitespace() {
            if matches!(t, "1-0" | "0-1" | "1/2-1/2" | "*") {
                continue;
            }
            let t = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
            if !t.is_empty() {
                moves.push(t.to_string());
            }
        }
        games.push(moves);
    }
    games
}

/// (user + system CPU ticks, peak RSS in kB) of a process.
fn usage(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis: utime is the 12th, stime the 13th.
    let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (ticks, hwm)
}

fn main() {
    let boards = env("EB_BOARDS", 256);
    let plies = env("EB_BOARDS_PLIES", 40);
    let build = std::env::var("EB_BOARDS_BUILD").is_ok_and(|v| v == "1");
    let dir = tempfile::tempdir().expect("a folder");
    let devices = dir.path().join("devices");
    std::fs::create_dir_all(&devices).expect("the devices folder");
    let played: Vec<(SensorLog, Vec<String>)> = (0..boards).map(|i| game(1000 + i as u64, plies)).collect();
    let longest = played
        .iter()
        .filter_map(|(l, _)| l.records.last().map(|r| r.time.seconds()))
        .fold(0.0, f64::max);
    eprintln!("{boards} boards, {plies} plies each, the longest game {longest:.0} s at real speed");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let links: Vec<PathBuf> = (0..boards)
        .map(|i| devices.join(format!("board-{i:03}")))
        .collect();
    let _guard = rt.enter();
    let mut emulators = Vec::new();
    for (i, (log, _)) in played.iter().enumerate() {
        let emulator = Emulator::open().expect("a pty");
        std::os::unix::fs::symlink(emulator.path(), &links[i]).expect("a link");
        let log = log.clone();
        emulators.push(rt.spawn(async move {
            let _ = emulator.run(&log, "bench", &EmulatorConfig::default()).await;
        }));
    }
    let state = dir.path().join("state");
    // `EB_BOARDS_BIN=PATH`: another build of the binary (to compare two builds
    // run alternately in the same hour).
    let bin = std::env::var_os("EB_BOARDS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_eboard-bridge")));
    let mut cmd = Command::new(bin);
    cmd.args(["run", "--bus", "none"]);
    for l in &links {
        cmd.arg("--device").arg(l);
    }
    let log_file = std::fs::File::create(dir.path().join("daemon.txt")).expect("the daemon's log");
    let mut daemon = cmd
        .env("STATE_DIRECTORY", &state)
        .stdout(Stdio::null())
        .stderr(Stdio::from(log_file))
        .spawn()
        .expect("the daemon");
    let mut load = build.then(|| {
        Command::new("cargo")
            .args(["build", "--release", "--jobs", "2", "--target-dir"])
            .arg(dir.path().join("build"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cargo build")
    });
    let start = Instant::now();
    let (ticks0, _) = usage(daemon.id());
    // The build's end, if it ends before the games do (its CPU time, `ps`-style).
    let mut build_ended = None;
    while start.elapsed().as_secs_f64() < longest + 5.0 {
        std::thread::sleep(Duration::from_millis(500));
        if build_ended.is_none() {
            if let Some(Ok(Some(status))) = load.as_mut().map(|l| l.try_wait()) {
                build_ended = Some((start.elapsed().as_secs_f64(), status));
            }
        }
    }
    let (ticks1, hwm) = usage(daemon.id());
    let cpu_secs = (ticks1 - ticks0) as f64 / 100.0;
    let wall = start.elapsed().as_secs_f64();
    if let Some(l) = &mut load {
        let _ = l.kill();
        let _ = l.wait();
    }
    // SIGTERM: the daemon writes what it holds and ends.
    let _ = Command::new("kill").arg(daemon.id().to_string()).status();
    let _ = daemon.wait();
    for e in emulators {
        e.abort();
    }
    let round = state.join("live").join("round-1");
    let mut on_disk = games_on_disk(&round);
    let mut exact = 0;
    let mut missed = Vec::new();
    for (i, (_, sans)) in played.iter().enumerate() {
        if let Some(k) = on_disk.iter().position(|g| g == sans) {
            on_disk.remove(k);
            exact += 1;
        } else {
            missed.push(i);
        }
    }
    for i in &missed {
        let sans = &played[*i].1;
        // The game on disk that shares the longest beginning with it.
        let best = on_disk
            .iter()
            .max_by_key(|g| g.iter().zip(sans).take_while(|(a, b)| a == b).count());
        eprintln!("board {i}: played {}", sans.join(" "));
        eprintln!(
            "board {i}: on disk {}",
            best.map(|g| g.join(" ")).unwrap_or_default()
        );
    }
    let said = std::fs::read_to_string(dir.path().join("daemon.txt")).unwrap_or_default();
    let flags = said.matches("\"type\":\"touch_move\"").count();
    let load_name = match (build, build_ended) {
        (false, _) => "nothing else running".to_string(),
        (true, None) => "a release build beside it all along".to_string(),
        (true, Some((at, status))) => format!("a release build beside it for the first {at:.0} s ({status})"),
    };
    println!(
        "{boards} boards, {plies} plies each, {load_name}: {exact}/{boards} games exact, {flags} touch-move flags, daemon peak RSS {:.1} MB, CPU {:.1}% of one core over {wall:.0} s",
        hwm as f64 / 1024.0,
        100.0 * cpu_secs / wall
    );
    assert_eq!(
        exact,
        boards,
        "every game exact; the daemon said:\n{}",
        said.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    );
}
