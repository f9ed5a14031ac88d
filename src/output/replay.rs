//! `replay --format text|jsonl|uci|pgn`: sensor logs through the rules core.

use std::fmt::Write;
use std::path::Path;
use std::sync::mpsc;

use shakmaty::{CastlingMode, Chess, Position};

use crate::log::{Header, LogError, Played, Player, SensorLog, Step};
use crate::rules::{Config, Core, Event, EventKind, Game, Pinned, SETTINGS_KEY, Settings};

/// What `replay` prints of a log (`--format`, but for `sensors`, which stops
/// before the rules core).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Print {
    Text,
    Jsonl,
    Uci,
    Pgn,
}

/// Bytes of printed output kept in one piece.
const CHUNK: usize = 256 * 1024;

/// Steps handed to the rules core at a time.
const BATCH: usize = 512;

/// What the reading side hands to the rules core: the header first (complete by
/// the first record), then the played steps in batches.
enum Read {
    Header(Header),
    Steps(Vec<Step>),
}

/// What the rules core hands back to be printed.
enum Made {
    Events(Vec<Event>),
    /// Games over, in order (then the last one, at the end of the log).
    Games(Vec<Game>),
}

/// `replay` of one log file as a whole, on two threads, one a core each: one
/// reads, parses and plays the log into board-level steps (decoder and board as
/// for [`run`]) and prints what comes back; this one runs the rules core on the
/// steps and hands back its events as they come (`text`, `jsonl`) or the games
/// as they end (`uci`, `pgn`). Reading and printing together take about as long
/// as the rules core, so neither side waits much. The log is judged by the
/// settings it states (the defaults where it states none) but for those
/// `pinned`; `given` overrides the header's `fen`. Returns what to print for the
/// log, complete, in chunks to print in order: a log with a problem in it prints
/// nothing and gives the problem (the first one in the file, with its line).
pub fn replay_file(
    path: &Path,
    file: &str,
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
) -> Result<Vec<Vec<u8>>, String> {
    std::thread::scope(|scope| {
        let (steps_tx, steps_rx) = mpsc::sync_channel::<Read>(32);
        // Unbounded: the rules core never waits for the printer, so the reading
        // side (which waits for the rules core) cannot wait for itself.
        let (made_tx, made_rx) = mpsc::channel::<Made>();
        let io = scope.spawn(move || read_and_print(path, file, steps_tx, &made_rx, print));
        let played = play_steps(&steps_rx, &made_tx, file, pinned, given, print);
        // Stops the reading side if the rules core stopped first; ends what it
        // prints.
        drop(steps_rx);
        drop(made_tx);
        let printed = io
            .join()
            .unwrap_or_else(|_| Err(format!("{file}: the reading thread failed")));
        // The reader's problem comes first: the rules core only stops early when
        // the header is wrong, and the reader's is then "hung up" (empty).
        match (printed, played) {
            (Err(e), _) if !e.is_empty() => Err(e),
            (_, Err(e)) => Err(e),
            (printed, Ok(())) => printed,
        }
    })
}

/// The reading and printing side: the file parsed and played record by record,
/// the steps sent on in batches, and between records what the rules core has
/// made printed. An empty error means the rules core hung up (it has its own
/// problem to report).
fn read_and_print(
    path: &Path,
    file: &str,
    tx: mpsc::SyncSender<Read>,
    made: &mpsc::Receiver<Made>,
    print: Print,
) -> Result<Vec<Vec<u8>>, String> {
    let text = crate::log::read_text(path, file).map_err(|e| e.to_string())?;
    let mut printer = Printer {
        print,
        date: String::new(),
        out: Vec::new(),
        chunk: Vec::with_capacity(CHUNK),
        line: String::new(),
    };
    let mut player = Player::new(file);
    let mut steps = Vec::with_capacity(BATCH + 16);
    let mut header_sent = false;
    let hung_up = || LogError {
        file: String::new(),
        line: 0,
        problem: String::new(),
    };
    let header = crate::log::parse_each(&text, file, None, |header, record, line| {
        if !header_sent {
            printer.date = pgn_date(header);
            tx.send(Read::Header(header.clone())).map_err(|_| hung_up())?;
            header_sent = true;
        }
        player.play_into(&record, Some(line), &mut steps)?;
        if steps.len() >= BATCH {
            let next = Vec::with_capacity(BATCH + 16);
            let mut full = Read::Steps(std::mem::replace(&mut steps, next));
            // While the rules core is a batch behind, print what it made: it
            // hands something back after every batch, which also frees a slot.
            loop {
                match tx.try_send(full) {
                    Ok(()) => break,
                    Err(mpsc::TrySendError::Full(again)) => {
                        full = again;
                        printer.print(&made.recv().map_err(|_| hung_up())?);
                    }
                    Err(mpsc::TrySendError::Disconnected(_)) => return Err(hung_up()),
                }
            }
            while let Ok(m) = made.try_recv() {
                printer.print(&m);
            }
        }
        Ok(())
    })
    .map_err(|e| {
        if e.problem.is_empty() {
            String::new()
        } else {
            e.to_string()
        }
    })?;
    if !header_sent {
        printer.date = pgn_date(&header);
        tx.send(Read::Header(header)).map_err(|_| String::new())?;
    }
    steps.extend(player.finish());
    tx.send(Read::Steps(steps)).map_err(|_| String::new())?;
    drop(tx);
    for m in made {
        printer.print(&m);
    }
    printer.out.push(printer.chunk);
    Ok(printer.out)
}

