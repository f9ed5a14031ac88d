//! `replay --format text|jsonl|uci|pgn`: sensor logs through the rules core.
//!
//! `threads`: one log on two threads, many logs one after the other; `print`: the
//! formats; this file: the rules core set up for a log and the steps fed to it.

use shakmaty::{CastlingMode, Chess};

use crate::log::{Header, LogError, SensorLog, Step};
use crate::rules::{Config, Core, Event, Game, Pinned, SETTINGS_KEY, Settings};

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

mod print;
#[cfg(test)]
mod tests;
mod threads;

use print::Printer;
pub use print::{EXTRA_TAGS, Tags, clk, game_pgn, game_pgn_digest, jsonl, pgn, text, uci};
pub use threads::{replay_file, replay_many, replay_one};

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

/// The rules core's warnings, logged (the core writes no log itself).
fn warn_notes(core: &mut Core, file: &str) {
    for n in core.take_notes() {
        tracing::warn!("{file}: {n}");
    }
}

/// The PGN `Date` of a log's games: the day its header says it started.
fn pgn_date(header: &Header) -> String {
    header
        .get("started")
        .and_then(|s| s.get(..10))
        .map_or_else(|| "????.??.??".to_string(), |d| d.replace('-', "."))
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
    let core = start_core(
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
    let mut session = crate::session::Session::new(core, file);
    let mut events = Vec::new();
    for (i, record) in log.records.iter().enumerate() {
        session.step(record, log.line_of(i))?;
        events.extend(session.core_mut().take_events());
        warn_notes(session.core_mut(), file);
    }
    session.finish();
    let mut core = session.into_core();
    events.extend(core.take_events());
    warn_notes(&mut core, file);
    Ok(Replay { events, core })
}

/// Hands one played step to the rules core, as the daemon does live
/// ([`crate::session::apply`]).
pub fn feed_step(core: &mut Core, step: &crate::log::Step) {
    crate::session::apply(core, step, &Pinned::default());
}

/// A start position from a FEN (kept here for the callers of `replay`).
pub use crate::rules::parse_start;
