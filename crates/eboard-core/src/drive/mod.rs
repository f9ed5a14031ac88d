//! Driving a board's [`Session`] with arbitrary input, for the fuzz target
//! (`fuzz/fuzz_targets/core.rs`) and the property tests
//! (`tests/properties.rs`): what the daemon hands a session, in any order and
//! timing. Board output as records (field updates, dumps, clock reports,
//! presses, bytes the line garbled, gaps; as `rx` bytes or as the records a
//! hand-written log has) through [`Session::step`], and between them arbiter
//! calls through [`Session::decide`]: every decision well formed, in range and
//! out of it, the calls the rules core does not take, and malformed ones
//! (wrong types, huge numbers, too many arguments). An accepted call is
//! journaled as the daemon journals it (`note decided by NAME`, then the
//! `arbiter` record, at the time it was decided).
//!
//! Checked as it goes: nothing panics; events never go back in time; after
//! the deadlines due are met, the next is later than now; a refused call
//! changes nothing (no game's moves, result or position, no event, no clock
//! command) and a malformed one is refused; an undo right after an accepted
//! take-back or result gives the game back exactly as it was. At the end: the
//! journal, written as text and read back, is the same records; replayed
//! through a second session it gives the same events, clock commands and
//! games as the live one (live == replay); every move recorded is legal
//! where it was played.

mod board;
mod calls;
mod view;

use std::collections::BTreeMap;

use shakmaty::{Board, Chess, Position};

use crate::board::Orientation;
use crate::log::{DECIDED_BY, Header, LogTime, Record, RecordKind, SensorLog, parse_log, to_string};
use crate::protocol::{ClockCommand, ClockSide};
use crate::rules::{Config, Core, Decision, Event, FlagPolicy, Refused, Settings};
use crate::session::Session;

/// What a run found wrong: the step, what was seen, and the journal that
/// `replay` reads to see it again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Found(pub String);

impl From<String> for Found {
    fn from(s: String) -> Found {
        Found(s)
    }
}
use board::Touch;
use calls::Call;

/// What one input did: how many calls each method had accepted and refused,
/// the undos checked, the records and plies. Summed over many inputs
/// ([`Tally::add`]), it says what the inputs reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub accepted: BTreeMap<String, u32>,
    pub refused: BTreeMap<String, u32>,
    /// Refusals by method and why (`Undo: GameUnderWay`).
    pub why: BTreeMap<String, u32>,
    /// Malformed calls, all refused.
    pub malformed: u32,
    /// Undos made right after a take-back or a result, each checked to give
    /// the game back as it was.
    pub undone: u32,
    /// Records journaled (board output and accepted calls).
    pub records: usize,
    /// Plies recorded in the games at the end.
    pub plies: usize,
}

impl Tally {
    pub fn add(&mut self, other: &Tally) {
        for (m, n) in &other.accepted {
            *self.accepted.entry(m.clone()).or_default() += n;
        }
        for (m, n) in &other.refused {
            *self.refused.entry(m.clone()).or_default() += n;
        }
        for (m, n) in &other.why {
            *self.why.entry(m.clone()).or_default() += n;
        }
        self.malformed += other.malformed;
        self.undone += other.undone;
        self.records += other.records;
        self.plies += other.plies;
    }
}

/// The bytes of one input: what it is (`op`: its kind, `op & 0x3f` modulo
/// [`KINDS`]; `0x40` the record's form; `0x80` the daemon's timer not yet
/// fired after it), how long after the one before it comes (`wait`, in
/// 16 ms steps, the low 3 bits unused: 0 to 4 s), and four bytes it reads as
/// it needs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Frame {
    pub op: u8,
    pub wait: u8,
    pub a: u8,
    pub b: u8,
    pub c: u8,
    pub d: u8,
}

/// The bytes of a frame.
pub const FRAME: usize = 6;

/// The kinds of input: 0-13 and 19 touch the board (`board::touches`),
/// 14-17 a well-formed call, 18 a malformed one.
pub const KINDS: u8 = 20;

