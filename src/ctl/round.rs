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

/// `ctl pairings`: each board of the file takes its pairing for its next game;
/// notes on the file (an earlier round's export, placeholder ratings) are said.
pub async fn pairings(client: &Client, p: &Pairings) -> Result<(), CtlError> {
    let list: Vec<(u32, HashMap<String, String>)> = p
        .boards
        .iter()
        .map(|b| {
            (
                b.board,
                b.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            )
        })
        .collect();
    let round = p.round.unwrap_or(0);
    // A file of an earlier round (an old export picked by mistake), or
    // one that skips rounds, is loaded, and said.
    let on: Option<u32> = client
        .boards()
        .await?
        .iter()
        .filter_map(|b| b.round.split('.').next()?.parse().ok())
        .max();
    if let (Some(r), Some(on)) = (p.round, on) {
        if r < on || r > on + 1 {
            eprintln!(
                "eboard-bridge ctl: note: {}: the file is round {r}'s pairings, the boards are on round {on}: is it the right export? (loaded: load the right file to put it right)",
                p.file
            );
        }
    }
    for note in &p.notes {
        eprintln!("eboard-bridge ctl: note: {}: {note}", p.file);
    }
    if let Err(e) = client.set_pairings(round, &list).await {
        // The daemon names the board it does not have: the file's line too.
        let CtlError::Refused(m) = &e else { return Err(e) };
        let line = m
            .strip_prefix("no board ")
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse::<u32>().ok())
            .and_then(|n| p.boards.iter().find(|b| b.board == n));
        return Err(match line {
            Some(b) => CtlError::Refused(format!("{}:{}: {m}; nothing was applied", p.file, b.line)),
            None => CtlError::Refused(format!("{}: {m}; nothing was applied", p.file)),
        });
    }
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
