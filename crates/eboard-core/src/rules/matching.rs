//! Matching a board by placement hash instead of by search.
//!
//! Every placement (which piece stands on which square; side to move, castling
//! rights and the rest play no part) has a 64-bit hash: the XOR of one fixed
//! random key per occupied (piece, square). A lift or a placement changes the
//! sensor board's hash by one XOR, so it is always up to date, for the board as it
//! stands and for the board turned round. A move's result hash comes from the
//! position's and the squares the move changes (no move is played); only the
//! moves that can explain the squares that differ are tried (`quick`), and a hit
//! is confirmed on the boards themselves, so a hash collision never makes a move.

use shakmaty::{Bitboard, Board, Chess, Color, Move, Piece, Position, Role, Square};

use super::record::Tentative;
use super::resync::{Cause, Found, Resync, Search};
use super::start::{CENTRE, kings_result};
use super::{Core, Game, IrregularKind, Side, Termination, game};
use crate::board::Orientation;

pub mod quick;

/// splitmix64: a fixed sequence of well-mixed keys (the same in every build).
const fn splitmix(state: u64) -> (u64, u64) {
    let state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (state, z ^ (z >> 31))
}

/// One key per (piece, square): 12 pieces × 64 squares.
static KEYS: [[u64; 64]; 12] = {
    let mut keys = [[0u64; 64]; 12];
    let mut state = 0x00eb_0a2d_b21d_6e00;
    let mut p = 0;
    while p < 12 {
        let mut sq = 0;
        while sq < 64 {
            let (s, k) = splitmix(state);
            state = s;
            keys[p][sq] = k;
            sq += 1;
        }
        p += 1;
    }
    keys
};

/// The key of `piece` on `square`.
#[inline]
pub fn key(piece: Piece, square: Square) -> u64 {
    let p = (piece.role as usize - 1) * 2 + usize::from(piece.color == Color::Black);
    KEYS[p][square as usize]
}

/// The placement hash of a whole board.
pub fn placement(board: &Board) -> u64 {
    board.iter().fold(0, |h, (sq, p)| h ^ key(p, sq))
}

/// The sensor board in board numbering, with its placement hash kept up to date
/// for both ways round (`hash[0]` as it stands, `hash[1]` turned round).
#[derive(Debug, Clone)]
pub struct Sensors {
    board: Board,
    hash: [u64; 2],
}

impl Default for Sensors {
    fn default() -> Sensors {
        Sensors::new(Board::empty())
    }
}

impl Sensors {
    pub fn new(board: Board) -> Sensors {
        let mut hash = [0, 0];
        for (sq, p) in board.iter() {
            hash[0] ^= key(p, sq);
            hash[1] ^= key(p, sq.rotate_180());
        }
        Sensors { board, hash }
    }

    pub fn board(&self) -> &Board {
        &self.board
    }

    /// The placement hash of the real board seen with `orientation`.
    #[inline]
    pub fn hash(&self, orientation: Orientation) -> u64 {
        match orientation {
            Orientation::Normal => self.hash[0],
            Orientation::Rotated => self.hash[1],
        }
    }

    #[inline]
    fn toggle(&mut self, sq: Square, p: Piece) {
        self.hash[0] ^= key(p, sq);
        self.hash[1] ^= key(p, sq.rotate_180());
    }

    /// A piece set down on `sq` (board numbering), replacing what stood there.
    pub fn set(&mut self, sq: Square, piece: Piece) {
        if let Some(old) = self.board.remove_piece_at(sq) {
            self.toggle(sq, old);
        }
        self.board.set_piece_at(sq, piece);
        self.toggle(sq, piece);
    }

    /// `sq` (board numbering) emptied.
    pub fn discard(&mut self, sq: Square) {
        if let Some(old) = self.board.remove_piece_at(sq) {
            self.toggle(sq, old);
        }
    }
}

