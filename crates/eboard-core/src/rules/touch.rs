//! Touches in a turn and what the Laws make of them (Art. 4.3, 4.4, 4.7).
//!
//! The core never rejects a legal move because of touch-move: it records the move
//! and raises a flag that the opponent could claim.

use super::matching::capture_target;
use super::record::Tentative;
use super::{Article, Core, EventKind};
use shakmaty::{Chess, Color, Move, Piece, Position, Role, Square};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    pub side: Color,
    pub square: Square,
    pub piece: Piece,
    pub returned: bool,
}

/// What the hands on the board are doing: lifts not yet placed, the last
/// placement, and the touches of the turn under way (touch-move).
#[derive(Debug, Default)]
pub(super) struct Hands {
    pub(super) pending: Vec<PendingLift>,
    /// The last placement (real square, piece, time), to tell slides from touches.
    pub(super) last_place: Option<(Square, Piece, u64)>,
    pub(super) touches: TouchLog,
}

impl Hands {
    /// A new game: nothing the hands did before counts.
    pub(super) fn new_game(&mut self) {
        self.pending.clear();
        self.touches = TouchLog::default();
    }
}

/// The touches of the turn under way, and the placements seen in it.
#[derive(Debug, Clone, Default)]
pub struct TouchLog {
    touches: Vec<Touch>,
    placed: Vec<(Square, Piece)>,
    /// The touches of the last move made, kept until it can no longer be amended.
    made: Vec<Touch>,
}

impl TouchLog {
    /// Adds a touch; true when it is that side's first in this turn.
    pub fn push(&mut self, t: Touch) -> bool {
        let first = !self.touches.iter().chain(&self.made).any(|x| x.side == t.side);
        self.touches.push(t);
        first
    }

    pub fn placed(&mut self, square: Square, piece: Piece) {
        self.placed.push((square, piece));
    }

    /// A move was made: the next turn starts (touches of `next` already made stay).
    pub fn next_turn(&mut self, next: Color) {
        self.made.clear();
        self.made.extend(self.touches.iter().filter(|t| t.side != next));
        self.touches.retain(|t| t.side == next);
        self.placed.clear();
    }

    /// The move made by `mover` was amended: the touches of that move, and the
    /// touches of `mover`'s pieces since it was made (taken for the opponent's then,
    /// shown now to be the mover's), are the mover's. Returns the squares, in order.
    pub fn amend(&mut self, mover: Color) -> Vec<Square> {
        let mut all = std::mem::take(&mut self.made);
        all.extend(
            self.touches
                .iter()
                .filter(|t| t.piece.color == mover)
                .map(|t| Touch { side: mover, ..*t }),
        );
        self.touches.retain(|t| t.piece.color != mover);
        let squares = all.iter().map(|t| t.square).collect();
        self.made = all;
        self.placed.clear();
        squares
    }

    /// Plies were found that the board went through unseen (across a gap,
    /// between dumps): the touches seen meanwhile were given to the record's side
    /// to move, which may not have been the side that made them, and are
    /// forgotten (lifts not yet judged stay with the core).
    pub fn forget(&mut self) {
        self.touches.clear();
        self.made.clear();
        self.placed.clear();
    }

    /// A take-back: the side now to move keeps their touches (7.5.1: the touches of
    /// an illegal attempt still count for the move that replaces it).
    pub fn retract(&mut self, turn: Color) {
        self.touches.retain(|t| t.side == turn);
    }

