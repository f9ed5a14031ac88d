//! Messages a board sends to the host, and how their payloads are laid out.

use std::fmt;

use super::types::{ClockSide, ClockTime, Field, PieceCode};

/// Message ids (first byte, bit 7 set) of board-to-host messages.
pub mod id {
    pub const BOARD_DUMP: u8 = 0x86;
    pub const BWTIME: u8 = 0x8d;
    pub const FIELD_UPDATE: u8 = 0x8e;
    pub const EE_MOVES: u8 = 0x8f;
    pub const BUS_ADDRESS: u8 = 0x90;
    pub const SERIAL_NR: u8 = 0x91;
    pub const TRADEMARK: u8 = 0x92;
    pub const VERSION: u8 = 0x93;
    pub const BATTERY_STATUS: u8 = 0xa0;
    pub const LONG_SERIAL_NR: u8 = 0xa2;
}

/// The 64 fields of a board dump, in wire order (index 0 = `a8`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Placement(pub [PieceCode; 64]);

impl Placement {
    pub const fn empty() -> Placement {
        Placement([PieceCode::Empty; 64])
    }

    pub fn get(&self, field: Field) -> PieceCode {
        self.0[usize::from(field.index())]
    }

    pub fn set(&mut self, field: Field, piece: PieceCode) {
        self.0[usize::from(field.index())] = piece;
    }

    /// The chess pieces of this placement as a `shakmaty` board, in board numbering
    /// (special pieces are left out).
    pub fn to_board(&self) -> shakmaty::Board {
        let mut board = shakmaty::Board::empty();
        for field in Field::all() {
            if let Some(p) = self.get(field).piece() {
                board.set_piece_at(field.square(), p);
            }
        }
        board
    }

    pub fn from_board(board: &shakmaty::Board) -> Placement {
        let mut p = Placement::empty();
        for (sq, piece) in board.iter() {
            p.set(Field::from_square(sq), PieceCode::Piece(piece));
        }
        p
    }

    /// Whether any field holds a special (non-chess) piece.
    pub fn has_special(&self) -> bool {
        self.0.iter().any(|p| matches!(p, PieceCode::Special(_)))
    }
}

impl fmt::Debug for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Placement({})", self)
    }
}

impl fmt::Display for Placement {
    /// FEN piece placement in board numbering.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_board().board_fen())
    }
}

/// Flags the clock shows for one side (bits 4 to 6 of that side's hour byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SideFlags {
    /// Flag fallen and clock blocked at zero.
    pub fallen: bool,
    /// Increment (time per move) indicator.
    pub increment: bool,
    /// Flag shown.
    pub flag: bool,
}

impl SideFlags {
    pub(crate) fn from_hour_byte(b: u8) -> SideFlags {
        SideFlags {
            fallen: b & 0x10 != 0,
            increment: b & 0x20 != 0,
            flag: b & 0x40 != 0,
        }
    }

    fn bits(self) -> u8 {
        (u8::from(self.fallen) << 4) | (u8::from(self.increment) << 5) | (u8::from(self.flag) << 6)
    }
}

/// A clock time report (0x8d that is not an acknowledgement).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ClockStatus {
    pub left: ClockTime,
    pub right: ClockTime,
    pub left_flags: SideFlags,
    pub right_flags: SideFlags,
    /// Status bit 0: the clock is running.
    pub running: bool,
    /// Status bit 1: the lever is high on the right side (so the right side's time
    /// runs when the clock runs).
    pub right_lever_high: bool,
    pub battery_low: bool,
    pub no_clock: bool,
    /// Status bits 3 and 4 as sent (their meaning differs between documentation and
    /// real clocks, so they are kept but not interpreted).
    pub turn_bits: u8,
}

impl ClockStatus {
    /// The side counting down, if any: the clock runs and the lever is high on it.
    pub fn running_side(&self) -> Option<ClockSide> {
        if !self.running {
            None
        } else if self.right_lever_high {
            Some(ClockSide::Right)
        } else {
            Some(ClockSide::Left)
        }
    }

    pub fn time(&self, side: ClockSide) -> ClockTime {
        match side {
            ClockSide::Left => self.left,
            ClockSide::Right => self.right,
        }
    }

