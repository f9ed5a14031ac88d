//! The sensor log (`docs/SENSOR-LOG.md`). Its pure parts (records, reading a
//! log's text, writing, playing a log through the decoder) are
//! `eboard_core::log`, re-exported here under the same names; the files are
//! here, where I/O belongs: the journal the daemon writes ([`journal`]) and a
//! log read from disk ([`files`]).

pub use eboard_core::log::*;

pub mod files;
pub mod journal;

pub use files::{read_log, read_text, read_text_into};
pub use journal::{Flushed, Journal};
