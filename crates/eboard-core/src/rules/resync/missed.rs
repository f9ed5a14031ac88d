//! The plies the line may have missed: searched for once the board rests
//! (`best_path`, `game::infer_path`), then recorded as inferred.

use super::{Cause, Found, Resync, SHORT_PLIES, Search, Slip, inferred_tail};
use crate::rules::record::Tentative;
use crate::rules::{Core, EventKind, Game, IrregularKind, Side, game, side_index};
use shakmaty::{Board, Chess, Color, Move, Position, Role, Square};

/// The most plies an `ambiguous` stretch is looked for in (from the start of
/// the inferred plies before the new ones).
const OPEN_PLIES: usize = 8;

/// Whether `anchor` (a dump) is a move under way after at most `plies` from
/// `from`, and `board`, where the game went on to since, says so: it shows a
/// piece that was in the hand then (more pieces of a kind than the dump had:
/// the capturer lifted first, set down; the board as a whole has no piece
/// more, the capture having taken one off), or it is that move completed, a
/// capture whose captured piece alone the dump lacked (taken off first).
/// The dump was taken with the move's piece in the hand, not at rest.
fn completed_from_under_way(
    from: &Chess,
    anchor: &Board,
    board: &Board,
    plies: usize,
    seen: game::Seen<'_>,
) -> bool {
    let appeared = Color::ALL.into_iter().any(|c| {
        shakmaty::Role::ALL
            .into_iter()
            .any(|r| board.by_piece(r.of(c)).count() > anchor.by_piece(r.of(c)).count())
    });
    if appeared {
        return game::under_way_path(from, anchor, plies, game::INFER_BUDGET, seen).is_some();
    }
    let game::Inferred::Path(path) =
        game::infer_path(from, board, plies + 1, game::INFER_BUDGET, seen, false)
    else {
        return false;
    };
    let Some((last, first)) = path.split_last() else {
        return false;
    };
    let mut before = from.clone();
    for mv in first {
        before.play_unchecked(*mv);
    }
    let missing = before.board().occupied() & !anchor.occupied();
    let captured = match last {
        Move::EnPassant { from, to } => Some(Square::from_coords(to.file(), from.rank())),
        m if m.is_capture() => Some(m.to()),
        _ => None,
    };
    crate::rules::matching::only_lifted(before.board(), anchor)
        && missing.count() == 1
        && captured.is_some_and(|sq| missing.contains(sq))
}

/// What a piece off the board (knocked over, or put aside: see
/// [`Found::Lying`]) counts for against plies that end on the board exactly:
/// one move, as a move under way or an illegal placement does (seed 772:
/// 5... Ngf6 and the bishop off, two, against 5... Bh3 6. Bxh3 Ngf6 7. Bg2,
/// four plies).
const LYING_COST: usize = 1;

/// How many positions the search for a path of the other parity may visit.
const OPEN_BUDGET: u32 = 20_000;

impl Core {
    /// Looks for the plies that reach the board from the record (the line may have
    /// missed them). Found: recorded, marked inferred, all but the last completed.
    /// Not found: the board stays unexplained and the irregular deadline reports it
    /// (`lost_track` after a gap).
    pub(in crate::rules) fn infer(&mut self, t: u64) {
        let Some(r) = &mut self.line.resync else { return };
        let (plies, next, under_way) = match r.search {
            Search::Short => (SHORT_PLIES, Search::Long, true),
            Search::Rested => (game::MAX_INFERRED_PLIES, Search::No, false),
            _ => (game::MAX_INFERRED_PLIES, Search::No, true),
        };
        r.search = next;
        // Only on a board a dump has confirmed (the confirming dump looks again).
        if self.line.confirm_dump {
            if let Some(r) = &mut self.line.resync {
                r.search = Search::No;
            }
            return;
        }
        let board = self.real_board();
        // The plies missed end on the board the dump after the gap showed, when the
        // board has moved on from it since: those are found first (up to 6 plies at
        // once, unless that dump had a piece in the air: the board after it has more
        // pieces), and what was seen after the dump is then judged as seen.
        // While the board still stands as that dump showed it, the dump is kept
        // for later: the board may move on before it rests long enough for the
        // longer search, and the plies missed still end on the dump.
        let ply = self.game.as_ref().map_or(0, Game::ply);
        let anchor = self.line.resync.as_mut().and_then(|r| r.anchor.take());
        // A dump found to be plies and a slip (see `Found::Displaced`) whose
        // piece has left the square it was set on: the piece is being put
        // right, and the board has not gone on from the dump.
        let slip_undone = |anchor: &Board| {
            self.line
                .resync
                .as_ref()
                .and_then(|r| r.slip.as_ref())
                .is_some_and(|s| &s.board == anchor && board.piece_at(s.to) != anchor.piece_at(s.to))
        };
        if let Some((anchor, at)) = anchor.filter(|(_, at)| *at == ply) {
            if anchor == board || slip_undone(&anchor) {
                if let Some(r) = &mut self.line.resync {
                    r.anchor = Some((anchor, at));
                }
            } else if board.occupied().count() <= anchor.occupied().count() {
                // The board went on from the dump with no piece more on it: no
                // piece was in the hand at the dump (one that came down since
                // would show), so the dump is a board at rest, and the plies
                // missed end on it exactly, even when a piece in the hand after
                // fewer plies would also explain it. What the line showed
                // before the dump is the evidence of those plies; what it showed
                // after belongs to the next ones, and is taken too only when the
                // first alone leads nowhere (a piece seen put down after the dump
                // lets the search move pieces the dump shows home).
                // The game went on from the dump: it was no piece held off its
                // square either (see `Found::Displaced`).
                if let Some((base, path)) = self.anchor_path(&anchor, &board) {
                    self.commit_found(base, path, t);
                    self.evaluate(t);
                    return;
                }
            }
        }
        let kept = self.line.resync.as_ref().is_some_and(|r| r.anchor.is_some());
        let found = match self.best_path(&board, plies, under_way) {
            // The dump still stands, and plies of the other parity end on it
            // too: the board the game goes on to says which (`turn_by_sequel`),
            // or, once it has stood for the irregularity threshold, the fewest.
            Found::Path(base, path)
                if kept && next == Search::Long && self.turn_open(base, &path, &board) =>
            {
                Found::Nothing
            }
            found => found,
        };
        match found {
            Found::Path(base, path) => self.commit_found(base, path, t),
            Found::UnderWay => {
                if let Some(r) = &mut self.line.resync {
                    r.search = Search::Rested;
                }
            }
            Found::Displaced(path) => self.note_slip(&board, path),
            Found::Lying(base, path) => self.commit_lying(base, path, t),
            Found::Nothing => {}
        }
    }

