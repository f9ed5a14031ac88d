//! eboard-core: the pure layers of eboard-bridge. Bytes and time come in as
//! arguments, messages, events and bytes go out; nothing here reads a clock, opens
//! a device or starts a task (the crate has no async runtime to start one with).
//!
//! The flow: serial bytes ([`protocol`]) become board events ([`board`]); sensor logs
//! ([`log`]) record and replay them; the rules core ([`rules`]) judges them as an
//! arbiter would, with the clocks of [`clock`]; [`sim`] plays legal moves as hands
//! on a board would. A [`session::Session`] is one board's decoder, board model
//! and rules core taking one input (a sensor-log record) at a time: the daemon,
//! resume and `replay` all go through it.

pub mod board;
pub mod clock;
pub mod drive;
pub mod log;
pub mod protocol;
pub mod rules;
pub mod session;
pub mod sim;
pub mod text;
pub mod words;
