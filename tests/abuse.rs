//! The HTTP surface under abuse, on loopback, while a real game plays: the
//! attacks a client on a hall's network can make cheaply (huge and unfinished
//! WebSocket messages, connections that trickle or never send their headers,
//! thousands of feeds, huge ids, SSE clients that never read), all at once,
//! each from its own loopback address (127.0.0.0/8 is all this machine's). A
//! well-behaved client on another address asks for `/api/boards` four times a
//! second throughout. The daemon runs in a process of its own (the real binary),
//! so its memory is measured alone. What must hold (`docs/RELIABILITY.md`, "The
//! network under abuse"): every move of the game is published, the well-behaved
//! client is served every time within 2 s, and the daemon's memory grows by less
//! than 40 MB and stays under 64 MB.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use common::{pgn_games, quick};
use eboard_bridge::board::Orientation;
use eboard_bridge::device::{Emulator, EmulatorConfig};
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::Hands;
use futures_util::{SinkExt, StreamExt};
use shakmaty::Position;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::{Instant, timeout};
use tokio_tungstenite::tungstenite::Message;

/// A TCP connection to `to` from the loopback address `from`.
async fn connect_from(from: Ipv4Addr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(IpAddr::V4(from), 0))?;
    timeout(Duration::from_secs(5), socket.connect(to))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect"))?
}

