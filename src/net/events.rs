//! Every board's rules events for the network: a bounded history with ids, so that
//! a client that reconnects (`Last-Event-ID`) gets what it missed, and one that
//! falls behind the history is told how much it lost.
//!
//! The history is a sink ([`crate::api::Sink`]): a board's task only appends
//! (a short lock, no waiting on any client), and appends the very JSON text the
//! publication made, not a copy; each client reads at its own pace from the
//! history, so a slow or stuck client holds nothing but its own place in it.
//! When the history is full the oldest event goes, and a client that had not
//! read it is told how many it lost ([`Next::Lost`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

pub use crate::api::with_board;
use crate::api::{Publication, Sink};

/// The events kept for clients that reconnect, by default.
pub const DEFAULT_HISTORY: usize = 16_384;

/// One event as the network hands it out: the jsonl event with its board.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// 1 for the first event since the daemon started, then one more each.
    pub id: u64,
    /// The event's JSON: the replay jsonl object with `board` added.
    pub json: Arc<str>,
}

/// What a client that has seen up to some id gets next.
#[derive(Debug, PartialEq)]
pub enum Next {
    /// The events after it (at most the number asked for), oldest first.
    Items(Vec<Item>),
    /// Events after it have left the history: this many were lost; the client
    /// goes on from the oldest event kept.
    Lost(u64),
}

struct Ring {
    /// The id of `items[0]`.
    first: u64,
    items: VecDeque<Arc<str>>,
    capacity: usize,
}

pub struct EventLog {
    /// Tells ids of this run from those of an earlier one (a client that
    /// reconnects across a restart): the start time, ms since the epoch.
    epoch: String,
    ring: Mutex<Ring>,
    /// The id of the latest event (0: none yet).
    last: watch::Sender<u64>,
}

impl EventLog {
    pub fn new(capacity: usize) -> Arc<EventLog> {
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        Arc::new(EventLog {
            epoch: epoch.to_string(),
            ring: Mutex::new(Ring {
                first: 1,
                items: VecDeque::new(),
                capacity: capacity.max(1),
            }),
            last: watch::Sender::new(0),
        })
    }

    fn ring(&self) -> MutexGuard<'_, Ring> {
        // A panic while holding the lock cannot leave the ring half-changed
        // (push and pop are whole): go on with it.
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends one event (its JSON with the board, `with_board`). Never waits
    /// for a client.
    pub fn push(&self, json: Arc<str>) {
        let id = {
            let mut r = self.ring();
            r.items.push_back(json);
            if r.items.len() > r.capacity {
                r.items.pop_front();
                r.first += 1;
            }
            r.first + r.items.len() as u64 - 1
        };
        self.last.send_replace(id);
    }

    /// The id of the latest event, 0 when there is none.
    pub fn last_id(&self) -> u64 {
        *self.last.borrow()
    }

    /// Changes whenever an event is appended.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.last.subscribe()
    }

    /// The events after `seen`, at most `max`.
    pub fn after(&self, seen: u64, max: usize) -> Next {
        let r = self.ring();
        if seen + 1 < r.first {
            return Next::Lost(r.first - seen - 1);
        }
        let skip = (seen + 1 - r.first) as usize;
        Next::Items(
            r.items
                .iter()
                .enumerate()
                .skip(skip)
                .take(max)
                .map(|(i, json)| Item {
                    id: r.first + i as u64,
                    json: json.clone(),
                })
                .collect(),
        )
    }

    /// The SSE id of event `id`: `<epoch>-<id>`.
    pub fn sse_id(&self, id: u64) -> String {
        format!("{}-{id}", self.epoch)
    }

    /// Reads a `Last-Event-ID`: the id seen, when it is one of this run's; `None`
    /// when it is from another run (or not one of ours at all).
    pub fn parse_sse_id(&self, text: &str) -> Option<u64> {
        let (epoch, id) = text.trim().split_once('-')?;
        (epoch == self.epoch).then(|| id.parse().ok()).flatten()
    }

    /// The oldest id kept minus one: a client from another run starts there.
    pub fn before_oldest(&self) -> u64 {
        self.ring().first - 1
    }
}

impl Sink for EventLog {
    /// The publication's events, their JSON as it was made (no copy).
    fn offer(&self, publication: &Arc<Publication>) {
        for e in &publication.events {
            self.push(e.json().clone());
        }
    }
}