/// The placement hash after `mv` by `us` from a position whose placement hash is
/// `h`: only the squares the move changes are keyed.
pub fn after(h: u64, mv: &Move, us: Color) -> u64 {
    match *mv {
        Move::Normal {
            role,
            from,
            capture,
            to,
            promotion,
        } => {
            let mut h = h ^ key(role.of(us), from) ^ key(promotion.unwrap_or(role).of(us), to);
            if let Some(c) = capture {
                h ^= key(c.of(!us), to);
            }
            h
        }
        Move::EnPassant { from, to } => {
            let taken = Square::from_coords(to.file(), from.rank());
            h ^ key(Role::Pawn.of(us), from) ^ key(Role::Pawn.of(us), to) ^ key(Role::Pawn.of(!us), taken)
        }
        Move::Castle { king, rook } => {
            let side = shakmaty::CastlingSide::from_king_side(king < rook);
            let king_to = side.king_to(us);
            let rook_to = side.rook_to(us);
            h ^ key(Role::King.of(us), king)
                ^ key(Role::Rook.of(us), rook)
                ^ key(Role::King.of(us), king_to)
                ^ key(Role::Rook.of(us), rook_to)
        }
        Move::Put { role, to } => h ^ key(role.of(us), to),
    }
}

/// Legal moves, each with the placement hash of its result, and a filter of
/// those hashes: most boards matched against a position (a piece in the hand)
/// are none of its moves' results, and the filter says so without a scan.
#[derive(Debug, Clone)]
pub struct Results {
    /// One bit set per move, chosen by its hash: a hash whose bit is clear is no
    /// move's.
    filter: [u64; 8],
    moves: Box<[(u64, Move)]>,
}

impl Results {
    /// The bit of hash `h` in the filter: (word, mask).
    #[inline]
    fn bit(h: u64) -> (usize, u64) {
        ((h >> 61) as usize, 1 << ((h >> 55) & 63))
    }

    pub fn moves(&self) -> &[(u64, Move)] {
        &self.moves
    }

    /// False when no move's result has hash `h`; true when one may.
    #[inline]
    pub fn may_have(&self, h: u64) -> bool {
        let (w, m) = Results::bit(h);
        self.filter[w] & m != 0
    }
}

/// The legal moves of `pos` with the placement hash of each one's result.
pub fn results(pos: &Chess, h: u64) -> Results {
    let us = pos.turn();
    let moves: Box<[(u64, Move)]> = pos
        .legal_moves()
        .into_iter()
        .map(|m| (after(h, &m, us), m))
        .collect();
    let mut filter = [0; 8];
    for (r, _) in moves.iter() {
        let (w, m) = Results::bit(*r);
        filter[w] |= m;
    }
    Results { filter, moves }
}

/// The move among `results` (of `pos`) whose result shows `board` (hash `h`).
/// A hash hit is confirmed on the boards.
pub fn find(pos: &Chess, results: &Results, h: u64, board: &Board) -> Option<Move> {
    if !results.may_have(h) {
        return None;
    }
    results
        .moves()
        .iter()
        .filter(|(r, _)| *r == h)
        .map(|(_, m)| *m)
        .find(|m| {
            let mut after = pos.clone();
            after.play_unchecked(*m);
            after.board() == board
        })
}

pub(super) fn diff_squares(a: &Board, b: &Board) -> Vec<Square> {
    diff_board(a, b).into_iter().collect()
}

/// Whether `to` is `from` with pieces only taken off it: every square `to`
/// occupies holds the same piece in `from` (a piece lifted, knocked over, or
/// in the hand; nothing set down since).
pub(super) fn only_lifted(from: &Board, to: &Board) -> bool {
    (diff_board(from, to) & to.occupied()).is_empty()
}

/// The squares where `a` and `b` differ (a piece on one only, or different
/// pieces), by whole bitboards.
pub(super) fn diff_board(a: &Board, b: &Board) -> Bitboard {
    let both = a.occupied() & b.occupied();
    let mut diff = (a.occupied() ^ b.occupied()) | ((a.white() ^ b.white()) & both);
    for role in Role::ALL {
        diff |= (a.by_role(role) ^ b.by_role(role)) & both;
    }
    diff
}

