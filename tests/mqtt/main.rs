//! Every board of every hall on MQTT, against real Mosquitto brokers started on
//! free localhost ports with the configuration files of `docs/mqtt/` (ports and
//! paths replaced): two daemons, each with an emulated board on a real
//! pseudo-terminal, publishing to one central broker (hall A through its own
//! broker and a bridge, hall B straight); a subscriber on the central broker; hall
//! A's broker stopped for 30 s mid-game; a daemon killed; arbiter calls over MQTT 5
//! request/response; TLS with client certificates.

pub(crate) mod calls;
use crate::common;
mod halls;
mod tls;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::emulated::hands_log as game_log;
use common::web::free_port;
use common::{Need, Within, need, output_within, pgn_games, sans, wait_for};
use eboard_bridge::daemon::{BusChoice, Daemon, DaemonConfig};
use eboard_bridge::log::SensorLog;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Packet, PubAckReason, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use serde_json::{Value, json};

pub(crate) const PASSWORD: &str = "change-me";

fn docs(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/mqtt").join(name)).unwrap()
}

/// A Mosquitto broker of this test: its configuration, process and port.
pub(crate) struct Broker {
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
pub(crate) async fn hall_broker(dir: &Path, hall: &str, port: u16, central: u16) -> Broker {
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

/// An emulated board (serial number `serial`) playing `log` at its pace.
fn emulate(log: SensorLog, link: &Path, serial: &str) -> tokio::task::JoinHandle<()> {
    common::emulated::emulate(log, link, 1.0, serial)
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
    let config = DaemonConfig::parse(&text, "hall-a.toml").unwrap();
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

#[test]
fn the_documented_daemon_configuration_parses() {
    let c = DaemonConfig::parse(&docs("eboard-bridge.toml"), "docs/mqtt/eboard-bridge.toml").unwrap();
    let m = c.mqtt.unwrap();
    assert_eq!(m.prefix(), "eboard/hall-a");
    assert!(m.commands);
    let e = DaemonConfig::parse("[mqtt]\nbroker = \"mqtt://h\"\nqos = 0\n", "x.toml").unwrap_err();
    assert!(e.to_string().contains("x.toml: [mqtt] qos = 0"), "{e}");
    let e = DaemonConfig::parse("[mqtt]\nbroker = \"http://h\"\n", "x.toml").unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
}
