//! Sensor log records (format version 1, `docs/SENSOR-LOG.md`).

use std::fmt;

use shakmaty::{Piece, Square};

use crate::protocol::{ClockButton, ClockSide, ClockTime, Placement};

/// The first line of every sensor log.
pub const MAGIC: &str = "# eboard-sensor-log 1";

/// The header field that states the settings a log was judged by (one JSON
/// object); after the first record, a comment line `# settings: {...}` states
/// the settings from there on (`docs/SENSOR-LOG.md`).
pub const SETTINGS_KEY: &str = "settings";

/// A time in a log: microseconds since the start of the log (the format allows at
/// most 6 fractional digits of seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct LogTime(u64);

impl LogTime {
    /// The largest time accepted (about 11.5 days), far beyond any session.
    pub const MAX: LogTime = LogTime(999_999 * 1_000_000);

    pub const fn from_micros(us: u64) -> LogTime {
        LogTime(us)
    }

    pub const fn micros(self) -> u64 {
        self.0
    }

    pub fn seconds(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Parses `12`, `12.5`, `301.250000`: digits, optionally a point and 1 to 6 digits.
    pub fn parse(s: &str) -> Option<LogTime> {
        // 1 to 6 digits, then optionally a point and 1 to 6 digits: one pass,
        // each byte looked at once.
        const SCALE: [u64; 7] = [1_000_000, 100_000, 10_000, 1000, 100, 10, 1];
        let b = s.as_bytes();
        let (mut secs, mut int) = (0u64, 0);
        while let Some(c) = b.get(int).filter(|c| c.is_ascii_digit()) {
            if int == 6 {
                return None;
            }
            secs = secs * 10 + u64::from(c - b'0');
            int += 1;
        }
        if int == 0 {
            return None;
        }
        let frac = match &b[int..] {
            [] => return Some(LogTime(secs * 1_000_000)),
            [b'.', frac @ ..] if (1..=6).contains(&frac.len()) => frac,
            _ => return None,
        };
        let mut us = 0u64;
        for c in frac {
            if !c.is_ascii_digit() {
                return None;
            }
            us = us * 10 + u64::from(c - b'0');
        }
        Some(LogTime(secs * 1_000_000 + us * SCALE[frac.len()]))
    }
}

impl fmt::Display for LogTime {
    /// Seconds with 3 decimals, or 6 when the time is not a whole millisecond.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (s, us) = (self.0 / 1_000_000, self.0 % 1_000_000);
        if us % 1000 == 0 {
            write!(f, "{s}.{:03}", us / 1000)
        } else {
            write!(f, "{s}.{us:06}")
        }
    }
}

/// What a `clock` record says is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Running {
    Left,
    Right,
    None,
}

impl Running {
    pub fn side(self) -> Option<ClockSide> {
        match self {
            Running::Left => Some(ClockSide::Left),
            Running::Right => Some(ClockSide::Right),
            Running::None => None,
        }
    }

    pub fn from_side(side: Option<ClockSide>) -> Running {
        match side {
            Some(ClockSide::Left) => Running::Left,
            Some(ClockSide::Right) => Running::Right,
            None => Running::None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Running::Left => "left",
            Running::Right => "right",
            Running::None => "none",
        }
    }
}

/// One record: a verb and its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// Bytes read from the board, as one read returned them.
    Rx(Vec<u8>),
    /// Bytes written to the board.
    Tx(Vec<u8>),
    /// The whole board, in board numbering.
    Board(Box<Placement>),
    /// The piece on `square` left it; `piece`, when given, is what stood there.
    Lift {
        square: Square,
        piece: Option<Piece>,
    },
    /// `piece` arrived on `square`.
    Place {
        square: Square,
        piece: Piece,
    },
    Clock {
        left: ClockTime,
        right: ClockTime,
        running: Running,
    },
    Press(ClockSide),
    Button(ClockButton),
    Note(String),
    /// The recording lost something here (the line was away, bytes were skipped, a
    /// write failed): what follows resynchronises from the next board dump.
    Gap(String),
    /// An arbiter's accepted call: the D-Bus method and its arguments, each as the
    /// text of one JSON value.
    Arbiter {
        method: String,
        args: Vec<String>,
    },
    /// A comment line `# settings: {...}` after the first record: the settings
    /// that judge the log from here on (a JSON object, the daemon's configuration
    /// when it resumed; `rules::Settings`). Its time is the record's before it;
    /// it is written without one, as a comment, which readers that do not know
    /// it pass over.
    Settings(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    pub time: LogTime,
    pub kind: RecordKind,
}

