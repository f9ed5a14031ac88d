//! The clock: commands one at a time (`clock::queue`), the text it shows, the
//! time control configured.

use super::BoardTask;
use crate::clock::control::TimeControl;
use crate::clock::queue::{CommandQueue, Due, RESENDS};
use crate::protocol::{ClockCommand, HostCommand};
use crate::rules::{ClockMode, Decision, Event, EventKind, IrregularKind};

/// The commands on their way to the clock, and what the clock is known to be
/// and show.
#[derive(Debug, Default)]
pub(super) struct ClockLink {
    /// Clock commands: one in flight until acknowledged, the others waiting.
    pub(super) queue: CommandQueue,
    /// Clock commands to send at the next chance (the next one after an ack).
    pub(super) next: Vec<ClockCommand>,
    /// The clock's version (major, minor), once it answered: 1 is an XL, which
    /// shows six 7-segment characters instead of text.
    pub(super) version: Option<(u8, u8)>,
    /// When the text shown on the clock (`ShowText`) is to end (µs of log time).
    pub(super) text_end: Option<u64>,
    /// The configured time control last applied (a later one waits for a game
    /// without moves).
    pub(super) applied_tc: Option<(TimeControl, ClockMode)>,
}

impl BoardTask {
    /// The clock acknowledged a command: the next waiting one goes.
    pub(super) fn clock_acked(&mut self, code: u8, t: u64) {
        if let Some(next) = self.clock.queue.acked(code, t) {
            self.clock.next.push(next);
        }
    }

    /// Clock commands due: the next after an ack, a resend, or one given up on
    /// (a `clock_unresponsive` event).
    pub(super) async fn drive_clock(&mut self) {
        let t = self.time.now_us();
        let mut send: Vec<ClockCommand> = std::mem::take(&mut self.clock.next);
        for due in self.clock.queue.due(t) {
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
                        t_us: t,
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

    /// Shows a text on the clock for `seconds` (none: until replaced or ended).
    /// The text's End is this task's to send (and record) when it is due; a later
    /// text replaces this one and its End. An XL shows six 7-segment characters.
    pub(super) async fn show_text(&mut self, text: &str, seconds: Option<u32>) {
        let cmd = match self.clock.version {
            Some((major, _)) if major < 2 => crate::clock::segments(text, false),
            _ => ClockCommand::text(text, false),
        };
        self.send(HostCommand::Clock(cmd)).await;
        self.clock.text_end = seconds.map(|s| self.time.now_us() + u64::from(s.max(1)) * 1_000_000);
    }

    /// `[clock] show_moves`: the last move after each completed move (3 s), the
    /// irregularity while the board is irregular, the times again once resolved.
    pub(super) async fn show_on_clock(&mut self, events: &[Event]) {
        if !self.setup.show_moves || !self.connected {
            return;
        }
        for e in events {
            match &e.kind {
                EventKind::MoveCompleted { ply, .. } => {
                    let san = self
                        .session
                        .core()
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
                        // A report on the record's inferred plies: nothing
                        // for the players to put right on the board.
                        IrregularKind::Ambiguous => continue,
                    };
                    self.show_text(text, None).await;
                }
                EventKind::Resolved { .. } => {
                    self.clock.text_end = None;
                    self.send(HostCommand::Clock(ClockCommand::End)).await;
                }
                _ => {}
            }
        }
    }

    /// The clock commands the rules core made (drive mode, an arbiter's time, a
    /// penalty): through the clock's queue while connected.
    pub(super) async fn send_core_clock(&mut self) {
        for c in self.session.take_clock_commands() {
            if self.connected {
                self.send(HostCommand::Clock(c)).await;
            }
        }
    }

    /// The configured time control, applied when it is new and the board's game
    /// has no move (until then the game, under way or over, keeps its own): a decision with its
    /// mode, journaled as an `arbiter` record like an arbiter's, so that resume
    /// and `replay` apply it as it was applied live (in report mode it names the
    /// periods and the `TimeControl` tag; in drive mode the daemon keeps the time).
    pub(super) fn apply_configured_time_control(&mut self) {
        if self.setup.configured.time_control.is_none()
            || self.setup.configured.time_control == self.clock.applied_tc
        {
            return;
        }
        // A game with moves (under way, or over) keeps its own: the
        // configuration's is taken once the next game begins.
        if self.session.core().game().is_some_and(|g| g.ply() > 0) {
            return;
        }
        let Some((tc, mode)) = self.setup.configured.time_control.clone() else {
            return;
        };
        let t = self.time.core_now();
        let d = Decision::SetTimeControl {
            spec: tc.clone().into(),
            mode,
        };
        let program = match mode {
            ClockMode::Drive => "",
            ClockMode::Report => " (the clock runs its own program)",
        };
        let note = format!("time control {} from the configuration{program}", tc.pgn());
        let _ = self.decide(t, &d, None, Some(note));
        tracing::info!(board = %self.setup.id, "time control {}{}", tc.pgn(), if mode == ClockMode::Drive { ", the daemon drives the clock" } else { "" });
        self.clock.applied_tc = Some((tc, mode));
    }
}
