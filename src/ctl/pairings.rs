//! A round's pairings as tournament programs export them:
//!
//! - a PGN of the round's games with headers only (Swiss-Manager, Vega,
//!   chess-results): the board from a `Board` tag or from `Round "R.B"`; the
//!   players and `WhiteElo`, `BlackElo`, `WhiteFideId`, `BlackFideId`,
//!   `WhiteTitle`, `BlackTitle`, `WhiteTeam`, `BlackTeam` from their tags (others
//!   are left out);
//! - a CSV with a header row: `board,white,black` and, in any order, optional
//!   `white_elo,black_elo,white_fide_id,black_fide_id,white_title,black_title,
//!   white_team,black_team`. Fields may be quoted (`"Carlsen, Magnus"`, a quote
//!   inside doubled); a header with semicolons and no commas (as spreadsheets
//!   write in some countries) is read with semicolons.
//!
//! The whole file is read before anything is applied: a malformed line, a board
//! given twice or a value that is not allowed is an error with the file and line,
//! and no pairing of the file is used.

use std::collections::BTreeMap;
use std::path::Path;

/// The largest pairings file read (a 1,000-board PGN is about 400 KiB).
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// One board's pairing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    pub board: u32,
    /// The line it was read from (the first tag of a PGN game).
    pub line: usize,
    /// `White`, `Black` and the other tags given (empty values left out).
    pub tags: BTreeMap<String, String>,
}

/// A round's pairings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairings {
    pub file: String,
    /// The round the file names (PGN `Round`), or the one asked for.
    pub round: Option<u32>,
    pub boards: Vec<Pairing>,
}

/// What is wrong with a pairings file, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct PairingsError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

/// Reads a pairings file. `round`: only that round's games of a PGN that holds
/// several (a PGN game with no round is taken whatever the round).
pub fn read(path: &Path, round: Option<u32>) -> Result<Pairings, PairingsError> {
    use std::io::Read;
    let file = path.display().to_string();
    let err = |message: String| PairingsError {
        file: file.clone(),
        line: None,
        message,
    };
    let f = std::fs::File::open(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(err(format!(
            "more than {} MiB: not a round's pairings",
            MAX_FILE_BYTES >> 20
        )));
    }
    // Tournament programs on Windows still write Latin-1 now and then: a byte
    // that is not UTF-8 is refused with its line rather than guessed at.
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = good.iter().filter(|b| **b == b'\n').count() + 1;
            return Err(PairingsError {
                file,
                line: Some(line),
                message: "not UTF-8 text: export the file as UTF-8".into(),
            });
        }
    };
    parse(&text, &file, round)
}

/// Parses a pairings file's text (`file` names it in errors).
pub fn parse(text: &str, file: &str, round: Option<u32>) -> Result<Pairings, PairingsError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    let mut p = match first {
        None => {
            return Err(PairingsError {
                file: file.into(),
                line: None,
                message: "empty: no pairings".into(),
            });
        }
        Some(l) if l.starts_with('[') => parse_pgn(text, file, round)?,
        Some(_) => parse_csv(text, file, round)?,
    };
    if p.boards.is_empty() {
        return Err(PairingsError {
            file: file.into(),
            line: None,
            message: match round {
                Some(r) => format!("no pairings of round {r}"),
                None => "no pairings".into(),
            },
        });
    }
    if p.boards.len() > crate::api::MAX_PAIRINGS {
        return Err(PairingsError {
            file: file.into(),
            line: p.boards.get(crate::api::MAX_PAIRINGS).map(|b| b.line),
            message: format!("more than {} boards", crate::api::MAX_PAIRINGS),
        });
    }
    p.boards.sort_by_key(|b| b.board);
    Ok(p)
}

/// Checks a pairing's tags and that its board is new; adds it.
fn add(boards: &mut Vec<Pairing>, pairing: Pairing, file: &str) -> Result<(), PairingsError> {
    let at = |message: String| PairingsError {
        file: file.into(),
        line: Some(pairing.line),
        message,
    };
    if pairing.board == 0 {
        return Err(at("board 0: boards are numbered from 1".into()));
    }
    if let Some(other) = boards.iter().find(|b| b.board == pairing.board) {
        return Err(at(format!(
            "board {} is paired twice (line {} has it too)",
            pairing.board, other.line
        )));
    }
    crate::api::check_pairing(&pairing.tags).map_err(|e| at(format!("board {}: {e}", pairing.board)))?;
    boards.push(pairing);
    Ok(())
}

