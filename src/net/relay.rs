//! Wake-ups carried onto the server's thread, one relay task per source.
//!
//! A board's thread that publishes changes watch channels (the event history's
//! last id, the board's snapshot), and every task waiting on one is woken. A
//! task of the server's runtime woken from another thread costs the waking
//! thread a system call (the runtime's `eventfd`) per task: with a hundred SSE
//! streams and LiveChess feeds open, each publication cost the board's thread a
//! hundred calls, on the way of its next move (issue 33: 976 such calls in 2 s
//! under the latency bench's attack). Here each source has one relay task on the
//! server's runtime: the board's thread wakes that one, and the relay wakes the
//! server's own tasks from the server's thread, where a wake-up is a push on the
//! runtime's queue.
//!
//! A relay's channel counts the source's changes; what changed is read from the
//! source itself. The relay marks a change after the source has it, so a task
//! that reads the source after marking the relay's count seen never misses one
//! (at worst it is woken once for a change it has already read).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::watch;

use super::EventLog;

/// The relays of one server: the event history's, and each board's snapshot's.
/// Sources are taken on first use; relays start on the runtime of the task that
/// asks (the server's thread).
#[derive(Default)]
pub struct Relays {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// By event history (the spectators' and, with a broadcast delay, the
    /// console's), its address the key.
    events: HashMap<usize, watch::Receiver<u64>>,
    boards: HashMap<String, Board>,
}

struct Board {
    source: watch::Receiver<crate::api::Snapshot>,
    local: watch::Receiver<u64>,
}

impl Relays {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        // Insertions and removals are whole: a panic elsewhere cannot leave the
        // map half-changed.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes whenever an event is appended to `log` (a server has one or
    /// two, living as long as it does).
    pub fn events(&self, log: &EventLog) -> watch::Receiver<u64> {
        let mut inner = self.inner();
        let key = log as *const EventLog as usize;
        match inner.events.get(&key) {
            Some(local) if alive(local) => local.clone(),
            _ => {
                let local = relay(log.watch());
                inner.events.insert(key, local.clone());
                local
            }
        }
    }

    /// Changes whenever the snapshot of board `id` (whose channel is `source`)
    /// changes.
    pub fn board(&self, id: &str, source: &watch::Receiver<crate::api::Snapshot>) -> watch::Receiver<u64> {
        let mut inner = self.inner();
        if let Some(b) = inner.boards.get(id)
            && b.source.same_channel(source)
            && alive(&b.local)
        {
            return b.local.clone();
        }
        // A board gone ends its relay: its entry goes with the next one made.
        inner.boards.retain(|_, b| alive(&b.local));
        let local = relay(source.clone());
        inner.boards.insert(
            id.to_string(),
            Board {
                source: source.clone(),
                local: local.clone(),
            },
        );
        local
    }
}

/// The relay's task is running (its sender is not dropped).
fn alive(local: &watch::Receiver<u64>) -> bool {
    local.has_changed().is_ok()
}

/// A task on the current runtime that counts `source`'s changes into the
/// channel returned, until the source's sender is dropped.
fn relay<T: Send + Sync + 'static>(mut source: watch::Receiver<T>) -> watch::Receiver<u64> {
    let (tx, local) = watch::channel(0u64);
    source.borrow_and_update();
    tokio::spawn(async move {
        while source.changed().await.is_ok() {
            source.borrow_and_update();
            tx.send_modify(|n| *n = n.wrapping_add(1));
        }
    });
    local
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    /// Appends from another thread, as a board's thread does, reach a task
    /// waiting on the relay: the last id read from the log is the last one
    /// appended, and none is missed.
    #[test]
    fn every_event_appended_elsewhere_wakes_the_relay_s_waiters() {
        let log = EventLog::new(1000);
        let relays = Relays::default();
        runtime().block_on(async {
            let mut changed = relays.events(&log);
            let writer = {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..200 {
                        log.push(format!("{{\"n\":{i}}}").into());
                        if i % 50 == 0 {
                            std::thread::sleep(Duration::from_millis(2));
                        }
                    }
                })
            };
            let mut seen = 0;
            let waited = tokio::time::timeout(Duration::from_secs(10), async {
                while seen < 200 {
                    changed.borrow_and_update();
                    let now = log.last_id();
                    if now > seen {
                        seen = now;
                        continue;
                    }
                    changed.changed().await.expect("the relay runs");
                }
            })
            .await;
            assert!(waited.is_ok(), "the waiter saw {seen} of 200 events");
            writer.join().expect("the writer thread");
            // The same relay for every waiter.
            assert!(relays.events(&log).same_channel(&changed));
        });
    }

    #[test]
    fn a_board_s_relay_is_kept_while_its_channel_is_the_same() {
        runtime().block_on(async {
            let relays = Relays::default();
            let (tx, rx) = watch::channel(crate::api::Snapshot::default());
            let mut a = relays.board("b1", &rx);
            let b = relays.board("b1", &rx);
            assert!(a.same_channel(&b), "one relay for one board");
            tx.send_modify(|s| s.settled = 3);
            tokio::time::timeout(Duration::from_secs(5), a.changed())
                .await
                .expect("the change relayed within 5 s")
                .expect("the relay runs");
            // The board replaced (reconnected under the same id): a new relay
            // for the new channel; the old one ends with its board.
            let (tx2, rx2) = watch::channel(crate::api::Snapshot::default());
            let c = relays.board("b1", &rx2);
            assert!(!c.same_channel(&b));
            drop(tx);
            tokio::time::timeout(Duration::from_secs(5), a.changed())
                .await
                .expect("the old relay ended within 5 s")
                .expect_err("its board is gone");
            tx2.send_modify(|s| s.settled = 1);
            let mut c = c;
            tokio::time::timeout(Duration::from_secs(5), c.changed())
                .await
                .expect("the new board's change relayed within 5 s")
                .expect("the relay runs");
        });
    }
}