    /// A status as the sensor log's `clock` record describes it: the lever is high
    /// on the running side (and, when stopped, where it was before).
    pub fn new(
        left: ClockTime,
        right: ClockTime,
        running: Option<ClockSide>,
        lever_right_high: bool,
    ) -> Self {
        ClockStatus {
            left,
            right,
            running: running.is_some(),
            right_lever_high: match running {
                Some(side) => side == ClockSide::Right,
                None => lever_right_high,
            },
            turn_bits: match running {
                // Real DGT 3000s set bit 3 while the left side runs, bit 4 for the right.
                Some(ClockSide::Left) => 0x08,
                Some(ClockSide::Right) => 0x10,
                None => 0,
            },
            ..ClockStatus::default()
        }
    }

    /// The 7 payload bytes of a 0x8d message reporting this status.
    /// Times above 9:59:59 are shown as 9:59:59, as the clock does.
    pub fn to_payload(&self) -> [u8; 7] {
        fn side(t: ClockTime, flags: SideFlags) -> [u8; 3] {
            let t = t.min(ClockTime::MAX);
            let (h, m, s) = t.hms();
            [(h as u8 & 0x0f) | flags.bits(), bcd(m), bcd(s)]
        }
        let r = side(self.right, self.right_flags);
        let l = side(self.left, self.left_flags);
        let status = u8::from(self.running)
            | (u8::from(self.right_lever_high) << 1)
            | (u8::from(self.battery_low) << 2)
            | (self.turn_bits & 0x18)
            | (u8::from(self.no_clock) << 5);
        [r[0], r[1], r[2], l[0], l[1], l[2], status]
    }
}

/// A DGT 3000 front button.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClockButton {
    Back,
    Minus,
    Run,
    Plus,
    Ok,
}

impl ClockButton {
    /// The button numbering of the sensor log (0 back, 1 minus, 2 run, 3 plus, 4 ok).
    pub const fn from_number(n: u8) -> Option<ClockButton> {
        Some(match n {
            0 => ClockButton::Back,
            1 => ClockButton::Minus,
            2 => ClockButton::Run,
            3 => ClockButton::Plus,
            4 => ClockButton::Ok,
            _ => return None,
        })
    }

    pub const fn number(self) -> u8 {
        match self {
            ClockButton::Back => 0,
            ClockButton::Minus => 1,
            ClockButton::Run => 2,
            ClockButton::Plus => 3,
            ClockButton::Ok => 4,
        }
    }

    /// The name events and D-Bus give it (`back`, `minus`, `run`, `plus`, `ok`).
    pub const fn name(self) -> &'static str {
        match self {
            ClockButton::Back => "back",
            ClockButton::Minus => "minus",
            ClockButton::Run => "run",
            ClockButton::Plus => "plus",
            ClockButton::Ok => "ok",
        }
    }

    /// The code the clock reports in ack3 of a button ack.
    pub const fn ack_code(self) -> u8 {
        match self {
            ClockButton::Back => 0x31,
            ClockButton::Plus => 0x32,
            ClockButton::Run => 0x33,
            ClockButton::Minus => 0x34,
            ClockButton::Ok => 0x35,
        }
    }

    pub const fn from_ack_code(code: u8) -> Option<ClockButton> {
        Some(match code {
            0x31 => ClockButton::Back,
            0x32 => ClockButton::Plus,
            0x33 => ClockButton::Run,
            0x34 => ClockButton::Minus,
            0x35 => ClockButton::Ok,
            _ => return None,
        })
    }
}

