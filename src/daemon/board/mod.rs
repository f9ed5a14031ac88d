//! One board's task: it owns the board's decoder, board model, rules core, recording
//! and outputs outright, and handles one channel of inputs (the serial line's events
//! and D-Bus commands) plus the rules core's deadlines. Nothing else holds its state:
//! D-Bus reads a snapshot the task publishes.
//!
//! This file holds the task's state, its set-up, and the inputs journaled and
//! stepped; each other job is a file of its own: `resume` (the journal opened,
//! the game resumed from it), `run` (the loop), `line` (bytes in, commands out,
//! the dumps and clock reports asked for), `clock` (the clock's commands and
//! display), `commands` (arbiter calls), `publish` (the snapshot, D-Bus, and the
//! publication offered to the sinks), `remember` (what a board remembers, live
//! and on resume), `history` (its decisions and alerts in words), `time` (its
//! log time and the rules core's), `recording` (the journal written).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::civil_date;
use super::config;
use super::roster::{GameTags, Roster};
use crate::api::Sink;
use crate::bus::Publisher;
use crate::clock::control::TimeControl;
use crate::log::{LogTime, Record, RecordKind};
use crate::output::replay::Tags;
use crate::protocol::ClockSide;
use crate::rules::{ClockMode, Config, Event, Settings};
use crate::session::Session;
use recording::Recording;
use time::TaskTime;

mod clock;
mod commands;
pub(super) mod history;
mod line;
mod publish;
mod rebuild;
mod recording;
pub(super) mod remember;
mod resume;
mod run;
#[cfg(test)]
mod tests;
mod time;

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
    /// The journal, written as the inputs come.
    journal: Recording,
    /// Log time, and the rules core's.
    time: TaskTime,
    connected: bool,
    serial: String,
    outgoing: mpsc::Sender<Vec<u8>>,
    /// Where each turn's publication goes.
    outlets: publish::Outlets,
    /// Each game's round, players and broadcast file.
    roster: Roster,
    /// The commands on their way to the clock and what it shows.
    clock: clock::ClockLink,
    /// Events of the task itself (a clock that does not answer), published with
    /// the core's.
    own_events: Vec<Event>,
    /// When the board was last asked for a dump, the clock for its times, the
    /// battery for its charge.
    asked: line::Asked,
    /// The charge a Bluetooth board last reported (percent); `None` for a wired
    /// board, which never answers the question.
    battery: Option<u8>,
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
        let mut rules = self.rules;
        if crate::daemon::fault::broken("flag-ends") {
            rules.flag = crate::rules::FlagPolicy::End;
        }
        Settings::new(rules, self.white_side)
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
        // The broadcast delay's view of the board, rebuilt from its journal
        // at the daemon's start (`rebuild`).
        let window = sinks
            .iter()
            .find_map(|s| s.delay())
            .and_then(|d| d.window(&setup.id));
        let resume::Opened {
            session,
            writer,
            offset_us,
            resumed,
            seed,
            unsaid,
        } = resume::open(&setup, window)?;
        if let Some(seed) = seed {
            tracing::info!(
                "{}: broadcast delay: {} publication(s) of the last {} rebuilt from the journal",
                setup.id,
                seed.since.len(),
                crate::api::delay::words(window.map_or(0, |w| w.as_millis() as u64))
            );
            if let Some(d) = sinks.iter().find_map(|s| s.delay()) {
                d.seed(&setup.id, seed);
            }
        }
        let journal = Recording::new(writer, setup.recording.clone());
        let time = TaskTime::new(offset_us, setup.time_scale);
        let mut task = BoardTask {
            outlets: publish::Outlets::new(setup.id.as_str().into(), publisher, sinks),
            setup,
            session,
            journal,
            time,
            connected: false,
            serial: String::new(),
            battery: resumed.battery,
            outgoing,
            roster: resumed.roster,
            clock: clock::ClockLink::default(),
            own_events: unsaid,
            asked: line::Asked::default(),
            fault: String::new(),
            seen: Vec::new(),
            history: resumed.history,
        };
        task.asked.checked_shown = task.session.core().moves_shown();
        // A time control the recording already has stands (an arbiter may have
        // set it); the configuration's is applied only when it has none.
        if task.session.core().time_control().is_some() {
            task.clock.applied_tc = task.setup.configured.time_control.clone();
        }
        if !resumed.serial.is_empty() {
            task.learn_serial(&resumed.serial);
        }
        task.flush();
        task.outlets.publisher.history(task.history.entries());
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
        let t = self.time.now_us();
        self.journal_step(t, RecordKind::Note(resume::RELOADED_NOTE.into()));
        if changed {
            tracing::info!(
                "{}: games that start from now on are round {}, board {} ({} - {})",
                self.setup.id,
                self.setup.configured.round,
                self.setup.configured.number,
                crate::log::escaped(&self.setup.configured.tags.white),
                crate::log::escaped(&self.setup.configured.tags.black)
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

    /// An input other than bytes (a gap in the line, a note): journaled as
    /// its record, then that record is the session's step, as resume and
    /// `replay` take it.
    fn journal_step(&mut self, t: u64, kind: RecordKind) {
        let record = self.journaled(t, kind);
        // A gap or a note always fits the board.
        let _ = self.session.step(&record, None);
    }

    /// An input at `t`, journaled: the record as the journal has it, at the
    /// time it was written. That is `t`, or a record's written before it when
    /// later (a command sent while the input waited): the session takes it
    /// then too, as resume and `replay` will, and the rules core's time is
    /// brought to it.
    fn journaled(&mut self, t: u64, kind: RecordKind) -> Record {
        let mut record = Record {
            time: LogTime::from_micros(t),
            kind,
        };
        record.time = self.journal.write(&record);
        self.time.given(record.time.micros());
        record
    }

    /// Writes a record that is not an input (a command sent, a decision
    /// already applied) to the journal.
    fn record(&mut self, t: u64, kind: RecordKind) {
        let r = Record {
            time: LogTime::from_micros(t),
            kind,
        };
        self.journal.write(&r);
    }

    /// Writes the journal; once it works again after failing, a fresh dump
    /// is asked for ([`Recording::flush`]).
    fn flush(&mut self) {
        if self.journal.flush() {
            self.asked.dump = None;
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