    /// The plies missed that end on the dump after a gap (`anchor`), the board
    /// having gone on from it to `board` with no piece more on it: (base ply,
    /// path). What the line showed before the dump is the evidence of those
    /// plies; what it showed after belongs to the next ones, and is taken too
    /// only when the first alone leads nowhere (a piece seen put down after
    /// the dump lets the search move pieces the dump shows home). The turn on
    /// the dump is the one `board` follows from (`turn_by_sequel`).
    fn anchor_path(&self, anchor: &Board, board: &Board) -> Option<(usize, Vec<Move>)> {
        let upto = self.line.resync.as_ref().map(|r| r.anchor_seen);
        let (base, path) = match self.best_path_upto(anchor, game::MAX_INFERRED_PLIES, false, upto, false) {
            Found::Path(base, path) => (base, path),
            _ => match self.best_path_upto(anchor, game::MAX_INFERRED_PLIES, false, None, false) {
                Found::Path(base, path) => (base, path),
                _ => return None,
            },
        };
        // The dump is a move under way with a piece set down (a castling's
        // king put down first, the rook still home) after fewer plies than
        // any that end on it: it was no board at rest, and the plies that
        // end on it (a king's walk to the castling square, seed 523) never
        // happened. The board the game went on to is searched for instead
        // (its plies stand on the dump as that move under way).
        // So is a dump with a piece in the hand after fewer plies when the
        // board has gone on by that move, completed (a capture under way,
        // its capturer lifted: the captured piece then taken off and the
        // capturer set down, no piece more on the board than the dump had):
        // the plies that end on the dump exactly explain the piece in the
        // hand as captured and its capturer's way home (seed 744: 3... dxe4
        // under way at the dump, 4. Nxd5 Qd8 5. Nc3 never played).
        let from = self.game.as_ref()?.positions.get(base)?;
        let seen = seen_in(&self.line.resync);
        if path.len() >= 2
            && (game::set_down_path(from, anchor, path.len() - 2, game::INFER_BUDGET, seen).is_some()
                || completed_from_under_way(from, anchor, board, path.len() - 2, seen))
        {
            return None;
        }
        let path = self.turn_by_sequel(base, path, anchor, board, upto);
        Some((base, path))
    }

    /// The board has gone on from the dump after a gap whose plies are not
    /// recorded yet (kept while plies of either parity ended on it, see
    /// [`Core::turn_open`], or more than the dump's own search looks for),
    /// with a piece set down (a move made, not only a piece lifted) and none
    /// more on it than the dump had: the plies that end on the dump are
    /// recorded first, their turn the one the board goes on from, so that
    /// the board is then judged from them, not from the record before them
    /// (as an earlier position, or a move from it). Recorded: true.
    pub(in crate::rules) fn settle_anchor(&mut self, board: &Board, t: u64) -> bool {
        if self.line.confirm_dump {
            return false;
        }
        let ply = self.game.as_ref().map_or(0, Game::ply);
        let Some(r) = self.line.resync.as_ref() else {
            return false;
        };
        let Some((anchor, at)) = r.anchor.clone() else {
            return false;
        };
        if at != ply
            || &anchor == board
            || r.slip.as_ref().is_some_and(|s| s.board == anchor)
            || board.occupied().count() > anchor.occupied().count()
            || crate::rules::matching::only_lifted(&anchor, board)
        {
            return false;
        }
        let Some((base, path)) = self.anchor_path(&anchor, board) else {
            return false;
        };
        if let Some(r) = &mut self.line.resync {
            r.anchor = None;
        }
        self.commit_found(base, path, t);
        self.evaluate(t);
        true
    }