impl Frame {
    fn kind(&self) -> u8 {
        (self.op & 0x3f) % KINDS
    }
}

/// Reads `data` as a sequence of inputs to a session (the first byte the
/// recording's settings, then a [`Frame`] each [`FRAME`] bytes, the last
/// one padded with zeros), checking the properties of the module after each
/// input and the replay at the end. `Err` says which property broke, and
/// where.
pub fn drive(data: &[u8]) -> Result<Tally, Found> {
    let mut run = Run::new(settings(data.first().copied().unwrap_or(0)))?;
    for chunk in data.get(1..).unwrap_or_default().chunks(FRAME) {
        let at = |i: usize| chunk.get(i).copied().unwrap_or(0);
        let f = Frame {
            op: at(0),
            wait: at(1),
            a: at(2),
            b: at(3),
            c: at(4),
            d: at(5),
        };
        run.step += 1;
        run.t += u64::from(f.wait & 0xf8) * 16_000;
        match f.kind() {
            14..=17 => {
                let call = calls::well_formed(&f, run.live.core().game());
                run.call(call)?;
            }
            18 => run.call(calls::malformed(f.a))?,
            _ => {
                let core = run.live.core();
                let orientation = core.game().map_or(Orientation::Normal, |g| g.orientation);
                let touches = board::touches(&f, core.sensors(), &mut run.shadow, orientation);
                for touch in touches {
                    run.touch(&touch, f.op & 0x40 != 0)?;
                }
            }
        }
        // The daemon meets the deadlines as they fall due; its timer may not
        // have fired yet when the next input comes (as a replay never does).
        if f.op & 0x80 == 0 {
            run.live.advance(run.t);
            if let Some(d) = run.live.core().next_deadline() {
                if d <= run.t {
                    return Err(Found(format!(
                        "step {}: deadline {d} not after now {} after advance",
                        run.step, run.t
                    )));
                }
            }
        }
        run.collect()?;
    }
    run.end()
}

/// Frames as the bytes [`drive`] reads, after the settings' byte.
pub fn bytes(settings: u8, frames: &[Frame]) -> Vec<u8> {
    let mut out = vec![settings];
    for f in frames {
        out.extend([f.op, f.wait, f.a, f.b, f.c, f.d]);
    }
    out
}

/// The settings the recording states, from a byte: which clock side is
/// white's (fixed or learnt), penalties on the clock, what a flag does.
fn settings(b: u8) -> Settings {
    let cfg = Config {
        apply_penalties: b & 4 != 0,
        flag: if b & 8 != 0 {
            FlagPolicy::End
        } else {
            FlagPolicy::Report
        },
        ..Config::default()
    };
    let white = match b % 3 {
        0 => None,
        1 => Some(ClockSide::Left),
        _ => Some(ClockSide::Right),
    };
    Settings::new(cfg, white)
}

/// The live session, its journal and what it gave so far.
struct Run {
    live: Session,
    journal: Vec<Record>,
    events: Vec<Event>,
    commands: Vec<ClockCommand>,
    /// The time of the input under way (µs).
    t: u64,
    last_event_t: u64,
    step: usize,
    /// A game the inputs may follow, so that moves and dumps of real
    /// positions come up too.
    shadow: Chess,
    tally: Tally,
}

impl Run {
    fn new(settings: Settings) -> Result<Run, Found> {
        let mut run = Run {
            live: Session::new(Core::new(Config::default()), "live"),
            journal: Vec::new(),
            events: Vec::new(),
            commands: Vec::new(),
            t: 0,
            last_event_t: 0,
            step: 0,
            shadow: Chess::default(),
            tally: Tally::default(),
        };
        // A board first seen at its start position; the settings the
        // recording states after its first record, as the daemon writes them.
        let start = RecordKind::Board(Box::new(crate::protocol::Placement::from_board(&Board::new())));
        run.record(start)?;
        run.record(RecordKind::Settings(settings.to_json()))?;
        Ok(run)
    }

