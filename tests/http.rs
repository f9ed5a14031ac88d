//! The daemon on the network: real games from `tests/data/games/` played by emulated
//! boards on real pseudo-terminals, the daemon's HTTP server on a free localhost
//! port, and real clients: a LiveChess WebSocket client written from
//! the LiveChess API as `docs/NETWORK.md` describes it, plain HTTP/1.1 over TCP for the PGN and SSE,
//! and headless Chromium for the live page.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::browser::{Browser, CHROMIUM};
use common::{Need, Within, need, pgn_games, quick, sans, wait_for};
use eboard_bridge::board::Orientation;
use eboard_bridge::daemon::{BusChoice, Config, Daemon};
use eboard_bridge::device::{Emulator, EmulatorConfig};
use eboard_bridge::log::SensorLog;
use eboard_bridge::net::HttpConfig;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::Hands;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use shakmaty::{Chess, Move, Position};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

fn game_log(start: &Chess, moves: &[Move], seed: u64, rest_ms: u64) -> SensorLog {
    let mut hands = Hands::new(seed, quick(), Orientation::Normal);
    hands.board(start.board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    common::played_log(hands, start, moves, rest_ms)
}

fn emulate(
    log: SensorLog,
    link: &Path,
    speed: f64,
    serial: &str,
    battery: Option<u8>,
) -> tokio::task::JoinHandle<()> {
    let emulator = Emulator::open().unwrap();
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(emulator.path(), link).unwrap();
    let cfg = EmulatorConfig {
        speed,
        serial: serial.into(),
        battery,
        ..EmulatorConfig::default()
    };
    tokio::spawn(async move {
        let _ = emulator.run(&log, "generated", &cfg).await;
    })
}

fn config(dir: &Path, http: HttpConfig) -> Config {
    let mut c = Config::parse(
        &format!(
            "event = \"Test Open\"\nround = 4\noutput = \"{}\"\nstate = \"{}\"\n[[board]]\ndevice = \"{}\"\nnumber = 7\nwhite = \"Anderssen, Adolf\"\nblack = \"Kieseritzky, Lionel\"\n",
            dir.join("live").display(),
            dir.join("state").display(),
            dir.join("board0").display()
        ),
        "test.toml",
    )
    .unwrap();
    c.http = Some(http);
    c
}

/// A daemon with the HTTP server on a free port of 127.0.0.1, bridging `log`.
async fn start(
    dir: &Path,
    log: SensorLog,
    speed: f64,
    http: HttpConfig,
) -> (Daemon, SocketAddr, tokio::task::JoinHandle<()>) {
    start_board(dir, log, speed, http, None).await
}

/// The same, the board a Bluetooth one when `battery` is given.
async fn start_board(
    dir: &Path,
    log: SensorLog,
    speed: f64,
    http: HttpConfig,
    battery: Option<u8>,
) -> (Daemon, SocketAddr, tokio::task::JoinHandle<()>) {
    let link = dir.join("board0");
    let emulator = emulate(log, &link, speed, "23946", battery);
    let daemon = Daemon::start(vec![link], config(dir, http), BusChoice::None)
        .within(30, "the daemon to start")
        .await
        .unwrap();
    let addr = daemon.http_addresses()[0];
    assert_eq!(addr.ip().to_string(), "127.0.0.1");
    assert_ne!(addr.port(), 0);
    (daemon, addr, emulator)
}

/// A response: status, headers (names in lower case), body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One chunk of a chunked body (empty at its end).
async fn read_chunk(r: &mut BufReader<TcpStream>) -> Vec<u8> {
    let mut line = String::new();
    r.read_line(&mut line).await.unwrap();
    let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
    let mut chunk = vec![0u8; size + 2];
    r.read_exact(&mut chunk).await.unwrap();
    chunk.truncate(size);
    chunk
}

/// A GET over a fresh HTTP/1.1 connection, answered within 30 s.
async fn get(addr: SocketAddr, path: &str, extra: &[(&str, &str)]) -> Response {
    get_unbounded(addr, path, extra)
        .within(30, &format!("the answer to GET {path} from {addr}"))
        .await
}

async fn get_unbounded(addr: SocketAddr, path: &str, extra: &[(&str, &str)]) -> Response {
    let stream = TcpStream::connect(addr).await.unwrap();
    let mut r = BufReader::new(stream);
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (n, v) in extra {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    r.get_mut().write_all(req.as_bytes()).await.unwrap();
    let (status, headers) = common::web::read_head(&mut r).await;
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok());
    let mut body = Vec::new();
    if let Some(n) = length {
        // Some servers (Chromium's DevTools) keep the connection open.
        body.resize(n, 0);
        r.read_exact(&mut body).await.unwrap();
    } else if chunked {
        loop {
            let c = read_chunk(&mut r).await;
            if c.is_empty() {
                break;
            }
            body.extend(c);
        }
    } else {
        r.read_to_end(&mut body).await.unwrap();
    }
    Response {
        status,
        headers,
        body,
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq)]
struct Sse {
    id: Option<String>,
    event: Option<String>,
    data: String,
}

/// A client of `/api/events`.
struct SseClient {
    r: BufReader<TcpStream>,
    text: String,
}

impl SseClient {
    /// Connected and past the response's head within 10 s.
    async fn open(addr: SocketAddr, last_id: Option<&str>) -> SseClient {
        Self::open_unbounded(addr, last_id)
            .within(10, &format!("the head of /api/events from {addr}"))
            .await
    }

    async fn open_unbounded(addr: SocketAddr, last_id: Option<&str>) -> SseClient {
        let stream = TcpStream::connect(addr).await.unwrap();
        let mut r = BufReader::new(stream);
        let mut req = format!("GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
        if let Some(id) = last_id {
            req.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        req.push_str("\r\n");
        r.get_mut().write_all(req.as_bytes()).await.unwrap();
        let (status, headers) = common::web::read_head(&mut r).await;
        assert_eq!(status, 200);
        let kind = headers.iter().find(|(n, _)| n == "content-type").unwrap();
        assert!(kind.1.starts_with("text/event-stream"), "{kind:?}");
        SseClient {
            r,
            text: String::new(),
        }
    }

    /// The next event (keep-alive comments skipped), within `secs`.
    async fn next(&mut self, secs: u64) -> Option<Sse> {
        loop {
            if let Some(end) = self.text.find("\n\n") {
                let block: String = self.text.drain(..end + 2).collect();
                let mut e = Sse {
                    id: None,
                    event: None,
                    data: String::new(),
                };
                let mut any = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        e.id = Some(v.trim().to_string());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("event:") {
                        e.event = Some(v.trim().to_string());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("data:") {
                        e.data.push_str(v.strip_prefix(' ').unwrap_or(v));
                        any = true;
                    }
                }
                if any {
                    return Some(e);
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(secs), read_chunk(&mut self.r))
                .await
                .ok()?;
            if chunk.is_empty() {
                return None;
            }
            self.text.push_str(&String::from_utf8(chunk).unwrap());
        }
    }
}

fn data(e: &Sse) -> Value {
    serde_json::from_str(&e.data).unwrap_or_else(|err| panic!("{err}: {}", e.data))
}

/// A LiveChess client as the lichess page behaves (`livechess-api.md` §5): ids 1,
/// 2 and 3, feed id 1, `setup` with the start position, new moves taken as the new
/// length of `san` minus the old; a list that is not an extension of the last one
/// replaces it (LiveChess may replace a move).
struct LiveChess {
    ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
}

impl LiveChess {
    async fn connect(addr: SocketAddr, origin: Option<&str>) -> LiveChess {
        let mut req = format!("ws://{addr}/api/v1.0").into_client_request().unwrap();
        if let Some(o) = origin {
            req.headers_mut().insert("Origin", o.parse().unwrap());
        }
        let (ws, resp) = tokio_tungstenite::connect_async(req)
            .within(10, &format!("the WebSocket handshake with {addr}"))
            .await
            .unwrap();
        assert_eq!(resp.status(), 101);
        assert!(resp.headers().get("sec-websocket-protocol").is_none());
        assert!(resp.headers().get("sec-websocket-extensions").is_none());
        LiveChess { ws }
    }

    async fn send(&mut self, v: Value) {
        self.ws
            .send(Message::Text(v.to_string().into()))
            .within(10, "a WebSocket frame to be sent")
            .await
            .unwrap();
    }

    /// The next text frame, parsed, within `secs`.
    async fn recv(&mut self, secs: u64) -> Option<Value> {
        loop {
            let m = tokio::time::timeout(Duration::from_secs(secs), self.ws.next())
                .await
                .ok()??
                .ok()?;
            if let Message::Text(t) = m {
                return Some(serde_json::from_str(t.as_str()).unwrap());
            }
        }
    }
}

/// The first of the famous games whose moves (up to its first annotation error)
/// end in checkmate.
fn mated_game() -> common::PgnGame {
    pgn_games("games/immortal-games.pgn")
        .into_iter()
        .find(|g| {
            let mut pos = g.start.clone();
            for m in &g.moves {
                pos.play_unchecked(*m);
            }
            g.moves.len() >= 30 && pos.is_checkmate()
        })
        .expect("a game that ends in checkmate")
}

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_livechess_client_gets_every_move_of_a_real_game() {
    let dir = tempfile::tempdir().unwrap();
    let game = &pgn_games("games/kasparov-deep-blue-1997.pgn")[0];
    let expected = sans(&game.start, &game.moves);
    let mut end = game.start.clone();
    for m in &game.moves {
        end.play_unchecked(*m);
    }
    let final_board = end.board().to_string();
    let (daemon, addr, emulator) = start(
        dir.path(),
        game_log(&game.start, &game.moves, 7, 1500),
        6.0,
        HttpConfig::on("127.0.0.1:0"),
    )
    .await;
    let snap = daemon.boards()[0].2.clone();
    wait_for("the board's serial number", 10, || {
        !snap.borrow().serial_number.is_empty()
    })
    .await;

    // The lichess page: a browser origin, call ids 1, 2, 3 and feed id 1.
    let mut lichess = LiveChess::connect(addr, Some("https://lichess.org")).await;
    lichess.send(json!({"id": 1, "call": "eboards"})).await;
    let list = lichess.recv(5).await.unwrap();
    assert_eq!(list["response"], "call");
    assert_eq!(list["id"], 1);
    assert!(list["time"].as_u64().unwrap() > 1_700_000_000_000);
    let first = &list["param"][0];
    assert_eq!(first["serialnr"], "23946");
    assert_eq!(first["state"], "ACTIVE");
    assert_eq!(first["source"], "board0");
    for key in ["battery", "comment", "board", "flipped", "clock"] {
        assert!(first.get(key).is_some(), "{key} missing from {first}");
    }
    // A wired board (the emulator does not answer the battery question).
    assert!(first["battery"].is_null(), "{first}");
    lichess
        .send(json!({"id": 2, "call": "subscribe", "param": {"feed": "eboardevent", "id": 1, "param": {"serialnr": "23946"}}}))
        .await;
    let reply = lichess.recv(5).await.unwrap();
    assert_eq!(
        (reply["response"].clone(), reply["id"].clone()),
        (json!("call"), json!(2))
    );
    assert!(reply["param"].is_null());
    let state = lichess.recv(5).await.unwrap();
    assert_eq!(
        (state["response"].clone(), state["id"].clone()),
        (json!("feed"), json!(1))
    );
    assert_eq!(state["param"]["serialnr"], "23946");
    assert!(state["param"].get("clock").is_some(), "{state}");
    lichess
        .send(
            json!({"id": 3, "call": "call", "param": {"id": 1, "method": "setup", "param": {"fen": START}}}),
        )
        .await;

    // The chess.com page at the same time, with the same ids, no setup: boards only.
    let mut chesscom = LiveChess::connect(addr, Some("https://www.chess.com")).await;
    chesscom
        .send(json!({"id": 1, "call": "eboards", "param": {}}))
        .await;
    assert_eq!(chesscom.recv(5).await.unwrap()["id"], 1);
    chesscom
        .send(json!({"id": 2, "call": "subscribe", "param": {"feed": "eboardevent", "id": 1, "param": {"serialnr": "23946"}}}))
        .await;

    let mut moves: Vec<String> = Vec::new();
    let mut last: Vec<String> = Vec::new();
    let mut setup_seen = false;
    let mut clock_seen = false;
    let mut last_board = String::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(120);
    while moves.len() < expected.len() || last_board != final_board {
        assert!(
            tokio::time::Instant::now() < until,
            "the feed did not reach the game's end: {moves:?}, board {last_board}, record {:?}",
            snap.borrow().moves
        );
        let push = lichess
            .recv(30)
            .await
            .unwrap_or_else(|| panic!("no push within 30 s; moves so far {moves:?}"));
        if push["response"] == "call" {
            assert_eq!(push["id"], 3);
            setup_seen = true;
            continue;
        }
        assert_eq!(push["response"], "feed", "{push}");
        assert_eq!(push["id"], 1);
        let p = &push["param"];
        assert_eq!(p["serialnr"], "23946");
        assert_eq!(p["flipped"], false);
        if let Some(b) = p["board"].as_str() {
            last_board = b.to_string();
        }
        if let Some(c) = p.get("clock").filter(|c| !c.is_null()) {
            let secs = c["white"].as_u64().unwrap() + c["black"].as_u64().unwrap();
            assert!(secs <= 2 * 5400 && secs > 2 * 5000, "{c}");
            clock_seen = true;
        }
        let Some(san) = p.get("san").and_then(Value::as_array) else {
            continue;
        };
        assert_eq!(p["start"], START);
        let san: Vec<String> = san.iter().map(|s| s.as_str().unwrap().to_string()).collect();
        if san == last {
            continue;
        }
        if san.starts_with(&last) {
            moves.extend(san[last.len()..].iter().cloned());
        } else {
            moves = san.clone();
        }
        last = san;
    }
    assert!(setup_seen && clock_seen);
    assert_eq!(moves, expected);

    // The chess.com page saw the board move to the final position (its clock
    // goes on running: pushes go on coming).
    let mut boards: Vec<String> = Vec::new();
    while boards.last() != Some(&final_board) {
        let push = chesscom
            .recv(10)
            .await
            .unwrap_or_else(|| panic!("the chess.com feed stopped at {:?}", boards.last()));
        if push["response"] == "feed" {
            assert!(push["param"].get("san").is_none());
            if let Some(b) = push["param"]["board"].as_str() {
                boards.push(b.to_string());
            }
        }
    }
    assert_eq!(boards.last(), Some(&final_board));
    assert!(
        boards.len() > expected.len(),
        "a push per change: {}",
        boards.len()
    );

    // The same list over plain HTTP.
    let r = get(addr, "/api/v1.0/eboards", &[]).await;
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v[0]["board"], final_board.as_str());
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_pgn_is_the_folder_s_bytes_and_304_when_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let game = &mated_game();
    let expected = sans(&game.start, &game.moves);
    let (daemon, addr, emulator) = start(
        dir.path(),
        game_log(&game.start, &game.moves, 42, 1500),
        8.0,
        HttpConfig::on("127.0.0.1:0"),
    )
    .await;
    let snap = daemon.boards()[0].2.clone();
    wait_for("the game's end", 60, || !snap.borrow().result.is_empty()).await;
    let round = dir.path().join("live/round-4");
    let all = round.join("games.pgn");
    wait_for("the round's file", 10, || {
        std::fs::read_to_string(&all).is_ok_and(|t| common::pgn_moves(&t) == vec![expected.clone()])
    })
    .await;
    for (path, file) in [
        ("/round-4/games.pgn", all.clone()),
        ("/round-4/game-7.pgn", round.join("game-7.pgn")),
    ] {
        let r = get(addr, path, &[]).await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(
            r.body,
            std::fs::read(&file).unwrap(),
            "{path}: the folder's bytes"
        );
        assert!(
            r.header("content-type")
                .unwrap()
                .starts_with("application/x-chess-pgn")
        );
        let tag = r.header("etag").unwrap().to_string();
        let modified = r.header("last-modified").unwrap().to_string();
        let again = get(addr, path, &[("If-None-Match", &tag)]).await;
        assert_eq!(again.status, 304, "{path}");
        assert!(again.body.is_empty());
        assert_eq!(again.header("etag"), Some(tag.as_str()));
        let since = get(addr, path, &[("If-Modified-Since", &modified)]).await;
        assert_eq!(since.status, 304, "{path}");
        let other = get(addr, path, &[("If-None-Match", "\"something-else\"")]).await;
        assert_eq!(other.status, 200);
    }
    // A change gives a new tag.
    let before = get(addr, "/round-4/games.pgn", &[]).await;
    let tag = before.header("etag").unwrap().to_string();
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
    let after_tag = {
        let body = std::fs::read(&all).unwrap();
        let mut changed = body.clone();
        changed.extend_from_slice(b"\n");
        std::fs::write(&all, &changed).unwrap();
        eboard_bridge::net::pgn::etag(&changed)
    };
    assert_ne!(after_tag, tag);
    // Paths outside the folder's files are not served.
    let dir2 = tempfile::tempdir().unwrap();
    let (daemon, addr, emulator) = start(
        dir2.path(),
        game_log(&game.start, &game.moves[..2], 1, 500),
        8.0,
        HttpConfig::on("127.0.0.1:0"),
    )
    .await;
    for path in [
        "/round-4/../state/recordings/board0.esl",
        "/round-x/games.pgn",
        "/round-4/none.pgn",
        "/etc/passwd",
    ] {
        let r = get(addr, path, &[]).await;
        assert_eq!(r.status, 404, "{path}");
    }
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_resume_with_last_event_id_losing_none() {
    let dir = tempfile::tempdir().unwrap();
    let game = &mated_game();
    let (daemon, addr, emulator) = start(
        dir.path(),
        game_log(&game.start, &game.moves, 42, 1500),
        6.0,
        HttpConfig::on("127.0.0.1:0"),
    )
    .await;
    // One client reads everything; another leaves after some events and comes
    // back with the last id it saw.
    let mut steady = SseClient::open(addr, None).await;
    let mut leaving = SseClient::open(addr, None).await;
    let mut seen = Vec::new();
    while seen.len() < 40 {
        seen.push(leaving.next(20).await.expect("events while the game is played"));
    }
    let last_id = seen.last().unwrap().id.clone().unwrap();
    drop(leaving);
    let snap = daemon.boards()[0].2.clone();
    let plies = snap.borrow().moves.len();
    wait_for("more moves while away", 30, || {
        snap.borrow().moves.len() >= plies + 6
    })
    .await;
    let mut back = SseClient::open(addr, Some(&last_id)).await;
    wait_for("the game's end", 60, || !snap.borrow().result.is_empty()).await;
    // Each reads up to the game's end (the clock goes on reporting after it).
    let ended = |e: &Sse| data(e)["type"] == "game_end";
    let mut all_steady = Vec::new();
    while let Some(e) = steady.next(5).await {
        all_steady.push(e);
        if ended(all_steady.last().unwrap()) {
            break;
        }
    }
    while let Some(e) = back.next(5).await {
        seen.push(e);
        if ended(seen.last().unwrap()) {
            break;
        }
    }
    // Ids are consecutive, every event has its board, and the one who came back
    // has exactly what the one who stayed has from its first event on.
    let ids = |v: &[Sse]| -> Vec<u64> {
        v.iter()
            .map(|e| {
                e.id.as_ref()
                    .unwrap()
                    .rsplit('-')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect()
    };
    let steady_ids = ids(&all_steady);
    assert!(steady_ids.windows(2).all(|w| w[1] == w[0] + 1), "{steady_ids:?}");
    let seen_ids = ids(&seen);
    assert!(
        seen_ids.windows(2).all(|w| w[1] == w[0] + 1),
        "no gap across the resume: {seen_ids:?}"
    );
    let from = all_steady.iter().position(|e| e.id == seen[0].id).unwrap();
    assert_eq!(all_steady[from..], seen[..]);
    let moves: Vec<String> = all_steady
        .iter()
        .map(data)
        .filter(|v| v["type"] == "move")
        .map(|v| {
            assert_eq!(v["board"], "board0");
            v["san"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        moves.last(),
        Some(&sans(&game.start, &game.moves)[game.moves.len() - 1])
    );
    assert!(all_steady.iter().map(data).any(|v| v["type"] == "game_end"));

    // An id of another run: a reset, then every event kept.
    let mut other = SseClient::open(addr, Some("1-5")).await;
    let reset = other.next(5).await.unwrap();
    assert_eq!(reset.event.as_deref(), Some("reset"));
    let first = other.next(5).await.unwrap();
    assert!(first.id.unwrap().ends_with("-1"));
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_behind_the_history_is_told_what_it_lost_and_the_api_lists_the_boards() {
    let dir = tempfile::tempdir().unwrap();
    let game = &mated_game();
    let mut http = HttpConfig::on("127.0.0.1:0");
    http.event_history = 10;
    let (daemon, addr, emulator) = start(
        dir.path(),
        game_log(&game.start, &game.moves[..20], 3, 800),
        8.0,
        http,
    )
    .await;
    let mut client = SseClient::open(addr, None).await;
    let first = client.next(20).await.unwrap();
    let id = first.id.unwrap();
    let snap = daemon.boards()[0].2.clone();
    wait_for("the moves", 30, || snap.borrow().moves.len() == 20).await;
    let mut late = SseClient::open(addr, Some(&id)).await;
    let lost = late.next(5).await.unwrap();
    assert_eq!(lost.event.as_deref(), Some("lost"));
    let missed = data(&lost)["missed"].as_u64().unwrap();
    assert!(missed > 10, "{missed}");
    let next = late.next(5).await.unwrap();
    let n = |id: &str| id.rsplit('-').next().unwrap().parse::<u64>().unwrap();
    assert_eq!(n(next.id.as_ref().unwrap()), n(&id) + missed + 1);

    // Without `[http] arbiters` there is no console at all.
    for path in ["/arbiter", "/arbiter/login", "/arbiter/api/state"] {
        assert_eq!(get(addr, path, &[]).await.status, 404, "{path}");
    }

    let r = get(addr, "/api/boards", &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    let b = &v[0];
    let s = snap.borrow().clone();
    assert_eq!(b["Id"], "board0");
    assert_eq!(b["ObjectPath"], "/org/eboardbridge/board/board0");
    assert_eq!(b["Moves"], json!(s.moves));
    assert_eq!(b["Fen"], s.fen);
    assert_eq!(b["White"], "Anderssen, Adolf");
    assert_eq!(b["BoardNumber"], 7);
    assert_eq!(b["Tags"], json!({"Board": "7"}), "the board's tags");
    assert_eq!(b["Status"], "playing");
    assert_eq!(b["Connected"], true);
    assert_eq!(b["SerialNumber"], "23946");
    for p in [
        "WhiteClockMs",
        "BlackClockMs",
        "ClockRunning",
        "Pgn",
        "LastMove",
        "Irregularity",
        "Round",
        "TimeControl",
    ] {
        assert!(b.get(p).is_some(), "{p}");
    }
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_limit_are_refused_and_a_stuck_client_holds_only_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let game = &mated_game();
    let mut http = HttpConfig::on("127.0.0.1:0");
    http.max_connections = 3;
    let (daemon, addr, emulator) =
        start(dir.path(), game_log(&game.start, &game.moves, 9, 1500), 8.0, http).await;
    // A client that never reads, and one that does.
    let stuck = SseClient::open(addr, None).await;
    let mut reader = SseClient::open(addr, None).await;
    assert_eq!(get(addr, "/api/boards", &[]).await.status, 200);
    let extra = SseClient::open(addr, None).await;
    // The fourth connection is answered 503 and closed.
    let r = tokio::time::timeout(Duration::from_secs(5), get(addr, "/api/boards", &[]))
        .await
        .expect("503 in time");
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("5"));
    drop(extra);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = tokio::time::timeout(Duration::from_secs(5), get(addr, "/api/boards", &[]))
        .await
        .expect("200 in time");
    assert_eq!(r.status, 200);
    // The game goes on to its end, and the reading client gets it all.
    let snap = daemon.boards()[0].2.clone();
    wait_for("the game's end", 60, || !snap.borrow().result.is_empty()).await;
    let mut last_move = None;
    while let Some(e) = reader.next(5).await {
        let v = data(&e);
        if v["type"] == "move" {
            last_move = Some(v["san"].as_str().unwrap().to_string());
        }
        if v["type"] == "game_end" {
            break;
        }
    }
    assert_eq!(last_move, sans(&game.start, &game.moves).last().cloned());
    assert_eq!(snap.borrow().moves.len(), game.moves.len());
    drop(stuck);
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
}

const PAGE_STATE: &str = r#"(() => {
  const card = document.querySelector('section.board');
  if (!card) return null;
  const text = sel => card.querySelector(sel)?.textContent ?? '';
  return {
    board: card.dataset.board,
    moves: [...card.querySelectorAll('.moves .mv')].map(e => e.textContent),
    white: text('.clock.white'), black: text('.clock.black'),
    running: card.querySelector('.clock.running')?.classList.contains('white') ? 'white'
      : card.querySelector('.clock.running') ? 'black' : 'none',
    players: [text('.player.white .name'), text('.player.black .name')],
    pieces: card.querySelectorAll('.diagram .pc').length,
    result: text('.result'),
    link: document.getElementById('link').textContent,
  };
})()"#;

fn clock_secs(text: &str) -> u64 {
    text.split(':')
        .fold(0, |acc, p| acc * 60 + p.parse::<u64>().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_page_in_chromium_follows_the_game() {
    if !need(&[Need::AnyTool(&CHROMIUM, "chromium")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let game = &mated_game();
    let expected = sans(&game.start, &game.moves);
    let result = if game.moves.len() % 2 == 1 { "1-0" } else { "0-1" };
    let (daemon, addr, emulator) = start(
        dir.path(),
        game_log(&game.start, &game.moves, 11, 3000),
        3.0,
        HttpConfig::on("127.0.0.1:0"),
    )
    .await;
    let snap = daemon.boards()[0].2.clone();
    wait_for("some moves", 30, || snap.borrow().moves.len() >= 4).await;
    let mut browser = Browser::open(&format!("http://{addr}/"))
        .within(60, "headless Chromium to open the live page")
        .await;
    // The page shows the board with its moves so far, then follows the game live
    // from /api/events (no reload).
    let mut early = Value::Null;
    for _ in 0..100 {
        early = browser.eval(PAGE_STATE).await;
        if early["moves"].as_array().is_some_and(|m| m.len() >= 4) && early["link"] == "live" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let early_moves: Vec<String> = serde_json::from_value(early["moves"].clone()).unwrap();
    assert!(early_moves.len() >= 4, "{early}");
    assert!(
        early_moves.len() < expected.len(),
        "the page opened while the game plays: {early}"
    );
    assert_eq!(early_moves[..], expected[..early_moves.len()]);
    assert_eq!(early["board"], "board0");
    assert_eq!(
        early["players"],
        json!(["Anderssen, Adolf", "Kieseritzky, Lionel"])
    );
    assert_eq!(early["link"], "live");
    // Clocks: H:MM:SS near the 1:30:00 the clock started from; the one that runs
    // is the side to move.
    let (w, b) = (
        clock_secs(early["white"].as_str().unwrap()),
        clock_secs(early["black"].as_str().unwrap()),
    );
    assert!(
        (5200..=5400).contains(&w) && (5200..=5400).contains(&b),
        "{early}"
    );
    wait_for("the game's end", 90, || !snap.borrow().result.is_empty()).await;
    let mut last = Value::Null;
    for _ in 0..50 {
        last = browser.eval(PAGE_STATE).await;
        if last["result"] == result {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let moves: Vec<String> = serde_json::from_value(last["moves"].clone()).unwrap();
    assert_eq!(moves, expected, "{last}");
    assert_eq!(last["result"], result);
    let s = snap.borrow().clone();
    // The clocks as the board last reported them (a finished game's clock stands).
    for (side, ms) in [("white", s.white_clock_ms), ("black", s.black_clock_ms)] {
        let shown = clock_secs(last[side].as_str().unwrap()) as i64;
        assert!(
            (shown - ms / 1000).abs() <= 1,
            "{side}: page {shown} s, board {ms} ms"
        );
    }
    let mut end = game.start.clone();
    for m in &game.moves {
        end.play_unchecked(*m);
    }
    assert_eq!(last["pieces"], end.board().occupied().count());
    browser.close().await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
}

/// A Bluetooth board answers the battery question: LiveChess clients get its
/// charge as `"84%"` in `eboards`, `/api/boards` as `Battery` (a wired board's is
/// null: the LiveChess test above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bluetooth_board_reports_its_battery() {
    let dir = tempfile::tempdir().unwrap();
    let game = &pgn_games("games/kasparov-deep-blue-1997.pgn")[0];
    let (daemon, addr, emulator) = start_board(
        dir.path(),
        game_log(&game.start, &game.moves[..6], 7, 1500),
        6.0,
        HttpConfig::on("127.0.0.1:0"),
        Some(84),
    )
    .await;
    let snap = daemon.boards()[0].2.clone();
    wait_for("the board's battery", 10, || snap.borrow().battery == Some(84)).await;

    let mut client = LiveChess::connect(addr, None).await;
    client.send(json!({"id": 1, "call": "eboards"})).await;
    let list = client.recv(5).await.unwrap();
    assert_eq!(list["param"][0]["serialnr"], "23946");
    assert_eq!(list["param"][0]["battery"], "84%", "{list}");

    let r = get(addr, "/api/boards", &[]).await;
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v[0]["Battery"], 84, "{}", v[0]);
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
}
