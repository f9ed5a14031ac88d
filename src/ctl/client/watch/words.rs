//! `ctl watch`'s words: an event that needs the arbiter in one line for a
//! person (or one JSON object), with what the arbiter may do about it.

/// An event that needs the arbiter, as `ctl watch` prints it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Watched {
    /// Local time, `HH:MM:SS`.
    pub time: String,
    pub board: u32,
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(flatten)]
    pub fields: serde_json::Map<String, serde_json::Value>,
}

/// The ordinal of a count (`1st`, `2nd`, ...).
fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// What the arbiter may do about a completed violation (Art. 7.5.5; rapid and
/// blitz A.4.2, B.3), with the `ctl` command that does it: `side` is the
/// offender, `count` their completed violations so far, `profile` the rules
/// profile (`standard`, `rapid`, `blitz`), `to_clock` whether the daemon already
/// put the extra time on the opponent's clock.
pub fn penalty_action(board: u32, side: &str, count: u64, profile: &str, to_clock: bool) -> String {
    let opponent = if side == "white" { "black" } else { "white" };
    let board = if board == 0 {
        "BOARD".to_string()
    } else {
        board.to_string()
    };
    if count >= 2 {
        let (lost, drawn) = if side == "white" {
            ("0-1", "1/2")
        } else {
            ("1-0", "1/2")
        };
        return format!(
            "declare the game lost for {side} (ctl result {board} {lost} --termination \"rules infraction\"), \
             or drawn if {opponent} cannot checkmate (ctl result {board} {drawn} --termination \"rules infraction\")"
        );
    }
    let minutes = if profile == "standard" { "2m" } else { "1m" };
    if to_clock {
        format!(
            "nothing more: the extra time is on {opponent}'s clock (ctl add-time {board} {opponent} -{minutes} takes it back)"
        )
    } else {
        format!("give {opponent} the extra time (ctl add-time {board} {opponent} +{minutes})")
    }
}

/// The pieces the record has on `squares` in the position `fen` (the board's
/// `Fen` property): `{"d8": "black queen"}`; a square the record has empty is
/// left out, and so is everything when the FEN does not read.
pub fn pieces_on(fen: &str, squares: &[String]) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    let placement = fen.split_whitespace().next().unwrap_or_default();
    let Ok(board) = shakmaty::Board::from_ascii_board_fen(placement.as_bytes()) else {
        return out;
    };
    for name in squares {
        let Ok(sq) = name.parse::<shakmaty::Square>() else {
            continue;
        };
        if let Some(p) = board.piece_at(sq) {
            let colour = if p.color.is_white() { "white" } else { "black" };
            let role = match p.role {
                shakmaty::Role::Pawn => "pawn",
                shakmaty::Role::Knight => "knight",
                shakmaty::Role::Bishop => "bishop",
                shakmaty::Role::Rook => "rook",
                shakmaty::Role::Queen => "queen",
                shakmaty::Role::King => "king",
            };
            out.insert(name.clone(), serde_json::Value::from(format!("{colour} {role}")));
        }
    }
    out
}

