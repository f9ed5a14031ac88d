//! Sans-IO decoder for the board-to-host byte stream.
//!
//! Bytes go in as they arrive, in chunks of any size; messages (and reports of what
//! was skipped) come out. The decoder works one byte at a time, so how the stream is
//! chunked never changes what comes out, and it holds at most one message in memory
//! (the largest, EEPROM moves, is 7,939 bytes).

use std::fmt;

use super::message::{BoardMessage, ClockAck, ClockStatus, Placement, SideFlags, from_bcd, id};
use super::types::{ClockTime, Field, PieceCode};

/// The largest EEPROM dump a board sends (0x1f00 bytes of moves).
pub const MAX_EEPROM: usize = 0x1f00;
/// The longest trademark text accepted.
pub const MAX_TRADEMARK: usize = 1000;
/// The longest battery payload accepted (sources disagree on its length).
pub const MAX_BATTERY: usize = 32;
/// How many skipped bytes a report keeps as a sample.
pub const SKIP_SAMPLE: usize = 16;

/// The total lengths (header included) a message id may have.
fn length_allowed(msg_id: u8, len: usize) -> Option<bool> {
    let ok = match msg_id {
        id::BOARD_DUMP => len == 67,
        id::FIELD_UPDATE => len == 5,
        id::BWTIME => len == 10,
        id::SERIAL_NR => len == 8,
        id::LONG_SERIAL_NR => len == 13,
        id::VERSION => len == 5,
        id::BUS_ADDRESS => len == 5,
        id::TRADEMARK => (3..=3 + MAX_TRADEMARK).contains(&len),
        id::BATTERY_STATUS => (4..=3 + MAX_BATTERY).contains(&len),
        id::EE_MOVES => (3..=3 + MAX_EEPROM).contains(&len),
        _ => return None,
    };
    Some(ok)
}

/// Why bytes were skipped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// Bytes that start no known message (data bytes without a header, unknown ids).
    Garbage,
    /// A known id with a length it cannot have.
    BadLength { id: u8, length: usize },
    /// A message cut short by a byte with bit 7 set (the start of another message).
    Interrupted { id: u8, expected: usize },
    /// The stream ended inside a message.
    Truncated { id: u8, expected: usize },
    /// A complete message whose contents are impossible.
    BadPayload { id: u8, what: String },
}

/// A report of skipped bytes: where they started, how many, the first few, and why.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Skipped {
    /// Offset in the stream (bytes fed since the decoder was made) of the first byte.
    pub offset: u64,
    pub count: usize,
    pub sample: Vec<u8>,
    pub reason: SkipReason,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skipped {} byte(s) at offset {} (", self.count, self.offset)?;
        for (i, b) in self.sample.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{b:02x}")?;
        }
        if self.count > self.sample.len() {
            f.write_str(" ...")?;
        }
        f.write_str("): ")?;
        match &self.reason {
            SkipReason::Garbage => f.write_str("no message starts here"),
            SkipReason::BadLength { id, length } => {
                write!(f, "message {id:02x} cannot be {length} bytes long")
            }
            SkipReason::Interrupted { id, expected } => {
                write!(
                    f,
                    "message {id:02x} of {expected} bytes interrupted by a new message"
                )
            }
            SkipReason::Truncated { id, expected } => {
                write!(f, "stream ended inside message {id:02x} of {expected} bytes")
            }
            SkipReason::BadPayload { id, what } => write!(f, "message {id:02x}: {what}"),
        }
    }
}

/// One output of the decoder.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Decoded {
    Message(BoardMessage),
    Skipped(Skipped),
}

/// The board-to-host stream decoder.
#[derive(Debug, Default)]
pub struct Decoder {
    /// The message being read, header included; empty while hunting for a header.
    msg: Vec<u8>,
    /// Its total length, once the header is complete.
    need: usize,
    /// Where `msg` started in the stream.
    msg_offset: u64,
    /// Bytes fed so far.
    offset: u64,
    /// Garbage not yet reported.
    garbage: Option<Skipped>,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Feeds bytes and returns what they completed.
    pub fn feed(&mut self, input: &[u8]) -> Vec<Decoded> {
        let mut out = Vec::new();
        self.feed_with(input, |d| out.push(d));
        out
    }

    /// Feeds bytes, handing each output to `sink` as it completes.
    pub fn feed_with(&mut self, input: &[u8], mut sink: impl FnMut(Decoded)) {
        let mut i = 0;
        while let Some(&b) = input.get(i) {
            if self.is_idle() {
                if let Some(n) = self.whole(&input[i..], &mut sink) {
                    i += n;
                    continue;
                }
            }
            self.byte(b, &mut sink);
            self.offset += 1;
            i += 1;
        }
    }