impl Record {
    /// Appends the line of a record of `kind` at `time` to `out`, with its line end
    /// and any line break in its text folded into a space (the journal's writes;
    /// bytes are written without the formatter, a board's every read is one).
    pub fn append_line(time: LogTime, kind: &RecordKind, out: &mut String) {
        use fmt::Write;
        let start = out.len();
        if let RecordKind::Settings(json) = kind {
            let _ = writeln!(out, "# {SETTINGS_KEY}: {}", json.replace(['\n', '\r'], " "));
            return;
        }
        let _ = write!(out, "{time} ");
        match kind {
            RecordKind::Rx(b) => append_hex(out, "rx", b),
            RecordKind::Tx(b) => append_hex(out, "tx", b),
            RecordKind::Note(_) | RecordKind::Gap(_) | RecordKind::Arbiter { .. } => {
                let _ = write!(out, "{}", KindText(kind));
                if out[start..].contains(['\n', '\r']) {
                    let folded = out[start..].replace(['\n', '\r'], " ");
                    out.truncate(start);
                    out.push_str(&folded);
                }
            }
            _ => {
                let _ = write!(out, "{}", KindText(kind));
            }
        }
        out.push('\n');
    }
}

/// `verb` and `bytes` in hex, a space before each.
fn append_hex(out: &mut String, verb: &str, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(verb.len() + 3 * bytes.len());
    out.push_str(verb);
    for b in bytes {
        out.push(' ');
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
}

impl fmt::Display for Record {
    /// The record as one line of a sensor log (without the line end).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            RecordKind::Settings(_) => write!(f, "{}", KindText(&self.kind)),
            _ => write!(f, "{} {}", self.time, KindText(&self.kind)),
        }
    }
}

/// What a record says after its time.
struct KindText<'a>(&'a RecordKind);

impl fmt::Display for KindText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = |f: &mut fmt::Formatter<'_>, verb: &str, bytes: &[u8]| {
            let mut s = String::new();
            append_hex(&mut s, verb, bytes);
            f.write_str(&s)
        };
        match self.0 {
            RecordKind::Rx(b) => hex(f, "rx", b),
            RecordKind::Tx(b) => hex(f, "tx", b),
            RecordKind::Board(p) => write!(f, "board {p}"),
            RecordKind::Lift {
                square,
                piece: Some(p),
            } => write!(f, "lift {square} {}", p.char()),
            RecordKind::Lift { square, piece: None } => write!(f, "lift {square}"),
            RecordKind::Place { square, piece } => write!(f, "place {square} {}", piece.char()),
            RecordKind::Clock { left, right, running } => {
                write!(f, "clock left={left} right={right} running={}", running.name())
            }
            RecordKind::Press(side) => write!(f, "press {side}"),
            RecordKind::Button(b) => write!(f, "button {}", b.number()),
            RecordKind::Note(text) => write!(f, "note {text}"),
            RecordKind::Gap(text) => write!(f, "gap {text}"),
            RecordKind::Arbiter { method, args } => {
                write!(f, "arbiter {method}")?;
                for a in args {
                    write!(f, " {a}")?;
                }
                Ok(())
            }
            RecordKind::Settings(json) => write!(f, "# {SETTINGS_KEY}: {json}"),
        }
    }
}

/// Header fields (`# key: value` comments before the first record), in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Header {
    pub fields: Vec<(String, String)>,
}

impl Header {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn set(&mut self, key: &str, value: &str) {
        match self.fields.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value.to_string(),
            None => self.fields.push((key.to_string(), value.to_string())),
        }
    }
}

