//! Plies a gap in the line may have hidden: the sequences of legal moves from
//! the record's position that end on the board seen again (`infer_path`), and
//! the trips back to a first square no board can show (`round_trip`).

use crate::rules::matching;
use shakmaty::{Bitboard, Board, Chess, Move, Piece, Position, Role, Square};

/// The most plies a gap in the line is bridged by (`docs/RULES.md`, "What it never does").
pub const MAX_INFERRED_PLIES: usize = 6;

/// How many positions one inference may visit before it gives up (a board no
/// sequence reaches costs this much; one that a sequence reaches, far less).
pub const INFER_BUDGET: u32 = 250_000;

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
    /// Boards the line showed whole since it was last in step (a dump's):
    /// what the line showed after one of them was seen, so a path through one
    /// is the better account of the board than another order of as many
    /// plies that never stands on it.
    pub boards: &'a [Board],
}

/// Sequences of 1 to `max_plies` legal moves from `pos` that end on `board`, for a
/// board seen again after the line could have missed changes. Never a sequence
/// in which a piece that moved ends on the square it started from (that is an
/// irregularity seen, not a round trip to invent), unless it captured on the way
/// (the board shows the piece it took gone), or the line showed such a
/// piece put down on every square of its trip away from its own (`seen.placed`):
/// then the trip is what the board showed, bytes of it lost. (Its return home
/// need not have been seen: a placement on a square the sensor board, behind
/// after a loss, already shows that piece on is no change and reaches no one.)
///
/// Iterative deepening with a lower bound on the plies still needed; only pieces
/// on squares that differ from the board are moved, and pieces like one seen put
/// down where the board no longer shows it; besides, captures by pieces on squares
/// the board agrees on (a trip the capture shows is no unseen trip) and one piece
/// a piece like it may replace (see `Search::run`). `budget` bounds the positions
/// visited.
///
/// When several orders of the fewest plies reach the board, the one that
/// stands on a board the line showed whole (`seen.boards`) is chosen, then the
/// one whose moves best follow `seen.lifts` (squares pieces were seen lifted
/// from meanwhile, in order); among equals, the first found.
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
    search.seen_boards = seen.boards;
    search.start = Some(pos);
    let pick = |paths: &mut Vec<Vec<Move>>| {
        let best = paths
            .iter()
            .enumerate()
            .max_by_key(|(i, p)| {
                (
                    stands_on(pos, p, seen.boards),
                    follows(p, seen.lifts),
                    usize::MAX - i,
                )
            })
            .map_or(0, |(i, _)| i);
        Inferred::Path(paths.swap_remove(best))
    };
    let first = plies_needed(pos, board, in_hand_slack(under_way), 0).max(1);
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

/// The orders of exactly `len` plies from `pos` that end on `board` (at most
/// 24 of them, as [`infer_path`] compares): the board alone cannot tell them
/// apart, what the game did next may (an en passant capture shows which pawn
/// stepped last). Empty when the search stopped at its budget.
pub fn orders(pos: &Chess, board: &Board, len: usize, budget: u32, seen: Seen<'_>) -> Vec<Vec<Move>> {
    let mut search = Search::new(board, pos, seen.placed, budget, len);
    if !search.run(pos, len) {
        return Vec::new();
    }
    search.found.retain(|p| p.len() == len);
    search.found
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
    under_way_search(pos, board, max_plies, budget, seen, false).map(|s| s.air_path)
}

/// The search for the fewest plies to a position `board` is a move under way
/// from (any, or with a piece set down: `set_down`), deepened a ply at a time
/// up to `max_plies`; `None` when there is none, or the budget ran out first.
fn under_way_search<'a>(
    pos: &'a Chess,
    board: &'a Board,
    max_plies: usize,
    budget: u32,
    seen: Seen<'a>,
    set_down: bool,
) -> Option<Search<'a>> {
    if max_plies == 0 || !reachable_material(pos.board(), board, true) {
        return None;
    }
    let mut search = Search::new(board, pos, seen.placed, budget, max_plies);
    search.under_way = !set_down;
    search.set_down = set_down;
    for limit in 1..=max_plies {
        let complete = search.run(pos, limit);
        if search.air_len <= limit {
            return Some(search);
        }
        if !complete {
            return None;
        }
    }
    None
}