/// `replay` of many log files: a bounded pool of threads (one a core, at most
/// one a file), each running whole files on its own (read, parse, play, rules
/// core, print into memory: no hand-over inside a file), and `write` given each
/// file's output in the order of `paths` as soon as it and the ones before it are
/// done. `write` returns `false` to stop (stdout closed); the first file with a
/// problem stops the replay there, after the files before it were written, and
/// its problem is returned with its index.
///
/// One thread a file cost more than a short file's events (a thread's start and
/// end, the futex hand-over of every batch, the allocator's purge at each
/// thread's end): 700 logs of 150 events ran at 0.28 M events/s of CPU time, 72%
/// of system time in futex waits (`docs/PERFORMANCE.md`).
pub fn replay_many(
    paths: &[(std::path::PathBuf, String)],
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
    mut write: impl FnMut(usize, &[u8]) -> bool,
) -> Result<(), (usize, String)> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(paths.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(usize, Result<Vec<u8>, String>)>();
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                let mut buf = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((path, file)) = paths.get(i) else { break };
                    let done = replay_one(path, file, pinned, given, print, &mut buf)
                        .map(|()| std::mem::take(&mut buf));
                    if tx.send((i, done)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        // Outputs that came before their turn, by index.
        let mut early = std::collections::BTreeMap::new();
        let mut turn = 0;
        let mut outcome = Ok(());
        for (i, done) in rx {
            early.insert(i, done);
            while let Some(done) = early.remove(&turn) {
                match done {
                    Ok(text) if write(turn, &text) => turn += 1,
                    Ok(_) => {
                        stop.store(true, Ordering::Relaxed);
                        return Ok(());
                    }
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        outcome = Err((turn, e));
                        return outcome;
                    }
                }
            }
        }
        outcome
    })
}

/// One log file on this thread: what [`replay_file`] prints of it, appended to
/// `out`. Nothing is appended when the log has a problem (the first one in the
/// file, with its line).
pub fn replay_one(
    path: &Path,
    file: &str,
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let text = crate::log::read_text(path, file).map_err(|e| e.to_string())?;
    let mut printer = Printer {
        print,
        date: String::new(),
        out: Vec::new(),
        chunk: std::mem::take(out),
        line: String::new(),
    };
    let start_len = printer.chunk.len();
    let mut player = Player::new(file);
    let mut steps = Vec::new();
    let mut core: Option<Core> = None;
    let events = matches!(print, Print::Text | Print::Jsonl);
    let mut games = Vec::new();
    let mut since = 0;
    let hand_on = |core: &mut Core, printer: &mut Printer, games: &mut Vec<Game>, last: bool| {
        if events {
            let made = Made::Events(core.take_events());
            printer.print(&made);
        } else {
            core.drain_events();
            games.extend(core.take_finished());
            if last {
                games.extend(core.take_game());
            }
            if !games.is_empty() {
                printer.print(&Made::Games(std::mem::take(games)));
            }
        }
    };
    let result = (|| {
        let header = crate::log::parse_each(&text, file, None, |header, record, line| {
            let core = match &mut core {
                Some(c) => c,
                None => {
                    printer.date = pgn_date(header);
                    let defaults = Settings::default();
                    core.insert(start_core(header, file, defaults, pinned, given, print).map_err(
                        |problem| LogError {
                            file: String::new(),
                            line: 0,
                            problem,
                        },
                    )?)
                }
            };
            player.play_into(&record, Some(line), &mut steps)?;
            for step in steps.drain(..) {
                feed_pinned(core, &step, &pinned);
            }
            // What the core made is printed now and then, not kept whole.
            since += 1;
            if since >= BATCH {
                since = 0;
                hand_on(core, &mut printer, &mut games, false);
            }
            Ok(())
        })
        .map_err(|e| {
            if e.file.is_empty() {
                e.problem
            } else {
                e.to_string()
            }
        })?;
        let core = match &mut core {
            Some(c) => c,
            None => {
                printer.date = pgn_date(&header);
                core.insert(start_core(
                    &header,
                    file,
                    Settings::default(),
                    pinned,
                    given,
                    print,
                )?)
            }
        };
        for step in player.finish() {
            feed_pinned(core, &step, &pinned);
        }
        core.finish();
        hand_on(core, &mut printer, &mut games, true);
        Ok(())
    })();
    *out = printer.chunk;
    if result.is_err() {
        out.truncate(start_len);
    }
    result
}

