//! The record: a move the board shows waits for its release (a tentative
//! move), then is made, amended (Art. 4.7), taken back, or completed; after each,
//! the end the position forces and the draws claimable.

use super::{Core, DrawReason, EventKind, Game, touch};
use shakmaty::{Color, Move, Position};

/// A move the board shows but that is not yet reported as made.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tentative {
    /// The ply it is played from: the current ply (a new move), one less (an
    /// amendment of a move not completed), or earlier (a take-back and a new move).
    pub(super) base: usize,
    pub(super) mv: Move,
    /// A king stepping onto a centre square may be the start of a result by kings:
    /// it waits for the irregular threshold instead of the release threshold.
    pub(super) kings_hold: bool,
    /// Found across a gap in the line: marked, and judged for no touch-move.
    pub(super) inferred: bool,
    /// Found by a search for plies the line may have missed (across a gap,
    /// between dumps), not seen being played: no lift is part of it, and it is
    /// judged for no touch-move (marked `inferred` unless the line showed it).
    pub(super) found: bool,
    /// When the board first showed it (its last placement): lifts after this
    /// time are no part of it.
    pub(super) at: u64,
}

/// What the board shows beyond the record, until it is made, taken back or
/// left: a move seen and not yet made, one held for a reply, and a take-back
/// under way.
#[derive(Debug, Default)]
pub(super) struct UnderWay {
    /// A move the board shows, not yet reported as made.
    pub(super) tentative: Option<Tentative>,
    /// A move the board showed and then left for a reply under way from it: the
    /// opponent lifted a piece the move could have captured (it may yet become
    /// the capture), or a piece of the mover's to capture it, or their king
    /// after a king step onto the centre (it may yet be a result by kings).
    /// Made, as of when it showed, once the board goes on from it.
    pub(super) held: Option<Tentative>,
    /// An earlier ply the board shows (a take-back under way).
    pub(super) takeback: Option<usize>,
}

impl UnderWay {
    /// Nothing under way: a new game, or the record set by a decision.
    pub(super) fn clear(&mut self) {
        *self = UnderWay::default();
    }

    /// The board left the move it showed and the move held: neither is made.
    pub(super) fn drop_moves(&mut self) {
        self.tentative = None;
        self.held = None;
    }

    /// The move held is the move shown again (the reply under way from it was
    /// not made).
    pub(super) fn unhold(&mut self) {
        self.tentative = self.held;
    }
}

impl Core {
    /// The board shows a move not yet made: it waits for its release. A new move
    /// shown is counted (the daemon checks it against a dump).
    pub(super) fn show(&mut self, mut tent: Tentative) {
        match self.under_way.tentative {
            Some(t) if t.base == tent.base && t.mv == tent.mv => tent.at = t.at,
            _ => self.shown += 1,
        }
        self.under_way.tentative = Some(tent);
    }

    /// The board shows a move (or an amendment, or a take-back and a move): record it.
    pub(super) fn commit(&mut self, t: u64) {
        let Some(tent) = self.under_way.tentative.take() else {
            return;
        };
        self.under_way.held = None;
        // Lifts since the board showed the move are the next turn's (a reply
        // started before the move was made): they wait, and are judged for it.
        if !tent.found {
            self.flush_touches_until(tent.at, t);
        }
        let Some(game) = self.game.as_mut() else { return };
        let n = game.ply();
        if tent.base + 1 == n && !game.moves[n - 1].completed {
            if game.moves[n - 1].mv == tent.mv {
                return;
            }
            // Amendment of a move made but not completed.
            let was_mv = game.moves[n - 1].mv;
            let was_san = if self.outbox.keeps() {
                game.moves[n - 1].san.clone()
            } else {
                String::new()
            };
            let mover = game.positions[n - 1].turn();
            game.truncate(n - 1);
            game.push(tent.mv);
            let Some(played) = game.moves.last_mut() else {
                return;
            };
            played.inferred = tent.inferred;
            self.emit_with(t, |c| {
                let (san, uci, fen) = c.last_move_strings();
                EventKind::MoveAmended {
                    ply: n as u32,
                    was: was_san,
                    san,
                    uci,
                    fen,
                    inferred: tent.inferred,
                }
            });
            let Some(base) = self.game.as_ref().map(|g| g.positions[n - 1].clone()) else {
                return;
            };
            let touched = self.hands.touches.amend(mover);
            let article =
                touch::amendment_article(&base, &was_mv, &tent.mv).filter(|_| !tent.inferred && !tent.found);
            // A board read by dumps only cannot tell a piece released from one
            // still held (a second between two dumps): no amendment is judged.
            let article = article.filter(|_| self.line.updates_seen);
            if let Some(article) = article {
                self.emit_with(t, |c| EventKind::TouchMove {
                    article,
                    side: mover.into(),
                    touched,
                    played: c.last_move_strings().0,
                });
            }
            self.after_move(t);
            return;
        }
        if tent.base < n {
            self.take_back(tent.base, t);
        }
        let Some(game) = self.game.as_mut() else { return };
        let n = game.ply();
        // The previous move (the opponent's) is completed by this one at the latest.
        if n > 0 && !game.moves[n - 1].completed {
            self.complete(n, t);
        }
        let Some(game) = self.game.as_mut() else { return };
        let mover = game.current().turn();
        game.push(tent.mv);
        let Some(played) = game.moves.last_mut() else {
            return;
        };
        played.inferred = tent.inferred;
        let ply = game.ply() as u32;
        // Touches are judged only for a move seen being played (and only said:
        // nothing is judged when no events are kept).
        let flags = if tent.inferred || tent.found || !self.outbox.keeps() {
            Vec::new()
        } else {
            let legal = self
                .game
                .as_ref()
                .map(|g| g.legal(g.ply() - 1))
                .unwrap_or_default();
            self.hands.touches.flags(&legal, &tent.mv, mover)
        };
        for (article, touched) in flags {
            self.emit_with(t, |c| EventKind::TouchMove {
                article,
                side: mover.into(),
                touched,
                played: c.last_move_strings().0,
            });
        }
        self.emit_with(t, |c| {
            let (san, uci, fen) = c.last_move_strings();
            EventKind::Move {
                ply,
                san,
                uci,
                fen,
                side: mover.into(),
                inferred: tent.inferred,
            }
        });
        self.hands.touches.next_turn(!mover);
        self.after_move(t);
    }