    /// Between messages: a whole, well-formed message at the start of `input`
    /// decoded where it lies, and its length; `None`, with nothing done, when
    /// `input` does not start with one (then the bytes go one at a time). What
    /// comes out is what the bytes one at a time give: a known id, both length
    /// bytes and the payload without bit 7, a length the id may have, and a
    /// payload that parses; anything else goes the byte-at-a-time way. Log
    /// playback hands the decoder one whole message a record.
    fn whole(&mut self, input: &[u8], sink: &mut impl FnMut(Decoded)) -> Option<usize> {
        let [msg_id, hi, lo, ..] = *input else {
            return None;
        };
        if msg_id & 0x80 == 0 || (hi | lo) & 0x80 != 0 {
            return None;
        }
        let len = (usize::from(hi) << 7) | usize::from(lo);
        if length_allowed(msg_id, len) != Some(true) {
            return None;
        }
        let payload = input.get(3..len)?;
        if payload.iter().any(|b| b & 0x80 != 0) {
            return None;
        }
        let m = parse(msg_id, payload).ok()?;
        self.offset += len as u64;
        sink(Decoded::Message(m));
        Some(len)
    }

    /// Ends the stream: reports a message left incomplete and pending garbage.
    pub fn finish(&mut self) -> Vec<Decoded> {
        let mut out = Vec::new();
        if !self.msg.is_empty() {
            let reason = SkipReason::Truncated {
                id: self.msg[0],
                expected: self.need,
            };
            out.push(Decoded::Skipped(self.take_msg(reason)));
        }
        if let Some(g) = self.garbage.take() {
            out.push(Decoded::Skipped(g));
        }
        out
    }

    /// Counts the 5 bytes of a field update that log playback hands on itself,
    /// as if they had been fed: only between messages, where they would be
    /// decoded whole to the same message ([`Decoder::feed_with`]); else false,
    /// and nothing is counted (the bytes must then be fed).
    pub fn pass_field_update(&mut self) -> bool {
        if !self.is_idle() {
            return false;
        }
        self.offset += 5;
        true
    }

    /// Whether the decoder is between messages with nothing pending.
    pub fn is_idle(&self) -> bool {
        self.msg.is_empty() && self.garbage.is_none()
    }

    fn byte(&mut self, b: u8, sink: &mut impl FnMut(Decoded)) {
        let header = b & 0x80 != 0;
        if !self.msg.is_empty() && header {
            // A byte with bit 7 set always starts a new message.
            let reason = SkipReason::Interrupted {
                id: self.msg[0],
                expected: self.need,
            };
            sink(Decoded::Skipped(self.take_msg(reason)));
        }
        if self.msg.is_empty() {
            if header && length_allowed(b, 3).is_some() {
                if let Some(g) = self.garbage.take() {
                    sink(Decoded::Skipped(g));
                }
                self.msg.push(b);
                self.msg_offset = self.offset;
                self.need = 0;
            } else {
                self.add_garbage(b);
            }
            return;
        }
        self.msg.push(b);
        if self.msg.len() == 3 {
            let len = (usize::from(self.msg[1]) << 7) | usize::from(self.msg[2]);
            self.need = len;
            if length_allowed(self.msg[0], len) != Some(true) {
                let reason = SkipReason::BadLength {
                    id: self.msg[0],
                    length: len,
                };
                sink(Decoded::Skipped(self.take_msg(reason)));
                return;
            }
        }
        if self.msg.len() >= 3 && self.msg.len() == self.need {
            let decoded = match parse(self.msg[0], &self.msg[3..]) {
                Ok(m) => {
                    self.msg.clear();
                    Decoded::Message(m)
                }
                Err(what) => {
                    let reason = SkipReason::BadPayload {
                        id: self.msg[0],
                        what: what.to_string(),
                    };
                    Decoded::Skipped(self.take_msg(reason))
                }
            };
            sink(decoded);
        }
    }

    fn take_msg(&mut self, reason: SkipReason) -> Skipped {
        let s = Skipped {
            offset: self.msg_offset,
            count: self.msg.len(),
            sample: self.msg.iter().take(SKIP_SAMPLE).copied().collect(),
            reason,
        };
        self.msg.clear();
        self.need = 0;
        s
    }

    fn add_garbage(&mut self, b: u8) {
        let offset = self.offset;
        let g = self.garbage.get_or_insert_with(|| Skipped {
            offset,
            count: 0,
            sample: Vec::new(),
            reason: SkipReason::Garbage,
        });
        g.count += 1;
        if g.sample.len() < SKIP_SAMPLE {
            g.sample.push(b);
        }
    }
}

