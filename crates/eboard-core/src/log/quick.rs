//! The records a log is mostly made of, read straight from their bytes (a
//! record read word by word cost more than the rules core's work on it, over
//! many short logs: `docs/PERFORMANCE.md`, issue 36).

use shakmaty::{File, Piece, Rank, Square};

use super::record::{LogTime, Record, RecordKind};
use crate::protocol::ClockSide;

/// The records a log is mostly made of, `lift`, `place` and `press`, as the
/// log writer writes them (one blank between words, nothing after), read
/// straight from the bytes. Anything else, an error included, is `None` and
/// goes to the general reading, which reads these the same way.
pub(super) fn quick_record(line: &str) -> Option<Record> {
    let b = line.as_bytes();
    let blank = b.iter().position(|&c| c == b' ')?;
    let time = LogTime::parse(&line[..blank])?;
    let square = |f: u8, r: u8| {
        let (f, r) = (f.wrapping_sub(b'a'), r.wrapping_sub(b'1'));
        (f < 8 && r < 8).then(|| Square::from_coords(File::new(u32::from(f)), Rank::new(u32::from(r))))
    };
    let piece = |c: u8| Piece::from_char(char::from(c));
    let kind = match b[blank + 1..] {
        [b'l', b'i', b'f', b't', b' ', f, r] => RecordKind::Lift {
            square: square(f, r)?,
            piece: None,
        },
        [b'l', b'i', b'f', b't', b' ', f, r, b' ', p] => RecordKind::Lift {
            square: square(f, r)?,
            piece: Some(piece(p)?),
        },
        [b'p', b'l', b'a', b'c', b'e', b' ', f, r, b' ', p] => RecordKind::Place {
            square: square(f, r)?,
            piece: piece(p)?,
        },
        [b'p', b'r', b'e', b's', b's', b' ', ref side @ ..] => RecordKind::Press(match side {
            b"left" => ClockSide::Left,
            b"right" => ClockSide::Right,
            _ => return None,
        }),
        _ => return None,
    };
    Some(Record { time, kind })
}

#[cfg(test)]
mod tests {
    use super::super::read::parse_general;
    use super::*;

    /// Every line the quick reading takes is read the same way word by word,
    /// and it takes every `lift`, `place` and `press` the log writer writes:
    /// all squares and pieces, times with 0 to 6 decimals, and near misses
    /// (blanks doubled, tabs, a bad square, piece, side or time, words more
    /// or fewer), which it leaves to the general reading.
    #[test]
    fn quick_records_are_read_as_word_by_word() {
        let squares: Vec<String> = (b'a'..=b'i')
            .flat_map(|f| (b'0'..=b'9').map(move |r| format!("{}{}", f as char, r as char)))
            .chain(["A1", "e", "e22", "é2"].map(String::from))
            .collect();
        let pieces = [
            "P", "N", "B", "R", "Q", "K", "p", "n", "b", "r", "q", "k", "X", "pp", "", "1",
        ];
        let times = [
            "0",
            "12",
            "3.5",
            "301.250000",
            "0.000001",
            "1234567",
            "1.",
            ".5",
            "1.1234567",
            "1e3",
        ];
        let mut lines = Vec::new();
        for t in times {
            for sq in &squares {
                for p in pieces {
                    lines.push(format!("{t} lift {sq} {p}"));
                    lines.push(format!("{t} place {sq} {p}"));
                }
                lines.push(format!("{t} lift {sq}"));
                lines.push(format!("{t} place {sq}"));
            }
            for side in ["left", "right", "up", "", "left right"] {
                lines.push(format!("{t} press {side}"));
            }
        }
        let variants: Vec<String> = lines
            .iter()
            .flat_map(|l| {
                [
                    l.replacen(' ', "  ", 1),
                    l.replace(' ', "\t"),
                    format!("{l} "),
                    format!("{l}x"),
                ]
            })
            .collect();
        let (mut quick, mut written) = (0, 0);
        for line in lines.iter().chain(&variants) {
            let general = parse_general(line);
            if let Some(r) = quick_record(line) {
                assert_eq!(general.as_ref(), Ok(&r), "{line}");
                quick += 1;
            }
            // What the writer writes of a record read is read quickly.
            let quick_kind = |r: &Record| {
                matches!(
                    r.kind,
                    RecordKind::Lift { .. } | RecordKind::Place { .. } | RecordKind::Press(_)
                )
            };
            if let Some(r) = general.ok().filter(quick_kind) {
                let text =
                    super::super::to_string(&Default::default(), std::slice::from_ref(&r)).expect("written");
                let record_line = text.lines().last().expect("a record line");
                assert_eq!(quick_record(record_line), Some(r), "{record_line}");
                written += 1;
            }
        }
        assert!(
            quick > 6000 && written >= quick,
            "{quick} read quickly, {written} written"
        );
    }
}
