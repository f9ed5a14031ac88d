//! `eboard-bridge demo`: a bundled real game played by an emulated board on a real
//! pseudo-terminal, bridged by the real daemon (`daemon::Daemon`: serial line, rules
//! core, recording, broadcast folder, D-Bus on the session bus when there is one),
//! and shown live in the terminal from the daemon's event tap and board snapshot.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use shakmaty::{Chess, Position, san::San};
use tokio::sync::broadcast::error::RecvError;

use crate::bus::{self, Snapshot};
use crate::daemon::{BusChoice, Config, Daemon, DaemonError, config};
use crate::device::{Emulator, EmulatorConfig};
use crate::log::{Header, RecordKind, SensorLog};
use crate::output::replay::{self, clk};
use crate::protocol::ClockTime;
use crate::rules::{Event, EventKind};
use crate::sim::{Hands, Style};

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
pub fn demo_config(dir: &Path, device: &Path, speed: f64) -> Config {
    let mut cfg = Config {
        event: Some("eboard-bridge demo".into()),
        site: Some("London ENG".into()),
        round: Some(1),
        output: Some(dir.join("live")),
        state: Some(dir.join("state")),
        time_scale: Some(speed),
        ..Config::default()
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
async fn start_daemon(device: &Path, cfg: &mut Config) -> Result<(Daemon, String), DaemonError> {
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

async fn start_on_bus(device: &Path, cfg: &Config) -> Result<(Daemon, String), DaemonError> {
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
        DaemonError::Bus { bus, source } => format!("no session bus to publish on ({bus}: {source})"),
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
        "\nfinal position ({}{}):\n{board}\n\n{}\nbroadcast folder: {}\nrecording (sensor log): {}\n  replay it: eboard-bridge replay {}",
        if last.result.is_empty() { "*" } else { &last.result },
        if last.termination.is_empty() {
            String::new()
        } else {
            format!(", {}", last.termination)
        },
        last.pgn.trim_end(),
        round.display(),
        recording.display(),
        recording.display()
    );
    Ok(())
}

/// What the terminal shows besides the board's snapshot: the flags raised and the
/// latest events.
#[derive(Debug, Default)]
pub struct View {
    pub title: String,
    pub bus: String,
    /// Touch-move flags, irregularities and their resolutions, take-backs: all kept.
    pub flags: Vec<String>,
    /// The latest event lines.
    pub recent: VecDeque<String>,
    /// The latest clock reading: white's and black's time (ms).
    pub clock: Option<(u64, u64)>,
}

const RECENT: usize = 8;

impl View {
    /// Takes one rules event; returns its line, unless it is a touch or a clock
    /// reading (shown through the board and the clocks instead).
    pub fn event(&mut self, e: &Event) -> Option<String> {
        if let EventKind::Clock {
            white_ms, black_ms, ..
        } = e.kind
        {
            self.clock = Some((white_ms, black_ms));
        }
        if matches!(e.kind, EventKind::Touch { .. } | EventKind::Clock { .. }) {
            return None;
        }
        let mut line = replay::text(std::slice::from_ref(e)).trim_end().to_string();
        if let (EventKind::MoveCompleted { .. }, Some((w, b))) = (&e.kind, self.clock) {
            line.push_str(&format!(" (clock: white {}, black {})", clk(w), clk(b)));
        }
        if matches!(
            e.kind,
            EventKind::TouchMove { .. }
                | EventKind::Irregular { .. }
                | EventKind::Resolved { .. }
                | EventKind::Takeback { .. }
                | EventKind::MoveAmended { .. }
        ) {
            self.flags.push(line.trim_start().replace("\n", " "));
        }
        self.push(line.clone());
        Some(line)
    }

    fn push(&mut self, line: String) {
        for l in line.lines() {
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back(l.to_string());
        }
    }

    /// One screenful: the board with the clocks and status beside it, the moves,
    /// the flags, the latest events. Given the terminal's size (columns, rows), it
    /// fits in it: the header (title, D-Bus and HTTP lines, whose advice must be
    /// read whole) is wrapped at the terminal's width, the moves too, other lines
    /// are cut, and only the latest moves, flags and events are shown.
    pub fn frame(&self, s: &Snapshot, size: Option<(usize, usize)>) -> String {
        let board = s
            .fen
            .parse::<shakmaty::fen::Fen>()
            .ok()
            .map(|f| diagram(&f.into_setup().board))
            .unwrap_or_else(|| "  (no game yet: waiting for the start position)".into());
        let running = |side: &str| {
            if s.clock_running == side {
                "  <- running"
            } else {
                ""
            }
        };
        let side = [
            format!(
                "White  {:>9}{}",
                clk(s.white_clock_ms.max(0) as u64),
                running("white")
            ),
            format!(
                "Black  {:>9}{}",
                clk(s.black_clock_ms.max(0) as u64),
                running("black")
            ),
            String::new(),
            format!("status       {}", s.status),
            format!(
                "irregular    {}",
                if s.irregularity.is_empty() {
                    "-"
                } else {
                    &s.irregularity
                }
            ),
            format!(
                "last move    {}",
                if s.last_move.is_empty() { "-" } else { &s.last_move }
            ),
            format!(
                "board        {} ({})",
                if s.connected { "connected" } else { "disconnected" },
                s.serial_number
            ),
            if s.result.is_empty() {
                String::new()
            } else {
                format!("result       {} ({})", s.result, s.termination)
            },
        ];
        let cols = size.map(|(c, _)| c);
        let mut head: Vec<String> = format!("{}\n{}", self.title, self.bus)
            .lines()
            .flat_map(|l| fold(l, cols))
            .collect();
        head.push(String::new());
        for (i, line) in board.lines().enumerate() {
            head.push(format!("{line:<24}{}", side.get(i).map_or("", String::as_str)));
        }
        let moves: Vec<String> = wrap(&numbered(&s.moves), cols.map_or(78, |c| c.clamp(10, 78)), "  ")
            .lines()
            .map(String::from)
            .collect();
        let flags: Vec<String> = if self.flags.is_empty() {
            vec!["  none".into()]
        } else {
            self.flags.iter().map(|l| format!("  {l}")).collect()
        };
        let recent: Vec<String> = self.recent.iter().cloned().collect();
        // On a small terminal: the latest moves, flags and events that fit, so that
        // the frame never scrolls (the last row stays free for the cursor).
        let (moves, flags, recent) = match size {
            None => (&moves[..], &flags[..], &recent[..]),
            Some((_, rows)) => {
                let fixed = head.len() + 6;
                let mut budget = rows.saturating_sub(fixed + 1);
                let m = moves.len().min(budget.clamp(1, 4));
                budget = budget.saturating_sub(m);
                let g = flags.len().min(budget.max(1));
                budget = budget.saturating_sub(g);
                let r = recent.len().min(budget);
                (
                    &moves[moves.len() - m..],
                    &flags[flags.len() - g..],
                    &recent[recent.len() - r..],
                )
            }
        };
        let mut lines = head;
        lines.push(String::new());
        lines.push("moves".into());
        lines.extend(moves.iter().cloned());
        lines.push(String::new());
        lines.push("flags (touch-move, irregular, take-back)".into());
        lines.extend(flags.iter().cloned());
        lines.push(String::new());
        lines.push("latest".into());
        lines.extend(recent.iter().cloned());
        let mut f = String::new();
        for l in lines {
            match size {
                Some((cols, _)) => f.extend(l.chars().take(cols)),
                None => f.push_str(&l),
            }
            f.push('\n');
        }
        f
    }
}

/// `line` in lines of at most `cols` characters (all of it when there is no
/// limit): broken at spaces where it can be, inside a word longer than a line
/// where it must; the lines after the first indented by two spaces more than it.
fn fold(line: &str, cols: Option<usize>) -> Vec<String> {
    let Some(cols) = cols.filter(|&c| c > 4 && line.chars().count() > c) else {
        return vec![line.to_string()];
    };
    let lead = line.len() - line.trim_start().len();
    let indent = " ".repeat((lead + 2).min(cols / 2));
    let mut out: Vec<String> = Vec::new();
    let mut current = line[..lead].to_string();
    for word in line[lead..].split(' ').filter(|w| !w.is_empty()) {
        let used = current.chars().count();
        let fresh = current.trim().is_empty();
        if !fresh && used + 1 + word.chars().count() > cols {
            out.push(std::mem::replace(&mut current, indent.clone()));
        } else if !fresh {
            current.push(' ');
        }
        for c in word.chars() {
            if current.chars().count() == cols {
                out.push(std::mem::replace(&mut current, indent.clone()));
            }
            current.push(c);
        }
    }
    out.push(current);
    out
}

/// `1. e4 e5 2. f4 ...`
fn numbered(moves: &[String]) -> String {
    let mut s = String::new();
    for (i, m) in moves.iter().enumerate() {
        if i % 2 == 0 {
            s.push_str(&format!("{}. ", i / 2 + 1));
        }
        s.push_str(m);
        s.push(' ');
    }
    s.trim_end().to_string()
}

/// Words into lines of at most `width` characters, each indented.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            out.push_str(&format!("{indent}{line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if line.is_empty() && out.is_empty() {
        return format!("{indent}-\n");
    }
    if !line.is_empty() {
        out.push_str(&format!("{indent}{line}\n"));
    }
    out
}

