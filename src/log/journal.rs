//! A board's journal: its sensor log as the daemon writes it, made so that a disk
//! that fails cannot lose what was played nor tear the file.
//!
//! - Records are held in memory until a flush has written them whole. A write that
//!   fails (a full disk, a file size limit, an I/O error) cuts the file back to its
//!   last whole line and keeps the records for the next flush, so that when the
//!   disk works again they are written in order and nothing is lost.
//! - Held records are capped (`HOLD_LIMIT` bytes, hours of a board's traffic). Past
//!   the cap they are dropped; when writing works again a `gap` record says so, and
//!   the caller asks the board for a fresh dump, which puts the journal back in step
//!   (`Flushed::Recovered`).
//! - Times never go back in the file: a record timed before the last one written is
//!   written at the last one's time.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use eboard_core::log::{Header, LogTime, LogWriter, Record, RecordKind};

/// At most this many bytes of records are held while writes fail.
pub const HOLD_LIMIT: usize = 16 << 20;

/// Where a journal's bytes go: a file, or in tests a sink that fails on demand.
pub trait JournalFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Cuts the file to `len` bytes (what was written whole).
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

impl JournalFile for File {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        Write::write_all(self, bytes)
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }
}

/// What a flush did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flushed {
    /// Everything is on disk (or nothing was waiting).
    Written,
    /// The write failed; the records are held for the next flush.
    Failing(String),
    /// Writes failed before and work again: every held record is on disk now.
    /// `dropped` records were lost over the cap (a `gap` record stands for them).
    Recovered { dropped: u64 },
}

#[derive(Debug)]
pub struct Journal<F: JournalFile = File> {
    file: F,
    /// Bytes of whole lines on disk.
    len: u64,
    last: LogTime,
    /// Lines not yet on disk, each with the time of the last record before it.
    held: VecDeque<(LogTime, String)>,
    held_bytes: usize,
    limit: usize,
    /// Records dropped over the cap since writes began to fail, and the time of
    /// the last of them.
    dropped: u64,
    dropped_at: LogTime,
    failing: bool,
}

impl Journal<File> {
    /// A new journal at `path` (which must not exist), with its first line and
    /// header written.
    pub fn create(path: &Path, header: &Header) -> io::Result<Journal<File>> {
        let file = OpenOptions::new().create_new(true).write(true).open(path)?;
        let mut j = Journal::new(file, 0, LogTime::default());
        // The first line and the header fields, as every sensor log writer has them.
        let head = LogWriter::new(Vec::new(), header)?.into_inner();
        j.hold(String::from_utf8_lossy(&head).into_owned());
        match j.flush() {
            Flushed::Failing(e) => Err(io::Error::other(e)),
            _ => Ok(j),
        }
    }

    /// An existing journal at `path`, whose last record is at `last`, to go on
    /// writing (whole lines only: the caller has cut a torn last line off).
    pub fn append(path: &Path, last: LogTime) -> io::Result<Journal<File>> {
        let file = OpenOptions::new().append(true).open(path)?;
        let len = file.metadata()?.len();
        Ok(Journal::new(file, len, last))
    }
}

impl<F: JournalFile> Journal<F> {
    /// A journal on `file`, which holds `len` bytes of whole lines already.
    pub fn new(file: F, len: u64, last: LogTime) -> Journal<F> {
        Journal {
            file,
            len,
            last,
            held: VecDeque::new(),
            held_bytes: 0,
            limit: HOLD_LIMIT,
            dropped: 0,
            dropped_at: LogTime::default(),
            failing: false,
        }
    }

    /// Holds at most `limit` bytes while writes fail.
    pub fn with_limit(mut self, limit: usize) -> Journal<F> {
        self.limit = limit;
        self
    }

