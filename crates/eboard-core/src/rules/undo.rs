//! An arbiter's last decision on a board, taken back ([`Decision::Undo`]).
//!
//! Before each decision the core keeps what the decision changes: the game as it
//! was (a take-back, a result, a position of the game), or both clocks (time
//! added, clocks set). Undo puts it back, and is itself a decision, journaled
//! like the others: resume and `replay` apply the same records and so keep the
//! same point to go back to, and an undo undone gives the decision back.
//!
//! What is not taken back is said, with what to do instead: a new game (the
//! game before it is kept as it ended), a time control (set the one wanted).
//! Plies recorded since the decision are dropped by its undo only when the
//! arbiter says so (`force`): nothing recorded is lost without a word.

use shakmaty::Position;

use super::{Core, Decision, EventKind, Game, Refused};
use crate::clock::control::MAX_SHOWN_MS;

/// What undoing the last accepted decision would put back.
#[derive(Debug, Clone)]
pub(super) struct UndoPoint {
    /// The number of the game the decision was taken on.
    game: u32,
    /// The moves (UCI) the game had right after the decision: a ply beyond
    /// them was recorded since.
    after: Vec<String>,
    before: Before,
}

#[derive(Debug, Clone)]
enum Before {
    /// The game as it was before the decision, restored whole.
    Record(Box<Game>),
    /// Both clocks (white's, black's ms) before the decision and as it set
    /// them: undone, the difference is given back to each side.
    Clocks { before: (i64, i64), after: (i64, i64) },
    /// A decision that is not taken back: why, and what to do instead.
    Not(&'static str),
}

const NEW_GAME: &str = "a new game is not taken back: the game before it is kept as it ended \
(its record is in the broadcast folder); to play on from its position, set it with `ctl position`";
const TIME_CONTROL: &str = "a time control is not taken back: set the one wanted with `ctl time-control`";

/// What a decision is about to change, taken before it is applied.
pub(super) struct Taken {
    game: Option<Game>,
    clocks: Option<(i64, i64)>,
}

impl Core {
    /// What `decision` may change, before it is applied at `t`.
    pub(super) fn before_decision(&mut self, decision: &Decision, t: u64) -> Taken {
        self.advance(t);
        let clocks = matches!(decision, Decision::SetClock(..) | Decision::AddTime(..))
            .then(|| self.times_now(t))
            .flatten();
        Taken {
            game: self.game.clone(),
            clocks,
        }
    }

    /// Keeps what undoing `decision`, just accepted at `t`, puts back.
    pub(super) fn after_decision(&mut self, decision: &Decision, taken: Taken, t: u64) {
        let Some(now) = &self.game else {
            self.undo = None;
            return;
        };
        let same = taken.game.as_ref().is_some_and(|g| g.number == now.number);
        let before = match decision {
            Decision::Undo { .. }
            | Decision::SetPlayers(..)
            | Decision::SetTags(_)
            | Decision::SetPairing(..)
            | Decision::ShowText(..)
            | Decision::SetLichessRound(..)
            | Decision::Unknown { .. } => return,
            Decision::NewGame(_) => Before::Not(NEW_GAME),
            Decision::SetPosition(_) if !same => Before::Not(NEW_GAME),
            Decision::SetTimeControl { .. } => Before::Not(TIME_CONTROL),
            Decision::SetClock(..) | Decision::AddTime(..) => match (taken.clocks, self.times_now(t)) {
                (Some(before), Some(after)) => Before::Clocks { before, after },
                // Refused before it came here: no clock, no times.
                _ => Before::Not("the clocks were not known: set them with `ctl set-clock`"),
            },
            Decision::SetPosition(_) | Decision::Reinstate(_) | Decision::SetResult(..) => match taken.game {
                Some(g) if same => Before::Record(Box::new(g)),
                _ => Before::Not(NEW_GAME),
            },
        };
        self.undo = Some(UndoPoint {
            game: now.number,
            after: ucis(now),
            before,
        });
    }