/// A text diagram, rank 8 at the top.
pub fn diagram(board: &shakmaty::Board) -> String {
    let mut s = String::new();
    for rank in (0..8).rev() {
        s.push_str(&format!("  {} ", rank + 1));
        for file in 0..8 {
            let sq = shakmaty::Square::from_coords(shakmaty::File::new(file), shakmaty::Rank::new(rank));
            s.push(board.piece_at(sq).map_or('.', |p| p.char()));
            s.push(' ');
        }
        s.push('\n');
    }
    s.push_str("    a b c d e f g h");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{IrregularKind, Side};

    /// The demo's log through the rules core (as `replay` runs it): the game's moves,
    /// one take-back, one illegal move resolved, nothing else irregular.
    #[test]
    fn the_demo_log_is_the_game_with_a_take_back_and_a_corrected_illegal_move() {
        let log = demo_log();
        let r = replay::run(&log, "demo", crate::rules::Config::default(), None).unwrap();
        let game = r.core.game().expect("a game");
        let sans: Vec<&str> = game.moves.iter().map(|m| m.san.as_str()).collect();
        assert_eq!(sans, GAME.split_whitespace().collect::<Vec<_>>());
        assert_eq!(
            game.result.map(|(r, t)| (r.to_string(), t.to_string())),
            Some(("1-0".into(), "checkmate".into()))
        );
        let kinds: Vec<&EventKind> = r
            .events
            .iter()
            .map(|e| &e.kind)
            .filter(|k| {
                !matches!(
                    k,
                    EventKind::Touch { .. }
                        | EventKind::Clock { .. }
                        | EventKind::Move { .. }
                        | EventKind::MoveCompleted { .. }
                        | EventKind::GameStart { .. }
                        | EventKind::GameEnd { .. }
                )
            })
            .collect();
        let [
            EventKind::Takeback { to_ply: 4, .. },
            EventKind::Irregular {
                kind: IrregularKind::IllegalMove,
                side: Side::White,
                squares,
                completed: false,
                ..
            },
            EventKind::Resolved { .. },
        ] = kinds.as_slice()
        else {
            panic!("expected a take-back, then an illegal move and its resolution: {kinds:#?}");
        };
        assert!(
            squares.contains(&"d1".to_string()) && squares.contains(&"d4".to_string()),
            "{squares:?}"
        );
        // And a slide: a piece put down on a square and lifted from it again on its
        // way, other than where it was lifted from.
        let mut slides = 0;
        let mut lifted_from = None;
        for w in log.records.windows(2) {
            if let RecordKind::Lift { square, .. } = &w[0].kind {
                lifted_from = Some(*square);
            }
            if let (RecordKind::Place { square: a, .. }, RecordKind::Lift { square: b, .. }) =
                (&w[0].kind, &w[1].kind)
            {
                if a == b && lifted_from != Some(*a) {
                    slides += 1;
                }
            }
        }
        // One of these is the illegal queen move, put down on d4 and lifted again.
        assert!(slides >= 2, "no slide in the demo ({slides})");
    }

    #[test]
    fn the_view_shows_board_clocks_moves_and_flags() {
        let mut view = View {
            title: "title".into(),
            bus: "bus line".into(),
            ..View::default()
        };
        let at = |t: f64, kind: EventKind| Event { t, kind };
        let clock = at(
            1.0,
            EventKind::Clock {
                white_ms: 298_000,
                black_ms: 300_000,
                running: "black",
            },
        );
        assert_eq!(view.event(&clock), None, "clock readings are no lines");
        view.event(&at(
            2.0,
            EventKind::MoveCompleted {
                ply: 1,
                side: Side::White,
            },
        ));
        view.event(&at(
            3.0,
            EventKind::Takeback {
                to_ply: 0,
                fen: "start".into(),
            },
        ));
        let snap = Snapshot {
            connected: true,
            serial_number: "18510".into(),
            status: "playing".into(),
            fen: "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1".into(),
            moves: vec!["e4".into(), "e5".into(), "Nf3".into()],
            last_move: "e2e4".into(),
            white_clock_ms: 298_000,
            black_clock_ms: 300_000,
            clock_running: "black".into(),
            ..Snapshot::default()
        };
        let f = view.frame(&snap, None);
        let lines: Vec<&str> = f.lines().collect();
        assert_eq!(&lines[..2], ["title", "bus line"]);
        assert!(lines.contains(&"  8 r n b q k b n r     White    0:04:58"), "{f}");
        assert!(
            lines.contains(&"  7 p p p p p p p p     Black    0:05:00  <- running"),
            "{f}"
        );
        assert!(
            lines.contains(&"  3 . . . . . . . .     last move    e2e4"),
            "{f}"
        );
        assert!(lines.contains(&"  1. e4 e5 2. Nf3"), "{f}");
        assert!(lines.contains(&"  3.000  take-back to ply 0: start"), "{f}");
        assert!(
            lines.contains(&"    2.000  white completes ply 1 (clock: white 0:04:58, black 0:05:00)"),
            "{f}"
        );

        // A small terminal: nothing wraps or scrolls; the newest event stays.
        let small = view.frame(&snap, Some((40, 22)));
        let lines: Vec<&str> = small.lines().collect();
        assert!(lines.len() < 22, "{} lines:\n{small}", lines.len());
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{small}");
        assert_eq!(
            lines.last(),
            Some(&"    3.000  take-back to ply 0: start"),
            "{small}"
        );
        assert!(
            lines.contains(&"  8 r n b q k b n r     White    0:04:58"),
            "{small}"
        );
    }

    /// A narrow terminal wraps the header (its advice is read whole), never cuts it.
    #[test]
    fn a_narrow_terminal_wraps_the_header_lines() {
        let advice = "D-Bus: not published, no session bus to publish on (session bus at \
                      unix:path=/run/user/1000/a-very-long-socket-name-that-fills-a-line: connection \
                      refused); the game is shown here only";
        let view = View {
            title: "eboard-bridge demo: Anderssen - Kieseritzky, London 1851, on a virtual DGT board".into(),
            bus: format!("{advice}\nHTTP: no live page (address in use); try --http 127.0.0.1:PORT"),
            ..View::default()
        };
        let f = view.frame(&Snapshot::default(), Some((32, 60)));
        let lines: Vec<&str> = f.lines().collect();
        assert!(lines.iter().all(|l| l.chars().count() <= 32), "{f}");
        // Every character of the header is there, in order (spaces aside).
        let shown: String = f.chars().filter(|c| !c.is_whitespace()).collect();
        for text in [
            &view.title,
            advice,
            "HTTP: no live page (address in use); try --http 127.0.0.1:PORT",
        ] {
            let want: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            assert!(shown.contains(&want), "`{text}` is not whole in:\n{f}");
        }
        assert!(lines[1].starts_with("  "), "continuation lines are indented: {f}");
        assert_eq!(fold("short", Some(32)), ["short"]);
        assert_eq!(fold("a b", None), ["a b"]);
        assert_eq!(fold("abcdefghij", Some(6)), ["abcdef", "  ghij"]);
    }

    /// The demo's line when nothing is published gives no `run` option (`--bus`),
    /// which the demo does not take.
    #[test]
    fn not_published_says_why_without_run_options() {
        let errors = [
            DaemonError::Bus {
                bus: "session bus at unix:path=/nowhere".into(),
                source: zbus::Error::Failure("connection refused".into()),
            },
            DaemonError::Name(zbus::Error::NameTaken),
            DaemonError::NameDenied {
                bus: "session bus at unix:path=/x".into(),
                uid: 1000,
                source: zbus::Error::Failure("AccessDenied".into()),
            },
        ];
        for e in &errors {
            let line = not_published(e);
            assert!(line.starts_with("D-Bus: not published, "), "{line}");
            assert!(!line.contains("--bus"), "{line}");
        }
        assert!(not_published(&errors[0]).contains("no session bus to publish on"));
        assert!(not_published(&errors[1]).contains("is taken"));
        assert!(not_published(&errors[2]).contains("policy"));
    }
}
