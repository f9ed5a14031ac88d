//! Decisions that undo what a game's end settled, or end a game under way, are
//! made only when the arbiter confirms them (`ctl ... --force`, the console's
//! second question): without it the call is not made, and the words say what it
//! would change (issue 48: a mated game reopened without a word). One function
//! for both doors, so they ask in the same words.

use super::{Decision, Snapshot};

/// The game a decision would change, as the doors see it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GameAtHand<'a> {
    pub number: u32,
    /// `1-0`, ...; empty while the game goes on.
    pub result: &'a str,
    pub plies: usize,
    pub white: &'a str,
    pub black: &'a str,
}

impl<'a> GameAtHand<'a> {
    /// A board's game as its snapshot shows it.
    pub fn of(s: &'a Snapshot) -> GameAtHand<'a> {
        GameAtHand {
            number: s.board_number,
            result: &s.result,
            plies: s.moves.len(),
            white: &s.white,
            black: &s.black,
        }
    }
}

/// A decision that may need confirming.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change<'a> {
    /// `reinstate BOARD PLY`.
    Reinstate(u32),
    /// `position BOARD FEN`.
    Position,
    /// `new-game BOARD`.
    NewGame,
    /// `result BOARD RESULT`.
    Result(&'a str),
}

impl<'a> Change<'a> {
    /// The change a command would make, for those that may need confirming.
    pub fn of(cmd: &'a Decision) -> Option<Change<'a>> {
        match cmd {
            Decision::Reinstate(p) => Some(Change::Reinstate(*p)),
            Decision::SetPosition(_) => Some(Change::Position),
            Decision::NewGame(_) => Some(Change::NewGame),
            Decision::SetResult(r) | Decision::SetResultWith(r, _) => Some(Change::Result(r)),
            _ => None,
        }
    }
}

/// What `change` would change on `b` that `--force` must confirm, in words;
/// `None` when it needs no confirmation.
pub fn what_it_changes(b: &GameAtHand, change: Change) -> Option<String> {
    // Its result, not its status: a finished game's board may be away.
    let over = !b.result.is_empty();
    let board = format!("board {}", b.number);
    let game = format!(
        "{} ({}, {})",
        b.result,
        plural(b.plies, "ply", "plies"),
        players(b)
    );
    match change {
        Change::Reinstate(ply) if over => Some(if (ply as usize) < b.plies {
            format!(
                "{board}'s game is over, {game}: taking it back to ply {ply} clears its result and drops plies {}-{}",
                ply + 1,
                b.plies
            )
        } else {
            format!("{board}'s game is over, {game}: taking it back clears its result and reopens it")
        }),
        Change::Position if over => Some(format!(
            "{board}'s game is over, {game}: a position of that game reopens it there and clears its result"
        )),
        Change::NewGame if !over && b.plies > 0 => Some(format!(
            "{board}'s game is under way ({}, {}): a new game ends it `*` (abandoned)",
            plural(b.plies, "ply", "plies"),
            players(b)
        )),
        Change::Result(new) if over => Some(format!(
            "{board}'s game is over already, {game}: this changes its result to {new}"
        )),
        _ => None,
    }
}

/// The refusal `ctl` gives without `--force` (the console asks instead).
pub fn refusal(what: &str) -> String {
    format!("{what}; nothing was changed (run it again with --force to do it)")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn players(b: &GameAtHand) -> String {
    format!("{} - {}", b.white, b.black)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A board's game (its status does not count: a finished game's board
    /// may be away).
    fn board(_status: &str, result: &'static str, plies: usize) -> GameAtHand<'static> {
        GameAtHand {
            number: 3,
            result,
            plies,
            white: "Ana",
            black: "Bo",
        }
    }

    #[test]
    fn a_finished_game_is_changed_only_with_force_and_the_words_say_how() {
        let mated = board("finished", "0-1", 4);
        assert_eq!(
            what_it_changes(&mated, Change::Reinstate(2)).as_deref(),
            Some(
                "board 3's game is over, 0-1 (4 plies, Ana - Bo): taking it back to ply 2 clears its result and drops plies 3-4"
            )
        );
        assert!(what_it_changes(&mated, Change::Position).is_some());
        assert_eq!(
            what_it_changes(&mated, Change::Result("1-0")).as_deref(),
            Some("board 3's game is over already, 0-1 (4 plies, Ana - Bo): this changes its result to 1-0")
        );
        // A new game after the end changes nothing of it.
        assert_eq!(what_it_changes(&mated, Change::NewGame), None);
    }

    #[test]
    fn a_game_under_way_is_ended_only_with_force() {
        let playing = board("playing", "", 23);
        // Away from its line, a finished game is still finished.
        assert!(what_it_changes(&board("disconnected", "1-0", 23), Change::Reinstate(2)).is_some());
        assert_eq!(
            what_it_changes(&playing, Change::NewGame).as_deref(),
            Some("board 3's game is under way (23 plies, Ana - Bo): a new game ends it `*` (abandoned)")
        );
        // Decisions the arbiter makes on a game under way need no confirmation.
        for c in [Change::Reinstate(2), Change::Position, Change::Result("1-0")] {
            assert_eq!(what_it_changes(&playing, c), None, "{c:?}");
        }
        // A game with no move yet is no game to lose.
        assert_eq!(what_it_changes(&board("playing", "", 0), Change::NewGame), None);
    }
}
