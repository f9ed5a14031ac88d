//! eboard-bridge: electronic chessboards at real events.
//!
//! The flow: serial bytes ([`protocol`]) become board events ([`board`]); sensor logs
//! ([`log`]) record and replay them; [`device`] holds the virtual board.
//!
//! The pure layers (`protocol`, `board`, `clock`, `log`, `rules`, `sim`) are the
//! crate `eboard-core` (`crates/eboard-core`), re-exported here under their names;
//! `log` adds here what does I/O (the daemon's journal, logs read from disk).

pub use eboard_core::{board, clock, protocol, rules, session, sim, text};

pub mod api;
pub mod arbiters;
pub mod bus;
pub mod cli;
pub mod ctl;
pub mod daemon;
pub mod demo;
pub mod device;
pub mod lichess;
pub mod log;
pub mod memory;
pub mod mqtt;
pub mod net;
pub mod output;
pub mod pairings;
