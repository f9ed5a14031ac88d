//! `replay --format text|jsonl|uci|pgn`: sensor logs through the rules core.
//!
//! `threads`: one log on two threads, many logs one after the other; `print`: the
//! formats; this file: the rules core set up for a log and the steps fed to it.

use shakmaty::{CastlingMode, Chess};

use crate::log::{Header, LogError, SensorLog, Step};
use crate::rules::{Config, Core, Event, Game, Pinned, Settings};
use crate::session::{Session, Start};

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
/// the first record), then the played steps in batches, then the player's last
/// steps at the end of the log.
enum Read {
    Header(Header),
    Steps(Vec<Step>),
    End(Vec<Step>),
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

/// The session for a log: judged by the settings its header states (else
/// `defaults`) but for those `pinned`; its start position from `given`, else
/// from the header's `fen`. Printing games only (`uci`, `pgn`), it keeps no
/// events. A header field that does not read is the log's problem.
fn start_session(
    header: &Header,
    file: &str,
    defaults: Settings,
    pinned: Pinned,
    given: Option<&(Chess, CastlingMode)>,
    print: Print,
) -> Result<Session, String> {
    let start = Start {
        defaults,
        pinned,
        given,
        events: matches!(print, Print::Text | Print::Jsonl),
        san: print != Print::Uci,
    };
    let made = Session::from_header(header, file, &start);
    match made.passed_over.first() {
        Some(e) => Err(format!("{file}: {e}")),
        None => Ok(made.session),
    }
}

/// The rules core's warnings, logged (the core writes no log itself).
fn warn_notes(notes: Vec<String>, file: &str) {
    for n in notes {
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
    let mut session = start_session(
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
    let mut events = Vec::new();
    for (i, record) in log.records.iter().enumerate() {
        session.step(record, log.line_of(i))?;
        events.extend(session.take_events());
        warn_notes(session.take_notes(), file);
    }
    session.finish();
    events.extend(session.take_events());
    warn_notes(session.take_notes(), file);
    Ok(Replay {
        events,
        core: session.into_core(),
    })
}

/// A start position from a FEN (kept here for the callers of `replay`).
pub use crate::rules::parse_start;
