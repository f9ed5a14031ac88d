//! Reading sensor logs: strict, with errors that name the file, the line and the
//! problem.

use shakmaty::{Piece, Square};

use super::quick::quick_record;
use super::record::{Header, LogTime, MAGIC, Record, RecordKind, Running, SETTINGS_KEY, SensorLog};
use super::split::{Lines, Words};
use crate::protocol::{ClockButton, ClockSide, ClockTime, Placement};
use crate::text::clip_to;

/// A sensor log that cannot be read: where and why (`FILE:LINE: problem`, or
/// `FILE: problem` when the problem is the file as a whole).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {problem}", at_line(*.line))]
pub struct LogError {
    pub file: String,
    /// 1-based; 0 when the problem is the file as a whole.
    pub line: usize,
    pub problem: String,
}

/// `:LINE`, or nothing for line 0 (the file as a whole).
fn at_line(line: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}")
    }
}

/// Why one record of a sensor log does not read (its file and line are added
/// by [`LogError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RecordError(pub String);

impl From<String> for RecordError {
    fn from(s: String) -> RecordError {
        RecordError(s)
    }
}

impl From<&str> for RecordError {
    fn from(s: &str) -> RecordError {
        RecordError(s.to_string())
    }
}

/// A sensor log's bytes as its text; `file` names it in errors (a log is
/// UTF-8: what is not says where). Reading the file is the caller's (the
/// daemon's `log::files`): this crate does no I/O.
pub fn decode_text<'b>(bytes: &'b [u8], file: &str) -> Result<&'b str, LogError> {
    std::str::from_utf8(bytes).map_err(|e| not_utf8(file, bytes, e))
}

/// What a file that cannot be read is, as a log's error.
pub fn cannot_read(file: &str, problem: &dyn std::fmt::Display) -> LogError {
    LogError {
        file: file.to_string(),
        line: 0,
        problem: format!("cannot read: {problem}"),
    }
}

/// The line of the first byte that is not UTF-8.
fn not_utf8(file: &str, bytes: &[u8], e: std::str::Utf8Error) -> LogError {
    let line = 1 + bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count();
    LogError {
        file: file.to_string(),
        line,
        problem: "not UTF-8 text".into(),
    }
}

/// Parses the text of a sensor log; `file` names it in errors.
pub fn parse_log(text: &str, file: &str) -> Result<SensorLog, LogError> {
    parse(text, file, None)
}

/// Parses a sensor log that must not stop its reader (the daemon's journal): a
/// malformed record, or one whose time goes back, is left out and reported in
/// `skipped`; only a missing header is an error.
pub fn parse_log_lenient(text: &str, file: &str, skipped: &mut Vec<LogError>) -> Result<SensorLog, LogError> {
    parse(text, file, Some(skipped))
}

fn parse(text: &str, file: &str, lenient: Option<&mut Vec<LogError>>) -> Result<SensorLog, LogError> {
    let mut records = Vec::new();
    let mut lines = Vec::new();
    let header = parse_each(text, file, lenient, |_, record, line| {
        records.push(record);
        lines.push(line);
        Ok(())
    })?;
    Ok(SensorLog {
        header,
        records,
        lines,
    })
}

