//! A hall for the console's tests: the real binary as the daemon (so that it can
//! be killed with SIGKILL and started again), a private D-Bus broker, emulated
//! boards on real pseudo-terminals (`dir/boardN`, numbers 1..), the HTTP server
//! on a free port of 127.0.0.1 with the arbiters' console, and the arbiters'
//! file made by `eboard-bridge ctl passwd` (mode 0640: the daemon refuses one
//! that every user may read).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use eboard_bridge::device::{Emulator, EmulatorConfig};
use eboard_bridge::log::SensorLog;
use serde_json::Value;

use super::Within;
use super::web::{Answer, request};

pub const USER: &str = "alice";
pub const PASSWORD: &str = "correct horse battery";

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_eboard-bridge"))
}

/// A board standing in the start position, its clock at 1:30:00 (stopped),
/// `more` records after.
pub fn standing(more: &str) -> SensorLog {
    eboard_bridge::log::parse_log(
        &format!(
            "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n0 clock left=1:30:00 right=1:30:00 running=none\n{more}"
        ),
        "standing.esl",
    )
    .unwrap()
}

/// `ctl passwd USER` with the password on standard input: the line it prints.
pub async fn passwd(user: &str, password: &str) -> std::process::Output {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(bin())
        .args(["ctl", "passwd", user])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{password}\n").as_bytes()).await.unwrap();
    drop(stdin);
    child.wait_with_output().within(30, "ctl passwd").await.unwrap()
}

pub struct Hall {
    pub dir: PathBuf,
    pub addr: SocketAddr,
    pub bus: String,
    pub config: PathBuf,
    boards: usize,
    daemon: Option<std::process::Child>,
    _emulators: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Hall {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Hall {
    /// The hall with one emulated board a log (board N plays `logs[N-1]` at
    /// speed 8), `http` added to the `[http]` section; the daemon started.
    pub async fn open(dir: &Path, logs: Vec<SensorLog>, http: &str) -> Hall {
        let bus = super::private_bus(dir).await;
        let line = passwd(USER, PASSWORD).await;
        assert!(line.status.success(), "{}", String::from_utf8_lossy(&line.stderr));
        let arbiters = dir.join("arbiters");
        std::fs::write(&arbiters, &line.stdout).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&arbiters, std::fs::Permissions::from_mode(0o640)).unwrap();
        let port = super::web::free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut text = format!(
            "event = \"Hall Open\"\nround = 1\noutput = \"{}\"\nstate = \"{}\"\n[clock]\nwhite = \"left\"\n[http]\nlisten = \"{addr}\"\narbiters = \"{}\"\n{http}\n",
            dir.join("live").display(),
            dir.join("state").display(),
            arbiters.display()
        );
        let mut emulators = Vec::new();
        let boards = logs.len();
        for (i, log) in logs.into_iter().enumerate() {
            let n = i + 1;
            let link = dir.join(format!("board{n}"));
            text.push_str(&format!(
                "[[board]]\ndevice = \"{}\"\nnumber = {n}\nwhite = \"White {n}\"\nblack = \"Black {n}\"\n",
                link.display()
            ));
            let cfg = EmulatorConfig {
                speed: 8.0,
                serial: format!("300{n}"),
                ..EmulatorConfig::default()
            };
            let emulator = Emulator::open().unwrap();
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(emulator.path(), &link).unwrap();
            emulators.push(tokio::spawn(async move {
                let _ = emulator.run(&log, "generated", &cfg).await;
            }));
        }
        let config = dir.join("config.toml");
        std::fs::write(&config, text).unwrap();
        let mut hall = Hall {
            dir: dir.to_path_buf(),
            addr,
            bus,
            config,
            boards,
            daemon: None,
            _emulators: emulators,
        };
        hall.start().await;
        hall
    }

    /// Starts the daemon and waits until it serves every board.
    pub async fn start(&mut self) {
        let mut cmd = std::process::Command::new(bin());
        cmd.args(["run", "--bus", "session", "--config"])
            .arg(&self.config);
        for n in 1..=self.boards {
            cmd.arg("--device").arg(self.dir.join(format!("board{n}")));
        }
        cmd.env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .stderr(std::fs::File::create(self.dir.join("daemon.log")).unwrap());
        self.daemon = Some(cmd.spawn().unwrap());
        // The bus name is taken once the HTTP server serves: each board's
        // position on D-Bus says the daemon is ready, over HTTP or HTTPS.
        let until = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut ready = true;
            for n in 1..=self.boards as u64 {
                ready &= !self.property(n, "Fen").await.is_empty();
            }
            if ready {
                return;
            }
            assert!(
                tokio::time::Instant::now() < until,
                "the daemon did not serve {} board(s) in 30 s: {}",
                self.boards,
                std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// What the daemon has logged since it was last started.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default()
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut d) = self.daemon.take() {
            let _ = d.kill();
            let _ = d.wait();
        }
    }

    /// `/api/boards`.
    pub async fn boards(&self) -> Value {
        self.get("/api/boards", &[]).await.json()
    }

    /// Board `n` as `/api/boards` shows it.
    pub async fn board(&self, n: u64) -> Value {
        let all = self.boards().await;
        all.as_array()
            .and_then(|l| l.iter().find(|b| b["BoardNumber"] == n).cloned())
            .unwrap_or(Value::Null)
    }

    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Answer {
        request(self.addr, "GET", path, headers, b"").await
    }

    /// A POST from this server's own page (`Origin` the server's).
    pub async fn post(&self, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let origin = format!("http://{}", self.addr);
        let mut all = vec![("Origin", origin.as_str()), ("Content-Type", "application/json")];
        all.extend_from_slice(headers);
        request(self.addr, "POST", path, &all, body.as_bytes()).await
    }

    /// Signs in: the cookie header value and the session's CSRF token.
    pub async fn login(&self) -> (String, String) {
        let body = serde_json::json!({"user": USER, "password": PASSWORD}).to_string();
        let a = self.post("/arbiter/login", &[], &body).await;
        assert_eq!(a.status, 200, "{}", a.text());
        let cookie = format!("eb_arbiter={}", a.cookie("eb_arbiter").expect("a session cookie"));
        let state = self.get("/arbiter/api/state", &[("Cookie", &cookie)]).await;
        assert_eq!(state.status, 200, "{}", state.text());
        let csrf = state.json()["csrf"].as_str().unwrap().to_string();
        (cookie, csrf)
    }

    /// A D-Bus property of board `n`, as text (empty when it cannot be read).
    pub async fn property(&self, n: u64, name: &str) -> String {
        let read = async {
            let client = zbus::connection::Builder::address(self.bus.as_str())
                .ok()?
                .build()
                .await
                .ok()?;
            let proxy = zbus::proxy::Builder::<zbus::Proxy>::new(&client)
                .destination(eboard_bridge::bus::BUS_NAME)
                .ok()?
                .path(format!("/org/eboardbridge/board/board{n}"))
                .ok()?
                .interface(eboard_bridge::bus::BOARD_INTERFACE)
                .ok()?
                .cache_properties(zbus::proxy::CacheProperties::No)
                .build()
                .await
                .ok()?;
            let v: zbus::zvariant::OwnedValue = proxy.get_property(name).await.ok()?;
            Some(match v.downcast_ref::<zbus::zvariant::Str>() {
                Ok(s) => s.to_string(),
                Err(_) => format!("{v:?}"),
            })
        };
        tokio::time::timeout(Duration::from_secs(5), read)
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}
