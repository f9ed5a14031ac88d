//! An arbiter's decisions about the game record. They are part of the record like
//! the moves: the daemon writes every accepted one to the board's sensor log as an
//! `arbiter` record (`docs/SENSOR-LOG.md`), and resume and `replay` apply
//! them to the rules core exactly as it was live.
//!
//! What a [`Decision`] (`super::decision`: the value every door builds, its
//! payloads checked there) does to the game and its clock.

use shakmaty::{CastlingMode, Chess};

use super::{ClockMode, Core, Decision, Game, GameResult, Termination};

/// Why a board refuses [`Decision::SetLichessRound`].
pub const NOT_A_BOARDS: &str = "SetLichessRound is the daemon's decision, not a board's: use `eboard-bridge ctl lichess ROUND ID` (D-Bus Manager1.SetLichessRound)";

/// Why a decision was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    NoGame(String),
    /// A change that needs a game without moves (a time control).
    #[error("{0}")]
    GameUnderWay(String),
    /// An undo with nothing it may take back (what to do instead is said).
    #[error("{0}")]
    NotUndone(String),
}

/// A forced end in words, with its article.
fn forced_words(termination: Termination) -> &'static str {
    match termination {
        Termination::Checkmate => "checkmate (5.1.1)",
        Termination::Stalemate => "stalemate (5.2.1)",
        Termination::InsufficientMaterial => "dead, no checkmate possible (5.2.2)",
        Termination::FivefoldRepetition => "on the board for the fifth time (9.6.1)",
        Termination::SeventyfiveMoves => "75 moves past a capture or a pawn move (9.6.2)",
        _ => "over",
    }
}

impl Core {
    /// Reports an accepted decision (an `arbiter` event, the value itself),
    /// whatever it changes: the daemon and `replay` call it for every
    /// `arbiter` record.
    pub fn arbiter_call(&mut self, decision: &Decision, by: Option<String>, t_us: u64) {
        self.advance(t_us);
        self.emit(
            t_us,
            super::EventKind::Arbiter {
                decision: decision.clone(),
                by,
            },
        );
    }

    /// Applies an arbiter's decision at `t_us`. A refused decision changes nothing.
    ///
    /// - `NewGame`: a new game; one under way with moves ends `*` (`abandoned`) and
    ///   is kept.
    /// - `SetPosition`: the game goes on from the position given. A position of the
    ///   game itself (7.5.1, the position before an irregularity) takes the game
    ///   back to it. Any other (the position the board shows after the record lost
    ///   track of it, a position corrected by hand) cannot follow the moves
    ///   recorded in one game score: the game under way, if unfinished, ends `*`
    ///   with the termination `position_set` (it was not abandoned: play goes on)
    ///   and is kept, and a game starts from the position. An empty FEN is refused
    ///   (it would be `NewGame`).
    pub fn arbiter(&mut self, decision: &Decision, t_us: u64) -> Result<(), Refused> {
        match decision {
            Decision::Undo { force } => return self.undo(*force, t_us),
            Decision::SetLichessRound(..) => return Err(Refused::InvalidArgument(NOT_A_BOARDS.into())),
            _ => {}
        }
        if !decision.is_rules() {
            // The daemon's (players, tags, a text), or a newer daemon's call
            // in a journal: the record and the time only, and nothing an undo
            // would take back.
            self.advance(t_us);
            return Ok(());
        }
        let taken = self.before_decision(decision, t_us);
        self.decide(decision, t_us)?;
        self.end_if_forced(t_us);
        self.after_decision(decision, taken, t_us);
        Ok(())
    }

    /// A game a decision left open on a position that ends it (a mate, a
    /// stalemate, a dead position: 5.1.1, 5.2.1, 5.2.2, 9.6; a ply of a mated
    /// game reinstated, a mated position set) ends as that position says: no
    /// decision leaves a mate open.
    fn end_if_forced(&mut self, t_us: u64) {
        let Some(game) = self.game.as_ref().filter(|g| !g.is_over()) else {
            return;
        };
        if let Some((result, termination)) = game.forced_end() {
            self.end_game(t_us, result, termination);
        }
    }

    /// Refuses a result other than the one the game's position forces (a mate
    /// is 1-0 or 0-1 whatever anyone says: 5.1.1), saying what to do instead.
    fn forced_stands(&self, result: GameResult) -> Result<(), Refused> {
        let Some((forced, termination)) = self.game.as_ref().and_then(Game::forced_end) else {
            return Ok(());
        };
        if result == forced {
            return Ok(());
        }
        Err(Refused::InvalidArgument(format!(
            "the game's position is {}: its result is {forced}; to play on, reinstate an earlier ply (`ctl reinstate`)",
            forced_words(termination)
        )))
    }

    /// A decision other than an undo, applied.
    fn decide(&mut self, decision: &Decision, t_us: u64) -> Result<(), Refused> {
        match decision {
            Decision::NewGame(start) => {
                let (pos, mode) = match start {
                    None => (Chess::default(), CastlingMode::Standard),
                    Some(p) => {
                        let (pos, mode) = p.position();
                        (pos.clone(), mode)
                    }
                };
                self.arbiter_new_game(pos, mode, t_us);
                Ok(())
            }
            Decision::SetPosition(p) => {
                let (pos, mode) = p.position();
                let earlier = self.game.as_ref().and_then(|g| {
                    let wanted = super::game_fen(pos);
                    let strip = |f: &str| f.rsplitn(3, ' ').nth(2).map(str::to_string);
                    g.positions
                        .iter()
                        .rposition(|p| strip(&super::game_fen(p)) == strip(&wanted))
                });
                match earlier {
                    Some(ply) => self.arbiter_reinstate(ply, t_us),
                    None => {
                        self.restart_from(pos.clone(), mode, Termination::PositionSet, t_us);
                        Ok(())
                    }
                }
            }
            Decision::Reinstate(ply) => self.arbiter_reinstate(*ply as usize, t_us),
            Decision::SetResult(r, words) => {
                self.forced_stands(*r)?;
                self.arbiter_result_with(*r, words.as_ref().map(|w| w.as_str().to_string()), t_us)
            }
            Decision::SetTimeControl { spec, mode } => {
                self.set_time_control(Some(spec.control().clone()), *mode == ClockMode::Drive, t_us)
            }
            Decision::SetClock(w, b) => self.arbiter_set_clock(w.ms(), b.ms(), t_us),
            Decision::AddTime(side, s) => self.arbiter_add_time(*side, s.get(), t_us),
            Decision::Undo { force } => self.undo(*force, t_us),
            Decision::SetPlayers(..)
            | Decision::SetTags(_)
            | Decision::SetPairing(..)
            | Decision::ShowText(..)
            | Decision::Unknown { .. } => Ok(()),
            // Refused by `arbiter`.
            Decision::SetLichessRound(..) => Err(Refused::InvalidArgument(NOT_A_BOARDS.into())),
        }
    }
}
