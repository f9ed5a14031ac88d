//! Sensor logs made from captures in other forms.
//!
//! The one form read so far is the "inbytes" capture: a text file with one line per
//! read from the serial port, the bytes of that read in standard base64. It carries
//! no times, so they are rebuilt from what the board's clock showed: the clock sends
//! its two displayed times (0x8d messages) several times a second, and a change of
//! either displayed time means a second has passed.

use base64::Engine as _;

use super::read::LogError;
use super::record::{Header, LogTime, Record, RecordKind, SensorLog};
use crate::protocol::{BoardMessage, ClockTime, Decoded, Decoder};

/// The time added for a read that does not change the displayed clock times.
pub const READ_STEP: LogTime = LogTime::from_micros(10_000);

/// How the times of an imported capture were made (its `timing` header field).
pub const TIMING: &str = "rebuilt from the clock: the next whole second at each change of the displayed times, 10 ms per read otherwise";

/// Turns an inbytes capture (one base64 line per serial read) into a sensor log of
/// `rx` records, one a read, in order. `file` names the capture in errors and in the
/// log's `source` header field.
///
/// Times: the first read is at 0. A read that completes a clock report whose
/// displayed times (left and right, the status byte aside) differ from those of the
/// clock report before it is at the next whole second; any other read is 10 ms
/// after the one before. The bytes go through the protocol decoder to find the
/// clock reports, so a report split over reads counts in the read that ends it.
/// Blank lines are not reads and are passed over.
pub fn from_inbytes(text: &str, file: &str) -> Result<SensorLog, LogError> {
    let err = |line: usize, problem: String| LogError {
        file: file.to_string(),
        line,
        problem,
    };
    let mut decoder = Decoder::new();
    let mut shown: Option<(ClockTime, ClockTime)> = None;
    let mut records: Vec<Record> = Vec::new();
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let word = line.trim();
        if word.is_empty() {
            continue;
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(word)
            .map_err(|e| {
                err(
                    line_no,
                    format!("not base64 ({e}): `{}`", super::clip_to(word, 40)),
                )
            })?;
        let mut ticked = false;
        decoder.feed_with(&bytes, |d| {
            if let Decoded::Message(BoardMessage::Clock(status)) = d {
                let now = (status.left, status.right);
                ticked |= shown.is_some_and(|before| before != now);
                shown = Some(now);
            }
        });
        let time = match records.last() {
            None => Some(0),
            Some(last) if ticked => (last.time.micros() / 1_000_000)
                .checked_add(1)
                .and_then(|s| s.checked_mul(1_000_000)),
            Some(last) => last.time.micros().checked_add(READ_STEP.micros()),
        }
        .map(LogTime::from_micros)
        .filter(|t| *t <= LogTime::MAX)
        .ok_or_else(|| {
            err(
                line_no,
                format!(
                    "the capture runs past {} s, the longest a log holds",
                    LogTime::MAX
                ),
            )
        })?;
        records.push(Record {
            time,
            kind: RecordKind::Rx(bytes),
        });
        lines.push(line_no);
    }
    let mut header = Header::default();
    header.set("source", file);
    header.set("timing", TIMING);
    Ok(SensorLog {
        header,
        records,
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(log: &SensorLog) -> Vec<String> {
        log.records.iter().map(|r| r.time.to_string()).collect()
    }

    /// A clock report with the given seconds on the right and left sides and status.
    fn clock(right_s: u8, left_s: u8, status: u8) -> Vec<u8> {
        vec![0x8d, 0x00, 0x0a, 0x00, 0x05, right_s, 0x00, 0x05, left_s, status]
    }

    fn line(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn a_change_of_the_shown_times_starts_the_next_second_and_other_reads_add_10_ms() {
        let field = [0x8e, 0x00, 0x05, 0x34, 0x00];
        let text = [
            line(&clock(0x00, 0x00, 0x01)), // first report: not a change
            line(&clock(0x00, 0x00, 0x09)), // status only: not a change
            line(&field),
            line(&clock(0x00, 0x59, 0x09)), // left changed
            line(&field),
            line(&field),
            line(&clock(0x00, 0x58, 0x09)),
        ]
        .join("\n");
        let log = from_inbytes(&text, "t.inbytes").unwrap();
        assert_eq!(
            times(&log),
            ["0.000", "0.010", "0.020", "1.000", "1.010", "1.020", "2.000"]
        );
        assert_eq!(log.records[2].kind, RecordKind::Rx(field.to_vec()));
        assert_eq!(log.lines, [1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(log.header.get("source"), Some("t.inbytes"));
    }

    #[test]
    fn a_report_split_over_reads_counts_where_it_ends_and_many_reads_never_go_back() {
        let report = clock(0x00, 0x30, 0x01);
        let changed = clock(0x00, 0x29, 0x01);
        let mut lines = vec![line(&report), line(&changed[..4]), line(&changed[4..])];
        // 150 reads without a change pass the next second; the change after them
        // still goes forward.
        lines.extend((0..150).map(|_| line(&[0x8e, 0x00, 0x05, 0x34, 0x00])));
        lines.push(line(&clock(0x00, 0x28, 0x01)));
        let log = from_inbytes(&lines.join("\n\n"), "t").unwrap();
        let t = times(&log);
        assert_eq!(t[..3], ["0.000", "0.010", "1.000"]);
        assert_eq!(t[152], "2.500");
        assert_eq!(t[153], "3.000");
        assert!(log.records.windows(2).all(|w| w[0].time <= w[1].time));
    }

    #[test]
    fn a_line_that_is_not_base64_is_an_error_naming_file_and_line() {
        let e = from_inbytes("jgAFNAA=\n\nnot*base64\n", "x.inbytes").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("x.inbytes", 3));
        assert!(e.problem.starts_with("not base64"), "{e}");
        assert!(e.to_string().contains("`not*base64`"), "{e}");
    }

    #[test]
    fn an_empty_capture_is_an_empty_log() {
        let log = from_inbytes("\n \n", "e").unwrap();
        assert!(log.records.is_empty());
    }
}
