//! A board's delayed view rebuilt from its journal at the daemon's start
//! (issue 61, `daemon::delay`): while resume steps the journal's records, the
//! records of the last `window` (by the wall clock, from the journal's
//! anchors: its header's `started`, each `resumed at`) make the publications
//! the board's task made then, each at the time the board showed it. The
//! state when the window began is the view's base, released at once, with the
//! events the spectators had not been shown before the stop; a restart thus
//! publishes nothing early and loses nothing.
//!
//! The journal writes the wall clock to the second, rounded down, and the
//! task's clock starts a moment after its `resumed at` note: every time taken
//! from it is counted 1.1 s later, so that nothing is early.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::history::RESUMED_AT;
use super::publish::{Shown, snapshot_of};
use super::resume::Resumed;
use super::{BoardSetup, board_tags};
use crate::api::delay::Seed;
use crate::api::{GameKey, LiveMsg, Publication, Snapshot};
use crate::daemon::unix_from_rfc3339;
use crate::log::RecordKind;
use crate::rules::{Event, EventKind};
use crate::session::Session;

/// The journal's wall clock is written to the second, rounded down (and a
/// task's log time starts a moment after the note): a margin.
const ROUNDING_MS: u64 = 1100;

pub(super) struct Rebuilder {
    id: Arc<str>,
    window_ms: u64,
    now_ms: u64,
    now: Instant,
    /// The window's start (ms since 1970).
    cutoff_ms: u64,
    /// Log time (µs) and wall time (ms) known to be the same moment.
    anchor: (u64, u64),
    /// The wall time of the last record.
    last_ms: u64,
    /// Events before the window, with their wall times (those within a
    /// window of the last record were not shown before the stop).
    before: Vec<(u64, Event)>,
    base: Option<(Option<Arc<Snapshot>>, Vec<LiveMsg>)>,
    since: Vec<(Instant, Publication)>,
    last_snapshot: Option<Arc<Snapshot>>,
    files: BTreeMap<GameKey, String>,
}

impl Rebuilder {
    /// A rebuild of the last `window`, for a journal started at `started_ms`.
    pub(super) fn new(id: &str, window: Duration, started_ms: u64) -> Rebuilder {
        let now_ms = crate::daemon::unix_ms_now();
        let window_ms = window.as_millis() as u64;
        Rebuilder {
            id: id.into(),
            window_ms,
            now_ms,
            now: Instant::now(),
            cutoff_ms: now_ms.saturating_sub(window_ms),
            anchor: (0, started_ms + ROUNDING_MS),
            last_ms: 0,
            before: Vec::new(),
            base: None,
            since: Vec::new(),
            last_snapshot: None,
            files: BTreeMap::new(),
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

    /// Before the record at `t_us` is stepped: an anchor taken; the base made
    /// when the record is the window's first.
    pub(super) fn before(
        &mut self,
        t_us: u64,
        kind: &RecordKind,
        session: &Session,
        resumed: &Resumed,
        setup: &BoardSetup,
    ) {
        if let RecordKind::Note(text) = kind {
            if let Some(s) = text.strip_prefix(RESUMED_AT).and_then(unix_from_rfc3339) {
                self.anchor = (t_us, s * 1000 + ROUNDING_MS);
            }
        }
        if self.base.is_none() && self.wall_ms(t_us) > self.cutoff_ms {
            self.make_base(session, resumed, setup);
        }
    }

    fn make_base(&mut self, session: &Session, resumed: &Resumed, setup: &BoardSetup) {
        let snapshot = Arc::new(self.snapshot(session, resumed, setup));
        let files = self.files_of(session, &resumed.roster, setup);
        self.last_snapshot = Some(snapshot.clone());
        self.base = Some((Some(snapshot), files));
    }

    fn snapshot(&self, session: &Session, resumed: &Resumed, setup: &BoardSetup) -> Snapshot {
        snapshot_of(&Shown {
            session,
            roster: &resumed.roster,
            default: resumed
                .roster
                .for_new_games(board_tags(setup), setup.round_format),
            connected: true,
            device: &setup.device,
            serial: &resumed.serial,
            battery: resumed.battery,
            fault: "",
        })
    }

    /// The games' files that differ from those made before (all, the first
    /// time), from a copy of the roster as it stands.
    fn files_of(
        &mut self,
        session: &Session,
        roster: &crate::daemon::roster::Roster,
        setup: &BoardSetup,
    ) -> Vec<LiveMsg> {
        let mut scratch = roster.clone();
        let default = roster.for_new_games(board_tags(setup), setup.round_format);
        let current = session.core().game().map(|g| g.number);
        let (_, files) = scratch.update(session.core().games(), current, &default);
        files
            .into_iter()
            .filter(|f| match f {
                LiveMsg::Game { key, pgn, .. } => {
                    if self.files.get(key) == Some(pgn) {
                        return false;
                    }
                    self.files.insert(*key, pgn.clone());
                    true
                }
                LiveMsg::Withdraw(key) => self.files.remove(key).is_some(),
            })
            .collect()
    }

    /// After the record at `t_us` was stepped, with the events it made.
    pub(super) fn after(
        &mut self,
        t_us: u64,
        events: Vec<Event>,
        session: &Session,
        resumed: &Resumed,
        setup: &BoardSetup,
    ) {
        let wall = self.wall_ms(t_us);
        self.last_ms = self.last_ms.max(wall);
        if self.base.is_none() {
            // Before the window: kept while they may not have been shown.
            let keep_from = self.cutoff_ms.saturating_sub(self.window_ms);
            self.before
                .extend(events.into_iter().filter(|_| wall > keep_from).map(|e| (wall, e)));
            return;
        }
        let snapshot = Arc::new(self.snapshot(session, resumed, setup));
        let changed = self.last_snapshot.as_deref() != Some(&*snapshot);
        let game_changed = events
            .iter()
            .any(|e| !matches!(e.kind, EventKind::Touch { .. } | EventKind::Clock { .. }));
        let files = if game_changed {
            self.files_of(session, &resumed.roster, setup)
        } else {
            Vec::new()
        };
        if !changed && events.is_empty() && files.is_empty() {
            return;
        }
        let snapshot = changed.then(|| {
            self.last_snapshot = Some(snapshot.clone());
            snapshot
        });
        // When the board's task published it: its last event's time, or the record's.
        let shown_us = events.iter().map(|e| e.t_us).max().unwrap_or(t_us).max(t_us);
        let at = self.instant(self.wall_ms(shown_us));
        self.since
            .push((at, Publication::new(self.id.clone(), events, snapshot, files)));
    }

    /// The moment of wall time `ms` on this run's monotonic clock.
    fn instant(&self, ms: u64) -> Instant {
        let ago = Duration::from_millis(self.now_ms.saturating_sub(ms));
        self.now.checked_sub(ago).unwrap_or(self.now)
    }

    /// The view rebuilt, once every record is stepped.
    pub(super) fn finish(mut self, session: &Session, resumed: &Resumed, setup: &BoardSetup) -> Seed {
        if self.base.is_none() {
            self.make_base(session, resumed, setup);
        }
        let (snapshot, files) = self.base.take().unwrap_or_default();
        // Shown before the stop: what was due a window before the last record.
        let shown_until = self.last_ms.saturating_sub(self.window_ms);
        let events = self
            .before
            .into_iter()
            .filter(|(w, _)| *w > shown_until)
            .map(|(_, e)| e)
            .collect();
        Seed {
            base: Publication::new(self.id.clone(), events, snapshot, files),
            since: self.since,
        }
    }
}
