//! A board's snapshot, and the publication of a change: D-Bus first, inline;
//! then the log line, and one `Publication` (the events with their JSON made
//! once, the snapshot when it changed, the broadcast files) offered to every
//! sink the daemon wired (the event tap, MQTT, the network, the broadcast folder).

use std::sync::Arc;

use super::BoardTask;
use crate::api::{Publication, Sink, Snapshot};
use crate::bus::Publisher;
use crate::clock::control::TimeControl;
use crate::log::RecordKind;
use crate::output::replay::game_pgn;
use crate::rules::{Event, EventKind};

/// Where a board's publications go: D-Bus first, inline, then every other
/// sink in order.
pub(super) struct Outlets {
    /// The board's id, for the publications.
    pub(super) name: Arc<str>,
    pub(super) publisher: Arc<Publisher>,
    pub(super) sinks: Vec<Arc<dyn Sink>>,
}

impl Outlets {
    pub(super) fn new(name: Arc<str>, publisher: Arc<Publisher>, sinks: Vec<Arc<dyn Sink>>) -> Outlets {
        Outlets {
            name,
            publisher,
            sinks,
        }
    }
}

impl BoardTask {
    /// The snapshot D-Bus shows.
    pub fn snapshot(&self) -> Snapshot {
        snapshot_of(&Shown {
            session: &self.session,
            roster: &self.roster,
            default: self.new_game_tags(),
            connected: self.connected,
            device: &self.setup.device,
            serial: &self.serial,
            battery: self.battery,
            fault: &self.fault,
        })
    }

    /// Publishes what changed. D-Bus first: the signals (a move's signal is
    /// what clients wait for), then the snapshot, the properties (it holds the
    /// game's PGN as it is now; property reads wait for it); then the log, the
    /// journal's notes, and the publication offered to the sinks, none of
    /// which waits.
    pub(super) async fn publish(&mut self, mut events: Vec<Event>) {
        if crate::daemon::fault::broken("resolved") {
            events.retain(|e| !matches!(e.kind, EventKind::Resolved { .. }));
        }
        if crate::daemon::fault::broken("alarm-end") {
            // The `resolved` that follows a game's end in its publication.
            let mut ended = false;
            events.retain(|e| {
                ended |= matches!(e.kind, EventKind::GameEnd { .. });
                !(ended && matches!(e.kind, EventKind::Resolved { .. }))
            });
        }
        if crate::daemon::fault::broken("flag") {
            events.retain(|e| !matches!(e.kind, EventKind::Flag { .. }));
        }
        self.outlets.publisher.signal(&events).await;
        if self.history.observe(&events, self.session.core().game()) {
            self.outlets.publisher.history(self.history.entries());
        }
        // Every game's file, the current one's and any that just ended (the
        // snapshot's PGN comes from here).
        let default = self.new_game_tags();
        let current = self.session.core().game().map(|g| g.number);
        let (notes, files) = self.roster.update(self.session.core().games(), current, &default);
        let mut snap = self.snapshot();
        if crate::daemon::fault::broken("withdraw")
            && snap.moves.len() % 6 == 0
            && !events.iter().any(|e| matches!(e.kind, EventKind::Move { .. }))
        {
            snap.moves.pop();
        }
        let changed = self.outlets.publisher.differs(&snap);
        let shared = (changed && !self.outlets.sinks.is_empty()).then(|| Arc::new(snap.clone()));
        // After signals, always: property reads wait for this snapshot.
        if changed || !events.is_empty() {
            self.outlets.publisher.publish(snap).await;
        }
        let publication = Arc::new(Publication::new(self.outlets.name.clone(), events, shared, files));
        for e in &publication.events {
            if !matches!(e.event.kind, EventKind::Touch { .. } | EventKind::Clock { .. }) {
                tracing::info!(board = %self.setup.id, "{}", e.json());
            }
        }
        // The tags of a game seen for the first time go to the journal at once.
        if !notes.is_empty() {
            let t = self.time.now_us();
            for n in notes {
                self.record(t, RecordKind::Note(n));
            }
            self.flush();
        }
        if publication.is_empty() {
            return;
        }
        for sink in &self.outlets.sinks {
            sink.offer(&publication);
        }
    }
}

/// What a board's snapshot is made from.
pub(super) struct Shown<'a> {
    pub session: &'a crate::session::Session,
    pub roster: &'a crate::daemon::roster::Roster,
    pub default: crate::daemon::roster::GameTags,
    pub connected: bool,
    pub device: &'a std::path::Path,
    pub serial: &'a str,
    pub battery: Option<u8>,
    pub fault: &'a str,
}

/// A board's snapshot from what its task (or a rebuild of its journal) holds.
pub(super) fn snapshot_of(v: &Shown<'_>) -> Snapshot {
    let game = v.session.core().game();
    let default = v.default.clone();
    let tags = game.and_then(|g| v.roster.tags_of(g.number)).unwrap_or(&default);
    let (white, black, running) = v.session.core().clock().unwrap_or((0, 0, None));
    let status = match game {
        _ if !v.connected => "disconnected",
        None => "waiting",
        Some(g) if g.is_over() => "finished",
        Some(_) if v.session.core().irregularity().is_some() => "irregular",
        Some(_) => "playing",
    };
    Snapshot {
        connected: v.connected,
        device: v.device.display().to_string(),
        serial_number: v.serial.to_string(),
        orientation: game.map(|g| g.orientation.name().to_string()).unwrap_or_default(),
        status: status.into(),
        fen: game.map(|g| g.fen()).unwrap_or_default(),
        moves: game
            .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
            .unwrap_or_default(),
        inferred: game
            .map(|g| {
                g.moves
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.inferred)
                    .map(|(i, _)| i)
                    .collect()
            })
            .unwrap_or_default(),
        pgn: game
            .map(|g| match v.roster.pgn_of(g.number) {
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
        clock_running: crate::rules::running_str(running).into(),
        result: game
            .and_then(|g| g.result)
            .map(|(r, _)| r.to_string())
            .unwrap_or_default(),
        termination: game
            .and_then(|g| g.result)
            .map(|(_, t)| t.to_string())
            .unwrap_or_default(),
        irregularity: v
            .session
            .core()
            .irregularity()
            .map(|k| k.name().to_string())
            .unwrap_or_default(),
        event: tags.tags.event.clone(),
        round: tags.round.to_string(),
        board_number: tags.board,
        white: tags.tags.white.clone(),
        black: tags.tags.black.clone(),
        time_control: v
            .session
            .core()
            .time_control()
            .map(TimeControl::pgn)
            .unwrap_or_default(),
        tags: tags.tags.extra.clone(),
        placement: if v.session.board().placement().is_some() {
            let orientation = game.map_or(crate::board::Orientation::Normal, |g| g.orientation);
            orientation.real_board(v.session.core().sensors()).to_string()
        } else {
            String::new()
        },
        start_fen: game.map(|g| g.start_fen.clone()).unwrap_or_default(),
        has_clock: v.session.core().clock().is_some(),
        battery: v.battery,
        settled: game.map_or(0, |g| g.settled_plies()),
        fault: v.fault.to_string(),
    }
}