    /// Whether the plies `path` from ply `base` to `board` (a dump after a
    /// gap) leave the turn open: no clock report since the gap says whose it
    /// is, and plies of the other parity from `base` also end on the board.
    pub(in crate::rules) fn turn_open(&self, base: usize, path: &[Move], board: &Board) -> bool {
        let Some(from) = self.game.as_ref().and_then(|g| g.positions.get(base)) else {
            return false;
        };
        let gap = self.line.resync.as_ref().is_some_and(|r| r.cause == Cause::Gap);
        gap && self.clock_turn().is_none()
            && game::other_parity(
                from,
                board,
                path.len(),
                game::MAX_INFERRED_PLIES,
                game::INFER_BUDGET,
                seen_in(&self.line.resync),
            )
            .is_some()
    }

    /// The plies from ply `base` that end on the dump after a gap (`anchor`),
    /// `path` the fewest: the board the game went on to since (`board`) says
    /// whose turn it was on the dump. The board alone leaves it open where
    /// plies of the other parity also end on it (a piece that moved twice
    /// where one move reaches, Bc4 and Bxb5 for Bxb5): when the board now
    /// cannot follow from the fewest plies (one or two plies on, or a move
    /// under way) and follows from the other parity's, those are the plies.
    fn turn_by_sequel(
        &self,
        base: usize,
        path: Vec<Move>,
        anchor: &Board,
        board: &Board,
        upto: Option<(usize, usize)>,
    ) -> Vec<Move> {
        let Some(game) = self.game.as_ref() else {
            return path;
        };
        let Some(from) = game.positions.get(base) else {
            return path;
        };
        // Pieces only lifted from the dump say nothing of whose turn it was:
        // a piece knocked over, or touched by either side, sets nothing down.
        if crate::rules::matching::only_lifted(anchor, board) {
            return path;
        }
        let mut seen = seen_in(&self.line.resync);
        if let Some((lifts, puts)) = upto {
            seen.lifts = &seen.lifts[..lifts.min(seen.lifts.len())];
            seen.placed = &seen.placed[..puts.min(seen.placed.len())];
        }
        let end_of = |plies: &[Move]| {
            let mut pos = from.clone();
            for mv in plies {
                pos.play_unchecked(*mv);
            }
            pos
        };
        let follows = |end: &Chess| {
            end.board() == board
                || matches!(
                    game::infer_path(end, board, SHORT_PLIES, OPEN_BUDGET, game::Seen::default(), true),
                    game::Inferred::Path(_) | game::Inferred::UnderWay(_)
                )
        };
        if follows(&end_of(&path)) {
            return path;
        }
        // The fewest (in any order), their last a slide the dump caught on a
        // square it crosses: its piece taken up from there again (the slide
        // going on), or gone on along its line to where the board now shows
        // it (an amendment of that ply, no ply more). The other parity would
        // invent a tempo (seed 1300: the rook of 16... Rd8 caught on e8 on
        // its way from h8 before Black pressed, read as 16. Qd2 Re8 17. Qd3
        // for 16. Qd3; class `slides_caught_at_dumps`).
        let slide_goes_on = |plies: &[Move]| {
            let Some((last, before)) = plies.split_last() else {
                return false;
            };
            let pos = end_of(before);
            let slider = matches!(last.role(), Role::Rook | Role::Bishop | Role::Queen);
            let taken_up = slider && {
                let mut up = end_of(plies).board().clone();
                up.discard_piece_at(last.to());
                up == *board
            };
            taken_up
                || last.from().is_some_and(|origin| {
                    pos.legal_moves().iter().any(|mv| {
                        mv.from() == Some(origin)
                            && mv.role() == last.role()
                            && shakmaty::attacks::between(origin, mv.to()).contains(last.to())
                            && {
                                let mut after = pos.clone();
                                after.play_unchecked(*mv);
                                after.board() == board
                            }
                    })
                })
        };
        // Another order of as many plies (the pawn that stepped last, which
        // an en passant capture after it shows), then the other parity.
        let orders = game::orders(from, anchor, path.len(), OPEN_BUDGET, seen);
        if let Some(order) = orders.iter().find(|o| follows(&end_of(o))) {
            return order.clone();
        }
        if slide_goes_on(&path) {
            return path;
        }
        if let Some(order) = orders.into_iter().find(|o| slide_goes_on(o)) {
            return order;
        }
        match game::other_parity(
            from,
            anchor,
            path.len(),
            game::MAX_INFERRED_PLIES,
            game::INFER_BUDGET,
            seen,
        ) {
            Some(other) if follows(&end_of(&other)) => other,
            _ => path,
        }
    }

    /// An illegal placement after `path` from the record as it stands (see
    /// [`Found::Displaced`]): nothing is recorded, and the search stops. The
    /// board stands unexplained, and is reported at the irregular threshold
    /// as the illegal move it shows (the piece and its squares, the placer's
    /// side). When the piece goes back, the plies are one legal move or a
    /// short path from the record, found then; when the game goes on from the
    /// board instead, it was no slip, and the plies that end on the dump are
    /// found then (`anchor`, kept).
    pub(in crate::rules) fn note_slip(&mut self, board: &Board, path: Vec<Move>) {
        let Some(game) = &self.game else { return };
        let mut pos = game.current().clone();
        for mv in &path {
            pos.play_unchecked(*mv);
        }
        let slip = game::illegal_placement(&pos, board).map(|(from, to)| Slip {
            board: board.clone(),
            side: pos.turn(),
            from,
            to,
        });
        if let Some(r) = &mut self.line.resync {
            r.slip = slip;
            r.search = Search::No;
        }
    }

