//! Issue 61, the broadcast delay, end to end: an emulated board on a real
//! pseudo-terminal playing a real game at a person's pace, the daemon as the
//! real binary with `[broadcast] delay` on a private D-Bus broker (busd),
//! its HTTP server on a free port and a stand-in lichess (`../lichess/standin.rs`).
//!
//! Each surface is watched from the test: the arbiter's by the board's
//! `MoveMade` signals (when the board showed each move), the spectators' by
//! `/api/boards` and the broadcast folder polled every 20 ms, an SSE stream
//! of `/api/events`, the LiveChess WebSocket and the pushes the stand-in
//! lichess took (each stamped when it arrived).
//!
//! - `surfaces`: no move reaches a spectator's surface less than the delay
//!   after the board showed it, and every move reaches it within the delay and
//!   a second (the folder and lichess: and their own pacing, a write and a
//!   push at most a second apart, as without a delay); D-Bus has it at once.
//! - `off`: `ctl delay off` publishes every move held at once, journaled
//!   with who decided; `ctl delay` says the delay in effect.
//! - `finished`: a game's result the delay late by default, at once with
//!   `finished = "at_end"` (the moves held with it).
//! - `restart`: SIGKILL with moves held, and a start again: nothing reaches
//!   a spectator early, nothing is lost.

use crate::common;
use crate::lichess::standin;

mod finished;
mod off;
mod restart;
mod surfaces;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::process::{Running, run_command};
use common::{private_bus, wait_for};
use eboard_bridge::board::Orientation;
use eboard_bridge::log::SensorLog;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::Hands;
use futures_util::StreamExt;
use shakmaty::{Chess, Move, Position};
use standin::{StandIn, TOKEN};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// How late a surface's watcher may see a move besides what it measures (a
/// signal's way through the broker to the test).
const SLACK: Duration = Duration::from_millis(50);

