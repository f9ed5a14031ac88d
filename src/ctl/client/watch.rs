//! `ctl watch`: the events that need the arbiter, followed on the bus (the
//! boards' signals), put in words an arbiter can act on (what happened, the
//! article, the penalty and what may be done, whose piece stands where), one
//! line each or one JSON object each.

use std::collections::HashMap;

use futures_util::StreamExt;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use super::super::format;
use super::{CALL_TIMEOUT, Client, CtlError};
use crate::bus::{BOARD_INTERFACE, BOARD_PATH_PREFIX, BUS_NAME, ROOT_PATH};

impl Client {
    /// Prints the events that need the arbiter as they happen, until Ctrl-C (or
    /// the bus goes away). `json`: one object a line.
    pub async fn watch(&self, json: bool) -> Result<(), CtlError> {
        use std::io::Write;
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .path_namespace(ROOT_PATH)
            .map_err(|e| CtlError::Refused(e.to_string()))?
            .build();
        let subscribe = zbus::MessageStream::for_match_rule(rule, &self.conn, Some(256));
        let mut stream = match tokio::time::timeout(CALL_TIMEOUT, subscribe).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(self.explain("watch", e)),
            Err(_) => {
                return Err(CtlError::Refused(
                    "the bus did not answer a subscription in 10 s".into(),
                ));
            }
        };
        // Which board each object is (refreshed when an unknown one speaks).
        let mut known: HashMap<String, (u32, String)> = HashMap::new();
        // The boards seen on their line before (a connection is then "again"):
        // at the start, those connected or that reported a serial number.
        let mut been_connected: std::collections::HashSet<String> = Default::default();
        // A completed violation's penalty (the `Penalty` signal), until the
        // `Irregular` signal it comes just before.
        let mut penalties: HashMap<String, serde_json::Map<String, serde_json::Value>> = HashMap::new();
        match self.boards().await {
            Ok(boards) => {
                for b in boards {
                    if b.connected || !b.serial.is_empty() {
                        been_connected.insert(b.path.clone());
                    }
                    known.insert(b.path.clone(), (b.number, b.id.clone()));
                }
            }
            Err(e) => eprintln!("eboard-bridge ctl: {e}; watching for it to start"),
        }
        let count = known.len();
        eprintln!(
            "eboard-bridge ctl: watching {count} board(s) on the {} (Ctrl-C to stop)",
            self.which.name()
        );
        let stdout = std::io::stdout();
        loop {
            let msg = tokio::select! {
                m = stream.next() => m,
                _ = tokio::signal::ctrl_c() => return Ok(()),
            };
            let Some(msg) = msg else {
                return Err(CtlError::Refused(format!("the {} went away", self.which.name())));
            };
            let Ok(msg) = msg else { continue };
            let header = msg.header();
            let (Some(path), Some(member)) = (header.path(), header.member()) else {
                continue;
            };
            let path = path.to_string();
            let member = member.to_string();
            let Some((kind, mut fields, about)) = watched(&msg, &member, &path) else {
                continue;
            };
            if kind == "penalty" {
                penalties.insert(about, fields);
                continue;
            }
            if member == "InterfacesAdded" {
                known.remove(&about);
            }
            if !known.contains_key(&about) && about.starts_with(BOARD_PATH_PREFIX) {
                if let Ok(boards) = self.boards().await {
                    for b in boards {
                        known.insert(b.path.clone(), (b.number, b.id.clone()));
                    }
                }
            }
            if kind.is_empty() {
                continue;
            }
            let (board, id) = known.get(&about).cloned().unwrap_or_else(|| {
                (
                    0,
                    about
                        .strip_prefix(BOARD_PATH_PREFIX)
                        .unwrap_or(&about)
                        .to_string(),
                )
            });
            match kind.as_str() {
                "irregular" => {
                    self.irregular_words(&about, board, &mut fields, &mut penalties)
                        .await
                }
                "connected" => {
                    let again = !been_connected.insert(about.clone());
                    fields.insert("again".into(), again.into());
                }
                "disconnected" => {
                    been_connected.insert(about.clone());
                }
                _ => {}
            }
            let w = Watched {
                time: format::local_time(),
                board,
                id,
                kind,
                fields,
            };
            let line = if json {
                serde_json::to_string(&w).unwrap_or_default()
            } else {
                watched_line(&w)
            };
            let mut out = stdout.lock();
            if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                // Whoever read the output (a pipe) has gone.
                return Ok(());
            }
        }
    }
}

