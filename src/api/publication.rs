//! What a board publishes after each turn of its task, and the sinks it is
//! offered to.
//!
//! D-Bus is not one of them: the board task sends its signals and properties
//! first, inline (their latency is what clients feel, `benches/latency.rs`).
//! Then one [`Publication`] (the events with their JSON made once, the snapshot
//! when it changed, the broadcast files that changed) is offered to every
//! [`Sink`] in the order the daemon's wiring listed them. A sink never makes the
//! board wait: `offer` hands over and returns; what happens when its consumer is
//! slow is the sink's own, documented on each (`docs/ARCHITECTURE.md`,
//! "Publication"). A sink that cannot promise that goes behind a [`Detached`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use super::Snapshot;
use crate::rules::Event;

/// One rules event of a publication, with its JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub event: Event,
    board: Arc<str>,
    /// Made when first asked for, then shared by every sink.
    json: OnceLock<Arc<str>>,
}

impl Published {
    /// The replay jsonl object with `"board"` first (`with_board`), made once
    /// for every sink (when the first asks for it; a turn no sink reads as
    /// text, touches and clock reports without the network or MQTT, makes
    /// none): the network hands out this very text, MQTT adds its `seq`, the
    /// log prints it.
    pub fn json(&self) -> &Arc<str> {
        self.json
            .get_or_init(|| with_board(&self.board, &self.event).into())
    }
}

/// What one turn of a board's task publishes besides D-Bus.
#[derive(Debug, Clone, PartialEq)]
pub struct Publication {
    /// The board's id.
    pub board: Arc<str>,
    /// The turn's rules events, oldest first.
    pub events: Vec<Published>,
    /// The board's snapshot, when it changed (as D-Bus has it now).
    pub snapshot: Option<Arc<Snapshot>>,
    /// The broadcast files of the games that changed.
    pub files: Vec<LiveMsg>,
}

impl Publication {
    /// A publication of `board`; each event's JSON is made once, when a sink
    /// first asks for it.
    pub fn new(
        board: Arc<str>,
        events: Vec<Event>,
        snapshot: Option<Arc<Snapshot>>,
        files: Vec<LiveMsg>,
    ) -> Publication {
        let events = events
            .into_iter()
            .map(|event| Published {
                event,
                board: board.clone(),
                json: OnceLock::new(),
            })
            .collect();
        Publication {
            board,
            events,
            snapshot,
            files,
        }
    }

    /// Nothing to offer: no event, no change of the snapshot, no file.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.snapshot.is_none() && self.files.is_empty()
    }
}

/// Somewhere a board's publications go besides D-Bus (the network, MQTT, the
/// broadcast folder, the event tap).
pub trait Sink: Send + Sync {
    /// Takes one publication. Called on the board's task: it must not wait
    /// (no lock held for long, no I/O, no `.await`); what it cannot do at once
    /// it queues, bounded, or drops with a count, as its documentation says.
    fn offer(&self, publication: &Arc<Publication>);

    /// The broadcast delay, when this sink is it: a board's task asks it
    /// at its start for the window to rebuild from its journal
    /// (`api::delay`).
    fn delay(&self) -> Option<&dyn super::delay::Rebuild> {
        None
    }
}

/// The event's jsonl object with `"board": id` first (the network's and, with
/// its `seq` added, MQTT's form).
pub fn with_board(board: &str, event: &Event) -> String {
    let body = serde_json::to_string(event).unwrap_or_else(|_| "{}".into());
    let board = serde_json::to_string(board).unwrap_or_else(|_| "\"\"".into());
    match body.strip_prefix('{') {
        Some(rest) if rest != "}" => format!("{{\"board\":{board},{rest}"),
        _ => format!("{{\"board\":{board}}}"),
    }
}

/// Which file a game goes to: round, board number, and the game's place among the
/// board's games of the round (1 for the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct GameKey {
    pub round: u32,
    pub board: u32,
    pub index: u32,
}

impl GameKey {
    /// `game-M.pgn`, or `game-M-K.pgn` for a board's K-th game of the round.
    pub fn file_name(&self) -> String {
        if self.index <= 1 {
            format!("game-{}.pgn", self.board)
        } else {
            format!("game-{}-{}.pgn", self.board, self.index)
        }
    }

    /// The key a file name in round `round` stands for.
    pub fn parse(round: u32, name: &str) -> Option<GameKey> {
        let stem = name.strip_prefix("game-")?.strip_suffix(".pgn")?;
        let (board, index) = match stem.split_once('-') {
            Some((b, k)) => (b.parse().ok()?, k.parse().ok().filter(|k| *k > 1)?),
            None => (stem.parse().ok()?, 1),
        };
        Some(GameKey { round, board, index })
    }
}

/// A change of the broadcast folder.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveMsg {
    /// A game's PGN, with how many plies it holds.
    Game { key: GameKey, plies: usize, pgn: String },
    /// A game with no moves gave its place up (it was taken to another round, or
    /// replaced before a move was made): its file goes.
    Withdraw(GameKey),
}

