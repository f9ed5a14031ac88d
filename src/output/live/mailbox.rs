//! The folder's mailbox: the boards hand their games' changes over without
//! waiting ([`Games`], a sink), the folder's task takes them all at once
//! ([`Inbox`]); each game's latest change waits, a newer one replacing it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::api::{GameKey, LiveMsg, Publication, Sink};

/// The boards' side of the folder's mailbox (a sink): each game's latest change
/// waits there, a newer one replacing it, until the folder's task takes them all.
#[derive(Clone)]
pub struct Games {
    pending: Arc<Mutex<BTreeMap<GameKey, LiveMsg>>>,
    /// One wake-up at most waits: the task takes everything at once.
    wake: mpsc::Sender<()>,
}

/// The folder's task's side of the mailbox.
pub struct Inbox {
    pending: Arc<Mutex<BTreeMap<GameKey, LiveMsg>>>,
    wake: mpsc::Receiver<()>,
}

/// A mailbox for the folder's task: [`Games`] for the boards (cloned, one each),
/// [`Inbox`] for [`run`], which ends once every `Games` is gone.
pub fn mailbox() -> (Games, Inbox) {
    let pending = Arc::new(Mutex::new(BTreeMap::new()));
    let (tx, rx) = mpsc::channel(1);
    (
        Games {
            pending: pending.clone(),
            wake: tx,
        },
        Inbox { pending, wake: rx },
    )
}

fn take(pending: &Mutex<BTreeMap<GameKey, LiveMsg>>) -> Vec<LiveMsg> {
    // A map is whole between two statements: a panic elsewhere cannot leave it
    // half-changed.
    let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::take(&mut *p).into_values().collect()
}

impl Games {
    /// Hands a game's change over; never waits.
    pub fn send(&self, m: LiveMsg) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(m.key(), m);
        // Full: a wake-up is already waiting, and takes this change too.
        let _ = self.wake.try_send(());
    }
}

impl Sink for Games {
    /// The files of the games that changed (a copy of each PGN) into the mailbox.
    fn offer(&self, publication: &Arc<Publication>) {
        for m in &publication.files {
            self.send(m.clone());
        }
    }
}

impl Inbox {
    /// Every change waiting (the latest of each game), once there is one; `None`
    /// once every `Games` is gone and nothing waits.
    pub async fn recv(&mut self) -> Option<Vec<LiveMsg>> {
        match self.wake.recv().await {
            Some(()) => Some(take(&self.pending)),
            None => Some(take(&self.pending)).filter(|b| !b.is_empty()),
        }
    }
}