/// The rules core for a log: judged by the settings its header states (else
/// `defaults`) but for those `pinned`; its start position from `given`, else
/// from the header's `fen`. Printing games only (`uci`, `pgn`), it
/// keeps no events.
fn start_core(
    header: &Header,
    file: &str,
    defaults: Settings,
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
) -> Result<Core, String> {
    let stated = header
        .get(SETTINGS_KEY)
        .map(|s| Settings::from_json(s).map_err(|e| format!("{file}: header field `{SETTINGS_KEY}`: {e}")))
        .transpose()?;
    let start = match (given, header.get("fen")) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(f)) => Some(parse_start(f).map_err(|e| format!("{file}: header field `fen`: {e}"))?),
        (None, None) => None,
    };
    let settings = pinned.over(stated.unwrap_or(defaults));
    let mut core = Core::with_settings(&settings);
    if let Some((pos, mode)) = start {
        core.start_from(pos, mode);
    }
    core.set_events(matches!(print, Print::Text | Print::Jsonl));
    core.set_san(print != Print::Uci);
    Ok(core)
}

/// The PGN `Date` of a log's games: the day its header says it started.
fn pgn_date(header: &Header) -> String {
    header
        .get("started")
        .and_then(|s| s.get(..10))
        .map_or_else(|| "????.??.??".to_string(), |d| d.replace('-', "."))
}

/// The rules core's side: the steps as they come, the events and the games that
/// end handed back as they are made.
fn play_steps(
    rx: &mpsc::Receiver<Read>,
    tx: &mpsc::Sender<Made>,
    file: &str,
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
) -> Result<(), String> {
    let Ok(Read::Header(header)) = rx.recv() else {
        // The reader stopped before the header: its problem says why.
        return Ok(());
    };
    let mut core = start_core(&header, file, Settings::default(), pinned, given, print)?;
    let events = matches!(print, Print::Text | Print::Jsonl);
    let hand_on = |core: &mut Core, last: bool| {
        let made = if events {
            Made::Events(core.take_events())
        } else {
            core.drain_events();
            let mut games = core.take_finished();
            if last {
                games.extend(core.game().cloned());
            }
            Made::Games(games)
        };
        // The reading side stops listening only when it has its own problem.
        let _ = tx.send(made);
    };
    for read in rx {
        let Read::Steps(steps) = read else { continue };
        for step in &steps {
            feed_pinned(&mut core, step, &pinned);
        }
        hand_on(&mut core, false);
    }
    core.finish();
    hand_on(&mut core, true);
    Ok(())
}

/// Prints what the rules core made: events as lines, or games as PGN or UCI.
struct Printer {
    print: Print,
    date: String,
    /// What is printed so far, in chunks of about [`CHUNK`] bytes (never
    /// copied to grow), then the chunk being filled.
    out: Vec<Vec<u8>>,
    chunk: Vec<u8>,
    line: String,
}

impl Printer {
    /// Prints what was made and sends it back to be freed by the side that
    /// made it (unless that side is done).
    fn print(&mut self, made: &Made) {
        match made {
            Made::Events(events) => {
                for e in events {
                    if self.print == Print::Text {
                        self.line.clear();
                        text_line(&mut self.line, e);
                        self.chunk.extend_from_slice(self.line.as_bytes());
                    } else {
                        // Serialising plain data to memory cannot fail.
                        let _ = serde_json::to_writer(&mut self.chunk, e);
                        self.chunk.push(b'\n');
                    }
                }
            }
            Made::Games(games) => {
                let text = match self.print {
                    Print::Uci => uci(games.iter()),
                    _ => pgn(games.iter(), &self.date),
                };
                self.chunk.extend_from_slice(text.as_bytes());
            }
        }
        if self.chunk.len() >= CHUNK {
            let next = Vec::with_capacity(CHUNK + CHUNK / 2);
            self.out.push(std::mem::replace(&mut self.chunk, next));
        }
    }
}

/// The result of replaying logs: the events and the games.
pub struct Replay {
    pub events: Vec<Event>,
    pub core: Core,
}

/// Runs one log through the decoder and the rules core, judged by the settings
/// it states, else by `cfg`.
pub fn run(
    log: &SensorLog,
    file: &str,
    cfg: Config,
    start: Option<(Chess, CastlingMode)>,
) -> Result<Replay, LogError> {
    let defaults = Settings::new(cfg, None);
    let mut core = start_core(
        &log.header,
        file,
        defaults,
        Pinned::default(),
        start.as_ref(),
        Print::Jsonl,
    )
    .map_err(|problem| LogError {
        file: String::new(),
        line: 0,
        problem,
    })?;
    let mut player = Player::new(file);
    let mut events = Vec::new();
    let feed = |core: &mut Core, steps: Vec<crate::log::Step>| {
        for step in &steps {
            feed_step(core, step);
        }
    };
    for (i, record) in log.records.iter().enumerate() {
        let steps = player.play(record, log.line_of(i))?;
        feed(&mut core, steps);
        events.extend(core.take_events());
    }
    let steps = player.finish();
    feed(&mut core, steps);
    core.finish();
    events.extend(core.take_events());
    Ok(Replay { events, core })
}

