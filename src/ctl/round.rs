//! The round's life as `ctl` sees it: a round's pairings loaded from the
//! tournament program's export, and the round's results to check against it.

use std::collections::HashMap;

use super::client::{Client, CtlError};
use super::{ResultsFormat, format};
use crate::pairings::Pairings;

/// `ctl results`: the round's results table (or games), from the boards' games
/// under way.
pub async fn results(client: &Client, round: Option<u32>, format: ResultsFormat) -> Result<(), CtlError> {
    // From D-Bus, not the broadcast folder: `ctl` knows the daemon only
    // by the bus (the folder's place is in the daemon's configuration,
    // which ctl does not read, and may not be readable by the arbiter),
    // and the bus shows each decision at once. It holds each board's game
    // under way, that is the round being played; an earlier round is
    // in the folder (round-N/), which this says when asked for one.
    let boards = client.boards().await?;
    let round_of = |b: &format::BoardView| b.round.split('.').next().unwrap_or_default().trim().to_string();
    let chosen: Vec<format::BoardView> = match round {
        None => boards,
        Some(n) => {
            let n = n.to_string();
            let (on, off): (Vec<_>, Vec<_>) = boards.into_iter().partition(|b| round_of(b) == n);
            if on.is_empty() {
                let mut rounds: Vec<String> = off.iter().map(round_of).filter(|r| !r.is_empty()).collect();
                rounds.sort();
                rounds.dedup();
                return Err(CtlError::Refused(format!(
                    "no board plays round {n} now{}: an earlier round's games are in the broadcast folder (round-{n}/)",
                    if rounds.is_empty() {
                        String::new()
                    } else {
                        format!(" (the boards are on round {})", rounds.join(", "))
                    }
                )));
            }
            on
        }
    };
    print!("{}", format::results(&chosen, format));
    Ok(())
}

/// The pairings of a file as `SetPairings` and `StartRound` take them.
fn list_of(p: &Pairings) -> Vec<(u32, HashMap<String, String>)> {
    p.boards
        .iter()
        .map(|b| {
            (
                b.board,
                b.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            )
        })
        .collect()
}

/// The round the boards are on: the highest round of their games.
fn boards_round(boards: &[format::BoardView]) -> Option<u32> {
    boards
        .iter()
        .filter_map(|b| b.round.split('.').next()?.trim().parse().ok())
        .max()
}

/// The file's notes (placeholder ratings, rounds left out, an encoding read).
fn notes(p: &Pairings) {
    for note in &p.notes {
        eprintln!("eboard-bridge ctl: note: {}: {note}", p.file);
    }
}

/// A refusal of the daemon's about a file's pairings: with the file's line
/// when it names a board (`no board 9: ...`), and that nothing was applied.
/// Several boards the daemon does not have (`no board 9, 11: boards are
/// 1-3`) are said each on its line of the file.
fn refused_in(p: &Pairings, e: CtlError) -> CtlError {
    let CtlError::Refused(m) = &e else { return e };
    let (numbers, rest) = m
        .strip_prefix("no board ")
        .and_then(|r| r.split_once(": "))
        .unwrap_or_default();
    let lines: Option<Vec<(u32, usize)>> = numbers
        .split(", ")
        .map(|n| {
            let n = n.parse::<u32>().ok()?;
            p.boards.iter().find(|b| b.board == n).map(|b| (n, b.line))
        })
        .collect();
    match lines.filter(|l| !l.is_empty()) {
        Some(lines) => {
            let said: Vec<String> = lines
                .iter()
                .map(|(n, line)| format!("{}:{line}: no board {n}: {rest}", p.file))
                .collect();
            CtlError::Refused(format!("{}; nothing was applied", said.join("\n")))
        }
        None => CtlError::Refused(format!("{}: {m}; nothing was applied", p.file)),
    }
}

/// `ctl pairings`: each board of the file takes its pairing for its next game;
/// notes on the file (an earlier round's export, placeholder ratings) are said.
pub async fn pairings(client: &Client, p: &Pairings) -> Result<(), CtlError> {
    let list = list_of(p);
    let round = p.round.unwrap_or(0);
    // A file of an earlier round (an old export picked by mistake), or
    // one that skips rounds, is loaded, and said.
    let on = boards_round(&client.boards().await?);
    if let (Some(r), Some(on)) = (p.round, on) {
        if r < on || r > on + 1 {
            eprintln!(
                "eboard-bridge ctl: note: {}: the file is round {r}'s pairings, the boards are on round {on}: is it the right export? (loaded: load the right file to put it right)",
                p.file
            );
        }
    }
    notes(p);
    client
        .set_pairings(round, &list)
        .await
        .map_err(|e| refused_in(p, e))?;
    let numbers: Vec<u32> = p.boards.iter().map(|b| b.board).collect();
    let round = p.round.map(|r| format!("round {r}, ")).unwrap_or_default();
    println!(
        "{round}{} board(s) ({}) from {}: each board's next game (or its game not begun) takes its pairing",
        numbers.len(),
        crate::api::board_numbers(&numbers),
        p.file
    );
    Ok(())
}

