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
    /// What the reading decided that the arbiter should know (an encoding
    /// guessed, placeholders stored as no rating, games of other rounds left
    /// out): said by `ctl` and in the daemon's log, in words.
    pub notes: Vec<String>,
}

/// The most errors of one file said (the others counted): a file exported
/// wrong whole would otherwise name every line.
pub const MAX_ERRORS: usize = 10;

/// What is wrong with a pairings file, and where: the first error, and the
/// file's other errors (each line of the file is checked, so that one reading
/// names them all, at most [`MAX_ERRORS`]; issue 57: only the first was named).
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.words())]
pub struct PairingsError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
    /// The file's other errors, in the order of its lines (at most
    /// `MAX_ERRORS - 1`).
    pub more: Vec<(Option<usize>, String)>,
    /// Errors found beyond those kept.
    pub left_out: usize,
}

impl PairingsError {
    /// An error of `file` at `line`.
    pub fn at(file: &str, line: Option<usize>, message: String) -> PairingsError {
        PairingsError {
            file: file.into(),
            line,
            message,
            ..PairingsError::default()
        }
    }

    /// The errors one a line: `FILE:LINE: problem`.
    fn words(&self) -> String {
        let one = |line: Option<usize>, message: &str| {
            format!(
                "{}{}: {message}",
                self.file,
                line.map(|l| format!(":{l}")).unwrap_or_default()
            )
        };
        let mut lines = vec![one(self.line, &self.message)];
        lines.extend(self.more.iter().map(|(line, m)| one(*line, m)));
        if self.left_out > 0 {
            lines.push(format!(
                "{}: and {} more error(s) like these",
                self.file, self.left_out
            ));
        }
        lines.join("\n")
    }

    /// Every error of `all` in one (none: `Ok`), the first [`MAX_ERRORS`] said.
    fn all(mut all: Vec<PairingsError>) -> Result<(), PairingsError> {
        if all.is_empty() {
            return Ok(());
        }
        all.sort_by_key(|e| e.line);
        let mut first = all.remove(0);
        let kept = all.len().min(MAX_ERRORS - 1);
        first.left_out = all.len() - kept;
        first.more = all.drain(..kept).map(|e| (e.line, e.message)).collect();
        Err(first)
    }
}

/// Reads a pairings file. `round`: only that round's games of a PGN that holds
/// several (a PGN game with no round is taken whatever the round).
pub fn read(path: &Path, round: Option<u32>) -> Result<Pairings, PairingsError> {
    use std::io::Read;
    let file = path.display().to_string();
    let err = |message: String| PairingsError::at(&file, None, message);
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
    // Excel in Western Europe saves CSV as Windows-1252, and tournament
    // programs on Windows still write it now and then: a file that is not
    // UTF-8 is read as that, and the names with accents are shown to check.
    match String::from_utf8(bytes) {
        Ok(text) => parse(&text, &file, round),
        Err(e) => {
            let (text, _, _) = encoding_rs::WINDOWS_1252.decode(e.as_bytes());
            let mut p = parse(&text, &file, round)?;
            let accented: Vec<String> = p
                .boards
                .iter()
                .flat_map(|b| [b.tags.get("White"), b.tags.get("Black")])
                .flatten()
                .filter(|n| !n.is_ascii())
                .take(3)
                .map(|n| format!("\"{n}\""))
                .collect();
            let check = if accented.is_empty() {
                String::new()
            } else {
                format!("; check the names with accents: {}", accented.join(", "))
            };
            p.notes.insert(
                0,
                format!(
                    "not UTF-8: read as Windows-1252 (Excel's default in Western Europe){check} (if they are wrong, export the file as UTF-8)"
                ),
            );
            Ok(p)
        }
    }
}

/// Parses a pairings file's text (`file` names it in errors).
pub fn parse(text: &str, file: &str, round: Option<u32>) -> Result<Pairings, PairingsError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    let mut p = match first {
        None => {
            return Err(PairingsError::at(file, None, "empty: no pairings".into()));
        }
        Some(l) if l.starts_with('[') => parse_pgn(text, file, round)?,
        Some(_) => parse_csv(text, file, round)?,
    };
    if p.boards.is_empty() {
        return Err(PairingsError::at(
            file,
            None,
            match round {
                Some(r) => format!("no pairings of round {r}"),
                None => "no pairings".into(),
            },
        ));
    }
    if p.boards.len() > crate::api::MAX_PAIRINGS {
        return Err(PairingsError::at(
            file,
            p.boards.get(crate::api::MAX_PAIRINGS).map(|b| b.line),
            format!("more than {} boards", crate::api::MAX_PAIRINGS),
        ));
    }
    p.boards.sort_by_key(|b| b.board);
    Ok(p)
}

