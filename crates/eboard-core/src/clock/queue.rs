//! Commands to the DGT 3000, one at a time: a clock takes one command, answers it
//! with an acknowledgement (in the board's update modes), and loses what arrives
//! while it is busy. So one command is in flight;
//! the others wait in order; an unacknowledged command is sent again after
//! `RESEND_AFTER_US`, at most `RESENDS` times, and then given up (the caller
//! reports the clock unresponsive) and the next one goes. A new text replaces a
//! text (and an End) still waiting. Pure: the caller passes the time and sends.

use std::collections::VecDeque;

use crate::protocol::ClockCommand;

/// An unacknowledged command is sent again after this long (µs).
pub const RESEND_AFTER_US: u64 = 2_000_000;
/// How many times it is sent again before it is given up.
pub const RESENDS: u8 = 3;

#[derive(Debug, Clone, PartialEq)]
struct InFlight {
    cmd: ClockCommand,
    sent_us: u64,
    resends: u8,
}

/// What is due now.
#[derive(Debug, Clone, PartialEq)]
pub enum Due {
    /// Send this command (again, or the next one).
    Send(ClockCommand),
    /// This command was sent `RESENDS + 1` times and never acknowledged.
    GaveUp(ClockCommand),
}

#[derive(Debug, Default)]
pub struct CommandQueue {
    in_flight: Option<InFlight>,
    waiting: VecDeque<ClockCommand>,
}

impl CommandQueue {
    /// Queues `cmd`; returns it when it is to be sent now (nothing in flight).
    pub fn push(&mut self, cmd: ClockCommand, now_us: u64) -> Option<ClockCommand> {
        if matches!(cmd, ClockCommand::Text { .. } | ClockCommand::Display { .. }) {
            self.waiting.retain(|c| {
                !matches!(
                    c,
                    ClockCommand::Text { .. } | ClockCommand::Display { .. } | ClockCommand::End
                )
            });
        }
        if self.in_flight.is_some() {
            self.waiting.push_back(cmd);
            return None;
        }
        self.start(cmd.clone(), now_us);
        Some(cmd)
    }

    fn start(&mut self, cmd: ClockCommand, now_us: u64) {
        self.in_flight = Some(InFlight {
            cmd,
            sent_us: now_us,
            resends: 0,
        });
    }

    /// The next waiting command, now in flight.
    fn next(&mut self, now_us: u64) -> Option<ClockCommand> {
        let cmd = self.waiting.pop_front()?;
        self.start(cmd.clone(), now_us);
        Some(cmd)
    }

    /// The clock acknowledged command `code`: when it is the one in flight, the
    /// next one (if any) is to be sent now.
    pub fn acked(&mut self, code: u8, now_us: u64) -> Option<ClockCommand> {
        if self.in_flight.as_ref().is_some_and(|f| f.cmd.code() == code) {
            self.in_flight = None;
            return self.next(now_us);
        }
        None
    }

    /// Whether a command is waiting for its acknowledgement.
    pub fn busy(&self) -> bool {
        self.in_flight.is_some()
    }

    /// When `due` next has something to do.
    pub fn deadline(&self) -> Option<u64> {
        self.in_flight.as_ref().map(|f| f.sent_us + RESEND_AFTER_US)
    }

    /// What is due at `now_us`: a resend, or a command given up and the next one.
    pub fn due(&mut self, now_us: u64) -> Vec<Due> {
        let Some(f) = &mut self.in_flight else {
            return Vec::new();
        };
        if now_us < f.sent_us + RESEND_AFTER_US {
            return Vec::new();
        }
        if f.resends < RESENDS {
            f.resends += 1;
            f.sent_us = now_us;
            return vec![Due::Send(f.cmd.clone())];
        }
        let gone = f.cmd.clone();
        self.in_flight = None;
        let mut due = vec![Due::GaveUp(gone)];
        due.extend(self.next(now_us).map(Due::Send));
        due
    }

    /// The line went away: nothing is in flight or waiting any more (the clock is
    /// asked again from the start-up sequence when it comes back).
    pub fn clear(&mut self) {
        self.in_flight = None;
        self.waiting.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> ClockCommand {
        ClockCommand::text(s, false)
    }

    #[test]
    fn one_in_flight_the_rest_wait_in_order() {
        let mut q = CommandQueue::default();
        assert_eq!(q.push(ClockCommand::Version, 0), Some(ClockCommand::Version));
        assert_eq!(q.push(ClockCommand::Beep { units: 2 }, 10), None);
        assert_eq!(q.push(ClockCommand::End, 20), None);
        // An ack for another command changes nothing.
        assert_eq!(q.acked(ClockCommand::End.code(), 30), None);
        assert_eq!(
            q.acked(ClockCommand::Version.code(), 40),
            Some(ClockCommand::Beep { units: 2 })
        );
        assert_eq!(q.acked(0x0b, 50), Some(ClockCommand::End));
        assert_eq!(q.acked(ClockCommand::End.code(), 60), None);
        assert!(!q.busy());
    }

    #[test]
    fn resent_three_times_two_seconds_apart_then_given_up() {
        let mut q = CommandQueue::default();
        q.push(ClockCommand::Version, 0);
        q.push(text("NEXT"), 100);
        assert_eq!(q.due(1_999_999), vec![]);
        assert_eq!(q.deadline(), Some(2_000_000));
        let mut sends = Vec::new();
        let mut t = 2_000_000;
        loop {
            let due = q.due(t);
            if due.iter().any(|d| matches!(d, Due::GaveUp(_))) {
                assert_eq!(
                    due,
                    vec![Due::GaveUp(ClockCommand::Version), Due::Send(text("NEXT"))]
                );
                break;
            }
            assert_eq!(due, vec![Due::Send(ClockCommand::Version)]);
            sends.push(t);
            t += RESEND_AFTER_US;
        }
        assert_eq!(sends, [2_000_000, 4_000_000, 6_000_000]);
        assert_eq!(t, 8_000_000);
    }

    #[test]
    fn a_new_text_replaces_a_waiting_text_and_its_end() {
        let mut q = CommandQueue::default();
        q.push(ClockCommand::Version, 0);
        q.push(text("FIRST"), 1);
        q.push(ClockCommand::End, 2);
        q.push(text("SECOND"), 3);
        assert_eq!(q.acked(ClockCommand::Version.code(), 4), Some(text("SECOND")));
        assert_eq!(q.acked(text("X").code(), 5), None);
    }
}
