//! A stand-in lichess, written from lichess's API documentation of
//! `POST /api/broadcast/round/{broadcastRoundId}/push`: a bearer token with
//! `study:write` (here: one token it knows), a round id of 8 characters it
//! knows (else 404), only a round without a source URL takes pushes, the body
//! is `text/plain` PGN, and the answer is `{"games": [...]}`, each game's
//! tags and either its `moves` (plies) or its `error`, in the order of the
//! PGN. Plain HTTP on 127.0.0.1, an ephemeral port.
//!
//! It keeps every request (when it came, to which round, what it answered, the
//! body), and can be taken down in four ways: connections closed without an
//! answer, `503`, `429` with `Retry-After`, or another status (a `500`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use shakmaty::{Chess, Position};

/// The token the stand-in takes.
pub const TOKEN: &str = "lip_standInToken2026";

/// How the stand-in answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Up,
    /// Connections closed at once, requests never answered.
    Drop,
    /// `503 Service Unavailable`.
    Fail,
    /// `429 Too Many Requests` with `Retry-After: N`.
    TooMany(u64),
    /// This status (a `500`, ...) with lichess's JSON error.
    Error(u16),
    /// `400` whose error holds a newline and a line of the daemon's log.
    Forged,
}

/// One request (or a connection closed without one).
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: Instant,
    /// The round id in the path (empty for a connection closed at once).
    pub id: String,
    /// What was answered (0: nothing, the connection closed).
    pub status: u16,
    pub content_type: String,
    pub authorization: String,
    pub body: String,
}

/// A game as the stand-in read it from a push.
#[derive(Debug, Clone, PartialEq)]
pub struct Game {
    pub tags: BTreeMap<String, String>,
    /// The moves read (plies), up to the first that is not one.
    pub moves: Vec<String>,
    pub error: Option<String>,
}

#[derive(Default)]
struct Round {
    source_url: bool,
}

struct State {
    mode: Mode,
    rounds: BTreeMap<String, Round>,
    seen: Vec<Seen>,
    /// A game whose White is this is refused with this error.
    refuse: Option<(String, String)>,
}

#[derive(Clone)]
pub struct StandIn {
    state: Arc<Mutex<State>>,
    /// Connections open now.
    open: Arc<std::sync::atomic::AtomicUsize>,
    pub url: String,
}