/// The fewest plies, at most `max_plies`, from `pos` to a position that
/// `board` is a move under way from with a piece already set down and the
/// move not finished (a castling's king or rook put down first, the other
/// still home; an en passant pawn put down, the pawn it takes still there; a
/// pawn on its last rank not yet replaced): a dump a second apart catches such
/// a move halfway, and plies that end on that board exactly (a king walked to
/// the castling square) are then a guess. `None` when there is none, or the
/// search stopped at its budget first.
pub fn set_down_path(
    pos: &Chess,
    board: &Board,
    max_plies: usize,
    budget: u32,
    seen: Seen<'_>,
) -> Option<usize> {
    if set_down(pos, board) {
        return Some(0);
    }
    under_way_search(pos, board, max_plies, budget, seen, true).map(|s| s.air_len)
}

/// `board` is a legal move from `pos` under way with a piece of it set down,
/// and not any legal move's result (see [`set_down_path`]).
fn set_down(pos: &Chess, board: &Board) -> bool {
    let diff = matching::diff_board(pos.board(), board);
    if diff.count() > 4 || (diff & board.occupied()).is_empty() || !matching::is_partial(pos, board) {
        return false;
    }
    !pos.legal_moves().iter().any(|m| {
        let mut after = pos.clone();
        after.play_unchecked(*m);
        after.board() == board
    })
}

/// The fewest plies, at most `max_plies`, from `pos` to a position that
/// `board` is an illegal placement from: one piece of the side to move set on
/// an empty square no legal move of it reaches, nothing else changed (a slip
/// of the hand, held). A dump that shows that is those plies and an
/// irregularity, not more plies: a longer path would invent moves to make the
/// placement legal. `None` when there is none, or the search stopped at its
/// budget first.
pub fn displaced_path(
    pos: &Chess,
    board: &Board,
    max_plies: usize,
    budget: u32,
    seen: Seen<'_>,
) -> Option<Vec<Move>> {
    if illegal_placement(pos, board).is_some() {
        return Some(Vec::new());
    }
    if max_plies == 0 || !reachable_material(pos.board(), board, false) {
        return None;
    }
    let mut search = Search::new(board, pos, seen.placed, budget, max_plies);
    search.displaced = true;
    search.deepened(pos, max_plies)
}

/// The fewest plies, at most `max_plies` (at least one), from `pos` to a
/// position that `board` is with one piece off it and nothing else changed:
/// any piece, of either side, lifted by no move (knocked over, or put aside,
/// and lying off the board). A board that a longer path reaches exactly may
/// also be that: a capture and the capturer's way home, which the line did
/// not show either (the event campaign's seed 772). `None` when there is
/// none, or the search stopped at its budget first.
pub fn lying_path(
    pos: &Chess,
    board: &Board,
    max_plies: usize,
    budget: u32,
    seen: Seen<'_>,
) -> Option<Vec<Move>> {
    // One piece off: fewer on the board than in the position, whatever the
    // plies captured.
    if max_plies == 0
        || board.occupied().count() >= pos.board().occupied().count()
        || !reachable_material(pos.board(), board, true)
    {
        return None;
    }
    let mut search = Search::new(board, pos, seen.placed, budget, max_plies);
    search.lying = true;
    search.seen_boards = seen.boards;
    search.start = Some(pos);
    search.deepened(pos, max_plies)
}

/// `board` is `now` with exactly one piece taken off it, nothing else changed.
fn one_off(now: &Board, board: &Board) -> bool {
    matching::only_lifted(now, board) && now.occupied().count() == board.occupied().count() + 1
}

