//! The sensor log (`docs/SENSOR-LOG.md`): reading, writing, and playing a log
//! through the protocol decoder as a board would have sent it.

pub mod import;
pub mod play;
mod quick;
mod read;
mod record;
mod split;
mod write;

pub use play::{DECIDED_BY, Played, Player, Step};
pub use read::{
    LogError, RecordError, cannot_read, decode_text, parse_each, parse_log, parse_log_lenient, parse_record,
};
pub use record::{Header, LogTime, MAGIC, Record, RecordKind, Running, SETTINGS_KEY, SensorLog};
pub use write::{LogWriter, to_string};

/// The daemon's callers name it here (see [`crate::text`]).
pub use crate::text::clip_to;
