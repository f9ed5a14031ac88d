//! `eboard-bridge demo`: a bundled real game played by an emulated board on a real
//! pseudo-terminal, bridged by the real daemon (`daemon::Daemon`: serial line, rules
//! core, recording, broadcast folder, D-Bus on the session bus when there is one),
//! and shown live in the terminal from the daemon's event tap and board snapshot.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use shakmaty::{Chess, Position, san::San};
use tokio::sync::broadcast::error::RecvError;

use crate::bus;
use crate::daemon::{BusChoice, Daemon, DaemonConfig, DaemonError, config};
use crate::device::{Emulator, EmulatorConfig};
use crate::log::{Header, RecordKind, SensorLog};
use crate::protocol::ClockTime;
use crate::rules::EventKind;
use crate::sim::{Hands, Style};

#[cfg(test)]
mod tests;
mod view;

pub use view::{View, diagram};

/// The name of the demo board's device link; its D-Bus id is `dgt_demo`.
pub const DEVICE_NAME: &str = "dgt-demo";

/// The Immortal Game, Anderssen - Kieseritzky, London 1851.
pub const GAME: &str = "e4 e5 f4 exf4 Bc4 Qh4+ Kf1 b5 Bxb5 Nf6 Nf3 Qh6 d3 Nh5 Nh4 Qg5 Nf5 c6 g4 Nf6 Rg1 cxb5 \
h4 Qg6 h5 Qg5 Qf3 Ng8 Bxf4 Qf6 Nc3 Bc5 Nd5 Qxb2 Bd6 Bxg1 e5 Qxa1+ Ke2 Na6 Nxg7+ Kd8 Qf6+ Nxf6 Be7#";

/// The demo's sensor log: the game as hands play it, with slides, a take-back and
/// an illegal move that is corrected.
pub fn demo_log() -> SensorLog {
    let style = Style {
        think_ms: (400, 1200),
        slide: 30,
        ..Style::default()
    };
    let mut hands = Hands::new(1851, style, crate::board::Orientation::Normal);
    let mut pos = Chess::default();
    hands.board(pos.board());
    let five = ClockTime::from_hms(0, 5, 0).unwrap_or_default();
    hands.push(RecordKind::Clock {
        left: five,
        right: five,
        running: crate::log::Running::Left,
    });
    for (ply, san) in GAME.split_whitespace().enumerate() {
        let Some(mv) = san.parse::<San>().ok().and_then(|s| s.to_move(&pos).ok()) else {
            break;
        };
        match ply {
            // 3. Nf3 is played and the clock pressed; the players take it back (the
            // knight goes home, Black presses to give White the move again), and
            // White plays the game's 3. Bc4.
            4 => {
                if let Some(alt) = "Nf3".parse::<San>().ok().and_then(|s| s.to_move(&pos).ok()) {
                    let knight = shakmaty::Color::White.knight();
                    hands.play(&pos, &alt);
                    hands.wait(2500);
                    hands.lift(alt.to(), knight);
                    hands.place(alt.from().unwrap_or(shakmaty::Square::G1), knight);
                    hands.wait(3000);
                    hands.press(shakmaty::Color::Black);
                }
            }
            // 14. White's queen goes from d1 to d4, over White's own pawn on d3 (an
            // illegal move); White sees it, puts her back on d1 and plays the game's
            // 14. Qf3 (the queen touched is the queen moved: no touch-move case).
            26 => {
                let queen = shakmaty::Color::White.queen();
                let board = pos.board();
                if board.piece_at(shakmaty::Square::D1) == Some(queen)
                    && board.piece_at(shakmaty::Square::D4).is_none()
                {
                    hands.wait(900);
                    hands.illegal_attempt(shakmaty::Square::D1, shakmaty::Square::D4, queen, 3000);
                }
            }
            _ => {}
        }
        hands.play(&pos, &mv);
        pos.play_unchecked(mv);
    }
    let mut header = Header::default();
    header.set(
        "source",
        "eboard-bridge demo: Anderssen - Kieseritzky, London 1851",
    );
    header.set("serial", "18510");
    SensorLog {
        header,
        records: hands.records,
        lines: Vec::new(),
    }
}

