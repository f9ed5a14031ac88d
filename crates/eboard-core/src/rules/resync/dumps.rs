//! Whole-board reports read against the record: a dump after a gap settles the
//! sensor board; on a board read by dumps only it is the next board state, seen
//! as lifts and placements; on a board sending updates, one that disagrees with
//! them means the line lost something, and it closes the gap it opens.

use shakmaty::{Board, Piece, Position, Role, Square};

use super::{Cause, Found, Resync, SEEN_BOARDS, SHORT_PLIES, Search};
use crate::rules::irregular::NOISY_FOR_US;
use crate::rules::matching::{Sensors, diff_squares, is_partial};
use crate::rules::start::kings_result;
use crate::rules::{Core, Game, game, matching};

impl Core {
    /// A whole-board report. After a gap it settles the sensor board; on a board
    /// read by dumps only it is the next board state, seen as lifts and placements;
    /// on a board sending updates, one that disagrees with them means the line lost
    /// something, and it is handled as a gap that this dump closes.
    pub(in crate::rules) fn dump(&mut self, board: Board, t: u64) {
        let polled = !self.line.updates_seen;
        let gated = self.line.resync.as_ref().is_some_and(|r| r.gated);
        if !gated && &board == self.sensors.board() {
            self.line.confirm_dump = false;
            if self.line.resync.is_some() {
                let real = self.real_board();
                if let Some(r) = &mut self.line.resync {
                    // In step since the boards seen before: this one is added.
                    // A board read by dumps only is in step with none but its
                    // last dump.
                    if polled {
                        r.seen_boards.clear();
                    }
                    if r.seen_boards.last() != Some(&real) {
                        if r.seen_boards.len() >= SEEN_BOARDS {
                            r.seen_boards.pop();
                        }
                        r.seen_boards.push(real);
                    }
                }
            }
            // Confirmed: the board is as the updates left it. If it also shows the
            // record (or a move on from it), the line is in step again.
            // With no game under way there is nothing to be in step with: a game
            // whose start the line lost may still show up a few plies in.
            let in_step = self.game.is_some() && (self.under_way.tentative.is_some() || !self.unexplained());
            if in_step && self.line.resync.as_ref().is_some_and(|r| r.cause == Cause::Gap) {
                self.leave_resync(t);
            }
            // A board still unexplained, now confirmed: plies may be looked for.
            if let Some(r) = &mut self.line.resync {
                if !in_step && r.search == Search::No {
                    r.search = Search::Short;
                }
            }
            // No game yet, and the board confirmed: a game whose start the line
            // lost may be under way.
            if self.game.is_none() && self.try_new_game(t, true) {
                return;
            }
            // The board as the updates left it: a press waiting for it may be judged.
            if let Some(u) = &mut self.clk.unconfirmed_press {
                u.dumped = true;
            }
            self.judge_confirmed(t);
            return;
        }
        self.clk.unconfirmed_press = None;
        if !gated && polled && self.game.is_some() {
            // A king step onto the centre held for a result by kings, and a
            // dump that has gone on from it: the step was a move, made when its
            // king landed (the dumps showed it at rest), and this dump is
            // matched on from it. (Made first: a move recorded with the board
            // on the record ends a stretch of doubt, and the polled one starts
            // again below.)
            if self.held_step_made(&board, false) {
                self.commit(t);
            }
            self.line
                .resync
                .get_or_insert_with(|| Resync::new(Cause::Poll, false, 0));
            // The other hypotheses for the plies found on the last dumps are
            // judged by this one, before it is matched.
            if let Some(g) = &self.game {
                let real = g.orientation.real_board(&board);
                self.judge_rival(&real, &board, t);
            }
            // A step of one move (or the pieces of one in the air) is seen as
            // lifts and placements, so touches count; a dump further on than
            // that is matched as a whole (its lifts would be guesses).
            if self.one_step(&board) {
                self.dump_as_changes(&board, t);
                return;
            }
        }
        if !gated && !polled && self.game.is_some() {
            // The updates did not lead to this board: something was lost.
            self.line.noisy_until = Some(t + NOISY_FOR_US);
            self.line_away();
        }
        // Likewise after a gap (or a dump the updates did not lead to): a king
        // step onto the centre held for a result by kings (or held since the
        // other king was lifted) was seen whole before the line went away, and
        // the dump has gone on from it. It was a move, seen, and a fact as the
        // moves before it: made first, so that the plies missed are found from
        // it. From before it, the king's way back to its square is a trip no
        // board showed (`lost_track`), and a shorter path would replace it
        // (issue 47).
        let step_made = (gated || !polled) && self.held_step_made(&board, true);
        self.sensors = Sensors::new(board);
        self.hands.pending.clear();
        self.hands.last_place = None;
        self.last_change = t;
        if step_made {
            let n = self.game.as_ref().map_or(0, Game::ply);
            if self.under_way.tentative.is_none() {
                self.under_way.unhold();
            }
            self.commit(t);
            if let Some(r) = &mut self.line.resync {
                if r.facts == n {
                    r.facts = n + 1;
                }
            }
        }
        // A dump taken on a line that has shown faults is confirmed by a second;
        // so is the first with no game under way (it decides whether one starts).
        self.line.confirm_dump = self.line.noisy_until.is_some_and(|until| t < until) || self.game.is_none();
        let (clock, press) = match &mut self.line.resync {
            Some(r) => {
                r.gated = false;
                r.lifted = 0;
                r.placed = 0;
                (r.held_clock.take(), r.held_press.take())
            }
            None => (None, None),
        };
        let anchor = (self.real_board(), self.game.as_ref().map_or(0, Game::ply));
        if let Some(r) = &mut self.line.resync {
            r.seen_boards.clear();
            r.seen_boards.push(anchor.0.clone());
            r.dump_ply = Some(anchor.1);
            r.anchor = Some(anchor);
            r.anchor_seen = (r.lifts.len(), r.puts.len());
        }
        self.changed(t, None);
        // A move the dump after a gap shows was made (released) while the line was
        // away: it is made now, not after another release threshold.
        if gated && self.under_way.tentative.is_some() {
            self.commit(t);
        }
        if let Some(status) = clock {
            self.clock_report(&status, t);
        }
        // Up to 2 plies missed are looked for at once on the dump itself (few plies
        // explain little; the board may not rest again before more are played).
        // On a board read by dumps only, the dumps are all there is: a blitz
        // player's 2 to 4 plies a second are looked for on each.
        if self.line.resync.as_ref().is_some_and(|r| r.search != Search::No) && !self.line.confirm_dump {
            let board = self.real_board();
            let plies = if polled {
                game::MAX_INFERRED_PLIES
            } else {
                SHORT_PLIES
            };
            match self.best_path(&board, plies, true) {
                // Plies of the other parity end on the dump too, and no clock
                // report since the gap says whose turn it is: the board the game
                // goes on to will (the anchor is kept for it).
                Found::Path(base, path) if !polled && self.turn_open(base, &path, &board) => {}
                Found::Path(base, path) => {
                    self.commit_found(base, path, t);
                    if let Some(r) = &mut self.line.resync {
                        r.anchor = None;
                        r.search = Search::No;
                    }
                }
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
        // A press held over the gap completes the move it follows: now if the board
        // is explained, else once the plies that reach it are found.
        match (&mut self.line.resync, press) {
            (Some(r), Some(side)) if r.search != Search::No => r.held_press = Some(side),
            (_, Some(side)) => self.held_press(side, t),
            _ => {}
        }
    }

    /// `board` (board numbering) is at most one move from the record: the expected
    /// position, a legal move's result or amendment, or a move under way.
    pub(in crate::rules) fn one_step(&self, board: &Board) -> bool {
        let Some(g) = &self.game else { return false };
        let real = g.orientation.real_board(board);
        let h = matching::placement(&real);
        let n = g.ply();
        real == *g.current().board()
            || g.move_from(n, h, &real).is_some()
            || is_partial(g.current(), &real)
            || (n > 0 && !g.moves[n - 1].completed && g.move_from(n - 1, h, &real).is_some())
            || self.reply_under_way(&real)
    }

    /// `board` (board numbering), a dump on a board read by dumps only or
    /// after a gap, has gone on from a king step onto the centre held for a
    /// result by kings (the move shown; with `held`, also the move held since
    /// the other king was lifted): both kings down, not both on the centre,
    /// and more than one step from the record (not the step withdrawn or
    /// changed, nor a move under way from the record, which are seen as lifts
    /// and placements or matched as usual).
    fn held_step_made(&self, board: &Board, held: bool) -> bool {
        let Some(g) = &self.game else { return false };
        let Some(tent) = self.under_way.tentative.or(self.under_way.held.filter(|_| held)) else {
            return false;
        };
        let real = g.orientation.real_board(board);
        let kings = real.kings();
        tent.kings_hold
            && tent.base == g.ply()
            && (kings & real.white()).any()
            && (kings & real.black()).any()
            && kings_result(&real).is_none()
            && !self.one_step(board)
    }

    /// `board` (real squares) is a legal move's result with the opponent's
    /// pieces of a reply lifted: the move was made (a dump caught the reply
    /// starting). Only lifts: a piece set down may belong to more plies.
    fn reply_under_way(&self, board: &Board) -> bool {
        let Some(g) = &self.game else { return false };
        let pos = g.current();
        let us = pos.turn();
        pos.legal_moves().into_iter().any(|m| {
            let mut after = pos.clone();
            after.play_unchecked(m);
            let diff = diff_squares(after.board(), board);
            !diff.is_empty()
                && diff.iter().all(|sq| {
                    board.piece_at(*sq).is_none()
                        && after.board().piece_at(*sq).is_some_and(|p| p.color != us)
                })
                && is_partial(&after, board)
        })
    }

    /// A dump of a polled board that differs from the last: the pieces gone are
    /// lifts and the pieces arrived are placements, at the dump's time. Lifts of
    /// the side to move come first, a king before its rook, as hands do.
    pub(in crate::rules) fn dump_as_changes(&mut self, board: &Board, t: u64) {
        let before = self.sensors.board().clone();
        let to_move = self.to_move();
        let mut lifts: Vec<(Square, Piece)> = Square::ALL
            .into_iter()
            .filter_map(|sq| {
                let was = before.piece_at(sq)?;
                (board.piece_at(sq) != Some(was)).then_some((sq, was))
            })
            .collect();
        lifts.sort_by_key(|(_, p)| (p.color != to_move, p.role != Role::King));
        let places: Vec<(Square, Piece)> = Square::ALL
            .into_iter()
            .filter_map(|sq| {
                let now = board.piece_at(sq)?;
                (before.piece_at(sq) != Some(now)).then_some((sq, now))
            })
            .collect();
        // The side to move's lifts and placements, then the other side's (a
        // captured piece lifted, or a reply begun): one move at a time.
        for side in [to_move, !to_move] {
            for &(sq, piece) in lifts.iter().filter(|(_, p)| p.color == side) {
                // A piece replaced directly (a capture) is seen as the placement only.
                if board.piece_at(sq).is_some() {
                    continue;
                }
                self.sensors.discard(sq);
                self.last_change = t;
                self.changed(t, Some((sq, piece, true)));
            }
            for &(sq, piece) in places.iter().filter(|(_, p)| p.color == side) {
                self.sensors.set(sq, piece);
                self.last_change = t;
                self.changed(t, Some((sq, piece, false)));
            }
        }
    }
}
