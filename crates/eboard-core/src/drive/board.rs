//! Touches of the board from the input's bytes: what a DGT board reports
//! (lifts, placements, dumps, clock reports, presses), a gap in the line and
//! bytes it garbled; each made into the record a journal or a hand-written
//! log holds for it.

use shakmaty::{Board, Chess, Color, Piece, Position, Role, Square};

use super::Frame;
use crate::board::{BoardState, Orientation};
use crate::log::{RecordKind, Running};
use crate::protocol::{BoardMessage, ClockSide, ClockStatus, ClockTime, Field, PieceCode, Placement};

/// One thing the board reports, in board numbering.
#[derive(Debug, Clone)]
pub(super) enum Touch {
    Lift(Square),
    Place(Square, Piece),
    Dump(Board),
    Press(ClockSide),
    Clock {
        status: ClockStatus,
        running: Option<ClockSide>,
    },
    Gap,
    Garbled(Vec<u8>),
}

impl Touch {
    /// The record of this touch on `board` as it stands. With `form`, as a
    /// hand-written log writes it (`lift`, `place`, `board`, `clock`) when
    /// the board takes that record; else as the board's bytes (`rx`), which
    /// is how the daemon journals them. A press is always its record.
    pub(super) fn record(&self, board: &BoardState, form: bool) -> RecordKind {
        match self {
            Touch::Lift(square) if form && board.piece_at(*square) != PieceCode::Empty => RecordKind::Lift {
                square: *square,
                piece: None,
            },
            Touch::Lift(square) => rx(&BoardMessage::FieldUpdate {
                field: Field::from_square(*square),
                piece: PieceCode::Empty,
            }),
            Touch::Place(square, piece) if form && board.piece_at(*square) != PieceCode::Piece(*piece) => {
                RecordKind::Place {
                    square: *square,
                    piece: *piece,
                }
            }
            Touch::Place(square, piece) => rx(&BoardMessage::FieldUpdate {
                field: Field::from_square(*square),
                piece: PieceCode::Piece(*piece),
            }),
            Touch::Dump(b) if form => RecordKind::Board(Box::new(Placement::from_board(b))),
            Touch::Dump(b) => rx(&BoardMessage::BoardDump(Box::new(Placement::from_board(b)))),
            Touch::Press(side) => RecordKind::Press(*side),
            Touch::Clock { status, running }
                if form && !status.left_flags.fallen && !status.right_flags.fallen =>
            {
                RecordKind::Clock {
                    left: status.left,
                    right: status.right,
                    running: Running::from_side(*running),
                }
            }
            Touch::Clock { status, .. } => rx(&BoardMessage::Clock(*status)),
            Touch::Gap => RecordKind::Gap("driven".into()),
            Touch::Garbled(bytes) => RecordKind::Rx(bytes.clone()),
        }
    }
}

fn rx(m: &BoardMessage) -> RecordKind {
    RecordKind::Rx(m.encode())
}

/// The touches of one input `f` (of a board kind, [`super::KINDS`]): on the
/// board whose sensors show `sensors`, with `shadow` the game the hands may
/// follow (played on by a move, or some plies on across a gap) and
/// `orientation` the game's.
pub(super) fn touches(
    f: &Frame,
    sensors: &Board,
    shadow: &mut Chess,
    orientation: Orientation,
) -> Vec<Touch> {
    match f.kind() {
        0 | 1 => vec![Touch::Lift(square(f.a))],
        2 | 3 => vec![Touch::Place(square(f.a), piece(f.b))],
        4 if f.a & 1 == 0 => {
            // A dump of the shadow game some plies on (a real gap).
            for k in 0..usize::from((f.a >> 1) % 8) {
                let moves = shadow.legal_moves();
                if moves.is_empty() {
                    break;
                }
                let m = moves[(usize::from(f.b) + k) % moves.len()];
                shadow.play_unchecked(m);
            }
            vec![Touch::Dump(as_seen(shadow.board(), orientation))]
        }
        4 => {
            // A dump of the sensors with one square changed (a corrupted dump).
            let mut b = sensors.clone();
            let sq = square(f.b);
            match b.piece_at(sq) {
                Some(_) => {
                    b.discard_piece_at(sq);
                }
                None => b.set_piece_at(sq, piece(f.c)),
            }
            vec![Touch::Dump(b)]
        }
        5 => vec![Touch::Press(if f.a & 1 == 0 {
            ClockSide::Left
        } else {
            ClockSide::Right
        })],
        6 => {
            let running = match f.a % 3 {
                0 => None,
                1 => Some(ClockSide::Left),
                _ => Some(ClockSide::Right),
            };
            let mut status = ClockStatus::new(
                ClockTime::from_millis(u32::from(f.b) * 1000),
                ClockTime::from_millis(u32::from(f.c) * 1000),
                running,
                f.a & 0x20 != 0,
            );
            status.left_flags.fallen = f.a & 0x40 != 0;
            status.right_flags.fallen = f.a & 0x80 != 0;
            vec![Touch::Clock { status, running }]
        }
        7 => vec![Touch::Gap],
        // Bytes the line garbled: 1 to 4, any values (a header among them
        // takes the bytes after it into a message of its own).
        8 => vec![Touch::Garbled(
            [f.b, f.c, f.d, f.a][..usize::from(f.a % 4) + 1].to_vec(),
        )],
        _ => shadow_move(f.a, f.b, shadow, orientation),
    }
}

/// The shadow game goes on by a legal move, played on the board by hand: the
/// squares it empties lifted, then each square it fills placed (a piece
/// captured there lifted first when `how` says so).
fn shadow_move(choice: u8, how: u8, shadow: &mut Chess, orientation: Orientation) -> Vec<Touch> {
    let moves = shadow.legal_moves();
    let Some(m) = moves.get(usize::from(choice) % moves.len().max(1)) else {
        return Vec::new();
    };
    let before = shadow.board().clone();
    shadow.play_unchecked(*m);
    let after = shadow.board();
    let mut lifts = Vec::new();
    let mut places = Vec::new();
    for sq in Square::ALL {
        let seen = seen(sq, orientation);
        match (before.piece_at(sq), after.piece_at(sq)) {
            (Some(_), None) => lifts.push(Touch::Lift(seen)),
            (was, Some(p)) if was != Some(p) => {
                if was.is_some() && how & 1 != 0 {
                    places.push(Touch::Lift(seen));
                }
                places.push(Touch::Place(seen, p));
            }
            _ => {}
        }
    }
    lifts.extend(places);
    lifts
}

/// A square of the real board in the board's numbering.
fn seen(sq: Square, orientation: Orientation) -> Square {
    match orientation {
        Orientation::Normal => sq,
        Orientation::Rotated => Square::new(63 - u32::from(sq)),
    }
}

/// A real board as the board's sensors number it.
pub(super) fn as_seen(board: &Board, orientation: Orientation) -> Board {
    let mut b = Board::empty();
    for (sq, piece) in board.iter() {
        b.set_piece_at(seen(sq, orientation), piece);
    }
    b
}

fn square(b: u8) -> Square {
    Square::new(u32::from(b % 64))
}

fn piece(b: u8) -> Piece {
    let role = match b % 6 {
        0 => Role::Pawn,
        1 => Role::Knight,
        2 => Role::Bishop,
        3 => Role::Rook,
        4 => Role::Queen,
        _ => Role::King,
    };
    Piece {
        color: if b & 0x80 == 0 { Color::White } else { Color::Black },
        role,
    }
}
