//! The attacks a client on a hall's network can make cheaply on the HTTP
//! surface, each from its own loopback address (127.0.0.0/8 is all this
//! machine's): huge and unfinished WebSocket messages, connections that trickle
//! or never send their headers, thousands of feeds, huge ids, SSE clients that
//! never read. Shared by `tests/abuse.rs` (what must hold) and
//! `benches/latency.rs` (`EB_LATENCY_ATTACK=1`: a move's latency meanwhile).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::{Instant, timeout};
use tokio_tungstenite::tungstenite::Message;

/// A TCP connection to `to` from the loopback address `from`.
pub async fn connect_from(from: Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(IpAddr::V4(from), 0))?;
    timeout(Duration::from_secs(5), socket.connect(to))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect"))?
}

/// How long the well-behaved client may wait while the attacks go on: a bound
/// against starvation, not a speed target. On this 2-core machine a build
/// beside the test once held an answer 5 s (a fresh clone's second `cargo
/// test`); the speed under attack is the latency benchmark's
/// (`docs/PERFORMANCE.md`).
pub const SERVED_WITHIN: Duration = Duration::from_secs(15);

/// The first board of `/api/boards`, from 127.0.0.2 (the well-behaved client's
/// address), within [`SERVED_WITHIN`].
pub async fn boards(addr: SocketAddr) -> Option<serde_json::Value> {
    timeout(SERVED_WITHIN, async {
        let mut s = connect_from(Ipv4Addr::new(127, 0, 0, 2), addr).await.ok()?;
        s.write_all(b"GET /api/boards HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut body = Vec::new();
        s.read_to_end(&mut body).await.ok()?;
        let text = String::from_utf8_lossy(&body);
        let (head, json) = text.split_once("\r\n\r\n")?;
        if !head.starts_with("HTTP/1.1 200") {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        v.get(0).cloned()
    })
    .await
    .ok()
    .flatten()
}

/// A WebSocket upgrade on a raw socket: true when the server said 101.
async fn upgrade(stream: &mut TcpStream, addr: SocketAddr) -> bool {
    let req = format!(
        "GET /api/v1.0 HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    if stream.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 4096 {
        match timeout(Duration::from_secs(5), stream.read(&mut byte)).await {
            Ok(Ok(1)) => head.push(byte[0]),
            _ => return false,
        }
    }
    head.starts_with(b"HTTP/1.1 101")
}

/// A client frame's header: `fin`, `opcode`, `len` bytes, masked with a zero key
/// (so the payload goes as it is).
fn frame_header(fin: bool, opcode: u8, len: u64) -> Vec<u8> {
    let mut h = vec![(u8::from(fin) << 7) | opcode];
    if len < 126 {
        h.push(0x80 | len as u8);
    } else if len <= u16::MAX as u64 {
        h.push(0x80 | 126);
        h.extend((len as u16).to_be_bytes());
    } else {
        h.push(0x80 | 127);
        h.extend(len.to_be_bytes());
    }
    h.extend([0, 0, 0, 0]);
    h
}

/// Sends a 50 MB text message in fragments of `fragment` bytes from a 64 KiB
/// buffer; the bytes the server took before it closed.
async fn flood(addr: SocketAddr, from: Ipv4Addr, fragment: u64) -> u64 {
    let Ok(mut s) = connect_from(from, addr).await else {
        return 0;
    };
    if !upgrade(&mut s, addr).await {
        return 0;
    }
    let chunk = vec![b'7'; 64 * 1024];
    let total: u64 = 50 << 20;
    let mut sent = 0;
    let mut first = true;
    while sent < total {
        let len = fragment.min(total - sent);
        let fin = sent + len >= total;
        let header = frame_header(fin, if first { 1 } else { 0 }, len);
        first = false;
        if s.write_all(&header).await.is_err() {
            return sent;
        }
        let mut left = len;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            match timeout(Duration::from_secs(10), s.write_all(&chunk[..n])).await {
                Ok(Ok(())) => {}
                _ => return sent,
            }
            left -= n as u64;
            sent += n as u64;
        }
    }
    sent
}

/// One wave of every attack, under way.
pub struct Attacks {
    tasks: Vec<(&'static str, tokio::task::JoinHandle<()>)>,
    /// The most bytes of one flood the server took before it closed.
    pub taken: Arc<AtomicU64>,
    pub unfinished_closed: Arc<AtomicUsize>,
    pub slow_done: Arc<AtomicUsize>,
    pub feeds_closed: Arc<AtomicUsize>,
    /// The SSE clients that never read, held open until the wave ends.
    sse: Vec<TcpStream>,
}

/// What one wave came to.
#[derive(Debug)]
pub struct Outcome {
    pub taken: u64,
    pub unfinished_closed: usize,
    pub slow_done: usize,
    pub feeds_closed: usize,
    /// The SSE clients that never read, still open: the caller drops them.
    pub sse: Vec<TcpStream>,
}

/// Starts every attack on the server at `addr`:
/// - 20 floods of 50 MB in parallel: 10 in fragments of 8 KiB (each under the
///   frame limit, the message over it), 10 in four fragments of 12.5 MB;
/// - 40 messages left unfinished (one fragment of 8 KiB, then silence), from two
///   addresses;
/// - 300 connections trickling their headers a byte a second, and 300 that send
///   nothing, each set from one address;
/// - 100 connections, each from an address of its own, asking for 2,000 feeds
///   with a setup each; 10 with 40 MB ids;
/// - 100 SSE clients that never read, from four addresses.
pub async fn launch(addr: SocketAddr) -> Attacks {
    let mut tasks: Vec<(&'static str, tokio::task::JoinHandle<()>)> = Vec::new();
    let taken = Arc::new(AtomicU64::new(0));
    for i in 0..20u8 {
        let taken = taken.clone();
        let fragment = if i % 2 == 0 { 8 * 1024 } else { 50 << 18 };
        tasks.push((
            "flood",
            tokio::spawn(async move {
                let n = flood(addr, Ipv4Addr::new(127, 0, 3, i + 1), fragment).await;
                taken.fetch_max(n, Ordering::Relaxed);
            }),
        ));
    }
    let unfinished_closed = Arc::new(AtomicUsize::new(0));
    for i in 0..40u8 {
        let closed = unfinished_closed.clone();
        tasks.push(("unfinished", tokio::spawn(unfinished(addr, i, closed))));
    }
    let slow_done = Arc::new(AtomicUsize::new(0));
    for (third, trickle) in [(5u8, true), (6, false)] {
        for _ in 0..300 {
            let done = slow_done.clone();
            tasks.push(("slow", tokio::spawn(slow(addr, third, trickle, done))));
        }
    }
    let feeds_closed = Arc::new(AtomicUsize::new(0));
    for i in 0..100u8 {
        let closed = feeds_closed.clone();
        tasks.push(("feeds", tokio::spawn(feeds(addr, i, closed))));
    }
    for i in 0..10u8 {
        let taken = taken.clone();
        tasks.push((
            "ids",
            tokio::spawn(async move {
                let n = flood(addr, Ipv4Addr::new(127, 0, 8, i + 1), 40 << 20).await;
                taken.fetch_max(n, Ordering::Relaxed);
            }),
        ));
    }
    let mut sse = Vec::new();
    for i in 0..100u8 {
        if let Ok(mut s) = connect_from(Ipv4Addr::new(127, 0, 9, 1 + i % 4), addr).await {
            let _ = s
                .write_all(b"GET /api/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
                .await;
            sse.push(s);
        }
    }
    Attacks {
        tasks,
        taken,
        unfinished_closed,
        slow_done,
        feeds_closed,
        sse,
    }
}

impl Attacks {
    /// Waits for every attack to end, `within_s` seconds at most; panics naming
    /// the attack that did not end.
    pub async fn finish(self, within_s: u64) -> Outcome {
        let until = Instant::now() + Duration::from_secs(within_s);
        for (what, a) in self.tasks {
            let left = until.saturating_duration_since(Instant::now());
            match timeout(left, a).await {
                Ok(r) => r.expect("an attack's task"),
                Err(_) => panic!("an attack ({what}) did not end within {within_s} s"),
            }
        }
        Outcome {
            taken: self.taken.load(Ordering::Relaxed),
            unfinished_closed: self.unfinished_closed.load(Ordering::Relaxed),
            slow_done: self.slow_done.load(Ordering::Relaxed),
            feeds_closed: self.feeds_closed.load(Ordering::Relaxed),
            sse: self.sse,
        }
    }
}

/// One fragment of 8 KiB, then silence; counted when the server ends it
/// (within 15 s).
async fn unfinished(addr: SocketAddr, i: u8, closed: Arc<AtomicUsize>) {
    let Ok(mut s) = connect_from(Ipv4Addr::new(127, 0, 4, 1 + i % 2), addr).await else {
        return;
    };
    if !upgrade(&mut s, addr).await {
        return;
    }
    let mut msg = frame_header(false, 1, 8192);
    msg.extend(vec![b'x'; 8192]);
    let _ = s.write_all(&msg).await;
    let mut buf = [0u8; 1024];
    // The server ends it when it has been silent for the idle time.
    if let Ok(Ok(0) | Err(_)) = timeout(Duration::from_secs(15), async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) => return Ok(0),
                Ok(_) => continue,
                Err(e) => return Err(e),
            }
        }
    })
    .await
    {
        closed.fetch_add(1, Ordering::Relaxed);
    }
}

