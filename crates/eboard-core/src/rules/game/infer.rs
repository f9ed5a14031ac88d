//! Plies a gap in the line may have hidden: the sequences of legal moves from
//! the record's position that end on the board seen again (`infer_path`), and
//! the trips back to a first square no board can show (`round_trip`).

use super::*;

/// The most plies a gap in the line is bridged by (`docs/RULES.md`, "What it never does").
pub const MAX_INFERRED_PLIES: usize = 6;

/// How many positions one inference may visit before it gives up (a board no
/// sequence reaches costs this much; one that a sequence reaches, far less).
pub const INFER_BUDGET: u32 = 60_000;

/// What an inference found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inferred {
    /// The shortest sequence of legal moves from the position to the board (one of
    /// them, when several orders reach it).
    Path(Vec<Move>),
    /// No sequence of at most the plies asked reaches the board.
    None,
    /// The board is a move under way (a piece in the hand) after this many plies,
    /// fewer than any sequence that ends on it exactly needs (or none does).
    UnderWay(usize),
    /// The search stopped at its budget before it could tell.
    GaveUp,
}

/// What the line showed while the board could not be followed (real squares).
#[derive(Debug, Clone, Copy, Default)]
pub struct Seen<'a> {
    /// Squares pieces were lifted from, in order.
    pub lifts: &'a [Square],
    /// Pieces put down, and where.
    pub placed: &'a [(Square, Piece)],
}

/// Sequences of 1 to `max_plies` legal moves from `pos` that end on `board`, for a
/// board seen again after the line could have missed changes. Never a sequence
/// in which a piece that moved ends on the square it started from (that is an
/// irregularity seen, not a round trip to invent), unless the line showed such a
/// piece put down on every square of its trip away from its own (`seen.placed`):
/// then the trip is what the board showed, bytes of it lost. (Its return home
/// need not have been seen: a placement on a square the sensor board, behind
/// after a loss, already shows that piece on is no change and reaches no one.)
///
/// Iterative deepening with a lower bound on the plies still needed; only pieces
/// on squares that differ from the board are moved, and pieces like one seen put
/// down where the board no longer shows it. `budget` bounds the positions visited.
///
/// When several orders of the fewest plies reach the board, the one whose moves
/// best follow `seen.lifts` (squares pieces were seen lifted from meanwhile, in
/// order) is chosen; among equals, the first found.
///
/// With `under_way`, a board that is a move under way (one or two pieces in the
/// air that one legal move lifts) a few plies on, fewer plies and the move under
/// way than any sequence that ends on the board exactly, is
/// [`Inferred::UnderWay`]: the piece in the
/// hand may come down (and the board then be explained by fewer plies), or the
/// piece may be off the board for good (and the longer sequence be the truth);
/// the caller waits to see which.
pub fn infer_path(
    pos: &Chess,
    board: &Board,
    max_plies: usize,
    budget: u32,
    seen: Seen<'_>,
    under_way: bool,
) -> Inferred {
    if under_way && in_the_air(pos, board) {
        return Inferred::UnderWay(0);
    }
    if !reachable_material(pos.board(), board, under_way) {
        return Inferred::None;
    }
    let mut search = Search::new(board, pos, seen.placed, budget, max_plies);
    search.under_way = under_way;
    let pick = |paths: &mut Vec<Vec<Move>>| {
        let best = paths
            .iter()
            .enumerate()
            .max_by_key(|(i, p)| (follows(p, seen.lifts), usize::MAX - i))
            .map_or(0, |(i, _)| i);
        Inferred::Path(paths.swap_remove(best))
    };
    let first = plies_needed(pos, board).max(1);
    for limit in first..=max_plies {
        let complete = search.run(pos, limit);
        // Every path of at most `limit` plies has been looked at: the exact ones
        // found are `limit` long, the ones to a move under way at most that. The
        // move under way counts as a ply (it is being played): it explains the
        // board better only with fewer plies in all.
        let under_way_plies = search.air_len.saturating_add(1);
        if !search.found.is_empty() {
            if under_way_plies < limit {
                return Inferred::UnderWay(search.air_len);
            }
            return pick(&mut search.found);
        }
        if under_way_plies <= limit {
            return Inferred::UnderWay(search.air_len);
        }
        if !complete {
            return Inferred::GaveUp;
        }
    }
    Inferred::None
}

