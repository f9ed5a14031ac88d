//! The daemon on the network: real games from `tests/data/games/` played by emulated
//! boards on real pseudo-terminals, the daemon's HTTP server on a free localhost
//! port, and real clients: a LiveChess WebSocket client written from
//! the LiveChess API as `docs/NETWORK.md` describes it, plain HTTP/1.1 over TCP for the PGN and SSE,
//! and headless Chromium for the live page.

use crate::common;
mod feeds;
mod livechess;
mod page;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::browser::{Browser, CHROMIUM};
use common::emulated::hands_log as game_log;
use common::{Need, Within, mated_game, need, pgn_games, sans, wait_for};
use eboard_bridge::daemon::{BusChoice, Daemon, DaemonConfig};
use eboard_bridge::device::EmulatorConfig;
use eboard_bridge::log::SensorLog;
use eboard_bridge::net::HttpConfig;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use shakmaty::Position;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

fn emulate(
    log: SensorLog,
    link: &Path,
    speed: f64,
    serial: &str,
    battery: Option<u8>,
) -> tokio::task::JoinHandle<()> {
    let cfg = EmulatorConfig {
        speed,
        serial: serial.into(),
        battery,
        ..EmulatorConfig::default()
    };
    common::emulated::emulate_with(log, link, cfg)
}

fn config(dir: &Path, http: HttpConfig) -> DaemonConfig {
    let mut c = common::process::test_open(dir);
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

/// The same, the HTTP server on a free port of 127.0.0.1 with its other
/// settings as they come.
async fn start_on_loopback(
    dir: &Path,
    log: SensorLog,
    speed: f64,
) -> (Daemon, SocketAddr, tokio::task::JoinHandle<()>) {
    start(dir, log, speed, HttpConfig::on("127.0.0.1:0")).await
}

/// Stops `daemon` (within 30 s) and the emulated board playing to it.
async fn stop(daemon: Daemon, emulator: tokio::task::JoinHandle<()>) {
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
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

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
