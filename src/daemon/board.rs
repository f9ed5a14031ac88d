//! One board's task: it owns the board's decoder, board model, rules core, recording
//! and outputs outright, and handles one channel of inputs (the serial line's events
//! and D-Bus commands) plus the rules core's deadlines. Nothing else holds its state:
//! D-Bus reads a snapshot the task publishes.

use std::path::PathBuf;
use std::time::Instant;

use tokio::sync::{broadcast, mpsc, watch};

use super::config;
use super::device::DeviceEvent;
use super::roster::{GameTags, Roster};
use super::throttle::{Throttle, more};
use super::{Input, civil_date};
use crate::board::{BoardEvent, BoardInfo, BoardState};
use crate::bus::{BusError, Command, Publisher, Snapshot};
use crate::clock::control::TimeControl;
use crate::clock::queue::{CommandQueue, Due, RESENDS};
use crate::log::{Flushed, Journal, LogTime, Record, RecordKind};
use crate::output::live::LiveMsg;
use crate::output::replay::{Tags, game_pgn};
use crate::protocol::{AckKind, ClockCommand, ClockSide, Decoded, Decoder, HostCommand};
use crate::rules::{ClockMode, Config, Core, Decision, Event, EventKind, IrregularKind, Refused, Settings};

/// What a board's task is set up with.
#[derive(Debug, Clone)]
pub struct BoardSetup {
    pub id: String,
    pub device: PathBuf,
    /// Board number in the round.
    pub number: u32,
    /// The round: games starting now belong to it (`round-N/`).
    pub round: u32,
    /// The tags games starting now take (`Round` as `round_format` says,
    /// `Board` the number).
    pub tags: Tags,
    pub round_format: config::RoundFormat,
    pub rules: Config,
    pub white_side: Option<ClockSide>,
    /// The configured time control, and who keeps the time.
    pub time_control: Option<(TimeControl, ClockMode)>,
    /// Show the last move and irregularities on the clock.
    pub show_moves: bool,
    /// The board's sensor log: every byte both ways; also the journal it resumes from.
    pub recording: PathBuf,
    /// Configured boards known by serial number: when this board reports one of
    /// them, it takes that entry's number and players.
    pub by_serial: Vec<config::Board>,
    /// Game time per wall-clock time (1 but in `demo --speed`; see
    /// `Config::time_scale`).
    pub time_scale: f64,
    /// The configuration's pairings by board number (for a board that learns
    /// its number from its serial number).
    pub pairings: std::collections::BTreeMap<u32, std::collections::BTreeMap<String, String>>,
}

pub struct BoardTask {
    setup: BoardSetup,
    core: Core,
    decoder: Decoder,
    board: BoardState,
    writer: Journal,
    /// Journal write errors, said once a minute.
    write_errors: Throttle,
    /// Microseconds of log time at `started`.
    offset_us: u64,
    started: Instant,
    connected: bool,
    serial: String,
    outgoing: mpsc::Sender<Vec<u8>>,
    publisher: std::sync::Arc<Publisher>,
    live: Option<mpsc::Sender<LiveMsg>>,
    tap: Option<broadcast::Sender<Tapped>>,
    /// The network's event history (when the HTTP server runs).
    feed: Option<std::sync::Arc<crate::net::EventLog>>,
    mqtt: Option<crate::mqtt::Outbox>,
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
}

/// How often a board that reports its battery is asked again, while it plays
/// (never while idle: asking is tied to the board's own activity).
const BATTERY_AGAIN_US: u64 = 300_000_000;