/// A sequence of the other parity than `len` plies, of at most `max_plies`,
/// from `pos` that also ends on `board` (the other side to move after it): the
/// board alone leaves the turn open. `None` when there is none, or the search
/// stopped at its budget before it found one.
pub fn other_parity(
    pos: &Chess,
    board: &Board,
    len: usize,
    max_plies: usize,
    budget: u32,
    seen: Seen<'_>,
) -> Option<Vec<Move>> {
    let mut search = Search::new(board, pos, seen.placed, budget, max_plies);
    search.parity = Some((len + 1) % 2);
    let mut limit = len + 1;
    while limit <= max_plies {
        let complete = search.run(pos, limit);
        if let Some(path) = search.found.pop() {
            return Some(path);
        }
        if !complete {
            return None;
        }
        limit += 2;
    }
    None
}

/// The fewest plies, at most `max_plies`, from `pos` to a position that
/// `board` is a move under way from (one or two pieces in the hand that one
/// legal move lifts): a board that plies reach exactly may also be that, a
/// piece in the hand rather than captured. `None` when there is none, or the
/// search stopped at its budget first.
pub fn under_way_path(
    pos: &Chess,
    board: &Board,
    max_plies: usize,
    budget: u32,
    seen: Seen<'_>,
) -> Option<Vec<Move>> {
    if in_the_air(pos, board) {
        return Some(Vec::new());
    }
    if max_plies == 0 || !reachable_material(pos.board(), board, true) {
        return None;
    }
    let mut search = Search::new(board, pos, seen.placed, budget, max_plies);
    search.under_way = true;
    for limit in 1..=max_plies {
        let complete = search.run(pos, limit);
        if search.air_len <= limit {
            return Some(std::mem::take(&mut search.air_path));
        }
        if !complete {
            return None;
        }
    }
    None
}

/// How many orders of the fewest plies are compared at most.
const MAX_ORDERS: usize = 24;

struct Search<'a> {
    target: &'a Board,
    root: &'a Board,
    placed: &'a [(Square, Piece)],
    left: u32,
    path: Vec<Move>,
    found: Vec<Vec<Move>>,
    /// Whether positions the board is a move under way from are looked for, and
    /// the fewest plies found to one.
    under_way: bool,
    air_len: usize,
    /// The first path found to such a position.
    air_path: Vec<Move>,
    /// Only paths of this length modulo 2 are kept (see [`other_parity`]).
    parity: Option<usize>,
}

impl<'a> Search<'a> {
    /// A search from `pos` for `target`, of at most `left` positions and
    /// `max_plies` plies: no move under way looked for, either parity kept.
    fn new(
        target: &'a Board,
        pos: &'a Chess,
        placed: &'a [(Square, Piece)],
        left: u32,
        max_plies: usize,
    ) -> Search<'a> {
        Search {
            target,
            root: pos.board(),
            placed,
            left,
            path: Vec::with_capacity(max_plies),
            found: Vec::new(),
            under_way: false,
            air_len: usize::MAX,
            air_path: Vec::new(),
            parity: None,
        }
    }

    /// Depth-first to `limit` plies, collecting the paths found; false when the
    /// budget ran out before the search was complete.
    fn run(&mut self, pos: &Chess, limit: usize) -> bool {
        if self.left == 0 {
            return false;
        }
        self.left -= 1;
        if !self.path.is_empty() && pos.board() == self.target {
            if !self.unseen_trip() && self.parity.is_none_or(|p| self.path.len() % 2 == p) {
                self.found.push(self.path.clone());
            }
            return true;
        }
        let depth = self.path.len();
        if self.under_way
            && depth > 0
            && depth < self.air_len
            && in_the_air(pos, self.target)
            && !self.unseen_trip()
        {
            self.air_len = depth;
            self.air_path.clone_from(&self.path);
        }
        if self.path.len() + plies_needed(pos, self.target) > limit || self.path.len() == limit {
            return true;
        }
        // Only pieces on squares that still differ from the board move: a piece
        // that leaves a square holding what the board shows there would have to be
        // replaced by one just like it, or come back, which is inferred only for a
        // piece like one the line showed put down where the board no longer has it.
        let now = pos.board();
        let put = self
            .placed
            .iter()
            .filter(|(sq, p)| self.target.piece_at(*sq) != Some(*p))
            .fold(Bitboard::EMPTY, |b, (_, p)| b | now.by_piece(*p));
        let differ = now.occupied() & (!same_squares(now, self.target) | put);
        for m in pos.legal_moves() {
            if !differ.contains(from_square(&m)) {
                continue;
            }
            let mut after = pos.clone();
            after.play_unchecked(m);
            self.path.push(m);
            let complete = self.run(&after, limit);
            self.path.pop();
            if !complete {
                return false;
            }
            if self.found.len() >= MAX_ORDERS {
                return true;
            }
        }
        true
    }

    /// A piece of the path ends on its first square, and the line did not show
    /// such a piece put down on every other square of its trip.
    fn unseen_trip(&self) -> bool {
        trips(self.root, &self.path).any(|(home, visited)| {
            let piece = self.root.piece_at(home);
            !visited
                .without(home)
                .into_iter()
                .all(|sq| self.placed.iter().any(|&(s, p)| s == sq && Some(p) == piece))
        })
    }
}