/// The squares a move can change: its piece's, its destination, the pawn it
/// takes en passant, the castling rook's start and both pieces' ends. Every
/// square whose piece differs after the move is among them.
fn move_squares(m: &Move, us: Color) -> Bitboard {
    match *m {
        Move::Normal { from, to, .. } => Bitboard::from(from) | to,
        Move::EnPassant { from, to } => {
            Bitboard::from(from) | to | Square::from_coords(to.file(), from.rank())
        }
        Move::Castle { king, rook } => {
            let side = shakmaty::CastlingSide::from_king_side(king < rook);
            Bitboard::from(king) | rook | side.king_to(us) | side.rook_to(us)
        }
        Move::Put { to, .. } => Bitboard::from(to),
    }
}

/// A board on the way from `pos` to a legal move's result: only the move's squares
/// differ, each showing what it had, what it will have, nothing, or the moving
/// piece; or pieces only lifted from the expected position.
pub(super) fn is_partial(pos: &Chess, board: &Board) -> bool {
    let expected = pos.board();
    let diff = diff_board(expected, board);
    let Some(placed) = (diff & board.occupied()).first() else {
        // Pieces in the air: each must be one a legal move lifts (its own piece, a
        // castling rook, or the piece it captures); a piece off the board that no
        // legal move touches was knocked off or taken away. A free piece is
        // one at once; the moves are generated only for the others.
        let mut legal = None;
        return diff.into_iter().all(|sq| {
            quick::surely_lifted(pos, sq)
                || legal
                    .get_or_insert_with(|| pos.legal_moves())
                    .iter()
                    .any(|m| lifted_by(m).contains(sq))
        });
    };
    // No move changes more than 4 squares.
    if diff.count() > 4 {
        return false;
    }
    let us = pos.turn();
    // A move whose squares do not hold every square that differs cannot
    // explain the board: only the few that can (`quick::partial_candidates`)
    // are looked at, and of those only the ones that hold them are played.
    quick::partial_candidates(pos, board, placed, |m| {
        if !(diff & !move_squares(m, us)).is_empty() {
            return false;
        }
        let mut after = pos.clone();
        after.play_unchecked(*m);
        let result = after.board();
        let touched = diff_board(expected, result);
        let mover = m.from().and_then(|f| expected.piece_at(f));
        diff.into_iter().all(|sq| {
            touched.contains(sq) && {
                let now = board.piece_at(sq);
                now.is_none() || now == expected.piece_at(sq) || now == result.piece_at(sq) || now == mover
            }
        })
    })
}

/// The squares a move lifts pieces from: its piece's, and the piece it captures
/// or the rook it castles with.
pub(super) fn lifted_by(m: &Move) -> Bitboard {
    match *m {
        Move::Castle { king, rook } => Bitboard::from(king) | rook,
        Move::EnPassant { from, to } => Bitboard::from(from) | Square::from_coords(to.file(), from.rank()),
        Move::Normal {
            from, capture, to, ..
        } => {
            Bitboard::from(from)
                | if capture.is_some() {
                    Bitboard::from(to)
                } else {
                    Bitboard::EMPTY
                }
        }
        Move::Put { .. } => Bitboard::EMPTY,
    }
}

/// A piece on `square` that a legal move from `pos` captures.
pub(super) fn capture_target(pos: &Chess, square: Square) -> bool {
    quick::capture_target(pos, square)
}

impl Core {
    /// A move held back (see [`UnderWay::held`](super::record::UnderWay)) that the board has gone on from: a
    /// legal reply's result, or a reply under way with something set down beyond
    /// the move. Never a result by kings.
    pub(super) fn held_goes_on(&self) -> bool {
        let (Some(h), Some(game)) = (self.under_way.held, &self.game) else {
            return false;
        };
        if h.base != game.ply() {
            return false;
        }
        let board = self.real_board();
        if kings_result(&board).is_some() {
            return false;
        }
        let base = &game.positions[h.base];
        // A legal reply's result: only replies whose result has the board's
        // placement hash are played and compared.
        let h_after = after(game.placement(h.base), &h.mv, base.turn());
        let h_board = self.real_hash();
        let mut held = base.clone();
        held.play_unchecked(h.mv);
        // Something set down beyond the held move, on the way to a reply.
        let placed = !only_lifted(held.board(), &board);
        let reply = quick::find(&held, h_after, h_board, &board).is_some();
        reply || (placed && is_partial(&held, &board))
    }

