//! One board's task: it owns the board's decoder, board model, rules core, recording
//! and outputs outright, and handles one channel of inputs (the serial line's events
//! and D-Bus commands) plus the rules core's deadlines. Nothing else holds its state:
//! D-Bus reads a snapshot the task publishes.
//!
//! This file holds the task's state, its set-up, its time base and its journal;
//! each other job is a file of its own: `run` (the loop), `line` (bytes in,
//! commands out, the dumps and clock reports asked for), `clock` (the clock's
//! commands and display), `commands` (arbiter calls), `publish` (the snapshot,
//! D-Bus, and the publication offered to the sinks). Resume is `daemon::resume`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::civil_date;
use super::config;
use super::roster::{GameTags, Roster};
use crate::api::Sink;
use crate::api::throttle::{Throttle, more};
use crate::bus::Publisher;
use crate::clock::control::TimeControl;
use crate::clock::queue::CommandQueue;
use crate::log::{Flushed, Journal, LogTime, Record, RecordKind};
use crate::output::replay::Tags;
use crate::protocol::{ClockCommand, ClockSide};
use crate::rules::{ClockMode, Config, Event, Settings};
use crate::session::Session;

mod clock;
mod commands;
pub(super) mod history;
mod line;
mod publish;
pub(super) mod remember;
mod run;

/// What a board's task is set up with.
#[derive(Debug, Clone)]
pub struct BoardSetup {
    pub id: String,
    pub device: PathBuf,
    /// What the configuration gives the board now: its round, number, players,
    /// time control (replaced whole when the configuration is read again).
    pub configured: BoardUpdate,
    pub round_format: config::RoundFormat,
    pub rules: Config,
    pub white_side: Option<ClockSide>,
    /// Show the last move and irregularities on the clock.
    pub show_moves: bool,
    /// The board's sensor log: every byte both ways; also the journal it resumes from.
    pub recording: PathBuf,
    /// Game time per wall-clock time (1 but in `demo --speed`; see
    /// `Config::time_scale`).
    pub time_scale: f64,
}

pub struct BoardTask {
    setup: BoardSetup,
    /// The decoder, board model and rules core: every input is journaled as a
    /// record and handed to it (`Session::step`), as resume and `replay` do.
    session: Session,
    writer: Journal,
    /// Journal write errors, said once a minute.
    write_errors: Throttle,
    /// Microseconds of log time at `started`.
    offset_us: u64,
    started: Instant,
    connected: bool,
    serial: String,
    outgoing: mpsc::Sender<Vec<u8>>,
    /// D-Bus: first, inline.
    publisher: Arc<Publisher>,
    /// Then every other sink, offered each turn's publication in this order.
    sinks: Vec<Arc<dyn Sink>>,
    /// The board's id, for the publications.
    name: Arc<str>,
    /// The latest time the rules core was given.
    core_t: u64,
    /// Each game's round, players and broadcast file.
    roster: Roster,
    /// When the text shown on the clock (`ShowText`) is to end (µs of log time).
    text_end: Option<u64>,
    /// The clock's version (major, minor), once it answered: 1 is an XL, which
    /// shows six 7-segment characters instead of text.
    clock_version: Option<(u8, u8)>,
    /// The configured time control last applied (a later one waits for a game
    /// without moves).
    applied_tc: Option<(TimeControl, ClockMode)>,
    /// Clock commands: one in flight until acknowledged, the others waiting.
    clock_queue: CommandQueue,
    /// Clock commands to send at the next chance (the next one after an ack).
    clock_next: Vec<ClockCommand>,
    /// Events of the task itself (a clock that does not answer), published with
    /// the core's.
    own_events: Vec<Event>,
    /// The core's count of moves shown when the board was last asked for a dump.
    checked_shown: u64,
    /// The journal works again after failing: a fresh dump is to be asked for.
    resync_journal: bool,
    /// When a dump, and the clock, were last asked for (µs of log time).
    dump_asked: Option<u64>,
    clock_asked: Option<u64>,
    /// The charge a Bluetooth board last reported (percent); `None` for a wired
    /// board, which never answers the question.
    battery: Option<u8>,
    /// When the battery was last asked for (µs of log time).
    battery_asked: Option<u64>,
    /// What went wrong with this board's task before (`supervise`), shown as
    /// the `Fault` property.
    fault: String,
    /// What the task follows of a record's steps (kept for the next record).
    seen: Vec<Seen>,
    /// The board's decisions and alerts in words (`ctl history`).
    history: history::Book,
}

/// A board-level step the task itself follows (the serial number, the battery,
/// the clock's acknowledgements, dumps, skipped bytes), besides the rules core.
enum Seen {
    Board(crate::board::BoardEvent),
    Skipped(String),
}

/// One rules event of one board, as the daemon's event tap hands it out (the
/// terminal view of `demo`; D-Bus clients get the same as signals).
#[derive(Debug, Clone, PartialEq)]
pub struct Tapped {
    pub board: String,
    pub event: Event,
}