/// The first `plies` plies of Kasparov - Deep Blue (1997) by steady hands,
/// a move every 1.2-1.6 s, the clock at 1:30:00.
fn game_log(plies: usize, seed: u64) -> (SensorLog, Vec<Move>) {
    let moves = common::game_of_at_least("games/kasparov-deep-blue-1997.pgn", plies).moves[..plies].to_vec();
    let mut hands = Hands::new(
        seed,
        common::steady_hands((1200, 1600), (60, 120)),
        Orientation::Normal,
    );
    hands.board(Chess::default().board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    hands.wait(1500);
    (common::played_log(hands, &Chess::default(), &moves, 3000), moves)
}

/// A hall of one board: its folder, bus, HTTP port and lichess stand-in.
struct Hall {
    dir: tempfile::TempDir,
    address: String,
    http: SocketAddr,
    lichess: StandIn,
    cfg: PathBuf,
}

impl Hall {
    /// Board 1 (`board1`) playing `log`; the daemon's configuration with
    /// `[broadcast] delay = "{delay}"` (and `[mqtt]` to the broker on
    /// `mqtt`, when given).
    async fn open(log: SensorLog, delay: &str, mqtt: Option<u16>) -> (Hall, tokio::task::JoinHandle<()>) {
        Hall::open_with(log, &format!("delay = \"{delay}\""), mqtt).await
    }

    /// The same, `[broadcast]` holding `broadcast`.
    async fn open_with(
        log: SensorLog,
        broadcast: &str,
        mqtt: Option<u16>,
    ) -> (Hall, tokio::task::JoinHandle<()>) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let lichess = StandIn::start(&["Round001"], &[]).await;
        let token = d.join("lichess-token");
        std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
        let port = common::web::free_port();
        let text = format!(
            "event = \"Delay Open\"\nround = 1\noutput = \"{live}\"\nstate = \"{state}\"\n\
             [[board]]\ndevice = \"{dev}\"\nnumber = 1\nwhite = \"Kasparov, Garry\"\nblack = \"Deep Blue\"\n\
             [http]\nlisten = \"127.0.0.1:{port}\"\n\
             [broadcast]\n{broadcast}\n\
             [lichess]\ntoken_file = \"{token}\"\nurl = \"{url}\"\nrounds = {{ 1 = \"Round001\" }}\nmax_per_second = 4\n",
            live = d.join("live").display(),
            state = d.join("state").display(),
            dev = d.join("board1").display(),
            token = token.display(),
            url = lichess.url,
        );
        let mqtt = mqtt
            .map(|port| format!("[mqtt]\nbroker = \"mqtt://127.0.0.1:{port}\"\nprefix = \"eboard/delay\"\n"))
            .unwrap_or_default();
        let cfg = d.join("config.toml");
        std::fs::write(&cfg, text + &mqtt).unwrap();
        let board = common::emulated::emulate(log, &d.join("board1"), 1.0, "61001");
        let address = private_bus(d).await;
        let hall = Hall {
            address,
            http: SocketAddr::from(([127, 0, 0, 1], port)),
            lichess,
            cfg,
            dir,
        };
        (hall, board)
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn run(&self) -> Running {
        Running::spawn(&mut run_command(
            &self.cfg,
            &[self.path().join("board1")],
            Some(&self.address),
        ))
    }

    fn game_file(&self) -> PathBuf {
        self.path().join("live/round-1/game-1.pgn")
    }
}

/// When each ply (1, 2, ...) first reached each surface.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<BTreeMap<&'static str, BTreeMap<usize, Instant>>>>);

impl Seen {
    /// Surface `name` shows `plies` plies now.
    fn shows(&self, name: &'static str, plies: usize) {
        self.shows_at(name, plies, Instant::now());
    }

    fn shows_at(&self, name: &'static str, plies: usize, at: Instant) {
        let mut all = self.0.lock().unwrap();
        let s = all.entry(name).or_default();
        for p in 1..=plies {
            s.entry(p).or_insert(at);
        }
    }

    fn of(&self, name: &str) -> BTreeMap<usize, Instant> {
        self.0.lock().unwrap().get(name).cloned().unwrap_or_default()
    }

    fn count(&self, name: &str) -> usize {
        self.of(name).len()
    }
}

/// The arbiter's side: each `MoveMade` signal of the board, from now on.
async fn watch_dbus(address: &str, seen: Seen) -> tokio::task::JoinHandle<()> {
    let (client, mut stream) =
        common::listen(address, eboard_bridge::bus::BOARD_INTERFACE, Some("MoveMade")).await;
    tokio::spawn(async move {
        let _keep = client;
        while let Some(Ok(m)) = stream.next().await {
            let at = Instant::now();
            if let Ok((ply, _, _, _)) = m.body().deserialize::<(u32, String, String, String)>() {
                seen.shows_at("dbus", ply as usize, at);
            }
        }
    })
}

/// A GET of `path`, its body; `None` when the server does not answer (the
/// daemon is down) within a second.
async fn try_get(addr: SocketAddr, path: &str) -> Option<String> {
    let go = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
        let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.ok()?;
        let text = String::from_utf8_lossy(&buf).into_owned();
        text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
    };
    tokio::time::timeout(Duration::from_secs(1), go)
        .await
        .ok()
        .flatten()
}