/// Hands one played step to the rules core, as the daemon does live: board events
/// as they are, a `gap` record as a gap in the line, and bytes the decoder had to
/// skip as a line fault (the daemon finds them in the same bytes, at the same
/// place).
pub fn feed_step(core: &mut Core, step: &crate::log::Step) {
    feed_pinned(core, step, &Pinned::default());
}

/// [`feed_step`], with settings given on the command line standing over the
/// log's `# settings:` lines.
pub fn feed_pinned(core: &mut Core, step: &crate::log::Step, pinned: &Pinned) {
    let t = step.time.micros();
    match &step.what {
        Played::Board(ev) => core.input(ev, t),
        Played::Gap(_) => core.gap(t),
        Played::Skipped(_) => core.line_fault(t),
        Played::Arbiter(method, args, by) => {
            // Only accepted calls are recorded; one that does not apply (a log
            // written by hand) changes nothing.
            let Some(values) = arbiter_values(args) else {
                return;
            };
            let applied = match crate::rules::Decision::from_record(method, &values) {
                Ok(Some(d)) => core.arbiter(&d, t).is_ok(),
                Ok(None) => true,
                Err(_) => false,
            };
            if applied {
                core.arbiter_call(method, values, by.clone(), t);
            }
        }
        // Checked to be a JSON object when read; settings the rules core cannot
        // take (a threshold over an hour) change nothing.
        Played::Settings(json) => {
            if let Ok(s) = Settings::from_json(json) {
                core.set_settings(&pinned.over(s));
            }
        }
        Played::Host(_) | Played::Note(_) => {}
    }
}

/// An `arbiter` record's arguments as JSON values; `None` when one is not JSON
/// (a hand-written log: the call does not apply).
pub fn arbiter_values(args: &[String]) -> Option<Vec<serde_json::Value>> {
    args.iter().map(|a| serde_json::from_str(a).ok()).collect()
}

pub fn jsonl(events: &[Event]) -> String {
    let mut s = String::new();
    for e in events {
        // Serialising plain data to a string cannot fail.
        let _ = writeln!(s, "{}", serde_json::to_string(e).unwrap_or_default());
    }
    s
}

pub fn uci<'a>(games: impl Iterator<Item = &'a Game>) -> String {
    let mut s = String::new();
    for g in games {
        let _ = writeln!(s, "# game {}", g.number);
        for m in &g.moves {
            let _ = writeln!(s, "{}", m.uci);
        }
    }
    s
}

/// A clock reading, `H:MM:SS`.
pub fn clk(ms: u64) -> String {
    let secs = ms / 1000;
    format!("{}:{:02}:{:02}", secs / 3600, (secs / 60) % 60, secs % 60)
}

/// The seven tag roster's values for one game (the rest of the tags come from it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Tags {
    pub event: String,
    pub site: String,
    pub date: String,
    pub round: String,
    pub white: String,
    pub black: String,
    /// The tags a broadcast uses besides the seven (`Board`, and the pairing's
    /// `WhiteElo`, `BlackFideId`, ...: [`EXTRA_TAGS`]), written in that order.
    /// Absent from older journals' notes: none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub extra: std::collections::BTreeMap<String, String>,
}

/// The tags besides the seven tag roster that a game's PGN may carry, in the
/// order it writes them: the board number, then the pairing's (what tournament
/// programs export and broadcasts read: lichess takes photos and ratings from the
/// FIDE ids).
pub const EXTRA_TAGS: [&str; 9] = [
    "Board",
    "WhiteTitle",
    "BlackTitle",
    "WhiteElo",
    "BlackElo",
    "WhiteFideId",
    "BlackFideId",
    "WhiteTeam",
    "BlackTeam",
];

impl Tags {
    pub fn unknown(date: &str) -> Tags {
        Tags {
            event: "?".into(),
            site: "?".into(),
            date: date.into(),
            round: "?".into(),
            white: "?".into(),
            black: "?".into(),
            extra: Default::default(),
        }
    }
}

/// A PGN tag value: backslashes and quotes escaped (PGN standard 8.1.1).
fn tag_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Standard PGN: the seven tag roster, `[%clk]` comments when a clock reported.
pub fn pgn<'a>(games: impl Iterator<Item = &'a Game>, date: &str) -> String {
    games.map(|g| game_pgn(g, &Tags::unknown(date))).collect()
}