/// Parses a sensor log record by record, in file order: `each` is given the
/// header (complete by the first record), each record and its 1-based line, and
/// may stop the reading with an error of its own. Returns the header.
pub fn parse_each(
    text: &str,
    file: &str,
    mut lenient: Option<&mut Vec<LogError>>,
    mut each: impl FnMut(&Header, Record, usize) -> Result<(), LogError>,
) -> Result<Header, LogError> {
    let err = |line: usize, problem: String| LogError {
        file: file.to_string(),
        line,
        problem,
    };
    let mut header = Header::default();
    let mut any = false;
    let mut lines = Lines { rest: Some(text) }
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)));
    match lines.next() {
        Some((_, first)) if first == MAGIC => {}
        Some((_, first)) => {
            return Err(err(
                1,
                format!(
                    "missing header: the first line must be `{MAGIC}`, found `{}`",
                    clip(first)
                ),
            ));
        }
        None => return Err(err(1, format!("missing header: empty file, expected `{MAGIC}`"))),
    }
    let mut last = LogTime::default();
    for (n, line) in lines {
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            let Some((key, value)) = comment
                .trim()
                .split_once(':')
                .map(|(k, v)| (k.trim(), v.trim()))
                .filter(|(k, _)| !k.is_empty() && !k.contains(char::is_whitespace))
            else {
                continue;
            };
            if !any {
                header.fields.push((key.to_string(), value.to_string()));
            } else if key == SETTINGS_KEY {
                // The settings from here on: a record without a time of its own.
                let settings = settings_line(value).map(|json| Record {
                    time: last,
                    kind: RecordKind::Settings(json),
                });
                match (settings, lenient.as_deref_mut()) {
                    (Ok(r), _) => each(&header, r, n)?,
                    (Err(p), Some(skipped)) => skipped.push(err(n, p.0)),
                    (Err(p), None) => return Err(err(n, p.0)),
                }
            }
            continue;
        }
        let record = parse_record(trimmed).map_err(|p| err(n, p.0)).and_then(|r| {
            if r.time < last {
                Err(err(n, format!("time goes back: {} after {}", r.time, last)))
            } else {
                Ok(r)
            }
        });
        let record = match (record, lenient.as_deref_mut()) {
            (Ok(r), _) => r,
            (Err(e), Some(skipped)) => {
                skipped.push(e);
                continue;
            }
            (Err(e), None) => return Err(e),
        };
        last = record.time;
        any = true;
        each(&header, record, n)?;
    }
    Ok(header)
}

/// The JSON object of a `# settings:` line, checked to be one (the rules core
/// reads its fields).
fn settings_line(value: &str) -> Result<String, RecordError> {
    match serde_json::from_str::<serde_json::Value>(value) {
        Ok(serde_json::Value::Object(_)) => Ok(value.to_string()),
        _ => Err(format!("`# {SETTINGS_KEY}:` takes one JSON object, not `{}`", clip(value)).into()),
    }
}

/// Parses one record line (not blank, not a comment).
pub fn parse_record(line: &str) -> Result<Record, RecordError> {
    quick_record(line).map_or_else(|| parse_general(line), Ok)
}