    /// Matches the board against what the game allows.
    pub(super) fn evaluate(&mut self, t: u64) {
        let board = self.real_board();
        if let Some(r) = &mut self.line.resync {
            r.search = Search::No;
        }
        if self.game.is_none() {
            return;
        }
        if let Some((result, _)) = kings_result(&board) {
            // Never a move: drop a king step onto the centre that is not completed.
            self.under_way.tentative = None;
            let Some(g) = self.game.as_ref() else { return };
            if let Some(last) = g.moves.last() {
                if !last.completed && last.mv.role() == Role::King && CENTRE.contains(&last.mv.to()) {
                    let ply = g.ply() - 1;
                    self.take_back(ply, t);
                }
            }
            // Across a gap, the plies played before the kings went to the
            // centre, when the board says which.
            if let Some(path) = self.plies_before_kings(&board) {
                self.commit_inferred(path, t);
                if self.game.as_ref().is_some_and(Game::is_over) {
                    return;
                }
            }
            self.end_game(t, result, Termination::ResultKings);
            return;
        }
        if self.settle_anchor(&board, t) {
            return;
        }
        let Some(game) = &self.game else { return };
        let n = game.ply();
        let h = self.real_hash();
        // Across a gap, what the board shows was not seen being played, unless
        // played from a position the board was seen to show since (any of the
        // boards seen since the line is in step).
        let (gap, seen) = match &self.line.resync {
            Some(r) => (r.cause == Cause::Gap, r.seen_boards.as_slice()),
            None => (false, &[] as &[Board]),
        };
        let inferred = |base: usize| gap && !seen.contains(game.positions[base].board());
        self.under_way.takeback = None;
        if game.shows(n, h, &board) {
            self.under_way.drop_moves();
            self.report_cycle_missed(t);
            self.leave_resync(t);
            self.resolve(t);
            return;
        }
        if let Some(mv) = game.move_from(n, h, &board) {
            // A king step onto the centre (not a capture) may be the start of a
            // result by kings.
            let kings_hold = mv.role() == Role::King && CENTRE.contains(&mv.to()) && !mv.is_capture();
            self.under_way.held = None;
            self.show(Tentative {
                base: n,
                mv,
                kings_hold,
                inferred: inferred(n),
                found: false,
                at: t,
            });
            self.resolve(t);
            return;
        }
        if n > 0 && !game.moves[n - 1].completed {
            if let Some(mv) = game
                .move_from(n - 1, h, &board)
                .filter(|mv| replaces_inferred_as_slide(game, n - 1, mv))
            {
                self.show(Tentative {
                    base: n - 1,
                    mv,
                    kings_hold: false,
                    inferred: inferred(n - 1),
                    found: false,
                    at: t,
                });
                self.resolve(t);
                return;
            }
        }
        // An earlier position, or a legal move from one: a take-back. Across a
        // gap, plies played on from the record may reach the same board (a
        // repetition: the rooks' shuffle in time trouble): those lose no move
        // seen, and are recorded (inferred) instead; a take-back only where none
        // reaches it. The board is then a whole position, no piece in the hand.
        let earlier = || {
            (n.saturating_sub(8)..n)
                .any(|k| game.shows(k, h, &board) || game.move_from(k, h, &board).is_some())
        };
        // On a board read by dumps only, several plies fall between two dumps:
        // the same holds.
        let poll = self.line.resync.as_ref().is_some_and(|r| r.cause == Cause::Poll);
        if (gap || poll) && earlier() {
            // A path of no plies changes nothing here: the take-back below.
            match self.best_path(&board, game::MAX_INFERRED_PLIES, false) {
                Found::Path(base, path) if !path.is_empty() => {
                    self.commit_found(base, path, t);
                    if let Some(r) = &mut self.line.resync {
                        r.anchor = None;
                    }
                    self.evaluate(t);
                    return;
                }
                _ => {}
            }
        }
        let Some(game) = &self.game else { return };
        // A board on the way to a move from the game's position (the side to move
        // has lifted a piece) is that move under way, even where it is also an
        // earlier position with another move played from it: a queen lifted to
        // capture the rook that took the square it left reads, for a moment, as
        // the rook's earlier capture of the queen.
        let under_way = is_partial(game.current(), &board);
        for k in (n.saturating_sub(8)..n).rev() {
            if game.shows(k, h, &board) {
                self.under_way.tentative = None;
                self.under_way.takeback = Some(k);
                return;
            }
            if under_way {
                continue;
            }
            if let Some(mv) = game
                .move_from(k, h, &board)
                .filter(|mv| k + 1 < n || replaces_inferred_as_slide(game, k, mv))
                // Across a gap, never a move seen before it replaced by
                // another (a rook's trip out and home while the line was
                // away, and the king's step: not 45... Kh8, seen, taken
                // back for 45... Kh7): the board stands unexplained, and is
                // reported (`lost_track`).
                .filter(|_| !(gap && self.fact(k)))
            {
                self.show(Tentative {
                    base: k,
                    mv,
                    kings_hold: false,
                    inferred: inferred(k),
                    found: false,
                    at: t,
                });
                return;
            }
        }
        // The board left a move it showed for a reply under way from it (the
        // opponent lifted their king after a king step onto the centre, or a
        // piece of the mover's to capture it): that move is held, made once the
        // board goes on from it.
        let left = self
            .under_way
            .tentative
            .take()
            .filter(|t| t.base == n && self.under_way.held.is_none());
        if let Some(tent) = left {
            let mut after = game.positions[n].clone();
            after.play_unchecked(tent.mv);
            if is_partial(&after, &board) {
                self.under_way.held = Some(tent);
            }
        }
        // The opponent lifted a piece the held move could have captured (or the
        // board left it as above), and the board goes on from that move: it was
        // made after all.
        if self.held_goes_on() {
            self.under_way.unhold();
            self.commit(t);
            self.evaluate(t);
            return;
        }
        let Some(game) = &self.game else { return };
        // The line may have missed plies: look for them once the board rests. So
        // may the inferred moves the record ends with have been a wrong guess
        // (a path of fewer plies than were played, another order): the search
        // looks from before them too.
        if self.line.resync.is_none()
            && super::resync::inferred_tail(game) < n
            && !is_partial(game.current(), &board)
        {
            let mut r = Resync::new(Cause::Tail, false, n);
            // The board was on the record's position when its inferred moves
            // were found; what followed was seen.
            r.seen_boards.push(game.current().board().clone());
            self.line.resync = Some(r);
        }
        if let Some(r) = &mut self.line.resync {
            if !r.gated {
                r.search = Search::Short;
            }
        }
    }