/// Checks a pairing's tags and that its board is new; adds it.
fn add(boards: &mut Vec<Pairing>, pairing: Pairing, file: &str) -> Result<(), PairingsError> {
    let at = |message: String| PairingsError::at(file, Some(pairing.line), message);
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

/// A rating or an id given as a placeholder (`0`, `-`, `?`): stored as none,
/// and said.
fn placeholder(name: &str, v: &str) -> bool {
    matches!(name, "WhiteElo" | "BlackElo" | "WhiteFideId" | "BlackFideId")
        && matches!(v.trim(), "0" | "-" | "?")
}

/// The note for the placeholders `found` (line, tag), by board.
fn placeholders_note(found: &[(usize, String)], boards: &[Pairing]) -> Option<String> {
    if found.is_empty() {
        return None;
    }
    let mut by_board: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for (line, tag) in found {
        if let Some(b) = boards.iter().find(|b| b.line == *line) {
            by_board.entry(b.board).or_default().push(tag);
        }
    }
    let list: Vec<String> = by_board
        .iter()
        .map(|(b, tags)| format!("board {b} ({})", tags.join(", ")))
        .collect();
    Some(format!(
        "no rating or FIDE id given (0, - or ?), so no tag is written: {}",
        list.join("; ")
    ))
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

mod csv;
mod pgn;

use csv::parse_csv;
use pgn::parse_pgn;

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

    /// Every line is checked: each error is said on its own line, ten at most
    /// and then how many more; a game whose tag line does not read is said
    /// once (issue 57: only the first error was named).
    #[test]
    fn every_error_of_a_file_is_said_ten_at_most() {
        let e = parse("board,white,black\n1,A,B\nx,C,D\n2,E\n1,G,H\n", "f", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "f:3: board `x` is not a board number\nf:4: 2 fields, the header row has 3\nf:5: board 1 is paired twice (line 2 has it too)"
        );
        let rows: String = (0..14).map(|i| format!("b{i},A,B\n")).collect();
        let e = parse(&format!("board,white,black\n{rows}"), "f", None).unwrap_err();
        let said = e.to_string();
        assert_eq!(said.lines().count(), MAX_ERRORS + 1, "{said}");
        assert!(said.ends_with("\nf: and 4 more error(s) like these"), "{said}");
        let e = parse(
            "[Round \"1.1\"]\n[White \"A]\n[Black \"B\"]\n\n[Round \"1.2\"]\n[White \"C\"]\n[Black \"\"]\n",
            "f",
            None,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "f:2: the value of White is not in quotes\nf:5: board 2: a pairing names both players: Black is missing"
        );
    }

    /// What the reading decided is said: placeholders stored as no rating,
    /// games of another round left out, an encoding guessed (issue 48).
    #[test]
    fn what_is_read_otherwise_than_written_is_said() {
        let p = parse(
            "board,white,black,white_elo,black_elo\n1,A,B,2400,-\n2,C,D,0,?\n3,E,F,2100,2000\n",
            "f",
            None,
        )
        .unwrap();
        assert!(!p.boards[0].tags.contains_key("BlackElo"));
        assert_eq!(
            p.notes,
            [
                "no rating or FIDE id given (0, - or ?), so no tag is written: board 1 (BlackElo); board 2 (WhiteElo, BlackElo)"
            ]
        );
        let pgn = "[Round \"2.1\"]\n[White \"A\"]\n[Black \"B\"]\n\n[Round \"1.2\"]\n[White \"C\"]\n[Black \"D\"]\n\n[Round \"2.3\"]\n[White \"E\"]\n[Black \"F\"]\n";
        let p = parse(pgn, "f", Some(2)).unwrap();
        assert_eq!(p.boards.len(), 2);
        assert_eq!(
            p.notes,
            ["1 game(s) of other rounds left out, only round 2 read: line 5 (round 1)"]
        );
        // A file as Excel saves it in Western Europe: Windows-1252, not UTF-8.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("round.csv");
        std::fs::write(
            &file,
            b"board;white;black\n1;M\xfcller, J\xfcrgen;Pe\xf1a, Jos\xe9\n2;A;B\n",
        )
        .unwrap();
        let p = read(&file, None).unwrap();
        assert_eq!(p.boards[0].tags["White"], "M\u{fc}ller, J\u{fc}rgen");
        assert_eq!(p.boards[0].tags["Black"], "Pe\u{f1}a, Jos\u{e9}");
        assert!(
            p.notes[0].starts_with("not UTF-8: read as Windows-1252 (Excel's default in Western Europe); check the names with accents: \"M\u{fc}ller, J\u{fc}rgen\", \"Pe\u{f1}a, Jos\u{e9}\""),
            "{:?}",
            p.notes
        );
        // UTF-8 is read as it is, with nothing to say.
        std::fs::write(&file, "board,white,black\n1,M\u{fc}ller,B\n").unwrap();
        assert_eq!(read(&file, None).unwrap().notes, Vec::<String>::new());
    }
}