/// A whole sensor log: its header and its records with their line numbers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SensorLog {
    pub header: Header,
    pub records: Vec<Record>,
    /// The 1-based line of each record in the file it was read from (empty for a
    /// log built in memory).
    pub lines: Vec<usize>,
}

impl SensorLog {
    /// The line of record `index`, when known.
    pub fn line_of(&self, index: usize) -> Option<usize> {
        self.lines.get(index).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_and_print() {
        assert_eq!(LogTime::parse("0"), Some(LogTime(0)));
        assert_eq!(LogTime::parse("12.5"), Some(LogTime(12_500_000)));
        assert_eq!(LogTime::parse("301.250000"), Some(LogTime(301_250_000)));
        assert_eq!(LogTime::parse("0.000001"), Some(LogTime(1)));
        for bad in ["", ".5", "5.", "1.1234567", "-1", "1e3", "1,5", "+1", "1234567"] {
            assert_eq!(LogTime::parse(bad), None, "{bad}");
        }
        assert_eq!(LogTime(12_500_000).to_string(), "12.500");
        assert_eq!(LogTime(1).to_string(), "0.000001");
    }

    /// The one-pass parser accepts and reads exactly what the parser it
    /// replaced did (kept here as the reference), over every string of up to 6
    /// characters from digits, a point and a few others, and longer ones.
    #[test]
    fn times_parse_as_the_reference_parser_did() {
        fn reference(s: &str) -> Option<LogTime> {
            let (int, frac) = s.split_once('.').unwrap_or((s, ""));
            if int.is_empty() || int.len() > 6 || !int.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            if s.contains('.') && (frac.is_empty() || frac.len() > 6)
                || !frac.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            let secs: u64 = int.parse().ok()?;
            let mut us = 0u64;
            if !frac.is_empty() {
                us = frac.parse::<u64>().ok()? * 10u64.pow(6 - frac.len() as u32);
            }
            Some(LogTime(secs * 1_000_000 + us))
        }
        let alphabet = ['0', '1', '9', '.', ' ', 'x', '+', '٣'];
        let mut words = vec![String::new()];
        let mut checked = 0;
        for _ in 0..6 {
            let mut next = Vec::new();
            for w in &words {
                for c in alphabet {
                    let mut v = w.clone();
                    v.push(c);
                    assert_eq!(LogTime::parse(&v), reference(&v), "{v:?}");
                    checked += 1;
                    next.push(v);
                }
            }
            words = next;
        }
        for long in [
            "123456.123456",
            "999999.999999",
            "1234567.1",
            "12.1234567",
            "000000.000000",
        ] {
            assert_eq!(LogTime::parse(long), reference(long), "{long:?}");
        }
        assert!(checked > 290_000, "{checked}");
    }

    #[test]
    fn a_journal_line_is_the_record_with_its_line_end_and_text_on_one_line() {
        let t = LogTime(301_250_001);
        let kinds = [
            RecordKind::Rx(vec![0x8e, 0x00, 0x05, 0x0c, 0x01]),
            RecordKind::Tx(vec![0x42]),
            RecordKind::Rx(Vec::new()),
            RecordKind::Lift {
                square: Square::E2,
                piece: Some(Piece::from_char('P').unwrap()),
            },
            RecordKind::Place {
                square: Square::E4,
                piece: Piece::from_char('P').unwrap(),
            },
            RecordKind::Note("connected".into()),
            RecordKind::Gap("line reconnected".into()),
        ];
        for kind in kinds {
            let mut line = String::new();
            Record::append_line(t, &kind, &mut line);
            assert_eq!(line, format!("{}\n", Record { time: t, kind }));
        }
        let mut line = String::from("kept ");
        Record::append_line(
            LogTime(2_000_000),
            &RecordKind::Note("two\nlines\r".into()),
            &mut line,
        );
        assert_eq!(line, "kept 2.000 note two lines \n");
        let mut line = String::new();
        Record::append_line(LogTime(0), &RecordKind::Rx(vec![0x00, 0xff, 0xa5]), &mut line);
        assert_eq!(line, "0.000 rx 00 ff a5\n");
    }
}
