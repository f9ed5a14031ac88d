//! Reading PGN in the tests: the games of a data file (tags, start, moves), a
//! text cut into its games, the moves of a published PGN.

/// A game from a PGN file: its tags and SAN moves (up to the first that does not
/// parse or is not legal).
pub struct PgnGame {
    pub tags: Vec<(String, String)>,
    pub start: shakmaty::Chess,
    pub mode: shakmaty::CastlingMode,
    pub moves: Vec<shakmaty::Move>,
}

impl PgnGame {
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Reads every game of a PGN file (tags, comments, variations and NAGs handled).
pub fn pgn_games(rel: &str) -> Vec<PgnGame> {
    use shakmaty::{CastlingMode, Chess, Position, fen::Fen, san::San};
    let text = String::from_utf8_lossy(&std::fs::read(super::data(rel)).expect("read pgn")).into_owned();
    let mut games = Vec::new();
    for (tags, movetext) in pgn_sections(&text) {
        let tag = |k: &str| tags.iter().find(|(t, _)| t == k).map(|(_, v)| v.clone());
        let chess960 = tag("Variant").is_some_and(|v| v.to_lowercase().contains("960"));
        let mode = if chess960 {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        };
        let start = match tag("FEN") {
            Some(f) => match f
                .parse::<Fen>()
                .ok()
                .and_then(|f| f.into_position::<Chess>(mode).ok())
            {
                Some(p) => p,
                None => continue,
            },
            None => Chess::default(),
        };
        // Strip comments, variations and NAGs.
        let mut clean = String::new();
        let (mut brace, mut paren) = (false, 0);
        for c in movetext.chars() {
            match c {
                '{' => brace = true,
                '}' => brace = false,
                '(' if !brace => paren += 1,
                ')' if !brace => paren -= 1,
                _ if brace || paren > 0 => {}
                _ => clean.push(c),
            }
        }
        let mut pos = start.clone();
        let mut moves = Vec::new();
        for word in clean.split_whitespace() {
            let w = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
            let w = w.trim_end_matches(['!', '?']);
            if w.is_empty() || w.starts_with('$') || matches!(w, "*" | "1-0" | "0-1" | "1/2-1/2") {
                continue;
            }
            let Some(mv) = w.parse::<San>().ok().and_then(|s| s.to_move(&pos).ok()) else {
                break;
            };
            pos.play_unchecked(mv);
            moves.push(mv);
        }
        games.push(PgnGame {
            tags,
            start,
            mode,
            moves,
        });
    }
    games
}

/// The first of the famous games whose moves (up to its first annotation error)
/// end in checkmate, of 30 plies or more.
pub fn mated_game() -> PgnGame {
    use shakmaty::Position;
    let mated = |g: &PgnGame| {
        let mut pos = g.start.clone();
        g.moves.iter().for_each(|m| pos.play_unchecked(*m));
        g.moves.len() >= 30 && pos.is_checkmate()
    };
    let games = pgn_games("games/immortal-games.pgn");
    games
        .into_iter()
        .find(mated)
        .expect("a game that ends in checkmate")
}

/// A PGN text cut into its games: each one's tags, in order, and its movetext
/// (lines starting with `%`, escapes, left out).
pub fn pgn_sections(text: &str) -> Vec<(Vec<(String, String)>, String)> {
    let mut games = Vec::new();
    let mut tags: Vec<(String, String)> = Vec::new();
    let mut movetext = String::new();
    let mut flush = |tags: &mut Vec<(String, String)>, movetext: &mut String| {
        if !tags.is_empty() || !movetext.trim().is_empty() {
            games.push((std::mem::take(tags), std::mem::take(movetext)));
        }
    };
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') && l.ends_with(']') {
            if !movetext.trim().is_empty() {
                flush(&mut tags, &mut movetext);
            }
            if let Some((k, v)) = l[1..l.len() - 1].split_once(' ') {
                tags.push((k.to_string(), v.trim().trim_matches('"').to_string()));
            }
        } else if !l.starts_with('%') {
            movetext.push_str(line);
            movetext.push('\n');
        }
    }
    flush(&mut tags, &mut movetext);
    games
}

/// The moves of every game of a PGN file, by shakmaty's reading of its SAN (from
/// the game's `FEN` tag when it has one).
pub fn pgn_moves(text: &str) -> Vec<Vec<String>> {
    text.split("\n\n[")
        .map(|g| {
            let body: String = g
                .lines()
                .filter(|l| !l.starts_with('['))
                .collect::<Vec<_>>()
                .join(" ");
            let fen = g.lines().find_map(|l| {
                let l = l.strip_prefix('[').unwrap_or(l);
                l.strip_prefix("FEN \"").and_then(|r| r.strip_suffix("\"]"))
            });
            let mut pos = fen.map_or_else(shakmaty::Chess::default, |f| {
                eboard_bridge::rules::parse_start(f)
                    .unwrap_or_else(|e| panic!("FEN `{f}`: {e}"))
                    .0
            });
            let mut out = Vec::new();
            let mut in_comment = false;
            for tok in body.split_whitespace() {
                if tok.starts_with('{') {
                    in_comment = true;
                }
                if in_comment {
                    in_comment = !tok.ends_with('}');
                    continue;
                }
                if tok.ends_with('.') || ["*", "1-0", "0-1", "1/2-1/2"].contains(&tok) {
                    continue;
                }
                let san: shakmaty::san::San = tok.parse().unwrap_or_else(|e| panic!("`{tok}`: {e}"));
                let mv = san.to_move(&pos).unwrap_or_else(|e| panic!("`{tok}`: {e}"));
                out.push(shakmaty::san::SanPlus::from_move_and_play_unchecked(&mut pos, mv).to_string());
            }
            out
        })
        .collect()
}