/// `board` is `pos` with one or two pieces in the air that one legal move lifts
/// (its piece, and the piece it captures or the rook it castles with), and
/// nothing else changed.
fn in_the_air(pos: &Chess, board: &Board) -> bool {
    let now = pos.board();
    if !(board.occupied() & !now.occupied()).is_empty() {
        return false;
    }
    let missing = now.occupied() & !board.occupied();
    if missing.is_empty() || missing.count() > 2 {
        return false;
    }
    let same = shakmaty::Color::ALL.into_iter().all(|c| {
        Role::ALL
            .into_iter()
            .all(|r| (board.by_piece(r.of(c)) & !now.by_piece(r.of(c))).is_empty())
    });
    same && pos
        .legal_moves()
        .iter()
        .any(|m| (missing & !matching::lifted_by(m)).is_empty())
}

/// The square a move's piece leaves (the king's, for castling).
fn from_square(m: &Move) -> Square {
    match *m {
        Move::Castle { king, .. } => king,
        _ => m.from().unwrap_or(m.to()),
    }
}

/// How many of the path's moves start where the lifts say, in the same order (the
/// longest common subsequence of the moves' squares and the lifts).
fn follows(path: &[Move], lifts: &[Square]) -> usize {
    let mut row = vec![0usize; lifts.len() + 1];
    for m in path {
        let from = from_square(m);
        let mut diag = 0;
        for (j, sq) in lifts.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if *sq == from { diag + 1 } else { up.max(row[j]) };
            diag = up;
        }
    }
    row[lifts.len()]
}

/// The squares where both boards have the same piece or are both empty.
fn same_squares(a: &Board, b: &Board) -> Bitboard {
    let mut same = !(a.occupied() ^ b.occupied());
    for sq in a.occupied() & b.occupied() {
        if a.piece_at(sq) != b.piece_at(sq) {
            same.discard(sq);
        }
    }
    same
}

/// Each side's pieces in `to` can come from `from` by moves: no more pieces, no
/// more pawns, and the extra officers fit the pawns that are gone (promotions).
/// With `in_hand`, a king may be missing (in the hand, a move under way).
fn reachable_material(from: &Board, to: &Board, in_hand: bool) -> bool {
    use shakmaty::Color;
    Color::ALL.into_iter().all(|c| {
        let (a, b) = (from.by_color(c), to.by_color(c));
        let kings = (to.kings() & b).count();
        if b.count() > a.count() || kings > 1 || (kings == 0 && !in_hand) {
            return false;
        }
        let pawns = |bd: &Board, side| (bd.pawns() & side).count();
        let (pa, pb) = (pawns(from, a), pawns(to, b));
        if pb > pa {
            return false;
        }
        let extra: usize = [Role::Knight, Role::Bishop, Role::Rook, Role::Queen]
            .into_iter()
            .map(|r| {
                (to.by_role(r) & b)
                    .count()
                    .saturating_sub((from.by_role(r) & a).count())
            })
            .sum();
        extra <= pa - pb
    })
}

/// A lower bound on the plies from `pos` to `board`: each side must put a piece on
/// every square where `board` has one of its pieces that `pos` lacks, one square a
/// move (two for a castling still allowed), and the sides alternate.
fn plies_needed(pos: &Chess, board: &Board) -> usize {
    let now = pos.board();
    let moves = |c: shakmaty::Color| {
        let need = board
            .by_color(c)
            .into_iter()
            .filter(|sq| now.piece_at(*sq) != board.piece_at(*sq))
            .count();
        if pos.castles().has_color(c) {
            need.saturating_sub(1)
        } else {
            need
        }
    };
    let us = pos.turn();
    let (m_us, m_them) = (moves(us), moves(!us));
    (2 * m_us).saturating_sub(1).max(2 * m_them)
}

/// Whether a piece that moved in `path` from `root` stands on its first square at
/// the end (a trip no board seen before and after can show). Pieces are followed
/// square by square.
pub fn round_trip(root: &Board, path: &[Move]) -> bool {
    trips(root, path).next().is_some()
}

