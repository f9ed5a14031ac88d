//! Basic protocol types: board fields, piece codes, clock times and sides.

use std::fmt;

use shakmaty::{Color, File, Piece, Rank, Role, Square};

/// A sensor field in the board's own numbering: field 0 is `a8`, 7 is `h8`,
/// 56 is `a1`, 63 is `h1`, whichever way the players sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Field(u8);

impl Field {
    /// The field with this index, if it is 0..=63.
    pub const fn new(index: u8) -> Option<Field> {
        if index < 64 { Some(Field(index)) } else { None }
    }

    /// The field's index, 0..=63.
    pub const fn index(self) -> u8 {
        self.0
    }

    /// The square this field is named as in board numbering (`a8` for field 0).
    ///
    /// ```
    /// use eboard_core::protocol::Field;
    /// assert_eq!(Field::new(0).unwrap().square().to_string(), "a8");
    /// assert_eq!(Field::new(63).unwrap().square().to_string(), "h1");
    /// ```
    pub fn square(self) -> Square {
        Square::from_coords(
            File::new(u32::from(self.0 % 8)),
            Rank::new(7 - u32::from(self.0 / 8)),
        )
    }

    /// The field that board numbering names `square`.
    pub fn from_square(square: Square) -> Field {
        let file = square.file().to_u32() as u8;
        let rank = square.rank().to_u32() as u8;
        Field((7 - rank) * 8 + file)
    }

    /// All 64 fields in wire order.
    pub fn all() -> impl Iterator<Item = Field> {
        (0..64).map(Field)
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.square())
    }
}

/// What a board reports on one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PieceCode {
    Empty,
    Piece(Piece),
    /// DGT's special result pieces (codes 13 to 15): not chess pieces.
    Special(u8),
}

impl PieceCode {
    /// Decodes a wire piece code; `None` for codes above 15.
    pub const fn from_code(code: u8) -> Option<PieceCode> {
        use Color::{Black, White};
        use Role::*;
        let (color, role) = match code {
            0 => return Some(PieceCode::Empty),
            1 => (White, Pawn),
            2 => (White, Rook),
            3 => (White, Knight),
            4 => (White, Bishop),
            5 => (White, King),
            6 => (White, Queen),
            7 => (Black, Pawn),
            8 => (Black, Rook),
            9 => (Black, Knight),
            10 => (Black, Bishop),
            11 => (Black, King),
            12 => (Black, Queen),
            13..=15 => return Some(PieceCode::Special(code)),
            _ => return None,
        };
        Some(PieceCode::Piece(Piece { color, role }))
    }

    /// The wire code of this piece.
    pub const fn code(self) -> u8 {
        match self {
            PieceCode::Empty => 0,
            PieceCode::Special(c) => c,
            PieceCode::Piece(Piece { color, role }) => {
                let base = match role {
                    Role::Pawn => 1,
                    Role::Rook => 2,
                    Role::Knight => 3,
                    Role::Bishop => 4,
                    Role::King => 5,
                    Role::Queen => 6,
                };
                match color {
                    Color::White => base,
                    Color::Black => base + 6,
                }
            }
        }
    }

    /// The chess piece, if this is one.
    pub const fn piece(self) -> Option<Piece> {
        match self {
            PieceCode::Piece(p) => Some(p),
            _ => None,
        }
    }
}

impl From<Option<Piece>> for PieceCode {
    fn from(p: Option<Piece>) -> Self {
        p.map_or(PieceCode::Empty, PieceCode::Piece)
    }
}

impl fmt::Display for PieceCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PieceCode::Empty => f.write_str("-"),
            PieceCode::Piece(p) => write!(f, "{}", p.char()),
            PieceCode::Special(c) => write!(f, "special#{c}"),
        }
    }
}

/// A side of the clock, as the clock itself names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockSide {
    Left,
    Right,
}

impl ClockSide {
    pub const fn other(self) -> ClockSide {
        match self {
            ClockSide::Left => ClockSide::Right,
            ClockSide::Right => ClockSide::Left,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            ClockSide::Left => "left",
            ClockSide::Right => "right",
        }
    }
}

