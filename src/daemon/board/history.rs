//! A board's history in words (`api::history`): the task's events and the
//! journal's notes made into entries, live and when the journal is resumed, so
//! that what `ctl history` shows after a restart is what it showed before.
//!
//! Times of day: a journal's times count from its header's `started`, but a
//! restart goes on a second after the last record, whatever the time was. So
//! each decision's note (`decided via D-Bus at 2026-11-27T19:20:03Z`) and each
//! resume's (`resumed at ...`) anchor the journal's time to the wall clock
//! again, and an entry's time of day is reckoned from the last anchor before it.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::api::history::{Door, HistoryEntry, MAX_HISTORY};
use crate::rules::{Decision, Event, EventKind, Game};
use eboard_core::words::{call_words, history_words};

/// The note journaled with a decision before `decided by`: the door and the
/// time of day (`decided via console at 2026-11-27T19:20:03Z`).
pub const DECIDED_VIA: &str = "decided via ";
/// The note journaled when a journal is resumed (`resumed at ...`).
pub const RESUMED_AT: &str = "resumed at ";

/// The entries, and what places them in the day.
#[derive(Debug, Default)]
pub struct Book {
    /// Each entry, and whether it is a decision of the rules core's (one an
    /// undo may take back).
    entries: VecDeque<(HistoryEntry, bool)>,
    /// Log time (µs) and wall time (ms since 1970) known to be the same moment.
    anchor: (u64, u64),
    /// The door and time of day of the next decision (from its note).
    next: Option<(Option<Door>, u64)>,
}

impl Book {
    /// A book whose log time `t_us` is the wall time `unix_ms`.
    pub fn new(t_us: u64, unix_ms: u64) -> Book {
        Book {
            anchor: (t_us, unix_ms),
            ..Book::default()
        }
    }

    /// Log time `t_us` is the wall time `unix_ms`.
    pub fn anchor(&mut self, t_us: u64, unix_ms: u64) {
        self.anchor = (t_us, unix_ms);
    }

    /// The next decision came through `door` at `unix_ms` (live).
    pub fn decided(&mut self, door: Door, unix_ms: u64, t_us: u64) {
        self.anchor(t_us, unix_ms);
        self.next = Some((Some(door), unix_ms));
    }

    /// A journal's note at `t_us`: a decision's door and time, or a resume's time.
    pub fn note(&mut self, text: &str, t_us: u64) {
        if let Some(rest) = text.strip_prefix(DECIDED_VIA) {
            let (door, at) = rest.split_once(" at ").unwrap_or((rest, ""));
            let unix_ms = super::super::unix_from_rfc3339(at).map(|s| s * 1000);
            if let Some(ms) = unix_ms {
                self.anchor(t_us, ms);
            }
            self.next = Some((Door::parse(door), unix_ms.unwrap_or_else(|| self.wall_ms(t_us))));
        } else if let Some(at) = text.strip_prefix(RESUMED_AT) {
            if let Some(s) = super::super::unix_from_rfc3339(at) {
                self.anchor(t_us, s * 1000);
            }
        }
    }

    fn wall_ms(&self, t_us: u64) -> u64 {
        let (t0, w0) = self.anchor;
        if t_us >= t0 {
            w0 + (t_us - t0) / 1000
        } else {
            w0.saturating_sub((t0 - t_us) / 1000)
        }
    }

    /// Takes what `events` say to an arbiter looking back; `game` is the game
    /// as they left it. True when an entry was added or changed.
    pub fn observe(&mut self, events: &[Event], game: Option<&Game>) -> bool {
        let mut changed = false;
        for e in events {
            let number = match &e.kind {
                EventKind::GameStart { game, .. } => *game,
                _ => game.map_or(0, |g| g.number),
            };
            let mut entry = HistoryEntry {
                time: self.wall_ms(e.t_us) / 1000,
                game: number,
                kind: String::new(),
                text: String::new(),
                by: None,
                via: None,
                undone: false,
            };
            let mut decision = false;
            if let EventKind::Arbiter { decision: d, by } = &e.kind {
                // The rules core's: what an undo may take back.
                decision = d.is_rules();
                entry.kind = "decision".into();
                entry.by = by.clone();
                if let Some((door, ms)) = self.next.take() {
                    entry.via = door.map(|d| d.name().to_string());
                    entry.time = ms / 1000;
                }
                entry.text = match d {
                    Decision::Undo { .. } => self.undone(call_words(d, game)),
                    _ => call_words(d, game),
                };
                // An undo is a decision a later undo takes back too.
            } else if let Some((kind, text)) = history_words(&e.kind) {
                entry.kind = kind.into();
                entry.text = text;
            } else {
                continue;
            }
            if self.entries.len() >= MAX_HISTORY {
                self.entries.pop_front();
            }
            self.entries.push_back((entry, decision));
            changed = true;
        }
        changed
    }

    /// Marks the last decision not yet taken back as taken back; the undo's words.
    fn undone(&mut self, words: String) -> String {
        let last = self
            .entries
            .iter_mut()
            .rev()
            .find(|(e, decision)| *decision && !e.undone);
        match last {
            Some((e, _)) => {
                e.undone = true;
                format!("{words}: {}", e.text)
            }
            None => words,
        }
    }

    /// The entries, oldest first, as the doors read them.
    pub fn entries(&self) -> Arc<Vec<HistoryEntry>> {
        Arc::new(self.entries.iter().map(|(e, _)| e.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Event, Seconds, Side};

    fn arbiter(t_us: u64, decision: Decision) -> Event {
        Event {
            t_us,
            kind: EventKind::Arbiter {
                decision,
                by: Some("alice".into()),
            },
        }
    }

    #[test]
    fn decisions_are_in_words_with_their_door_and_time_and_an_undo_marks_what_it_took_back() {
        let mut book = Book::new(0, 1_795_807_200_000);
        book.note("decided via console at 2026-11-27T19:20:03Z", 5_000_000);
        book.observe(
            &[arbiter(
                5_000_000,
                Decision::AddTime(Side::White, Seconds::new(120).unwrap()),
            )],
            None,
        );
        // A decision from a journal written before doors were: no door, its
        // time reckoned from the last anchor.
        book.observe(
            &[arbiter(65_000_000, Decision::SetPlayers("A".into(), "B".into()))],
            None,
        );
        book.note("decided via D-Bus at 2026-11-27T19:22:00Z", 70_000_000);
        book.observe(&[arbiter(70_000_000, Decision::Undo { force: false })], None);
        let e = book.entries();
        assert_eq!(e.len(), 3);
        assert_eq!(
            (e[0].text.as_str(), e[0].via.as_deref(), e[0].time),
            ("white +2:00", Some("console"), 1_795_807_203)
        );
        assert!(e[0].undone);
        assert_eq!(
            (e[1].text.as_str(), e[1].via.as_deref(), e[1].time),
            ("players A - B", None, 1_795_807_263)
        );
        assert!(!e[1].undone, "players are not taken back by an undo");
        assert_eq!(e[2].text, "undo: white +2:00");
        assert_eq!(e[2].by.as_deref(), Some("alice"));
    }

    #[test]
    fn a_resume_anchors_the_times_after_it() {
        let mut book = Book::new(0, 1_000_000);
        book.note("resumed at 2026-11-27T19:20:03Z", 10_000_000);
        let ev = Event {
            t_us: 12_000_000,
            kind: EventKind::ClockUnresponsive { command: "0b".into() },
        };
        assert!(book.observe(&[ev], None));
        assert_eq!(book.entries()[0].time, 1_795_807_205);
        assert_eq!(book.entries()[0].kind, "alert");
    }
}