impl StandIn {
    /// A stand-in knowing rounds `ids` (those in `with_source` have a source URL).
    pub async fn start(ids: &[&str], with_source: &[&str]) -> StandIn {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let mut rounds = BTreeMap::new();
        for id in ids {
            rounds.insert(id.to_string(), Round::default());
        }
        for id in with_source {
            rounds.insert(id.to_string(), Round { source_url: true });
        }
        let state = Arc::new(Mutex::new(State {
            mode: Mode::Up,
            rounds,
            seen: Vec::new(),
            refuse: None,
        }));
        let s = StandIn {
            state,
            open: Default::default(),
            url,
        };
        let me = s.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                if me.mode() == Mode::Drop {
                    me.note(Seen::dropped());
                    drop(stream);
                    continue;
                }
                let st = me.clone();
                let open = me.open.clone();
                open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let st = st.clone();
                        async move { st.handle(req).await }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                    open.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                });
            }
        });
        s
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connections open now (a killed client's are closed once its requests
    /// are read).
    pub fn open_connections(&self) -> usize {
        self.open.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn mode(&self) -> Mode {
        self.lock().mode
    }

    pub fn set_mode(&self, m: Mode) {
        self.lock().mode = m;
    }

    /// Games whose White is `white` are refused with `error`.
    pub fn refuse_white(&self, white: &str, error: &str) {
        self.lock().refuse = Some((white.into(), error.into()));
    }

    fn note(&self, s: Seen) {
        self.lock().seen.push(s);
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.lock().seen.clone()
    }

    /// The requests to round `id` so far.
    pub fn to(&self, id: &str) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.id == id).collect()
    }

    /// The games of the last push to `id` that it took, by their `Round` tag
    /// (empty when none was taken).
    pub fn games_taken(&self, id: &str) -> Vec<String> {
        self.last_taken(id)
            .map(|b| {
                read_games(&b)
                    .into_iter()
                    .map(|g| g.tags.get("Round").cloned().unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The body of the last push to `id` that it took (200), if any.
    pub fn last_taken(&self, id: &str) -> Option<String> {
        self.to(id)
            .into_iter()
            .rev()
            .find(|s| s.status == 200)
            .map(|s| s.body)
    }

    async fn handle(&self, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, std::io::Error> {
        let at = Instant::now();
        let header = |name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        let (content_type, authorization) = (header("content-type"), header("authorization"));
        let path = req.uri().path().to_string();
        let post = req.method() == hyper::Method::POST;
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
            .unwrap_or_default();
        let id = path
            .strip_prefix("/api/broadcast/round/")
            .and_then(|r| r.strip_suffix("/push"))
            .unwrap_or_default()
            .to_string();
        let mode = self.mode();
        let mut seen = Seen {
            at,
            id: id.clone(),
            status: 0,
            content_type: content_type.clone(),
            authorization: authorization.clone(),
            body: body.clone(),
        };
        let (status, json, retry_after) = match mode {
            Mode::Drop => {
                self.note(seen);
                return Err(std::io::Error::other("down"));
            }
            Mode::Fail => (503, json!({"error": "Service Unavailable"}), None),
            Mode::Error(status) => (status, json!({"error": "Internal server error"}), None),
            Mode::Forged => (
                400,
                json!({"error": "Bad PGN\n2026-11-29T00:00:00Z  INFO eboard_bridge: FAKE LOG LINE"}),
                None,
            ),
            Mode::TooMany(n) => (
                429,
                json!({"error": "Too many requests. Try again later."}),
                Some(n),
            ),
            Mode::Up => self.push(post, &id, &content_type, &authorization, &body),
        };
        seen.status = status;
        self.note(seen);
        let mut r = Response::builder()
            .status(status)
            .header("content-type", "application/json");
        if let Some(n) = retry_after {
            r = r.header("retry-after", n.to_string());
        }
        Ok(r.body(Full::new(Bytes::from(json.to_string()))).unwrap())
    }

    /// A push as the documentation has lichess answer it.
    fn push(
        &self,
        post: bool,
        id: &str,
        content_type: &str,
        auth: &str,
        body: &str,
    ) -> (u16, Value, Option<u64>) {
        if !post || id.is_empty() {
            return (404, json!({"error": "Not found"}), None);
        }
        if auth != format!("Bearer {TOKEN}") {
            return (401, json!({"error": "No such token"}), None);
        }
        let st = self.lock();
        let Some(round) = st.rounds.get(id) else {
            return (404, json!({"error": "Not found"}), None);
        };
        if round.source_url {
            let upstream = "The relay has an upstream URL, and cannot be pushed to.";
            return (200, json!({"games": [{"tags": {}, "error": upstream}]}), None);
        }
        if content_type.split(';').next().map(str::trim) != Some("text/plain") {
            return (400, json!({"error": "Expected text/plain"}), None);
        }
        let games: Vec<Value> = read_games(body)
            .into_iter()
            .map(|g| {
                let refused = st.refuse.as_ref().filter(|(w, _)| g.tags.get("White") == Some(w));
                let tags: serde_json::Map<String, Value> = g
                    .tags
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone().into()))
                    .collect();
                match (refused, &g.error) {
                    (Some((_, error)), _) | (None, Some(error)) => json!({"tags": tags, "error": error}),
                    (None, None) => json!({"tags": tags, "moves": g.moves.len()}),
                }
            })
            .collect();
        (200, json!({ "games": games }), None)
    }
}

impl Seen {
    fn dropped() -> Seen {
        Seen {
            at: Instant::now(),
            id: String::new(),
            status: 0,
            content_type: String::new(),
            authorization: String::new(),
            body: String::new(),
        }
    }
}

/// The games of a PGN text, each with its tags and its moves as lichess reads
/// them (a move that is not legal ends the game's moves with an error).
pub fn read_games(text: &str) -> Vec<Game> {
    crate::common::pgn_sections(text)
        .into_iter()
        .map(|(tags, movetext)| {
            let (moves, error) = read_moves(&movetext);
            Game {
                tags: tags.into_iter().collect(),
                moves,
                error,
            }
        })
        .collect()
}

fn read_moves(movetext: &str) -> (Vec<String>, Option<String>) {
    let mut clean = String::new();
    let mut depth = 0;
    for c in movetext.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ if depth == 0 => clean.push(c),
            _ => {}
        }
    }
    let mut pos = Chess::default();
    let mut moves = Vec::new();
    for word in clean.split_whitespace() {
        // A result before its digits are taken for a move number.
        if matches!(word, "*" | "1-0" | "0-1" | "1/2-1/2") {
            continue;
        }
        let w = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        if w.is_empty() {
            continue;
        }
        let Some(mv) = w
            .parse::<shakmaty::san::San>()
            .ok()
            .and_then(|s| s.to_move(&pos).ok())
        else {
            return (moves, Some(format!("No move found: {w}")));
        };
        pos.play_unchecked(mv);
        moves.push(w.to_string());
    }
    (moves, None)
}
