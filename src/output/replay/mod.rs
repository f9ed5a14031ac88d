//! `replay --format text|jsonl|uci|pgn`: sensor logs through the rules core.
//!
//! `threads`: one log on two threads, many logs one after the other; `print`: the
//! formats; this file: the rules core set up for a log and the steps fed to it.

use shakmaty::{CastlingMode, Chess};

use crate::log::{Header, LogError, Played, Player, SensorLog, Step};
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

/// A start position from a FEN (kept here for the callers of `replay`).
pub use crate::rules::parse_start;