/// What is impossible in a complete message's payload (the skipped bytes'
/// [`SkipReason::BadPayload`] says it in these words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("piece code {code} on field {field}")]
    PieceOnField { code: u8, field: usize },
    #[error("field {0} out of range")]
    Field(u8),
    #[error("piece code {0}")]
    PieceCode(u8),
    #[error("clock payload length")]
    ClockLength,
    #[error("{side} time {h:02x} {m:02x} {s:02x} is not a time")]
    ClockTime { side: &'static str, h: u8, m: u8, s: u8 },
    #[error("unknown message id {0:02x}")]
    UnknownId(u8),
}

/// Parses a complete payload of a message with a known id and allowed length.
fn parse(msg_id: u8, p: &[u8]) -> Result<BoardMessage, PayloadError> {
    Ok(match msg_id {
        id::BOARD_DUMP => {
            let mut placement = Placement::empty();
            for (i, &code) in p.iter().enumerate() {
                let piece =
                    PieceCode::from_code(code).ok_or(PayloadError::PieceOnField { code, field: i })?;
                placement.0[i] = piece;
            }
            BoardMessage::BoardDump(Box::new(placement))
        }
        id::FIELD_UPDATE => {
            let field = Field::new(p[0]).ok_or(PayloadError::Field(p[0]))?;
            let piece = PieceCode::from_code(p[1]).ok_or(PayloadError::PieceCode(p[1]))?;
            BoardMessage::FieldUpdate { field, piece }
        }
        id::BWTIME => {
            let payload: [u8; 7] = p.try_into().map_err(|_| PayloadError::ClockLength)?;
            if payload == [0; 7] {
                BoardMessage::ClockBlank
            } else if let Some(ack) = ClockAck::from_payload(&payload) {
                BoardMessage::ClockAck(ack)
            } else {
                BoardMessage::Clock(parse_clock(&payload)?)
            }
        }
        id::SERIAL_NR => BoardMessage::SerialNumber(text(p)),
        id::LONG_SERIAL_NR => BoardMessage::LongSerialNumber(text(p)),
        id::VERSION => BoardMessage::Version {
            major: p[0],
            minor: p[1],
        },
        id::BUS_ADDRESS => BoardMessage::BusAddress((u16::from(p[0]) << 7) | u16::from(p[1])),
        id::TRADEMARK => BoardMessage::Trademark(text(p)),
        id::BATTERY_STATUS => BoardMessage::Battery {
            percent: p[0],
            rest: p[1..].to_vec(),
        },
        id::EE_MOVES => BoardMessage::EepromMoves(p.to_vec()),
        other => return Err(PayloadError::UnknownId(other)),
    })
}

fn parse_clock(p: &[u8; 7]) -> Result<ClockStatus, PayloadError> {
    let side = |h: u8, m: u8, s: u8, name: &'static str| -> Result<ClockTime, PayloadError> {
        let bad = || PayloadError::ClockTime { side: name, h, m, s };
        let (m, s) = (from_bcd(m).ok_or_else(bad)?, from_bcd(s).ok_or_else(bad)?);
        ClockTime::from_hms(h & 0x0f, m, s).ok_or_else(bad)
    };
    Ok(ClockStatus {
        right: side(p[0], p[1], p[2], "right")?,
        left: side(p[3], p[4], p[5], "left")?,
        right_flags: SideFlags::from_hour_byte(p[0]),
        left_flags: SideFlags::from_hour_byte(p[3]),
        running: p[6] & 0x01 != 0,
        right_lever_high: p[6] & 0x02 != 0,
        battery_low: p[6] & 0x04 != 0,
        no_clock: p[6] & 0x20 != 0,
        turn_bits: p[6] & 0x18,
    })
}