    /// The board is back on the record's position after a gap whose dump
    /// showed a piece set down where the record has none, neither found to
    /// be plies, nor a slip, nor a move under way: plies were played and
    /// undone while the line was away (a cycle back to the same position: a
    /// rook out and home while the kings stepped). They are not in the
    /// record, and that is said (`lost_track`, resolved at once), not left
    /// silent because the board came back before the irregular threshold.
    fn report_cycle_missed(&mut self, t: u64) {
        let (Some(r), Some(game)) = (&self.line.resync, &self.game) else {
            return;
        };
        let (Some(anchor), Some(at)) = (r.seen_boards.first(), r.dump_ply) else {
            return;
        };
        if r.cause != Cause::Gap
            || r.slip.is_some()
            || r.search == Search::Rested
            || at != game.ply()
            || only_lifted(game.current().board(), anchor)
            || self.irregular.as_ref().is_some_and(|i| i.kind.is_some())
        {
            return;
        }
        let board = anchor.clone();
        let side: Side = game.current().turn().into();
        let count = self.violations[super::side_index(side)];
        self.note(
            "after the gap in the line, the board showed pieces where the record has none, then came back to the record's position: moves were played and undone while the line was away; they are not in the record".to_string(),
        );
        self.raise(t, board, IrregularKind::LostTrack, side, Vec::new(), count, None);
    }
}

