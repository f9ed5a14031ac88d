//! eboard-bridge: electronic chessboards at real events.
//!
//! The flow: serial bytes ([`protocol`]) become board events ([`board`]); sensor logs
//! ([`log`]) record and replay them; [`device`] holds the virtual board.

pub mod api;
pub mod board;
pub mod bus;
pub mod cli;
pub mod clock;
pub mod ctl;
pub mod daemon;
pub mod demo;
pub mod device;
pub mod log;
pub mod memory;
pub mod mqtt;
pub mod net;
pub mod output;
pub mod protocol;
pub mod rules;
pub mod sim;
