//! The arbiters' alerts as every door sees them: what needed an arbiter on a
//! board, and who acknowledged it. The arbiters' console (`net::arbiter`)
//! keeps them; D-Bus (`Manager1`, `ctl ack`) reaches them through a
//! [`Desk`] the daemon hands it, so that no sink imports another.

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use super::Error;

/// An alert on the bus (`Manager1.Alerts`, `AckAlert`): id, board (its id),
/// kind, text, article, raised (ms since the epoch), active, acknowledged by
/// (empty: not yet), when (ms).
pub type AlertTuple = (u64, String, String, String, String, u64, bool, String, u64);

/// Something that needs an arbiter on a board.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub id: u64,
    pub board: String,
    /// `irregular`, `lost_track`, `touch_move`, `flag`, `clock_unresponsive`,
    /// `disconnected`, `draw_claimable`.
    pub kind: String,
    pub text: String,
    /// The FIDE Laws' article, when one applies.
    pub article: String,
    /// When it was raised (ms since the epoch).
    pub t_ms: u64,
    /// False once it no longer stands (resolved, connected again, a new game).
    pub active: bool,
    /// What makes a repeat of the same alert update it rather than add one.
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub acked_by: Option<String>,
    #[serde(default)]
    pub acked_ms: u64,
}

/// Where the alerts are kept, for the doors other than the console. Each call
/// may write a small file: call it off an async runtime's threads
/// (`spawn_blocking`).
pub trait Desk: Send + Sync {
    /// The alerts kept, oldest first (a board's last 40 at most).
    fn alerts(&self) -> Vec<Alert>;
    /// Acknowledges alert `id` as `user` (kept on disk before it returns); an
    /// alert acknowledged before stays as it was. The alert as it stands.
    fn ack(&self, id: u64, user: &str) -> Result<Alert, Error>;
    /// Acknowledges every active alert of board `board` (its id) not yet
    /// acknowledged, as `user`; those it acknowledged (none: nothing stood).
    fn ack_board(&self, board: &str, user: &str) -> Result<Vec<Alert>, Error>;
}

/// The desk, once the console is up (it starts after the bus is served);
/// empty while the console is off.
pub type DeskSlot = Arc<OnceLock<Arc<dyn Desk>>>;

/// Why there is nothing to acknowledge without the console, and what there is.
pub fn console_off() -> Error {
    Error::Unavailable(
        "the arbiters' console is off (no [http] arbiters in the configuration): alerts are kept \
         and acknowledged only by the console; `ctl boards` shows what needs the arbiter now and \
         `ctl watch` each event as it happens"
            .into(),
    )
}
