//! The board task's side of D-Bus: a change's signals, then its snapshot and
//! one `PropertiesChanged`.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::watch;
use zbus::zvariant::{OwnedObjectPath, Value};

use super::board::emit;
use super::{BOARD_INTERFACE, Board1};
use crate::api::Snapshot;
use crate::api::history::HistoryEntry;
use crate::rules::Event;

/// The board task's side: publishes snapshots, property changes and signals.
pub struct Publisher {
    snapshot: watch::Sender<Snapshot>,
    /// True from a change's signals until its snapshot is in: property reads wait.
    publishing: watch::Sender<bool>,
    bus: Option<(zbus::Connection, OwnedObjectPath)>,
    /// The board's interface on the object server, looked up once.
    iface: tokio::sync::OnceCell<zbus::object_server::InterfaceRef<Board1>>,
    /// The board's history, for `Board1.History` and the console.
    history: Option<watch::Sender<Arc<Vec<HistoryEntry>>>>,
}

impl Publisher {
    /// `publishing` is what `Board1::new` was given the other end of.
    pub fn new(
        snapshot: watch::Sender<Snapshot>,
        publishing: watch::Sender<bool>,
        bus: Option<(zbus::Connection, OwnedObjectPath)>,
    ) -> Publisher {
        Publisher {
            snapshot,
            publishing,
            bus,
            iface: tokio::sync::OnceCell::new(),
            history: None,
        }
    }

    /// The same, publishing the board's history to `history` too.
    pub fn with_history(mut self, history: watch::Sender<Arc<Vec<HistoryEntry>>>) -> Publisher {
        self.history = Some(history);
        self
    }

    /// The board's history as it is now.
    pub fn history(&self, entries: Arc<Vec<HistoryEntry>>) {
        if let Some(h) = &self.history {
            h.send_replace(entries);
        }
    }

    /// The snapshot published last.
    pub fn last(&self) -> Snapshot {
        self.snapshot.borrow().clone()
    }

    /// `snap` differs from the snapshot published last.
    pub fn differs(&self, snap: &Snapshot) -> bool {
        *self.snapshot.borrow() != *snap
    }

    /// The board's interface, once it is on the object server; `None` without a bus.
    async fn iface(&self) -> Option<&zbus::object_server::InterfaceRef<Board1>> {
        let (conn, path) = self.bus.as_ref()?;
        let found = self
            .iface
            .get_or_try_init(|| conn.object_server().interface::<_, Board1>(path.as_ref()))
            .await;
        match found {
            Ok(iface) => Some(iface),
            Err(e) => {
                tracing::warn!("D-Bus: cannot publish on {}: {e}", path.as_str());
                None
            }
        }
    }

    /// Sends the signals of a change's `events` at once, before the snapshot they
    /// lead to is made: they are what clients wait for. Property reads wait from
    /// now until `publish` puts that snapshot in, so none sees the state before
    /// a signal it has had. Then the thread gives way: the broker, woken by the
    /// signals, is often put on this very CPU (Unix sockets wake their reader as
    /// if the writer were about to sleep), and would otherwise wait for all the
    /// work that follows. `publish` must follow.
    pub async fn signal(&self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        let Some(iface) = self.iface().await else { return };
        self.publishing.send_replace(true);
        if let Err(e) = emit(iface.signal_emitter(), events).await {
            tracing::warn!(
                "D-Bus: cannot send the signals of {}: {e}",
                iface.signal_emitter().path()
            );
        }
        std::thread::yield_now();
    }

    /// Publishes a new snapshot (after `signal`, the one its events led to), lets
    /// property reads go on, and sends one `PropertiesChanged` with what changed.
    /// Bus errors are logged: a listener going away must not stop the board.
    pub async fn publish(&self, snap: Snapshot) {
        let changed = changed_properties(&self.snapshot.borrow(), &snap);
        self.snapshot.send_replace(snap);
        self.publishing.send_if_modified(|p| std::mem::replace(p, false));
        if changed.is_empty() {
            return;
        }
        let Some(iface) = self.iface().await else { return };
        let e = iface.signal_emitter();
        let name = zbus::names::InterfaceName::from_static_str_unchecked(BOARD_INTERFACE);
        if let Err(err) = zbus::fdo::Properties::properties_changed(e, name, changed, (&[]).into()).await {
            tracing::warn!("D-Bus: cannot publish on {}: {err}", e.path());
        }
    }
}

/// The properties (D-Bus names) whose values differ from `old` to `new`, with
/// their new values.
fn changed_properties(old: &Snapshot, new: &Snapshot) -> HashMap<&'static str, Value<'static>> {
    let mut changed = HashMap::new();
    macro_rules! changed {
        ($($field:ident => $name:literal),* $(,)?) => {
            $(if old.$field != new.$field {
                changed.insert($name, Value::from(new.$field.clone()));
            })*
        };
    }
    changed!(
        connected => "Connected",
        device => "Device",
        serial_number => "SerialNumber",
        orientation => "Orientation",
        status => "Status",
        fen => "Fen",
        moves => "Moves",
        pgn => "Pgn",
        last_move => "LastMove",
        white_clock_ms => "WhiteClockMs",
        black_clock_ms => "BlackClockMs",
        clock_running => "ClockRunning",
        result => "Result",
        termination => "Termination",
        irregularity => "Irregularity",
        event => "Event",
        round => "Round",
        board_number => "BoardNumber",
        white => "White",
        black => "Black",
        time_control => "TimeControl",
        fault => "Fault",
    );
    if old.tags != new.tags {
        let tags: HashMap<String, String> = new.tags.clone().into_iter().collect();
        changed.insert("Tags", Value::from(tags));
    }
    changed
}
