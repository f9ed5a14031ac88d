//! The board's line: bytes in (decoded, journaled, given to the rules core),
//! commands out, and the dumps and clock reports the core needs asked for.

use super::remember::Info;
use super::{BoardTask, Seen};
use crate::board::{BoardEvent, BoardInfo};
use crate::log::{Played, RecordKind};
use crate::protocol::{AckKind, ClockCommand, HostCommand};

/// How often a board that reports its battery is asked again, while it plays
/// (never while idle: asking is tied to the board's own activity).
const BATTERY_AGAIN_US: u64 = 300_000_000;

/// When the board was last asked for a dump, the clock for its times, the
/// battery for its charge (µs of log time), and what a dump was asked for.
#[derive(Debug, Default)]
pub(super) struct Asked {
    pub(super) dump: Option<u64>,
    pub(super) clock: Option<u64>,
    pub(super) battery: Option<u64>,
    /// The core's count of moves shown when the board was last asked for a
    /// dump (each new one is checked against a dump).
    pub(super) checked_shown: u64,
}

impl BoardTask {
    /// Sends a command to the board; a clock command goes through the clock's
    /// queue (sent now only when no other waits for its acknowledgement).
    pub(super) async fn send(&mut self, cmd: HostCommand) {
        match cmd {
            HostCommand::Clock(c) => {
                let t = self.time.now_us();
                if let Some(c) = self.clock.queue.push(c, t) {
                    self.send_now(HostCommand::Clock(c)).await;
                }
            }
            other => self.send_now(other).await,
        }
    }

    /// Writes a command on the line now, and records it.
    pub(super) async fn send_now(&mut self, cmd: HostCommand) {
        let bytes = cmd.encode();
        let t = self.time.now_us();
        self.record(t, RecordKind::Tx(bytes.clone()));
        let _ = self.outgoing.send(bytes).await;
    }

    /// Bytes from the board: journaled as an `rx` record, then that record is
    /// the session's step (decoder, board model, rules core), as resume and
    /// `replay` take it. Bytes the decoder has to skip are a line fault for the
    /// rules core (and a comment in the recording; `replay` finds them in the
    /// same bytes).
    pub(super) fn bytes(&mut self, bytes: &[u8], t: u64) {
        let record = self.journaled(t, RecordKind::Rx(bytes.to_vec()));
        let t = record.time.micros();
        // What the task itself follows of the steps, taken in order once the
        // rules core has them (none of it changes what the core decides).
        let mut seen = std::mem::take(&mut self.seen);
        seen.clear();
        // An `rx` record always fits: bytes are never refused, only skipped.
        let _ = self.session.step_with(&record, None, |step, _| match &step.what {
            Played::Board(
                ev @ (BoardEvent::Info(BoardInfo::SerialNumber(_) | BoardInfo::Battery { .. })
                | BoardEvent::ClockAck(AckKind::Command { .. } | AckKind::Version { .. })
                | BoardEvent::Dump(_)),
            ) => seen.push(Seen::Board(ev.clone())),
            Played::Skipped(s) => seen.push(Seen::Skipped(s.to_string())),
            _ => {}
        });
        for s in seen.drain(..) {
            match s {
                Seen::Board(BoardEvent::Info(info)) => match super::remember::board_info(&info) {
                    Some(Info::Serial(s)) => self.learn_serial(&s),
                    Some(Info::Battery(percent)) => self.battery = Some(percent),
                    None => {}
                },
                Seen::Board(BoardEvent::ClockAck(AckKind::Command { command, .. })) => {
                    self.clock_acked(command, t)
                }
                Seen::Board(BoardEvent::ClockAck(AckKind::Version { major, minor })) => {
                    self.clock.version = Some((major, minor));
                    self.clock_acked(ClockCommand::Version.code(), t)
                }
                Seen::Board(BoardEvent::Dump(_)) => {
                    if self.session.core().confirming() {
                        // This dump needs a second that agrees: asked for at once.
                        self.asked.dump = None;
                    }
                }
                Seen::Board(_) => {}
                Seen::Skipped(s) => {
                    tracing::warn!(board = %self.setup.id, "line fault: {s}; asking for the board");
                    self.journal.comment(&format!("line fault: {s}"));
                    // The bytes lost may have been the dump asked for: ask again
                    // soon (not for every skipped byte of a burst).
                    if self
                        .asked
                        .dump
                        .is_some_and(|a| t >= a + self.setup.rules.release_ms * 1000)
                    {
                        self.asked.dump = None;
                    }
                }
            }
        }
        self.seen = seen;
    }

    /// Asks the board for what the rules core needs to stay in step: a dump for
    /// every new move shown (a field update corrupted into another legal move is
    /// then amended before the move is completed), a dump when the core wants one
    /// (after a gap, on an unexplained or irregular board, to confirm a press),
    /// again while it still does; a clock report to confirm a flag or a press.
    pub(super) async fn keep_in_step(&mut self) {
        if !self.connected {
            return;
        }
        let t = self.time.now_us();
        let again = self.ask_again_us();
        let due = |asked: Option<u64>| asked.is_none_or(|a| t >= a + again);
        let shown = self.session.core().moves_shown();
        let resync = self.journal.take_resync();
        if resync
            || shown != self.asked.checked_shown
            || (self.session.core().wants_dump() && due(self.asked.dump))
        {
            self.asked.checked_shown = shown;
            self.asked.dump = Some(t);
            self.send(HostCommand::SendBoard).await;
        }
        if self.session.core().wants_clock() && due(self.asked.clock) {
            self.asked.clock = Some(t);
            self.send(HostCommand::SendClock).await;
        }
        // The battery: once the board has answered its serial number, and again
        // every few minutes of play for a board that reports one (a wired board
        // never answers, and is not asked again).
        let battery_due = match self.asked.battery {
            None => !self.serial.is_empty(),
            Some(a) => self.battery.is_some() && t >= a + BATTERY_AGAIN_US,
        };
        if battery_due {
            self.asked.battery = Some(t);
            self.send(HostCommand::SendBattery).await;
        }
    }

    /// When `keep_in_step` next has something to ask again (µs of log time).
    pub(super) fn next_ask(&self) -> Option<u64> {
        if !self.connected {
            return None;
        }
        let again = self.ask_again_us();
        let dump = self
            .session
            .core()
            .wants_dump()
            .then(|| self.asked.dump.map_or(0, |a| a + again));
        let clock = self
            .session
            .core()
            .wants_clock()
            .then(|| self.asked.clock.map_or(0, |a| a + again));
        dump.into_iter().chain(clock).min()
    }

    /// While the core still wants a dump or a clock report, it is asked for again
    /// every irregularity threshold (2 s by default; scaled with the thresholds,
    /// as `demo --speed` scales them). After skipped bytes, a dump asked for more
    /// than the release threshold ago is asked for again at once.
    pub(super) fn ask_again_us(&self) -> u64 {
        self.setup.rules.irregular_ms.max(1) * 1000
    }
}