impl fmt::Display for ClockSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A time shown by a clock, in milliseconds (the DGT 3000 shows whole seconds; the
/// sensor log may carry tenths).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ClockTime(u32);

impl ClockTime {
    /// The largest time a clock message can carry (9:59:59).
    pub const MAX: ClockTime = ClockTime(((9 * 60 + 59) * 60 + 59) * 1000);

    pub const fn from_millis(ms: u32) -> ClockTime {
        ClockTime(ms)
    }

    /// Hours, minutes and seconds; `None` when minutes or seconds exceed 59.
    pub const fn from_hms(h: u8, m: u8, s: u8) -> Option<ClockTime> {
        if m > 59 || s > 59 {
            return None;
        }
        Some(ClockTime(((h as u32 * 60 + m as u32) * 60 + s as u32) * 1000))
    }

    pub const fn millis(self) -> u32 {
        self.0
    }

    /// Whole hours, minutes and seconds (tenths dropped).
    pub const fn hms(self) -> (u32, u8, u8) {
        let s = self.0 / 1000;
        (s / 3600, ((s / 60) % 60) as u8, (s % 60) as u8)
    }

    pub const fn saturating_sub_millis(self, ms: u64) -> ClockTime {
        if ms >= self.0 as u64 {
            ClockTime(0)
        } else {
            ClockTime(self.0 - ms as u32)
        }
    }

    /// Parses `H:MM:SS` or `H:MM:SS.f` (one to three fractional digits).
    pub fn parse(s: &str) -> Option<ClockTime> {
        let (main, frac) = match s.split_once('.') {
            Some((m, f)) => (m, Some(f)),
            None => (s, None),
        };
        let mut parts = main.split(':');
        let h = parts.next()?;
        let m = parts.next()?;
        let sec = parts.next()?;
        if parts.next().is_some()
            || h.is_empty()
            || h.len() > 3
            || m.len() != 2
            || sec.len() != 2
            || ![h, m, sec].iter().all(|p| p.bytes().all(|b| b.is_ascii_digit()))
        {
            return None;
        }
        let (h, m, sec): (u32, u32, u32) = (h.parse().ok()?, m.parse().ok()?, sec.parse().ok()?);
        if m > 59 || sec > 59 {
            return None;
        }
        let mut ms = ((h * 60 + m) * 60 + sec) * 1000;
        if let Some(f) = frac {
            if f.is_empty() || f.len() > 3 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let digits: u32 = f.parse().ok()?;
            ms += digits * 10u32.pow(3 - f.len() as u32);
        }
        Some(ClockTime(ms))
    }
}

impl fmt::Display for ClockTime {
    /// `H:MM:SS`, with `.f` tenths when the time is not a whole second.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (h, m, s) = self.hms();
        write!(f, "{h}:{m:02}:{s:02}")?;
        let rest = self.0 % 1000;
        if rest != 0 {
            if rest % 100 == 0 {
                write!(f, ".{}", rest / 100)?;
            } else {
                write!(f, ".{rest:03}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_map_to_board_numbering() {
        for f in Field::all() {
            assert_eq!(Field::from_square(f.square()), f);
        }
        assert_eq!(Field::new(56).unwrap().square(), Square::A1);
        assert_eq!(Field::new(7).unwrap().square(), Square::H8);
        assert_eq!(Field::new(64), None);
    }

    #[test]
    fn piece_codes_round_trip() {
        for code in 0..=15 {
            assert_eq!(PieceCode::from_code(code).unwrap().code(), code);
        }
        assert_eq!(PieceCode::from_code(16), None);
        assert_eq!(
            PieceCode::from_code(5),
            Some(PieceCode::Piece(Piece::from_char('K').unwrap()))
        );
        assert_eq!(
            PieceCode::from_code(12),
            Some(PieceCode::Piece(Piece::from_char('q').unwrap()))
        );
    }

    #[test]
    fn clock_times_parse_and_print() {
        let t = ClockTime::parse("1:02:03").unwrap();
        assert_eq!(t.millis(), 3_723_000);
        assert_eq!(t.to_string(), "1:02:03");
        assert_eq!(ClockTime::parse("0:00:09.5").unwrap().to_string(), "0:00:09.5");
        assert_eq!(ClockTime::parse("0:00:09.25").unwrap().millis(), 9250);
        for bad in [
            "",
            "1:2:03",
            "0:60:00",
            "0:00:60",
            "a:00:00",
            "0:00:00.",
            "0:00:00.1234",
            "1:00",
        ] {
            assert_eq!(ClockTime::parse(bad), None, "{bad}");
        }
    }
}
