//! The pushes to lichess as `ctl` shows them: `Manager1.Lichess` read back
//! into each broadcast round's state, one line each under `ctl boards`, and
//! each board's game on lichess in `ctl boards --json`; and the ids `ctl
//! lichess ROUND ID [ID...]` takes.

use std::collections::HashMap;

use zbus::zvariant::OwnedValue;

use super::client::CtlError;
use super::format::{BoardView, local_time_of};
use crate::api::lichess::{GameStatus, RoundId, RoundStatus, boards_words, parse_ids};

/// The ids of `ctl lichess ROUND ID [ID...]`, each read by its argument's
/// parser (`off` as empty): none for `off` alone; `off` with ids, an id
/// twice or too many are the command line's mistakes.
pub fn ids_arg(ids: &[String]) -> Result<Vec<RoundId>, CtlError> {
    match ids {
        [off] if off.is_empty() => Ok(Vec::new()),
        _ if ids.iter().any(String::is_empty) => Err(CtlError::Usage(
            "`off` stands alone: ctl lichess ROUND off (or the round's ids, without it)".into(),
        )),
        _ => parse_ids(ids.iter().map(String::as_str)).map_err(CtlError::Usage),
    }
}

/// A board's game on lichess (`ctl boards --json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OnLichess {
    pub round: u32,
    /// The broadcast round's id.
    pub id: String,
    /// The round's state (`pushed`, `retrying`, ...).
    pub state: String,
    /// The moves lichess counted in the game.
    pub moves: u32,
    /// Why lichess refused the game, or the round (empty: nothing).
    pub error: String,
}

fn field<T>(f: &HashMap<String, OwnedValue>, name: &str) -> T
where
    T: TryFrom<OwnedValue> + Default,
{
    f.get(name)
        .and_then(|v| v.try_clone().ok())
        .and_then(|v| T::try_from(v).ok())
        .unwrap_or_default()
}

/// A broadcast round's state from its fields (the whole round's, from a
/// daemon older than `Parts`).
fn status(round: u32, f: &HashMap<String, OwnedValue>) -> RoundStatus {
    let games: Vec<(u32, u32, String, u32, String)> = field(f, "Games");
    let first_board: u32 = field(f, "FirstBoard");
    RoundStatus {
        round,
        id: field(f, "Id"),
        first_board: first_board.max(1),
        last_board: field(f, "LastBoard"),
        state: field(f, "State"),
        last_push_ms: field(f, "LastPushMs"),
        pushes: field(f, "Pushes"),
        games_accepted: field(f, "GamesAccepted"),
        games_refused: field(f, "GamesRefused"),
        games: games
            .into_iter()
            .map(|(board, index, name, moves, error)| GameStatus {
                board,
                index,
                name,
                moves,
                error,
            })
            .collect(),
        not_pushed: field(f, "NotPushed"),
        error: field(f, "Error"),
        next_try_ms: field(f, "NextTryMs"),
    }
}

/// The `Lichess` property's value, each broadcast round's state (by round,
/// then by boards).
pub fn statuses(value: OwnedValue) -> Vec<RoundStatus> {
    let Ok(map) = HashMap::<u32, HashMap<String, OwnedValue>>::try_from(value) else {
        return Vec::new();
    };
    let mut rounds: Vec<RoundStatus> = map
        .into_iter()
        .flat_map(|(round, f)| {
            let parts: Vec<HashMap<String, OwnedValue>> = field(&f, "Parts");
            if parts.is_empty() {
                vec![status(round, &f)]
            } else {
                parts.iter().map(|p| status(round, p)).collect()
            }
        })
        .collect();
    rounds.sort_by_key(|r| (r.round, r.first_board));
    rounds
}

/// One line a broadcast round, for under the boards' table: `lichess round 3
/// (AbCd1234): ...`, with its boards when the round has several
/// (`lichess round 3 (EfGh5678, boards 65 and up): ...`).
pub fn lines(rounds: &[RoundStatus]) -> String {
    let mut out = String::new();
    for r in rounds {
        let boards = boards_words(r.first_board, r.last_board);
        let mut line = if boards.is_empty() {
            format!("lichess round {} ({}): {}", r.round, r.id, r.state)
        } else {
            format!("lichess round {} ({}, {boards}): {}", r.round, r.id, r.state)
        };
        if r.last_push_ms > 0 {
            let moves: u32 = r.games.iter().map(|g| g.moves).sum();
            line += &format!(
                ", last pushed {}, {} game(s) accepted, {moves} move(s)",
                local_time_of(r.last_push_ms as u64 / 1000),
                r.games_accepted
            );
        }
        if r.state == "retrying" && r.next_try_ms > 0 {
            line += &format!(", next try {}", local_time_of(r.next_try_ms as u64 / 1000));
        }
        for g in r.games.iter().filter(|g| !g.error.is_empty()) {
            line += &format!("; board {} ({}) refused: {}", g.board, g.name, g.error);
        }
        if !r.not_pushed.is_empty() {
            line += &format!(
                "; not pushed: boards {}",
                crate::api::board_numbers(&r.not_pushed)
            );
        }
        if !r.error.is_empty() {
            line += &format!("; {}", r.error);
        }
        out += &line;
        out.push('\n');
    }
    out
}

