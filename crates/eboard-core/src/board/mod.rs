//! The board as its sensors report it: applying decoded messages to a 64-square
//! model, and turning them into board-level events (lifts, placements, presses).
//!
//! Squares here are in the board's own numbering (`a8` is field 0). Which way the
//! players sit is the [`Orientation`]; the rules core decides it.

use shakmaty::Square;

use crate::protocol::{
    AckKind, BoardMessage, ClockButton, ClockSide, ClockStatus, Field, PieceCode, Placement,
};

/// Which way round the board stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Orientation {
    /// White at the connector side: board numbering is the real board.
    #[default]
    Normal,
    /// Black at the connector side: real square = 63 - field.
    Rotated,
}

impl Orientation {
    /// The real square of a square in board numbering.
    ///
    /// ```
    /// use eboard_core::board::Orientation;
    /// use shakmaty::Square;
    /// assert_eq!(Orientation::Rotated.real(Square::E2), Square::D7);
    /// assert_eq!(Orientation::Normal.real(Square::E2), Square::E2);
    /// ```
    pub fn real(self, board_square: Square) -> Square {
        match self {
            Orientation::Normal => board_square,
            Orientation::Rotated => board_square.rotate_180(),
        }
    }

    /// The square in board numbering of a real square (the mapping is its own inverse).
    pub fn board(self, real_square: Square) -> Square {
        self.real(real_square)
    }

    /// The real placement of a placement in board numbering.
    pub fn real_board(self, board: &shakmaty::Board) -> shakmaty::Board {
        match self {
            Orientation::Normal => board.clone(),
            Orientation::Rotated => {
                let mut b = board.clone();
                b.rotate_180();
                b
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Orientation::Normal => "normal",
            Orientation::Rotated => "rotated",
        }
    }
}

impl std::fmt::Display for Orientation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Orientation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Facts a board reports about itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BoardInfo {
    SerialNumber(String),
    LongSerialNumber(String),
    Version { major: u8, minor: u8 },
    BusAddress(u16),
    Trademark(String),
    Battery { percent: u8 },
    EepromMoves(usize),
}

/// What happened on the board, at sensor level.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BoardEvent {
    /// A whole-board report.
    Dump(Box<Placement>),
    /// The piece on `square` left it.
    Lift {
        square: Square,
        piece: PieceCode,
    },
    /// `piece` arrived on `square`; `replaced` is what the sensors saw there before
    /// (not empty when a piece was replaced directly).
    Place {
        square: Square,
        piece: PieceCode,
        replaced: PieceCode,
    },
    /// A clock report.
    Clock(ClockStatus),
    /// The player on `side` pressed the clock lever (seen as the lever changing side).
    Press(ClockSide),
    /// A DGT 3000 front button.
    Button(ClockButton),
    /// The clock acknowledged something.
    ClockAck(AckKind),
    Info(BoardInfo),
}

/// The board model: what stands on each field and the last clock report.
#[derive(Debug, Clone, Default)]
pub struct BoardState {
    placement: Option<Placement>,
    clock: Option<ClockStatus>,
}

impl BoardState {
    pub fn new() -> BoardState {
        BoardState::default()
    }

    /// The placement, once a dump or a field update has arrived.
    pub fn placement(&self) -> Option<&Placement> {
        self.placement.as_ref()
    }

    /// The last clock report.
    pub fn clock(&self) -> Option<&ClockStatus> {
        self.clock.as_ref()
    }

    /// What the sensors report on `square` (board numbering).
    pub fn piece_at(&self, square: Square) -> PieceCode {
        self.placement
            .as_ref()
            .map_or(PieceCode::Empty, |p| p.get(Field::from_square(square)))
    }

    /// Applies one decoded message and returns the board-level events it means
    /// (none for a field update that changes nothing).
    pub fn apply(&mut self, msg: &BoardMessage) -> Vec<BoardEvent> {
        let mut out = Vec::new();
        self.apply_with(msg, |e| out.push(e));
        out
    }

