//! `ctl watch`: the events that need the arbiter, followed on the bus (the
//! boards' signals), put in words an arbiter can act on (what happened, the
//! article, the penalty and what may be done, whose piece stands where), one
//! line each or one JSON object each.

use std::collections::HashMap;

use futures_util::StreamExt;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use super::super::format;
use super::{CALL_TIMEOUT, Client, CtlError};

mod words;
use crate::bus::{BOARD_INTERFACE, BOARD_PATH_PREFIX, BUS_NAME, ROOT_PATH};
use words::{Watched, penalty_action, pieces_on, watched_line};

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
        // Which board each object is (refreshed when an unknown one speaks,
        // its number followed as it changes).
        let mut known: HashMap<String, (u32, String)> = HashMap::new();
        // Each board's result as last seen, and the boards whose new game
        // started since (its result cleared is no reopening).
        let mut results: HashMap<String, String> = HashMap::new();
        let mut started: std::collections::HashSet<String> = Default::default();
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
                    results.insert(b.path.clone(), b.result.clone());
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
            let Some((mut kind, mut fields, about)) = watched(&msg, &member, &path) else {
                continue;
            };
            if kind == "penalty" {
                penalties.insert(about, fields);
                continue;
            }
            if member == "InterfacesAdded" {
                known.remove(&about);
                if let Some(n) = fields.get("number").and_then(|v| v.as_u64()) {
                    let id = about
                        .strip_prefix(BOARD_PATH_PREFIX)
                        .unwrap_or(&about)
                        .to_string();
                    known.insert(about.clone(), (u32::try_from(n).unwrap_or(0), id));
                }
            }
            if !known.contains_key(&about) && about.starts_with(BOARD_PATH_PREFIX) {
                if let Ok(boards) = self.boards().await {
                    for b in boards {
                        known.insert(b.path.clone(), (b.number, b.id.clone()));
                        results.entry(b.path.clone()).or_insert(b.result.clone());
                    }
                }
            }
            // A board's number changed (learnt from its serial number): the
            // lines from now on, and the commands they suggest, name it.
            if let Some(n) = fields.remove("number").and_then(|v| v.as_u64()) {
                if let Some(k) = known.get_mut(&about) {
                    k.0 = u32::try_from(n).unwrap_or(k.0);
                }
            }
            if fields.remove("started").is_some() {
                started.insert(about.clone());
            }
            if kind == "game_end" {
                // A result given over another (a forced decision): said.
                let was = results
                    .get(&about)
                    .filter(|r| !r.is_empty() && !started.contains(&about));
                if let Some(was) = was {
                    fields.insert("was".into(), was.clone().into());
                }
            }
            if let Some(now) = fields
                .remove("result_now")
                .and_then(|v| v.as_str().map(str::to_string))
            {
                let was = results.insert(about.clone(), now.clone()).unwrap_or_default();
                let new_game = started.remove(&about);
                if now.is_empty() && !was.is_empty() && !new_game && kind.is_empty() {
                    // The game's result withdrawn (an undo, a take-back or a
                    // position forced on a finished game): the game goes on.
                    kind = "game_reopened".into();
                    fields.insert("was".into(), was.into());
                    if let Some(d) = self.last_decision(&about).await {
                        fields.insert("decision".into(), d.into());
                    }
                }
            }
            if kind.is_empty() {
                continue;
            }
            let lichess_id = fields
                .get("lichess_id")
                .and_then(|v| v.as_str())
                .map(str::to_string);
            let (board, id) = match lichess_id.filter(|_| kind.starts_with("lichess_")) {
                // The pushes to lichess are the round's, not a board's.
                Some(id) => (0, id),
                // The configuration read again: the daemon's, not a board's.
                None if kind == "reloaded" => (0, String::new()),
                None => known.get(&about).cloned().unwrap_or_else(|| {
                    (
                        0,
                        about
                            .strip_prefix(BOARD_PATH_PREFIX)
                            .unwrap_or(&about)
                            .to_string(),
                    )
                }),
            };
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
    /// The board's last decision in words, with who made it (`undo: result
    /// 1-0 (alice)`), from its `History`; `None` when it cannot be read in time.
    async fn last_decision(&self, path: &str) -> Option<String> {
        let ask = self
            .conn
            .call_method(Some(BUS_NAME), path, Some(BOARD_INTERFACE), "History", &(8u32,));
        let reply = tokio::time::timeout(CALL_TIMEOUT, ask).await.ok()?.ok()?;
        let json: String = reply.body().deserialize().ok()?;
        let entries: Vec<crate::api::history::HistoryEntry> = serde_json::from_str(&json).ok()?;
        let e = entries.iter().rev().find(|e| e.kind == "decision")?;
        Some(match &e.by {
            Some(by) => format!("{} ({by})", e.text),
            None => e.text.clone(),
        })
    }

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
            // What the watch follows of a board besides: its number (a board
            // learns it from its serial number) and its result (one withdrawn
            // reopens the game).
            let text = |name: &str| {
                changed
                    .get(name)
                    .and_then(|v| String::try_from(v.try_clone().ok()?).ok())
            };
            if let Some(n) = changed
                .get("BoardNumber")
                .and_then(|v| u32::try_from(v.try_clone().ok()?).ok())
                .filter(|n| *n > 0)
            {
                put("number", json!(n));
            }
            if let Some(result) = text("Result") {
                put("result_now", json!(result));
            }
            match changed
                .get("Connected")
                .and_then(|v| bool::try_from(v.try_clone().ok()?).ok())
            {
                Some(true) => "connected",
                Some(false) => "disconnected",
                // Nothing the watch follows (a clock's times, a move).
                None if f.is_empty() => return None,
                None => "",
            }
        }
        "GameStarted" => {
            put("started", json!(true));
            ""
        }
        "LichessReport" => {
            type Report = (u32, String, String, String, String, String);
            let (round, id, kind, game, text, remedy): Report = body.deserialize().ok()?;
            put("round", json!(round));
            put("lichess_id", json!(id));
            put("game", json!(game));
            put("text", json!(text));
            put("remedy", json!(remedy));
            return Some((format!("lichess_{kind}"), f, path.to_string()));
        }
        "Reloaded" => {
            let (round, kind, words): (u32, String, String) = body.deserialize().ok()?;
            put("round", json!(round));
            put("kind", json!(kind));
            put("words", json!(words));
            "reloaded"
        }
        "InterfacesRemoved" => {
            let (object, ifaces): (OwnedObjectPath, Vec<String>) = body.deserialize().ok()?;
            if !ifaces.iter().any(|i| i == BOARD_INTERFACE) {
                return None;
            }
            return Some(("board_gone".into(), f, object.to_string()));
        }
        "InterfacesAdded" => {
            let (object, ifaces): (OwnedObjectPath, HashMap<String, HashMap<String, OwnedValue>>) =
                body.deserialize().ok()?;
            // A board's number comes with it: known before any line of its
            // (without asking the daemon, which may not own its name yet).
            let number = ifaces
                .get(BOARD_INTERFACE)
                .and_then(|p| p.get("BoardNumber"))
                .and_then(|v| u32::try_from(v.try_clone().ok()?).ok())
                .filter(|n| *n > 0);
            if let Some(n) = number {
                put("number", json!(n));
            }
            return Some((String::new(), f, object.to_string()));
        }
        _ => return None,
    };
    Some((kind.to_string(), f, path.to_string()))
}
