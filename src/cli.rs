//! The command line (`shared/spec/interfaces.md`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::device::{Emulator, EmulatorConfig};
use crate::log::{LogError, Player, read_log};
use crate::output::{replay, sensors};

#[derive(Debug, Parser)]
#[command(
    name = "eboard-bridge",
    version,
    about = "Electronic chessboards at real events: DGT boards and clocks, the FIDE Laws, D-Bus and broadcast PGN"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Bus {
    System,
    Session,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For a person: moves, flags and irregularities as they happen, with times.
    Text,
    /// One JSON object per event.
    Jsonl,
    /// Standard PGN.
    Pgn,
    /// The moves, one a line.
    Uci,
    /// The decoded board-level stream (itself a sensor log).
    Sensors,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Bridge real boards (the daemon).
    Run {
        #[arg(long = "device", value_name = "PATH")]
        devices: Vec<PathBuf>,
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        #[arg(long, value_enum)]
        bus: Option<Bus>,
    },
    /// Run sensor logs through the decoder (and the rules core) and print the result.
    Replay {
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Start from this position instead of the board's start position.
        #[arg(long)]
        fen: Option<String>,
        #[arg(required = true, value_name = "LOG")]
        logs: Vec<PathBuf>,
    },
    /// Bridge one board and write every byte both ways to a sensor log.
    Record {
        #[arg(long, value_name = "PATH")]
        device: PathBuf,
        #[arg(long, value_name = "LOG")]
        out: PathBuf,
    },
    /// Run a virtual DGT board (with DGT 3000 clock) on a pseudo-terminal, playing a log.
    Emulate {
        #[arg(long, value_name = "LOG")]
        log: PathBuf,
        /// Play the log this many times faster.
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
        /// Make PATH a symlink to the pseudo-terminal.
        #[arg(long, value_name = "PATH")]
        link: Option<PathBuf>,
    },
    /// The main job on any machine: a bundled real game through the real serial path.
    Demo {
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
    },
}

/// Exit status for input that is malformed or a job that cannot run.
pub const EXIT_BAD_INPUT: u8 = 2;

fn not_yet(what: &str, issue: &str) -> ExitCode {
    eprintln!("eboard-bridge: {what} is not available yet: it arrives with {issue}");
    ExitCode::from(EXIT_BAD_INPUT)
}

/// Runs the command line; returns the process exit status.
pub fn main(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Run { .. } => not_yet("`run` (the daemon)", "the daemon work (issue 4)"),
        Command::Record { .. } => not_yet("`record`", "the daemon work (issue 4)"),
        Command::Demo { speed } => crate::demo::run(speed),
        Command::Replay { format, fen, logs } => replay(format, fen.as_deref(), &logs),
        Command::Emulate { log, speed, link } => emulate(&log, speed, link.as_deref()),
    }
}

fn report(e: &LogError) -> ExitCode {
    eprintln!("eboard-bridge: {e}");
    ExitCode::from(EXIT_BAD_INPUT)
}

fn replay(format: Format, fen: Option<&str>, logs: &[PathBuf]) -> ExitCode {
    let start = match fen.map(parse_start).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("eboard-bridge: --fen: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for path in logs {
        let file = path.display().to_string();
        let log = match read_log(path) {
            Ok(l) => l,
            Err(e) => return report(&e),
        };
        let text = if format == Format::Sensors {
            match Player::play_log(&log, &file) {
                Ok(steps) => steps.iter().map(|s| sensors::format_step(s) + "\n").collect(),
                Err(e) => return report(&e),
            }
        } else {
            let r = match replay::run(&log, &file, crate::rules::Config::default(), start.clone()) {
                Ok(r) => r,
                Err(e) => return report(&e),
            };
            let date = log
                .header
                .get("started")
                .and_then(|s| s.get(..10))
                .map_or_else(|| "????.??.??".to_string(), |d| d.replace('-', "."));
            match format {
                Format::Jsonl => replay::jsonl(&r.events),
                Format::Uci => replay::uci(r.core.games()),
                Format::Pgn => replay::pgn(r.core.games(), &date),
                _ => replay::text(&r.events),
            }
        };
        if logs.len() > 1 && format != Format::Jsonl && writeln!(out, "# log {file}").is_err() {
            return ExitCode::SUCCESS; // stdout closed (a pager quit): nothing more to say
        }
        if out.write_all(text.as_bytes()).is_err() {
            return ExitCode::SUCCESS;
        }
    }
    ExitCode::SUCCESS
}

/// A start position from a FEN (standard castling, or Chess960 when the FEN says so).
fn parse_start(fen: &str) -> Result<(shakmaty::Chess, shakmaty::CastlingMode), String> {
    let parsed: shakmaty::fen::Fen = fen.parse().map_err(|e| format!("`{fen}`: {e}"))?;
    match parsed.clone().into_position(shakmaty::CastlingMode::Standard) {
        Ok(p) => Ok((p, shakmaty::CastlingMode::Standard)),
        Err(_) => parsed
            .into_position(shakmaty::CastlingMode::Chess960)
            .map(|p| (p, shakmaty::CastlingMode::Chess960))
            .map_err(|e| format!("`{fen}` is not a legal position: {e}")),
    }
}

fn emulate(path: &Path, speed: f64, link: Option<&Path>) -> ExitCode {
    let file = path.display().to_string();
    let log = match read_log(path) {
        Ok(l) => l,
        Err(e) => return report(&e),
    };
    let mut cfg = EmulatorConfig {
        speed,
        ..EmulatorConfig::default()
    };
    if let Some(serial) = log.header.get("serial") {
        cfg.serial = serial.to_string();
    }
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("eboard-bridge: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(async {
        let emulator = match Emulator::open() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("eboard-bridge: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Some(link) = link {
            let _ = std::fs::remove_file(link);
            if let Err(e) = std::os::unix::fs::symlink(emulator.path(), link) {
                eprintln!(
                    "eboard-bridge: cannot link {} to {}: {e}",
                    link.display(),
                    emulator.path().display()
                );
                return ExitCode::FAILURE;
            }
        }
        println!("{}", emulator.path().display());
        let _ = std::io::stdout().flush();
        let result = tokio::select! {
            r = emulator.run(&log, &file, &cfg) => r,
            _ = tokio::signal::ctrl_c() => Ok(()),
        };
        if let Some(link) = link {
            let _ = std::fs::remove_file(link);
        }
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("eboard-bridge: {e}");
                ExitCode::from(EXIT_BAD_INPUT)
            }
        }
    })
}