    /// The flags the move `mv` by `mover` from `pos` raises.
    /// `legal` holds the legal moves of the position the move was played from.
    pub fn flags(&self, legal: &[Move], mv: &Move, mover: Color) -> Vec<(Article, Vec<Square>)> {
        // Nothing is allocated unless a flag is raised: this runs for every move.
        let mine = || self.touches.iter().filter(move |t| t.side == mover);
        let own = || mine().filter(move |t| t.piece.color == mover);
        let touched = || mine().map(|t| t.square).collect::<Vec<Square>>();
        let mut flags = Vec::new();

        // 4.4.2: the rook touched before the king, then castled with it.
        if let Move::Castle { king, rook } = *mv {
            let first_rook = own().position(|t| t.square == rook);
            let first_king = own().position(|t| t.square == king);
            if let Some(r) = first_rook {
                if first_king.is_none_or(|k| r < k) {
                    flags.push((Article::RookFirst, touched()));
                }
            }
        }
        // 4.4.1: king and rook touched, castling with that rook legal, not played.
        if let Some(k) = own().find(|t| t.piece.role == Role::King) {
            for r in own().filter(|t| t.piece.role == Role::Rook) {
                let castle = Move::Castle {
                    king: k.square,
                    rook: r.square,
                };
                if legal.contains(&castle) && *mv != castle {
                    flags.push((Article::KingAndRook, touched()));
                }
            }
        }
        if !flags.is_empty() {
            return flags;
        }
        // 4.4.4: a promotion piece stood on the promotion square, then another.
        if let Some(promoted) = mv.promotion() {
            let to = mv.to();
            if self.placed.iter().any(|(sq, p)| {
                *sq == to
                    && p.color == mover
                    && !matches!(p.role, Role::Pawn | Role::King)
                    && p.role != promoted
            }) {
                flags.push((Article::PromotionPiece, touched()));
            }
        }
        let first_own = own().next();
        let first_opp = mine().find(|t| t.piece.color != mover);
        // 4.3.3: pieces of both colours touched: capture the touched piece with the
        // touched piece if that is legal.
        if let (Some(a), Some(b)) = (first_own, first_opp) {
            let mut required = legal
                .iter()
                .filter(|m| m.from() == Some(a.square) && captured_square(m) == Some(b.square))
                .peekable();
            if required.peek().is_some() {
                if !required.any(|m| m == mv) {
                    flags.push((Article::BothColours, touched()));
                }
                return flags;
            }
        }
        // 4.3.1: the first own piece touched could have been moved, another was.
        if let Some(a) = first_own {
            if !lifts(mv, a.square) && legal.iter().any(|m| m.from() == Some(a.square)) {
                flags.push((Article::OwnPiece, touched()));
            }
        }
        // 4.3.2: the first opponent's piece touched could have been captured.
        if let Some(b) = first_opp {
            if captured_square(mv) != Some(b.square)
                && legal.iter().any(|m| captured_square(m) == Some(b.square))
            {
                flags.push((Article::OpponentsPiece, touched()));
            }
        }
        flags
    }
}

/// The article an amendment (a made move changed into another) raises.
pub fn amendment_article(_base: &Chess, was: &Move, now: &Move) -> Option<Article> {
    match (*was, *now) {
        // Rook first, then castled: 4.4.2 (the rook move was a legal move on its own).
        (
            Move::Normal {
                role: Role::Rook,
                from,
                ..
            },
            Move::Castle { rook, .. },
        ) if from == rook => Some(Article::RookFirst),
        // King on its castling square first (Chess960), then castled: part of one move.
        (
            Move::Normal {
                role: Role::King,
                from,
                ..
            },
            Move::Castle { king, .. },
        ) if from == king => None,
        // Another promotion piece on the same square.
        (
            Move::Normal {
                promotion: Some(_),
                to: a,
                ..
            },
            Move::Normal {
                promotion: Some(_),
                to: b,
                ..
            },
        ) if a == b => Some(Article::PromotionPiece),
        _ => Some(Article::Released),
    }
}

/// Whether a move lifts a piece from `sq` (its piece's square, and for castling
/// the rook's too).
fn lifts(m: &Move, sq: Square) -> bool {
    match *m {
        Move::Castle { king, rook } => sq == king || sq == rook,
        _ => m.from() == Some(sq),
    }
}