/// A tag value as exported: trimmed; `0`, `-` and `?` mean none for a rating or
/// an id (chess-results writes 0 for unrated players).
fn value(name: &str, v: &str) -> Option<String> {
    let v = v.trim();
    let none = v.is_empty()
        || v == "?"
        || v == "-"
        || (matches!(name, "WhiteElo" | "BlackElo" | "WhiteFideId" | "BlackFideId") && v == "0");
    (!none).then(|| v.to_string())
}

/// The tags a pairing takes from a PGN game.
const PGN_TAGS: [&str; 10] = [
    "White",
    "Black",
    "WhiteElo",
    "BlackElo",
    "WhiteFideId",
    "BlackFideId",
    "WhiteTitle",
    "BlackTitle",
    "WhiteTeam",
    "BlackTeam",
];

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

fn parse_pgn(text: &str, file: &str, want: Option<u32>) -> Result<Pairings, PairingsError> {
    struct Game {
        line: usize,
        tags: Vec<(String, String)>,
    }
    let mut games: Vec<Game> = Vec::new();
    let mut in_tags = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.starts_with('[') {
            let (name, value) = tag_line(line).map_err(|message| PairingsError {
                file: file.into(),
                line: Some(n),
                message,
            })?;
            if !in_tags {
                games.push(Game {
                    line: n,
                    tags: Vec::new(),
                });
                in_tags = true;
            }
            if let Some(g) = games.last_mut() {
                g.tags.push((name, value));
            }
        } else {
            // A blank line or movetext (`*` in an export of pairings) ends
            // the game's tags.
            in_tags = false;
        }
    }
    // The rounds the games name (several, none chosen: refused before anything).
    let mut rounds: Vec<(u32, usize)> = Vec::new();
    for g in &games {
        let round = g.tags.iter().find(|(k, _)| k == "Round").map(|(_, v)| v.as_str());
        let (round, _) = pgn_round(round.unwrap_or("")).map_err(|message| PairingsError {
            file: file.into(),
            line: Some(g.line),
            message,
        })?;
        if let Some(r) = round.filter(|r| want.is_none_or(|w| w == *r)) {
            if !rounds.iter().any(|(x, _)| *x == r) {
                rounds.push((r, g.line));
            }
        }
    }
    if want.is_none() && rounds.len() > 1 {
        let list: Vec<String> = rounds.iter().map(|(r, _)| r.to_string()).collect();
        return Err(PairingsError {
            file: file.into(),
            line: Some(rounds[1].1),
            message: format!(
                "the file holds rounds {}: say which with --round N (or `round` in the configuration)",
                list.join(", ")
            ),
        });
    }
    let mut boards = Vec::new();
    for g in games {
        let at = |message: String| PairingsError {
            file: file.into(),
            line: Some(g.line),
            message,
        };
        let tag = |name: &str| g.tags.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let (round, board_in_round) = pgn_round(tag("Round").unwrap_or("")).map_err(at)?;
        if let (Some(w), Some(r)) = (want, round) {
            if w != r {
                continue;
            }
        }
        let board = match tag("Board") {
            Some(b) => Some(
                b.trim()
                    .parse::<u32>()
                    .map_err(|_| at(format!("Board \"{b}\" is not a board number")))?,
            ),
            None => board_in_round,
        };
        let Some(board) = board else {
            return Err(at(
                "no board number: the game needs a Board tag or a Round \"R.B\"".into(),
            ));
        };
        let mut tags = BTreeMap::new();
        for name in PGN_TAGS {
            if let Some(v) = tag(name).and_then(|v| value(name, v)) {
                tags.insert(name.to_string(), v);
            }
        }
        add(
            &mut boards,
            Pairing {
                board,
                line: g.line,
                tags,
            },
            file,
        )?;
    }
    Ok(Pairings {
        file: file.into(),
        round: want.or(rounds.first().map(|(r, _)| *r)),
        boards,
    })
}