/// One line for a person.
pub fn watched_line(w: &Watched) -> String {
    let f = |k: &str| match w.fields.get(k) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(" "),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    let what = match w.kind.as_str() {
        "irregular" => {
            let penalty = f("penalty");
            let done = if f("completed") != "true" {
                String::new()
            } else if penalty.is_empty() {
                // A daemon that does not send the penalty's words.
                format!(
                    ", completed: {}'s {} completed one",
                    f("side"),
                    ordinal(f("count").parse().unwrap_or(0))
                )
            } else {
                let action = f("action");
                if action.is_empty() {
                    format!(": {penalty}")
                } else {
                    format!(": {penalty}; the arbiter may {action}")
                }
            };
            let kind = f("kind");
            let help = match kind.as_str() {
                "lost_track" => {
                    " (the record lost track: set the position with ctl position, or have the players set up the last recorded one)"
                }
                "illegal_move" => " (7.5)",
                "displaced" => " (7.4)",
                _ => "",
            };
            // Each square with the piece the record has on it (`d8 (black
            // queen)`): the side named is the side to move, not the piece's.
            let pieces = w.fields.get("pieces").and_then(|p| p.as_object());
            let squares: Vec<String> = match w.fields.get("squares") {
                Some(serde_json::Value::Array(a)) => a
                    .iter()
                    .filter_map(|v| v.as_str())
                    .map(
                        |sq| match pieces.and_then(|p| p.get(sq)).and_then(|p| p.as_str()) {
                            Some(piece) => format!("{sq} ({piece})"),
                            None => sq.to_string(),
                        },
                    )
                    .collect(),
                _ => Vec::new(),
            };
            let on = if squares.is_empty() {
                String::new()
            } else {
                format!(" on {}", squares.join(" "))
            };
            format!("IRREGULAR {kind}{on}, {} to move{help}{done}", f("side"))
        }
        "touch_move" => format!(
            "TOUCH-MOVE {}: {} touched {} and played {}",
            f("article"),
            f("side"),
            f("touched"),
            f("played")
        ),
        "flag" => format!(
            "FLAG: {}'s flag has fallen after ply {}{}",
            f("side"),
            f("ply"),
            if f("count_met") == "true" {
                " (move count met)"
            } else {
                ""
            }
        ),
        "draw_claimable" => format!("DRAW CLAIMABLE: {}", f("reason")),
        "clock_unresponsive" => format!(
            "CLOCK NOT ANSWERING (command {}): check the clock's power and cable",
            f("command")
        ),
        "disconnected" => "BOARD DISCONNECTED: check its cable and power; the game is kept".to_string(),
        "connected" if f("again") == "true" => "board connected again".to_string(),
        "connected" => "board connected".to_string(),
        "board_gone" => "BOARD GONE from the daemon (stopped, or the daemon restarted)".to_string(),
        "game_end" if f("was").is_empty() => format!("game ends {} ({})", f("result"), f("termination")),
        "game_end" => format!(
            "game ends {} ({}), in place of {}",
            f("result"),
            f("termination"),
            f("was")
        ),
        "game_reopened" if f("decision").is_empty() => {
            format!(
                "GAME REOPENED: its result {} is withdrawn, the game goes on",
                f("was")
            )
        }
        "game_reopened" => format!(
            "GAME REOPENED: its result {} is withdrawn, the game goes on (decision: {})",
            f("was"),
            f("decision")
        ),
        "resolved" => "resolved: the board is in step again".to_string(),
        "lichess_game_refused" => format!("LICHESS REFUSED {}: {}; {}", f("game"), f("text"), f("remedy")),
        "lichess_refused" => format!("LICHESS REFUSES THE ROUND: {}: {}", f("text"), f("remedy")),
        "lichess_rejected" => format!("LICHESS REJECTED THE PGN: {}; {}", f("text"), f("remedy")),
        "lichess_unreachable" if f("remedy").is_empty() => format!("LICHESS AWAY: {}", f("text")),
        "lichess_unreachable" => format!("LICHESS AWAY: {}: {}", f("text"), f("remedy")),
        "lichess_back" => format!("lichess back: {}", f("text")),
        "lichess_not_pushed" => format!("NOT ON LICHESS: {}: {}", f("text"), f("remedy")),
        other => other.to_string(),
    };
    if w.kind == "reloaded" {
        let what = match f("kind").as_str() {
            // What `ctl` set gave way to the file: the arbiter may not expect it.
            "replaced" => format!("CONFIGURATION READ AGAIN: {}", f("words")),
            "failed" => format!("CONFIGURATION NOT READ AGAIN: {}", f("words")),
            _ => format!("configuration read again: {}", f("words")),
        };
        return format!("{} daemon: {what}", w.time);
    }
    if w.kind.starts_with("lichess_") {
        return format!("{} lichess round {} ({}): {what}", w.time, f("round"), w.id);
    }
    let board = if w.board == 0 {
        "board ?".to_string()
    } else {
        format!("board {}", w.board)
    };
    format!("{} {board} ({}): {what}", w.time, w.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watched_event_in_one_line_with_the_board() {
        let mut fields = serde_json::Map::new();
        fields.insert("kind".into(), "lost_track".into());
        fields.insert("side".into(), "black".into());
        fields.insert("squares".into(), serde_json::json!(["e7", "e5"]));
        fields.insert("completed".into(), false.into());
        fields.insert("count".into(), 0.into());
        let w = Watched {
            time: "14:02:11".into(),
            board: 2,
            id: "dgt_2".into(),
            kind: "irregular".into(),
            fields,
        };
        let line = watched_line(&w);
        assert!(
            line.starts_with(
                "14:02:11 board 2 (dgt_2): IRREGULAR lost_track on e7 e5, black to move (the record lost track"
            ),
            "{line}"
        );
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(json["type"], "irregular");
        assert_eq!(json["board"], 2);
        assert_eq!(json["squares"], serde_json::json!(["e7", "e5"]));
        // No squares: no "on"; a completed one says its penalty and what to do.
        let mut f = w.fields.clone();
        f.insert("kind".into(), "clock_without_move".into());
        f.insert("squares".into(), serde_json::json!([]));
        f.insert("completed".into(), true.into());
        f.insert("count".into(), 2.into());
        f.insert(
            "penalty".into(),
            "completed violation number 2 by black: the game is lost".into(),
        );
        f.insert(
            "action".into(),
            penalty_action(2, "black", 2, "rapid", false).into(),
        );
        let line = watched_line(&Watched {
            fields: f,
            ..w.clone()
        });
        assert_eq!(
            line,
            "14:02:11 board 2 (dgt_2): IRREGULAR clock_without_move, black to move: completed violation \
             number 2 by black: the game is lost; the arbiter may declare the game lost for black (ctl result 2 \
             1-0 --termination \"rules infraction\"), or drawn if white cannot checkmate (ctl result 2 1/2 \
             --termination \"rules infraction\")"
        );
        // The piece the record has on a square, whoever is to move.
        let pieces = pieces_on(
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
            &["d8".into(), "e5".into()],
        );
        assert_eq!(
            serde_json::Value::Object(pieces.clone()),
            serde_json::json!({"d8": "black queen"})
        );
        let mut f = w.fields.clone();
        f.insert("kind".into(), "displaced".into());
        f.insert("side".into(), "white".into());
        f.insert("squares".into(), serde_json::json!(["d8"]));
        f.insert("pieces".into(), serde_json::Value::Object(pieces));
        let line = watched_line(&Watched {
            fields: f,
            ..w.clone()
        });
        assert!(
            line.ends_with("IRREGULAR displaced on d8 (black queen), white to move (7.4)"),
            "{line}"
        );
        assert!(pieces_on("not a fen", &["d8".into()]).is_empty());
        assert_eq!(
            penalty_action(3, "white", 1, "standard", false),
            "give black the extra time (ctl add-time 3 black +2m)"
        );
        assert!(penalty_action(3, "white", 1, "blitz", true).contains("-1m takes it back"));
        // The first connection is not "again".
        let c = Watched {
            kind: "connected".into(),
            fields: serde_json::Map::new(),
            ..w.clone()
        };
        assert!(watched_line(&c).ends_with(": board connected"));
        let mut again = c.clone();
        again.fields.insert("again".into(), true.into());
        assert!(watched_line(&again).ends_with(": board connected again"));
        assert_eq!(ordinal(2), "2nd");
        assert_eq!(ordinal(12), "12th");
    }

    #[test]
    fn a_reload_in_one_line_for_the_daemon() {
        let mut fields = serde_json::Map::new();
        fields.insert("round".into(), 3.into());
        fields.insert("kind".into(), "replaced".into());
        fields.insert(
            "words".into(),
            "the file's round 3 and its pairings replace round 2".into(),
        );
        let w = Watched {
            time: "14:02:11".into(),
            board: 0,
            id: String::new(),
            kind: "reloaded".into(),
            fields,
        };
        assert_eq!(
            watched_line(&w),
            "14:02:11 daemon: CONFIGURATION READ AGAIN: the file's round 3 and its pairings replace round 2"
        );
        let mut kept = w.clone();
        kept.fields.insert("kind".into(), "kept".into());
        kept.fields.insert(
            "words".into(),
            "round 2 and the pairings set by `ctl round` stand".into(),
        );
        assert_eq!(
            watched_line(&kept),
            "14:02:11 daemon: configuration read again: round 2 and the pairings set by `ctl round` stand"
        );
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(json["type"], "reloaded");
        assert_eq!(json["kind"], "replaced");
        assert_eq!(json["round"], 3);
    }

    #[test]
    fn a_lichess_report_in_one_line_with_its_round() {
        let mut fields = serde_json::Map::new();
        fields.insert("round".into(), 3.into());
        fields.insert("lichess_id".into(), "AbCd1234".into());
        fields.insert("game".into(), "board 2: C - D".into());
        fields.insert("text".into(), "No move found: Pawn a8".into());
        fields.insert("remedy".into(), "correct it".into());
        let w = Watched {
            time: "14:02:11".into(),
            board: 0,
            id: "AbCd1234".into(),
            kind: "lichess_game_refused".into(),
            fields,
        };
        assert_eq!(
            watched_line(&w),
            "14:02:11 lichess round 3 (AbCd1234): LICHESS REFUSED board 2: C - D: No move found: Pawn a8; correct it"
        );
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(json["type"], "lichess_game_refused");
        assert_eq!(json["round"], 3);
    }
}