    /// Bytes held, not yet on disk.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    fn hold(&mut self, line: String) {
        self.held_bytes += line.len();
        self.held.push_back((self.last, line));
        if self.failing && self.held_bytes > self.limit {
            // Over the cap: drop the oldest held records; a gap stands for them.
            while self.held_bytes > self.limit / 2 {
                let Some((t, l)) = self.held.pop_front() else {
                    break;
                };
                self.held_bytes -= l.len();
                if !l.starts_with('#') {
                    self.dropped += 1;
                }
                self.dropped_at = t;
            }
        }
    }

    /// Adds a record (written by the next flush), and says the time it is
    /// written at: its own, or the last record's when that is later.
    pub fn write(&mut self, record: &Record) -> LogTime {
        let time = record.time.max(self.last);
        self.last = time;
        // A record is one line: any line break is folded into a space.
        let mut line = String::with_capacity(64);
        Record::append_line(time, &record.kind, &mut line);
        self.hold(line);
        time
    }

    /// Adds a comment line.
    pub fn comment(&mut self, text: &str) {
        self.hold(format!("# {}\n", text.replace(['\n', '\r'], " ")));
    }

    /// Writes what is held, whole lines only.
    pub fn flush(&mut self) -> Flushed {
        if self.held.is_empty() {
            return Flushed::Written;
        }
        let mut bytes = String::with_capacity(self.held_bytes + 80);
        if self.dropped > 0 {
            let gap = Record {
                time: self.dropped_at,
                kind: RecordKind::Gap(format!(
                    "the journal could not be written: {} records lost",
                    self.dropped
                )),
            };
            bytes += &(gap.to_string() + "\n");
        }
        for (_, l) in &self.held {
            bytes += l;
        }
        match self.file.write_all(bytes.as_bytes()) {
            Ok(()) => {
                self.len += bytes.len() as u64;
                self.held.clear();
                self.held_bytes = 0;
                let dropped = std::mem::take(&mut self.dropped);
                if std::mem::take(&mut self.failing) {
                    Flushed::Recovered { dropped }
                } else {
                    Flushed::Written
                }
            }
            Err(e) => {
                self.failing = true;
                // A part of a line may have reached the disk: cut it off, so that
                // the records written later start on a line of their own.
                let cut = self.file.truncate(self.len);
                let held = self.held_bytes;
                Flushed::Failing(match cut {
                    Ok(()) => format!("{e} ({held} bytes held until it works again)"),
                    Err(c) => format!("{e}; and cannot cut back a torn line: {c}"),
                })
            }
        }
    }
}