/// [`parse_record`] for any record, word by word.
pub(super) fn parse_general(line: &str) -> Result<Record, RecordError> {
    let mut words = Words { rest: line };
    let time_word = words.next().ok_or("empty record")?;
    let time = LogTime::parse(time_word).ok_or_else(|| {
        format!(
            "bad time `{}`: expected seconds such as 12 or 12.345678",
            clip(time_word)
        )
    })?;
    let verb = words.next().ok_or("record has a time but no verb")?;
    if let "rx" | "tx" = verb {
        let bytes = parse_hex(&words.collect::<Vec<&str>>())?;
        return Ok(Record {
            time,
            kind: if verb == "rx" {
                RecordKind::Rx(bytes)
            } else {
                RecordKind::Tx(bytes)
            },
        });
    }
    // The other verbs take at most 3 words (the rest of the line is read again
    // where it is text): the first 3 kept, all counted, nothing allocated.
    let mut few = [""; 3];
    let mut count = 0;
    for w in words {
        if let Some(slot) = few.get_mut(count) {
            *slot = w;
        }
        count += 1;
    }
    let args = Args {
        few: &few[..count.min(3)],
        count,
    };
    let kind = match verb {
        "board" => {
            let [fen] = exact::<1>(verb, &args)?;
            let board = shakmaty::Board::from_ascii_board_fen(fen.as_bytes())
                .map_err(|e| format!("bad board placement `{}`: {e}", clip(fen)))?;
            RecordKind::Board(Box::new(Placement::from_board(&board)))
        }
        "lift" => match args.words() {
            [sq] => RecordKind::Lift {
                square: square(sq)?,
                piece: None,
            },
            [sq, p] => RecordKind::Lift {
                square: square(sq)?,
                piece: Some(piece(p)?),
            },
            _ => {
                return Err(format!("lift takes SQUARE [PIECE], got {} argument(s)", args.count).into());
            }
        },
        "place" => {
            let [sq, p] = exact::<2>(verb, &args)?;
            RecordKind::Place {
                square: square(sq)?,
                piece: piece(p)?,
            }
        }
        "clock" => {
            let [a, b, c] = exact::<3>(verb, &args)?;
            let left = clock_time(key_value(a, "left")?)?;
            let right = clock_time(key_value(b, "right")?)?;
            let running = match key_value(c, "running")? {
                "left" => Running::Left,
                "right" => Running::Right,
                "none" => Running::None,
                other => {
                    return Err(format!("running must be left, right or none, not `{}`", clip(other)).into());
                }
            };
            RecordKind::Clock { left, right, running }
        }
        "press" => {
            let [side] = exact::<1>(verb, &args)?;
            RecordKind::Press(match side {
                "left" => ClockSide::Left,
                "right" => ClockSide::Right,
                other => return Err(format!("press takes left or right, not `{}`", clip(other)).into()),
            })
        }
        "button" => {
            let [n] = exact::<1>(verb, &args)?;
            let b = n.parse::<u8>().ok().and_then(ClockButton::from_number);
            RecordKind::Button(
                b.ok_or_else(|| RecordError(format!("button must be 0 to 4, not `{}`", clip(n))))?,
            )
        }
        "note" | "gap" => {
            // The text is the rest of the line after the verb, as written (the time
            // before it is digits and a point, so the first match is the verb).
            let after_verb = line.find(verb).map_or("", |i| &line[i + verb.len()..]);
            let text = after_verb.trim().to_string();
            if verb == "gap" {
                RecordKind::Gap(text)
            } else {
                RecordKind::Note(text)
            }
        }
        "arbiter" => {
            let method = args.few.first().ok_or("arbiter takes METHOD ARGS...")?;
            if !method.chars().all(|c| c.is_ascii_alphanumeric()) || method.is_empty() {
                return Err(format!("bad arbiter method `{}`", clip(method)).into());
            }
            // The arguments are JSON values separated by blanks (a string may hold
            // blanks itself, so they are read from the rest of the line).
            let after = line.find("arbiter").map_or("", |i| &line[i + "arbiter".len()..]);
            let rest = after.trim_start().get(method.len()..).unwrap_or("");
            let mut values = Vec::new();
            for v in serde_json::Deserializer::from_str(rest).into_iter::<serde_json::Value>() {
                let v = v.map_err(|e| format!("arbiter {method}: bad JSON argument: {e}"))?;
                values.push(v.to_string());
            }
            RecordKind::Arbiter {
                method: method.to_string(),
                args: values,
            }
        }
        other => {
            return Err(format!(
                "unknown verb `{}` (expected rx, tx, board, lift, place, clock, press, button, note, gap or arbiter)",
                clip(other)
            ).into());
        }
    };
    Ok(Record { time, kind })
}

/// A record's words after the verb: the first few, and how many there are.
struct Args<'a, 'w> {
    few: &'w [&'a str],
    count: usize,
}

impl<'a> Args<'a, '_> {
    /// The words, when all of them were kept; none when there were more (the
    /// count says how many, for the error).
    fn words(&self) -> &[&'a str] {
        if self.count == self.few.len() {
            self.few
        } else {
            &[]
        }
    }
}

