//! Events on their way to the broker, on disk beside the boards' journals.
//!
//! Each board has a file `<id>.queue` of the messages it published or will
//! publish (one JSON object a line, each with its `seq`), and `<id>.acked`, the
//! last `seq` the broker acknowledged. An event is appended before it is sent;
//! it leaves the queue when the broker acknowledges it. So a broker that is away,
//! and a daemon restarted while it was, lose nothing: the events not acknowledged
//! are sent again, in order, when it is back (some may arrive twice, with the same
//! `seq`). `seq` goes on across restarts.
//!
//! The queue is bounded (`limit` events a board): past it the oldest events are
//! dropped and their numbers are missing from what consumers receive.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Acknowledged lines kept in the file before it is rewritten without them.
const COMPACT_AFTER: usize = 4096;

/// One board's queue.
#[derive(Debug)]
pub struct Queue {
    path: PathBuf,
    acked_path: PathBuf,
    file: Option<File>,
    /// Lines in the file (acknowledged ones included).
    lines: usize,
    /// The `seq` the next event gets.
    next: u64,
    /// The last `seq` the broker acknowledged, and the last one written to disk.
    acked: u64,
    acked_saved: u64,
    /// Events not acknowledged yet, oldest first.
    pending: VecDeque<(u64, String)>,
    limit: usize,
    /// Events dropped over the limit since the last warning.
    pub dropped: u64,
}

/// The `seq` field of a queued line.
fn seq_of(line: &str) -> Option<u64> {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()?
        .get("seq")?
        .as_u64()
}

