//! The command line (`docs/INTERFACES.md`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::device::{Emulator, EmulatorConfig};
use crate::log::{LogError, Player, read_log};
use crate::output::{replay, sensors};
use crate::rules::Pinned;

#[derive(Debug, Parser)]
#[command(
    name = "eboard-bridge",
    version,
    about = "Electronic chessboards at real events: DGT boards and clocks, the FIDE Laws, D-Bus and broadcast PGN"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: CliCommand,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Bus {
    /// The system bus (as the systemd unit runs it).
    System,
    /// The session bus of the user running it.
    Session,
    /// No D-Bus: the broadcast folder and the recordings only.
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
pub enum CliCommand {
    /// Bridge real boards (the daemon).
    Run {
        /// A board's serial device (repeatable); with none here or in the
        /// configuration, every board the udev rules put in /dev/eboard/.
        #[arg(long = "device", value_name = "PATH")]
        devices: Vec<PathBuf>,
        /// The configuration file (default /etc/eboard-bridge/config.toml, when it
        /// exists). SIGHUP reads it again.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Where to publish on D-Bus (default: the system bus under systemd, else the
        /// session bus); `none` bridges without D-Bus.
        #[arg(long, value_enum)]
        bus: Option<Bus>,
    },
    /// Run sensor logs through the decoder (and the rules core) and print the result.
    Replay {
        /// What to print.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Start from this position instead of the board's start position (a log's
        /// `# fen:` header field does the same when this is not given).
        #[arg(long)]
        fen: Option<String>,
        #[command(flatten)]
        rules: RulesArgs,
        /// Sensor logs, each replayed on its own.
        #[arg(required = true, value_name = "LOG")]
        logs: Vec<PathBuf>,
    },
    /// Bridge one board and write every byte both ways to a sensor log.
    Record {
        /// The board's serial device.
        #[arg(long, value_name = "PATH")]
        device: PathBuf,
        /// The sensor log to write (created; an existing file is replaced).
        #[arg(long, value_name = "LOG")]
        out: PathBuf,
    },
    /// Run a virtual DGT board (with DGT 3000 clock) on a pseudo-terminal, playing a log.
    Emulate {
        /// The sensor log to play.
        #[arg(long, value_name = "LOG")]
        log: PathBuf,
        /// Play the log this many times faster.
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
        /// Make PATH a symlink to the pseudo-terminal.
        #[arg(long, value_name = "PATH")]
        link: Option<PathBuf>,
        /// Answer as a Bluetooth board with this charge left (percent); without
        /// it the board is wired and does not report a battery.
        #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(0..=100))]
        battery: Option<u8>,
    },
    /// The arbiter's command: every decision on a running daemon (boards by
    /// number), the events that need the arbiter, a round's pairings.
    Ctl(crate::ctl::CtlArgs),
    /// The main job on any machine: a bundled real game through the real serial path.
    Demo {
        /// Play the game this many times faster (the daemon's time for the board
        /// too: the same decisions, and the PGN's times in the game's scale).
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
        /// Serve the live page, the API and the LiveChess WebSocket here (`none`:
        /// not at all); a port already taken only means no live page.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:1982")]
        http: String,
        /// After the game, keep the board and the live page up until Ctrl-C.
        #[arg(long)]
        stay: bool,
    },
}

/// A threshold in ms, at most an hour.
fn threshold(s: &str) -> Result<u64, String> {
    let ms: u64 = s.parse().map_err(|e| format!("`{s}`: {e}"))?;
    let max = crate::rules::MAX_THRESHOLD_MS;
    if ms > max {
        return Err(format!("{ms} ms is more than an hour (at most {max})"));
    }
    Ok(ms)
}

/// The rules core's thresholds and profile. A log is judged by the settings it
/// states (a daemon's recording states those it was judged by live; else the
/// defaults, FIDE 2023 and `rules.md`); each option given stands instead for
/// the whole log.
#[derive(Debug, Clone, clap::Args)]
pub struct RulesArgs {
    /// A placement that stays this long is a release (ms; default 300).
    #[arg(long, value_name = "MS", value_parser = threshold)]
    pub release_ms: Option<u64>,
    /// A lift whose piece is back within this time is sensor noise (ms; default 150).
    #[arg(long, value_name = "MS", value_parser = threshold)]
    pub flicker_ms: Option<u64>,
    /// A board that stays this long in an unexplained state is irregular (ms;
    /// default 2000).
    #[arg(long, value_name = "MS", value_parser = threshold)]
    pub irregular_ms: Option<u64>,
    /// Which FIDE penalties apply (default standard).
    #[arg(long, value_parser = ["standard", "rapid", "blitz"])]
    pub profile: Option<String>,
    /// What a flag fall does: `report` it (the arbiter decides; the default) or
    /// `end` the game.
    #[arg(long, value_parser = ["report", "end"])]
    pub flag: Option<String>,
    /// Add a completed violation's time penalty to the opponent's clock (as the
    /// daemon does with `[rules] apply_penalties = true`), or not (`=false`).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub apply_penalties: Option<bool>,
}

impl RulesArgs {
    /// The settings given, standing over those the log states.
    pub fn pinned(&self) -> Pinned {
        Pinned {
            release_ms: self.release_ms,
            flicker_ms: self.flicker_ms,
            irregular_ms: self.irregular_ms,
            // clap has checked the values against the names.
            profile: self.profile.as_deref().and_then(|p| p.parse().ok()),
            flag: self.flag.as_deref().and_then(|f| f.parse().ok()),
            apply_penalties: self.apply_penalties,
        }
    }
}

/// Exit status for input that is malformed or a job that cannot run.
pub const EXIT_BAD_INPUT: u8 = 2;

/// Runs the command line; returns the process exit status.
pub fn main(cli: Cli) -> ExitCode {
    match cli.command {
        CliCommand::Run { devices, config, bus } => run(&devices, config.as_deref(), bus),
        CliCommand::Record { device, out } => record(&device, &out),
        CliCommand::Demo { speed, http, stay } => crate::demo::run(crate::demo::Options {
            speed,
            http: (http != "none").then_some(http),
            stay,
        }),
        CliCommand::Replay {
            format,
            fen,
            rules,
            logs,
        } => replay(format, fen.as_deref(), rules.pinned(), &logs),
        CliCommand::Emulate {
            log,
            speed,
            link,
            battery,
        } => emulate(&log, speed, link.as_deref(), battery),
        CliCommand::Ctl(args) => crate::ctl::main(args),
    }
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            eprintln!("eboard-bridge: cannot start the runtime: {e}");
            None
        }
    }
}