/// The event tap as a sink: every event to whoever listens
/// ([`crate::daemon::Daemon::events`]). A listener that falls 1,024 events
/// behind loses the oldest (`RecvError::Lagged`); nobody listening is no error.
pub struct Tap(pub tokio::sync::broadcast::Sender<Tapped>);

impl Sink for Tap {
    fn offer(&self, p: &Arc<crate::api::Publication>) {
        for e in &p.events {
            let _ = self.0.send(Tapped {
                board: p.board.to_string(),
                event: e.event.clone(),
            });
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    #[error("{0}: cannot open the recording: {1}")]
    Recording(String, std::io::Error),
    #[error("{0}")]
    Journal(String),
}

impl BoardSetup {
    /// The settings that judge the board's recording: the rules core's
    /// configuration and the clock side fixed as white's.
    pub fn settings(&self) -> Settings {
        Settings::new(self.rules, self.white_side)
    }
}

impl BoardTask {
    /// Sets the board up: resumes from its recording when one exists (every move
    /// recorded before a crash or a restart comes back), else starts a new one.
    pub fn new(
        setup: BoardSetup,
        outgoing: mpsc::Sender<Vec<u8>>,
        publisher: Arc<Publisher>,
        sinks: Vec<Arc<dyn Sink>>,
    ) -> Result<BoardTask, BoardError> {
        let super::resume::Opened {
            session,
            writer,
            offset_us,
            resumed,
        } = super::resume::open(&setup)?;
        let mut task = BoardTask {
            name: setup.id.as_str().into(),
            setup,
            session,
            writer,
            write_errors: Throttle::default(),
            offset_us,
            started: Instant::now(),
            connected: false,
            serial: String::new(),
            battery: resumed.battery,
            battery_asked: None,
            outgoing,
            publisher,
            sinks,
            core_t: offset_us,
            roster: resumed.roster,
            text_end: None,
            clock_version: None,
            applied_tc: None,
            clock_queue: CommandQueue::default(),
            clock_next: Vec::new(),
            own_events: Vec::new(),
            checked_shown: 0,
            resync_journal: false,
            dump_asked: None,
            clock_asked: None,
            fault: String::new(),
            seen: Vec::new(),
            history: resumed.history,
        };
        task.checked_shown = task.session.core().moves_shown();
        // A time control the recording already has stands (an arbiter may have
        // set it); the configuration's is applied only when it has none.
        if task.session.core().time_control().is_some() {
            task.applied_tc = task.setup.configured.time_control.clone();
        }
        if !resumed.serial.is_empty() {
            task.learn_serial(&resumed.serial);
        }
        task.flush();
        task.publisher.history(task.history.entries());
        Ok(task)
    }

    /// The tags games starting now take.
    fn new_game_tags(&self) -> GameTags {
        self.roster
            .for_new_games(board_tags(&self.setup), self.setup.round_format)
    }

    /// The board reported its serial number: a configured entry for it gives the
    /// board number and the players.
    fn learn_serial(&mut self, serial: &str) {
        self.serial = serial.to_string();
        let Some(entry) = self
            .setup
            .configured
            .by_serial
            .iter()
            .find(|b| b.serial.as_deref() == Some(serial))
        else {
            return;
        };
        if self.setup.configured.number != entry.number {
            tracing::info!(
                "{}: serial number {serial} is board {} in the configuration",
                self.setup.id,
                entry.number
            );
        }
        self.setup.configured.number = entry.number;
        self.setup.configured.tags.round = self
            .setup
            .round_format
            .tag(self.setup.configured.round, entry.number);
        self.setup
            .configured
            .tags
            .extra
            .insert("Board".into(), entry.number.to_string());
        // The round's pairings for this number, else the entry's players.
        match self.setup.configured.pairings.get(&entry.number) {
            Some(p) => pairing_into(&mut self.setup.configured.tags, p),
            None => {
                if let Some(w) = &entry.white {
                    self.setup.configured.tags.white = w.clone();
                }
                if let Some(b) = &entry.black {
                    self.setup.configured.tags.black = b.clone();
                }
            }
        }
        self.roster
            .retag_unbegun(self.session.core().game(), &self.new_game_tags());
    }

    /// The configuration was read again (SIGHUP): games that start from now on
    /// (and one that has not begun) take its round, number and players; the games
    /// under way keep theirs.
    fn reload(&mut self, update: BoardUpdate) {
        let was = &self.setup.configured;
        let changed = update.round != was.round || update.number != was.number || update.tags != was.tags;
        self.setup.configured = update;
        if !self.serial.is_empty() {
            let serial = self.serial.clone();
            self.learn_serial(&serial);
        }
        // SetPlayers stood until now: the configuration's players stand again.
        self.roster.reloaded();
        let t = self.now_us();
        self.journal_step(t, RecordKind::Note(super::resume::RELOADED_NOTE.into()));
        if changed {
            tracing::info!(
                "{}: games that start from now on are round {}, board {} ({} - {})",
                self.setup.id,
                self.setup.configured.round,
                self.setup.configured.number,
                self.setup.configured.tags.white,
                self.setup.configured.tags.black
            );
        }
        self.roster
            .retag_unbegun(self.session.core().game(), &self.new_game_tags());
    }

    /// Shows `fault` (what went wrong with the board's task before) as the
    /// `Fault` property.
    pub fn with_fault(mut self, fault: String) -> BoardTask {
        self.fault = fault;
        self
    }

    fn now_us(&self) -> u64 {
        self.offset_us + self.game_us(self.started.elapsed())
    }

    /// A wall-clock duration in game time (microseconds).
    fn game_us(&self, d: std::time::Duration) -> u64 {
        let scale = self.setup.time_scale;
        if scale == 1.0 {
            d.as_micros() as u64
        } else {
            (d.as_secs_f64() * scale * 1e6) as u64
        }
    }

    /// Game time (microseconds) as a wall-clock duration.
    fn wall(&self, us: u64) -> std::time::Duration {
        let scale = self.setup.time_scale;
        if scale == 1.0 {
            std::time::Duration::from_micros(us)
        } else {
            std::time::Duration::from_secs_f64(us as f64 / 1e6 / scale)
        }
    }

    /// Now, for the rules core: never before a time it was already given.
    fn core_now(&mut self) -> u64 {
        let t = self.now_us().max(self.core_t);
        self.core_t = t;
        t
    }

    /// The time of bytes read at `at`, for the rules core and the journal: when
    /// they were read, unless the core has already been told of a later time
    /// (a deadline handled while they waited), since its time never goes back.
    fn read_time(&mut self, at: Instant) -> u64 {
        let read = self.offset_us + self.game_us(at.saturating_duration_since(self.started));
        let t = read.max(self.core_t);
        self.core_t = t;
        t
    }

    /// An input other than bytes (a gap in the line, a note): journaled as
    /// its record, then that record is the session's step, as resume and
    /// `replay` take it.
    fn journal_step(&mut self, t: u64, kind: RecordKind) {
        let record = Record {
            time: LogTime::from_micros(t),
            kind,
        };
        self.writer.write(&record);
        // A gap or a note always fits the board.
        let _ = self.session.step(&record, None);
    }

    /// Writes a record that is not an input (a command sent, a decision
    /// already applied) to the journal.
    fn record(&mut self, t: u64, kind: RecordKind) {
        let r = Record {
            time: LogTime::from_micros(t),
            kind,
        };
        self.writer.write(&r);
    }

    /// Writes the journal. While the disk fails, records are held (and the error
    /// said once a minute); when it works again they are written, and a fresh dump
    /// is asked for, so that the journal is back in step even if some were dropped.
    fn flush(&mut self) {
        match self.writer.flush() {
            Flushed::Written => {}
            Flushed::Failing(e) => {
                if let Some(n) = self.write_errors.allow() {
                    tracing::error!(
                        "{}: cannot write: {e}{}; the game goes on and is published",
                        self.setup.recording.display(),
                        more(n)
                    );
                }
            }
            Flushed::Recovered { dropped } => {
                self.write_errors.reset();
                tracing::warn!(
                    "{}: written again ({dropped} records lost); asking the board for a fresh dump",
                    self.setup.recording.display()
                );
                self.dump_asked = None;
                self.resync_journal = true;
            }
        }
    }
}

/// The round, board number and players the configuration gives games starting now.
pub(super) fn board_tags(setup: &BoardSetup) -> GameTags {
    GameTags {
        round: setup.configured.round,
        board: setup.configured.number,
        tags: setup.configured.tags.clone(),
    }
}

/// A pairing's players and tags (`White`, `Black`, `WhiteElo`, ...) into `tags`.
pub fn pairing_into(tags: &mut Tags, pairing: &std::collections::BTreeMap<String, String>) {
    for name in crate::api::PAIRING_TAGS {
        tags.extra.remove(name);
    }
    for (name, value) in pairing {
        match name.as_str() {
            "White" => tags.white = value.clone(),
            "Black" => tags.black = value.clone(),
            _ if value.is_empty() => {}
            _ => {
                tags.extra.insert(name.clone(), value.clone());
            }
        }
    }
}

/// What the configuration gives a board: at its set-up, and whenever the
/// configuration is read again (then its task is told, and takes it whole).
#[derive(Debug, Clone)]
pub struct BoardUpdate {
    /// The round: games starting now belong to it (`round-N/`).
    pub round: u32,
    /// Board number in the round.
    pub number: u32,
    /// The tags games starting now take (`Round` as `round_format` says,
    /// `Board` the number).
    pub tags: Tags,
    /// Configured boards known by serial number: when this board reports one of
    /// them, it takes that entry's number and players.
    pub by_serial: Vec<config::Board>,
    /// The configured time control, and who keeps the time.
    pub time_control: Option<(TimeControl, ClockMode)>,
    /// The configuration's pairings by board number (for a board that learns
    /// its number from its serial number).
    pub pairings: std::collections::BTreeMap<u32, std::collections::BTreeMap<String, String>>,
}

/// Today's date for PGN (`YYYY.MM.DD`).
pub fn pgn_date() -> String {
    let (y, m, d) = civil_date();
    format!("{y:04}.{m:02}.{d:02}")
}
