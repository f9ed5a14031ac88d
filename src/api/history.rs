//! A board's history as its doors show it (`ctl history`, D-Bus
//! `Board1.History`, the console): every decision and every alert of the board's
//! games, in words, with the time of day, who decided and through which door.
//! The board's task makes it, live and when it resumes its journal, so it
//! survives restarts as the games do.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// The most entries a board keeps (the oldest go first).
pub const MAX_HISTORY: usize = 1000;

/// One entry of a board's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// When (seconds since 1970, UTC).
    pub time: u64,
    /// The number of the board's game it was on (0: before any).
    pub game: u32,
    /// `decision` (the arbiter's), `alert` (what needed the arbiter) or `game`
    /// (a game's start and end).
    pub kind: String,
    /// What happened, in words ("take back to 14. Qf3 (ply 27)", "white +2:00").
    pub text: String,
    /// Who decided (a user name), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Through which door: `D-Bus` (`ctl` among others), `console`, `MQTT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// A decision taken back by a later `undo`.
    #[serde(default)]
    pub undone: bool,
}

/// A board's history as its task last published it.
pub type History = watch::Receiver<Arc<Vec<HistoryEntry>>>;

/// Which door a call came through, as the journal and the history name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    Bus,
    Console,
    Mqtt,
}

impl Door {
    pub fn name(self) -> &'static str {
        match self {
            Door::Bus => "D-Bus",
            Door::Console => "console",
            Door::Mqtt => "MQTT",
        }
    }

    pub fn parse(s: &str) -> Option<Door> {
        [Door::Bus, Door::Console, Door::Mqtt]
            .into_iter()
            .find(|d| d.name() == s)
    }
}
