//! Every board of every hall on MQTT, against real Mosquitto brokers started on
//! free localhost ports with the configuration files of `docs/mqtt/` (ports and
//! paths replaced): two daemons, each with an emulated board on a real
//! pseudo-terminal, publishing to one central broker (hall A through its own
//! broker and a bridge, hall B straight); a subscriber on the central broker; hall
//! A's broker stopped for 30 s mid-game; a daemon killed; arbiter calls over MQTT 5
//! request/response; TLS with client certificates.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::{Need, Within, need, output_within, pgn_games, quick, sans, wait_for};
use eboard_bridge::board::Orientation;
use eboard_bridge::daemon::{BusChoice, Config, Daemon};
use eboard_bridge::device::{Emulator, EmulatorConfig};
use eboard_bridge::log::SensorLog;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::Hands;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Packet, PubAckReason, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use serde_json::{Value, json};
use shakmaty::{Chess, Move, Position};

const PASSWORD: &str = "change-me";

fn docs(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/mqtt").join(name)).unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Mosquitto broker of this test: its configuration, process and port.
struct Broker {
    name: String,
    conf: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Broker {
    /// A broker from `text` (a file of `docs/mqtt/` with ports and paths already
    /// replaced), on `port`, keeping its files in `dir`.
    async fn start(dir: &Path, name: &str, text: &str, port: u16) -> Broker {
        let data = dir.join(format!("{name}-data"));
        std::fs::create_dir_all(&data).unwrap();
        let text = text
            .replace("listener 1883", &format!("listener {port} 127.0.0.1"))
            .replace("/var/lib/mosquitto/", &format!("{}/", data.display()));
        // Run as root (CI), Mosquitto would become the `mosquitto` user, who
        // cannot read this test's folder.
        let conf = dir.join(format!("{name}.conf"));
        std::fs::write(&conf, format!("user root\n{text}")).unwrap();
        let mut b = Broker {
            name: name.into(),
            conf,
            port,
            child: None,
        };
        b.restart().await;
        b
    }

    async fn restart(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.conf.with_extension("log"))
            .unwrap();
        // Debian puts it in /usr/sbin, which a user's PATH may not have.
        let bin = common::find_tool("mosquitto").expect("mosquitto (the test checks for it first)");
        let child = Command::new(bin)
            .arg("-c")
            .arg(&self.conf)
            .arg("-v")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("mosquitto (apt-get install mosquitto)");
        self.child = Some(child);
        let port = self.port;
        let until = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(
                tokio::time::Instant::now() < until,
                "{} did not listen",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops it as an administrator would (SIGTERM: it saves its sessions).
    async fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            common::send_signal(c.id(), libc::SIGTERM);
            common::wait_exit(&mut c, 30, &format!("the broker {} after SIGTERM", self.name)).await;
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn passwd(file: &Path, users: &[&str]) {
    for (i, u) in users.iter().enumerate() {
        let mut cmd = Command::new("mosquitto_passwd");
        cmd.arg("-b");
        if i == 0 {
            cmd.arg("-c");
        }
        let out = output_within(cmd.arg(file).arg(u).arg(PASSWORD), 30, "mosquitto_passwd");
        assert!(
            out.status.success(),
            "mosquitto_passwd {u}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A hall's broker from `docs/mqtt/hall.conf` and `hall.acl`, bridged to the
/// central broker on `central`.
async fn hall_broker(dir: &Path, hall: &str, port: u16, central: u16) -> Broker {
    let files = dir.join(hall);
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("hall.acl"), docs("hall.acl").replace("hall-a", hall)).unwrap();
    passwd(
        &files.join("hall.passwd"),
        &["eboard-bridge", "arbiter", "viewer"],
    );
    let text = docs("hall.conf")
        .replace("hall-a", hall)
        .replace("/etc/mosquitto/eboard/", &format!("{}/", files.display()))
        .replace("central.example.org:1883", &format!("127.0.0.1:{central}"));
    Broker::start(dir, hall, &text, port).await
}

async fn central_broker(dir: &Path, port: u16, halls: &[&str]) -> Broker {
    let files = dir.join("central");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("central.acl"), docs("central.acl")).unwrap();
    let mut users = vec!["broadcast"];
    users.extend_from_slice(halls);
    passwd(&files.join("central.passwd"), &users);
    let text = docs("central.conf").replace("/etc/mosquitto/eboard/", &format!("{}/", files.display()));
    Broker::start(dir, "central", &text, port).await
}

/// What a client received.
#[derive(Debug, Clone)]
struct Msg {
    topic: String,
    payload: String,
    retain: bool,
}

/// A client that keeps every message on `filter` (and reconnects on its own).
struct Subscriber {
    msgs: Arc<Mutex<Vec<Msg>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Subscriber {
    async fn start(port: u16, user: &str, id: &str, filter: &str) -> Subscriber {
        let mut o = MqttOptions::new(id, "127.0.0.1", port);
        o.set_credentials(user, PASSWORD);
        o.set_keep_alive(Duration::from_secs(5));
        let (client, mut events) = AsyncClient::new(o, 64);
        let msgs = Arc::new(Mutex::new(Vec::new()));
        let kept = msgs.clone();
        let filter = filter.to_string();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let mut ready = Some(ready_tx);
        let task = tokio::spawn(async move {
            loop {
                match events.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        client.subscribe(filter.clone(), QoS::AtLeastOnce).await.unwrap();
                    }
                    Ok(Event::Incoming(Packet::SubAck(_))) => {
                        if let Some(r) = ready.take() {
                            let _ = r.send(());
                        }
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => kept.lock().unwrap().push(Msg {
                        topic: String::from_utf8_lossy(&p.topic).into(),
                        payload: String::from_utf8_lossy(&p.payload).into(),
                        retain: p.retain,
                    }),
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(10), ready_rx)
            .await
            .expect("subscribed")
            .unwrap();
        Subscriber { msgs, task }
    }

    fn all(&self) -> Vec<Msg> {
        self.msgs.lock().unwrap().clone()
    }

    fn last(&self, topic: &str) -> Option<Msg> {
        self.all().into_iter().rev().find(|m| m.topic == topic)
    }

    /// The events of a board as received: (seq, object).
    fn events(&self, topic: &str) -> Vec<(u64, Value)> {
        self.all()
            .into_iter()
            .filter(|m| m.topic == topic)
            .map(|m| {
                let v: Value = serde_json::from_str(&m.payload).unwrap();
                (v["seq"].as_u64().expect("every event has seq"), v)
            })
            .collect()
    }

    /// The events in order with repeats dropped (a repeat is a copy of what came
    /// with its `seq` before); fails on a gap or on a number going back.
    fn in_order(&self, topic: &str) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        for (seq, v) in self.events(topic) {
            let last = out.last().map_or(0, |l: &Value| l["seq"].as_u64().unwrap());
            if seq <= last {
                assert_eq!(
                    out[(seq - 1) as usize],
                    v,
                    "{topic}: seq {seq} came again, different"
                );
                continue;
            }
            assert_eq!(
                seq,
                last + 1,
                "{topic}: seq {seq} after {last}: events are missing"
            );
            out.push(v);
        }
        out
    }

    fn moves(&self, topic: &str) -> Vec<String> {
        self.in_order(topic)
            .iter()
            .filter(|v| v["type"] == "move")
            .map(|v| v["san"].as_str().unwrap().to_string())
            .collect()
    }

    fn stop(self) {
        self.task.abort();
    }
}

fn game_log(start: &Chess, moves: &[Move], seed: u64, rest_ms: u64) -> SensorLog {
    let mut hands = Hands::new(seed, quick(), Orientation::Normal);
    hands.board(start.board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    common::played_log(hands, start, moves, rest_ms)
}

fn emulate(log: SensorLog, link: &Path, serial: &str) -> tokio::task::JoinHandle<()> {
    let emulator = Emulator::open().unwrap();
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(emulator.path(), link).unwrap();
    let cfg = EmulatorConfig {
        serial: serial.into(),
        ..EmulatorConfig::default()
    };
    tokio::spawn(async move {
        let _ = emulator.run(&log, "generated", &cfg).await;
    })
}

/// The daemon configuration of `docs/mqtt/eboard-bridge.toml` for `hall`, with
/// this test's folders, broker port and credentials (as `user`), and a board on
/// `link`.
fn daemon_toml(dir: &Path, hall: &str, user: &str, port: u16, link: &Path, commands: bool) -> String {
    let creds = dir.join(format!("{hall}-credentials"));
    std::fs::write(&creds, format!("{user}\n{PASSWORD}\n")).unwrap();
    let state = dir.join(format!("{hall}-state"));
    let text = docs("eboard-bridge.toml")
        .replace("hall-a", hall)
        .replace("mqtt://127.0.0.1:1883", &format!("mqtt://127.0.0.1:{port}"))
        .replace(
            "/etc/eboard-bridge/mqtt-credentials",
            &creds.display().to_string(),
        )
        .replace("commands = true", &format!("commands = {commands}"));
    format!(
        "output = \"{}\"\nstate = \"{}\"\n{text}\n[[board]]\ndevice = \"{}\"\nnumber = 1\nwhite = \"White, A\"\nblack = \"Black, B\"\n",
        state.join("live").display(),
        state.display(),
        link.display()
    )
}

/// Hall A's daemon in this process (no D-Bus), on the broker at `port`.
async fn hall_a_daemon(dir: &Path, port: u16, link: &Path, commands: bool) -> Daemon {
    let text = daemon_toml(dir, "hall-a", "eboard-bridge", port, link, commands);
    let config = Config::parse(&text, "hall-a.toml").unwrap();
    Daemon::start(vec![link.to_path_buf()], config, BusChoice::None)
        .within(30, "the daemon to start")
        .await
        .unwrap()
}

/// The real binary, as a hall's machine runs it.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_binary(config: &Path, link: &Path, log: &Path) -> Process {
    let err = std::fs::File::create(log).unwrap();
    Process(
        Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .args(["run", "--bus", "none", "--config"])
            .arg(config)
            .arg("--device")
            .arg(link)
            .stderr(err)
            .spawn()
            .unwrap(),
    )
}

/// A D-Bus property as the JSON the MQTT state holds.
fn json_of(v: &zbus::zvariant::OwnedValue) -> Value {
    use zbus::zvariant::Value as V;
    match &**v {
        V::Bool(b) => json!(b),
        V::Str(s) => json!(s.as_str()),
        V::U32(n) => json!(n),
        V::I64(n) => json!(n),
        V::Array(a) => Value::Array(
            a.iter()
                .map(|x| match x {
                    V::Str(s) => json!(s.as_str()),
                    other => panic!("unexpected {other:?}"),
                })
                .collect(),
        ),
        V::Dict(d) => Value::Object(
            d.iter()
                .map(|(k, v)| match (k, v) {
                    (V::Str(k), V::Str(v)) => (k.to_string(), json!(v.as_str())),
                    other => panic!("unexpected {other:?}"),
                })
                .collect(),
        ),
        other => panic!("unexpected property value {other:?}"),
    }
}

fn game(file: &str) -> common::PgnGame {
    pgn_games(file).into_iter().next().unwrap()
}

/// What the broker tests need: Mosquitto, and its tool for password files.
const BROKERS: [Need; 2] = [
    Need::Tool("mosquitto", "mosquitto"),
    Need::Tool("mosquitto_passwd", "mosquitto"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_halls_on_one_central_broker_lose_nothing_through_a_broker_outage() {
    if !need(&BROKERS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (central_port, a_port) = (free_port(), free_port());
    let central = central_broker(d, central_port, &["hall-a", "hall-b"]).await;
    let mut hall_a = hall_broker(d, "hall-a", a_port, central_port).await;
    let room = Subscriber::start(central_port, "broadcast", "broadcast-room", "eboard/#").await;

    // Hall A: the daemon in this process, on a private D-Bus.
    let game_a = game("games/kasparov-deep-blue-1997.pgn");
    let game_b = game("games/nepomniachtchi-liren-game1.pgn");
    let link_a = d.join("board-a");
    let emulator_a = emulate(game_log(&game_a.start, &game_a.moves, 3, 1000), &link_a, "1001");
    let address = common::private_bus(d).await;
    let config_a = Config::parse(
        &daemon_toml(d, "hall-a", "eboard-bridge", a_port, &link_a, true),
        "hall-a.toml",
    )
    .unwrap();
    let daemon_a = Daemon::start(
        vec![link_a.clone()],
        config_a,
        BusChoice::Address(address.clone()),
    )
    .within(30, "hall A's daemon to start")
    .await
    .unwrap();
    // Hall B: the real binary, killed at the end, with no broker of its own: it
    // publishes straight to the central broker, as its hall's user there.
    let link_b = d.join("board-b");
    let _emulator_b = emulate(game_log(&game_b.start, &game_b.moves, 4, 1000), &link_b, "1002");
    let config_b = d.join("hall-b.toml");
    std::fs::write(
        &config_b,
        daemon_toml(d, "hall-b", "hall-b", central_port, &link_b, false),
    )
    .unwrap();
    let mut daemon_b = run_binary(&config_b, &link_b, &d.join("hall-b.log"));

    let events_a = "eboard/hall-a/boards/board_a/events";
    let events_b = "eboard/hall-b/boards/board_b/events";
    wait_for("both halls online at the central broker", 20, || {
        ["eboard/hall-a/status", "eboard/hall-b/status"]
            .iter()
            .all(|t| room.last(t).is_some_and(|m| m.payload == "online"))
    })
    .await;
    wait_for("hall A's sixth move", 30, || room.moves(events_a).len() >= 6).await;

    // Hall A's broker goes away for 30 s while the game goes on.
    hall_a.stop().await;
    let seen = room.moves(events_a).len();
    let snap_a = daemon_a.boards()[0].2.clone();
    let played_before = snap_a.borrow().moves.len();
    tokio::time::sleep(Duration::from_secs(30)).await;
    let played_during = snap_a.borrow().moves.len();
    assert!(
        played_during >= played_before + 20,
        "the game went on: {played_before} then {played_during} plies"
    );
    assert!(
        room.moves(events_a).len() <= seen + 1,
        "nothing from hall A while its broker is away"
    );
    assert_eq!(
        room.last("eboard/hall-a/bridge").map(|m| m.payload),
        Some("0".into()),
        "the central broker says hall A's bridge is gone"
    );
    hall_a.restart().await;

    let expected_a = sans(&game_a.start, &game_a.moves);
    let expected_b = sans(&game_b.start, &game_b.moves);
    wait_for("every move of both games at the central broker", 120, || {
        room.moves(events_a).len() >= expected_a.len() && room.moves(events_b).len() >= expected_b.len()
    })
    .await;
    assert_eq!(room.moves(events_a), expected_a);
    assert_eq!(room.moves(events_b), expected_b);
    for topic in [events_a, events_b] {
        let all = room.in_order(topic);
        assert_eq!(all[0]["seq"], 1, "{topic} starts at 1");
        assert!(all.iter().any(|v| v["type"] == "game_start"), "{topic}");
    }
    let pgn = room.last("eboard/hall-b/boards/board_b/pgn").unwrap();
    assert!(pgn.payload.contains("[White \"White, A\"]"), "{}", pgn.payload);
    assert!(pgn.payload.contains(&expected_b[expected_b.len() - 1]));

    // Hall A's board stops: its retained state (read afresh) is its D-Bus properties.
    emulator_a.abort();
    let proxy = zbus::fdo::PropertiesProxy::builder(&common::bus_client(&address).await)
        .destination("org.eboardbridge")
        .unwrap()
        .path("/org/eboardbridge/board/board_a")
        .unwrap()
        .build()
        .within(10, "a properties proxy of hall A's board")
        .await
        .unwrap();
    let iface = zbus::names::InterfaceName::try_from("org.eboardbridge.Board1").unwrap();
    wait_for("hall A's board disconnected", 20, || !snap_a.borrow().connected).await;
    wait_for(
        "the state of a disconnected board at the central broker",
        20,
        || {
            room.last("eboard/hall-a/boards/board_a/state")
                .is_some_and(|m| m.payload.contains("\"Connected\":false"))
        },
    )
    .await;
    let props = proxy.get_all(iface).await.unwrap();
    let fresh = Subscriber::start(
        central_port,
        "broadcast",
        "late-reader",
        "eboard/hall-a/boards/+/state",
    )
    .await;
    wait_for("the retained state", 10, || !fresh.all().is_empty()).await;
    let retained = fresh.all()[0].clone();
    assert!(retained.retain, "the state is retained");
    let state: Value = serde_json::from_str(&retained.payload).unwrap();
    assert_eq!(props.len(), 23, "Board1 has 23 properties");
    assert_eq!(state["Tags"]["Board"], "1", "the board's tags: {state}");
    for (name, value) in &props {
        assert_eq!(state[name.as_str()], json_of(value), "{name}");
    }
    assert_eq!(state["Moves"].as_array().unwrap().len(), expected_a.len());
    fresh.stop();

    // Hall B's daemon dies: its last will says so.
    common::send_signal(daemon_b.0.id(), libc::SIGKILL);
    common::wait_exit(&mut daemon_b.0, 10, "hall B's daemon after SIGKILL").await;
    wait_for("hall B offline", 20, || {
        room.last("eboard/hall-b/status")
            .is_some_and(|m| m.payload == "offline")
    })
    .await;
    // Hall A's stops cleanly and says so itself.
    daemon_a.shutdown().within(30, "hall A's daemon to stop").await;
    wait_for("hall A offline", 20, || {
        room.last("eboard/hall-a/status")
            .is_some_and(|m| m.payload == "offline")
    })
    .await;
    room.stop();
    drop(central);
}

/// Publishes a call as `user` and waits for its reply; the broker's answer to the
/// publication comes with it.
async fn call(
    port: u16,
    user: &str,
    board: &str,
    method: &str,
    args: Value,
) -> (PubAckReason, Option<Value>) {
    let mut o = MqttOptions::new(format!("{user}-caller"), "127.0.0.1", port);
    o.set_credentials(user, PASSWORD);
    let (client, mut events) = AsyncClient::new(o, 16);
    let reply_topic = format!("eboard/hall-a/reply/{user}");
    let mut puback = None;
    let mut reply = None;
    // A refused publication gets no reply: the wait ends on the PUBACK.
    let _ = tokio::time::timeout(Duration::from_secs(8), async {
        loop {
            match events.poll().await.unwrap() {
                Event::Incoming(Packet::ConnAck(_)) => {
                    client
                        .subscribe(reply_topic.clone(), QoS::AtLeastOnce)
                        .await
                        .unwrap();
                }
                Event::Incoming(Packet::SubAck(_)) => {
                    let props = PublishProperties {
                        response_topic: Some(reply_topic.clone()),
                        correlation_data: Some(Bytes::from_static(b"call-1")),
                        ..Default::default()
                    };
                    client
                        .publish_with_properties(
                            format!("eboard/hall-a/boards/{board}/cmd/{method}"),
                            QoS::AtLeastOnce,
                            false,
                            args.to_string(),
                            props,
                        )
                        .await
                        .unwrap();
                }
                Event::Incoming(Packet::PubAck(a)) => {
                    puback = Some(a.reason);
                    if a.reason != PubAckReason::Success && a.reason != PubAckReason::NoMatchingSubscribers {
                        return;
                    }
                }
                Event::Incoming(Packet::Publish(p)) => {
                    let props = p.properties.unwrap_or_default();
                    assert_eq!(props.correlation_data.as_deref(), Some(&b"call-1"[..]));
                    reply = Some(serde_json::from_slice(&p.payload).unwrap());
                    return;
                }
                _ => {}
            }
        }
    })
    .await;
    (puback.expect("the broker answered the call"), reply)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbiter_calls_change_the_game_only_when_enabled_and_allowed() {
    if !need(&BROKERS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    // The hall's broker; its bridge to a central broker that is not there waits.
    let _hall = hall_broker(d, "hall-a", port, free_port()).await;
    let room = Subscriber::start(port, "viewer", "display", "eboard/hall-a/#").await;
    let g = game("games/molinari-bordais-1979.pgn");
    let link = d.join("board-a");
    let _emulator = emulate(game_log(&g.start, &g.moves, 5, 600_000), &link, "1003");
    let state = || -> Value {
        room.last("eboard/hall-a/boards/board_a/state")
            .map(|m| serde_json::from_str(&m.payload).unwrap())
            .unwrap_or(Value::Null)
    };

    // Commands off: refused with the reason, nothing changes.
    let daemon = hall_a_daemon(d, port, &link, false).await;
    wait_for("the game under way", 20, || {
        state()["Moves"].as_array().is_some_and(|m| !m.is_empty())
    })
    .await;
    let (ack, reply) = call(
        port,
        "arbiter",
        "board_a",
        "SetPlayers",
        json!(["Carlsen", "Caruana"]),
    )
    .await;
    assert_eq!(ack, PubAckReason::Success);
    let reply = reply.expect("a reply");
    assert_eq!(reply["error"], "org.eboardbridge.Error.NotAllowed");
    assert!(
        reply["message"].as_str().unwrap().contains("commands = false"),
        "{reply}"
    );
    assert_eq!(state()["White"], "White, A");
    daemon.shutdown().within(30, "the daemon to stop").await;

    // Commands on, on a broker that authenticates everyone.
    let daemon = hall_a_daemon(d, port, &link, true).await;
    wait_for("online again", 20, || {
        room.last("eboard/hall-a/status")
            .is_some_and(|m| m.payload == "online")
    })
    .await;
    // A reader may not call: the broker refuses the publication, no reply comes.
    let (ack, reply) = call(
        port,
        "viewer",
        "board_a",
        "SetPlayers",
        json!(["Viewer", "Viewer"]),
    )
    .await;
    assert_eq!(ack, PubAckReason::NotAuthorized);
    assert!(reply.is_none());
    // An arbiter's malformed call is refused with the reason.
    let (_, reply) = call(port, "arbiter", "board_a", "SetPlayers", json!(["Only one"])).await;
    assert_eq!(reply.unwrap()["error"], "org.eboardbridge.Error.InvalidArgument");
    let (_, reply) = call(port, "arbiter", "nosuch", "SetPlayers", json!(["A", "B"])).await;
    assert_eq!(reply.unwrap()["error"], "org.eboardbridge.Error.NoBoard");
    // An arbiter's call is made.
    let (ack, reply) = call(
        port,
        "arbiter",
        "board_a",
        "SetPlayers",
        json!(["Carlsen", "Caruana"]),
    )
    .await;
    assert_eq!(ack, PubAckReason::Success);
    assert_eq!(reply, Some(json!({"ok": true})));
    wait_for("the new players in the state", 10, || {
        state()["White"] == "Carlsen"
    })
    .await;
    assert_eq!(state()["Black"], "Caruana");
    assert!(room.all().iter().all(|m| !m.payload.contains("Viewer")));
    // The call is in the board's events, as on D-Bus.
    let arbiter: Vec<Value> = room
        .in_order("eboard/hall-a/boards/board_a/events")
        .into_iter()
        .filter(|v| v["type"] == "arbiter")
        .collect();
    assert_eq!(arbiter.len(), 1, "{arbiter:?}");
    assert_eq!(arbiter[0]["method"], "SetPlayers");
    daemon.shutdown().within(30, "the daemon to stop").await;

    // Commands on, but the broker lets anyone in: refused.
    let open_port = free_port();
    let _open = Broker::start(d, "open", "listener 1883\nallow_anonymous true\n", open_port).await;
    let daemon = hall_a_daemon(d, open_port, &link, true).await;
    let open_room = Subscriber::start(open_port, "viewer", "open-display", "eboard/hall-a/#").await;
    wait_for("the board on the open broker", 20, || {
        open_room.last("eboard/hall-a/boards/board_a/state").is_some()
    })
    .await;
    let (_, reply) = call(open_port, "arbiter", "board_a", "SetPlayers", json!(["X", "Y"])).await;
    let reply = reply.expect("a reply");
    assert_eq!(reply["error"], "org.eboardbridge.Error.NotAllowed");
    assert!(
        reply["message"].as_str().unwrap().contains("without credentials"),
        "{reply}"
    );
    let s = open_room.last("eboard/hall-a/boards/board_a/state").unwrap();
    assert!(s.payload.contains("\"White\":\"Carlsen\""), "{}", s.payload);
    daemon.shutdown().within(30, "the daemon to stop").await;
    open_room.stop();
    room.stop();
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = output_within(
        Command::new("openssl").args(args).current_dir(dir),
        60,
        &format!("openssl {}", args.first().unwrap_or(&"")),
    );
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, and a certificate it signed for `name` (key `name.key`, `name.pem`).
fn certificate(dir: &Path, name: &str, server: bool) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    let ext = dir.join(format!("{name}.ext"));
    std::fs::write(
        &ext,
        if server {
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
        } else {
            "extendedKeyUsage=clientAuth\n"
        },
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &format!("{name}.pem"),
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_with_a_client_certificate_at_qos_2() {
    if !need(&[
        Need::Tool("mosquitto", "mosquitto"),
        Need::Tool("openssl", "openssl"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=eboard test CA",
        ],
    );
    certificate(d, "broker", true);
    certificate(d, "eboard-bridge", false);
    let port = free_port();
    let plain = free_port();
    // TLS for the daemon (its certificate is its identity); a plain listener on
    // loopback for this test's reader.
    let conf = format!(
        "per_listener_settings true\nlistener 1883\nallow_anonymous true\nlistener {port} 127.0.0.1\nallow_anonymous false\ncafile {0}/ca.pem\ncertfile {0}/broker.pem\nkeyfile {0}/broker.key\nrequire_certificate true\nuse_identity_as_username true\n",
        d.display()
    );
    let _broker = Broker::start(d, "tls", &conf, plain).await;
    let room = Subscriber::start(plain, "viewer", "reader", "eboard/#").await;
    let g = game("games/molinari-bordais-1979.pgn");
    let link = d.join("board-a");
    let _emulator = emulate(game_log(&g.start, &g.moves, 6, 600_000), &link, "1004");
    let text = format!(
        "state = \"{0}/state\"\noutput = \"{0}/live\"\n[mqtt]\nbroker = \"mqtts://127.0.0.1:{port}\"\nprefix = \"eboard/tls\"\nqos = 2\nca_file = \"{0}/ca.pem\"\ncert_file = \"{0}/eboard-bridge.pem\"\nkey_file = \"{0}/eboard-bridge.key\"\n",
        d.display()
    );
    let daemon = Daemon::start(
        vec![link],
        Config::parse(&text, "tls.toml").unwrap(),
        BusChoice::None,
    )
    .within(30, "the daemon to start")
    .await
    .unwrap();
    let expected = sans(&g.start, &g.moves);
    wait_for("every move over TLS", 30, || {
        room.moves("eboard/tls/boards/board_a/events") == expected
    })
    .await;
    assert_eq!(room.last("eboard/tls/status").unwrap().payload, "online");
    daemon.shutdown().within(30, "the daemon to stop").await;
    // Every QoS 2 exchange completed: the broker has every event, none waits.
    let last = room.in_order("eboard/tls/boards/board_a/events").len();
    let acked = std::fs::read_to_string(d.join("state/mqtt/board_a.acked")).unwrap();
    assert_eq!(acked.trim(), last.to_string());
    room.stop();
}

#[test]
fn the_documented_daemon_configuration_parses() {
    let c = Config::parse(&docs("eboard-bridge.toml"), "docs/mqtt/eboard-bridge.toml").unwrap();
    let m = c.mqtt.unwrap();
    assert_eq!(m.prefix(), "eboard/hall-a");
    assert!(m.commands);
    let e = Config::parse("[mqtt]\nbroker = \"mqtt://h\"\nqos = 0\n", "x.toml").unwrap_err();
    assert!(e.to_string().contains("x.toml: [mqtt] qos = 0"), "{e}");
    let e = Config::parse("[mqtt]\nbroker = \"http://h\"\n", "x.toml").unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
}