fn exact<'a, const N: usize>(verb: &str, args: &Args<'a, '_>) -> Result<[&'a str; N], RecordError> {
    <[&str; N]>::try_from(args.words())
        .map_err(|_| RecordError(format!("{verb} takes {N} argument(s), got {}", args.count)))
}

fn parse_hex(args: &[&str]) -> Result<Vec<u8>, RecordError> {
    let mut out = Vec::new();
    for word in args {
        if word.len() % 2 != 0 {
            return Err(format!("bad hex `{}`: odd number of digits", clip(word)).into());
        }
        for pair in word.as_bytes().chunks(2) {
            let s = std::str::from_utf8(pair).unwrap_or("");
            let b = u8::from_str_radix(s, 16)
                .ok()
                .filter(|_| pair.iter().all(u8::is_ascii_hexdigit))
                .ok_or_else(|| RecordError(format!("bad hex `{}`", clip(word))))?;
            out.push(b);
        }
    }
    if out.is_empty() {
        return Err("no bytes given".into());
    }
    Ok(out)
}

fn square(s: &str) -> Result<Square, RecordError> {
    s.parse::<Square>()
        .map_err(|_| RecordError(format!("bad square `{}`: expected a1 to h8", clip(s))))
}

fn piece(s: &str) -> Result<Piece, RecordError> {
    let mut chars = s.chars();
    match (chars.next().and_then(Piece::from_char), chars.next()) {
        (Some(p), None) => Ok(p),
        _ => Err(format!("bad piece `{}`: expected one of PNBRQK pnbrqk", clip(s)).into()),
    }
}

fn key_value<'a>(word: &'a str, key: &str) -> Result<&'a str, RecordError> {
    word.strip_prefix(key)
        .and_then(|r| r.strip_prefix('='))
        .ok_or_else(|| RecordError(format!("expected {key}=..., found `{}`", clip(word))))
}

fn clock_time(s: &str) -> Result<ClockTime, RecordError> {
    ClockTime::parse(s).ok_or_else(|| {
        RecordError(format!(
            "bad clock time `{}`: expected H:MM:SS or H:MM:SS.f",
            clip(s)
        ))
    })
}

