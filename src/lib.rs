//! eboard-bridge: electronic chessboards at real events.
//!
//! The flow: serial bytes ([`protocol`]) become board events ([`board`]); sensor logs
//! ([`log`]) record and replay them.

pub mod board;
pub mod clock;
pub mod log;
pub mod protocol;
