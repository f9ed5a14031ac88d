//! The matching questions answered without generating every legal move of a
//! position, which cost about a quarter of `replay` (`docs/PERFORMANCE.md`).
//!
//! Each answer is the one the full generation gives: a fast path answers only
//! what it can prove from a few attack lookups (a piece that moves freely has a
//! legal move), and everything else goes to the generation as before. A board is
//! matched from the squares that differ: the moves that can explain them (to a
//! square that gained a piece of the side to move, castling) are the only ones
//! tried, and when two of them explain the same board (none does in chess or
//! Chess960, as far as the tests find) the generation order decides, as it did.

use shakmaty::{Bitboard, Board, CastlingSide, Chess, Move, Position, Role, Square};

use super::{after, diff_board, results};

/// Whether the side to move can move its piece on `from` (not its king) without
/// exposing its king: its king is not attacked with that square emptied. Then
/// the side is not in check, and any pseudo-legal move of that piece but en
/// passant is legal: the piece lands somewhere (it can only block more lines)
/// and what it takes attacks no more.
fn free(pos: &Chess, king: Square, from: Square) -> bool {
    let board = pos.board();
    board
        .attacks_to(king, !pos.turn(), board.occupied() ^ from)
        .is_empty()
}

/// Whether the piece of the side to move on `from` has a pseudo-legal move
/// other than en passant and castling (false for a king: not asked).
fn has_pseudo(board: &Board, from: Square) -> bool {
    let Some(piece) = board.piece_at(from) else {
        return false;
    };
    let us = piece.color;
    match piece.role {
        Role::King => false,
        Role::Pawn => {
            let push = from.offset(if us.is_white() { 8 } else { -8 });
            push.is_some_and(|s| !board.occupied().contains(s))
                || (shakmaty::attacks::pawn_attacks(us, from) & board.by_color(!us)).any()
        }
        _ => (board.attacks_from(from) & !board.by_color(us)).any(),
    }
}

/// Whether `pos` has a legal move: a piece that moves freely says so at once;
/// otherwise (in check, pinned or blocked pieces only) the moves are generated.
pub fn has_legal_move(pos: &Chess) -> bool {
    let board = pos.board();
    let us = pos.turn();
    if let Some(king) = board.king_of(us) {
        for from in board.by_color(us) & !board.kings() {
            if has_pseudo(board, from) && free(pos, king, from) {
                return true;
            }
        }
    }
    !pos.legal_moves().is_empty()
}

/// True when some legal move of `pos` surely lifts the piece on `sq`
/// ([`super::lifted_by`]): a free piece of the side to move that can move, its
/// king with a safe step, or a piece of the other side that a free piece
/// attacks. False means "not known".
pub(super) fn surely_lifted(pos: &Chess, sq: Square) -> bool {
    let board = pos.board();
    let us = pos.turn();
    let (Some(king), Some(piece)) = (board.king_of(us), board.piece_at(sq)) else {
        return false;
    };
    if piece.color == us {
        if piece.role == Role::King {
            return king_steps(board, sq, us);
        }
        has_pseudo(board, sq) && free(pos, king, sq)
    } else {
        surely_captured(pos, king, sq)
    }
}

/// Whether the king of `us` on `king` can step to a square without a piece of
/// its own that no piece of the other side attacks once the king has left its
/// square: such a step is a legal move, in check or not.
fn king_steps(board: &Board, king: Square, us: shakmaty::Color) -> bool {
    let occupied = board.occupied() ^ king;
    (shakmaty::attacks::king_attacks(king) & !board.by_color(us))
        .into_iter()
        .any(|to| board.attacks_to(to, !us, occupied).is_empty())
}

/// True when a free piece of the side to move (not its king) attacks the piece
/// on `sq`: taking it is legal. False means "not known".
fn surely_captured(pos: &Chess, king: Square, sq: Square) -> bool {
    let board = pos.board();
    let attackers = board.attacks_to(sq, pos.turn(), board.occupied()) & !board.kings();
    for a in attackers {
        if free(pos, king, a) {
            return true;
        }
    }
    false
}