fn run(devices: &[PathBuf], config_file: Option<&Path>, bus: Option<Bus>) -> ExitCode {
    use crate::daemon::{self, BusChoice};
    let config = match daemon::DaemonConfig::load(config_file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("eboard-bridge: configuration: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let bus = match bus {
        Some(Bus::System) => BusChoice::System,
        Some(Bus::Session) => BusChoice::Session,
        Some(Bus::None) => BusChoice::None,
        None => BusChoice::default_for_environment(),
    };
    let devices = daemon::devices(devices, &config);
    let Some(rt) = runtime() else {
        return ExitCode::FAILURE;
    };
    match rt.block_on(daemon::run(
        devices,
        config,
        config_file.map(Path::to_path_buf),
        bus,
    )) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eboard-bridge: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn record(device: &Path, out: &Path) -> ExitCode {
    let Some(rt) = runtime() else {
        return ExitCode::FAILURE;
    };
    match rt.block_on(crate::daemon::record(device, out)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eboard-bridge: {e}");
            ExitCode::FAILURE
        }
    }
}

fn report(e: &LogError) -> ExitCode {
    eprintln!("eboard-bridge: {e}");
    ExitCode::from(EXIT_BAD_INPUT)
}

fn replay(format: Format, fen: Option<&str>, pinned: Pinned, logs: &[PathBuf]) -> ExitCode {
    let given = match fen.map(replay::parse_start).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("eboard-bridge: --fen: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    // A one-shot run keeps what it frees for reuse: returning it to the system
    // at once (the daemon's setting) cost a `madvise` per free.
    crate::memory::keep_freed_memory();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if logs.len() > 1 && format != Format::Sensors {
        return replay_many(format, given.as_ref(), pinned, logs, &mut out);
    }
    for path in logs {
        let file = path.display().to_string();
        let print = match format {
            Format::Sensors => None,
            Format::Jsonl => Some(replay::Print::Jsonl),
            Format::Uci => Some(replay::Print::Uci),
            Format::Pgn => Some(replay::Print::Pgn),
            Format::Text => Some(replay::Print::Text),
        };
        let text = match print {
            None => {
                let log = match read_log(path) {
                    Ok(l) => l,
                    Err(e) => return report(&e),
                };
                match Player::play_log(&log, &file) {
                    Ok(steps) => vec![
                        steps
                            .iter()
                            .map(|s| sensors::format_step(s) + "\n")
                            .collect::<String>()
                            .into_bytes(),
                    ],
                    Err(e) => return report(&e),
                }
            }
            Some(print) => match replay::replay_file(path, &file, pinned, given.as_ref(), print) {
                Ok(text) => text,
                Err(e) => {
                    eprintln!("eboard-bridge: {e}");
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            },
        };
        if logs.len() > 1 && format != Format::Jsonl && writeln!(out, "# log {file}").is_err() {
            return ExitCode::SUCCESS; // stdout closed (a pager quit): nothing more to say
        }
        if text.iter().any(|chunk| out.write_all(chunk).is_err()) {
            return ExitCode::SUCCESS;
        }
    }
    ExitCode::SUCCESS
}

/// `replay` of several logs (not `sensors`): one after the other, the outputs
/// written in the order of the logs, through one buffer.
fn replay_many(
    format: Format,
    given: Option<&(shakmaty::Chess, shakmaty::CastlingMode)>,
    pinned: Pinned,
    logs: &[PathBuf],
    out: &mut impl Write,
) -> ExitCode {
    let print = match format {
        Format::Jsonl => replay::Print::Jsonl,
        Format::Uci => replay::Print::Uci,
        Format::Pgn => replay::Print::Pgn,
        Format::Text | Format::Sensors => replay::Print::Text,
    };
    let paths: Vec<(PathBuf, String)> = logs
        .iter()
        .map(|p| (p.clone(), p.display().to_string()))
        .collect();
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, out);
    let mut closed = false;
    let done = replay::replay_many(&paths, pinned, given, print, |i, text| {
        let ok = (format == Format::Jsonl || writeln!(out, "# log {}", paths[i].1).is_ok())
            && out.write_all(text).is_ok();
        closed = !ok;
        ok
    });
    // A closed stdout (a pager quit): nothing more to say.
    if out.flush().is_err() || closed {
        return ExitCode::SUCCESS;
    }
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err((_, e)) => {
            eprintln!("eboard-bridge: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn emulate(path: &Path, speed: f64, link: Option<&Path>, battery: Option<u8>) -> ExitCode {
    let file = path.display().to_string();
    let log = match read_log(path) {
        Ok(l) => l,
        Err(e) => return report(&e),
    };
    let mut cfg = EmulatorConfig {
        speed,
        battery,
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
        // SIGTERM (a service manager, `kill`) ends it as SIGINT does, the link
        // removed; both are caught before the link is made (a handler made now,
        // not `tokio::signal::ctrl_c()`, whose handler comes on its first poll:
        // a SIGINT just after the link was made killed the process with the link
        // left, seen on a loaded machine).
        use tokio::signal::unix::{SignalKind, signal};
        let (mut term, mut interrupt) =
            match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
                (Ok(t), Ok(i)) => (t, i),
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("eboard-bridge: cannot handle SIGTERM and SIGINT: {e}");
                    return ExitCode::FAILURE;
                }
            };
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
            _ = interrupt.recv() => Ok(()),
            _ = term.recv() => Ok(()),
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

/// clap_complete (4.6) names a subcommand's `case` label in a bash completion
/// from the binary's name with its `-` made `__subcmd__`
/// (`eboard__subcmd__bridge__subcmd__ctl`), while the words typed set `cmd`
/// from it with `-` made `__` (`eboard__bridge__subcmd__ctl`): no label matches,
/// and nothing after the first word completes. The labels are mended to the
/// name `cmd` gets. The package's generator (`examples/package-docs.rs`) calls
/// it; `tests/completions.rs` runs the mended script as bash does.
pub fn mend_bash_completion(text: &str, bin: &str) -> String {
    let wrong = bin.replace('-', "__subcmd__");
    let right = bin.replace('-', "__");
    if wrong == right {
        return text.to_string();
    }
    let label = format!("{wrong}__subcmd__");
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        // Only the `case "${cmd}"` labels: `        NAME)`.
        let trimmed = line.trim_start();
        if trimmed.starts_with(&label) && trimmed.ends_with(')') {
            out.push_str(&line.replacen(&wrong, &right, 1));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}
