//! Irregular positions (Art. 7): a board that stands unexplained is classified
//! (illegal move, displaced pieces, promotion incomplete, a press without a move)
//! and reported; a completed violation is judged, on a suspect line only once a
//! dump has confirmed the board; `resolved` when the board is explained again.

use super::matching::{diff_squares, is_partial};
use super::resync::Cause;
use super::start::kings_result;
use super::{Core, EventKind, Game, IrregularKind, Penalty, Side, side_index};
use shakmaty::{Board, Color, Position, Square};

/// An unexplained board that has been reported.
#[derive(Debug, Clone)]
pub(super) struct Irregular {
    pub(super) board: Board,
    /// The kind reported, `None` while the board is only unexplained.
    pub(super) kind: Option<IrregularKind>,
}

/// A press on a suspect line that would be a completed violation. A lever bit
/// flipped in one clock report looks like a press, and a field update lost looks
/// like no move: the violation is judged only when the next clock report shows
/// the lever still down on the presser's side and a dump shows the board as the
/// updates left it.
#[derive(Debug, Clone)]
pub(super) struct Unconfirmed {
    pub(super) color: Color,
    /// Where the press put the lever (status bit 1: high on the right).
    pub(super) right_lever_high: bool,
    /// Clock reports since the press (the first is the press's own).
    pub(super) reports: u8,
    pub(super) dumped: bool,
    /// What the board showed at the press.
    pub(super) board: Board,
    pub(super) kind: IrregularKind,
    pub(super) squares: Vec<Square>,
}

/// A line that showed a fault stays suspect this long (µs).
pub(super) const NOISY_FOR_US: u64 = 60_000_000;

/// The board shows `us` castling (king two or more squares along the back rank and
/// a rook of `us` jumped over it) from `expected`, whether legal or not.
pub(super) fn castling_attempt(expected: &Board, board: &Board, us: Color) -> Option<(Square, Square)> {
    let diff = diff_squares(expected, board);
    if diff.len() != 4 {
        return None;
    }
    let king = us.king();
    let rook = us.rook();
    let from = *diff
        .iter()
        .find(|sq| expected.piece_at(**sq) == Some(king) && board.piece_at(**sq).is_none())?;
    let to = *diff.iter().find(|sq| board.piece_at(**sq) == Some(king))?;
    let rook_from = *diff
        .iter()
        .find(|sq| expected.piece_at(**sq) == Some(rook) && board.piece_at(**sq).is_none())?;
    let rook_to = *diff.iter().find(|sq| board.piece_at(**sq) == Some(rook))?;
    let same_rank = [to, rook_from, rook_to].iter().all(|sq| sq.rank() == from.rank());
    // The rook ends between the king's squares (or on the king's first square).
    let between = from.min(to) <= rook_to && rook_to <= from.max(to);
    (same_rank && between && from != to).then_some((from, to))
}

/// Exactly one piece of `us` left its square and stands on another (maybe on an
/// opponent's piece): an attempted move.
pub(super) fn one_piece_moved(expected: &Board, board: &Board, us: Color) -> Option<(Square, Square)> {
    let diff = diff_squares(expected, board);
    let vacated: Vec<Square> = diff
        .iter()
        .copied()
        .filter(|sq| board.piece_at(*sq).is_none())
        .collect();
    let arrived: Vec<Square> = diff
        .iter()
        .copied()
        .filter(|sq| board.piece_at(*sq).is_some())
        .collect();
    match (vacated.as_slice(), arrived.as_slice()) {
        ([from], [to]) => {
            let p = expected.piece_at(*from)?;
            (p.color == us
                && board.piece_at(*to) == Some(p)
                && expected.piece_at(*to).is_none_or(|q| q.color != us))
            .then_some((*from, *to))
        }
        _ => None,
    }
}

impl Core {
    pub(super) fn needs_irregular_check(&self) -> bool {
        // Not while the board may be a move under way a few plies on (its piece
        // in the hand), which is looked at again once it has stood long.
        if self.under_way.tentative.is_some()
            || self
                .line
                .resync
                .as_ref()
                .is_some_and(|r| r.gated || r.search == super::resync::Search::Rested)
        {
            return false;
        }
        let Some(game) = &self.game else { return false };
        let board = self.real_board();
        if game.current().board() == &board {
            return false;
        }
        match &self.irregular {
            Some(irr) if irr.board == board => false,
            // After the end, a change is reported once (until the board is back).
            Some(irr) if game.is_over() && irr.kind.is_some() => false,
            _ => !(game.is_over() && kings_result(&board).is_some()),
        }
    }

    /// The board is explained again: `resolved`, when an irregularity was reported.
    pub(super) fn resolve(&mut self, t: u64) {
        if let Some(irr) = self.irregular.take() {
            if irr.kind.is_some() {
                self.emit_with(t, |c| EventKind::Resolved {
                    fen: c.game.as_ref().map(Game::fen).unwrap_or_default(),
                });
            }
        }
    }

    /// A press waiting for confirmation that has it: the completed violation, as
    /// the board showed it at the press.
    pub(super) fn judge_confirmed(&mut self, t: u64) {
        if !self
            .clk
            .unconfirmed_press
            .as_ref()
            .is_some_and(|u| u.dumped && u.reports >= 2)
        {
            return;
        }
        let Some(u) = self.clk.unconfirmed_press.take() else {
            return;
        };
        if self
            .game
            .as_ref()
            .is_none_or(|g| g.is_over() || g.current().turn() != u.color)
        {
            return;
        }
        self.report_completed(t, u.color, u.board, u.kind, u.squares);
    }

