//! Pairings from a PGN export with headers only (Swiss-Manager, Vega,
//! chess-results): the board from a `Board` tag or from `Round "R.B"`.

use std::collections::BTreeMap;

use super::{Pairing, Pairings, PairingsError, add, placeholder, placeholders_note, value};

/// One PGN tag line, `[Name "value"]`: the name and the value unescaped.
fn tag_line(line: &str) -> Result<(String, String), String> {
    let inner = line
        .strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .ok_or("a tag line is [Name \"value\"]")?;
    let (name, rest) = inner
        .split_once(|c: char| c.is_whitespace())
        .ok_or("a tag line is [Name \"value\"]")?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("`{}` is not a tag name", crate::log::clip_to(name, 40)));
    }
    let quoted = rest
        .trim()
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .ok_or_else(|| format!("the value of {name} is not in quotes"))?;
    let mut value = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | '"')) => value.push(e),
                _ => return Err(format!("the value of {name} has a stray backslash")),
            },
            '"' => return Err(format!("the value of {name} has a quote that is not escaped")),
            c => value.push(c),
        }
    }
    Ok((name.to_string(), value))
}

/// A PGN `Round`: `R` or `R.B` (`?` or `-`: none).
fn pgn_round(v: &str) -> Result<(Option<u32>, Option<u32>), String> {
    let v = v.trim();
    if v.is_empty() || v == "?" || v == "-" {
        return Ok((None, None));
    }
    let number = |s: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("Round \"{v}\" is not R or R.B"))
    };
    match v.split_once('.') {
        Some((r, b)) => Ok((Some(number(r)?), Some(number(b)?))),
        None => Ok((Some(number(v)?), None)),
    }
}

pub(super) fn parse_pgn(text: &str, file: &str, want: Option<u32>) -> Result<Pairings, PairingsError> {
    struct Game {
        line: usize,
        tags: Vec<(String, String)>,
        /// A tag line of it did not read (said): nothing more is said of it.
        broken: bool,
    }
    let mut games: Vec<Game> = Vec::new();
    let mut in_tags = false;
    // Every line and game is checked: the errors are said all at once.
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.starts_with('[') {
            if !in_tags {
                games.push(Game {
                    line: n,
                    tags: Vec::new(),
                    broken: false,
                });
                in_tags = true;
            }
            let Some(g) = games.last_mut() else { continue };
            match tag_line(line) {
                Ok(tag) => g.tags.push(tag),
                Err(message) => {
                    errors.push(PairingsError::at(file, Some(n), message));
                    g.broken = true;
                }
            }
        } else {
            // A blank line or movetext (`*` in an export of pairings) ends
            // the game's tags.
            in_tags = false;
        }
    }
    // The rounds the games name (several, none chosen: refused before anything).
    let mut rounds: Vec<(u32, usize)> = Vec::new();
    games.retain(|g| !g.broken);
    for g in &games {
        let round = g.tags.iter().find(|(k, _)| k == "Round").map(|(_, v)| v.as_str());
        let Ok((round, _)) = pgn_round(round.unwrap_or("")) else {
            // Said below, with the game's other problems.
            continue;
        };
        if let Some(r) = round.filter(|r| want.is_none_or(|w| w == *r)) {
            if !rounds.iter().any(|(x, _)| *x == r) {
                rounds.push((r, g.line));
            }
        }
    }
    if want.is_none() && rounds.len() > 1 {
        let list: Vec<String> = rounds.iter().map(|(r, _)| r.to_string()).collect();
        errors.push(PairingsError::at(
            file,
            Some(rounds[1].1),
            format!(
                "the file holds rounds {}: say which with --round N (or `round` in the configuration)",
                list.join(", ")
            ),
        ));
        // With the lines' errors found before: never empty.
        return Err(PairingsError::all(errors).err().unwrap_or_default());
    }
    let mut boards = Vec::new();
    let mut found = Vec::new();
    let mut left_out: Vec<(usize, u32)> = Vec::new();
    for g in games {
        let at = |message: String| PairingsError::at(file, Some(g.line), message);
        let tag = |name: &str| g.tags.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let (round, board_in_round) = match pgn_round(tag("Round").unwrap_or("")) {
            Ok(r) => r,
            Err(message) => {
                errors.push(at(message));
                continue;
            }
        };
        if let (Some(w), Some(r)) = (want, round) {
            if w != r {
                left_out.push((g.line, r));
                continue;
            }
        }
        let board = match tag("Board") {
            Some(b) => match b.trim().parse::<u32>() {
                Ok(n) => Some(n),
                Err(_) => {
                    errors.push(at(format!("Board \"{b}\" is not a board number")));
                    continue;
                }
            },
            None => board_in_round,
        };
        let Some(board) = board else {
            errors.push(at(
                "no board number: the game needs a Board tag or a Round \"R.B\"".into(),
            ));
            continue;
        };
        let mut tags = BTreeMap::new();
        // The players, and the pairing's other tags as `SetPairing` takes them.
        for name in ["White", "Black"].into_iter().chain(crate::api::PAIRING_TAGS) {
            if tag(name).is_some_and(|v| placeholder(name, v)) {
                found.push((g.line, name.to_string()));
            }
            if let Some(v) = tag(name).and_then(|v| value(name, v)) {
                tags.insert(name.to_string(), v);
            }
        }
        let pairing = Pairing {
            board,
            line: g.line,
            tags,
        };
        if let Err(e) = add(&mut boards, pairing, file) {
            errors.push(e);
        }
    }
    PairingsError::all(errors)?;
    let mut notes = Vec::new();
    if !left_out.is_empty() {
        let lines: Vec<String> = left_out
            .iter()
            .map(|(l, r)| format!("line {l} (round {r})"))
            .collect();
        notes.push(format!(
            "{} game(s) of other rounds left out, only round {} read: {}",
            left_out.len(),
            want.unwrap_or(0),
            lines.join(", ")
        ));
    }
    notes.extend(placeholders_note(&found, &boards));
    Ok(Pairings {
        file: file.into(),
        round: want.or(rounds.first().map(|(r, _)| *r)),
        boards,
        notes,
    })
}