    /// The path of at most `plies` to `board` (real squares) from the record, from
    /// before its last move when that is not completed, or from before the
    /// inferred moves it ends with (they were a guess at a board since gone on in
    /// a way they cannot lead to): (base ply, path).
    /// With `under_way`, [`Found::UnderWay`] when the board is a move under way
    /// after fewer plies in the whole record than any path reaches it exactly.
    pub(in crate::rules) fn best_path(&self, board: &Board, plies: usize, under_way: bool) -> Found {
        self.best_path_upto(board, plies, under_way, None, true)
    }

    /// [`Core::best_path`] with only the first (lifts, placements) the line
    /// showed as evidence (`upto`; all of them when `None`), and an illegal
    /// placement looked for only with `slips`.
    fn best_path_upto(
        &self,
        board: &Board,
        plies: usize,
        under_way: bool,
        upto: Option<(usize, usize)>,
        slips: bool,
    ) -> Found {
        let Some(game) = self.game.as_ref() else {
            return Found::Nothing;
        };
        if game.is_over() || self.lifted_from_seen(board) {
            return Found::Nothing;
        }
        let mut seen = seen_in(&self.line.resync);
        if let Some((lifts, puts)) = upto {
            seen.lifts = &seen.lifts[..lifts.min(seen.lifts.len())];
            seen.placed = &seen.placed[..puts.min(seen.placed.len())];
        }
        // From the record, and, when its last move is not completed, from before
        // it (that move may have gone on while the line was away: a slide cut in
        // the middle is an amendment, not a ply more).
        // A move seen being made before the line went away is a fact: plies may
        // be found after it, never instead of it.
        let n = game.ply();
        let mut bases = vec![n];
        let unheard = self
            .line
            .resync
            .as_ref()
            .is_some_and(|r| r.unheard_last == Some(n));
        if n > 0 && (!game.moves[n - 1].completed || unheard) && !self.fact(n - 1) {
            bases.push(n - 1);
        }
        // On a board read by dumps only, a board a dump showed whole was on the
        // board: the plies found to it are not looked at again, and a move it
        // showed is amended only as a slide cut short (its piece going on along
        // the same line), never replaced by another path to the board.
        let polled = self.line.resync.as_ref().is_some_and(|r| r.cause == Cause::Poll);
        let tail = inferred_tail(game);
        if tail < n && !bases.contains(&tail) && !polled {
            bases.push(tail);
        }
        // The side whose time runs on the clock is the side to move (before the
        // press held over the gap, if any, which may have started it).
        let turn = self.clock_turn();
        let mut best: Option<(usize, Vec<Move>)> = None;
        let mut best_key = None;
        let mut air = usize::MAX;
        let mut gave_up = Vec::new();
        for base in bases {
            let from = &game.positions[base];
            let found = if polled && base + 1 == n {
                slide_path(from, &game.moves[base].mv, board, plies, seen, under_way)
            } else {
                game::infer_path(from, board, plies, game::INFER_BUDGET, seen, under_way)
            };
            let path = match found {
                // On a board read by dumps only, a dump that is a move under
                // way with a piece set down (a castling's king put down first)
                // after fewer plies than any that end on it: as a piece in the
                // hand, the next dump says which.
                game::Inferred::Path(path) if polled && under_way && path.len() >= 2 => {
                    match game::set_down_path(from, board, path.len() - 2, game::INFER_BUDGET, seen) {
                        Some(k) => {
                            air = air.min(base + k);
                            continue;
                        }
                        None => path,
                    }
                }
                game::Inferred::Path(path) => path,
                game::Inferred::UnderWay(k) => {
                    air = air.min(base + k);
                    continue;
                }
                game::Inferred::GaveUp => {
                    gave_up.push(base);
                    continue;
                }
                game::Inferred::None => continue,
            };
            let ends = if path.len() % 2 == 0 {
                from.turn()
            } else {
                !from.turn()
            };
            // The clock agrees, then the fewer plies in the whole record (a move
            // not completed may be a slide cut short: its piece resting on a square
            // it crossed is no ply more), then the record as it stands.
            let key = (
                turn.is_none_or(|c| c == ends),
                usize::MAX - (base + path.len()),
                base == n,
            );
            if best_key.is_none_or(|k| key > k) {
                best_key = Some(key);
                best = Some((base, path));
            }
        }
        // Fewer moves in all with an illegal placement (counted as one, as a
        // move under way is) than any path or move under way: reported, not
        // explained by plies (`Found::Displaced`).
        let exact = best.as_ref().map_or(usize::MAX, |(base, path)| base + path.len());
        let bound = exact.min(air.saturating_add(1));
        // Fewer moves in all with a piece off the board (counted as one) than
        // any path or move under way: those plies, and the piece off is the
        // irregularity the board shows (`Found::Lying`). Only by the longer
        // search for plies missed (not on a board read by dumps only, whose
        // other hypotheses are the rivals', nor where an earlier position is
        // looked at as a take-back): a path of more plies than the short one
        // looks for may end on the board with fewer moves in all (a slide
        // cut short amended, and the capture after it).
        let lying = (slips && under_way && !polled && plies >= game::MAX_INFERRED_PLIES)
            .then(|| self.lying(&gave_up, board, plies, bound, seen))
            .flatten();
        // An illegal placement is reported with as few moves in all as that.
        let slip_bound = lying
            .as_ref()
            .map_or(bound, |path| n + path.len() + LYING_COST + 1);
        if slips {
            if let Some(path) = self.displaced(&gave_up, board, plies, slip_bound, seen) {
                return Found::Displaced(path);
            }
        }
        if let Some(path) = lying {
            return Found::Lying(n, path);
        }
        match best {
            Some((base, path)) if base + path.len() <= air => Found::Path(base, path),
            _ if air < usize::MAX => Found::UnderWay,
            Some((base, path)) => Found::Path(base, path),
            None => Found::Nothing,
        }
    }