/// `board` is `pos` with one piece of the side to move taken from its square
/// and set on an empty one where no legal move puts it (nor a castling's king,
/// nor a promotion's pawn not yet replaced, nor an en passant capture's pawn
/// whose victim is still there), nothing else changed: (from, to).
pub fn illegal_placement(pos: &Chess, board: &Board) -> Option<(Square, Square)> {
    let now = pos.board();
    let diff = matching::diff_board(now, board);
    if diff.count() != 2 {
        return None;
    }
    let from = (diff & now.occupied() & !board.occupied()).first()?;
    let to = (diff & board.occupied() & !now.occupied()).first()?;
    let piece = now.piece_at(from)?;
    if piece.color != pos.turn() || board.piece_at(to) != Some(piece) {
        return None;
    }
    let reached = pos
        .legal_moves()
        .iter()
        .any(|m| from_square(m) == from && lands(m) == to);
    (!reached).then_some((from, to))
}

/// The square a move puts its piece on (the king's, for castling).
fn lands(m: &Move) -> Square {
    match *m {
        Move::Castle { king, rook } => {
            let side = shakmaty::CastlingSide::from_queen_side(rook < king);
            Square::from_coords(side.king_to_file(), king.rank())
        }
        _ => m.to(),
    }
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
    /// Positions the board is a move under way from with a piece set down are
    /// looked for (see [`set_down_path`]), and the fewest plies to one kept
    /// as `air_len`.
    set_down: bool,
    /// Positions the board is an illegal placement from are looked for (see
    /// [`displaced_path`]), and the fewest plies to one kept as `air_len`.
    displaced: bool,
    /// Positions the board is with one piece off are looked for (see
    /// [`lying_path`]), and the fewest plies to one kept as `air_len`.
    lying: bool,
    /// The moves of the path from squares the board agrees on (see
    /// [`Search::run`]): captures (`CAPTURED`), or one piece a piece like it
    /// replaces (`REPLACED`).
    relaxed: u8,
    /// The squares those captures were made from: each such piece must end
    /// the path back there (a trip the capture shows), but for the only one
    /// (a piece like it then stands there: a rook that takes on d1 and is
    /// taken, the other rook brought to its square). Two, one of them away,
    /// explained a bishop held in the hand as a knight sent from e3 to die
    /// on g4, the other brought to e3, and a bishop out to g4 and back
    /// (fault campaign, cuts, seed 11).
    capturers: Vec<Square>,
    /// Boards the line showed whole since it was last in step, and the
    /// position the search starts from (see [`infer_path`]): a path kept
    /// stands on one of them (or on one of them with pieces in the air).
    seen_boards: &'a [Board],
    start: Option<&'a Chess>,
}