    /// After a move is recorded: the end it forces, or the draws claimable.
    pub(super) fn after_move(&mut self, t: u64) {
        // The board is where the record is: the line is in step again. A press
        // made while it was not (kept, not judged) completes the move it followed.
        // Not while the line is away (a gap, no dump since): the board is then
        // the one from before the gap, and says nothing of now (a move under
        // way when the line went, made by its release threshold passing while
        // it is away, may have gone on: seed 521).
        let board = self.real_board();
        let mut pressed = None;
        let away = self.line.resync.as_ref().is_some_and(|r| r.gated);
        if !away && self.game.as_ref().is_some_and(|g| g.current().board() == &board) {
            pressed = self.line.resync.take().and_then(|r| r.pressed);
        }
        if let Some((color, emt)) = pressed {
            self.complete_pressed(color, emt, t);
        }
        self.settle_move(t);
    }

    /// The last move completed by a press its mover made while the board was
    /// unexplained (`emt`: the time the move took, at that press).
    pub(super) fn complete_pressed(&mut self, color: Color, emt: Option<u64>, t: u64) {
        let Some(game) = &self.game else { return };
        let n = game.ply();
        if n == 0 || game.moves[n - 1].completed || game.positions[n - 1].turn() != color {
            return;
        }
        if game.is_over() {
            self.complete_after_end(emt, t);
            return;
        }
        self.complete(n, t);
        self.clock_completed(n, emt, t);
    }

    /// A move that ended the game when it was made (a mate, a stalemate: 5.1.1,
    /// 5.2.1) is completed by its mover's press after the end, which gives its
    /// time (`emt`); the clock is not set again (the game is over). Nothing else
    /// is completed after an end.
    pub(super) fn complete_after_end(&mut self, emt: Option<u64>, t: u64) {
        let Some(game) = self.game.as_mut() else { return };
        let n = game.ply();
        let forced = game.result.is_some_and(|(_, term)| term.is_forced());
        if n == 0 || game.moves[n - 1].completed || !forced {
            return;
        }
        if game.moves[n - 1].emt_ms.is_none() {
            game.moves[n - 1].emt_ms = emt;
        }
        self.complete(n, t);
    }

    /// The last move's SAN and UCI and the FEN after it, for its event.
    fn last_move_strings(&self) -> (String, String, String) {
        match self.game.as_ref().and_then(|g| Some((g, g.moves.last()?))) {
            Some((g, m)) => (m.san.clone(), m.uci.clone(), g.fen()),
            None => Default::default(),
        }
    }

    /// The end the position forces (5.1.1, 5.2.1, 5.2.2, 9.6) ends the game once
    /// its move is made (released: 4.7), completed or not; otherwise the draws
    /// now claimable are said.
    fn settle_move(&mut self, t: u64) {
        let Some(game) = self.game.as_mut() else { return };
        if let Some((result, termination)) = game.forced_end() {
            self.clock_of_last_move(t);
            self.end_game(t, result, termination);
            return;
        }
        let ply = game.ply();
        let fresh: Vec<DrawReason> = game
            .claimable()
            .into_iter()
            .filter(|r| !game.claimed.contains(&(ply, *r)))
            .collect();
        game.claimed.extend(fresh.iter().map(|r| (ply, *r)));
        for reason in fresh {
            self.emit(t, EventKind::DrawClaimable { reason });
        }
    }

    pub(super) fn take_back(&mut self, to_ply: usize, t: u64) {
        let Some(game) = self.game.as_mut() else { return };
        if to_ply >= game.ply() {
            return;
        }
        game.truncate(to_ply);
        let turn = game.current().turn();
        self.emit_with(t, |c| EventKind::Takeback {
            to_ply: to_ply as u32,
            fen: c.game.as_ref().map(Game::fen).unwrap_or_default(),
        });
        self.hands.touches.retract(turn);
    }

    pub(super) fn complete(&mut self, ply: usize, t: u64) {
        let Some(game) = self.game.as_mut() else { return };
        if ply == 0 || ply > game.ply() || game.moves[ply - 1].completed {
            return;
        }
        game.moves[ply - 1].completed = true;
        let side = game.positions[ply - 1].turn();
        self.emit(
            t,
            EventKind::MoveCompleted {
                ply: ply as u32,
                side: side.into(),
            },
        );
    }
}