    /// Whether `board` (real squares) is a board the line showed whole since
    /// it was last in step (`Resync::seen_boards`) with pieces lifted from it
    /// and none set down: pieces in the hand, after no ply (every ply sets a
    /// piece down, and the line would have shown it). The plies missed are the
    /// ones that reach that board; a path to this one would be plies never
    /// played (a pawn knocked over after a gap, explained as a knight's trip
    /// out to take it and home: seed 112). Not on a board read by dumps only,
    /// where nothing is seen between dumps.
    fn lifted_from_seen(&self, board: &Board) -> bool {
        let Some(r) = self.line.resync.as_ref().filter(|r| r.cause != Cause::Poll) else {
            return false;
        };
        r.seen_boards
            .iter()
            .any(|s| s != board && crate::rules::matching::only_lifted(s, board))
    }

    /// The fewest plies from the record as it stands (at most `plies - 1`) to a
    /// position that `board` is an illegal placement from, with fewer moves in
    /// all than `bound` (the placement counted as one): the path. Checked
    /// against the bases whose search gave up (`gave_up`): none may reach the
    /// board in as few plies. Never from before the record's last moves: a
    /// piece that moved twice there (Ne8 inferred, then Nd6 seen) looks like
    /// one set down where no move goes (f6 to d6), and the plies the line
    /// showed would be replaced by a slip it never showed. The clock is not
    /// asked either: a player who slips before the opponent has pressed is
    /// still the one reported, and invented plies that agree with the clock
    /// are no better an account.
    fn displaced(
        &self,
        gave_up: &[usize],
        board: &Board,
        plies: usize,
        bound: usize,
        seen: game::Seen<'_>,
    ) -> Option<Vec<Move>> {
        let game = self.game.as_ref()?;
        let n = game.ply();
        // n + k + 1 < bound, and k < plies.
        let most = bound.checked_sub(n + 2)?.min(plies.saturating_sub(1));
        let path = game::displaced_path(game.current(), board, most, game::INFER_BUDGET, seen)?;
        let moves = n + path.len() + 1;
        self.none_as_few(gave_up, board, moves, seen).then_some(path)
    }

    /// Whether no base whose search gave up (`gave_up`) reaches `board` in as
    /// few plies as `moves` in the whole record: a search that gave up looked
    /// at no path shorter for sure.
    fn none_as_few(&self, gave_up: &[usize], board: &Board, moves: usize, seen: game::Seen<'_>) -> bool {
        let Some(game) = self.game.as_ref() else {
            return true;
        };
        gave_up.iter().all(|&b| {
            let Some(left) = moves.checked_sub(b).filter(|l| *l > 0) else {
                return true;
            };
            let Some(from) = game.positions.get(b) else {
                return true;
            };
            matches!(
                game::infer_path(from, board, left, game::INFER_BUDGET, seen, false),
                game::Inferred::None
            )
        })
    }

    /// The fewest plies from the record as it stands (at most `plies`) to a
    /// position `board` is with one piece off (see [`game::lying_path`]),
    /// with fewer moves in all than `bound` (the piece off counted as one),
    /// leaving the side to move the clock's running side when a report since
    /// the gap says it: the path. Only from the record as it stands: a move
    /// not completed stays, the piece off no reason to amend it. Checked
    /// against the bases whose search gave up (`gave_up`): none may reach the
    /// board in as few plies.
    fn lying(
        &self,
        gave_up: &[usize],
        board: &Board,
        plies: usize,
        bound: usize,
        seen: game::Seen<'_>,
    ) -> Option<Vec<Move>> {
        let game = self.game.as_ref()?;
        let n = game.ply();
        // n + k + LYING_COST < bound, and k <= plies.
        let most = bound.checked_sub(n + LYING_COST + 1)?.min(plies);
        let path = game::lying_path(game.current(), board, most, game::INFER_BUDGET, seen)?;
        let turn = game.current().turn();
        let ends = if path.len() % 2 == 0 { turn } else { !turn };
        if self.clock_turn().is_some_and(|c| c != ends) {
            return None;
        }
        let moves = n + path.len() + LYING_COST;
        self.none_as_few(gave_up, board, moves, seen).then_some(path)
    }