/// Runs the demo; returns the exit status.
/// How the demo runs (`eboard-bridge demo`'s options).
#[derive(Debug, Clone)]
pub struct Options {
    pub speed: f64,
    /// Where the HTTP server listens (none: off).
    pub http: Option<String>,
    /// Keep running after the game until Ctrl-C.
    pub stay: bool,
}

pub fn run(options: Options) -> ExitCode {
    let speed = options.speed;
    if !(speed.is_finite() && speed > 0.0) {
        eprintln!("eboard-bridge: --speed must be a positive number, not {speed}");
        return ExitCode::from(2);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("eboard-bridge: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(demo(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eboard-bridge: demo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The demo's folder: recordings, broadcast files and the device link. A fresh one
/// each run (a recording left from before would be resumed), kept afterwards.
fn work_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("eboard-bridge-demo-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The daemon's configuration for the demo. The board and its clock play `speed`
/// times faster than life, and so does the daemon's time for the board: the rules
/// core keeps its default thresholds, the same hands give the same decisions at any
/// speed, and every time it records or publishes (`%clk`, `%emt`, the recording's
/// times) is in the game's own scale.
pub fn demo_config(dir: &Path, device: &Path, speed: f64) -> DaemonConfig {
    let mut cfg = DaemonConfig {
        event: Some("eboard-bridge demo".into()),
        site: Some("London ENG".into()),
        round: Some(1),
        output: Some(dir.join("live")),
        state: Some(dir.join("state")),
        time_scale: Some(speed),
        ..DaemonConfig::default()
    };
    cfg.boards.push(config::Board {
        serial: None,
        device: Some(device.to_path_buf()),
        number: 1,
        white: Some("Anderssen, Adolf".into()),
        black: Some("Kieseritzky, Lionel".into()),
    });
    cfg
}

/// Starts the daemon on the session bus; without one (or with the name taken), on
/// no bus. Returns the daemon and a line that says which.
async fn start_daemon(device: &Path, cfg: &mut DaemonConfig) -> Result<(Daemon, String), DaemonError> {
    match start_on_bus(device, cfg).await {
        Err(DaemonError::Http(e)) => {
            // The live page is a bonus: the demo goes on without it.
            let line = format!("HTTP: no live page ({e}); try --http 127.0.0.1:PORT");
            cfg.http = None;
            if let Some(state) = &cfg.state {
                let _ = std::fs::remove_dir_all(state);
            }
            start_on_bus(device, cfg)
                .await
                .map(|(d, bus)| (d, format!("{bus}\n{line}")))
        }
        r => r,
    }
}

async fn start_on_bus(device: &Path, cfg: &DaemonConfig) -> Result<(Daemon, String), DaemonError> {
    let path = bus::board_path(&bus::board_id(DEVICE_NAME));
    match Daemon::start(vec![device.to_path_buf()], cfg.clone(), BusChoice::Session).await {
        Ok(d) => Ok((
            d,
            format!(
                "D-Bus: published on the session bus as {} at {path}\n       try: busctl --user introspect {} {path}",
                bus::BUS_NAME,
                bus::BUS_NAME
            ),
        )),
        Err(e @ (DaemonError::Bus { .. } | DaemonError::Name(_) | DaemonError::NameDenied { .. })) => {
            // A start that got as far as the boards left a recording: start afresh.
            if let Some(state) = &cfg.state {
                let _ = std::fs::remove_dir_all(state);
            }
            let d = Daemon::start(vec![device.to_path_buf()], cfg.clone(), BusChoice::None).await?;
            Ok((d, not_published(&e)))
        }
        Err(e) => Err(e),
    }
}

/// The demo's line when it publishes on no bus: why, in the demo's own terms (the
/// daemon's errors advise `run` options, which the demo does not take).
fn not_published(e: &DaemonError) -> String {
    let why = match e {
        // One line: which bus did not answer, and how to get one (zbus's
        // chained I/O error says nothing more to a newcomer).
        DaemonError::Bus { .. } => match std::env::var("DBUS_SESSION_BUS_ADDRESS") {
            Ok(a) if !a.is_empty() => format!(
                "no session bus to publish on (nothing answers at {})",
                crate::log::clip_to(&a, 80)
            ),
            _ => "no session bus to publish on (DBUS_SESSION_BUS_ADDRESS is not set; `dbus-run-session -- eboard-bridge demo` gives one)"
                .to_string(),
        },
        DaemonError::Name(zbus::Error::NameTaken) => {
            format!(
                "the name {} is taken on the session bus (another eboard-bridge or demo runs)",
                bus::BUS_NAME
            )
        }
        DaemonError::Name(source) => format!("the session bus refused the name {}: {source}", bus::BUS_NAME),
        DaemonError::NameDenied { source, .. } => {
            format!(
                "the session bus's policy does not let this user own the name {} ({source})",
                bus::BUS_NAME
            )
        }
        other => other.to_string(),
    };
    format!("D-Bus: not published, {why}; the game is shown here only")
}

async fn demo(options: Options) -> Result<(), Box<dyn std::error::Error>> {
    let speed = options.speed;
    let log = demo_log();
    let length =
        Duration::from_secs_f64(log.records.last().map_or(0, |r| r.time.micros()) as f64 / 1e6 / speed);
    let dir = work_dir()?;
    let emulator = Emulator::open()?;
    let device = dir.join(DEVICE_NAME);
    std::os::unix::fs::symlink(emulator.path(), &device)?;
    let mut cfg = demo_config(&dir, &device, speed);
    cfg.http = options.http.as_deref().map(crate::net::HttpConfig::on);
    let (daemon, mut bus_line) = start_daemon(&device, &mut cfg).await?;
    if let Some(a) = daemon.http_addresses().first() {
        bus_line.push_str(&format!(
            "\nlive page: http://{a}/   LiveChess API: ws://{a}/api/v1.0   PGN: http://{a}/round-1/games.pgn"
        ));
    }
    let mut events = daemon.events();
    let Some((_, _, mut snapshot)) = daemon.boards().into_iter().next() else {
        return Err("the daemon has no board".into());
    };
    let mut view = View {
        title: format!(
            "eboard-bridge demo: Anderssen - Kieseritzky, London 1851, on a virtual DGT board ({} -> {}){}",
            device.display(),
            emulator.path().display(),
            if speed == 1.0 {
                String::new()
            } else {
                format!(", {speed}x speed")
            }
        ),
        bus: bus_line,
        ..View::default()
    };
    let emulated = EmulatorConfig {
        speed,
        serial: "18510".into(),
        ..EmulatorConfig::default()
    };
    let served = tokio::spawn(async move { emulator.run(&log, "demo", &emulated).await });

    let tty = std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    let mut ok = if tty {
        // Clear the screen, hide the cursor: the frame is redrawn in place.
        write!(out, "\x1b[2J\x1b[H\x1b[?25l").is_ok()
    } else {
        writeln!(out, "{}\n{}", view.title, view.bus).is_ok()
    };
    // Ends a moment after the game does, or when the log is played out.
    let mut end = tokio::time::Instant::now() + length + Duration::from_secs(3);
    let mut ended = false;
    let mut dirty = true;
    let mut redraw = tokio::time::interval(Duration::from_millis(100));
    while ok {
        tokio::select! {
            e = events.recv() => match e {
                Ok(t) => {
                    if let EventKind::GameEnd { .. } = t.event.kind {
                        if !ended {
                            // The final position stays up (and on D-Bus) a moment.
                            ended = true;
                            end = tokio::time::Instant::now() + Duration::from_secs(2);
                        }
                    }
                    if let Some(line) = view.event(&t.event) {
                        if !tty {
                            ok = writeln!(out, "{line}").is_ok();
                        }
                    }
                    dirty = true;
                }
                Err(RecvError::Lagged(n)) => view.push(format!("({n} events not shown: the view fell behind)")),
                Err(RecvError::Closed) => break,
            },
            r = snapshot.changed() => {
                if r.is_err() {
                    break;
                }
                dirty = true;
            }
            _ = redraw.tick() => {
                if tty && dirty {
                    let size = terminal_size::terminal_size().map(|(w, h)| (usize::from(w.0), usize::from(h.0)));
                    let frame = view.frame(&snapshot.borrow(), size);
                    ok = write!(out, "\x1b[H{}\x1b[J", frame.replace('\n', "\x1b[K\n")).and_then(|()| out.flush()).is_ok();
                    dirty = false;
                }
            }
            _ = tokio::time::sleep_until(end), if !options.stay => break,
            _ = tokio::signal::ctrl_c() => break,
        }
        if served.is_finished() {
            break;
        }
    }
    // A completed move whose line still waits for its clock report.
    if let (Some(line), false) = (view.flush(), tty) {
        let _ = writeln!(out, "{line}");
    }
    if tty {
        let _ = write!(out, "\x1b[?25h");
    }
    let last = snapshot.borrow().clone();
    daemon.shutdown().await;
    served.abort();
    if let Ok(Ok(Err(e))) = tokio::time::timeout(Duration::from_millis(100), served)
        .await
        .map(|r| r.map_err(|_| ()))
    {
        return Err(format!("the virtual board stopped: {e}").into());
    }
    let board = last
        .fen
        .parse::<shakmaty::fen::Fen>()
        .ok()
        .map(|f| diagram(&f.into_setup().board))
        .unwrap_or_default();
    let round = crate::output::live::round_dir(&cfg.output_dir(), cfg.round());
    let recording = cfg
        .state_dir()
        .join("recordings")
        .join(format!("{}.esl", bus::board_id(DEVICE_NAME)));
    // Nothing more to say when stdout is gone (a closed pipe).
    let _ = writeln!(
        out,
        "\nfinal position ({}{}):\n{board}\n\n{}\nbroadcast folder: {}\nrecording (sensor log): {}\n  replay it: {} replay {}",
        if last.result.is_empty() { "*" } else { &last.result },
        if last.termination.is_empty() {
            String::new()
        } else {
            format!(", {}", last.termination)
        },
        last.pgn.trim_end(),
        round.display(),
        recording.display(),
        this_program(),
        shell_word(&recording.to_string_lossy())
    );
    Ok(())
}

/// This program as a shell here runs it: `eboard-bridge` when that name on the
/// `PATH` is this program, else its path (`./target/release/eboard-bridge` after
/// `cargo run` in the repository: issue 59, no newcomer had `eboard-bridge` on
/// the `PATH`).
fn this_program() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "eboard-bridge".into();
    };
    let cwd = std::env::current_dir().ok();
    program_name(&exe, std::env::var_os("PATH").as_deref(), cwd.as_deref())
}

/// [`this_program`] for the executable `exe`, the `PATH` `path` and the
/// working directory `cwd`.
pub(crate) fn program_name(exe: &Path, path: Option<&std::ffi::OsStr>, cwd: Option<&Path>) -> String {
    let same = |a: &Path| {
        std::fs::canonicalize(a)
            .ok()
            .zip(std::fs::canonicalize(exe).ok())
            .is_some_and(|(a, b)| a == b)
    };
    if let Some(name) = exe.file_name() {
        let on_path = path
            .map(std::env::split_paths)
            .and_then(|mut dirs| dirs.find(|d| d.join(name).is_file()))
            .is_some_and(|d| same(&d.join(name)));
        if on_path {
            return shell_word(&name.to_string_lossy());
        }
    }
    let cwd = cwd.filter(|c| c.parent().is_some());
    match cwd.and_then(|c| exe.strip_prefix(c).ok()) {
        Some(rel) => shell_word(&format!("./{}", rel.display())),
        None => shell_word(&exe.to_string_lossy()),
    }
}

/// `s` as one word of a shell command: as it is when only such characters as
/// paths are commonly made of are in it, else in single quotes.
pub(crate) fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,=@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
