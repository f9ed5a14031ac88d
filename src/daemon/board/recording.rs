//! A board task's journal as it writes it: held while the disk fails (the
//! error said once a minute), written again when it works, and then a fresh
//! dump asked for.

use std::path::PathBuf;

use crate::api::throttle::{Throttle, more};
use crate::log::{Flushed, Journal, LogTime, Record};

/// The journal being written, and what its failures left to do.
pub(super) struct Recording {
    writer: Journal,
    /// The file, named in what is said of it.
    path: PathBuf,
    /// Write errors, said once a minute.
    errors: Throttle,
    /// The journal works again after failing: a fresh dump is to be asked for.
    resync: bool,
}

impl Recording {
    pub(super) fn new(writer: Journal, path: PathBuf) -> Recording {
        Recording {
            writer,
            path,
            errors: Throttle::default(),
            resync: false,
        }
    }

    /// Writes `record`; the time it is written at (never before the last
    /// record's).
    pub(super) fn write(&mut self, record: &Record) -> LogTime {
        self.writer.write(record)
    }

    pub(super) fn comment(&mut self, text: &str) {
        self.writer.comment(text);
    }

    /// Writes what is held. While the disk fails, records are held (and the
    /// error said once a minute); when it works again they are written, and
    /// `true` says a fresh dump is to be asked for, so that the journal is
    /// back in step even if some were dropped.
    pub(super) fn flush(&mut self) -> bool {
        match self.writer.flush() {
            Flushed::Written => false,
            Flushed::Failing(e) => {
                if let Some(n) = self.errors.allow() {
                    tracing::error!(
                        "{}: cannot write: {e}{}; the game goes on and is published",
                        self.path.display(),
                        more(n)
                    );
                }
                false
            }
            Flushed::Recovered { dropped } => {
                self.errors.reset();
                tracing::warn!(
                    "{}: written again ({dropped} records lost); asking the board for a fresh dump",
                    self.path.display()
                );
                self.resync = true;
                true
            }
        }
    }

    /// Whether a fresh dump is to be asked for since the journal recovered
    /// (once).
    pub(super) fn take_resync(&mut self) -> bool {
        std::mem::take(&mut self.resync)
    }
}