/// A daemon-level journal (the pushes' ids, the broadcast delays) at `path`,
/// opened to go on after its records: a torn last line cut off, lines that do
/// not read passed over with a warning; made with `header()` when missing (its
/// folder too). Its records, the journal, and the log time (µs) its next
/// record is written at.
pub fn open_kept(
    path: &Path,
    header: impl FnOnce() -> Header,
) -> Result<(Vec<Record>, Journal<File>, u64), String> {
    let shown = path.display().to_string();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    if !path.exists() {
        let journal = Journal::create(path, &header()).map_err(|e| format!("{shown}: {e}"))?;
        return Ok((Vec::new(), journal, 0));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{shown}: {e}"))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let whole = text.rfind('\n').map_or(0, |i| i + 1);
    if whole < text.len() {
        tracing::warn!("{shown}: cutting off a torn last line");
        OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(whole as u64))
            .map_err(|e| format!("{shown}: {e}"))?;
    }
    let mut skipped = Vec::new();
    let log = eboard_core::log::parse_log_lenient(&text[..whole], &shown, &mut skipped)
        .map_err(|e| e.to_string())?;
    for e in skipped {
        tracing::warn!("{e}: line skipped");
    }
    let last = log.records.last().map_or(LogTime::default(), |r| r.time);
    let journal = Journal::append(path, last).map_err(|e| format!("{shown}: {e}"))?;
    Ok((log.records, journal, last.micros() + 1_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{MAGIC, parse_log};

    /// A disk that fills: writes past `room` bytes fail, after writing what fits.
    struct Disk {
        bytes: Vec<u8>,
        room: usize,
    }

    impl JournalFile for &mut Disk {
        fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
            let fits = self.room.saturating_sub(self.bytes.len()).min(b.len());
            self.bytes.extend_from_slice(&b[..fits]);
            if fits < b.len() {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "No space left on device",
                ));
            }
            Ok(())
        }
        fn truncate(&mut self, len: u64) -> io::Result<()> {
            self.bytes.truncate(len as usize);
            Ok(())
        }
    }

    fn lift(t: u64) -> Record {
        Record {
            time: LogTime::from_micros(t * 1_000_000),
            kind: RecordKind::Note(format!("record {t}")),
        }
    }

    #[test]
    fn a_disk_that_fills_and_empties_loses_nothing_and_tears_no_line() {
        let head = format!("{MAGIC}\n");
        let mut disk = Disk {
            bytes: head.clone().into_bytes(),
            room: head.len() + 30,
        };
        let mut j = Journal::new(&mut disk, head.len() as u64, LogTime::default());
        let mut said = Vec::new();
        for t in 0..10 {
            j.write(&lift(t));
            said.push(j.flush());
        }
        assert!(matches!(said[0], Flushed::Written), "{said:?}");
        assert!(matches!(said[9], Flushed::Failing(_)), "{said:?}");
        assert!(j.held_bytes() > 0);
        let Journal { file, .. } = &mut j;
        // Nothing torn on disk: only whole lines.
        assert_eq!(
            file.bytes.last(),
            Some(&b'\n'),
            "{:?}",
            String::from_utf8_lossy(&file.bytes)
        );
        file.room = usize::MAX;
        assert_eq!(j.flush(), Flushed::Recovered { dropped: 0 });
        drop(j);
        let text = String::from_utf8(disk.bytes).unwrap();
        let log = parse_log(&text, "j.esl").unwrap();
        assert_eq!(log.records.len(), 10, "{text}");
    }

    #[test]
    fn held_records_are_written_in_order_when_the_disk_works_again() {
        let mut disk = Disk {
            bytes: Vec::new(),
            room: 0,
        };
        let mut j = Journal::new(&mut disk, 0, LogTime::default());
        j.comment("start");
        for t in 0..5 {
            j.write(&lift(t));
            assert!(matches!(j.flush(), Flushed::Failing(e) if e.contains("No space left")));
        }
        let Journal { file, .. } = &mut j;
        file.room = usize::MAX;
        assert_eq!(j.flush(), Flushed::Recovered { dropped: 0 });
        j.write(&lift(5));
        assert_eq!(j.flush(), Flushed::Written);
        drop(j);
        let text = String::from_utf8(disk.bytes).unwrap();
        let numbers: Vec<&str> = text.lines().filter_map(|l| l.split("record ").nth(1)).collect();
        assert_eq!(numbers, ["0", "1", "2", "3", "4", "5"], "{text}");
    }

    #[test]
    fn past_the_cap_a_gap_record_stands_for_what_was_dropped() {
        let mut disk = Disk {
            bytes: format!("{MAGIC}\n").into_bytes(),
            room: 0,
        };
        disk.room = disk.bytes.len();
        let len = disk.bytes.len() as u64;
        let mut j = Journal::new(&mut disk, len, LogTime::default()).with_limit(200);
        for t in 0..40 {
            j.write(&lift(t));
            let _ = j.flush();
        }
        assert!(j.held_bytes() <= 200);
        let Journal { file, .. } = &mut j;
        file.room = usize::MAX;
        let Flushed::Recovered { dropped } = j.flush() else {
            panic!("not recovered")
        };
        assert!(dropped > 0);
        drop(j);
        let text = String::from_utf8(disk.bytes).unwrap();
        let log = parse_log(&text, "j.esl").unwrap();
        assert!(
            matches!(&log.records[0].kind, RecordKind::Gap(g) if g.contains(&format!("{dropped} records lost"))),
            "{text}"
        );
        // The newest records are all there, after the gap, in order.
        assert!(text.ends_with("record 39\n"), "{text}");
        assert_eq!(log.records.len() as u64, 1 + 40 - dropped);
    }

    #[test]
    fn a_record_timed_before_the_last_is_written_at_the_last_time() {
        let mut disk = Disk {
            bytes: Vec::new(),
            room: usize::MAX,
        };
        let mut j = Journal::new(&mut disk, 0, LogTime::from_micros(5_000_000));
        j.write(&lift(1));
        assert_eq!(j.flush(), Flushed::Written);
        drop(j);
        assert_eq!(String::from_utf8(disk.bytes).unwrap(), "5.000 note record 1\n");
    }
}
