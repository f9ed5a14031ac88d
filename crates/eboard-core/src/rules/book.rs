//! The rule book of an arbiter's decisions at the doors: which decisions undo
//! what a game's end settled, or end a game under way, and so are made only
//! when the arbiter confirms them (`ctl ... --force`, the console's second
//! question, `force` in a D-Bus `Decide` call or an MQTT command). It is a
//! function of the decision and the game at hand, asked by the board's task
//! for every decision from every door: the same decision on the same game gets
//! the same answer, in the same words, whichever door it came through.
//!
//! What a decision then does to the game is [`Core::arbiter`](super::Core::arbiter)'s;
//! whether and how it is undone is [`super::undo`]'s.

use super::Decision;

/// The game a decision would change, as the board's task sees it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GameAtHand<'a> {
    /// The board's number.
    pub number: u32,
    /// `1-0`, ...; empty while the game goes on.
    pub result: &'a str,
    pub plies: usize,
    pub white: &'a str,
    pub black: &'a str,
    /// The game's round (empty: none).
    pub round: &'a str,
    /// Whether the board's next game is of the same round as this one (no
    /// `ctl round` since it began): a new game then takes this one's place in
    /// the round's results.
    pub next_in_same_round: bool,
}

/// What `decision` would change on `game` that the arbiter must confirm, in
/// words; `None` when it needs no confirmation.
pub fn needs_force(decision: &Decision, game: &GameAtHand) -> Option<String> {
    // Its result, not its status: a finished game's board may be away.
    let over = !game.result.is_empty();
    let board = format!("board {}", game.number);
    let at_hand = format!(
        "{} ({}, {})",
        game.result,
        plural(game.plies, "ply", "plies"),
        players(game)
    );
    match decision {
        Decision::Reinstate(ply) if over => Some(if (*ply as usize) < game.plies {
            format!(
                "{board}'s game is over, {at_hand}: taking it back to ply {ply} clears its result and drops plies {}-{}",
                ply + 1,
                game.plies
            )
        } else {
            format!("{board}'s game is over, {at_hand}: taking it back clears its result and reopens it")
        }),
        Decision::SetPosition(_) if over => Some(format!(
            "{board}'s game is over, {at_hand}: a position of that game reopens it there and clears its result"
        )),
        Decision::NewGame(_) if !over && game.plies > 0 => Some(format!(
            "{board}'s game is under way ({}, {}): a new game ends it `*` (abandoned)",
            plural(game.plies, "ply", "plies"),
            players(game)
        )),
        Decision::NewGame(_) if over && game.next_in_same_round => Some(format!(
            "{board}'s game is over, {at_hand}: a new game {}takes its place in the round's results (the game stays in the broadcast folder; `ctl round N` starts the next round instead)",
            if game.round.is_empty() {
                String::new()
            } else {
                format!("of round {} ", game.round)
            }
        )),
        Decision::SetResult(new, _) if over => Some(format!(
            "{board}'s game is over already, {at_hand}: this changes its result to {new}"
        )),
        _ => None,
    }
}

/// Why a door refuses `decision` on `game` whatever the arbiter confirms;
/// `None` when it does not. (Only at the doors: a journal written before the
/// rule is applied as it was.)
pub fn refused(decision: &Decision, game: &GameAtHand) -> Option<String> {
    match decision {
        Decision::SetTimeControl { .. } if !game.result.is_empty() && game.plies > 0 => Some(format!(
            "the game has {} plies and is over: a time control is set before a game's first move; set it once the next game begins (the pieces set up again, or a new game)",
            game.plies
        )),
        _ => None,
    }
}

/// The refusal of a decision that needs confirming and was not confirmed.
pub fn refusal(what: &str) -> String {
    format!("{what}; nothing was changed (run it again with --force to do it)")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn players(g: &GameAtHand) -> String {
    format!("{} - {}", g.white, g.black)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{ClockMs, FenPosition, GameResult, GivenTimeControl, Seconds, Side, TerminationWords};

    fn game(result: &'static str, plies: usize, next_in_same_round: bool) -> GameAtHand<'static> {
        GameAtHand {
            number: 3,
            result,
            plies,
            white: "Ana",
            black: "Bo",
            round: "2",
            next_in_same_round,
        }
    }

    /// Every decision on every kind of game: those that reopen a finished
    /// game, replace it in its round, or end one under way need confirming;
    /// nothing else does.
    #[test]
    fn every_decision_on_every_game() {
        let decisions = [
            Decision::Reinstate(2),
            Decision::Reinstate(4),
            Decision::SetPosition(FenPosition::parse("8/8/8/8/8/8/8/K1k5 w - - 0 1").unwrap()),
            Decision::NewGame(None),
            Decision::SetResult(GameResult::WhiteWins, None),
            Decision::SetResult(
                GameResult::WhiteWins,
                Some(TerminationWords::parse("time forfeit").unwrap()),
            ),
            Decision::SetClock(ClockMs::new(1000).unwrap(), ClockMs::new(1000).unwrap()),
            Decision::AddTime(Side::White, Seconds::new(60).unwrap()),
            Decision::Undo { force: false },
            Decision::SetPlayers("A".into(), "B".into()),
            Decision::ShowText("HI".into(), 3),
        ];
        let games = [
            ("mated, same round", game("0-1", 4, true)),
            ("mated, next round set", game("0-1", 4, false)),
            ("under way", game("", 23, true)),
            ("not begun", game("", 0, true)),
        ];
        for (what, g) in games {
            for d in &decisions {
                let got = needs_force(d, &g);
                let want = match (what, d) {
                    ("mated, same round", Decision::NewGame(_)) => true,
                    ("mated, next round set", Decision::NewGame(_)) => false,
                    (w, Decision::Reinstate(_) | Decision::SetPosition(_) | Decision::SetResult(..)) => {
                        w.starts_with("mated")
                    }
                    ("under way", Decision::NewGame(_)) => true,
                    _ => false,
                };
                assert_eq!(got.is_some(), want, "{what}: {d:?}: {got:?}");
            }
        }
        // A time control on a finished game is refused whatever is
        // confirmed; before its first move, and under way (the core refuses
        // that one), the book says nothing.
        let tc = Decision::SetTimeControl {
            spec: GivenTimeControl::parse("90+30").unwrap(),
            mode: crate::rules::ClockMode::Drive,
        };
        assert!(refused(&tc, &game("0-1", 4, true)).is_some());
        assert!(refused(&tc, &game("", 23, true)).is_none());
        assert!(refused(&tc, &game("", 0, true)).is_none());
        assert!(refused(&Decision::NewGame(None), &game("0-1", 4, true)).is_none());
        assert_eq!(
            needs_force(&Decision::Reinstate(2), &game("0-1", 4, true)).as_deref(),
            Some(
                "board 3's game is over, 0-1 (4 plies, Ana - Bo): taking it back to ply 2 clears its result and drops plies 3-4"
            )
        );
        assert_eq!(
            needs_force(&Decision::NewGame(None), &game("1-0", 41, true)).as_deref(),
            Some(
                "board 3's game is over, 1-0 (41 plies, Ana - Bo): a new game of round 2 takes its place in the round's results (the game stays in the broadcast folder; `ctl round N` starts the next round instead)"
            )
        );
    }
}
