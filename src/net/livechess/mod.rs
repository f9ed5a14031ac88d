//! The DGT LiveChess "eboards" WebSocket API as the lichess and chess.com pages,
//! display widgets and the Go, Java and Node clients speak it (what is served:
//! `docs/NETWORK.md`, "LiveChess compatibility").
//!
//! A [`LiveSession`] is one connection's state (its feeds) and answers each text frame
//! with the frames to send; [`LiveSession::pushes`] gives the feed pushes for boards
//! that changed. It does no IO, so the protocol is tested without sockets; the
//! socket loop is in `net::serve`.
//!
//! The moves in `san` come from the rules core's record, not from comparing board
//! snapshots: a client gets the moves as played (amended and taken back as the
//! record is). `setup` and `flip` change only what this connection's feed reports,
//! never the game record.

use serde::Serialize;
use serde_json::{Value, json};
use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position};

use crate::api::Snapshot;

/// One board as the API sees it.
#[derive(Debug, Clone)]
pub struct LiveBoard {
    /// The daemon's board id.
    pub id: String,
    pub snapshot: Snapshot,
}

impl LiveBoard {
    /// The `serialnr`: the board's serial number, else its id.
    pub fn serialnr(&self) -> &str {
        if self.snapshot.serial_number.is_empty() {
            &self.id
        } else {
            &self.snapshot.serial_number
        }
    }

    /// Where the board is (`source` in `eboards`, `device` in `sources`): its
    /// device's file name (`ttyACM0`, `dgt_12345`).
    fn source(&self) -> String {
        std::path::Path::new(&self.snapshot.device)
            .file_name()
            .map_or_else(
                || self.snapshot.device.clone(),
                |n| n.to_string_lossy().to_string(),
            )
    }

    /// Listed in `eboards` only once its serial number is known, so that a
    /// client never sees it under another `serialnr` first.
    fn listed(&self) -> bool {
        !self.snapshot.serial_number.is_empty()
    }

    fn placement(&self) -> Option<&str> {
        (!self.snapshot.placement.is_empty()).then_some(self.snapshot.placement.as_str())
    }

    fn clock(&self, now_ms: u64) -> Option<LiveClock> {
        let s = &self.snapshot;
        s.has_clock.then(|| LiveClock {
            white: (s.white_clock_ms.max(0) / 1000) as u64,
            black: (s.black_clock_ms.max(0) / 1000) as u64,
            run: match s.clock_running.as_str() {
                "white" => Some(true),
                "black" => Some(false),
                _ => None,
            },
            time: now_ms,
        })
    }

    /// Its entry in the `eboards` list.
    pub fn entry(&self, now_ms: u64) -> Value {
        let s = &self.snapshot;
        let source = s.connected.then(|| self.source());
        json!({
            "serialnr": self.serialnr(),
            "source": source,
            "state": if s.connected { "ACTIVE" } else { "NOTRESPONDING" },
            "battery": s.battery.map(|p| format!("{p}%")),
            "comment": null,
            "board": self.placement(),
            "flipped": s.orientation == "rotated",
            "clock": self.clock(now_ms),
        })
    }
}

/// The clock object of a push (seconds left, which side runs, when read).
#[derive(Debug, Clone, Serialize)]
pub struct LiveClock {
    pub white: u64,
    pub black: u64,
    pub run: Option<bool>,
    pub time: u64,
}

/// The `eboards` list: boards that are connected first (clients take the first).
pub fn eboards(boards: &[LiveBoard], now_ms: u64) -> Value {
    let mut sorted: Vec<&LiveBoard> = boards.iter().filter(|b| b.listed()).collect();
    sorted.sort_by_key(|b| !b.snapshot.connected);
    Value::Array(sorted.iter().map(|b| b.entry(now_ms)).collect())
}

/// Where the moves of a feed start: the `setup` position, and the ply of the
/// board's game at which it stands (none: the game never reached it).
#[derive(Debug, Clone)]
struct Setup {
    fen: String,
    /// The game the ply was found in: its start and moves.
    found_in: Option<(String, Vec<String>)>,
    ply: Option<usize>,
}