    /// One record into the live session and the journal.
    fn record(&mut self, kind: RecordKind) -> Result<(), Found> {
        let record = Record {
            time: LogTime::from_micros(self.t),
            kind,
        };
        self.live
            .step(&record, None)
            .map_err(|e| format!("step {}: {record:?} does not fit the board: {e}", self.step))?;
        self.journal.push(record);
        Ok(())
    }

    /// A touch of the board as the record `form` asks for, when the board
    /// as it stands takes that record; as the board's bytes otherwise.
    fn touch(&mut self, touch: &Touch, form: bool) -> Result<(), Found> {
        let kind = touch.record(self.live.board(), form);
        self.record(kind)
    }

    /// The events and clock commands made so far, taken; events must not go
    /// back in time.
    fn collect(&mut self) -> Result<(), Found> {
        let events = self.live.take_events();
        self.commands.extend(self.live.take_clock_commands());
        for e in events {
            if e.t_us < self.last_event_t {
                return Err(Found(format!(
                    "step {}: event at {} after one at {}: {e:?}",
                    self.step, e.t_us, self.last_event_t
                )));
            }
            self.last_event_t = e.t_us;
            self.events.push(e);
        }
        Ok(())
    }

    /// An arbiter's call, as the daemon takes it: the deadlines due met
    /// first, then the call; accepted, it is journaled (see the module).
    fn call(&mut self, call: Call) -> Result<(), Found> {
        self.live.advance(self.t);
        self.collect()?;
        let before = view::games(self.live.core());
        let (method, args) = (call.method.clone(), call.args.clone());
        let shown = format!("step {}: {method} {}", self.step, view::args_text(&args));
        // As a door reads a call (the console, MQTT, a journal): its method and
        // JSON arguments into a decision, refused there when they do not fit.
        let decided = Decision::from_call(&method, &args)
            .and_then(|d| self.live.decide(&d, call.by.clone(), self.t).map(|()| d));
        match decided {
            Err(e) => {
                let why = match e {
                    Refused::InvalidArgument(_) => "InvalidArgument",
                    Refused::NoGame(_) => "NoGame",
                    Refused::GameUnderWay(_) => "GameUnderWay",
                    Refused::NotUndone(_) => "NotUndone",
                };
                *self.tally.why.entry(format!("{method}: {why}")).or_default() += 1;
                *self.tally.refused.entry(method).or_default() += 1;
                self.tally.malformed += u32::from(call.malformed);
                if view::games(self.live.core()) != before {
                    return Err(Found(format!("{shown}: refused, yet the games changed")));
                }
                let live = &mut self.live;
                let (events, commands) = (live.take_events(), live.take_clock_commands());
                if !events.is_empty() || !commands.is_empty() {
                    return Err(Found(format!(
                        "{shown}: refused, yet it made events {events:?} and clock commands {commands:?}"
                    )));
                }
                Ok(())
            }
            Ok(_) if call.malformed => Err(Found(format!("{shown}: malformed, yet accepted"))),
            Ok(d) => {
                *self.tally.accepted.entry(method.clone()).or_default() += 1;
                self.journal_call(&d, call.by.as_deref());
                self.collect()?;
                if call.undo_after {
                    self.undo_right_after(&shown, &before, call.by)?;
                }
                if call.set_up {
                    self.set_up()?;
                }
                Ok(())
            }
        }
    }

    /// An accepted call journaled as the daemon journals it (the session
    /// has applied it already).
    fn journal_call(&mut self, d: &Decision, by: Option<&str>) {
        let time = LogTime::from_micros(self.t);
        if let Some(by) = by {
            let kind = RecordKind::Note(format!("{DECIDED_BY}{by}"));
            self.journal.push(Record { time, kind });
        }
        self.journal.push(Record {
            time,
            kind: d.record(),
        });
    }