    /// Records the plies to a board that is a position with a piece off it
    /// ([`Found::Lying`]): the line is in step again, and the piece off is the
    /// board's irregularity (reported `displaced` once it has stood for the
    /// threshold, resolved when the piece is set up again), not plies still
    /// missed: no search looks for a path to the board as it stands.
    pub(in crate::rules) fn commit_lying(&mut self, base: usize, path: Vec<Move>, t: u64) {
        self.commit_found(base, path, t);
        self.leave_resync(t);
        self.evaluate(t);
    }

    /// Records a path found from ply `base` of the record; a press held over the
    /// gap then completes the last of its plies. Inferred moves after `base` that
    /// the path replaces are taken back first (`takeback`).
    pub(in crate::rules) fn commit_found(&mut self, base: usize, path: Vec<Move>, t: u64) {
        self.line.rival.clear();
        let n = self.game.as_ref().map_or(0, Game::ply);
        // Taken first: recording the plies closes the window that holds it.
        let press = self.line.resync.as_mut().and_then(|r| r.held_press.take());
        let pressed = self.line.resync.as_mut().and_then(|r| r.pressed.take());
        let amend = base + 1 == n && self.game.as_ref().is_some_and(|g| !g.moves[base].completed);
        let open = self.left_open(base, &path);
        // The plies after the last board a dump showed were seen on the line.
        let seen_from = self.seen_from(base, &path);
        self.hands.touches.forget();
        if base < n && !amend {
            self.under_way.tentative = None;
            self.take_back(base, t);
            self.commit_path(path, seen_from, t);
        } else if base < n {
            // The first ply amends the move not completed.
            let mut rest = path.into_iter();
            if let Some(first) = rest.next() {
                self.under_way.tentative = Some(Tentative {
                    base,
                    mv: first,
                    kings_hold: false,
                    inferred: seen_from > 0,
                    found: true,
                    at: t,
                });
                self.commit(t);
                let later: Vec<Move> = rest.collect();
                if !later.is_empty() {
                    self.complete(n, t);
                    self.commit_path(later, seen_from.saturating_sub(1), t);
                }
            }
        } else {
            self.commit_path(path, seen_from, t);
        }
        self.note_open(open, base, t);
        if let Some(side) = press {
            self.held_press(side, t);
        }
        if let Some((color, emt)) = pressed {
            self.complete_pressed(color, emt, t);
        }
    }

    /// On a board read by dumps only, with no clock running to say whose turn
    /// it is: the ply from which plies of the other parity than the record's
    /// also reach the board `path` (from ply `base`) ends on: from `base`, or
    /// from the start of the inferred plies before it (an earlier dump may have
    /// caught a move under way, a slide, rather than a piece at rest); with
    /// those plies and where they end. Failing that, as few plies from `base`
    /// to a position the board is a move under way from (a piece in the hand
    /// rather than captured). A search that gives up counts as open.
    fn left_open(&self, base: usize, path: &[Move]) -> Vec<(usize, Vec<Move>, Chess)> {
        let polled = self.line.resync.as_ref().is_some_and(|r| r.cause == Cause::Poll);
        let Some(game) = self.game.as_ref() else {
            return Vec::new();
        };
        if !polled || path.is_empty() || self.clock_turn().is_some() || base >= game.positions.len() {
            return Vec::new();
        }
        let mut end = game.positions[base].clone();
        for mv in path {
            end.play_unchecked(*mv);
        }
        let seen = seen_in(&self.line.resync);
        let tail = inferred_tail(game).min(base);
        let ending = |from: usize, other: Vec<Move>| {
            let mut pos = game.positions[from].clone();
            for mv in &other {
                pos.play_unchecked(*mv);
            }
            (from, other, pos)
        };
        let open = |from: usize| {
            let len = base - from + path.len();
            if len > OPEN_PLIES {
                return None;
            }
            let start = &game.positions[from];
            let other = game::other_parity(start, end.board(), len, OPEN_PLIES, OPEN_BUDGET, seen)?;
            Some(ending(from, other))
        };
        let start = &game.positions[base];
        let in_hand = game::under_way_path(start, end.board(), path.len() - 1, OPEN_BUDGET, seen)
            .map(|air| ending(base, air));
        let parity = (tail < base).then(|| open(tail)).flatten().or_else(|| open(base));
        parity.into_iter().chain(in_hand).collect()
    }

    /// After plies found from ply `base`: an open stretch (another hypothesis
    /// reaches the same board) is reported at once when it starts before
    /// `base`; either way the hypotheses are kept as rivals for the next dump
    /// to judge ([`Core::judge_rival`]).
    fn note_open(&mut self, open: Vec<(usize, Vec<Move>, Chess)>, base: usize, t: u64) {
        // Plies before `base` reached the board in another number: an earlier
        // dump caught a move under way, and the next cannot tell.
        if let Some(from) = open.iter().map(|o| o.0).filter(|f| *f < base).min() {
            self.report_open(from, t);
        }
        self.line.rival = open;
    }