/// Headers trickled a byte a second (or nothing sent); counted when the server
/// answers or closes within 20 s, or never took the connection (a connection
/// left in the kernel's queue, on a loaded machine, holds nothing of the
/// daemon's).
async fn slow(addr: SocketAddr, third: u8, trickle: bool, done: Arc<AtomicUsize>) {
    let Ok(mut s) = connect_from(Ipv4Addr::new(127, 0, third, 1), addr).await else {
        done.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let start = Instant::now();
    let mut buf = [0u8; 512];
    for b in b"GET /api/boards HTTP/1.1\r\nHost: x\r\n".iter().cycle() {
        if start.elapsed() > Duration::from_secs(20) {
            return; // still held: not counted as ended
        }
        if trickle && s.write_all(&[*b]).await.is_err() {
            break;
        }
        // Answered (503) or closed: it ended.
        match timeout(Duration::from_secs(1), s.read(&mut buf)).await {
            Ok(Ok(_)) | Ok(Err(_)) => break,
            Err(_) => {}
        }
    }
    done.fetch_add(1, Ordering::Relaxed);
}

/// 2,000 feeds with a setup each on one connection; counted when the server
/// closes it (within 30 s), or refused it (a full server's 503).
async fn feeds(addr: SocketAddr, i: u8, closed: Arc<AtomicUsize>) {
    let Ok(s) = connect_from(Ipv4Addr::new(127, 0, 7, i + 1), addr).await else {
        closed.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let url = format!("ws://{addr}/api/v1.0");
    let ws = match timeout(Duration::from_secs(10), tokio_tungstenite::client_async(url, s)).await {
        Ok(Ok((ws, _))) => ws,
        Ok(Err(_)) => {
            // Refused or closed before the upgrade.
            closed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        Err(_) => return, // still held after 10 s: not counted
    };
    let (mut tx, mut rx) = ws.split();
    let reader = tokio::spawn(async move {
        // Until the server closes the connection, 30 s at most.
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match timeout(left, rx.next()).await {
                Ok(Some(Ok(Message::Close(_))) | None | Some(Err(_))) => return true,
                Ok(Some(Ok(_))) => {}
                Err(_) => return false,
            }
        }
    });
    for f in 0..2000 {
        let sub = format!(
            r#"{{"id":{f},"call":"subscribe","param":{{"feed":"eboardevent","id":{f},"param":{{"serialnr":"23946"}}}}}}"#
        );
        let setup = format!(
            r#"{{"id":{f},"call":"call","param":{{"id":{f},"method":"setup","param":{{"fen":"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"}}}}}}"#
        );
        if tx.feed(Message::text(sub)).await.is_err() || tx.feed(Message::text(setup)).await.is_err() {
            break;
        }
    }
    let _ = tx.flush().await;
    if reader.await.unwrap_or(false) {
        closed.fetch_add(1, Ordering::Relaxed);
    }
}
