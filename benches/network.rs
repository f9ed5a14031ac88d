//! Do network clients delay a board? `cargo bench --bench network`.
//!
//! One emulated board plays a real game (Kasparov - Deep Blue 1997, game 1) at real
//! speed through the daemon, published on a private D-Bus broker (busd) with the
//! HTTP server on. A D-Bus client, on a thread and runtime of its own, notes when
//! each `MoveMade` arrives; the emulator notes when it wrote the bytes of the
//! placement that made the move (`release_ms = 0`, so the move is made on it). The
//! latency of a move is the difference.
//!
//! The game is played twice: with no network client, and with 200 SSE clients
//! reading `/api/events`, 20 LiveChess clients subscribed to the board, and one
//! SSE client that never reads, all in a separate process (this binary again,
//! with `EB_NETWORK_CLIENTS` set). The figures are printed for both runs.
//!
//! Then three times with `[mqtt]` on: a real Mosquitto broker on a free port (when
//! `mosquitto` is installed), a "broker" that accepts the connection and never
//! answers, and no broker at all: a slow or absent broker must not delay a board.
//!
//! `EB_NETWORK_PLIES` (default 60) sets how many plies of the game are played.

mod support;

use std::time::Duration;

use eboard_bridge::board::Orientation;
use eboard_bridge::daemon::{BusChoice, Daemon, DaemonConfig};
use eboard_bridge::log::{Header, SensorLog};
use eboard_bridge::net::HttpConfig;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::{Hands, Style};
use futures_util::StreamExt;
use shakmaty::san::San;
use shakmaty::{Chess, Position};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

const GAME: &str = "Nf3 d5 g3 Bg4 b3 Nd7 Bb2 e6 Bg2 Ngf6 O-O c6 d3 Bd6 Nbd2 O-O h3 Bh5 e3 h6 Qe1 Qa5 a3 Bc7 Nh4 g5 \
Nhf3 e5 e4 Rfe8 Nh2 Qb6 Qc1 a5 Re1 Bd6 Ndf1 dxe4 dxe4 Bc5 Ne3 Rad8 Nhf1 g4 hxg4 Nxg4 f3 Nxe3 Nxe3 Be7 Kh1 Bg5 \
Re2 a4 b4 f5 exf5 e4 f4 Bxe2 fxg5 Ne5 g6 Bf3 Bc3 Qb5 Qf1 Qxf1+ Rxf1 h5 Kg1 Kf8 Bh3 b5 Kf2 Kg7 g4 Kh6 Rg1";

fn game_log(plies: usize) -> SensorLog {
    let style = Style {
        think_ms: (300, 900),
        step_ms: (80, 160),
        retouch: 0,
        ..Style::default()
    };
    let mut hands = Hands::new(1997, style, Orientation::Normal);
    let mut pos = Chess::default();
    hands.board(pos.board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).expect("a time"));
    for san in GAME.split_whitespace().take(plies) {
        let mv = san
            .parse::<San>()
            .ok()
            .and_then(|s| s.to_move(&pos).ok())
            .expect("the game's moves are legal");
        hands.play(&pos, &mv);
        pos.play_unchecked(mv);
    }
    hands.wait(1500);
    SensorLog {
        header: Header::default(),
        records: hands.records,
        lines: Vec::new(),
    }
}