/// An event as spectators get it (`/api/events`): an arbiter's decision without
/// who made it (a login name of the console or of the machine is nobody's
/// business on the hall's network); every other event as it is.
pub fn for_spectators(json: &str) -> std::borrow::Cow<'_, str> {
    if !json.contains("\"type\":\"arbiter\"") || !json.contains("\"by\":") {
        return json.into();
    }
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(mut v) => {
            if let Some(o) = v.as_object_mut() {
                o.remove("by");
            }
            v.to_string().into()
        }
        Err(_) => json.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Event, EventKind, Side};

    impl EventLog {
        fn push_event(&self, board: &str, event: &Event) {
            self.push(with_board(board, event).into());
        }
    }

    #[test]
    fn spectators_do_not_learn_who_decided() {
        let e = Event {
            t_us: 1_000_000,
            kind: EventKind::Arbiter {
                decision: crate::rules::Decision::SetResult(crate::rules::GameResult::WhiteWins, None),
                by: Some("alice".into()),
            },
        };
        let json = with_board("b1", &e);
        assert!(json.contains("alice"));
        let public = for_spectators(&json);
        assert!(
            !public.contains("alice") && public.contains("SetResult"),
            "{public}"
        );
        let moved = with_board("b1", &ev(3));
        assert_eq!(for_spectators(&moved), moved.as_str());
    }

    fn ev(ply: u32) -> Event {
        Event {
            t_us: u64::from(ply) * 1_000_000,
            kind: EventKind::MoveCompleted {
                ply,
                side: Side::White,
            },
        }
    }

    #[test]
    fn events_get_ids_and_the_board() {
        let log = EventLog::new(4);
        assert_eq!(log.last_id(), 0);
        assert_eq!(log.after(0, 10), Next::Items(vec![]));
        log.push_event("b1", &ev(1));
        log.push_event("b2", &ev(2));
        let Next::Items(items) = log.after(0, 10) else {
            panic!()
        };
        assert_eq!(items.iter().map(|i| i.id).collect::<Vec<_>>(), [1, 2]);
        let v: serde_json::Value = serde_json::from_str(&items[1].json).unwrap();
        assert_eq!(v["board"], "b2");
        assert_eq!(v["type"], "move_completed");
        assert_eq!(v["ply"], 2);
        assert_eq!(log.after(1, 10), Next::Items(vec![items[1].clone()]));
        assert_eq!(log.after(0, 1), Next::Items(vec![items[0].clone()]));
    }

    #[test]
    fn a_client_behind_the_history_is_told_how_much_it_lost() {
        let log = EventLog::new(3);
        for p in 1..=5 {
            log.push_event("b", &ev(p));
        }
        assert_eq!(log.last_id(), 5);
        // Ids 3, 4, 5 are kept: one who saw 1 lost 2.
        assert_eq!(log.after(1, 10), Next::Lost(1));
        assert_eq!(log.after(0, 10), Next::Lost(2));
        assert_eq!(log.before_oldest(), 2);
        let Next::Items(items) = log.after(2, 10) else {
            panic!()
        };
        assert_eq!(items.iter().map(|i| i.id).collect::<Vec<_>>(), [3, 4, 5]);
    }

    #[test]
    fn sse_ids_belong_to_one_run() {
        let log = EventLog::new(3);
        let other = EventLog {
            epoch: "1".into(),
            ring: Mutex::new(Ring {
                first: 1,
                items: VecDeque::new(),
                capacity: 1,
            }),
            last: watch::Sender::new(0),
        };
        assert_eq!(log.parse_sse_id(&log.sse_id(17)), Some(17));
        assert_eq!(log.parse_sse_id(&other.sse_id(17)), None);
        assert_eq!(log.parse_sse_id("garbage"), None);
        assert_eq!(log.parse_sse_id(&format!("{}-x", log.epoch)), None);
    }

    #[test]
    fn the_history_keeps_the_json_the_publication_made() {
        let log = EventLog::new(8);
        let p = Arc::new(Publication::new(
            "b1".into(),
            vec![ev(1), ev(2)],
            None,
            Vec::new(),
        ));
        log.offer(&p);
        let Next::Items(items) = log.after(0, 10) else {
            panic!()
        };
        assert_eq!(items.len(), 2);
        for (item, published) in items.iter().zip(&p.events) {
            // The same text, not made again: one allocation for every sink.
            assert!(Arc::ptr_eq(&item.json, published.json()));
            // Byte for byte what the history made itself before.
            assert_eq!(&*item.json, with_board("b1", &published.event).as_str());
        }
    }
}