    /// Classifies the board against the expected position.
    pub(super) fn classify(&self) -> Option<(IrregularKind, Vec<Square>)> {
        let game = self.game.as_ref()?;
        let board = self.real_board();
        let pos = game.current();
        if pos.board() == &board {
            return None;
        }
        let us = pos.turn();
        let diff = diff_squares(pos.board(), &board);
        // Pawn released on the last rank where a legal promotion from a square
        // it left puts it: a promotion under way. A pawn set on its last (or
        // first) rank by no legal move is an illegal move like any other.
        let last = shakmaty::Rank::new(if us.is_white() { 7 } else { 0 });
        let promo = diff.iter().any(|sq| {
            board.piece_at(*sq) == Some(us.pawn())
                && sq.rank() == last
                && pos.legal_moves().iter().any(|m| {
                    m.is_promotion()
                        && m.to() == *sq
                        && m.from()
                            .is_some_and(|f| diff.contains(&f) && board.piece_at(f).is_none())
                })
        });
        if promo {
            return Some((IrregularKind::PromotionIncomplete, diff.to_vec()));
        }
        if is_partial(pos, &board) {
            return None;
        }
        // A reply under way from a move held back (see `UnderWay::held`).
        if let Some(h) = self.under_way.held.filter(|h| h.base == game.ply()) {
            let mut after = pos.clone();
            after.play_unchecked(h.mv);
            if is_partial(&after, &board) {
                return None;
            }
        }
        if let Some((from, to)) =
            one_piece_moved(pos.board(), &board, us).or_else(|| castling_attempt(pos.board(), &board, us))
        {
            return Some((IrregularKind::IllegalMove, vec![from, to]));
        }
        Some((IrregularKind::Displaced, diff.to_vec()))
    }

    pub(super) fn report_irregular(&mut self, t: u64) {
        let board = self.real_board();
        if self.irregular.as_ref().is_some_and(|i| i.board == board) {
            return;
        }
        let Some(game) = &self.game else { return };
        let side: Side = game.current().turn().into();
        let count = self.violations[side_index(side)];
        if game.is_over() {
            // Nothing is recorded after the end, but a board that changes is said.
            let squares = diff_squares(game.current().board(), &board);
            self.raise(t, board, IrregularKind::AfterEnd, side, squares, count, None);
            return;
        }
        // Across a gap, plies missed and a piece set where no move of it goes:
        // that illegal move, the placer's (see `Found::Displaced`).
        let slip = self
            .line
            .resync
            .as_ref()
            .and_then(|r| r.slip.as_ref())
            .filter(|s| s.board == board)
            .map(|s| (Side::from(s.side), vec![s.from, s.to]));
        if let Some((side, squares)) = slip {
            let count = self.violations[side_index(side)];
            self.raise(t, board, IrregularKind::IllegalMove, side, squares, count, None);
            return;
        }
        // Pieces only lifted (in the air) or a move under way are not irregular;
        // neither is an earlier position (handled as a take-back).
        let Some((kind, squares)) = self.classify() else {
            self.stands_unexplained(board);
            return;
        };
        // Promotion under way without a press is not yet a violation.
        if kind == IrregularKind::PromotionIncomplete {
            self.stands_unexplained(board);
            return;
        }
        // Across a gap, a board no legal sequence reaches: the record lost track of
        // the game (nothing is invented; a known position or the arbiter resumes it).
        // Not the record's position with pieces only taken off it: that is the
        // record's game with a piece knocked over or held, displaced.
        let lifted_only = self
            .game
            .as_ref()
            .is_some_and(|g| super::matching::only_lifted(g.current().board(), &board));
        let kind = match &self.line.resync {
            Some(r) if r.cause == Cause::Gap && kind != IrregularKind::IllegalMove && !lifted_only => {
                IrregularKind::LostTrack
            }
            _ => kind,
        };
        self.raise(t, board, kind, side, squares, count, None);
    }

    /// The board stands unexplained but is nothing to report (a piece in the
    /// hand, a promotion under way): it is remembered so as not to be judged
    /// again, and an irregularity reported before stays reported until the board
    /// is explained (`resolve`): a piece of an illegal move held in the hand past
    /// the threshold, then put on a legal square, resolves the alarm.
    fn stands_unexplained(&mut self, board: Board) {
        let kind = self.irregular.as_ref().and_then(|i| i.kind);
        self.irregular = Some(Irregular { board, kind });
    }

    /// Reports an irregularity and remembers the board it stands on. A completed
    /// violation (7.5) is the one that carries a penalty.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn raise(
        &mut self,
        t: u64,
        board: Board,
        kind: IrregularKind,
        side: Side,
        squares: Vec<Square>,
        count: u32,
        penalty: Option<Penalty>,
    ) {
        let seen = (kind == IrregularKind::LostTrack).then(|| board.board_fen().to_string());
        self.irregular = Some(Irregular {
            board,
            kind: Some(kind),
        });
        self.emit(
            t,
            EventKind::Irregular {
                kind,
                side,
                squares,
                completed: penalty.is_some(),
                count,
                penalty,
                board: seen,
                ply: None,
            },
        );
    }

    pub(super) fn report_completed(
        &mut self,
        t: u64,
        color: Color,
        board: Board,
        kind: IrregularKind,
        squares: Vec<Square>,
    ) {
        let side: Side = color.into();
        self.violations[side_index(side)] += 1;
        let count = self.violations[side_index(side)];
        let penalty = Penalty {
            profile: self.cfg.profile,
            offender: side,
            count,
            to_clock: count == 1 && self.penalty_to_clock(color, t),
        };
        self.raise(t, board, kind, side, squares, count, Some(penalty));
    }
}