    /// Takes back the last decision accepted on the board (see the module).
    pub(super) fn undo(&mut self, force: bool, t: u64) -> Result<(), Refused> {
        self.advance(t);
        let Some(point) = self.undo.clone() else {
            return Err(Refused::NotUndone(
                "no decision of the arbiter's on this board's recording to take back".into(),
            ));
        };
        let Some(now) = &self.game else {
            return Err(Refused::NoGame("no game under way".into()));
        };
        if now.number != point.game {
            return Err(Refused::NotUndone(format!(
                "the last decision was on game {}, and game {} has started since: it is not taken back",
                point.game, now.number
            )));
        }
        match point.before {
            Before::Not(why) => Err(Refused::NotUndone(why.into())),
            Before::Clocks { before, after } => {
                let (w, b) = self.times_now(t).ok_or_else(|| {
                    Refused::NoGame("no clock report yet: the times to give back to are not known".into())
                })?;
                let max = MAX_SHOWN_MS as i64;
                let back = (
                    (w + before.0 - after.0).clamp(0, max),
                    (b + before.1 - after.1).clamp(0, max),
                );
                self.set_times(back.0, back.1, t)?;
                self.undo = Some(UndoPoint {
                    game: point.game,
                    after: point.after,
                    before: Before::Clocks {
                        before: (w, b),
                        after: back,
                    },
                });
                Ok(())
            }
            Before::Record(was) => {
                // Plies recorded since the decision that the game put back
                // does not have (the same moves shown again are not lost).
                let n = now.ply();
                let since = now
                    .moves
                    .iter()
                    .zip(&point.after)
                    .take_while(|(m, u)| m.uci == **u)
                    .count();
                let kept = since.max(common_plies(now, &was));
                if n > kept && !force {
                    let plies = if n == kept + 1 {
                        format!("ply {n} was")
                    } else {
                        format!("plies {}-{n} were", kept + 1)
                    };
                    return Err(Refused::GameUnderWay(format!(
                        "{plies} recorded since the decision: taking it back drops them (undo with force to do it)"
                    )));
                }
                let Some(current) = self.game.take() else {
                    return Err(Refused::NoGame("no game under way".into()));
                };
                let replaced = self.restore(current, *was, t);
                self.undo = Some(UndoPoint {
                    game: point.game,
                    after: self.game.as_ref().map(ucis).unwrap_or_default(),
                    before: Before::Record(Box::new(replaced)),
                });
                Ok(())
            }
        }
    }

    /// Puts `was` back as the game under way in place of `now` (the same game,
    /// as it was before a decision), and hands `now` back. Its events say what
    /// changed: a take-back to the plies both share, the plies put back, the
    /// result given back.
    fn restore(&mut self, now: Game, was: Game, t: u64) -> Game {
        self.game = Some(was);
        self.under_way.clear();
        self.line.resync = None;
        let Some(g) = &self.game else { return now };
        let common = common_plies(&now, g);
        let mut events = Vec::new();
        if now.ply() > common {
            events.push(EventKind::Takeback {
                to_ply: common as u32,
                fen: super::game_fen(&g.positions[common]),
            });
        }
        for ply in common + 1..=g.ply() {
            let m = &g.moves[ply - 1];
            events.push(EventKind::Move {
                ply: ply as u32,
                san: m.san.clone(),
                uci: m.uci.clone(),
                fen: super::game_fen(&g.positions[ply]),
                side: g.positions[ply - 1].turn().into(),
                inferred: m.inferred,
            });
            if m.completed {
                events.push(EventKind::MoveCompleted {
                    ply: ply as u32,
                    side: g.positions[ply - 1].turn().into(),
                });
            }
        }
        let over = g.result;
        if let Some((result, termination)) = over {
            if now.result != over {
                events.push(EventKind::GameEnd { result, termination });
            }
        }
        for e in events {
            self.emit(t, e);
        }
        self.last_change = t;
        if over.is_some() {
            // As at the game's end: the board as it is now is the end's.
            self.resolve(t);
            self.irregular = Some(super::irregular::Irregular {
                board: self.real_board(),
                kind: None,
            });
        } else {
            self.evaluate(t);
        }
        now
    }
}

/// A game's moves, as UCI.
fn ucis(g: &Game) -> Vec<String> {
    g.moves.iter().map(|m| m.uci.clone()).collect()
}

/// How many plies two records of a game share from the start.
fn common_plies(a: &Game, b: &Game) -> usize {
    a.moves
        .iter()
        .zip(&b.moves)
        .take_while(|(x, y)| x.uci == y.uci)
        .count()
}