/// Each board's game on lichess, from its round (`Round` tag `3.12` or `3`)
/// and, for a round over several broadcast rounds, the one its number goes to.
pub fn attach(boards: &mut [BoardView], rounds: &[RoundStatus]) {
    for b in boards {
        let round: Option<u32> = b.round.split('.').next().and_then(|r| r.trim().parse().ok());
        let takes = |r: &&RoundStatus| {
            r.first_board <= b.number.max(1) && (r.last_board == 0 || b.number <= r.last_board)
        };
        let Some(r) = rounds.iter().filter(|r| Some(r.round) == round).find(takes) else {
            continue;
        };
        // The board's last game of the round (the one under way).
        let game = r
            .games
            .iter()
            .filter(|g| g.board == b.number)
            .max_by_key(|g| g.index);
        b.lichess = Some(OnLichess {
            round: r.round,
            id: r.id.clone(),
            state: r.state.clone(),
            moves: game.map_or(0, |g| g.moves),
            error: match game {
                Some(g) if !g.error.is_empty() => g.error.clone(),
                _ if r.not_pushed.contains(&b.number) => {
                    "not pushed: past the games a lichess round takes".into()
                }
                _ => r.error.clone(),
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round() -> RoundStatus {
        RoundStatus {
            round: 3,
            id: "AbCd1234".into(),
            first_board: 1,
            last_board: 0,
            state: "pushed".into(),
            last_push_ms: 1_700_000_000_000,
            pushes: 5,
            games_accepted: 1,
            games_refused: 1,
            games: vec![
                GameStatus {
                    board: 1,
                    index: 1,
                    name: "A - B".into(),
                    moves: 41,
                    error: String::new(),
                },
                GameStatus {
                    board: 2,
                    index: 1,
                    name: "C - D".into(),
                    moves: 0,
                    error: "No move found: Pawn a8".into(),
                },
            ],
            not_pushed: vec![65],
            error: String::new(),
            next_try_ms: 0,
        }
    }

    #[test]
    fn the_property_read_back_and_a_line_a_round() {
        let p = crate::bus::lichess::property(&[round()]);
        let value = OwnedValue::try_from(zbus::zvariant::Value::from(p)).unwrap();
        let back = statuses(value);
        assert_eq!(back, [round()]);
        let text = lines(&back);
        assert!(
            text.starts_with("lichess round 3 (AbCd1234): pushed, last pushed "),
            "{text}"
        );
        assert!(text.contains(", 1 game(s) accepted, 41 move(s)"), "{text}");
        assert!(
            text.contains("; board 2 (C - D) refused: No move found: Pawn a8"),
            "{text}"
        );
        assert!(text.contains("; not pushed: boards 65"), "{text}");
    }

    #[test]
    fn each_board_gets_its_game_on_lichess() {
        let mut boards = vec![
            BoardView {
                number: 1,
                round: "3.1".into(),
                ..BoardView::default()
            },
            BoardView {
                number: 2,
                round: "3.2".into(),
                ..BoardView::default()
            },
            BoardView {
                number: 4,
                round: "4.4".into(),
                ..BoardView::default()
            },
        ];
        attach(&mut boards, &[round()]);
        assert_eq!(boards[0].lichess.as_ref().unwrap().moves, 41);
        assert_eq!(
            boards[1].lichess.as_ref().unwrap().error,
            "No move found: Pawn a8"
        );
        assert!(boards[2].lichess.is_none(), "round 4 is not pushed");
        let json = serde_json::to_value(&boards[0]).unwrap();
        assert_eq!(json["lichess"]["id"], "AbCd1234");
        assert!(serde_json::to_value(&boards[2]).unwrap().get("lichess").is_none());
    }

    /// Issue 60: a round over two broadcast rounds read back as two, a line
    /// each with its boards; each board gets the one its number goes to.
    #[test]
    fn a_round_over_two_broadcast_rounds_a_line_each_and_each_board_its_own() {
        let first = RoundStatus {
            last_board: 64,
            ..round()
        };
        let second = RoundStatus {
            id: "EfGh5678".into(),
            first_board: 65,
            last_board: 0,
            games: vec![GameStatus {
                board: 65,
                index: 1,
                name: "E - F".into(),
                moves: 7,
                error: String::new(),
            }],
            games_accepted: 1,
            games_refused: 0,
            not_pushed: Vec::new(),
            ..round()
        };
        let p = crate::bus::lichess::property(&[first.clone(), second.clone()]);
        let value = OwnedValue::try_from(zbus::zvariant::Value::from(p)).unwrap();
        let back = statuses(value);
        assert_eq!(back, [first, second]);
        let text = lines(&back);
        assert!(
            text.contains("lichess round 3 (AbCd1234, boards 1-64): pushed, last pushed "),
            "{text}"
        );
        assert!(
            text.contains("lichess round 3 (EfGh5678, boards 65 and up): pushed, last pushed "),
            "{text}"
        );
        let mut boards: Vec<BoardView> = [2, 65]
            .into_iter()
            .map(|number| BoardView {
                number,
                round: format!("3.{number}"),
                ..BoardView::default()
            })
            .collect();
        attach(&mut boards, &back);
        let on = |i: usize| boards[i].lichess.clone().unwrap();
        assert_eq!(
            (on(0).id.as_str(), on(0).error.as_str()),
            ("AbCd1234", "No move found: Pawn a8")
        );
        assert_eq!((on(1).id.as_str(), on(1).moves), ("EfGh5678", 7));
    }

    #[test]
    fn the_ids_of_ctl_lichess() {
        let ids = |a: &[&str]| ids_arg(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(ids(&[""]).unwrap(), Vec::<RoundId>::new());
        assert_eq!(ids(&["AbCd1234", "EfGh5678"]).unwrap().len(), 2);
        let usage = |r: Result<Vec<RoundId>, CtlError>| match r {
            Err(CtlError::Usage(e)) => e,
            other => panic!("{other:?}"),
        };
        assert!(usage(ids(&["AbCd1234", ""])).contains("`off` stands alone"));
        assert!(usage(ids(&["AbCd1234", "AbCd1234"])).contains("given twice"));
    }
}
