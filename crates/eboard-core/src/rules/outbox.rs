//! What the rules core hands out: its events, in time order, and its warnings.

use super::{Event, EventKind};

/// The most warnings [`super::Core::take_notes`] keeps between two takes.
pub const MAX_NOTES: usize = 64;

/// The core's events and warnings until the caller takes them. Events are in
/// time order: one decided late (a touch known only when its flicker
/// threshold passed) carries the time it is reported at. Whether events are
/// kept at all is the caller's choice; their times count either way.
#[derive(Debug)]
pub(super) struct Outbox {
    events: Vec<Event>,
    /// Whether events are kept (the default).
    keep: bool,
    /// The time of the last event, kept or not.
    last: u64,
    /// At most [`MAX_NOTES`], the latest.
    notes: Vec<String>,
}

impl Default for Outbox {
    fn default() -> Outbox {
        Outbox {
            events: Vec::new(),
            keep: true,
            last: 0,
            notes: Vec::new(),
        }
    }
}

impl Outbox {
    /// The time an event decided at `t_us` is reported at: never before the
    /// last one's. It counts as the last event's time from now on.
    #[inline]
    pub(super) fn stamp(&mut self, t_us: u64) -> u64 {
        self.last = t_us.max(self.last);
        self.last
    }

    /// The time of the last event.
    #[inline]
    pub(super) fn last(&self) -> u64 {
        self.last
    }

    /// Whether events are kept (and their strings worth making).
    #[inline]
    pub(super) fn keeps(&self) -> bool {
        self.keep
    }

    pub(super) fn set_keep(&mut self, on: bool) {
        self.keep = on;
    }

    /// An event at a time given by [`Outbox::stamp`]; dropped when events
    /// are not kept.
    #[inline]
    pub(super) fn push(&mut self, t_us: u64, kind: EventKind) {
        if self.keep {
            self.events.push(Event { t_us, kind });
        }
    }

    pub(super) fn take(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    pub(super) fn drain(&mut self) -> std::vec::Drain<'_, Event> {
        self.events.drain(..)
    }

    /// A warning, the oldest dropped beyond [`MAX_NOTES`].
    pub(super) fn note(&mut self, text: String) {
        if self.notes.len() >= MAX_NOTES {
            self.notes.remove(0);
        }
        self.notes.push(text);
    }

    pub(super) fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}