    /// A dump of a polled board (`board`, real squares; `raw`, board numbering)
    /// that differs from the last: the rival hypotheses kept for the plies
    /// found before it ([`Core::note_open`]) are dropped when this board cannot
    /// follow from them (in plies, or with a move under way); reported
    /// `ambiguous` when it can follow from one and from the record; the first
    /// taken up in place of the record's plies when it can follow from them
    /// only, the plies it replaces all inferred (never a move a dump showed),
    /// and reported when it can follow from two.
    pub(in crate::rules) fn judge_rival(&mut self, board: &Board, raw: &Board, t: u64) {
        let rivals = std::mem::take(&mut self.line.rival);
        let n = self.game.as_ref().map_or(0, Game::ply);
        let mut follow = Vec::new();
        let mut unsure = false;
        for (from, plies, pos) in rivals {
            if from >= n {
                // Taken back meanwhile.
                continue;
            }
            if pos.board() == board {
                // Nothing to judge by yet.
                self.line.rival.push((from, plies, pos));
                continue;
            }
            let found = game::infer_path(
                &pos,
                board,
                game::MAX_INFERRED_PLIES,
                OPEN_BUDGET,
                game::Seen::default(),
                true,
            );
            match found {
                game::Inferred::None => {}
                game::Inferred::GaveUp => {
                    unsure = true;
                    follow.push((from, plies));
                }
                _ => follow.push((from, plies)),
            }
        }
        let Some(first) = follow.iter().map(|f| f.0).min() else {
            return;
        };
        let record = unsure
            || self.one_step(raw)
            || !matches!(
                self.best_path(board, game::MAX_INFERRED_PLIES, true),
                Found::Nothing
            );
        if record || follow.len() > 1 {
            self.report_open(first, t);
        }
        if !record {
            let (from, plies) = follow.swap_remove(0);
            if !self.take_up(from, plies, t) {
                self.report_open(from, t);
            }
        }
    }

    /// Replaces the record's plies from ply `from` by `plies` (the rival the
    /// dumps since have chosen), when every ply replaced was inferred.
    fn take_up(&mut self, from: usize, plies: Vec<Move>, t: u64) -> bool {
        let Some(game) = &self.game else { return false };
        if game.is_over()
            || !game.moves[from..].iter().all(|m| m.inferred)
            || self.under_way.tentative.is_some()
        {
            return false;
        }
        self.hands.touches.forget();
        self.take_back(from, t);
        self.commit_inferred(plies, t);
        true
    }

    /// Reports the record's plies from ply `from` on `ambiguous`, once a game
    /// (the report stands for the rest of it).
    fn report_open(&mut self, from: usize, t: u64) {
        if self.line.open_said {
            return;
        }
        self.line.open_said = true;
        let base = from;
        let Some(game) = &self.game else { return };
        let side: Side = game.current().turn().into();
        let count = self.violations[side_index(side)];
        self.emit(
            t,
            EventKind::Irregular {
                kind: IrregularKind::Ambiguous,
                side,
                squares: Vec::new(),
                completed: false,
                count,
                penalty: None,
                board: None,
                ply: Some(base as u32 + 1),
            },
        );
    }

    /// How many plies of `path` (from ply `base`) lead to a board the line
    /// showed whole since the line went away (a dump's; the last time the
    /// path passes it, the earliest such board on the path): the plies after
    /// them were shown by the line (in step since). The whole path when no
    /// such board is on it.
    fn seen_from(&self, base: usize, path: &[Move]) -> usize {
        let (Some(game), Some(seen)) = (&self.game, self.line.resync.as_ref().map(|r| &r.seen_boards)) else {
            return path.len();
        };
        let Some(start) = game.positions.get(base) else {
            return path.len();
        };
        // Per board seen, the last ply of the path that leads to it.
        let mut last: Vec<Option<usize>> = vec![None; seen.len()];
        let mut mark = |i: usize, board: &Board| {
            for (k, s) in seen.iter().enumerate() {
                if s == board {
                    last[k] = Some(i);
                }
            }
        };
        let mut pos = start.clone();
        mark(0, pos.board());
        for (i, mv) in path.iter().enumerate() {
            pos.play_unchecked(*mv);
            mark(i + 1, pos.board());
        }
        last.into_iter().flatten().min().unwrap_or(path.len())
    }

    /// The side to move as the clock shows it (its running side), when the clock
    /// runs and its sides are known.
    pub(in crate::rules) fn clock_turn(&self) -> Option<Color> {
        // Across a gap, only a report taken since says (see `Resync::clock_fresh`).
        if self
            .line
            .resync
            .as_ref()
            .is_some_and(|r| r.cause == Cause::Gap && !r.clock_fresh)
        {
            return None;
        }
        let side = self.clk.status?.running_side()?;
        let white = self.clk.white()?;
        Some(if side == white { Color::White } else { Color::Black })
    }

    /// Records plies found across a gap: marked inferred, all but the last
    /// completed.
    pub(in crate::rules) fn commit_inferred(&mut self, path: Vec<Move>, t: u64) {
        let all = path.len();
        self.commit_path(path, all, t);
    }

    /// Records a path found: its first `inferred` plies marked inferred (the
    /// line did not show them), the rest not (it did); all but the last
    /// completed; none judged for touch-move.
    pub(in crate::rules) fn commit_path(&mut self, path: Vec<Move>, inferred: usize, t: u64) {
        let last = path.len().saturating_sub(1);
        for (i, mv) in path.into_iter().enumerate() {
            let base = self.game.as_ref().map_or(0, Game::ply);
            self.under_way.tentative = Some(Tentative {
                base,
                mv,
                kings_hold: false,
                inferred: i < inferred,
                found: true,
                at: t,
            });
            self.commit(t);
            if i < last {
                self.complete(base + 1, t);
            }
        }
    }
}