/// The pieces that moved in `path` from `root` and stand on their first square at
/// the end: (that square, the squares the piece stood on after it left, its first
/// one included).
fn trips(root: &Board, path: &[Move]) -> impl Iterator<Item = (Square, Bitboard)> {
    // who[sq]: the root square of the piece standing on sq now (NONE: empty).
    const NONE: u8 = 64;
    let mut who = [NONE; 64];
    for sq in root.occupied() {
        who[sq as usize] = sq as u8;
    }
    let mut visited = [Bitboard::EMPTY; 64];
    let mut moved = 0u64;
    for m in path {
        // (from, to) steps of the pieces that move, and a square emptied by capture.
        let (steps, emptied): ([Option<(Square, Square)>; 2], Option<Square>) = match *m {
            Move::Castle { king, rook } => {
                let side = shakmaty::CastlingSide::from_queen_side(rook < king);
                let kt = Square::from_coords(side.king_to_file(), king.rank());
                let rt = Square::from_coords(side.rook_to_file(), king.rank());
                ([Some((king, kt)), Some((rook, rt))], None)
            }
            Move::EnPassant { from, to } => (
                [Some((from, to)), None],
                Some(Square::from_coords(to.file(), from.rank())),
            ),
            Move::Normal { from, to, .. } => ([Some((from, to)), None], None),
            Move::Put { .. } => ([None, None], None),
        };
        if let Some(sq) = emptied {
            who[sq as usize] = NONE;
        }
        // Lift every moving piece first (castling squares may overlap in Chess960).
        let ids: Vec<(u8, Square)> = steps
            .iter()
            .flatten()
            .map(|(from, to)| {
                let id = who[*from as usize];
                who[*from as usize] = NONE;
                (id, *to)
            })
            .collect();
        for (id, to) in ids {
            who[to as usize] = id;
            if id != NONE {
                moved |= 1 << id;
                visited[usize::from(id)].add(to);
            }
        }
    }
    Square::ALL.into_iter().filter_map(move |sq| {
        let id = who[sq as usize];
        (id != NONE && moved & (1 << id) != 0 && usize::from(id) == sq as usize)
            .then(|| (sq, visited[sq as usize]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::fen::Fen;

    fn pos(fen: &str) -> Chess {
        fen.parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap()
    }

    #[test]
    fn six_plies_with_captures_are_found() {
        let from = pos("r1b1kr2/5p1p/1qpp1p2/1p2pP1Q/p2bP3/P1NP4/BPP3PP/R3KR2 w Qq - 2 15");
        let to =
            Board::from_ascii_board_fen(b"r1b1kr2/5p1p/2pp1p2/2q1pP1Q/p2bP3/P2P4/B1P3PP/2RNKR2").unwrap();
        for under_way in [false, true] {
            let r = infer_path(
                &from,
                &to,
                MAX_INFERRED_PLIES,
                INFER_BUDGET,
                Seen::default(),
                under_way,
            );
            assert!(matches!(r, Inferred::Path(ref p) if p.len() == 6), "{r:?}");
        }
    }

    fn play(pos: &mut Chess, sans: &str) -> Vec<Move> {
        sans.split_whitespace()
            .map(|s| {
                let m = s.parse::<shakmaty::san::San>().unwrap().to_move(pos).unwrap();
                pos.play_unchecked(m);
                m
            })
            .collect()
    }

    /// Fault campaign, cuts, seed 1049: the line came back on 27... Ndxc4 made and
    /// White's pawn b3 in the hand to take back on c4. Five plies end on that board
    /// exactly, a bishop's trip and a pawn's capture invented; one ply and a move
    /// under way is what happened, and the search says so instead of a path.
    #[test]
    fn a_piece_in_the_hand_is_not_explained_by_plies_more() {
        let mut from = Chess::default();
        play(
            &mut from,
            "d4 d5 c4 dxc4 e4 e5 d5 f5 Nc3 Nf6 Bxc4 Bc5 Nf3 Qe7 Bg5 Bxf2+ Kf1 Bb6 Qe2 f4 \
             Rd1 Bg4 d6 cxd6 Nd5 Nxd5 Bxe7 Ne3+ Ke1 Kxe7 Qd3 Rd8 Rd2 Nc6 b3 Ba5 a3 Rac8 \
             Rg1 b5 Bxb5 Bxf3 gxf3 Nd4 Bc4 Nxf3+ Kf2 Nxd2 Rxg7+ Kf6 Rf7+ Kg6 Rb7",
        );
        let mut after = from.clone();
        let made = play(&mut after, "Ndxc4");
        let mut board = after.board().clone();
        board.discard_piece_at(Square::B3);
        // The longer explanation exists: it ends on the board exactly.
        let mut longer = from.clone();
        play(&mut longer, "Nxb3 Bb5 Nd2 Bc4 Ndxc4");
        assert_eq!(longer.board(), &board);
        let r = infer_path(
            &from,
            &board,
            MAX_INFERRED_PLIES,
            INFER_BUDGET,
            Seen::default(),
            true,
        );
        assert_eq!(r, Inferred::UnderWay(1));
        // Not looking for a move under way (the board stood too long for a piece in
        // the hand), the exact sequence is found.
        let r = infer_path(
            &from,
            &board,
            MAX_INFERRED_PLIES,
            INFER_BUDGET,
            Seen::default(),
            false,
        );
        assert!(matches!(r, Inferred::Path(ref p) if p.len() == 5), "{r:?}");
        // With the pawn on c4 the board is reached exactly in two plies.
        let mut done = after.clone();
        let both = [made, play(&mut done, "bxc4")].concat();
        let r = infer_path(
            &from,
            done.board(),
            MAX_INFERRED_PLIES,
            INFER_BUDGET,
            Seen::default(),
            true,
        );
        assert_eq!(r, Inferred::Path(both));
        // A move under way from the position itself.
        let mut lifted = from.board().clone();
        lifted.discard_piece_at(Square::D2);
        let r = infer_path(
            &from,
            &lifted,
            MAX_INFERRED_PLIES,
            INFER_BUDGET,
            Seen::default(),
            true,
        );
        assert_eq!(r, Inferred::UnderWay(0));
    }

    /// Fault campaign, drop 1%, seed 1156: a bishop's trip out and back (...Be7,
    /// then ...Bf8) whose lift the line lost, and no dump got through until it
    /// was back. Without the trip the board cannot be reached (the side to move
    /// differs); with the line having shown the bishop put down on e7 it is
    /// inferred, and not on less evidence.
    #[test]
    fn a_trip_back_is_inferred_only_where_the_line_showed_it() {
        let mut from = Chess::default();
        play(&mut from, "e4 e5 Nf3 Nc6 Bc4 d6 d3");
        let mut after = from.clone();
        let made = play(&mut after, "Be7 Bg5 Bf8");
        let bishop = |c| Piece {
            color: c,
            role: Role::Bishop,
        };
        let (b, w) = (bishop(shakmaty::Color::Black), bishop(shakmaty::Color::White));
        let infer = |placed: &[(Square, Piece)]| {
            let seen = Seen {
                lifts: &[Square::E7],
                placed,
            };
            infer_path(
                &from,
                after.board(),
                MAX_INFERRED_PLIES,
                INFER_BUDGET,
                seen,
                false,
            )
        };
        let all = [(Square::E7, b), (Square::G5, w), (Square::F8, b)];
        assert_eq!(infer(&all), Inferred::Path(made.clone()));
        // Its return home is no change on a sensor board that never saw it leave.
        assert_eq!(infer(&all[..2]), Inferred::Path(made.clone()));
        // Nothing seen put down away from home, or another piece put down there:
        // no trip is inferred, and nothing else reaches the board.
        assert_eq!(infer(&[]), Inferred::None);
        assert_eq!(infer(&all[1..]), Inferred::None);
        assert_eq!(
            infer(&[(Square::E7, w), (Square::G5, w), (Square::F8, b)]),
            Inferred::None
        );
        // And the check the fault campaign uses still calls it a round trip.
        assert!(round_trip(from.board(), &made));
    }

    /// Fault campaign, cuts, seed 1019: 4... b5 5. Bxb5 Nf6 missed. Two plies
    /// (...Nf6, Bb5) and Black's pawn b7 in the hand look like it too, but with the
    /// move under way that is three plies as well: the board as it stands wins.
    #[test]
    fn a_pawn_captured_is_not_taken_for_one_in_the_hand() {
        let mut from = Chess::default();
        play(&mut from, "e4 e5 f4 exf4 Bc4 Qh4+ Kf1");
        let mut after = from.clone();
        let made = play(&mut after, "b5 Bxb5 Nf6");
        for under_way in [true, false] {
            let r = infer_path(
                &from,
                after.board(),
                MAX_INFERRED_PLIES,
                INFER_BUDGET,
                Seen::default(),
                under_way,
            );
            assert_eq!(r, Inferred::Path(made.clone()));
        }
    }
}