impl LiveMsg {
    pub fn key(&self) -> GameKey {
        match self {
            LiveMsg::Game { key, .. } | LiveMsg::Withdraw(key) => *key,
        }
    }
}

/// A sink that may wait, run on a thread of its own behind a bounded queue:
/// `offer` only queues; when the queue is full the oldest publication waiting
/// is dropped and counted (said in the log once a minute). For sinks the daemon
/// cannot vouch for (those given to `Daemon::start_with`).
pub struct Detached {
    shared: Arc<Shared>,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    capacity: usize,
    dropped: AtomicU64,
}

struct Queue {
    waiting: VecDeque<Arc<Publication>>,
    closed: bool,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // The queue is whole between two statements: a panic elsewhere cannot
        // leave it half-changed.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Detached {
    /// Runs `sink` on a thread named `name`, at most `capacity` publications
    /// waiting for it.
    pub fn new(name: &str, sink: Arc<dyn Sink>, capacity: usize) -> std::io::Result<Detached> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                waiting: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
            capacity: capacity.max(1),
            dropped: AtomicU64::new(0),
        });
        let theirs = shared.clone();
        let label = name.to_string();
        std::thread::Builder::new()
            .name(format!("sink {name}"))
            .spawn(move || {
                let mut said = super::throttle::Throttle::default();
                let mut told = 0;
                loop {
                    let next = {
                        let mut q = theirs.queue();
                        loop {
                            if let Some(p) = q.waiting.pop_front() {
                                break Some(p);
                            }
                            if q.closed {
                                break None;
                            }
                            q = theirs.ready.wait(q).unwrap_or_else(|e| e.into_inner());
                        }
                    };
                    let Some(p) = next else { return };
                    let dropped = theirs.dropped.load(Ordering::Relaxed);
                    if dropped > told {
                        if let Some(n) = said.allow() {
                            tracing::warn!(
                                "sink {label}: too slow, {dropped} publication(s) dropped so far{}",
                                super::throttle::more(n)
                            );
                        }
                        told = dropped;
                    }
                    sink.offer(&p);
                }
            })?;
        Ok(Detached { shared })
    }

    /// Publications dropped so far (the queue was full).
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

impl Sink for Detached {
    fn offer(&self, publication: &Arc<Publication>) {
        let mut q = self.shared.queue();
        if q.waiting.len() >= self.shared.capacity {
            q.waiting.pop_front();
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
        q.waiting.push_back(publication.clone());
        drop(q);
        self.shared.ready.notify_one();
    }
}

impl Drop for Detached {
    /// The thread ends once what is queued is offered.
    fn drop(&mut self) {
        self.shared.queue().closed = true;
        self.shared.ready.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{EventKind, Side};
    use std::time::{Duration, Instant};

    fn moved(ply: u32) -> Event {
        Event {
            t_us: u64::from(ply) * 1_000_000,
            kind: EventKind::MoveCompleted {
                ply,
                side: Side::White,
            },
        }
    }

    #[test]
    fn the_json_is_the_replay_object_with_the_board_first() {
        let p = Publication::new("b1".into(), vec![moved(3)], None, Vec::new());
        let plain = serde_json::to_string(&moved(3)).unwrap();
        assert_eq!(
            &**p.events[0].json(),
            format!("{{\"board\":\"b1\",{}", &plain[1..]).as_str()
        );
        assert!(!p.is_empty());
        assert!(Publication::new("b1".into(), Vec::new(), None, Vec::new()).is_empty());
    }

    /// A sink that blocks until the test lets it go, recording what it got.
    struct Blocking {
        gate: Mutex<()>,
        got: Mutex<Vec<Arc<Publication>>>,
    }

    impl Sink for Blocking {
        fn offer(&self, p: &Arc<Publication>) {
            let _wait = self.gate.lock().unwrap();
            self.got.lock().unwrap().push(p.clone());
        }
    }

    #[test]
    fn a_detached_sink_that_blocks_never_holds_the_offer_and_keeps_the_newest() {
        let sink = Arc::new(Blocking {
            gate: Mutex::new(()),
            got: Mutex::new(Vec::new()),
        });
        let gate = sink.gate.lock().unwrap();
        let detached = Detached::new("test", sink.clone(), 4).unwrap();
        let started = Instant::now();
        for ply in 1..=100 {
            let p = Arc::new(Publication::new("b".into(), vec![moved(ply)], None, Vec::new()));
            detached.offer(&p);
        }
        // 100 offers while the sink is stuck: none waited for it.
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "{:?}",
            started.elapsed()
        );
        // One is in the stuck sink's hands (or about to be), 4 wait; the rest dropped.
        assert!((95..=96).contains(&detached.dropped()), "{}", detached.dropped());
        drop(gate);
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let last = sink.got.lock().unwrap().last().map(|p| p.events[0].event.t_us);
            if last == Some(100_000_000) {
                break;
            }
            assert!(Instant::now() < until, "the newest publication within 10 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        let got = sink.got.lock().unwrap().len() as u64;
        assert_eq!(got + detached.dropped(), 100);
    }
}