/// `/api/boards`, polled every 20 ms: the board's `Moves`.
fn watch_boards(addr: SocketAddr, seen: Seen) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Some(body) = try_get(addr, "/api/boards").await {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) {
                    let n = v[0]["Moves"].as_array().map_or(0, Vec::len);
                    seen.shows("api/boards", n);
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

/// The broadcast folder's game file, polled every 20 ms.
fn watch_folder(file: PathBuf, seen: Seen) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            seen.shows("folder", common::plies_in(&file));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

/// `/api/events` as an SSE client: each `move` event's ply (connected again
/// when the daemon comes back, with the last id seen, as a browser's
/// `EventSource` does).
fn watch_sse(addr: SocketAddr, seen: Seen) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut last_id: Option<String> = None;
        loop {
            if let Ok(Ok(mut s)) =
                tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr)).await
            {
                let resume = last_id
                    .as_ref()
                    .map(|id| format!("Last-Event-ID: {id}\r\n"))
                    .unwrap_or_default();
                let req = format!(
                    "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n{resume}\r\n"
                );
                if s.write_all(req.as_bytes()).await.is_ok() {
                    let mut lines = BufReader::new(s).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        if let Some(id) = line.strip_prefix("id:") {
                            last_id = Some(id.trim().to_string());
                        }
                        let Some(data) = line.strip_prefix("data:") else {
                            continue;
                        };
                        let Ok(v) = serde_json::from_str::<serde_json::Value>(data.trim()) else {
                            continue;
                        };
                        if v["type"] == "move" {
                            if let Some(ply) = v["ply"].as_u64() {
                                seen.shows("sse", ply as usize);
                            }
                        }
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
}

/// The LiveChess WebSocket: a feed of the board, each push's moves
/// (connected again when the daemon comes back).
fn watch_livechess(addr: SocketAddr, seen: Seen) -> tokio::task::JoinHandle<()> {
    use tokio_tungstenite::tungstenite::Message;
    tokio::spawn(async move {
        loop {
            let url = format!("ws://{addr}/api/v1.0");
            if let Ok(Ok((mut ws, _))) =
                tokio::time::timeout(Duration::from_secs(1), tokio_tungstenite::connect_async(&url)).await
            {
                use futures_util::SinkExt;
                let list = r#"{"id":1,"call":"eboards"}"#;
                let _ = ws.send(Message::Text(list.into())).await;
                let mut subscribed = false;
                loop {
                    let m = match tokio::time::timeout(Duration::from_millis(500), ws.next()).await {
                        Ok(Some(Ok(m))) => m,
                        Ok(_) => break,
                        // No board with a serial number listed yet: asked again.
                        Err(_) if !subscribed => {
                            let _ = ws.send(Message::Text(list.into())).await;
                            continue;
                        }
                        Err(_) => continue,
                    };
                    let Message::Text(t) = m else { continue };
                    let Ok(v) = serde_json::from_str::<serde_json::Value>(&t) else {
                        continue;
                    };
                    if !subscribed {
                        if let Some(serial) = v["param"][0]["serialnr"].as_str().filter(|s| !s.is_empty()) {
                            let feed = serde_json::json!({"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":serial}}});
                            let _ = ws.send(Message::Text(feed.to_string().into())).await;
                            let setup = serde_json::json!({"id":3,"call":"call","param":{"id":1,"method":"setup","param":{"fen":START}}});
                            let _ = ws.send(Message::Text(setup.to_string().into())).await;
                            subscribed = true;
                        }
                        continue;
                    }
                    if let Some(san) = v["param"]["san"].as_array() {
                        seen.shows("livechess", san.len());
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
}

/// The pushes the stand-in lichess took: when each ply first arrived.
fn lichess_seen(lichess: &StandIn, seen: &Seen) {
    for s in lichess.to("Round001") {
        if s.status == 200 {
            let plies = standin::read_games(&s.body)
                .iter()
                .map(|g| g.moves.len())
                .max()
                .unwrap_or(0);
            seen.shows_at("lichess", plies, s.at);
        }
    }
}

/// Every ply of `plies` on `surface` no sooner than `delay` after D-Bus had
/// it, and (with `within`) no later than that; what was measured, in words.
fn judge(seen: &Seen, surface: &str, plies: usize, delay: Duration, within: Option<Duration>) -> String {
    let dbus = seen.of("dbus");
    let shown = seen.of(surface);
    let mut lags = Vec::new();
    for ply in 1..=plies {
        let at = dbus
            .get(&ply)
            .unwrap_or_else(|| panic!("ply {ply} never on D-Bus"));
        let public = shown
            .get(&ply)
            .unwrap_or_else(|| panic!("ply {ply} never on {surface}"));
        let lag = public.saturating_duration_since(*at);
        assert!(
            *public + SLACK >= *at + delay,
            "{surface}: ply {ply} shown {lag:?} after D-Bus had it, less than the delay {delay:?}"
        );
        if let Some(w) = within {
            assert!(
                lag <= delay + w,
                "{surface}: ply {ply} shown {lag:?} after D-Bus had it, more than the delay {delay:?} + {w:?}"
            );
        }
        lags.push(lag);
    }
    let min = lags.iter().min().copied().unwrap_or_default();
    let max = lags.iter().max().copied().unwrap_or_default();
    format!("{surface}: {plies} plies, {min:?} to {max:?} after D-Bus")
}

/// Waits (`secs` at most) until every surface of `surfaces` shows `plies`
/// plies; the test fails naming what each shows.
async fn wait_surfaces(seen: &Seen, lichess: &StandIn, surfaces: &[&str], plies: usize, secs: u64) {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        lichess_seen(lichess, seen);
        if surfaces.iter().all(|s| seen.count(s) >= plies) {
            return;
        }
        if Instant::now() > until {
            let counts: Vec<String> = surfaces
                .iter()
                .map(|s| format!("{s} {}", seen.count(s)))
                .collect();
            panic!(
                "not every surface shows {plies} plies within {secs} s: {}",
                counts.join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every spectator surface watched (`api/boards`, the folder, SSE,
/// LiveChess; MQTT's public topics with the broker on `mqtt`): the watchers and
/// the surfaces' names (the lichess stand-in is the hall's own).
async fn watch_spectators(
    hall: &Hall,
    mqtt: Option<u16>,
    seen: &Seen,
) -> (Vec<tokio::task::JoinHandle<()>>, Vec<&'static str>) {
    let mut watchers = vec![
        watch_boards(hall.http, seen.clone()),
        watch_folder(hall.game_file(), seen.clone()),
        watch_sse(hall.http, seen.clone()),
        watch_livechess(hall.http, seen.clone()),
    ];
    let mut surfaces = vec!["api/boards", "folder", "sse", "livechess", "lichess"];
    if let Some(port) = mqtt {
        watchers.push(watch_mqtt(port, seen.clone()).await);
        surfaces.push("mqtt");
    }
    (watchers, surfaces)
}

/// A Mosquitto broker on a free port of 127.0.0.1, anonymous clients
/// allowed (none when Mosquitto is not installed: said, and a failure under
/// `CI=true`): its port and process.
async fn broker(dir: &Path) -> Option<(u16, common::process::Running)> {
    if !common::need(&[common::Need::Tool("mosquitto", "mosquitto")]) {
        return None;
    }
    let bin = common::find_tool("mosquitto")?;
    let port = common::web::free_port();
    let conf = dir.join("mosquitto.conf");
    std::fs::write(
        &conf,
        format!("user root\nlistener {port} 127.0.0.1\nallow_anonymous true\n"),
    )
    .unwrap();
    let mut cmd = std::process::Command::new(bin);
    cmd.arg("-c").arg(&conf);
    let running = common::process::Running::spawn(&mut cmd);
    let until = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(Instant::now() < until, "mosquitto did not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Some((port, running))
}

/// MQTT's public topics: each `move` event on `eboard/delay/boards/+/events`.
async fn watch_mqtt(port: u16, seen: Seen) -> tokio::task::JoinHandle<()> {
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::mqttbytes::v5::Packet;
    use rumqttc::v5::{AsyncClient, Event, MqttOptions};
    let mut o = MqttOptions::new("delay-watcher", "127.0.0.1", port);
    o.set_keep_alive(Duration::from_secs(5));
    let (client, mut events) = AsyncClient::new(o, 64);
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let mut ready = Some(ready_tx);
    let task = tokio::spawn(async move {
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => {
                    let _ = client
                        .subscribe("eboard/delay/boards/+/events", QoS::AtLeastOnce)
                        .await;
                }
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    let at = Instant::now();
                    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&p.payload) {
                        if v["type"] == "move" {
                            if let Some(ply) = v["ply"].as_u64() {
                                seen.shows_at("mqtt", ply as usize, at);
                            }
                        }
                    }
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), ready_rx)
        .await
        .expect("the MQTT watcher subscribed within 10 s")
        .unwrap();
    task
}

/// The board's `Result` on `/api/boards` ("" while none, or no answer).
async fn public_result(addr: SocketAddr) -> (String, usize) {
    let Some(body) = try_get(addr, "/api/boards").await else {
        return (String::new(), 0);
    };
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    (
        v[0]["Result"].as_str().unwrap_or_default().to_string(),
        v[0]["Moves"].as_array().map_or(0, Vec::len),
    )
}