/// A digest of everything [`game_pgn`] reads of `g` and `tags`: equal digests,
/// the same PGN. A board publishes on every clock report and touch; this lets
/// it skip building a PGN that cannot have changed (a few lookups and no
/// allocation instead of formatting the whole game).
pub fn game_pgn_digest(g: &Game, tags: &Tags) -> u64 {
    use std::hash::{Hash, Hasher};
    // FNV: a few hundred bytes of short fields, hashed fast (SipHash, the
    // default, cost more than the rest of the call).
    let mut h = fnv::FnvHasher::default();
    tags.hash(&mut h);
    g.result.hash(&mut h);
    matches!(g.mode, CastlingMode::Chess960).hash(&mut h);
    g.start_fen.hash(&mut h);
    g.time_control.hash(&mut h);
    g.clocks.hash(&mut h);
    g.moves.len().hash(&mut h);
    for m in &g.moves {
        m.san.hash(&mut h);
        m.inferred.hash(&mut h);
        m.clk_ms.hash(&mut h);
        m.emt_ms.hash(&mut h);
    }
    h.finish()
}

/// One game in PGN with the given tags.
pub fn game_pgn(g: &Game, tags: &Tags) -> String {
    let mut s = String::new();
    {
        let result = g.result.map_or("*", |(r, _)| r);
        for (tag, value) in [
            ("Event", tags.event.as_str()),
            ("Site", tags.site.as_str()),
            ("Date", tags.date.as_str()),
            ("Round", tags.round.as_str()),
            ("White", tags.white.as_str()),
            ("Black", tags.black.as_str()),
            ("Result", result),
        ] {
            let _ = writeln!(s, "[{tag} \"{}\"]", tag_value(value));
        }
        for tag in EXTRA_TAGS {
            if let Some(v) = tags.extra.get(tag).filter(|v| !v.is_empty()) {
                let _ = writeln!(s, "[{tag} \"{}\"]", tag_value(v));
            }
        }
        if g.mode == CastlingMode::Chess960 {
            let _ = writeln!(s, "[Variant \"Chess960\"]");
        }
        let standard_start = g.start_fen == crate::rules::game_fen(&Chess::default());
        if !standard_start {
            let _ = writeln!(s, "[SetUp \"1\"]\n[FEN \"{}\"]", g.start_fen);
        }
        if let Some((_, termination)) = g.result {
            let _ = writeln!(s, "[Termination \"{termination}\"]");
        }
        if let Some(tc) = &g.time_control {
            let _ = writeln!(s, "[TimeControl \"{}\"]", tag_value(tc));
        }
        if let Some((w, b)) = g.clocks {
            let _ = writeln!(s, "[WhiteClock \"{}\"]\n[BlackClock \"{}\"]", clk(w), clk(b));
        }
        s.push('\n');
        let mut line = String::new();
        let start = &g.positions[0];
        let first_black = start.turn().is_black();
        let mut number = u32::from(start.fullmoves());
        for (i, m) in g.moves.iter().enumerate() {
            let white_to_move = (i % 2 == 0) != first_black;
            let mut token = String::new();
            if white_to_move {
                let _ = write!(token, "{number}. ");
            } else if i == 0 {
                let _ = write!(token, "{number}... ");
            }
            token.push_str(&m.san);
            if m.inferred {
                token.push_str(" {inferred}");
            }
            match (m.clk_ms, m.emt_ms) {
                (Some(c), Some(e)) => {
                    let _ = write!(token, " {{ [%clk {}] [%emt {}] }}", clk(c), clk(e));
                }
                (Some(c), None) => {
                    let _ = write!(token, " {{ [%clk {}] }}", clk(c));
                }
                _ => {}
            }
            if !white_to_move {
                number += 1;
            }
            if !line.is_empty() && line.len() + token.len() + 1 > 79 {
                let _ = writeln!(s, "{line}");
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&token);
        }
        if !line.is_empty() && line.len() + result.len() + 1 > 79 {
            let _ = writeln!(s, "{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(result);
        let _ = writeln!(s, "{line}\n");
    }
    s
}

/// `t` (seconds) as `format!("{t:>9.3}")` writes it, without formatting a float
/// for every line. An event's time is a whole number of microseconds; rounded to
/// milliseconds by integers, it is what the float gives, except exactly half-way
/// (`x.yyy500`), where the nearest `f64` decides: those go through the float.
fn seconds_3(s: &mut String, t: f64) {
    let us = (t * 1e6).round();
    if !(0.0..1e12).contains(&us) || us / 1e6 != t || us as u64 % 1000 == 500 {
        let _ = write!(s, "{t:>9.3}");
        return;
    }
    // The whole seconds right-aligned in 5, then the point and 3 digits: at
    // least 9 characters, as the float's format gives.
    let ms = (us as u64 + 500) / 1000;
    let _ = write!(s, "{:>5}.{:03}", ms / 1000, ms % 1000);
}

/// For a person: what happens, with times.
pub fn text(events: &[Event]) -> String {
    let mut s = String::new();
    for e in events {
        text_line(&mut s, e);
    }
    s
}

/// One event's line of [`text`], appended to `s`.
fn text_line(s: &mut String, e: &Event) {
    seconds_3(s, e.t);
    s.push_str("  ");
    let _ = match &e.kind {
        EventKind::GameStart {
            game,
            fen,
            variant,
            orientation,
        } => {
            write!(s, "game {game} starts ({variant}, board {orientation}): {fen}")
        }
        EventKind::Touch {
            side,
            square,
            piece,
            first,
            returned,
        } => write!(
            s,
            "{} touches {piece} on {square}{}{}",
            side.name(),
            if *first { " (first)" } else { "" },
            if *returned { ", puts it back" } else { "" }
        ),
        EventKind::Move {
            ply,
            san,
            side,
            inferred,
            ..
        } => {
            let n = ply.div_ceil(2);
            let how = if *inferred {
                " (inferred across a gap in the line)"
            } else {
                ""
            };
            if side.name() == "white" {
                write!(s, "{n}. {san}{how}")
            } else {
                write!(s, "{n}... {san}{how}")
            }
        }
        EventKind::MoveAmended {
            ply,
            was,
            san,
            inferred,
            ..
        } => write!(
            s,
            "ply {ply} amended: {was} becomes {san}{}",
            if *inferred {
                " (seen across a gap in the line)"
            } else {
                ""
            }
        ),
        EventKind::MoveCompleted { ply, side } => write!(s, "{} completes ply {ply}", side.name()),
        EventKind::Takeback { to_ply, fen } => write!(s, "take-back to ply {to_ply}: {fen}"),
        EventKind::TouchMove {
            article,
            side,
            touched,
            played,
        } => write!(
            s,
            "touch-move (Art. {article}): {} touched {} and played {played}",
            side.name(),
            touched.join(" ")
        ),
        EventKind::Irregular {
            kind,
            side,
            squares,
            completed,
            count,
            penalty,
            board,
        } => {
            let _ = write!(s, "irregular: {} by {}", kind.name(), side.name());
            if !squares.is_empty() {
                let _ = write!(s, " on {}", squares.join(" "));
            }
            if *completed {
                let _ = write!(s, ", completed (violation {count} of {})", side.name());
            }
            if let Some(p) = penalty {
                let _ = write!(s, "\n        penalty: {p}");
            }
            match board {
                Some(b) => write!(s, "\n        board seen: {b}"),
                None => Ok(()),
            }
        }
        EventKind::Resolved { fen } => write!(s, "resolved: {fen}"),
        EventKind::Clock {
            white_ms,
            black_ms,
            running,
        } => {
            write!(
                s,
                "clock white {} black {} ({running} running)",
                clk(*white_ms),
                clk(*black_ms)
            )
        }
        EventKind::DrawClaimable { reason } => write!(s, "draw claimable: {reason}"),
        EventKind::Flag {
            side,
            ply,
            period_moves,
            count_met,
        } => write!(
            s,
            "flag: {}'s flag has fallen after ply {ply} ({period_moves} moves made in the period{}); the arbiter decides (Art. 6.8)",
            side.name(),
            if *count_met { ", the move count is met" } else { "" }
        ),
        EventKind::GameEnd { result, termination } => write!(s, "game ends {result} ({termination})"),
        EventKind::ClockButton { button } => write!(s, "clock button: {button}"),
        EventKind::ClockUnresponsive { command } => write!(s, "the clock did not acknowledge {command}"),
        EventKind::Arbiter { method, args, by } => {
            let args: Vec<String> = args.iter().map(ToString::to_string).collect();
            let by = by.as_ref().map(|b| format!(" (by {b})")).unwrap_or_default();
            write!(s, "arbiter: {method} {}{by}", args.join(" "))
        }
    };
    s.push('\n');
}

/// A start position from a FEN (kept here for the callers of `replay`).
pub use crate::rules::parse_start;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Orientation;
    use crate::log::{Record, RecordKind};
    use crate::protocol::ClockTime;
    use crate::sim::{Hands, Seeded, Style};

    #[test]
    fn times_are_written_as_the_float_format_writes_them() {
        let check = |t: f64| {
            let mut s = String::new();
            seconds_3(&mut s, t);
            assert_eq!(s, format!("{t:>9.3}"), "t = {t:?}");
        };
        // Every microsecond of the first 3 s (ties at .xxx500 among them), then
        // a spread up to the largest times and beyond, and what is not a time.
        for us in 0..3_000_000u64 {
            check(us as f64 / 1e6);
        }
        let mut pick = Seeded::new(5);
        for _ in 0..200_000 {
            let us = pick.range(0, 1 << 40);
            check(us as f64 / 1e6);
        }
        for t in [
            123_456_789.000_5,
            999_999.999_5,
            1e7,
            1e12,
            3.5e15,
            -0.001,
            -1.0,
            0.000_000_1,
            f64::NAN,
            f64::INFINITY,
        ] {
            check(t);
        }
    }

    /// Seeded random games played by the simulated hands: enough records for
    /// many batches of steps and many chunks of output.
    fn games(n: usize) -> Vec<Record> {
        let mut pick = Seeded::new(7);
        let mut hands = Hands::new(3, Style::default(), Orientation::Normal);
        for _ in 0..n {
            let mut pos = Chess::default();
            hands.board(pos.board());
            hands.set_clock(ClockTime::from_hms(0, 15, 0).expect("a valid time"));
            hands.random_game(&mut pos, &mut pick, 80);
            hands.wait(5000);
        }
        hands.records
    }

    fn write(dir: &Path, name: &str, header: &Header, records: &[Record]) -> std::path::PathBuf {
        let path = dir.join(name);
        let text = crate::log::to_string(header, records).expect("a log in memory");
        std::fs::write(&path, text).expect("the log written");
        path
    }

    /// What `replay` printed before it was split over two threads: the log
    /// read whole, run through [`run`], formatted whole.
    fn one_thread(path: &Path, file: &str, print: Print) -> Vec<u8> {
        let log = crate::log::read_log(path).expect("the log reads");
        let r = run(&log, file, Config::default(), None).expect("the log plays");
        let text = match print {
            Print::Text => text(&r.events),
            Print::Jsonl => jsonl(&r.events),
            Print::Uci => uci(r.core.games()),
            Print::Pgn => pgn(r.core.games(), &pgn_date(&log.header)),
        };
        text.into_bytes()
    }

    /// A log judged by the settings it states: the header's, then a
    /// `# settings:` line's from there on, the same on every path (`run`, two
    /// threads, the pool's one); an option given stands over them.
    #[test]
    fn a_log_is_judged_by_the_settings_it_states_unless_options_are_given() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let records = games(2);
        let half = records.len() / 2;
        let quick = Settings {
            release_ms: 40,
            flicker_ms: 20,
            ..Settings::default()
        };
        let slow = Settings {
            release_ms: 900,
            irregular_ms: 4000,
            ..Settings::default()
        };
        let mut stated = Header::default();
        stated.set(SETTINGS_KEY, &quick.to_json());
        let mut both = records[..half].to_vec();
        both.push(Record {
            time: records[half - 1].time,
            kind: RecordKind::Settings(slow.to_json()),
        });
        both.extend_from_slice(&records[half..]);
        let plain = write(dir.path(), "plain.esl", &Header::default(), &records);
        let quick_log = write(dir.path(), "quick.esl", &stated, &records);
        let changed = write(dir.path(), "changed.esl", &stated, &both);
        let jsonl_of = |path: &Path, pinned: Pinned| {
            let chunks = replay_file(path, "x.esl", pinned, None, Print::Jsonl).expect("it replays");
            let mut pooled = Vec::new();
            replay_one(path, "x.esl", pinned, None, Print::Jsonl, &mut pooled).expect("it replays");
            assert_eq!(chunks.concat(), pooled);
            pooled
        };
        let none = Pinned::default();
        for path in [&plain, &quick_log, &changed] {
            assert_eq!(jsonl_of(path, none), one_thread(path, "x.esl", Print::Jsonl));
        }
        let (plain_out, quick_out, changed_out) = (
            jsonl_of(&plain, none),
            jsonl_of(&quick_log, none),
            jsonl_of(&changed, none),
        );
        assert_ne!(plain_out, quick_out);
        assert_ne!(quick_out, changed_out);
        // Options given stand for the whole log, whatever it states.
        let pinned = Pinned {
            release_ms: Some(40),
            flicker_ms: Some(20),
            irregular_ms: Some(2000),
            ..Pinned::default()
        };
        assert_eq!(jsonl_of(&plain, pinned), quick_out);
        assert_eq!(jsonl_of(&changed, pinned), quick_out);
        // A header the rules core cannot take is the log's problem.
        let mut wrong = Header::default();
        wrong.set(SETTINGS_KEY, "{\"profile\":\"bullet\"}");
        let path = write(dir.path(), "wrong.esl", &wrong, &records);
        let e = replay_file(&path, "wrong.esl", none, None, Print::Jsonl).unwrap_err();
        assert!(e.starts_with("wrong.esl: header field `settings`: "), "{e}");
    }

    #[test]
    fn two_threads_print_what_one_thread_prints() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let mut header = Header::default();
        header.set("started", "2026-11-23T10:00:00Z");
        let records = games(12);
        let path = write(dir.path(), "games.esl", &header, &records);
        for print in [Print::Text, Print::Jsonl, Print::Uci, Print::Pgn] {
            let chunks = replay_file(&path, "games.esl", Pinned::default(), None, print).expect("it replays");
            if print == Print::Jsonl {
                assert!(chunks.len() > 1, "jsonl in {} chunk(s)", chunks.len());
            }
            let printed = chunks.concat();
            let expected = one_thread(&path, "games.esl", print);
            assert!(printed.len() > 1000, "{print:?}: {} bytes", printed.len());
            assert!(
                printed == expected,
                "{print:?} differs from the one-thread replay"
            );
        }
        let pgn = String::from_utf8(one_thread(&path, "games.esl", Print::Pgn)).expect("UTF-8");
        assert_eq!(pgn.matches("[Date \"2026.11.23\"]").count(), 12);
        assert!(records.len() > 4 * BATCH, "{} records", records.len());
    }

    #[test]
    fn a_log_with_a_problem_prints_nothing_and_names_the_first_problem() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let records = games(6);
        let n = records.len();
        let last = records[n - 1].time;
        // Late in the log, so the rules core has printed much already: a record
        // whose time goes back, then (later still) one that is not a record.
        let path = write(dir.path(), "back.esl", &Header::default(), &records);
        let mut text = std::fs::read_to_string(&path).expect("the log");
        text.push_str("0 note back in time\n99999 dance e4\n");
        std::fs::write(&path, &text).expect("written again");
        let line = text.lines().count() - 1;
        let e = replay_file(&path, "back.esl", Pinned::default(), None, Print::Jsonl).unwrap_err();
        assert_eq!(e, format!("back.esl:{line}: time goes back: 0.000 after {last}"));

        // A lift the board cannot make (the last record): found by the player,
        // not the parser.
        let mut bad = records.clone();
        bad.push(Record {
            time: last,
            kind: RecordKind::Lift {
                square: shakmaty::Square::E4,
                piece: Some(shakmaty::Piece::from_char('q').expect("a piece")),
            },
        });
        let path = write(dir.path(), "lift.esl", &Header::default(), &bad);
        let e = replay_file(&path, "lift.esl", Pinned::default(), None, Print::Text).unwrap_err();
        assert!(e.starts_with("lift.esl:"), "{e}");
        let line = std::fs::read_to_string(&path).expect("the log").lines().count();
        assert!(e.starts_with(&format!("lift.esl:{line}: lift e4")), "{e}");
        assert!(e.contains(", but the board has"), "{e}");

        // A start position the header gets wrong: the rules core's side stops.
        let mut header = Header::default();
        header.set("fen", "not a position");
        let path = write(dir.path(), "fen.esl", &header, &records);
        let e = replay_file(&path, "fen.esl", Pinned::default(), None, Print::Pgn).unwrap_err();
        assert!(e.starts_with("fen.esl: header field `fen`: "), "{e}");

        let e = replay_file(
            &dir.path().join("absent.esl"),
            "absent.esl",
            Pinned::default(),
            None,
            Print::Uci,
        )
        .unwrap_err();
        assert!(e.starts_with("absent.esl: cannot read: No such file"), "{e}");
    }

    /// Each thing `game_pgn` shows, changed alone, changes the PGN and the
    /// digest; a copy of the same game has the same digest.
    #[test]
    fn the_pgn_digest_changes_with_everything_the_pgn_shows() {
        let mut g = Game::new(1, Chess::default(), CastlingMode::Standard, Orientation::Normal);
        for uci in ["e2e4", "e7e5", "g1f3"] {
            let mv = uci
                .parse::<shakmaty::uci::UciMove>()
                .expect("a UCI move")
                .to_move(g.current())
                .expect("a legal move");
            g.push(mv);
        }
        let tags = Tags::unknown("2026.11.25");
        let base = (game_pgn(&g, &tags), game_pgn_digest(&g, &tags));
        assert_eq!(game_pgn_digest(&g.clone(), &tags.clone()), base.1);
        type Change = fn(&mut Game, &mut Tags);
        let changes: [(&str, Change); 13] = [
            ("event", |_, t| t.event = "Open".into()),
            ("site", |_, t| t.site = "Hall".into()),
            ("date", |_, t| t.date = "2026.11.26".into()),
            ("round", |_, t| t.round = "2".into()),
            ("white", |_, t| t.white = "A".into()),
            ("black", |_, t| t.black = "B".into()),
            ("result", |g, _| g.result = Some(("1-0", "normal"))),
            ("time control", |g, _| g.time_control = Some("5400+30".into())),
            ("clocks", |g, _| g.clocks = Some((60_000, 61_000))),
            ("san", |g, _| g.moves[1].san = "e6".into()),
            ("inferred", |g, _| g.moves[2].inferred = true),
            ("clk", |g, _| g.moves[0].clk_ms = Some(5_400_000)),
            ("emt", |g, _| {
                g.moves[0].clk_ms = Some(5_400_000);
                g.moves[0].emt_ms = Some(1_000)
            }),
        ];
        for (what, change) in changes {
            let (mut g2, mut t2) = (g.clone(), tags.clone());
            change(&mut g2, &mut t2);
            assert_ne!(game_pgn(&g2, &t2), base.0, "{what}: the PGN is the same");
            assert_ne!(
                game_pgn_digest(&g2, &t2),
                base.1,
                "{what}: the digest is the same"
            );
        }
        // A move more, and a move taken back.
        let mut longer = g.clone();
        let mv = "b8c6"
            .parse::<shakmaty::uci::UciMove>()
            .expect("a UCI move")
            .to_move(longer.current())
            .expect("a legal move");
        longer.push(mv);
        assert_ne!(game_pgn_digest(&longer, &tags), base.1);
        let mut shorter = g.clone();
        shorter.truncate(2);
        assert_ne!(game_pgn(&shorter, &tags), base.0);
        assert_ne!(game_pgn_digest(&shorter, &tags), base.1);
    }
}
