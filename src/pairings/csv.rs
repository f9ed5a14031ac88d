//! Pairings from a CSV file with a header row (`board,white,black,...`; `,` or
//! `;` between fields, RFC 4180 quoting).

use std::collections::BTreeMap;

use super::{Pairing, Pairings, PairingsError, add, placeholder, placeholders_note, value};

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

pub(super) fn parse_csv(text: &str, file: &str, round: Option<u32>) -> Result<Pairings, PairingsError> {
    let at = |line: usize, message: String| PairingsError::at(file, Some(line), message);
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
    let mut found = Vec::new();
    // Every row is checked: the errors are said all at once.
    let mut errors = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        let fields = match csv_fields(line, sep) {
            Ok(f) => f,
            Err(e) => {
                errors.push(at(n, e));
                continue;
            }
        };
        if fields.len() != columns.len() {
            errors.push(at(
                n,
                format!("{} fields, the header row has {}", fields.len(), columns.len()),
            ));
            continue;
        }
        let mut board = None;
        let mut tags = BTreeMap::new();
        for (tag, v) in columns.iter().zip(&fields) {
            if *tag == "Board" {
                board = v.parse::<u32>().ok();
                if board.is_none() {
                    errors.push(at(
                        n,
                        format!("board `{}` is not a board number", crate::log::clip_to(v, 20)),
                    ));
                }
            } else {
                if placeholder(tag, v) {
                    found.push((n, tag.to_string()));
                }
                if let Some(v) = value(tag, v) {
                    tags.insert(tag.to_string(), v);
                }
            }
        }
        let Some(board) = board else { continue };
        let pairing = Pairing { board, line: n, tags };
        if let Err(e) = add(&mut boards, pairing, file) {
            errors.push(e);
        }
    }
    PairingsError::all(errors)?;
    let notes = placeholders_note(&found, &boards).into_iter().collect();
    Ok(Pairings {
        file: file.into(),
        round,
        boards,
        notes,
    })
}
