//! The doors' side of the rule book ([`crate::rules::book`]): the game at hand
//! as a board's snapshot shows it. The board's task asks the book for every
//! decision from every door; the console asks it too, to put the question to
//! the arbiter before it sends the decision confirmed.

pub use crate::rules::book::{GameAtHand, needs_force, refusal, refused};

use super::Snapshot;

/// A board's game as its snapshot shows it; `next_in_same_round`: the board's
/// next game is of the same round (the board's task knows it; a door that does
/// not, says `true`, the cautious answer).
pub fn at_hand(s: &Snapshot, next_in_same_round: bool) -> GameAtHand<'_> {
    GameAtHand {
        number: s.board_number,
        result: &s.result,
        plies: s.moves.len(),
        white: &s.white,
        black: &s.black,
        round: &s.round,
        next_in_same_round,
    }
}