/// One rules event of one board, as the daemon's event tap hands it out (the
/// terminal view of `demo`; D-Bus clients get the same as signals).
#[derive(Debug, Clone, PartialEq)]
pub struct Tapped {
    pub board: String,
    pub event: Event,
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
        publisher: std::sync::Arc<Publisher>,
        live: Option<mpsc::Sender<LiveMsg>>,
    ) -> Result<BoardTask, BoardError> {
        let mut core = Core::with_settings(&setup.settings());
        let super::resume::Opened {
            writer,
            offset_us,
            resumed,
        } = super::resume::open(&setup, &mut core)?;
        let mut task = BoardTask {
            setup,
            core,
            decoder: Decoder::new(),
            board: BoardState::new(),
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
            live,
            tap: None,
            feed: None,
            mqtt: None,
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
        };
        task.checked_shown = task.core.moves_shown();
        // A time control the recording already has stands (an arbiter may have
        // set it); the configuration's is applied only when it has none.
        if task.core.time_control().is_some() {
            task.applied_tc = task.setup.time_control.clone();
        }
        if !resumed.serial.is_empty() {
            task.learn_serial(&resumed.serial);
        }
        task.flush();
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
            .by_serial
            .iter()
            .find(|b| b.serial.as_deref() == Some(serial))
        else {
            return;
        };
        if self.setup.number != entry.number {
            tracing::info!(
                "{}: serial number {serial} is board {} in the configuration",
                self.setup.id,
                entry.number
            );
        }
        self.setup.number = entry.number;
        self.setup.tags.round = self.setup.round_format.tag(self.setup.round, entry.number);
        self.setup
            .tags
            .extra
            .insert("Board".into(), entry.number.to_string());
        // The round's pairings for this number, else the entry's players.
        match self.setup.pairings.get(&entry.number) {
            Some(p) => pairing_into(&mut self.setup.tags, p),
            None => {
                if let Some(w) = &entry.white {
                    self.setup.tags.white = w.clone();
                }
                if let Some(b) = &entry.black {
                    self.setup.tags.black = b.clone();
                }
            }
        }
        self.roster.retag_unbegun(self.core.game(), &self.new_game_tags());
    }

    /// The configuration was read again (SIGHUP): games that start from now on
    /// (and one that has not begun) take its round, number and players; the games
    /// under way keep theirs.
    fn reload(&mut self, update: BoardUpdate) {
        let BoardUpdate {
            round,
            number,
            tags,
            by_serial,
            time_control,
            pairings,
        } = update;
        self.setup.time_control = time_control;
        self.setup.pairings = pairings;
        let changed = round != self.setup.round || number != self.setup.number || tags != self.setup.tags;
        self.setup.round = round;
        self.setup.number = number;
        self.setup.tags = tags;
        self.setup.by_serial = by_serial;
        if !self.serial.is_empty() {
            let serial = self.serial.clone();
            self.learn_serial(&serial);
        }
        // SetPlayers stood until now: the configuration's players stand again.
        self.roster.reloaded();
        let t = self.now_us();
        self.record(t, RecordKind::Note(super::resume::RELOADED_NOTE.into()));
        if changed {
            tracing::info!(
                "{}: games that start from now on are round {}, board {} ({} - {})",
                self.setup.id,
                self.setup.round,
                self.setup.number,
                self.setup.tags.white,
                self.setup.tags.black
            );
        }
        self.roster.retag_unbegun(self.core.game(), &self.new_game_tags());
    }

    /// Shows `fault` (what went wrong with the board's task before) as the
    /// `Fault` property.
    pub fn with_fault(mut self, fault: String) -> BoardTask {
        self.fault = fault;
        self
    }

    /// Also hands every rules event to `tap`.
    pub fn with_tap(mut self, tap: broadcast::Sender<Tapped>) -> BoardTask {
        self.tap = Some(tap);
        self
    }

    /// Also appends every rules event to the network's event history.
    pub fn with_feed(mut self, feed: Option<std::sync::Arc<crate::net::EventLog>>) -> BoardTask {
        self.feed = feed;
        self
    }

    /// Also hands every rules event and every change of the properties to the
    /// MQTT link (which never makes the board wait).
    pub fn with_mqtt(mut self, mqtt: Option<crate::mqtt::Outbox>) -> BoardTask {
        self.mqtt = mqtt;
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

    /// Sends a command to the board; a clock command goes through the clock's
    /// queue (sent now only when no other waits for its acknowledgement).
    async fn send(&mut self, cmd: HostCommand) {
        match cmd {
            HostCommand::Clock(c) => {
                let t = self.now_us();
                if let Some(c) = self.clock_queue.push(c, t) {
                    self.send_now(HostCommand::Clock(c)).await;
                }
            }
            other => self.send_now(other).await,
        }
    }

    /// Writes a command on the line now, and records it.
    async fn send_now(&mut self, cmd: HostCommand) {
        let bytes = cmd.encode();
        let t = self.now_us();
        self.record(t, RecordKind::Tx(bytes.clone()));
        let _ = self.outgoing.send(bytes).await;
    }

    /// The snapshot D-Bus shows.
    pub fn snapshot(&self) -> Snapshot {
        let game = self.core.game();
        let default = self.new_game_tags();
        let tags = game
            .and_then(|g| self.roster.tags_of(g.number))
            .unwrap_or(&default);
        let (white, black, running) = self.core.clock().unwrap_or((0, 0, "none"));
        let status = match game {
            _ if !self.connected => "disconnected",
            None => "waiting",
            Some(g) if g.is_over() => "finished",
            Some(_) if self.core.irregularity().is_some() => "irregular",
            Some(_) => "playing",
        };
        Snapshot {
            connected: self.connected,
            device: self.setup.device.display().to_string(),
            serial_number: self.serial.clone(),
            orientation: game.map(|g| g.orientation.name().to_string()).unwrap_or_default(),
            status: status.into(),
            fen: game.map(|g| g.fen()).unwrap_or_default(),
            moves: game
                .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
                .unwrap_or_default(),
            pgn: game
                .map(|g| match self.roster.pgn_of(g.number) {
                    Some(p) if !p.is_empty() => p.to_string(),
                    _ => game_pgn(g, &tags.tags),
                })
                .unwrap_or_default(),
            last_move: game
                .and_then(|g| g.moves.last())
                .map(|m| m.uci.clone())
                .unwrap_or_default(),
            white_clock_ms: white as i64,
            black_clock_ms: black as i64,
            clock_running: running.into(),
            result: game
                .and_then(|g| g.result)
                .map(|(r, _)| r.to_string())
                .unwrap_or_default(),
            termination: game
                .and_then(|g| g.result)
                .map(|(_, t)| t.to_string())
                .unwrap_or_default(),
            irregularity: self
                .core
                .irregularity()
                .map(|k| k.name().to_string())
                .unwrap_or_default(),
            event: tags.tags.event.clone(),
            round: tags.round.to_string(),
            board_number: tags.board,
            white: tags.tags.white.clone(),
            black: tags.tags.black.clone(),
            time_control: self.core.time_control().map(TimeControl::pgn).unwrap_or_default(),
            tags: tags.tags.extra.clone(),
            placement: if self.board.placement().is_some() {
                let orientation = game.map_or(crate::board::Orientation::Normal, |g| g.orientation);
                orientation.real_board(self.core.sensors()).to_string()
            } else {
                String::new()
            },
            start_fen: game.map(|g| g.start_fen.clone()).unwrap_or_default(),
            has_clock: self.core.clock().is_some(),
            battery: self.battery,
            settled: game.map_or(0, |g| g.settled_plies()),
            fault: self.fault.clone(),
        }
    }

    /// Publishes what changed: signals, snapshot, and the broadcast files.
    /// D-Bus first: the signals (a move's signal is what clients wait for), then
    /// the snapshot, the properties (it holds the game's PGN as it is now; property
    /// reads wait for it); then the log, the journal's notes, MQTT, the network and
    /// the broadcast files.
    async fn publish(&mut self, events: Vec<Event>) {
        self.publisher.signal(&events).await;
        // Every game's file, the current one's and any that just ended (the
        // snapshot's PGN comes from here).
        let default = self.new_game_tags();
        let current = self.core.game().map(|g| g.number);
        let (notes, files) = self.roster.update(self.core.games(), current, &default);
        let snap = self.snapshot();
        let changed = self.publisher.differs(&snap);
        let state = (changed && self.mqtt.is_some()).then(|| snap.clone());
        // After signals, always: property reads wait for this snapshot.
        if changed || !events.is_empty() {
            self.publisher.publish(snap).await;
        }
        for e in &events {
            if !matches!(e.kind, EventKind::Touch { .. } | EventKind::Clock { .. }) {
                tracing::info!(board = %self.setup.id, "{}", serde_json::to_string(e).unwrap_or_default());
            }
        }
        if let Some(tap) = &self.tap {
            for e in &events {
                // No receiver is not an error: nobody is watching.
                let _ = tap.send(Tapped {
                    board: self.setup.id.clone(),
                    event: e.clone(),
                });
            }
        }
        // The tags of a game seen for the first time go to the journal at once.
        if !notes.is_empty() {
            let t = self.now_us();
            for n in notes {
                self.record(t, RecordKind::Note(n));
            }
            self.flush();
        }
        if changed || !events.is_empty() {
            if let Some(mqtt) = &self.mqtt {
                // The link's task ended only if the daemon is stopping.
                let _ = mqtt.send(crate::mqtt::Update {
                    board: self.setup.id.clone(),
                    events: events.clone(),
                    state,
                });
            }
        }
        // The network after D-Bus: its many clients wake up once the signals are out.
        if let Some(feed) = &self.feed {
            for e in &events {
                feed.push(&self.setup.id, e);
            }
        }
        if let Some(live) = &self.live {
            for m in files {
                let _ = live.send(m).await;
            }
        }
    }

    /// Bytes from the board. Bytes the decoder has to skip are a line fault for
    /// the rules core (and a comment in the recording; `replay` finds them in the
    /// same bytes).
    fn bytes(&mut self, bytes: &[u8], t: u64) {
        self.record(t, RecordKind::Rx(bytes.to_vec()));
        for d in self.decoder.feed(bytes) {
            match d {
                Decoded::Message(m) => {
                    let dump = matches!(m, crate::protocol::BoardMessage::BoardDump(_));
                    for ev in self.board.apply(&m) {
                        match &ev {
                            BoardEvent::Info(BoardInfo::SerialNumber(s)) => self.learn_serial(s),
                            BoardEvent::Info(BoardInfo::Battery { percent }) => {
                                self.battery = Some((*percent).min(100))
                            }
                            BoardEvent::ClockAck(AckKind::Command { command, .. }) => {
                                self.clock_acked(*command, t)
                            }
                            BoardEvent::ClockAck(AckKind::Version { major, minor }) => {
                                self.clock_version = Some((*major, *minor));
                                self.clock_acked(ClockCommand::Version.code(), t)
                            }
                            _ => {}
                        }
                        self.core.input(&ev, t);
                    }
                    if dump && self.core.confirming() {
                        // This dump needs a second that agrees: asked for at once.
                        self.dump_asked = None;
                    }
                }
                Decoded::Skipped(s) => {
                    tracing::warn!(board = %self.setup.id, "line fault: {s}; asking for the board");
                    self.writer.comment(&format!("line fault: {s}"));
                    // The bytes lost may have been the dump asked for: ask again
                    // soon (not for every skipped byte of a burst).
                    if self
                        .dump_asked
                        .is_some_and(|a| t >= a + self.setup.rules.release_ms * 1000)
                    {
                        self.dump_asked = None;
                    }
                    self.core.line_fault(t);
                }
            }
        }
    }

    /// The clock acknowledged a command: the next waiting one goes.
    fn clock_acked(&mut self, code: u8, t: u64) {
        if let Some(next) = self.clock_queue.acked(code, t) {
            self.clock_next.push(next);
        }
    }

    /// Clock commands due: the next after an ack, a resend, or one given up on
    /// (a `clock_unresponsive` event).
    async fn drive_clock(&mut self) {
        let t = self.now_us();
        let mut send: Vec<ClockCommand> = std::mem::take(&mut self.clock_next);
        for due in self.clock_queue.due(t) {
            match due {
                Due::Send(c) => send.push(c),
                Due::GaveUp(c) => {
                    let hex: Vec<String> = HostCommand::Clock(c)
                        .encode()
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect();
                    let command = hex.join(" ");
                    tracing::warn!(board = %self.setup.id, "the clock did not acknowledge {command} ({} tries): going on without it", RESENDS + 1);
                    self.own_events.push(Event {
                        t: t as f64 / 1e6,
                        kind: EventKind::ClockUnresponsive { command },
                    });
                }
            }
        }
        if self.connected {
            for c in send {
                self.send_now(HostCommand::Clock(c)).await;
            }
        }
    }

    /// Asks the board for what the rules core needs to stay in step: a dump for
    /// every new move shown (a field update corrupted into another legal move is
    /// then amended before the move is completed), a dump when the core wants one
    /// (after a gap, on an unexplained or irregular board, to confirm a press),
    /// again while it still does; a clock report to confirm a flag or a press.
    async fn keep_in_step(&mut self) {
        if !self.connected {
            return;
        }
        let t = self.now_us();
        let again = self.ask_again_us();
        let due = |asked: Option<u64>| asked.is_none_or(|a| t >= a + again);
        let shown = self.core.moves_shown();
        let resync = std::mem::take(&mut self.resync_journal);
        if resync || shown != self.checked_shown || (self.core.wants_dump() && due(self.dump_asked)) {
            self.checked_shown = shown;
            self.dump_asked = Some(t);
            self.send(HostCommand::SendBoard).await;
        }
        if self.core.wants_clock() && due(self.clock_asked) {
            self.clock_asked = Some(t);
            self.send(HostCommand::SendClock).await;
        }
        // The battery: once the board has answered its serial number, and again
        // every few minutes of play for a board that reports one (a wired board
        // never answers, and is not asked again).
        let battery_due = match self.battery_asked {
            None => !self.serial.is_empty(),
            Some(a) => self.battery.is_some() && t >= a + BATTERY_AGAIN_US,
        };
        if battery_due {
            self.battery_asked = Some(t);
            self.send(HostCommand::SendBattery).await;
        }
    }

    /// When `keep_in_step` next has something to ask again (µs of log time).
    fn next_ask(&self) -> Option<u64> {
        if !self.connected {
            return None;
        }
        let again = self.ask_again_us();
        let dump = self
            .core
            .wants_dump()
            .then(|| self.dump_asked.map_or(0, |a| a + again));
        let clock = self
            .core
            .wants_clock()
            .then(|| self.clock_asked.map_or(0, |a| a + again));
        dump.into_iter().chain(clock).min()
    }

    /// While the core still wants a dump or a clock report, it is asked for again
    /// every irregularity threshold (2 s by default; scaled with the thresholds,
    /// as `demo --speed` scales them). After skipped bytes, a dump asked for more
    /// than the release threshold ago is asked for again at once.
    fn ask_again_us(&self) -> u64 {
        self.setup.rules.irregular_ms.max(1) * 1000
    }

    /// An arbiter's call. Accepted, it is part of the record: an `arbiter` record
    /// in the recording, which resume and `replay` apply as it was live. Refused,
    /// it is logged briefly and changes nothing.
    async fn command(&mut self, cmd: Command, by: Option<String>) -> Result<(), BusError> {
        // The decision is journaled at the time it was applied: resume and
        // `replay` apply it at that time too.
        let t = self.core_now();
        let r = self.apply(&cmd, t).await;
        match &r {
            Ok(()) => {
                // A call the core does not take (a text on the clock) may have
                // written to the board meanwhile: it is journaled after that.
                let t = if cmd.decision().is_some() {
                    t
                } else {
                    self.core_now()
                };
                let (method, args) = cmd.record();
                self.journal_decision(t, method, args, by.clone());
                let by = by.map(|b| format!(" (by {b})")).unwrap_or_default();
                tracing::info!(board = %self.setup.id, "arbiter: {}{by}", crate::log::clip_to(&cmd_text(&cmd), 200));
            }
            Err(e) => {
                let (method, _) = cmd.record();
                tracing::warn!(board = %self.setup.id, "{method} refused: {}", crate::log::clip_to(&e.to_string(), 200));
            }
        }
        r
    }

    /// An accepted decision into the journal (who decided, when known, in a note
    /// before it) and the `arbiter` event: resume and `replay` apply the record
    /// as it was applied live.
    fn journal_decision(&mut self, t: u64, method: &str, args: Vec<serde_json::Value>, by: Option<String>) {
        if let Some(by) = &by {
            self.record(t, RecordKind::Note(format!("{}{by}", crate::log::DECIDED_BY)));
        }
        self.record(
            t,
            RecordKind::Arbiter {
                method: method.to_string(),
                args: args.iter().map(ToString::to_string).collect(),
            },
        );
        self.core.arbiter_call(method, args, by, t);
    }

    async fn apply(&mut self, cmd: &Command, t: u64) -> Result<(), BusError> {
        if let Some(d) = cmd.decision() {
            if matches!(
                cmd,
                Command::SetTimeControl(_) | Command::SetClock(..) | Command::AddTime(..)
            ) {
                self.connected_or()?;
            }
            return self.core.arbiter(&d, t).map_err(|e| match e {
                Refused::InvalidArgument(m) => BusError::InvalidArgument(m),
                Refused::NoGame(m) => BusError::NoGame(m),
                Refused::GameUnderWay(m) => BusError::GameUnderWay(m),
            });
        }
        match cmd.clone() {
            // Applied above as decisions.
            Command::NewGame(_)
            | Command::SetPosition(_)
            | Command::Reinstate(_)
            | Command::SetResult(_)
            | Command::SetTimeControl(_)
            | Command::SetClock(..)
            | Command::AddTime(..) => Ok(()),
            Command::SetPlayers(white, black) => {
                for name in [&white, &black] {
                    if name.chars().count() > 200 || name.chars().any(char::is_control) {
                        return Err(BusError::InvalidArgument(format!(
                            "`{}`: a player's name is one line of at most 200 characters",
                            crate::log::clip_to(name, 40)
                        )));
                    }
                }
                let default = self.new_game_tags();
                self.roster
                    .set_players(self.core.game(), &white, &black, &default);
                Ok(())
            }
            Command::SetTags(tags) => {
                crate::bus::check_tags(&tags, false).map_err(BusError::InvalidArgument)?;
                let default = self.new_game_tags();
                self.roster.set_tags(self.core.game(), &tags, &default);
                Ok(())
            }
            Command::SetPairing(round, tags) => {
                crate::bus::check_pairing(&tags).map_err(BusError::InvalidArgument)?;
                self.roster.set_pairing(round, &tags);
                let default = self.new_game_tags();
                tracing::info!(
                    "{}: games that start from now on are round {}, board {} ({} - {})",
                    self.setup.id,
                    default.round,
                    default.board,
                    default.tags.white,
                    default.tags.black
                );
                self.roster.retag_unbegun(self.core.game(), &default);
                Ok(())
            }
            Command::ShowText(text, seconds) => {
                if !text.is_ascii() || text.len() > 8 {
                    return Err(BusError::InvalidArgument(format!(
                        "`{}`: the clock shows up to 8 ASCII characters",
                        crate::log::clip_to(&text, 20)
                    )));
                }
                self.connected_or()?;
                self.show_text(&text, Some(seconds)).await;
                Ok(())
            }
        }
    }

    /// Shows a text on the clock for `seconds` (none: until replaced or ended).
    /// The text's End is this task's to send (and record) when it is due; a later
    /// text replaces this one and its End. An XL shows six 7-segment characters.
    async fn show_text(&mut self, text: &str, seconds: Option<u32>) {
        let cmd = match self.clock_version {
            Some((major, _)) if major < 2 => crate::clock::segments(text, false),
            _ => ClockCommand::text(text, false),
        };
        self.send(HostCommand::Clock(cmd)).await;
        self.text_end = seconds.map(|s| self.now_us() + u64::from(s.max(1)) * 1_000_000);
    }

    /// `[clock] show_moves`: the last move after each completed move (3 s), the
    /// irregularity while the board is irregular, the times again once resolved.
    async fn show_on_clock(&mut self, events: &[Event]) {
        if !self.setup.show_moves || !self.connected {
            return;
        }
        for e in events {
            match &e.kind {
                EventKind::MoveCompleted { ply, .. } => {
                    let san = self
                        .core
                        .game()
                        .and_then(|g| g.moves.get((*ply as usize).checked_sub(1)?))
                        .map(|m| m.san.clone());
                    if let Some(san) = san {
                        self.show_text(&san, Some(3)).await;
                    }
                }
                EventKind::Irregular { kind, .. } => {
                    let text = match kind {
                        IrregularKind::IllegalMove => "ILLEGAL",
                        IrregularKind::Displaced => "PIECES?",
                        IrregularKind::PromotionIncomplete => "PROMOTE?",
                        IrregularKind::ClockWithoutMove => "NO MOVE",
                        IrregularKind::LostTrack => "CHECK",
                        IrregularKind::AfterEnd => "GAMEOVER",
                    };
                    self.show_text(text, None).await;
                }
                EventKind::Resolved { .. } => {
                    self.text_end = None;
                    self.send(HostCommand::Clock(ClockCommand::End)).await;
                }
                _ => {}
            }
        }
    }

    /// The clock commands the rules core made (drive mode, an arbiter's time, a
    /// penalty): through the clock's queue while connected.
    async fn send_core_clock(&mut self) {
        for c in self.core.take_clock_commands() {
            if self.connected {
                self.send(HostCommand::Clock(c)).await;
            }
        }
    }

    /// The configured time control, applied when it is new and no game has moves
    /// under way (until then the game goes on at its own): a decision with its
    /// mode, journaled as an `arbiter` record like an arbiter's, so that resume
    /// and `replay` apply it as it was applied live (in report mode it names the
    /// periods and the `TimeControl` tag; in drive mode the daemon keeps the time).
    fn apply_configured_time_control(&mut self) {
        if self.setup.time_control.is_none() || self.setup.time_control == self.applied_tc {
            return;
        }
        if self.core.game().is_some_and(|g| g.ply() > 0 && !g.is_over()) {
            return;
        }
        let Some((tc, mode)) = self.setup.time_control.clone() else {
            return;
        };
        let t = self.core_now();
        let d = Decision::SetTimeControl { spec: tc.pgn(), mode };
        if self.core.arbiter(&d, t).is_ok() {
            let program = match mode {
                ClockMode::Drive => "",
                ClockMode::Report => " (the clock runs its own program)",
            };
            self.record(
                t,
                RecordKind::Note(format!(
                    "time control {} from the configuration{program}",
                    tc.pgn()
                )),
            );
            self.journal_decision(t, d.method(), d.args(), None);
        }
        tracing::info!(board = %self.setup.id, "time control {}{}", tc.pgn(), if mode == ClockMode::Drive { ", the daemon drives the clock" } else { "" });
        self.applied_tc = Some((tc, mode));
    }

    fn connected_or(&self) -> Result<(), BusError> {
        if self.connected {
            Ok(())
        } else {
            Err(BusError::NotConnected(format!(
                "{} is not connected",
                self.setup.device.display()
            )))
        }
    }

    /// Runs until `stop` turns true or every sender is gone; then flushes.
    /// A panic in it leaves `input` to `supervise`, which starts the board again.
    pub async fn run(mut self, input: &mut mpsc::Receiver<Input>, mut stop: watch::Receiver<bool>) {
        self.publish(Vec::new()).await;
        let mut immediate = 0u32;
        // An arbiter's call is answered once its change is on disk and published.
        let mut answer = None;
        loop {
            let next = [
                self.core.next_deadline(),
                self.next_ask(),
                self.text_end,
                self.clock_queue.deadline(),
            ]
            .into_iter()
            .flatten()
            .min();
            let now = self.now_us();
            // A deadline already due is handled at once, not by a timer (which
            // would round it up to the runtime's next millisecond), unless input is
            // waiting: input goes first, and the core handles the deadlines before
            // its time itself. At most a few times in a row, so that a deadline that
            // did not move on could never spin here.
            let wake = if next.is_some_and(|d| d <= now) && immediate < 8 {
                immediate += 1;
                match input.try_recv() {
                    Ok(msg) => Wake::Input(Some(msg)),
                    Err(mpsc::error::TryRecvError::Empty) => Wake::Deadline,
                    Err(mpsc::error::TryRecvError::Disconnected) => Wake::Input(None),
                }
            } else {
                immediate = 0;
                let wait = self.wall(next.unwrap_or(now).saturating_sub(now));
                let sleep = async {
                    match next {
                        Some(_) => tokio::time::sleep(wait).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    biased;
                    _ = stop.changed() => Wake::Stop,
                    msg = input.recv() => Wake::Input(msg),
                    _ = sleep => Wake::Deadline,
                }
            };
            match wake {
                Wake::Input(msg) => {
                    let Some(msg) = msg else { break };
                    let t = self.now_us();
                    match msg {
                        Input::Device(DeviceEvent::Connected(device)) => {
                            tracing::info!("{}: connected", device.display());
                            self.connected = true;
                            let note = if device == self.setup.device {
                                "connected".to_string()
                            } else {
                                format!("connected on {}", device.display())
                            };
                            self.setup.device = device;
                            // What the board did while away is not known: a gap,
                            // until the dump the start-up commands ask for.
                            self.record(t, RecordKind::Gap(note));
                            self.core_t = self.core_t.max(t);
                            self.core.gap(t);
                            for cmd in crate::device::serial::start_up_commands() {
                                self.send(cmd).await;
                            }
                            self.dump_asked = Some(t);
                            self.checked_shown = self.core.moves_shown();
                        }
                        Input::Device(DeviceEvent::Bytes(b, at)) => {
                            let t = self.read_time(at);
                            self.bytes(&b, t);
                            // A deadline the bytes made due already (a placement
                            // with `release_ms = 0`) is met in this turn, not the next.
                            let now = self.core_now();
                            if self.core.next_deadline().is_some_and(|d| d <= now) {
                                self.core.advance(now);
                            }
                        }
                        Input::Device(DeviceEvent::Disconnected(why)) => {
                            tracing::warn!(
                                "{}: disconnected ({why}); the game is kept",
                                self.setup.device.display()
                            );
                            self.connected = false;
                            self.clock_queue.clear();
                            self.clock_next.clear();
                            self.record(t, RecordKind::Note(format!("disconnected: {why}")));
                        }
                        Input::Reload(update) => self.reload(update),
                        Input::Command((cmd, by, reply)) => {
                            let r = self.command(cmd, by).await;
                            // On disk before the caller hears it was accepted: a
                            // decision acknowledged survives a SIGKILL right after.
                            self.flush();
                            answer = Some((reply, r));
                        }
                    }
                }
                Wake::Deadline => {
                    let t = self.core_now();
                    self.core.advance(t);
                    if self.text_end.is_some_and(|e| e <= t) {
                        self.text_end = None;
                        if self.connected {
                            self.send(HostCommand::Clock(ClockCommand::End)).await;
                        }
                    }
                }
                Wake::Stop => break,
            }
            self.apply_configured_time_control();
            self.send_core_clock().await;
            self.drive_clock().await;
            self.flush();
            let mut events = self.core.take_events();
            events.append(&mut self.own_events);
            self.show_on_clock(&events).await;
            self.publish(events).await;
            // Answered after the publication: a caller reading a property once
            // its call returns sees what the call changed.
            if let Some((reply, r)) = answer.take() {
                let _ = reply.send(r);
            }
            // Asked of the board once the publication is out: a move's signal does
            // not wait for the dump that checks it.
            self.keep_in_step().await;
            self.flush();
            super::fault::after_turn(
                &self.setup.id,
                self.core.game().map_or(0, |g| g.moves.len() as u64),
            );
        }
        let t = self.now_us();
        self.record(t, RecordKind::Note("stopped".into()));
        self.flush();
        let events = self.core.take_events();
        self.publish(events).await;
    }
}

/// What woke a board's task. It lives on the stack for one turn of the loop;
/// boxing the input would allocate for every read.
#[allow(clippy::large_enum_variant)]
enum Wake {
    Input(Option<Input>),
    Deadline,
    Stop,
}

/// The round, board number and players the configuration gives games starting now.
pub(super) fn board_tags(setup: &BoardSetup) -> GameTags {
    GameTags {
        round: setup.round,
        board: setup.number,
        tags: setup.tags.clone(),
    }
}

/// A pairing's players and tags (`White`, `Black`, `WhiteElo`, ...) into `tags`.
pub fn pairing_into(tags: &mut Tags, pairing: &std::collections::BTreeMap<String, String>) {
    for name in crate::bus::PAIRING_TAGS {
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

/// A call as the log shows it: `Method arg arg`.
fn cmd_text(cmd: &Command) -> String {
    let (method, args) = cmd.record();
    let args: Vec<String> = args.iter().map(ToString::to_string).collect();
    format!("{method} {}", args.join(" "))
}

/// What a board's task is told when the configuration is read again.
#[derive(Debug, Clone)]
pub struct BoardUpdate {
    pub round: u32,
    pub number: u32,
    pub tags: Tags,
    pub by_serial: Vec<config::Board>,
    pub time_control: Option<(TimeControl, ClockMode)>,
    pub pairings: std::collections::BTreeMap<u32, std::collections::BTreeMap<String, String>>,
}

/// Today's date for PGN (`YYYY.MM.DD`).
pub fn pgn_date() -> String {
    let (y, m, d) = civil_date();
    format!("{y:04}.{m:02}.{d:02}")
}