    /// [`BoardState::apply`], handing each event to `sink` (nothing allocated
    /// for a field update or a clock report).
    pub fn apply_with(&mut self, msg: &BoardMessage, mut sink: impl FnMut(BoardEvent)) {
        match msg {
            BoardMessage::FieldUpdate { field, piece } => {
                let placement = self.placement.get_or_insert_with(Placement::empty);
                let before = placement.get(*field);
                if before == *piece {
                    return;
                }
                placement.set(*field, *piece);
                let square = field.square();
                sink(match piece {
                    PieceCode::Empty => BoardEvent::Lift {
                        square,
                        piece: before,
                    },
                    _ => BoardEvent::Place {
                        square,
                        piece: *piece,
                        replaced: before,
                    },
                });
            }
            BoardMessage::Clock(status) => {
                if let Some(prev) = self.clock {
                    if prev.right_lever_high != status.right_lever_high {
                        // The lever goes down on the side that pressed it.
                        let presser = if status.right_lever_high {
                            ClockSide::Left
                        } else {
                            ClockSide::Right
                        };
                        sink(BoardEvent::Press(presser));
                    }
                }
                self.clock = Some(*status);
                sink(BoardEvent::Clock(*status));
            }
            other => self.apply_other(other).into_iter().for_each(sink),
        }
    }

    /// The messages other than field updates and clock reports.
    fn apply_other(&mut self, msg: &BoardMessage) -> Vec<BoardEvent> {
        match msg {
            BoardMessage::FieldUpdate { .. } | BoardMessage::Clock(_) => Vec::new(),
            BoardMessage::BoardDump(p) => {
                self.placement = Some((**p).clone());
                vec![BoardEvent::Dump(p.clone())]
            }
            BoardMessage::ClockAck(ack) => match ack.kind() {
                AckKind::Button(b) => vec![BoardEvent::Button(b)],
                k => vec![BoardEvent::ClockAck(k)],
            },
            BoardMessage::ClockBlank => Vec::new(),
            BoardMessage::SerialNumber(s) => vec![BoardEvent::Info(BoardInfo::SerialNumber(s.clone()))],
            BoardMessage::LongSerialNumber(s) => {
                vec![BoardEvent::Info(BoardInfo::LongSerialNumber(s.clone()))]
            }
            BoardMessage::Version { major, minor } => {
                vec![BoardEvent::Info(BoardInfo::Version {
                    major: *major,
                    minor: *minor,
                })]
            }
            BoardMessage::BusAddress(a) => vec![BoardEvent::Info(BoardInfo::BusAddress(*a))],
            BoardMessage::Trademark(t) => vec![BoardEvent::Info(BoardInfo::Trademark(t.clone()))],
            BoardMessage::Battery { percent, .. } => {
                vec![BoardEvent::Info(BoardInfo::Battery { percent: *percent })]
            }
            BoardMessage::EepromMoves(m) => vec![BoardEvent::Info(BoardInfo::EepromMoves(m.len()))],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ClockTime;

    #[test]
    fn field_updates_become_lifts_and_places() {
        let mut b = BoardState::new();
        let start: shakmaty::Board = shakmaty::Board::new();
        b.apply(&BoardMessage::BoardDump(Box::new(Placement::from_board(&start))));
        let e2 = Field::from_square(Square::E2);
        let e4 = Field::from_square(Square::E4);
        let pawn = PieceCode::from_code(1).unwrap();
        assert_eq!(
            b.apply(&BoardMessage::FieldUpdate {
                field: e2,
                piece: PieceCode::Empty
            }),
            vec![BoardEvent::Lift {
                square: Square::E2,
                piece: pawn
            }]
        );
        assert_eq!(
            b.apply(&BoardMessage::FieldUpdate {
                field: e4,
                piece: pawn
            }),
            vec![BoardEvent::Place {
                square: Square::E4,
                piece: pawn,
                replaced: PieceCode::Empty
            }]
        );
        assert_eq!(
            b.apply(&BoardMessage::FieldUpdate {
                field: e4,
                piece: pawn
            }),
            vec![]
        );
        assert_eq!(b.piece_at(Square::E4), pawn);
    }

    #[test]
    fn lever_change_is_a_press() {
        let mut b = BoardState::new();
        let t = ClockTime::from_hms(0, 5, 0).unwrap();
        let left_runs = ClockStatus::new(t, t, Some(ClockSide::Left), false);
        let right_runs = ClockStatus::new(t, t, Some(ClockSide::Right), true);
        assert_eq!(
            b.apply(&BoardMessage::Clock(left_runs)),
            vec![BoardEvent::Clock(left_runs)]
        );
        assert_eq!(
            b.apply(&BoardMessage::Clock(right_runs)),
            vec![BoardEvent::Press(ClockSide::Left), BoardEvent::Clock(right_runs)]
        );
        assert_eq!(
            b.apply(&BoardMessage::Clock(left_runs)),
            vec![BoardEvent::Press(ClockSide::Right), BoardEvent::Clock(left_runs)]
        );
    }
}