#[derive(Debug, Clone)]
struct Feed {
    /// The client's feed id, echoed in every push.
    id: Value,
    /// The daemon's board id.
    board: String,
    setup: Option<Setup>,
    flip: Option<bool>,
    /// What the last push said (none sent yet).
    sent: Option<Sent>,
    /// The moves since `setup` whose last is not settled yet, the board that
    /// shows them, and since when (ms) both have stood unchanged.
    pending: Option<(Vec<String>, String, u64)>,
}

#[derive(Debug, Clone, PartialEq)]
struct Sent {
    board: Option<String>,
    clock: Option<(u64, u64, Option<bool>)>,
    flipped: bool,
    san: Option<Vec<String>>,
    start: Option<String>,
    matches: Option<bool>,
}

/// Feeds one connection may hold (a LiveChess client uses one).
pub const MAX_FEEDS: usize = 8;

/// The longest feed id, serial number or FEN taken (bytes; a FEN is under 100).
pub const MAX_FIELD: usize = 128;

/// At most the first 64 characters of what a client sent, for an error.
fn short(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

/// One connection's feeds.
#[derive(Debug)]
pub struct LiveSession {
    feeds: Vec<Feed>,
    /// How long (ms) a last move not completed must stand unchanged before it is
    /// sent in `san` (`[http] settle_ms`).
    settle_ms: u64,
}

/// The default of `[http] settle_ms`: a last move that no press and no next
/// move completed is sent once it has stood this long (a slide that paused on a
/// square goes on well within it).
pub const SETTLE_MS: u64 = 2000;

impl Default for LiveSession {
    fn default() -> LiveSession {
        LiveSession::new(SETTLE_MS)
    }
}

#[derive(Serialize)]
struct Reply<'a> {
    response: &'a str,
    id: &'a Value,
    param: Value,
    time: u64,
}

fn frame(response: &str, id: &Value, param: Value, time: u64) -> String {
    serde_json::to_string(&Reply {
        response,
        id,
        param,
        time,
    })
    .unwrap_or_default()
}

fn error(id: &Value, message: impl Into<String>, time: u64) -> String {
    frame("error", id, json!({ "message": message.into() }), time)
}

impl LiveSession {
    pub fn new(settle_ms: u64) -> LiveSession {
        LiveSession {
            feeds: Vec::new(),
            settle_ms,
        }
    }

    /// When (ms) a last move waiting to settle will have stood long enough: the
    /// caller asks for [`LiveSession::pushes`] again then.
    pub fn next_deadline(&self) -> Option<u64> {
        self.feeds
            .iter()
            .filter_map(|f| {
                f.pending
                    .as_ref()
                    .map(|(_, _, since)| since.saturating_add(self.settle_ms))
            })
            .min()
    }

    /// The board ids this connection has feeds on.
    pub fn boards(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.feeds.iter().map(|f| f.board.clone()).collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Answers one text frame: the reply, then any push it causes. `find` gives a
    /// board by id; `all` lists them (for `eboards` and `sources`).
    pub fn call(&mut self, text: &str, all: &[LiveBoard], now_ms: u64) -> Vec<String> {
        let req: Value = match serde_json::from_str(text) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return vec![error(&Value::Null, "a call is a JSON object", now_ms)],
            Err(e) => return vec![error(&Value::Null, format!("not JSON: {e}"), now_ms)],
        };
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        let param = req.get("param").cloned().unwrap_or(Value::Null);
        let Some(call) = req.get("call").and_then(Value::as_str) else {
            return vec![error(&id, "no `call` in the request", now_ms)];
        };
        match call {
            "eboards" => vec![frame("call", &id, eboards(all, now_ms), now_ms)],
            "sources" => {
                let list = all
                    .iter()
                    .map(|b| {
                        json!({
                            "type": "serial",
                            "device": b.source(),
                            "name": b.id,
                            "present": b.snapshot.connected,
                            "active": b.snapshot.connected,
                            "status": null,
                        })
                    })
                    .collect();
                vec![frame("call", &id, Value::Array(list), now_ms)]
            }
            "subscribe" => self.subscribe(&id, &param, all, now_ms),
            "unsubscribe" => {
                let feed = param.get("id").cloned().unwrap_or(Value::Null);
                let before = self.feeds.len();
                self.feeds.retain(|f| f.id != feed);
                if self.feeds.len() == before {
                    vec![error(
                        &id,
                        format!("no feed with id {}", short(&feed.to_string())),
                        now_ms,
                    )]
                } else {
                    vec![frame("call", &id, Value::Null, now_ms)]
                }
            }
            "call" => self.method(&id, &param, all, now_ms),
            other => vec![error(&id, format!("unknown call `{}`", short(other)), now_ms)],
        }
    }

