//! The DGT board and DGT 3000 clock wire protocol, sans IO: bytes in, messages out;
//! commands in, bytes out. The facts of the protocol (message ids and lengths,
//! payload layouts, command codes) are written down with the types that carry
//! them: `message.rs` for what a board sends, `command.rs` for what it is sent
//! (`host_stream.rs` reads it back, as a board does).

mod command;
mod decode;
mod host_stream;
mod message;
mod types;

pub use command::{ClockCommand, Hms, HostCommand, LedCommand, RunFlags, clock_code, code};
pub use decode::{Decoded, Decoder, MAX_EEPROM, SkipReason, Skipped};
pub use host_stream::{ClockCommandError, CommandParser, HostInput};
pub use message::{AckKind, BoardMessage, ClockAck, ClockButton, ClockStatus, Placement, SideFlags, id};
pub use types::{ClockSide, ClockTime, Field, PieceCode};

/// Serial line settings of wired boards.
pub const BAUD_RATE: u32 = 9600;