/// Message text: 7-bit bytes, so always ASCII.
fn text(p: &[u8]) -> String {
    p.iter().map(|&b| char::from(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::types::ClockSide;

    fn msgs(d: Vec<Decoded>) -> Vec<BoardMessage> {
        d.into_iter()
            .map(|d| match d {
                Decoded::Message(m) => m,
                Decoded::Skipped(s) => panic!("unexpected skip: {s}"),
            })
            .collect()
    }

    #[test]
    fn field_update_and_clock() {
        let mut d = Decoder::new();
        let out = msgs(d.feed(&[
            0x8e, 0x00, 0x05, 0x34, 0x00, 0x8d, 0x00, 0x0a, 0x20, 0x03, 0x02, 0x20, 0x03, 0x01, 0x09,
        ]));
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0],
            BoardMessage::FieldUpdate {
                field: Field::new(0x34).unwrap(),
                piece: PieceCode::Empty
            }
        );
        let BoardMessage::Clock(c) = &out[1] else {
            panic!("{:?}", out[1])
        };
        assert_eq!(c.right.to_string(), "0:03:02");
        assert_eq!(c.left.to_string(), "0:03:01");
        assert!(c.right_flags.increment);
        assert_eq!(c.running_side(), Some(ClockSide::Left));
        assert!(d.is_idle());
    }

    #[test]
    fn garbage_then_message_reports_garbage_first() {
        let mut d = Decoder::new();
        let out = d.feed(&[0x01, 0x02, 0xff, 0x8e, 0x00, 0x05, 0x01, 0x01]);
        assert_eq!(out.len(), 2);
        let Decoded::Skipped(s) = &out[0] else { panic!() };
        assert_eq!(
            (s.offset, s.count, &s.sample[..], &s.reason),
            (0, 3, &[1u8, 2, 0xff][..], &SkipReason::Garbage)
        );
        assert!(matches!(
            out[1],
            Decoded::Message(BoardMessage::FieldUpdate { .. })
        ));
    }

    #[test]
    fn impossible_lengths_are_rejected() {
        let mut d = Decoder::new();
        // A field update claiming 0x7f7f bytes, then a real one.
        let out = d.feed(&[0x8e, 0x7f, 0x7f, 0x8e, 0x00, 0x05, 0x00, 0x00]);
        let Decoded::Skipped(s) = &out[0] else { panic!() };
        assert_eq!(
            s.reason,
            SkipReason::BadLength {
                id: 0x8e,
                length: 0x3fff
            }
        );
        assert!(matches!(out[1], Decoded::Message(_)));
        // EEPROM larger than the board can hold.
        let out = d.feed(&[0x8f, 0x3f, 0x04]);
        assert!(matches!(
            &out[0],
            Decoded::Skipped(Skipped {
                reason: SkipReason::BadLength { id: 0x8f, .. },
                ..
            })
        ));
    }

    #[test]
    fn interrupted_and_truncated_messages() {
        let mut d = Decoder::new();
        let out = d.feed(&[
            0x86, 0x00, 0x43, 0x01, 0x02, 0x8e, 0x00, 0x05, 0x3f, 0x05, 0x86, 0x00,
        ]);
        assert!(matches!(
            &out[0],
            Decoded::Skipped(Skipped {
                count: 5,
                reason: SkipReason::Interrupted {
                    id: 0x86,
                    expected: 67
                },
                ..
            })
        ));
        assert!(matches!(
            &out[1],
            Decoded::Message(BoardMessage::FieldUpdate { .. })
        ));
        let end = d.finish();
        assert!(matches!(
            &end[0],
            Decoded::Skipped(Skipped {
                count: 2,
                reason: SkipReason::Truncated { id: 0x86, .. },
                ..
            })
        ));
    }

    #[test]
    fn bad_payloads() {
        let mut d = Decoder::new();
        let out = d.feed(&[0x8e, 0x00, 0x05, 0x40, 0x00, 0x8e, 0x00, 0x05, 0x00, 0x10]);
        assert_eq!(out.len(), 2);
        for o in out {
            assert!(matches!(
                o,
                Decoded::Skipped(Skipped {
                    reason: SkipReason::BadPayload { id: 0x8e, .. },
                    ..
                })
            ));
        }
        let out = d.feed(&[0x8d, 0x00, 0x0a, 0x00, 0x6a, 0x00, 0x00, 0x00, 0x00, 0x01]);
        assert!(
            matches!(
                &out[0],
                Decoded::Skipped(Skipped {
                    reason: SkipReason::BadPayload { id: 0x8d, .. },
                    ..
                })
            ),
            "{out:?}"
        );
    }

    #[test]
    fn every_message_encodes_and_decodes() {
        let mut dump = Placement::empty();
        dump.0[0] = PieceCode::from_code(8).unwrap();
        dump.0[63] = PieceCode::Special(14);
        let messages = vec![
            BoardMessage::BoardDump(Box::new(dump)),
            BoardMessage::FieldUpdate {
                field: Field::new(12).unwrap(),
                piece: PieceCode::from_code(7).unwrap(),
            },
            BoardMessage::Clock(ClockStatus::new(
                ClockTime::from_hms(1, 30, 0).unwrap(),
                ClockTime::from_hms(0, 0, 5).unwrap(),
                Some(ClockSide::Right),
                false,
            )),
            BoardMessage::ClockAck(ClockAck::version(2, 2)),
            BoardMessage::ClockBlank,
            BoardMessage::SerialNumber("12345".into()),
            BoardMessage::LongSerialNumber("1234567890".into()),
            BoardMessage::Version { major: 1, minor: 7 },
            BoardMessage::BusAddress(0x1234 & 0x3fff),
            BoardMessage::Trademark("Digital Game Technology".into()),
            BoardMessage::Battery {
                percent: 87,
                rest: vec![1, 2, 3, 4, 5, 6, 7, 8],
            },
            BoardMessage::EepromMoves(vec![0x6a, 0x01, 0x02]),
            BoardMessage::EepromMoves(vec![0x11; MAX_EEPROM]),
        ];
        let mut d = Decoder::new();
        for m in messages {
            assert_eq!(msgs(d.feed(&m.encode())), vec![m]);
        }
    }
}