    /// An undo right after an accepted call: accepted, it gives the game back
    /// exactly as it was before the call (`before`, every game's view).
    fn undo_right_after(
        &mut self,
        shown: &str,
        before: &[view::GameView],
        by: Option<String>,
    ) -> Result<(), Found> {
        let undo = Decision::Undo { force: false };
        if let Err(e) = self.live.decide(&undo, by.clone(), self.t) {
            return Err(Found(format!("{shown}: accepted, then its undo refused: {e}")));
        }
        *self.tally.accepted.entry(undo.method().to_string()).or_default() += 1;
        self.tally.undone += 1;
        self.journal_call(&undo, by.as_deref());
        self.collect()?;
        let now = view::games(self.live.core());
        if now.last() != before.last() {
            return Err(Found(format!(
                "{shown}: undone right after, the game is\n{:?}\nnot as before\n{:?}",
                now.last(),
                before.last()
            )));
        }
        Ok(())
    }

    /// The players set the board up as the game under way now stands (after
    /// a new game, a position, a take-back): its dump.
    fn set_up(&mut self) -> Result<(), Found> {
        let Some(g) = self.live.core().game() else {
            return Ok(());
        };
        self.shadow = g.current().clone();
        let board = board::as_seen(self.shadow.board(), g.orientation);
        self.touch(&Touch::Dump(board), true)
    }

    /// The end of the input: the live session finished, the journal written
    /// and read back, replayed, and the two compared.
    fn end(mut self) -> Result<Tally, Found> {
        // The daemon never finishes a board; it has met every deadline up to
        // now, the time of the last input (a refused call is not journaled,
        // yet its time has come). The replay is brought to the same time,
        // as a resume is, and then both are finished alike.
        self.live.advance(self.t);
        self.live.finish();
        self.collect()?;
        let text = to_string(&Header::default(), &self.journal).map_err(|e| format!("journal: {e}"))?;
        let log = parse_log(&text, "journal").map_err(|e| format!("the journal does not read back: {e}"))?;
        if let Some(i) = (0..self.journal.len().max(log.records.len()))
            .find(|&i| self.journal.get(i) != log.records.get(i))
        {
            return Err(Found(format!(
                "the journal reads back otherwise: record {i} {:?} read as {:?}",
                self.journal.get(i),
                log.records.get(i)
            )));
        }
        // What differs is shown with the journal, which `replay` reads.
        self.replayed(&log)
            .map_err(|e| format!("{e}\nthe journal:\n{text}"))?;
        view::only_legal_moves(self.live.core())?;
        self.tally.records = self.journal.len();
        self.tally.plies = self.live.core().games().map(|g| g.ply()).sum();
        Ok(self.tally)
    }

    /// The journal's records through a second session: the same events,
    /// clock commands and games as live.
    fn replayed(&self, log: &SensorLog) -> Result<(), Found> {
        let mut replay = Session::new(Core::new(Config::default()), "journal");
        for (i, r) in log.records.iter().enumerate() {
            replay
                .step(r, log.line_of(i))
                .map_err(|e| format!("replay: {e}"))?;
        }
        replay.advance(self.t);
        replay.finish();
        let (events, commands) = (replay.take_events(), replay.take_clock_commands());
        if let Some(e) = events.windows(2).find(|w| w[1].t_us < w[0].t_us) {
            return Err(Found(format!("replay: event {:?} after {:?}", e[1], e[0])));
        }
        if let Some(i) =
            (0..events.len().max(self.events.len())).find(|&i| events.get(i) != self.events.get(i))
        {
            return Err(Found(format!(
                "live and replay differ at event {i}: live {:?}, replay {:?}",
                self.events.get(i),
                events.get(i)
            )));
        }
        if commands != self.commands {
            return Err(Found(format!(
                "live and replay differ in clock commands: live {:?}, replay {commands:?}",
                self.commands
            )));
        }
        let (live, replayed) = (view::games(self.live.core()), view::games(replay.core()));
        if live != replayed {
            return Err(Found(format!(
                "live and replay differ in games: live {live:?}, replay {replayed:?}"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