/// At most 40 characters of user input, for error messages.
fn clip(s: &str) -> String {
    clip_to(s, 40)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lenient_read_skips_bad_lines_and_says_where() {
        let text = "# eboard-sensor-log 1\n0 board 8/8/8/8/8/8/4P3/8\n1 rx 8z\n2 lift e2 P\n1.5 place e3 P\n3 place e4 P\n";
        let mut skipped = Vec::new();
        let log = parse_log_lenient(text, "j.esl", &mut skipped).unwrap();
        assert_eq!(log.records.len(), 3);
        assert_eq!(log.lines, vec![2, 4, 6]);
        let said: Vec<String> = skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            said,
            vec![
                "j.esl:3: bad hex `8z`",
                "j.esl:5: time goes back: 1.500 after 2.000"
            ]
        );
        assert!(parse_log(text, "j.esl").is_err());
    }

    const EXAMPLE: &str = "# eboard-sensor-log 1\n# board: DGT e-Board USB\n# serial: 12345\n\n0.000 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n0.000 clock left=0:05:00 right=0:05:00 running=left\n1.200 lift e2 P\n1.600\tplace  e4 P\n1.900 press left\n# a comment\n2.0 rx 8e00053400\n2.1 tx 42\n2.2 button 4\n3 note arbiter stops  the clocks\n";

    #[test]
    fn reads_every_verb_and_header() {
        let log = parse_log(EXAMPLE, "ex.esl").unwrap();
        assert_eq!(log.header.get("board"), Some("DGT e-Board USB"));
        assert_eq!(log.header.get("serial"), Some("12345"));
        assert_eq!(log.records.len(), 9);
        assert_eq!(log.lines, vec![5, 6, 7, 8, 9, 11, 12, 13, 14]);
        assert_eq!(
            log.records[2].kind,
            RecordKind::Lift {
                square: Square::E2,
                piece: Piece::from_char('P')
            }
        );
        assert_eq!(log.records[5].kind, RecordKind::Rx(vec![0x8e, 0, 5, 0x34, 0]));
        assert_eq!(
            log.records[8].kind,
            RecordKind::Note("arbiter stops  the clocks".into())
        );
    }

    /// The settings: a header field before the first record; after it, a
    /// `# settings:` line is a record of its own at the time of the one before,
    /// written back as the same comment line. One that is not a JSON object is
    /// refused with its line (skipped by a lenient read).
    #[test]
    fn settings_lines_are_records_after_the_header() {
        let text = "# eboard-sensor-log 1\n# settings: {\"release_ms\":100}\n0 board 8/8/8/8/8/8/4P3/8\n# resumed 2026-11-26T03:56:08Z\n#  settings:  {\"release_ms\":300}\n2 lift e2 P\n";
        let log = parse_log(text, "s.esl").unwrap();
        assert_eq!(log.header.get("settings"), Some("{\"release_ms\":100}"));
        assert_eq!(log.records.len(), 3);
        assert_eq!(log.lines, vec![3, 5, 6]);
        let settings = &log.records[1];
        assert_eq!(settings.kind, RecordKind::Settings("{\"release_ms\":300}".into()));
        assert_eq!(settings.time, LogTime::default());
        assert_eq!(settings.to_string(), "# settings: {\"release_ms\":300}");
        let again = crate::log::to_string(&log.header, &log.records).unwrap();
        assert_eq!(parse_log(&again, "again.esl").unwrap().records, log.records);

        let bad = "# eboard-sensor-log 1\n0 board 8/8/8/8/8/8/4P3/8\n# settings: release_ms=3\n1 lift e2 P\n";
        let e = parse_log(bad, "b.esl").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.problem.contains("one JSON object"), "{e}");
        let mut skipped = Vec::new();
        let log = parse_log_lenient(bad, "b.esl", &mut skipped).unwrap();
        assert_eq!((log.records.len(), skipped.len()), (2, 1));
    }

    #[test]
    fn errors_name_file_line_and_problem() {
        let cases = [
            ("0 board 8/8/8/8/8/8/8/8\n", 1, "missing header"),
            ("# eboard-sensor-log 1\n0 jump e2\n", 2, "unknown verb `jump`"),
            ("# eboard-sensor-log 1\n0 rx 8g\n", 2, "bad hex `8g`"),
            ("# eboard-sensor-log 1\n0 rx 8e0\n", 2, "odd number"),
            ("# eboard-sensor-log 1\n0 lift i9\n", 2, "bad square `i9`"),
            (
                "# eboard-sensor-log 1\n1 lift e2\n0.5 place e4 P\n",
                3,
                "time goes back",
            ),
            ("# eboard-sensor-log 1\n0 place e4 X\n", 2, "bad piece `X`"),
            (
                "# eboard-sensor-log 1\n0 clock left=0:61:00 right=0:05:00 running=left\n",
                2,
                "bad clock time",
            ),
            (
                "# eboard-sensor-log 1\n0 press up\n",
                2,
                "press takes left or right",
            ),
            ("# eboard-sensor-log 1\n0 button 7\n", 2, "button must be 0 to 4"),
            ("# eboard-sensor-log 1\nsoon lift e2\n", 2, "bad time"),
            (
                "# eboard-sensor-log 1\n0 board rnbqkbnr/ppp\n",
                2,
                "bad board placement",
            ),
        ];
        for (text, line, what) in cases {
            let e = parse_log(text, "t.esl").unwrap_err();
            assert_eq!((e.file.as_str(), e.line), ("t.esl", line), "{text}");
            assert!(e.problem.contains(what), "{e} should say {what}");
            assert!(e.to_string().starts_with(&format!("t.esl:{line}: ")));
        }
    }
}