impl Client {
    /// What an `Irregular` signal's fields lack for a person: the pieces the
    /// record has on its squares (the side it names is the side to move) and,
    /// for a completed violation, the penalty's words (the `Penalty` signal sent
    /// just before) and what the arbiter may do.
    async fn irregular_words(
        &self,
        path: &str,
        board: u32,
        fields: &mut serde_json::Map<String, serde_json::Value>,
        penalties: &mut HashMap<String, serde_json::Map<String, serde_json::Value>>,
    ) {
        let side = fields
            .get("side")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        let count = fields
            .get("count")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        let completed = fields.get("completed").and_then(serde_json::Value::as_bool) == Some(true);
        if let Some(p) = penalties.remove(path).filter(|_| completed) {
            let offender = p.get("side").and_then(|v| v.as_str()).unwrap_or_default();
            let p_count = p.get("count").and_then(serde_json::Value::as_u64).unwrap_or(0);
            if offender == side && p_count == count {
                if let Some(words) = p.get("words") {
                    fields.insert("penalty".into(), words.clone());
                }
                let profile = p.get("profile").and_then(|v| v.as_str()).unwrap_or("standard");
                let to_clock = p.get("to_clock").and_then(serde_json::Value::as_bool) == Some(true);
                fields.insert(
                    "action".into(),
                    penalty_action(board, &side, count, profile, to_clock).into(),
                );
            }
        }
        let squares: Vec<String> = match fields.get("squares") {
            Some(serde_json::Value::Array(a)) => {
                a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
            }
            _ => Vec::new(),
        };
        if squares.is_empty() {
            return;
        }
        let ask = self.conn.call_method(
            Some(BUS_NAME),
            path,
            Some("org.freedesktop.DBus.Properties"),
            "Get",
            &(BOARD_INTERFACE, "Fen"),
        );
        // Without the position (no answer in time), the line goes without pieces.
        let Ok(Ok(reply)) = tokio::time::timeout(CALL_TIMEOUT, ask).await else {
            return;
        };
        let Ok(value) = reply.body().deserialize::<OwnedValue>() else {
            return;
        };
        let Ok(fen) = String::try_from(value) else {
            return;
        };
        let pieces = pieces_on(&fen, &squares);
        if !pieces.is_empty() {
            fields.insert("pieces".into(), serde_json::Value::Object(pieces));
        }
    }
}

/// An event that needs the arbiter in a signal: its type, fields and the object
/// it is about. `Some` with an empty type for a signal that only tells of boards
/// (one added); `None` for the rest.
fn watched(
    msg: &zbus::Message,
    member: &str,
    path: &str,
) -> Option<(String, serde_json::Map<String, serde_json::Value>, String)> {
    use serde_json::{Value, json};
    let body = msg.body();
    let mut f = serde_json::Map::new();
    let mut put = |k: &str, v: Value| {
        f.insert(k.to_string(), v);
    };
    let kind = match member {
        "Irregular" => {
            let (kind, side, squares, completed, count): (String, String, Vec<String>, bool, u32) =
                body.deserialize().ok()?;
            put("kind", json!(kind));
            put("side", json!(side));
            put("squares", json!(squares));
            put("completed", json!(completed));
            put("count", json!(count));
            "irregular"
        }
        "TouchMove" => {
            let (article, side, touched, played): (String, String, Vec<String>, String) =
                body.deserialize().ok()?;
            put("article", json!(article));
            put("side", json!(side));
            put("touched", json!(touched));
            put("played", json!(played));
            "touch_move"
        }
        "Flag" => {
            let (side, ply, count_met): (String, u32, bool) = body.deserialize().ok()?;
            put("side", json!(side));
            put("ply", json!(ply));
            put("count_met", json!(count_met));
            "flag"
        }
        "Penalty" => {
            let (side, count, profile, to_clock, words): (String, u32, String, bool, String) =
                body.deserialize().ok()?;
            put("side", json!(side));
            put("count", json!(count));
            put("profile", json!(profile));
            put("to_clock", json!(to_clock));
            put("words", json!(words));
            "penalty"
        }
        "DrawClaimable" => {
            let (reason,): (String,) = body.deserialize().ok()?;
            put("reason", json!(reason));
            "draw_claimable"
        }
        "GameEnded" => {
            let (result, termination): (String, String) = body.deserialize().ok()?;
            put("result", json!(result));
            put("termination", json!(termination));
            "game_end"
        }
        "ClockUnresponsive" => {
            let (command,): (String,) = body.deserialize().ok()?;
            put("command", json!(command));
            "clock_unresponsive"
        }
        "Resolved" => {
            let (fen,): (String,) = body.deserialize().ok()?;
            put("fen", json!(fen));
            "resolved"
        }
        "PropertiesChanged" => {
            let (iface, changed, _): (String, HashMap<String, OwnedValue>, Vec<String>) =
                body.deserialize().ok()?;
            if iface != BOARD_INTERFACE {
                return None;
            }
            let connected = changed.get("Connected")?.try_clone().ok()?;
            if bool::try_from(connected).ok()? {
                "connected"
            } else {
                "disconnected"
            }
        }
        "InterfacesRemoved" => {
            let (object, ifaces): (OwnedObjectPath, Vec<String>) = body.deserialize().ok()?;
            if !ifaces.iter().any(|i| i == BOARD_INTERFACE) {
                return None;
            }
            return Some(("board_gone".into(), f, object.to_string()));
        }
        "InterfacesAdded" => {
            let (object, _): (OwnedObjectPath, HashMap<String, HashMap<String, OwnedValue>>) =
                body.deserialize().ok()?;
            return Some((String::new(), f, object.to_string()));
        }
        _ => return None,
    };
    Some((kind.to_string(), f, path.to_string()))
}

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
        "game_end" => format!("game ends {} ({})", f("result"), f("termination")),
        "resolved" => "resolved: the board is in step again".to_string(),
        other => other.to_string(),
    };
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
}