/// The latencies (ms) of every move of one run.
/// What runs beside the board.
#[derive(Clone, Copy, PartialEq)]
enum Load {
    Nothing,
    Clients,
    /// `[mqtt]` pointing at this port.
    Mqtt(u16),
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn run(plies: usize, load: Load) -> Vec<f64> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async move {
        let dir = tempfile::tempdir().expect("a folder");
        let log = game_log(plies);
        let making = support::making_records(&log);
        assert_eq!(making.len(), plies, "the log replays to every move");
        let address = format!("unix:path={}", dir.path().join("bus.sock").display());
        support::broker(&address).await;
        let arrivals = support::listen(&address);
        let link = dir.path().join("board0");
        let (emulated, trace) = support::board(&log, &link);
        let mut config = DaemonConfig {
            http: Some(HttpConfig::on("127.0.0.1:0")),
            ..support::daemon_config(dir.path())
        };
        if let Load::Mqtt(port) = load {
            let mut m = eboard_bridge::mqtt::MqttConfig::for_broker(&format!("mqtt://127.0.0.1:{port}"))
                .expect("a broker address");
            m.prefix = Some("eboard/bench".into());
            config.mqtt = Some(m);
        }
        let daemon = Daemon::start(vec![link], config, BusChoice::Address(address))
            .await
            .expect("the daemon starts");
        let http = daemon.http_addresses()[0];
        let mut clients = None;
        if load == Load::Clients {
            let exe = std::env::current_exe().expect("this program");
            let mut child = tokio::process::Command::new(exe)
                .env("EB_NETWORK_CLIENTS", http.to_string())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("the clients' process");
            // It says when every client is connected.
            let mut out = child.stdout.take().expect("its stdout");
            let mut buf = [0u8; 64];
            let n = out.read(&mut buf).await.expect("a line");
            eprintln!("  load: {}", String::from_utf8_lossy(&buf[..n]).trim());
            clients = Some(child);
        }
        let (_, _, snap) = daemon.boards()[0].clone();
        let until = Instant::now() + Duration::from_secs(600);
        while snap.borrow().moves.len() < plies && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let moves = snap.borrow().moves.len();
        if let Some(mut c) = clients {
            let _ = c.kill().await;
        }
        daemon.shutdown().await;
        emulated.abort();
        assert_eq!(moves, plies, "every move was made");
        let trace = trace.lock().expect("a lock").clone();
        let arrivals = arrivals.lock().expect("a lock").clone();
        support::latencies(&making, &trace, &arrivals)
    })
}

/// The clients' process: 200 SSE readers, 20 LiveChess feeds, one SSE client that
/// never reads; runs until killed.
fn clients(addr: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async move {
        let request = format!("GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
        let mut readers = Vec::new();
        for _ in 0..200 {
            let mut s = tokio::net::TcpStream::connect(addr).await.expect("connects");
            s.write_all(request.as_bytes()).await.expect("writes");
            readers.push(tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
            }));
        }
        // One that asks and never reads.
        let mut stuck = tokio::net::TcpStream::connect(addr).await.expect("connects");
        stuck.write_all(request.as_bytes()).await.expect("writes");
        for feed in 0..20 {
            let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/v1.0"))
                .await
                .expect("a LiveChess connection");
            use futures_util::SinkExt;
            let sub = format!(
                r#"{{"id":2,"call":"subscribe","param":{{"feed":"eboardevent","id":{feed},"param":{{}}}}}}"#
            );
            ws.send(tokio_tungstenite::tungstenite::Message::Text(sub.into()))
                .await
                .expect("subscribes");
            let setup = r#"{"id":3,"call":"call","param":{"id":FEED,"method":"setup","param":{"fen":"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"}}}"#
                .replace("FEED", &feed.to_string());
            ws.send(tokio_tungstenite::tungstenite::Message::Text(setup.into()))
                .await
                .expect("sets up");
            readers.push(tokio::spawn(async move { while let Some(Ok(_)) = ws.next().await {} }));
        }
        println!("200 SSE readers, 1 SSE client that never reads, 20 LiveChess feeds connected");
        std::future::pending::<()>().await;
        drop(stuck);
    });
}

fn main() {
    if let Ok(addr) = std::env::var("EB_NETWORK_CLIENTS") {
        clients(&addr);
        return;
    }
    let plies = std::env::var("EB_NETWORK_PLIES")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(60)
        .min(GAME.split_whitespace().count());
    // A real broker, when installed.
    let broker_port = free_port();
    let broker = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .and_then(|bin| {
            std::process::Command::new(bin)
                .args(["-p", &broker_port.to_string()])
                .stderr(std::process::Stdio::null())
                .spawn()
                .ok()
        });
    // A broker that takes the connection and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let silent_port = silent.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().flatten() {
            held.push(s);
        }
    });
    let mut runs = vec![
        ("no network client", Load::Nothing),
        ("200 SSE + 1 stuck + 20 LiveChess", Load::Clients),
    ];
    if broker.is_some() {
        runs.push(("MQTT, broker up (Mosquitto)", Load::Mqtt(broker_port)));
    }
    runs.push(("MQTT, broker silent", Load::Mqtt(silent_port)));
    runs.push(("MQTT, no broker", Load::Mqtt(free_port())));
    for (name, load) in runs {
        eprintln!("{name}: playing {plies} plies at real speed");
        let mut l = run(plies, load);
        println!("{}", support::summary(name, &mut l));
    }
    if let Some(mut b) = broker {
        let _ = b.kill();
        let _ = b.wait();
    }
}