/// `ctl round N [--pairings FILE]`: round N on every board, and what that
/// did to each, in words.
pub async fn start(client: &Client, round: u32, p: Option<&Pairings>) -> Result<(), CtlError> {
    let list = p.map(list_of).unwrap_or_default();
    if let Some(on) = boards_round(&client.boards().await?) {
        if round < on || round > on + 1 {
            eprintln!(
                "eboard-bridge ctl: note: the boards were on round {on}: is round {round} the one meant? (done: the boards are on round {round} now; `ctl round {on}` goes back, `ctl round {}` starts the one after it)",
                round + 1
            );
        }
    }
    if let Some(p) = p {
        notes(p);
    }
    client.start_round(round, &list).await.map_err(|e| match p {
        Some(p) => refused_in(p, e),
        None => e,
    })?;
    let boards = client.boards().await?;
    print!("{}", started(round, p, &boards));
    Ok(())
}

/// What `ctl round` did, board by board: `boards` as they are after it.
fn started(round: u32, p: Option<&Pairings>, boards: &[format::BoardView]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let from = p
        .map(|p| format!(", pairings from {}", p.file))
        .unwrap_or_default();
    let numbers: Vec<u32> = boards.iter().map(|b| b.number).collect();
    let _ = writeln!(
        s,
        "round {round} started on {} board(s) ({}){from}: each board's next game (or its game not begun) is round {round}",
        boards.len(),
        crate::api::board_numbers(&numbers)
    );
    let paired = |n: u32| {
        p.and_then(|p| p.boards.iter().find(|b| b.board == n)).map(|b| {
            let name = |side: &str| b.tags.get(side).cloned().unwrap_or_else(|| "?".into());
            format!("{} - {}", name("White"), name("Black"))
        })
    };
    for b in boards {
        let on = b.round.split('.').next().unwrap_or_default().trim();
        let what = if on == round.to_string() {
            format!("round {round} now: {} - {}", b.white, b.black)
        } else {
            let next = paired(b.number).map(|n| format!(" ({n})")).unwrap_or_default();
            // A board not read again yet (`disconnected` after a restart)
            // still shows its game's result: over is over.
            let game = if b.status == "finished" || !b.result.is_empty() {
                format!("its game of round {on} is over ({})", b.result)
            } else {
                format!(
                    "its game under way ({} plies) stays in round {on} to its end",
                    b.moves
                )
            };
            format!("{game}; its next game is round {round}{next}")
        };
        let _ = writeln!(s, "board {} ({}): {what}", b.number, b.id);
    }
    if p.is_none() {
        let _ = writeln!(
            s,
            "no pairings given: a new round's players are the configuration's ([[board]]) or ?; `ctl pairings FILE --round {round}` names them"
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_round_started_did_to_each_board() {
        let board = |number: u32, round: &str, status: &str, moves: usize, result: &str| format::BoardView {
            number,
            id: format!("board{number}"),
            round: round.into(),
            status: status.into(),
            moves,
            result: result.into(),
            white: format!("W{number}"),
            black: format!("B{number}"),
            ..format::BoardView::default()
        };
        let boards = [
            board(1, "1.1", "playing", 12, ""),
            board(2, "2.2", "playing", 0, ""),
            board(3, "1.3", "finished", 40, "1-0"),
            board(4, "1.4", "disconnected", 16, "1/2-1/2"),
        ];
        let p = Pairings {
            file: "r2.csv".into(),
            round: Some(2),
            boards: vec![crate::pairings::Pairing {
                board: 1,
                line: 2,
                tags: [
                    ("White".to_string(), "Ann".to_string()),
                    ("Black".into(), "Bob".into()),
                ]
                .into(),
            }],
            notes: Vec::new(),
        };
        assert_eq!(
            started(2, Some(&p), &boards),
            "round 2 started on 4 board(s) (1-4), pairings from r2.csv: each board's next game (or its game not begun) is round 2\n\
             board 1 (board1): its game under way (12 plies) stays in round 1 to its end; its next game is round 2 (Ann - Bob)\n\
             board 2 (board2): round 2 now: W2 - B2\n\
             board 3 (board3): its game of round 1 is over (1-0); its next game is round 2\n\
             board 4 (board4): its game of round 1 is over (1/2-1/2); its next game is round 2\n"
        );
        assert!(started(2, None, &boards).ends_with("`ctl pairings FILE --round 2` names them\n"));
        let e = refused_in(&p, CtlError::Refused("no board 1: boards are 2-3".into()));
        assert_eq!(
            e,
            CtlError::Refused("r2.csv:2: no board 1: boards are 2-3; nothing was applied".into())
        );
    }
}