impl fmt::Display for ClockButton {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for ClockButton {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// The four acknowledgement bytes of a clock ack (0x8d with 0x0a in a low nibble).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClockAck(pub [u8; 4]);

/// What a clock acknowledgement means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AckKind {
    /// The clock reports it is ready (`ack1` 0x81).
    Ready,
    /// A front button was pressed (`ack1` 0x88).
    Button(ClockButton),
    /// A button ack with an unknown button code.
    UnknownButton(u8),
    /// Whether the clock is in mode 23 (`ack1` 0x8a yes, 0x90 no).
    Mode23(bool),
    /// The clock's version (ack of command 0x09).
    Version { major: u8, minor: u8 },
    /// A host command (`ack1`) acknowledged; `ok` is `ack0 == 0x10`.
    Command { command: u8, ok: bool },
    /// Another report from the clock itself (`ack1` with bit 7 set).
    Other(u8),
}

impl ClockAck {
    pub fn from_payload(p: &[u8; 7]) -> Option<ClockAck> {
        if p[0] & 0x0f != 0x0a && p[3] & 0x0f != 0x0a {
            return None;
        }
        Some(ClockAck([
            (p[1] & 0x7f) | ((p[3] << 3) & 0x80),
            (p[2] & 0x7f) | ((p[3] << 2) & 0x80),
            (p[4] & 0x7f) | ((p[0] << 3) & 0x80),
            (p[5] & 0x7f) | ((p[0] << 2) & 0x80),
        ]))
    }

    /// The 7 payload bytes that carry this ack (the inverse of `from_payload`).
    pub fn to_payload(&self) -> [u8; 7] {
        let [a0, a1, a2, a3] = self.0;
        let p0 = 0x0a | ((a2 >> 3) & 0x10) | ((a3 >> 2) & 0x20);
        let p3 = 0x0a | ((a0 >> 3) & 0x10) | ((a1 >> 2) & 0x20);
        [p0, a0 & 0x7f, a1 & 0x7f, p3, a2 & 0x7f, a3 & 0x7f, 0]
    }

    pub fn ok(command: u8) -> ClockAck {
        ClockAck([0x10, command, 0, 0])
    }

    pub fn button(button: ClockButton) -> ClockAck {
        ClockAck([0x10, 0x88, 0, button.ack_code()])
    }

    pub fn version(major: u8, minor: u8) -> ClockAck {
        ClockAck([0x10, 0x09, (major << 4) | (minor & 0x0f), 0])
    }

    pub fn kind(&self) -> AckKind {
        let [a0, a1, a2, a3] = self.0;
        match a1 {
            0x81 => AckKind::Ready,
            0x88 => match ClockButton::from_ack_code(a3) {
                Some(b) => AckKind::Button(b),
                None => AckKind::UnknownButton(a3),
            },
            0x8a => AckKind::Mode23(true),
            0x90 => AckKind::Mode23(false),
            0x09 => AckKind::Version {
                major: a2 >> 4,
                minor: a2 & 0x0f,
            },
            c if c & 0x80 != 0 => AckKind::Other(c),
            c => AckKind::Command {
                command: c,
                ok: a0 == 0x10,
            },
        }
    }
}

/// A message from the board, decoded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BoardMessage {
    BoardDump(Box<Placement>),
    FieldUpdate {
        field: Field,
        piece: PieceCode,
    },
    Clock(ClockStatus),
    ClockAck(ClockAck),
    /// An all-zero clock message, which some firmware sends after a clock command.
    ClockBlank,
    SerialNumber(String),
    LongSerialNumber(String),
    Version {
        major: u8,
        minor: u8,
    },
    BusAddress(u16),
    Trademark(String),
    Battery {
        percent: u8,
        rest: Vec<u8>,
    },
    EepromMoves(Vec<u8>),
}

/// A decimal number 0..=99 as two BCD nibbles.
pub(crate) const fn bcd(v: u8) -> u8 {
    ((v / 10) << 4) | (v % 10)
}

/// A BCD byte's value, if both nibbles are digits.
pub(crate) const fn from_bcd(b: u8) -> Option<u8> {
    let (hi, lo) = (b >> 4, b & 0x0f);
    if hi > 9 || lo > 9 {
        None
    } else {
        Some(hi * 10 + lo)
    }
}