/// A piece moved from a square the board agrees on to capture (see [`Search::run`]).
const CAPTURED: u8 = 1;
/// A piece moved from a square the board agrees on, a piece like it to take its place.
const REPLACED: u8 = 2;

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
            set_down: false,
            displaced: false,
            lying: false,
            relaxed: 0,
            capturers: Vec::new(),
            seen_boards: &[],
            start: None,
        }
    }

    /// Whether the path stands on every board the line showed whole since it
    /// was last in step, in the order shown, or on one such a board is a move
    /// under way from (a dump taken while a piece was in the hand, or with a
    /// castling's king set down first), before its first ply or after one.
    /// Each was on the board: a path that never stands on one is plies that
    /// did not happen (seed 563: a dump caught
    /// 14. Be3 with Black's a-pawn still home, the cycle 13... Bf6 14... Bg7
    /// no board showed made up the turn, and a path that never passed the
    /// dump, 13... a5 first and the bishop's longer way for the tempo,
    /// stood on the later board alone). And the line was in step since the
    /// first, so every ply after it was shown. True when there are no such
    /// boards.
    fn stands_on_seen(&self) -> bool {
        let Some(start) = self.start.filter(|_| !self.seen_boards.is_empty()) else {
            return true;
        };
        let mut next = 0;
        // A board seen with a move under way from the position: pieces in
        // the air, or one set down first (a castling's king: seed 523).
        let mut pass = |p: &Chess| {
            while next < self.seen_boards.len()
                && (matching::only_lifted(p.board(), &self.seen_boards[next])
                    || set_down(p, &self.seen_boards[next]))
            {
                next += 1;
            }
        };
        let mut at = start.clone();
        pass(&at);
        for m in &self.path {
            at.play_unchecked(*m);
            pass(&at);
        }
        next == self.seen_boards.len()
    }

    /// Deepened from `pos` a ply at a time up to `max_plies`: the fewest
    /// plies to a position it looks for besides exact paths (`air_path`);
    /// `None` when there is none, or the budget ran out first.
    fn deepened(mut self, pos: &Chess, max_plies: usize) -> Option<Vec<Move>> {
        for limit in 1..=max_plies {
            let complete = self.run(pos, limit);
            if self.air_len <= limit {
                return Some(self.air_path);
            }
            if !complete {
                return None;
            }
        }
        None
    }

    /// Depth-first to `limit` plies, collecting the paths found; false when the
    /// budget ran out before the search was complete.
    fn run(&mut self, pos: &Chess, limit: usize) -> bool {
        if self.left == 0 {
            return false;
        }
        self.left -= 1;
        if !self.path.is_empty() && pos.board() == self.target {
            if !self.displaced
                && !self.unseen_trip()
                && self.capturers_home()
                && self.parity.is_none_or(|p| self.path.len() % 2 == p)
                && self.stands_on_seen()
            {
                self.found.push(self.path.clone());
            }
            return true;
        }
        let depth = self.path.len();
        if (self.under_way || self.set_down || self.displaced || self.lying)
            && depth > 0
            && depth < self.air_len
            && (if self.displaced {
                illegal_placement(pos, self.target).is_some()
            } else if self.lying {
                one_off(pos.board(), self.target) && self.stands_on_seen()
            } else if self.set_down {
                set_down(pos, self.target)
            } else {
                in_the_air(pos, self.target)
            })
            && !self.unseen_trip()
        {
            self.air_len = depth;
            self.air_path.clone_from(&self.path);
        }
        // One piece off the board may be missing besides the plies' captures.
        let slack = if self.lying {
            1
        } else {
            in_hand_slack(self.under_way || self.set_down)
        };
        // A piece set on a square by no move needs no move to get there.
        let placed = usize::from(self.displaced);
        if self.path.len() + plies_needed(pos, self.target, slack, placed) > limit || self.path.len() == limit
        {
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
        let unlike = !same_squares(now, self.target);
        let differ = now.occupied() & (unlike | put);
        // Besides, a piece standing where the board agrees moves to capture a
        // piece the board no longer shows there (it may come back: a trip the
        // capture shows, see `unseen_trip`), or, once a path and in a path
        // with no such capture, when a piece just like it may take its place.
        // Both in one path would explain a piece held in the hand by plies
        // that swap knights and send a bishop out and back to take one (fault
        // campaign, cuts, seed 11).
        let spare = if self.relaxed == 0 {
            replaceable(now, unlike)
        } else {
            Bitboard::EMPTY
        };
        for m in pos.legal_moves() {
            let from = from_square(&m);
            let relaxed = if differ.contains(from) {
                0
            } else if captured_square(&m).is_some_and(|sq| unlike.contains(sq))
                && self.relaxed & REPLACED == 0
            {
                CAPTURED
            } else if spare.contains(from) {
                REPLACED
            } else {
                continue;
            };
            let mut after = pos.clone();
            after.play_unchecked(m);
            self.path.push(m);
            let before = self.relaxed;
            self.relaxed |= relaxed;
            if relaxed == CAPTURED {
                self.capturers.push(from);
            }
            let complete = self.run(&after, limit);
            if relaxed == CAPTURED {
                self.capturers.pop();
            }
            self.relaxed = before;
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

    /// The pieces the path moved from a square the board agrees on to
    /// capture (see [`Search::capturers`]) stand on their first square again,
    /// but for one when it is the only one (taken, or gone on: a piece like it
    /// stands there now, as for a piece replaced).
    fn capturers_home(&self) -> bool {
        let away = self
            .capturers
            .iter()
            .filter(|sq| !trips(self.root, &self.path).any(|(home, _, _)| home == **sq))
            .count();
        away == 0 || self.capturers.len() == 1
    }

    /// A piece of the path ends on its first square, and the line did not show
    /// such a piece put down on every other square of its trip, nor did the
    /// piece capture on the way (the board shows the piece it took gone: the
    /// trip is no tempo invented but the capture's, the way back a guess no
    /// worse than an order of plies).
    fn unseen_trip(&self) -> bool {
        trips(self.root, &self.path).any(|(home, visited, captured)| {
            let piece = self.root.piece_at(home);
            !captured
                && !visited
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

/// Pieces standing where the board agrees that a piece just like them, standing
/// where it does not, may replace (a rook that leaves a1 for a3 and the other
/// rook that comes to a1; the pawn c6 pushed and c7's taking its place): on
/// the same file for a pawn, anywhere for an officer.
fn replaceable(now: &Board, unlike: Bitboard) -> Bitboard {
    let mut spare = Bitboard::EMPTY;
    for sq in now.occupied() & unlike {
        let Some(p) = now.piece_at(sq) else { continue };
        if p.role == Role::King {
            continue;
        }
        let like = now.by_piece(p) & !unlike;
        spare |= if p.role == Role::Pawn {
            like & Bitboard::from_file(sq.file())
        } else {
            like
        };
    }
    spare
}

/// The square of the piece a move captures (the pawn passed, en passant).
fn captured_square(m: &Move) -> Option<Square> {
    match *m {
        Move::EnPassant { from, to } => Some(Square::from_coords(to.file(), from.rank())),
        Move::Normal {
            to, capture: Some(_), ..
        } => Some(to),
        _ => None,
    }
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
/// Whether `path` from `pos` stands on one of `boards` after one of its plies
/// (or before the first).
fn stands_on(pos: &Chess, path: &[Move], boards: &[Board]) -> bool {
    if boards.is_empty() {
        return false;
    }
    let mut at = pos.clone();
    if boards.contains(at.board()) {
        return true;
    }
    path.iter().any(|m| {
        at.play_unchecked(*m);
        boards.contains(at.board())
    })
}

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

/// How many pieces a board may lack because they are in the hand: none when
/// only boards at rest are looked for, two (a capture's two pieces, or a
/// castling's) when a move under way is.
fn in_hand_slack(under_way: bool) -> usize {
    if under_way { 2 } else { 0 }
}

/// A lower bound on the plies from `pos` to `board`: each side must put a piece on
/// every square where `board` has one of its pieces that `pos` lacks, one square a
/// move (two for a castling still allowed; but `placed` of them, set there by
/// no move), and capture each of the other side's pieces gone, one a move
/// (`in_hand` of them may be in the hand instead); the sides alternate.
fn plies_needed(pos: &Chess, board: &Board, in_hand: usize, placed: usize) -> usize {
    let now = pos.board();
    let moves = |c: shakmaty::Color| {
        let need = board
            .by_color(c)
            .into_iter()
            .filter(|sq| now.piece_at(*sq) != board.piece_at(*sq))
            .count()
            .saturating_sub(placed);
        let need = if pos.castles().has_color(c) {
            need.saturating_sub(1)
        } else {
            need
        };
        // Each of the opponent's pieces gone from the board was captured by a
        // move of this side's (but for those that may be in the hand, when a
        // move under way is looked for).
        let captures = now
            .by_color(!c)
            .count()
            .saturating_sub(board.by_color(!c).count())
            .saturating_sub(in_hand);
        need.max(captures)
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
/// one included, whether it captured on the way).
fn trips(root: &Board, path: &[Move]) -> impl Iterator<Item = (Square, Bitboard, bool)> {
    // who[sq]: the root square of the piece standing on sq now (NONE: empty).
    const NONE: u8 = 64;
    let mut who = [NONE; 64];
    for sq in root.occupied() {
        who[sq as usize] = sq as u8;
    }
    let mut visited = [Bitboard::EMPTY; 64];
    let mut moved = 0u64;
    let mut captured = 0u64;
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
        if let Some(sq) = emptied.or(captured_square(m)) {
            who[sq as usize] = NONE;
            if let Some(id) = steps[0]
                .map(|(from, _)| who[from as usize])
                .filter(|id| *id != NONE)
            {
                captured |= 1 << id;
            }
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
            .then(|| (sq, visited[sq as usize], captured & (1 << id) != 0))
    })
}

#[cfg(test)]
#[path = "infer_tests.rs"]
mod tests;