impl Queue {
    /// The queue of board `id` in `dir`, with what a previous run left in it.
    pub fn open(dir: &Path, id: &str, limit: usize) -> io::Result<Queue> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{id}.queue"));
        let acked_path = dir.join(format!("{id}.acked"));
        let acked = match std::fs::read_to_string(&acked_path) {
            Ok(s) => s.trim().parse::<u64>().unwrap_or(0),
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        let mut q = Queue {
            path,
            acked_path,
            file: None,
            lines: 0,
            next: acked + 1,
            acked,
            acked_saved: acked,
            pending: VecDeque::new(),
            limit,
            dropped: 0,
        };
        match File::open(&q.path) {
            Ok(f) => {
                for line in BufReader::new(f).lines() {
                    let line = line?;
                    // A line cut short by a crash has no seq: it was never sent.
                    let Some(seq) = seq_of(&line) else {
                        tracing::warn!("{}: a line that is not an event is skipped", q.path.display());
                        continue;
                    };
                    q.lines += 1;
                    q.next = q.next.max(seq + 1);
                    if seq > q.acked {
                        q.pending.push_back((seq, line));
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        while q.pending.len() > q.limit {
            q.pending.pop_front();
            q.dropped += 1;
        }
        // The file is rewritten with only what waits, which also drops a torn line.
        q.rewrite()?;
        Ok(q)
    }

    /// Numbers `event` (a JSON object, as the jsonl has it), appends it, and
    /// queues it: its message. A disk that fails loses the copy on disk, not the
    /// event.
    pub fn push(&mut self, event: &str, board: &str) -> String {
        let seq = self.next;
        self.next += 1;
        let line = with_seq(event, board, seq);
        if let Some(f) = &mut self.file {
            let mut bytes = Vec::with_capacity(line.len() + 1);
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
            match f.write_all(&bytes) {
                Ok(()) => self.lines += 1,
                Err(e) => {
                    tracing::error!(
                        "{}: {e}; events for the broker are held in memory only",
                        self.path.display()
                    );
                    self.file = None;
                }
            }
        }
        self.pending.push_back((seq, line.clone()));
        if self.pending.len() > self.limit {
            self.pending.pop_front();
            self.dropped += 1;
        }
        line
    }

    /// A queue with no file (when the folder cannot be written): events wait in
    /// memory only.
    pub fn in_memory(limit: usize) -> Queue {
        Queue {
            path: PathBuf::new(),
            acked_path: PathBuf::new(),
            file: None,
            lines: 0,
            next: 1,
            acked: 0,
            acked_saved: 0,
            pending: VecDeque::new(),
            limit,
            dropped: 0,
        }
    }

    /// The broker acknowledged `seq` (and so everything before it).
    pub fn ack(&mut self, seq: u64) {
        if seq <= self.acked {
            return;
        }
        self.acked = seq;
        while self.pending.front().is_some_and(|(s, _)| *s <= seq) {
            self.pending.pop_front();
        }
        if self.lines > self.pending.len() + COMPACT_AFTER {
            if let Err(e) = self.rewrite() {
                tracing::warn!("{}: cannot rewrite the queue: {e}", self.path.display());
            }
        }
    }

    /// The events waiting, oldest first, from the first with a `seq` after `after`.
    pub fn after(&self, after: u64) -> impl Iterator<Item = &(u64, String)> {
        let start = self.pending.partition_point(|(s, _)| *s <= after);
        self.pending.range(start..)
    }

    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// The last `seq` given (0 before the first event).
    pub fn last(&self) -> u64 {
        self.next - 1
    }

    pub fn waiting(&self) -> usize {
        self.pending.len()
    }

    /// Writes the acknowledged `seq` down, when it moved.
    pub fn save_acked(&mut self) -> io::Result<()> {
        if self.acked == self.acked_saved || self.acked_path.as_os_str().is_empty() {
            self.acked_saved = self.acked;
            return Ok(());
        }
        let tmp = self.acked_path.with_extension("acked.tmp");
        std::fs::write(&tmp, format!("{}\n", self.acked))?;
        std::fs::rename(&tmp, &self.acked_path)?;
        self.acked_saved = self.acked;
        Ok(())
    }

    /// Whether `save_acked` has something to write.
    pub fn acked_unsaved(&self) -> bool {
        self.acked != self.acked_saved
    }

    /// The file again with only the waiting events, then appended to.
    fn rewrite(&mut self) -> io::Result<()> {
        let tmp = self.path.with_extension("queue.tmp");
        {
            let mut w = io::BufWriter::new(File::create(&tmp)?);
            for (_, line) in &self.pending {
                w.write_all(line.as_bytes())?;
                w.write_all(b"\n")?;
            }
            w.flush()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        self.file = Some(OpenOptions::new().append(true).open(&self.path)?);
        self.lines = self.pending.len();
        Ok(())
    }
}

/// The event's object (JSON text) with `board` and `seq` first, its own fields
/// after them in their order. `event` is the jsonl object, or the same with
/// `"board": board` first already (as a publication makes it): the line is the
/// same byte for byte.
pub fn with_seq(event: &str, board: &str, seq: u64) -> String {
    let board = serde_json::Value::from(board).to_string();
    let event = event.trim();
    let with_board = event
        .strip_prefix("{\"board\":")
        .and_then(|e| e.strip_prefix(board.as_str()))
        .and_then(|e| e.strip_prefix(',').or_else(|| (e.trim() == "}").then_some("}")));
    match with_board.or_else(|| event.strip_prefix('{')) {
        Some(rest) if rest.trim() != "}" => format!("{{\"board\":{board},\"seq\":{seq},{rest}"),
        _ => format!("{{\"board\":{board},\"seq\":{seq}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn seqs(q: &Queue, after: u64) -> Vec<u64> {
        q.after(after).map(|(s, _)| *s).collect()
    }

    #[test]
    fn what_is_not_acknowledged_survives_a_restart_and_seq_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = Queue::open(dir.path(), "b1", 100).unwrap();
        for ply in 1..=5 {
            let line = q.push(&json!({"t": 1.0, "type": "move", "ply": ply}).to_string(), "b1");
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!((v["type"].as_str(), v["ply"].as_u64()), (Some("move"), Some(ply)));
            assert!(
                line.starts_with(&format!("{{\"board\":\"b1\",\"seq\":{ply},")),
                "{line}"
            );
        }
        q.ack(2);
        q.save_acked().unwrap();
        assert_eq!(seqs(&q, 0), [3, 4, 5]);
        assert_eq!(seqs(&q, 4), [5]);
        drop(q);
        // A crash in the middle of a line: the torn line is not an event.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join("b1.queue"))
            .unwrap();
        f.write_all(b"{\"board\":\"b1\",\"se").unwrap();
        drop(f);
        let mut q = Queue::open(dir.path(), "b1", 100).unwrap();
        assert_eq!(seqs(&q, 0), [3, 4, 5]);
        assert_eq!(q.acked(), 2);
        let line = q.push("{}", "b1");
        assert_eq!(line, "{\"board\":\"b1\",\"seq\":6}");
        assert_eq!(q.last(), 6);
        q.ack(6);
        assert_eq!(q.waiting(), 0);
    }

    #[test]
    fn over_the_limit_the_oldest_go_and_their_numbers_are_missing() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = Queue::open(dir.path(), "b", 3).unwrap();
        for _ in 0..5 {
            q.push(r#"{"type":"clock"}"#, "b");
        }
        assert_eq!(seqs(&q, 0), [3, 4, 5]);
        assert_eq!(q.dropped, 2);
    }

    #[test]
    fn acknowledged_lines_are_compacted_away() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = Queue::open(dir.path(), "b", 100_000).unwrap();
        for _ in 0..(COMPACT_AFTER + 10) {
            q.push(r#"{"type":"clock"}"#, "b");
        }
        q.ack((COMPACT_AFTER + 5) as u64);
        let text = std::fs::read_to_string(dir.path().join("b.queue")).unwrap();
        assert_eq!(text.lines().count(), 5);
        assert_eq!(
            seq_of(text.lines().next().unwrap()),
            Some(COMPACT_AFTER as u64 + 6)
        );
    }

    #[test]
    fn an_event_with_its_board_makes_the_same_line_as_without() {
        use crate::rules::{Event, EventKind, Side};
        let events = [
            Event {
                t_us: 1_500_000,
                kind: EventKind::MoveCompleted {
                    ply: 3,
                    side: Side::Black,
                },
            },
            Event {
                t_us: 2_000_000,
                kind: EventKind::Arbiter {
                    decision: crate::rules::Decision::SetResult(crate::rules::GameResult::WhiteWins, None),
                    by: Some("a \"quoted\" name".into()),
                },
            },
        ];
        for board in ["b1", "board \"x\""] {
            for e in &events {
                let plain = serde_json::to_string(e).unwrap();
                let made = crate::api::with_board(board, e);
                assert_eq!(with_seq(&made, board, 7), with_seq(&plain, board, 7));
            }
            assert_eq!(
                with_seq(&format!("{{\"board\":{}}}", json!(board)), board, 2),
                with_seq("{}", board, 2)
            );
        }
    }
}