impl BoardMessage {
    /// The bytes a board sends for this message, header included.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// [`BoardMessage::encode`], appended to `out` (the messages a board sends
    /// during a game without any allocation of their own).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let header = |out: &mut Vec<u8>, msg_id: u8, payload: usize| {
            let len = payload + 3;
            out.extend_from_slice(&[msg_id, ((len >> 7) & 0x7f) as u8, (len & 0x7f) as u8]);
        };
        match self {
            BoardMessage::FieldUpdate { field, piece } => {
                header(out, id::FIELD_UPDATE, 2);
                out.extend_from_slice(&[field.index(), piece.code()]);
                return;
            }
            BoardMessage::Clock(s) => {
                header(out, id::BWTIME, 7);
                out.extend_from_slice(&s.to_payload());
                return;
            }
            BoardMessage::ClockAck(a) => {
                header(out, id::BWTIME, 7);
                out.extend_from_slice(&a.to_payload());
                return;
            }
            BoardMessage::BoardDump(p) => {
                header(out, id::BOARD_DUMP, p.0.len());
                out.extend(p.0.iter().map(|c| c.code()));
                return;
            }
            _ => {}
        }
        let (msg_id, payload): (u8, Vec<u8>) = match self {
            // Written above.
            BoardMessage::BoardDump(_)
            | BoardMessage::FieldUpdate { .. }
            | BoardMessage::Clock(_)
            | BoardMessage::ClockAck(_) => return,
            BoardMessage::ClockBlank => (id::BWTIME, vec![0; 7]),
            BoardMessage::SerialNumber(s) => (id::SERIAL_NR, ascii7(s)),
            BoardMessage::LongSerialNumber(s) => (id::LONG_SERIAL_NR, ascii7(s)),
            BoardMessage::Version { major, minor } => (id::VERSION, vec![major & 0x7f, minor & 0x7f]),
            BoardMessage::BusAddress(a) => (id::BUS_ADDRESS, vec![((a >> 7) & 0x7f) as u8, (a & 0x7f) as u8]),
            BoardMessage::Trademark(s) => (id::TRADEMARK, ascii7(s)),
            BoardMessage::Battery { percent, rest } => {
                let mut v = vec![percent & 0x7f];
                v.extend(rest.iter().map(|b| b & 0x7f));
                (id::BATTERY_STATUS, v)
            }
            BoardMessage::EepromMoves(m) => (id::EE_MOVES, m.iter().map(|b| b & 0x7f).collect()),
        };
        header(out, msg_id, payload.len());
        out.extend(payload);
    }
}

fn ascii7(s: &str) -> Vec<u8> {
    s.bytes().map(|b| if b.is_ascii() { b } else { b'?' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_payload_round_trips_every_ack() {
        for a0 in [0x10u8, 0x20, 0x40, 0x90] {
            for a1 in [0x01u8, 0x09, 0x0a, 0x81, 0x88, 0x8a, 0x90] {
                for a2 in [0x00u8, 0x21, 0x80, 0xff] {
                    for a3 in [0x00u8, 0x31, 0x35, 0xb1] {
                        let ack = ClockAck([a0, a1, a2, a3]);
                        let p = ack.to_payload();
                        assert!(p.iter().all(|b| b & 0x80 == 0));
                        assert_eq!(ClockAck::from_payload(&p), Some(ack));
                    }
                }
            }
        }
    }

    #[test]
    fn ack_kinds() {
        assert_eq!(
            ClockAck::button(ClockButton::Plus).kind(),
            AckKind::Button(ClockButton::Plus)
        );
        assert_eq!(
            ClockAck::version(2, 1).kind(),
            AckKind::Version { major: 2, minor: 1 }
        );
        assert_eq!(
            ClockAck::ok(0x0a).kind(),
            AckKind::Command {
                command: 0x0a,
                ok: true
            }
        );
        assert_eq!(
            ClockAck([0x20, 0x0b, 0, 0]).kind(),
            AckKind::Command {
                command: 0x0b,
                ok: false
            }
        );
        for n in 0..5 {
            let b = ClockButton::from_number(n).unwrap();
            assert_eq!(ClockButton::from_ack_code(b.ack_code()), Some(b));
            assert_eq!(b.number(), n);
        }
    }

    #[test]
    fn bcd_round_trips() {
        for v in 0..100 {
            assert_eq!(from_bcd(bcd(v)), Some(v));
        }
        assert_eq!(from_bcd(0x1a), None);
    }
}
