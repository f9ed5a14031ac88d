//! Decisions that undo what a game's end settled, or end a game under way, are
//! made by `ctl` only with `--force`: without it the call is not made, and `ctl`
//! says what it would change (issue 48: a mated game reopened without a word).

use super::format::BoardView;

/// A decision `ctl` is asked to make.
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

/// What `change` would change on `b` that `--force` must confirm, in words;
/// `None` when it needs no confirmation.
pub fn what_it_changes(b: &BoardView, change: Change) -> Option<String> {
    // Its result, not its status: a finished game's board may be away.
    let over = !b.result.is_empty();
    let board = format!("board {}", b.number);
    let game = format!(
        "{} ({}, {})",
        b.result,
        plural(b.moves, "ply", "plies"),
        players(b)
    );
    match change {
        Change::Reinstate(ply) if over => Some(if (ply as usize) < b.moves {
            format!(
                "{board}'s game is over, {game}: taking it back to ply {ply} clears its result and drops plies {}-{}",
                ply + 1,
                b.moves
            )
        } else {
            format!("{board}'s game is over, {game}: taking it back clears its result and reopens it")
        }),
        Change::Position if over => Some(format!(
            "{board}'s game is over, {game}: a position of that game reopens it there and clears its result"
        )),
        Change::NewGame if !over && b.moves > 0 => Some(format!(
            "{board}'s game is under way ({}, {}): a new game ends it `*` (abandoned)",
            plural(b.moves, "ply", "plies"),
            players(b)
        )),
        Change::Result(new) if over => Some(format!(
            "{board}'s game is over already, {game}: this changes its result to {new}"
        )),
        _ => None,
    }
}

/// The refusal `ctl` gives without `--force`.
pub fn refusal(what: &str) -> String {
    format!("{what}; nothing was changed (run it again with --force to do it)")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn players(b: &BoardView) -> String {
    format!("{} - {}", b.white, b.black)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(status: &str, result: &str, moves: usize) -> BoardView {
        BoardView {
            number: 3,
            status: status.into(),
            result: result.into(),
            moves,
            white: "Ana".into(),
            black: "Bo".into(),
            ..BoardView::default()
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
