//! Driving the rules core with arbitrary input, for the fuzz target
//! (`fuzz/fuzz_targets/core.rs`) and the property tests: field updates, dumps,
//! clock reports, presses, gaps and line faults, in any order and timing. The
//! core must never panic, never record an illegal move, never report time going
//! back, and its deadlines must always move forward.

use shakmaty::{Board, Chess, Color, Piece, Position, Role, Square};

use super::{Config, Core};
use crate::board::BoardEvent;
use crate::protocol::{ClockSide, ClockStatus, ClockTime, PieceCode, Placement};

/// Reads `data` as a sequence of inputs and feeds them to a core, checking the
/// invariants after each one. `Err` says which invariant broke, and where.
pub fn drive(data: &[u8]) -> Result<(), String> {
    let mut core = Core::new(Config::default());
    let mut bytes = data.iter().copied();
    let mut next = move || bytes.next();
    let mut t: u64 = 0;
    let mut last_event_t = 0u64;
    // A game the inputs may follow, so that dumps of real positions come up too.
    let mut shadow = Chess::default();
    let mut step = 0usize;
    core.input(&dump(Board::new()), t);
    while let Some(op) = next() {
        step += 1;
        // Time moves on by 0 to 4 s, in 16 ms steps, sometimes not at all.
        t += u64::from(next().unwrap_or(0) & 0xf8) * 16_000;
        match op % 10 {
            0 | 1 => {
                let sq = square(next().unwrap_or(0));
                let piece = core
                    .sensors()
                    .piece_at(sq)
                    .map_or(PieceCode::Empty, PieceCode::Piece);
                core.input(&BoardEvent::Lift { square: sq, piece }, t);
            }
            2 | 3 => {
                let sq = square(next().unwrap_or(0));
                let p = piece(next().unwrap_or(0));
                let replaced = core
                    .sensors()
                    .piece_at(sq)
                    .map_or(PieceCode::Empty, PieceCode::Piece);
                core.input(
                    &BoardEvent::Place {
                        square: sq,
                        piece: PieceCode::Piece(p),
                        replaced,
                    },
                    t,
                );
            }
            4 => {
                // A dump of the shadow game some plies on (a real gap), or of the
                // sensors with one square changed (a corrupted dump).
                let n = next().unwrap_or(0);
                if n & 1 == 0 {
                    for k in 0..(n >> 1) % 8 {
                        let moves = shadow.legal_moves();
                        if moves.is_empty() {
                            break;
                        }
                        let m = moves[(usize::from(n) + k as usize) % moves.len()];
                        shadow.play_unchecked(m);
                    }
                    core.input(&dump(shadow.board().clone()), t);
                } else {
                    let mut b = core.sensors().clone();
                    let sq = square(next().unwrap_or(0));
                    match b.piece_at(sq) {
                        Some(_) => {
                            b.discard_piece_at(sq);
                        }
                        None => b.set_piece_at(sq, piece(n)),
                    }
                    core.input(&dump(b), t);
                }
            }
            5 => {
                let b = next().unwrap_or(0);
                let side = if b & 1 == 0 {
                    ClockSide::Left
                } else {
                    ClockSide::Right
                };
                core.input(&BoardEvent::Press(side), t);
            }
            6 => {
                let b = next().unwrap_or(0);
                let mut s = ClockStatus::new(
                    ClockTime::from_millis(u32::from(b) * 1000),
                    ClockTime::from_millis(u32::from(next().unwrap_or(0)) * 1000),
                    match b % 3 {
                        0 => None,
                        1 => Some(ClockSide::Left),
                        _ => Some(ClockSide::Right),
                    },
                    b & 0x20 != 0,
                );
                s.left_flags.fallen = b & 0x40 != 0;
                s.right_flags.fallen = b & 0x80 != 0;
                core.input(&BoardEvent::Clock(s), t);
            }
            7 => core.gap(t),
            8 => core.line_fault(t),
            _ => {
                // The shadow game goes on, played on the board as lifts and places.
                let moves = shadow.legal_moves();
                if let Some(m) = moves.get(usize::from(next().unwrap_or(0)) % moves.len().max(1)) {
                    let us = shadow.turn();
                    if let (Some(from), to) = (m.from(), m.to()) {
                        let piece = Piece {
                            color: us,
                            role: m.role(),
                        };
                        core.input(
                            &BoardEvent::Lift {
                                square: from,
                                piece: PieceCode::Piece(piece),
                            },
                            t,
                        );
                        let arriving = Piece {
                            color: us,
                            role: m.promotion().unwrap_or(m.role()),
                        };
                        let replaced = core
                            .sensors()
                            .piece_at(to)
                            .map_or(PieceCode::Empty, PieceCode::Piece);
                        core.input(
                            &BoardEvent::Place {
                                square: to,
                                piece: PieceCode::Piece(arriving),
                                replaced,
                            },
                            t,
                        );
                    }
                    shadow.play_unchecked(*m);
                }
            }
        }
        core.advance(t);
        if let Some(d) = core.next_deadline() {
            if d <= t {
                return Err(format!(
                    "step {step}: deadline {d} not after now {t} after advance"
                ));
            }
        }
        for e in core.take_events() {
            if e.t_us < last_event_t {
                return Err(format!(
                    "step {step}: event at {} after one at {last_event_t}: {e:?}",
                    e.t_us
                ));
            }
            last_event_t = e.t_us;
        }
    }
    core.finish();
    for e in core.take_events() {
        if e.t_us < last_event_t {
            return Err(format!("finish: event at {} after one at {last_event_t}", e.t_us));
        }
        last_event_t = e.t_us;
    }
    // Every recorded move is legal where it was played.
    for g in core.games() {
        let mut pos = g.positions[0].clone();
        for (i, m) in g.moves.iter().enumerate() {
            if !pos.is_legal(m.mv) {
                return Err(format!(
                    "game {}: ply {} ({}) is not legal",
                    g.number,
                    i + 1,
                    m.san
                ));
            }
            pos.play_unchecked(m.mv);
        }
    }
    Ok(())
}

fn dump(board: Board) -> BoardEvent {
    BoardEvent::Dump(Box::new(Placement::from_board(&board)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_fixed_inputs_hold() {
        for data in [
            &b""[..],
            &[9, 0, 9, 1, 9, 2, 7, 0, 4, 6, 0][..],
            &[4, 255, 1, 5, 8, 0, 6, 200, 3, 6, 200, 3],
        ] {
            drive(data).unwrap();
        }
    }
}