/// [`super::capture_target`] with its fast path: a piece that a free piece
/// attacks is one.
pub(super) fn capture_target(pos: &Chess, square: Square) -> bool {
    let board = pos.board();
    let us = pos.turn();
    let theirs = board.piece_at(square).is_some_and(|p| p.color != us);
    if let (true, Some(king)) = (theirs, board.king_of(us)) {
        if surely_captured(pos, king, square) {
            return true;
        }
    }
    pos.legal_moves().iter().any(|m| match *m {
        Move::EnPassant { from, to } => Square::from_coords(to.file(), from.rank()) == square,
        _ => m.is_capture() && m.to() == square,
    })
}

/// The legal move of `pos` (placement hash `h_pos`) whose result shows `board`
/// (placement hash `h`): the first in the generation order, as
/// [`super::find`] over the whole table gives it.
///
/// A legal move changes 2 to 4 squares, and the square its piece lands on (or
/// for castling, its king's or rook's) gains a piece of the side to move: only
/// the legal moves to those squares of that piece (and a pawn's promotion to
/// it), and castling when it is a king or a rook, can have the board as their
/// result. Each is checked by hash, then on the boards.
pub fn find(pos: &Chess, h_pos: u64, h: u64, board: &Board) -> Option<Move> {
    let diff = diff_board(pos.board(), board);
    if !(2..=4).contains(&diff.count()) {
        return None;
    }
    let us = pos.turn();
    let mut found: Option<Move> = None;
    let mut more = false;
    let mut check = |m: Move| {
        if after(h_pos, &m, us) == h && found != Some(m) && {
            let mut next = pos.clone();
            next.play_unchecked(m);
            next.board() == board
        } {
            if found.is_some() {
                more = true;
            } else {
                found = Some(m);
            }
        }
    };
    // The move lists are read where they are made (a list is 270 moves long,
    // copied whole when moved), and castling is generated only for a side that
    // still has the right (no other has a castling move).
    let mut castles = false;
    for to in diff & board.by_color(us) {
        let Some(piece) = board.piece_at(to) else { continue };
        pos.san_candidates(piece.role, to)
            .iter()
            .copied()
            .for_each(&mut check);
        if !matches!(piece.role, Role::Pawn | Role::King) && Bitboard::BACKRANKS.contains(to) {
            pos.san_candidates(Role::Pawn, to)
                .iter()
                .copied()
                .filter(|m| m.is_promotion())
                .for_each(&mut check);
        }
        castles |= matches!(piece.role, Role::King | Role::Rook);
    }
    if castles {
        for side in [CastlingSide::KingSide, CastlingSide::QueenSide] {
            if pos.castles().has(us, side) {
                pos.castling_moves(side).iter().copied().for_each(&mut check);
            }
        }
    }
    if more {
        // Two moves with one result: the generation order picks, as before.
        return super::find(pos, &results(pos, h_pos), h, board);
    }
    found
}

/// Whether one of the legal moves of `pos` that can explain a board on the way
/// to its result ([`super::is_partial`]) passes `each`: the board differs from
/// the position on squares that include `placed`, which holds a piece. A move
/// other than castling and en passant changes its own square and its
/// destination only, and on its way its own square holds nothing, what it had
/// (no difference), its result (nothing) or its piece (what it had): so
/// `placed` is its destination, holding its piece or, for a promotion, the new
/// one, of the side to move. Those moves, every en passant and every castling
/// are given to `each` (some more than once), not the generation's other moves.
pub(super) fn partial_candidates(
    pos: &Chess,
    board: &Board,
    placed: Square,
    mut each: impl FnMut(&Move) -> bool,
) -> bool {
    // The lists are read where they are made (not moved: see `find`); en
    // passant and castling only where the position allows them at all.
    let mut any = |moves: &shakmaty::MoveList| moves.iter().any(&mut each);
    if let Some(piece) = board.piece_at(placed).filter(|p| p.color == pos.turn()) {
        if any(&pos.san_candidates(piece.role, placed)) {
            return true;
        }
        if piece.role != Role::Pawn && any(&pos.san_candidates(Role::Pawn, placed)) {
            return true;
        }
    }
    let castles = |side| pos.castles().has(pos.turn(), side);
    (pos.maybe_ep_square().is_some() && any(&pos.en_passant_moves()))
        || (castles(CastlingSide::KingSide) && any(&pos.castling_moves(CastlingSide::KingSide)))
        || (castles(CastlingSide::QueenSide) && any(&pos.castling_moves(CastlingSide::QueenSide)))
}