/// The plies from `from` to `board` whose first takes the piece of `shown` (a
/// move from `from` a dump showed) on along its line: `shown` may have been
/// that move's slide caught on a square it crosses, and nothing else replaces it.
/// The lifts and placements the line showed since the gap, for the inference.
fn seen_in(resync: &Option<Resync>) -> game::Seen<'_> {
    resync.as_ref().map_or_else(game::Seen::default, |r| game::Seen {
        lifts: &r.lifts,
        placed: &r.puts,
        // On a board read by dumps only, nothing is seen between dumps; a
        // dump found to be plies and a slip is no board the game stood on.
        boards: if r.cause == Cause::Poll || r.slip.is_some() {
            &[]
        } else {
            &r.seen_boards
        },
    })
}

fn slide_path(
    from: &Chess,
    shown: &Move,
    board: &Board,
    plies: usize,
    seen: game::Seen<'_>,
    under_way: bool,
) -> game::Inferred {
    let Some(origin) = shown.from() else {
        return game::Inferred::None;
    };
    let mut air = None;
    // The fewest plies in all: the slide may have ended on any square past the
    // one shown, and the first that leads to the board need not be the nearest.
    let mut best: Option<Vec<Move>> = None;
    for m in from.legal_moves() {
        if m.from() != Some(origin)
            || m.role() != shown.role()
            || !shakmaty::attacks::between(origin, m.to()).contains(shown.to())
        {
            continue;
        }
        let mut after = from.clone();
        after.play_unchecked(m);
        if after.board() == board {
            return game::Inferred::Path(vec![m]);
        }
        let left = best
            .as_ref()
            .map_or(plies, |b| b.len().saturating_sub(1))
            .saturating_sub(1);
        if left == 0 {
            continue;
        }
        match game::infer_path(&after, board, left, game::INFER_BUDGET, seen, under_way) {
            game::Inferred::Path(mut path) if !path.is_empty() => {
                path.insert(0, m);
                best = Some(path);
            }
            game::Inferred::UnderWay(k) => air = Some(air.map_or(k + 1, |a: usize| a.min(k + 1))),
            _ => {}
        }
    }
    match best {
        Some(path) => game::Inferred::Path(path),
        None => air.map_or(game::Inferred::None, game::Inferred::UnderWay),
    }
}

/// How many plies at most are looked for before a result by kings found
/// across a gap.
const KINGS_PLIES: usize = 3;

/// How many paths of the fewest plies are looked at before they are judged
/// ambiguous anyway.
const KINGS_PATHS: usize = 8;

impl Core {
    /// Across a gap, the plies played before the kings were set on the centre
    /// (a result by kings): the fewest (at most [`KINGS_PLIES`]) after which
    /// the board, both kings aside, is what `board` shows (the event
    /// campaign's seed 1143: 19. Nxh3 Qf3+ played while the daemon was down,
    /// then the kings set on the centre; the result was taken and the two
    /// plies lost). Only when every path of that length is the same moves:
    /// where the kings stood is unknown, so a path with a king's move, or
    /// moves that could come in another order, is no account of the board
    /// (nothing is invented; the plies stay missed, and the result stands).
    pub(in crate::rules) fn plies_before_kings(&self, board: &Board) -> Option<Vec<Move>> {
        let gap = self.line.resync.as_ref().is_some_and(|r| r.cause == Cause::Gap);
        let game = self.game.as_ref().filter(|g| gap && !g.is_over())?;
        let from = game.positions.last()?;
        let aside = |b: &Board| {
            let mut b = b.clone();
            for sq in b.kings() {
                b.discard_piece_at(sq);
            }
            b
        };
        let want = aside(board);
        if aside(from.board()) == want {
            return None;
        }
        for plies in 1..=KINGS_PLIES {
            let mut found: Vec<Vec<Move>> = Vec::new();
            let mut path = Vec::new();
            kings_aside_paths(from, &want, plies, &aside, &mut path, &mut found);
            if found.is_empty() {
                continue;
            }
            let one = &found[0];
            let same = found.len() == 1 && !one.iter().any(|m| m.role() == shakmaty::Role::King);
            return same.then(|| one.clone());
        }
        None
    }
}

/// Every path of exactly `plies` legal moves from `pos` (at most
/// [`KINGS_PATHS`]) whose board, both kings aside, is `want`.
fn kings_aside_paths(
    pos: &Chess,
    want: &Board,
    plies: usize,
    aside: &dyn Fn(&Board) -> Board,
    path: &mut Vec<Move>,
    found: &mut Vec<Vec<Move>>,
) {
    if found.len() >= KINGS_PATHS {
        return;
    }
    if plies == 0 {
        if aside(pos.board()) == *want {
            found.push(path.clone());
        }
        return;
    }
    for mv in pos.legal_moves() {
        let mut next = pos.clone();
        next.play_unchecked(mv);
        path.push(mv);
        kings_aside_paths(&next, want, plies - 1, aside, path, found);
        path.pop();
        if found.len() >= KINGS_PATHS {
            return;
        }
    }
}