/// The CSV columns and the tags they give.
const CSV_COLUMNS: [(&str, &str); 11] = [
    ("board", "Board"),
    ("white", "White"),
    ("black", "Black"),
    ("white_elo", "WhiteElo"),
    ("black_elo", "BlackElo"),
    ("white_fide_id", "WhiteFideId"),
    ("black_fide_id", "BlackFideId"),
    ("white_title", "WhiteTitle"),
    ("black_title", "BlackTitle"),
    ("white_team", "WhiteTeam"),
    ("black_team", "BlackTeam"),
];

/// One CSV line's fields (RFC 4180 quoting, on one line).
fn csv_fields(line: &str, sep: char) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("a quoted field is not closed on its line".into()),
                }
            }
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(c) if c == sep => fields.push(field),
                Some(c) => {
                    return Err(format!(
                        "`{c}` after a quoted field (a quote inside a field is doubled: \"\")"
                    ));
                }
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field.trim().to_string());
                        return Ok(fields);
                    }
                    Some(c) if c == sep => break,
                    Some('"') => return Err("a quote inside an unquoted field".into()),
                    Some(c) => field.push(c),
                }
            }
            fields.push(field.trim().to_string());
        }
    }
}

fn parse_csv(text: &str, file: &str, round: Option<u32>) -> Result<Pairings, PairingsError> {
    let at = |line: usize, message: String| PairingsError {
        file: file.into(),
        line: Some(line),
        message,
    };
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((hi, header)) = lines.next() else {
        return Err(at(1, "no header row".into()));
    };
    let sep = if !header.contains(',') && header.contains(';') {
        ';'
    } else {
        ','
    };
    let names = csv_fields(header, sep).map_err(|e| at(hi + 1, e))?;
    let mut columns: Vec<&str> = Vec::new();
    for n in &names {
        let key = n.trim().to_lowercase();
        let Some((_, tag)) = CSV_COLUMNS.iter().find(|(c, _)| *c == key) else {
            let known: Vec<&str> = CSV_COLUMNS.iter().map(|(c, _)| *c).collect();
            return Err(at(
                hi + 1,
                format!(
                    "unknown column `{}` (the header row names: {})",
                    crate::log::clip_to(n, 40),
                    known.join(",")
                ),
            ));
        };
        if columns.contains(tag) {
            return Err(at(hi + 1, format!("the column {key} is given twice")));
        }
        columns.push(tag);
    }
    for need in ["Board", "White", "Black"] {
        if !columns.contains(&need) {
            return Err(at(
                hi + 1,
                "the header row needs board,white,black (then any of white_elo,black_elo,white_fide_id,black_fide_id,white_title,black_title,white_team,black_team)".into(),
            ));
        }
    }
    let mut boards = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        let fields = csv_fields(line, sep).map_err(|e| at(n, e))?;
        if fields.len() != columns.len() {
            return Err(at(
                n,
                format!("{} fields, the header row has {}", fields.len(), columns.len()),
            ));
        }
        let mut board = None;
        let mut tags = BTreeMap::new();
        for (tag, v) in columns.iter().zip(&fields) {
            if *tag == "Board" {
                board = Some(v.parse::<u32>().map_err(|_| {
                    at(
                        n,
                        format!("board `{}` is not a board number", crate::log::clip_to(v, 20)),
                    )
                })?);
            } else if let Some(v) = value(tag, v) {
                tags.insert(tag.to_string(), v);
            }
        }
        add(
            &mut boards,
            Pairing {
                board: board.unwrap_or(0),
                line: n,
                tags,
            },
            file,
        )?;
    }
    Ok(Pairings {
        file: file.into(),
        round,
        boards,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PGN: &str = r#"[Event "Open"]
[Site "Madrid"]
[Date "2026.03.14"]
[Round "3.1"]
[White "Carlsen, Magnus"]
[Black "Nepomniachtchi, Ian"]
[Result "*"]
[WhiteElo "2830"]
[BlackElo "0"]
[WhiteTitle "GM"]
[WhiteFideId "1503014"]
[WhiteTeam "Norway"]

*

[Event "Open"]
[Round "3.2"]
[White "Caruana, Fabiano"]
[Black "Ding, Liren"]
[Result "*"]

*
"#;

    #[test]
    fn a_pgn_with_headers_only_gives_round_board_and_tags() {
        let p = parse(PGN, "r3.pgn", None).unwrap();
        assert_eq!(p.round, Some(3));
        assert_eq!(p.boards.len(), 2);
        let b1 = &p.boards[0];
        assert_eq!((b1.board, b1.line), (1, 1));
        assert_eq!(b1.tags["White"], "Carlsen, Magnus");
        assert_eq!(b1.tags["WhiteElo"], "2830");
        assert!(!b1.tags.contains_key("BlackElo"), "0 is unrated");
        assert_eq!(b1.tags["WhiteFideId"], "1503014");
        assert_eq!(b1.tags["WhiteTeam"], "Norway");
        assert!(!b1.tags.contains_key("Event"));
        assert_eq!((p.boards[1].board, p.boards[1].line), (2, 16));
    }

    #[test]
    fn a_board_tag_wins_and_several_rounds_need_one_chosen() {
        let text = "[Round \"2\"]\n[Board \"5\"]\n[White \"A\"]\n[Black \"B\"]\n\n[Round \"3\"]\n[Board \"5\"]\n[White \"C\"]\n[Black \"D\"]\n";
        let e = parse(text, "all.pgn", None).unwrap_err();
        assert_eq!(e.line, Some(6));
        assert!(e.to_string().contains("rounds 2, 3"), "{e}");
        let p = parse(text, "all.pgn", Some(3)).unwrap();
        assert_eq!((p.round, p.boards.len()), (Some(3), 1));
        assert_eq!((p.boards[0].board, p.boards[0].tags["White"].as_str()), (5, "C"));
        assert!(parse(text, "all.pgn", Some(9)).is_err());
    }

    #[test]
    fn a_csv_with_quoted_names_and_optional_columns() {
        let text = "board,white,black,white_elo,black_elo,white_title,black_team\n\
                    1,\"Carlsen, Magnus\",\"Nepo \"\"Nepo\"\" Ian\",2830,2795,GM,Russia\n\
                    \n\
                    2 , Caruana , Ding ,,,,\n";
        let p = parse(text, "r.csv", Some(4)).unwrap();
        assert_eq!(p.round, Some(4));
        let b1 = &p.boards[0];
        assert_eq!(b1.tags["White"], "Carlsen, Magnus");
        assert_eq!(b1.tags["Black"], "Nepo \"Nepo\" Ian");
        assert_eq!(b1.tags["BlackElo"], "2795");
        assert_eq!(b1.tags["BlackTeam"], "Russia");
        let b2 = &p.boards[1];
        assert_eq!((b2.board, b2.line), (2, 4));
        assert_eq!(b2.tags.len(), 2);
        // Semicolons, as some spreadsheets write.
        let p = parse("Board;White;Black\n7;A, B;C\n", "r.csv", None).unwrap();
        assert_eq!(p.boards[0].tags["White"], "A, B");
    }

    #[test]
    fn malformed_duplicate_and_unknown_are_refused_with_the_line() {
        let bad = |text: &str, line: usize, says: &str| {
            let e = parse(text, "f", None).unwrap_err();
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.to_string().contains(says), "{e}");
            assert!(e.to_string().starts_with(&format!("f:{line}: ")), "{e}");
        };
        bad("board,white,black\n1,A,B\n2,C\n", 3, "2 fields");
        bad("board,white,black\n1,A,B\n1,C,D\n", 3, "paired twice (line 2");
        bad("board,white,black\nx,A,B\n", 2, "not a board number");
        bad("board,white,black\n1,\"A,B\n", 2, "not closed");
        bad("board,white,black,rating\n", 1, "unknown column `rating`");
        bad("board,white\n1,A\n", 1, "needs board,white,black");
        bad("board,white,black,white_elo\n1,A,B,28x0\n", 2, "rating");
        bad("board,white,black\n1,A,\n", 2, "Black is missing");
        bad(
            "[Round \"1.1\"]\n[White \"A\"]\n[Black \"B]\n",
            3,
            "not in quotes",
        );
        bad(
            "[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n\n[Round \"1.1\"]\n[White \"C\"]\n[Black \"D\"]\n",
            5,
            "twice",
        );
        bad(
            "[Round \"1\"]\n[White \"A\"]\n[Black \"B\"]\n",
            1,
            "no board number",
        );
        bad("[Round \"x.1\"]\n", 1, "not R or R.B");
    }
}