/// Whether `mv`, from the position before the record's move at index `k`, may
/// take that move's place (an amendment: a slide that rested on a square it
/// crossed, then went on). A move the line showed may be amended by any; an
/// inferred one (a dump showed where it ended) only by its piece going on
/// from the square it left, along the same line, past the square the dump
/// showed it on. Any other move from there is a ply more: a king a dump
/// showed on h8, then seen stepping to h7, moved twice (g8-h8, h8-h7), and a
/// step g8-h7 in place of g8-h8 would replace what the dump showed.
fn replaces_inferred_as_slide(game: &Game, k: usize, mv: &Move) -> bool {
    let Some(last) = game.moves.get(k) else {
        return true;
    };
    !last.inferred
        || (mv.from() == last.mv.from()
            && mv.role() == last.mv.role()
            && last
                .mv
                .from()
                .is_some_and(|from| shakmaty::attacks::between(from, mv.to()).contains(last.mv.to())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::CastlingMode;
    use shakmaty::fen::Fen;

    fn pos(fen: &str, mode: CastlingMode) -> Chess {
        fen.parse::<Fen>()
            .expect("fen")
            .into_position(mode)
            .expect("legal")
    }

    /// Every legal move's computed hash equals the hash of the board it leads to:
    /// normal moves, captures, promotions, en passant, both castlings, Chess960
    /// castling with the king or rook staying put.
    #[test]
    fn result_hashes_match_the_boards_played() {
        let fens = [
            (
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                CastlingMode::Standard,
            ),
            (
                "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
                CastlingMode::Standard,
            ),
            (
                "r3k2r/p1ppqpb1/bn2pnp1/3PN3/Pp2P3/2N2Q1p/1PPBBPPP/R3K2R b KQkq a3 0 1",
                CastlingMode::Standard,
            ),
            ("n1n5/PPPk4/8/8/8/8/4Kppp/5N1N w - - 0 1", CastlingMode::Standard),
            ("1r2k1r1/8/8/8/8/8/8/1R2K1R1 w GBgb - 0 1", CastlingMode::Chess960),
            ("2rk3r/8/8/8/8/8/8/2RK3R w HChc - 0 1", CastlingMode::Chess960),
            ("5rkr/8/8/8/8/8/8/5RKR b HFhf - 0 1", CastlingMode::Chess960),
        ];
        let (mut checked, mut castles, mut en_passant, mut promotions) = (0, 0, 0, 0);
        for (fen, mode) in fens {
            let p = pos(fen, mode);
            let h = placement(p.board());
            for (r, m) in results(&p, h).moves() {
                let mut q = p.clone();
                q.play_unchecked(*m);
                assert_eq!(*r, placement(q.board()), "{fen}: {m:?}");
                assert_eq!(find(&p, &results(&p, h), *r, q.board()), Some(*m), "{fen}: {m:?}");
                checked += 1;
                castles += usize::from(m.is_castle());
                en_passant += usize::from(m.is_en_passant());
                promotions += usize::from(m.is_promotion());
            }
        }
        assert!(checked > 150, "{checked} moves checked");
        assert!(castles >= 6, "{castles} castlings checked");
        assert!(
            en_passant >= 1 && promotions >= 8,
            "{en_passant} en passant, {promotions} promotions"
        );
    }

    /// The sensor hash follows lifts and placements either way round.
    #[test]
    fn sensors_hash_follows_changes() {
        let mut s = Sensors::new(Board::new());
        s.discard(Square::E2);
        s.set(Square::E4, Color::White.pawn());
        s.set(Square::D7, Color::White.queen()); // over a black pawn
        let mut rotated = s.board().clone();
        rotated.rotate_180();
        assert_eq!(s.hash(Orientation::Normal), placement(s.board()));
        assert_eq!(s.hash(Orientation::Rotated), placement(&rotated));
        s.discard(Square::A5); // empty already: no change
        assert_eq!(s.hash(Orientation::Normal), placement(s.board()));
    }
}