#[cfg(test)]
mod tests {
    use super::super::{lifted_by, placement};
    use super::*;
    use crate::sim::Seeded;
    use shakmaty::fen::Fen;
    use shakmaty::{CastlingMode, Color, Piece};

    /// Positions of seeded random games from the standard start, Chess960
    /// starts with castling rights on both sides, and ends: stalemates,
    /// checkmates, pins, en passant and promotions.
    fn positions() -> Vec<Chess> {
        let starts = [
            (
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                CastlingMode::Standard,
            ),
            (
                "bnrqkrnb/pppppppp/8/8/8/8/PPPPPPPP/BNRQKRNB w FCfc - 0 1",
                CastlingMode::Chess960,
            ),
            (
                "rkrnnqbb/pppppppp/8/8/8/8/PPPPPPPP/RKRNNQBB w CAca - 0 1",
                CastlingMode::Chess960,
            ),
            (
                "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1",
                CastlingMode::Chess960,
            ),
            ("1r2k1r1/8/8/8/8/8/8/1R2K1R1 w GBgb - 0 1", CastlingMode::Chess960),
            ("5rkr/8/8/8/8/8/8/5RKR b HFhf - 0 1", CastlingMode::Chess960),
            ("2rk3r/8/8/8/8/8/8/2RK3R w HChc - 0 1", CastlingMode::Chess960),
            ("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", CastlingMode::Standard),
            ("k7/P7/1K6/8/8/8/8/8 b - - 0 1", CastlingMode::Standard),
            ("6rk/5Npp/8/8/8/8/8/6K1 b - - 0 1", CastlingMode::Standard),
            ("4k3/8/8/2KPp2r/8/8/8/8 w - e6 0 1", CastlingMode::Standard),
            ("4k3/4r3/8/8/8/8/4B3/4K3 w - - 0 1", CastlingMode::Standard),
            ("n1n5/PPPk4/8/8/8/8/4Kppp/5N1N w - - 0 1", CastlingMode::Standard),
        ];
        let mut pick = Seeded::new(96);
        let mut out = Vec::new();
        for (fen, mode) in starts {
            let start: Chess = fen
                .parse::<Fen>()
                .expect("a FEN")
                .into_position(mode)
                .unwrap_or_else(|e| panic!("{fen}: {e}"));
            for _ in 0..6 {
                let mut pos = start.clone();
                for _ in 0..120 {
                    out.push(pos.clone());
                    let moves = pos.legal_moves();
                    if moves.is_empty() {
                        break;
                    }
                    // Captures and castling more often than chance: more ends,
                    // and more of the moves that move two pieces.
                    let keen: Vec<Move> = moves
                        .iter()
                        .copied()
                        .filter(|m| m.is_capture() || m.is_castle() || m.is_promotion())
                        .collect();
                    let from = if !keen.is_empty() && pick.chance(60) {
                        &keen[..]
                    } else {
                        &moves[..]
                    };
                    pos.play_unchecked(from[pick.range(0, from.len() as u64 - 1) as usize]);
                }
            }
        }
        out
    }

    /// A board changed on 1 to 4 random squares: lifts, placements, swaps.
    fn changed(board: &Board, pick: &mut Seeded) -> Board {
        let mut b = board.clone();
        for _ in 0..pick.range(1, 4) {
            let sq = Square::new(pick.range(0, 63) as u32);
            if pick.chance(50) {
                b.discard_piece_at(sq);
            } else {
                let role = Role::ALL[pick.range(0, 5) as usize];
                let color = if pick.chance(50) {
                    Color::White
                } else {
                    Color::Black
                };
                b.set_piece_at(sq, Piece { role, color });
            }
        }
        b
    }