/// The square of the piece a move captures.
fn captured_square(m: &Move) -> Option<Square> {
    match *m {
        Move::Normal {
            capture: Some(_), to, ..
        } => Some(to),
        Move::EnPassant { from, to } => Some(Square::from_coords(to.file(), from.rank())),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct PendingLift {
    pub(super) square: Square,
    pub(super) piece: Piece,
    pub(super) at: u64,
}

impl Core {
    /// A board change. `change` is (board square, piece, is a lift).
    pub(super) fn changed(&mut self, t: u64, change: Option<(Square, Piece, bool)>) {
        if self.try_new_game(t, change.is_none()) {
            return;
        }
        let Some(game) = &self.game else { return };
        if game.is_over() {
            // After the end nothing is recorded; a board back at the final position
            // resolves what was reported (the irregular deadline reports a change).
            if game.current().board() == &self.real_board() {
                self.resolve(t);
            }
            return;
        }
        let orientation = game.orientation;
        if let Some((sq, piece, lift)) = change {
            let real = orientation.real(sq);
            if lift {
                // A lift from a square the piece slid onto a moment ago continues
                // the same touch.
                let sliding = self.hands.last_place.is_some_and(|(sq, p, at)| {
                    sq == real && p == piece && t.saturating_sub(at) < self.cfg.release_ms * 1000
                });
                // The opponent starting their turn makes the move the board shows;
                // a slide going on makes nothing (a board it crosses may look like
                // an earlier position and a move from it).
                if !sliding {
                    self.opponent_lift(real, piece, t);
                }
                if !sliding {
                    self.hands.pending.push(PendingLift {
                        square: real,
                        piece,
                        at: t,
                    });
                }
            } else {
                self.hands.last_place = Some((real, piece, t));
                // A reply set down on a move held back: that move was made, and
                // the lifts since it showed are the reply's.
                if self.held_goes_on() {
                    self.under_way.unhold();
                    self.commit(t);
                }
                self.hands.touches.placed(real, piece);
                // The piece back where it was lifted within the flicker threshold:
                // sensor noise, not a touch.
                let flicker = self.cfg.flicker_ms * 1000;
                if let Some(i) =
                    self.hands.pending.iter().rposition(|p| {
                        p.square == real && p.piece == piece && t.saturating_sub(p.at) <= flicker
                    })
                {
                    self.hands.pending.remove(i);
                } else {
                    // Lifts since a move held back showed wait for it to be made
                    // or changed: they are the reply's, or the mover's capture
                    // (a king lifted after a king step onto the centre is its
                    // own side's at once).
                    let game = self.game.as_ref();
                    let until = self
                        .under_way
                        .held
                        .filter(|h| !h.kings_hold && game.is_some_and(|g| g.ply() == h.base))
                        .map_or(u64::MAX, |h| h.at);
                    self.flush_touches_until(until, t);
                }
            }
        }
        self.evaluate(t);
    }

    /// Turns the lifts waiting out the flicker threshold into touches.
    pub(super) fn flush_touches(&mut self, t: u64) {
        self.flush_touches_until(u64::MAX, t);
    }

    /// Turns the lifts made up to `until` that wait out the flicker threshold
    /// into touches; later ones go on waiting.
    pub(super) fn flush_touches_until(&mut self, until: u64, t: u64) {
        if self.hands.pending.iter().all(|p| p.at > until) {
            return;
        }
        let board = self.real_board();
        // The later ones are kept at the front of the same list, in order.
        let mut pending = std::mem::take(&mut self.hands.pending);
        let mut kept = 0;
        for i in 0..pending.len() {
            let p = pending[i];
            if p.at > until {
                pending[kept] = p;
                kept += 1;
                continue;
            }
            let returned = board.piece_at(p.square) == Some(p.piece) && t > p.at;
            self.touch(p, returned);
        }
        pending.truncate(kept);
        self.hands.pending = pending;
    }

    pub(super) fn touch(&mut self, p: PendingLift, returned: bool) {
        let Some(game) = &self.game else { return };
        // A touch belongs to the player having the move: once a move is made, that
        // is the opponent (an amendment later gives the mover's pieces back to the
        // mover); while the board shows a move not yet made, its mover's pieces are
        // still theirs.
        // A king step onto the centre waits to be told from the start of a result
        // by kings: the other king lifted meanwhile is its own side's touch
        // (nobody else lifts a king).
        let kings_hold = |t: &Tentative| {
            t.kings_hold
                && p.at > t.at
                && p.piece.role == Role::King
                && game.positions[t.base].turn() != p.piece.color
        };
        let side = match (&self.under_way.tentative, &self.under_way.held) {
            (Some(t), _) if game.positions[t.base].turn() == p.piece.color => p.piece.color,
            (Some(t), _) | (None, Some(t)) if kings_hold(t) => p.piece.color,
            _ if self.amending(p.piece.color) => p.piece.color,
            _ => game.current().turn(),
        };
        let first = self.hands.touches.push(Touch {
            side,
            square: p.square,
            piece: p.piece,
            returned,
        });
        self.emit_with(p.at, |_| EventKind::Touch {
            side: side.into(),
            square: p.square,
            piece: p.piece,
            first,
            returned,
        });
    }

    /// The board shows the last move, not yet completed, changed by its mover
    /// `color` into another legal move.
    pub(super) fn amending(&self, color: Color) -> bool {
        let Some(game) = &self.game else { return false };
        let n = game.ply();
        if n == 0 || game.moves[n - 1].completed || game.positions[n - 1].turn() != color {
            return false;
        }
        let board = self.real_board();
        &board != game.current().board() && game.move_from(n - 1, self.real_hash(), &board).is_some()
    }

    /// The opponent of a move the board shows lifts a piece of their own: that move
    /// is made (the opponent starts their turn), and completed if there is no clock.
    pub(super) fn opponent_lift(&mut self, square: Square, piece: Piece, t: u64) {
        let Some(game) = &self.game else { return };
        if let Some(tent) = self.under_way.tentative {
            let base = &game.positions[tent.base];
            let mover = base.turn();
            if piece.color != mover && !(tent.kings_hold && piece.role == Role::King) {
                if capture_target(base, square) {
                    self.under_way.held = Some(tent);
                } else {
                    self.commit(t);
                }
            }
        }
        let Some(game) = &self.game else { return };
        if let Some(last) = game.moves.last() {
            let mover = game.positions[game.ply() - 1].turn();
            // Without a clock the opponent's touch completes the move.
            if !last.completed && piece.color != mover && !self.clk.seen && !game.is_over() {
                let ply = game.ply();
                self.complete(ply, t);
            }
        }
    }
}