    fn subscribe(&mut self, id: &Value, param: &Value, all: &[LiveBoard], now_ms: u64) -> Vec<String> {
        match param.get("feed").and_then(Value::as_str) {
            Some("eboardevent") => {}
            Some(other) => return vec![error(id, format!("unknown feed `{}`", short(other)), now_ms)],
            None => return vec![error(id, "subscribe names no `feed`", now_ms)],
        }
        let feed_id = param.get("id").cloned().unwrap_or(Value::Null);
        if feed_id.to_string().len() > MAX_FIELD {
            return vec![error(
                id,
                format!("a feed id is at most {MAX_FIELD} bytes"),
                now_ms,
            )];
        }
        let serial = param.get("param").and_then(|p| p.get("serialnr"));
        if serial.is_some_and(|s| s.to_string().len() > MAX_FIELD) {
            return vec![error(
                id,
                format!("a serial number is at most {MAX_FIELD} bytes"),
                now_ms,
            )];
        }
        let board = match serial {
            // Numbers are taken as their digits.
            Some(s) => {
                let s = match s {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                all.iter().find(|b| b.serialnr() == s || b.id == s)
            }
            // No serial number (some clients send none): the first board listed.
            None => {
                let mut sorted: Vec<&LiveBoard> = all.iter().filter(|b| b.listed()).collect();
                sorted.sort_by_key(|b| !b.snapshot.connected);
                sorted.first().copied()
            }
        };
        let Some(board) = board else {
            return vec![error(id, "no such e-board", now_ms)];
        };
        // A feed id used again replaces that feed.
        self.feeds.retain(|f| f.id != feed_id);
        if self.feeds.len() >= MAX_FEEDS {
            return vec![error(
                id,
                format!("at most {MAX_FEEDS} feeds a connection: unsubscribe one first"),
                now_ms,
            )];
        }
        self.feeds.push(Feed {
            id: feed_id,
            board: board.id.clone(),
            setup: None,
            flip: None,
            sent: None,
            pending: None,
        });
        let mut out = vec![frame("call", id, Value::Null, now_ms)];
        let last = self.feeds.len() - 1;
        out.extend(self.push(last, Some(board), now_ms, true));
        out
    }

    /// `call`: `setup` or `flip` on a feed.
    fn method(&mut self, id: &Value, param: &Value, all: &[LiveBoard], now_ms: u64) -> Vec<String> {
        let feed_id = param.get("id").cloned().unwrap_or(Value::Null);
        let index = match self.feeds.iter().position(|f| f.id == feed_id) {
            Some(i) => i,
            // A client that names another feed id than its one subscription's
            // (seen in an old client) means that one.
            None if self.feeds.len() == 1 => 0,
            None => {
                return vec![error(
                    id,
                    format!("no feed with id {}", short(&feed_id.to_string())),
                    now_ms,
                )];
            }
        };
        let args = param.get("param").cloned().unwrap_or(Value::Null);
        let method = param.get("method").and_then(Value::as_str).unwrap_or("");
        // One client sends `flip` under the method name `setup`.
        let flip = args.get("flip").and_then(Value::as_bool);
        match (method, args.get("fen").and_then(Value::as_str), flip) {
            ("setup", Some(fen), _) => {
                if fen.len() > MAX_FIELD {
                    return vec![error(
                        id,
                        format!("setup: a FEN is at most {MAX_FIELD} bytes"),
                        now_ms,
                    )];
                }
                if let Err(e) = position(fen) {
                    return vec![error(id, format!("setup: {e}"), now_ms)];
                }
                self.feeds[index].setup = Some(Setup {
                    fen: fen.trim().to_string(),
                    found_in: None,
                    ply: None,
                });
            }
            ("setup" | "flip", _, Some(f)) => self.feeds[index].flip = Some(f),
            ("setup", None, None) => return vec![error(id, "setup needs `fen`", now_ms)],
            ("flip", _, None) => return vec![error(id, "flip needs `flip` (true or false)", now_ms)],
            (other, _, _) => return vec![error(id, format!("unknown method `{}`", short(other)), now_ms)],
        }
        let mut out = vec![frame("call", id, Value::Null, now_ms)];
        let board = all.iter().find(|b| b.id == self.feeds[index].board);
        out.extend(self.push(index, board, now_ms, true));
        out
    }

    /// The pushes for feeds whose board changed, as `find` shows the boards now.
    pub fn pushes(&mut self, find: impl Fn(&str) -> Option<LiveBoard>, now_ms: u64) -> Vec<String> {
        let mut out = Vec::new();
        for i in 0..self.feeds.len() {
            let board = find(&self.feeds[i].board);
            if board.is_none() {
                // A board gone has no move to settle.
                self.feeds[i].pending = None;
            }
            out.extend(self.push(i, board.as_ref(), now_ms, false));
        }
        out
    }

    /// Feed `index`'s push when something it reports changed (or `always`).
    ///
    /// What real clients read (`../docs/NETWORK.md`, "LiveChess clients"): a
    /// push comes only when the placement, the moves or `flipped` changed, and
    /// the clock rides in those pushes (a clock's tick alone sends nothing); `san`,
    /// `start` and `match` are sent only when the moves changed (a client that
    /// takes the last `san` entry of every push would play it again), and `san`
    /// holds settled moves only: completed by the clock or by the next move, or
    /// standing unchanged on the board (nothing lifted) for the settling time. So a move amended or taken back
    /// before it settled never reaches a client.
    fn push(&mut self, index: usize, board: Option<&LiveBoard>, now_ms: u64, always: bool) -> Option<String> {
        let board = board?;
        let settle_ms = self.settle_ms;
        let feed = &mut self.feeds[index];
        let clock = board.clock(now_ms);
        let (start, san, matches) = match &mut feed.setup {
            Some(setup) => {
                let (all, matches, from) = moves_since(setup, &board.snapshot);
                let mut settled = board.snapshot.settled.saturating_sub(from).min(all.len());
                let placement = &board.snapshot.placement;
                if settled == all.len() || !matches {
                    // Settled, or not standing: a piece of it (or another) in
                    // the air, the board elsewhere.
                    feed.pending = None;
                } else {
                    match &feed.pending {
                        Some((waiting, shown, since)) if *waiting == all && shown == placement => {
                            // (A wall clock set back settles it too.)
                            if now_ms >= since.saturating_add(settle_ms) || now_ms < *since {
                                settled = all.len();
                                feed.pending = None;
                            }
                        }
                        _ => feed.pending = Some((all.clone(), placement.clone(), now_ms)),
                    }
                }
                // What was sent and is still on the record is never taken back.
                if let Some(sent) = feed.sent.as_ref().and_then(|s| s.san.as_ref()) {
                    if all.starts_with(sent) {
                        settled = settled.max(sent.len());
                    }
                }
                let mut san = all;
                san.truncate(settled);
                (Some(setup.fen.clone()), Some(san), Some(matches))
            }
            None => {
                feed.pending = None;
                (None, None, None)
            }
        };
        let now = Sent {
            board: board.placement().map(str::to_string),
            clock: clock.as_ref().map(|c| (c.white, c.black, c.run)),
            flipped: feed.flip.unwrap_or(board.snapshot.orientation == "rotated"),
            san,
            start,
            matches,
        };
        let before = feed.sent.as_ref();
        let first = before.is_none();
        let moves_changed = first || before.map(|s| (&s.san, &s.start)) != Some((&now.san, &now.start));
        let read_changed =
            moves_changed || before.map(|s| (&s.board, s.flipped)) != Some((&now.board, now.flipped));
        if !always && !read_changed {
            return None;
        }
        // The clock is said in the first push and when it changed.
        let clock_changed = first || before.map(|s| &s.clock) != Some(&now.clock);
        let mut param = serde_json::Map::new();
        param.insert("serialnr".into(), board.serialnr().into());
        param.insert("flipped".into(), now.flipped.into());
        param.insert("board".into(), now.board.clone().map_or(Value::Null, Value::from));
        if clock_changed {
            param.insert(
                "clock".into(),
                clock.map_or(Value::Null, |c| serde_json::to_value(c).unwrap_or_default()),
            );
        }
        if always || moves_changed {
            if let (Some(start), Some(san), Some(m)) = (&now.start, &now.san, now.matches) {
                param.insert("start".into(), start.clone().into());
                param.insert("san".into(), san.clone().into());
                param.insert("match".into(), m.into());
            }
        }
        let text = frame("feed", &feed.id, Value::Object(param), now_ms);
        feed.sent = Some(now);
        Some(text)
    }
}

/// A FEN's position (standard or Chess960 castling, as its rights say).
fn position(fen: &str) -> Result<Chess, String> {
    let setup = fen
        .trim()
        .parse::<Fen>()
        .map_err(|e| format!("`{}` is not a FEN: {e}", short(fen)))?
        .into_setup();
    let mode = CastlingMode::detect(&setup);
    setup
        .position(mode)
        .map_err(|e| format!("`{}` is not a legal position: {e}", short(fen)))
}

/// The same position for the rules of play: pieces, side to move, castling rights,
/// a legal en-passant capture.
fn same_position(a: &Chess, b: &Chess) -> bool {
    a.board() == b.board()
        && a.turn() == b.turn()
        && a.castles().castling_rights() == b.castles().castling_rights()
        && a.ep_square(EnPassantMode::Legal) == b.ep_square(EnPassantMode::Legal)
}

/// The moves of the board's game from the setup position on, and whether the
/// board shows the position after them. A game that never reached the setup
/// position gives no moves (as LiveChess gives none when the board does not match).
fn moves_since(setup: &mut Setup, snap: &Snapshot) -> (Vec<String>, bool, usize) {
    let current = (snap.start_fen.clone(), snap.moves.clone());
    if setup.found_in.as_ref() != Some(&current) {
        setup.ply = find_ply(&setup.fen, &snap.start_fen, &snap.moves);
        setup.found_in = Some(current);
    }
    match setup.ply {
        Some(k) => {
            let board = snap.fen.split(' ').next().unwrap_or_default();
            (
                snap.moves[k..].to_vec(),
                !snap.placement.is_empty() && board == snap.placement,
                k,
            )
        }
        None => (Vec::new(), false, snap.moves.len()),
    }
}

/// The last ply of the game at which it stood in the `setup` position.
fn find_ply(setup: &str, start: &str, moves: &[String]) -> Option<usize> {
    let target = position(setup).ok()?;
    let mut pos = position(start).ok()?;
    let mut found = same_position(&pos, &target).then_some(0);
    for (i, san) in moves.iter().enumerate() {
        let m = san.parse::<San>().ok()?.to_move(&pos).ok()?;
        pos.play_unchecked(m);
        if same_position(&pos, &target) {
            found = Some(i + 1);
        }
    }
    found
}

#[cfg(test)]
mod tests;