/// The daemon, killed when the test ends however it ends.
struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first board of `/api/boards`, from 127.0.0.2.
async fn boards(addr: SocketAddr) -> Option<serde_json::Value> {
    timeout(Duration::from_secs(2), async {
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

/// A process's resident memory (kB).
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spectators_side_holds_under_abuse_while_a_game_plays() {
    let dir = tempfile::tempdir().unwrap();
    // A real game that ends in checkmate (so it has an end to wait for), played
    // over about 45 s.
    let game = pgn_games("games/immortal-games.pgn")
        .into_iter()
        .find(|g| {
            let mut pos = g.start.clone();
            for m in &g.moves {
                pos.play_unchecked(*m);
            }
            g.moves.len() >= 30 && pos.is_checkmate()
        })
        .expect("a game that ends in checkmate");
    let mut hands = Hands::new(5, quick(), Orientation::Normal);
    hands.board(game.start.board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    let log = common::played_log(hands, &game.start, &game.moves, 1000);
    let link = dir.path().join("board0");
    let emulator = Emulator::open().unwrap();
    std::os::unix::fs::symlink(emulator.path(), &link).unwrap();
    let speed = log
        .records
        .last()
        .map_or(1.0, |r| r.time.micros() as f64 / 45e6)
        .max(1.0);
    let cfg = EmulatorConfig {
        speed,
        serial: "23946".into(),
        ..EmulatorConfig::default()
    };
    let board = tokio::spawn(async move {
        let _ = emulator.run(&log, "generated", &cfg).await;
    });
    // The daemon in a process of its own (its memory is what is measured), on a
    // free port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "output = \"{}\"\nstate = \"{}\"\ndevices = [\"{}\"]\n[http]\nlisten = \"{addr}\"\nheader_timeout_ms = 2000\nidle_timeout_ms = 3000\n",
            dir.path().join("live").display(),
            dir.path().join("state").display(),
            link.display()
        ),
    )
    .unwrap();
    let daemon = Daemon(
        std::process::Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .args(["run", "--bus", "none", "--config"])
            .arg(&config)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the daemon starts"),
    );
    let pid = daemon.0.id();
    let state = || async move { boards(addr).await };
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(b) = state().await {
            if !b["Fen"].as_str().unwrap_or_default().is_empty() {
                break;
            }
        }
        assert!(Instant::now() < until, "timed out waiting for the game's start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Memory: the peak while attacked, against before.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kb(pid);
    let peak = Arc::new(AtomicU64::new(before));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss_kb(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };

    // The well-behaved client, from 127.0.0.2.
    let served = Arc::new(AtomicUsize::new(0));
    let slowest_ms = Arc::new(AtomicU64::new(0));
    let good = {
        let (served, slowest_ms) = (served.clone(), slowest_ms.clone());
        tokio::spawn(async move {
            let mut failures = Vec::new();
            let until = Instant::now() + Duration::from_secs(30);
            while Instant::now() < until {
                let start = Instant::now();
                let ok = boards(addr).await.map(|_| ());
                match ok {
                    Some(()) => {
                        served.fetch_add(1, Ordering::Relaxed);
                        slowest_ms.fetch_max(start.elapsed().as_millis() as u64, Ordering::Relaxed);
                    }
                    _ => failures.push(start.elapsed()),
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            failures
        })
    };

    let mut attacks: Vec<(&str, tokio::task::JoinHandle<()>)> = Vec::new();
    // 20 floods of 50 MB in parallel: 10 in fragments of 8 KiB (each under the
    // frame limit, the message over it), 10 in four fragments of 12.5 MB.
    let taken = Arc::new(AtomicU64::new(0));
    for i in 0..20u8 {
        let taken = taken.clone();
        let fragment = if i % 2 == 0 { 8 * 1024 } else { 50 << 18 };
        attacks.push((
            "flood",
            tokio::spawn(async move {
                let n = flood(addr, Ipv4Addr::new(127, 0, 3, i + 1), fragment).await;
                taken.fetch_max(n, Ordering::Relaxed);
            }),
        ));
    }
    // 40 messages left unfinished (one fragment of 8 KiB, then silence), from
    // two addresses.
    let unfinished_closed = Arc::new(AtomicUsize::new(0));
    for i in 0..40u8 {
        let closed = unfinished_closed.clone();
        attacks.push((
            "unfinished",
            tokio::spawn(async move {
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
            }),
        ));
    }
    // 300 connections trickling their headers a byte a second, and 300 that
    // send nothing, each set from one address.
    let slow_done = Arc::new(AtomicUsize::new(0));
    for (third, trickle) in [(5u8, true), (6, false)] {
        for _ in 0..300 {
            let done = slow_done.clone();
            attacks.push((
                "slow",
                tokio::spawn(async move {
                    let Ok(mut s) = connect_from(Ipv4Addr::new(127, 0, third, 1), addr).await else {
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
                }),
            ));
        }
    }
    // 100 connections, each from an address of its own, asking for 2,000 feeds
    // with a setup each; and 10 with 40 MB ids.
    let feeds_closed = Arc::new(AtomicUsize::new(0));
    for i in 0..100u8 {
        let closed = feeds_closed.clone();
        attacks.push(("feeds", tokio::spawn(async move {
            let Ok(s) = connect_from(Ipv4Addr::new(127, 0, 7, i + 1), addr).await else { return };
            let url = format!("ws://{addr}/api/v1.0");
            let Ok(Ok((ws, _))) = timeout(Duration::from_secs(10), tokio_tungstenite::client_async(url, s)).await
            else {
                return;
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
        })));
    }
    for i in 0..10u8 {
        let taken = taken.clone();
        attacks.push((
            "ids",
            tokio::spawn(async move {
                let n = flood(addr, Ipv4Addr::new(127, 0, 8, i + 1), 40 << 20).await;
                taken.fetch_max(n, Ordering::Relaxed);
            }),
        ));
    }
    // 100 SSE clients that never read, from four addresses.
    let mut sse = Vec::new();
    for i in 0..100u8 {
        if let Ok(mut s) = connect_from(Ipv4Addr::new(127, 0, 9, 1 + i % 4), addr).await {
            let _ = s
                .write_all(b"GET /api/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
                .await;
            sse.push(s);
        }
    }

    let until = Instant::now() + Duration::from_secs(60);
    for (what, a) in attacks {
        let left = until.saturating_duration_since(Instant::now());
        match timeout(left, a).await {
            Ok(r) => r.unwrap(),
            Err(_) => panic!("an attack ({what}) did not end within 60 s"),
        }
    }
    let failures = timeout(Duration::from_secs(40), good)
        .await
        .expect("the good client ends")
        .unwrap();
    let until = Instant::now() + Duration::from_secs(90);
    let last = loop {
        if let Some(b) = state().await {
            if !b["Result"].as_str().unwrap_or_default().is_empty() {
                break b;
            }
        }
        assert!(Instant::now() < until, "timed out waiting for the game's end");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    sampler.abort();
    drop(sse);
    let peak = peak.load(Ordering::Relaxed);
    let grew_mb = peak.saturating_sub(before) as f64 / 1024.0;
    let moves = last["Moves"].as_array().map_or(0, Vec::len);
    eprintln!(
        "abuse: RSS {:.1} MB before, peak {:.1} MB (+{grew_mb:.1} MB); a flood took at most {} kB before it was closed; \
         unfinished messages closed {}/40; slow and silent connections ended {}/600; \
         feed floods closed by the server {}/100; \
         the good client served {} times, slowest {} ms, failures {:?}; {moves} of {} moves published",
        before as f64 / 1024.0,
        peak as f64 / 1024.0,
        taken.load(Ordering::Relaxed) / 1024,
        unfinished_closed.load(Ordering::Relaxed),
        slow_done.load(Ordering::Relaxed),
        feeds_closed.load(Ordering::Relaxed),
        served.load(Ordering::Relaxed),
        slowest_ms.load(Ordering::Relaxed),
        failures,
        game.moves.len(),
    );
    assert!(
        failures.is_empty(),
        "the good client was not served: {failures:?}"
    );
    assert!(
        served.load(Ordering::Relaxed) >= 60,
        "the good client was served too rarely"
    );
    assert!(slowest_ms.load(Ordering::Relaxed) < 2000);
    assert!(
        grew_mb < 40.0,
        "the daemon's memory grew by {grew_mb:.1} MB under attack"
    );
    assert!(
        peak < 64 * 1024,
        "the daemon's memory peaked at {} kB under attack",
        peak
    );
    assert!(
        taken.load(Ordering::Relaxed) < 8 << 20,
        "a flood was taken far beyond the message limit"
    );
    assert_eq!(
        unfinished_closed.load(Ordering::Relaxed),
        40,
        "unfinished messages left open"
    );
    assert_eq!(
        slow_done.load(Ordering::Relaxed),
        600,
        "slow or silent connections held past 20 s"
    );
    assert_eq!(feeds_closed.load(Ordering::Relaxed), 100, "feed floods left open");
    assert_eq!(moves, game.moves.len(), "every move published");
    drop(daemon);
    board.abort();
}