    #[test]
    fn quick_answers_are_the_generations() {
        let mut pick = Seeded::new(36);
        let (mut seen, mut found, mut mates, mut lifted_fast, mut partial) = (0, 0, 0, 0, 0);
        for pos in positions() {
            seen += 1;
            let legal = pos.legal_moves();
            assert_eq!(
                has_legal_move(&pos),
                !legal.is_empty(),
                "{}",
                crate::rules::game_fen(&pos)
            );
            mates += usize::from(legal.is_empty());
            let h = placement(pos.board());
            let table = results(&pos, h);
            // Every legal move's result, and boards near it and near the
            // position, found as the whole table finds them.
            let mut boards = vec![pos.board().clone()];
            for m in &legal {
                let mut next = pos.clone();
                next.play_unchecked(*m);
                boards.push(next.board().clone());
                boards.push(changed(next.board(), &mut pick));
            }
            for _ in 0..8 {
                boards.push(changed(pos.board(), &mut pick));
            }
            // Boards on the way to each legal move's result: each of its
            // squares as it was, as it will be, empty, or holding its piece.
            for m in &legal {
                let mut next = pos.clone();
                next.play_unchecked(*m);
                let mover = m.from().and_then(|f| pos.board().piece_at(f));
                for _ in 0..2 {
                    let mut b = pos.board().clone();
                    for sq in super::super::move_squares(m, pos.turn()) {
                        let choice = match pick.range(0, 3) {
                            0 => pos.board().piece_at(sq),
                            1 => next.board().piece_at(sq),
                            2 => None,
                            _ => mover,
                        };
                        match choice {
                            Some(p) => b.set_piece_at(sq, p),
                            None => {
                                b.discard_piece_at(sq);
                            }
                        }
                    }
                    boards.push(b);
                }
            }
            for b in &boards {
                let hb = placement(b);
                let want = super::super::find(&pos, &table, hb, b);
                assert_eq!(
                    find(&pos, h, hb, b),
                    want,
                    "{} to {b:?}",
                    crate::rules::game_fen(&pos)
                );
                found += usize::from(want.is_some());
                let on_the_way = partial_by_generation(&pos, b);
                assert_eq!(
                    super::super::is_partial(&pos, b),
                    on_the_way,
                    "is_partial: {} to {b:?}",
                    crate::rules::game_fen(&pos)
                );
                partial += usize::from(on_the_way && (diff_board(pos.board(), b) & b.occupied()).any());
            }
            for sq in Square::ALL {
                let by_generation = legal.iter().any(|m| match *m {
                    Move::EnPassant { from, to } => Square::from_coords(to.file(), from.rank()) == sq,
                    _ => m.is_capture() && m.to() == sq,
                });
                assert_eq!(capture_target(&pos, sq), by_generation, "{sq}");
                if surely_lifted(&pos, sq) {
                    lifted_fast += 1;
                    assert!(legal.iter().any(|m| lifted_by(m).contains(sq)), "{sq}");
                }
            }
        }
        assert!(seen > 5_000, "{seen} positions");
        assert!(mates >= 18, "{mates} positions without a legal move");
        assert!(
            found > 100_000 && lifted_fast > 10_000,
            "{found} found, {lifted_fast} lifted"
        );
        assert!(
            partial > 50_000,
            "{partial} boards on the way with a piece set down"
        );
    }

    /// `is_partial` as it was, over every legal move: the reference.
    fn partial_by_generation(pos: &Chess, board: &Board) -> bool {
        let expected = pos.board();
        let diff_bb = diff_board(expected, board);
        let diff: Vec<Square> = diff_bb.into_iter().collect();
        if diff.iter().all(|sq| board.piece_at(*sq).is_none()) {
            let legal = pos.legal_moves();
            return diff
                .iter()
                .all(|sq| legal.iter().any(|m| lifted_by(m).contains(*sq)));
        }
        if diff.len() > 4 {
            return false;
        }
        pos.legal_moves().into_iter().any(|m| {
            let mut after = pos.clone();
            after.play_unchecked(m);
            let result = after.board();
            let mut touched = Bitboard::EMPTY;
            for sq in Square::ALL {
                if expected.piece_at(sq) != result.piece_at(sq) {
                    touched.add(sq);
                }
            }
            let mover = m.from().and_then(|f| expected.piece_at(f));
            diff.iter().all(|sq| {
                touched.contains(*sq) && {
                    let now = board.piece_at(*sq);
                    now.is_none()
                        || now == expected.piece_at(*sq)
                        || now == result.piece_at(*sq)
                        || now == mover
                }
            })
        })
    }
}
