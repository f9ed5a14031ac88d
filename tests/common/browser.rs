//! Headless Chromium driven over the DevTools protocol (a WebSocket to the
//! page's target): evaluate expressions in the page, take screenshots. Tests
//! check for Chromium first (`need(&[Need::AnyTool(&CHROMIUM, "chromium")])`).

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

use super::Within;

/// One Chromium at a time in the test suite: each browser test runs a daemon
/// and a browser, and the console's times the page. A test holds it from before
/// its daemon starts until its browser is closed.
pub static ONE_CHROMIUM: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The names Chromium goes by.
pub const CHROMIUM: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

/// Chromium, headless, driven over the DevTools protocol.
pub struct Browser {
    child: tokio::process::Child,
    page: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Chromium, headless, showing `url`, with a window of `width` x `height`.
    pub async fn open(url: &str) -> Browser {
        Browser::open_sized(url, 1100, 800).await
    }

    pub async fn open_sized(url: &str, width: u32, height: u32) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let chromium = CHROMIUM
            .into_iter()
            .find_map(super::find_tool)
            .expect("headless Chromium (the test checks for it first)");
        let mut child = command(&chromium, profile.path())
            .arg(format!("--window-size={width},{height}"))
            .arg("--hide-scrollbars")
            .arg(url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/..."
        let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
        let port: u16 = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = err.next_line().await.unwrap() {
                if let Some(rest) = line.split("ws://127.0.0.1:").nth(1) {
                    return rest.split('/').next().unwrap().parse().unwrap();
                }
            }
            panic!("Chromium ended without its DevTools address");
        })
        .await
        .expect("Chromium's DevTools address within 30 s");
        tokio::spawn(async move { while let Ok(Some(_)) = err.next_line().await {} });
        let devtools: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut target = None;
        for _ in 0..100 {
            let r = super::web::request(devtools, "GET", "/json/list", &[], b"")
                .within(5, "Chromium's list of targets")
                .await;
            let list: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
            target = list.as_array().and_then(|l| {
                l.iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["webSocketDebuggerUrl"].as_str().map(str::to_string))
            });
            if target.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (page, _) = tokio_tungstenite::connect_async(target.expect("a page target"))
            .within(10, "the WebSocket handshake with Chromium's page")
            .await
            .unwrap();
        Browser {
            child,
            page,
            next_id: 1,
            _profile: profile,
        }
    }

    /// Evaluates `expr` in the page (awaiting it if it is a promise); its value (JSON).
    pub async fn eval(&mut self, expr: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        r["result"]["value"].clone()
    }

    /// A PNG of the page as it shows.
    pub async fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine;
        let r = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await;
        base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap_or_default())
            .unwrap()
    }

    /// Waits (`secs` at most, every 50 ms) until `expr` is true in the page.
    pub async fn wait_true(&mut self, what: &str, secs: u64, expr: &str) {
        let until = tokio::time::Instant::now() + Duration::from_secs(secs);
        while self.eval(expr).await != Value::Bool(true) {
            if tokio::time::Instant::now() >= until {
                let page = self
                    .eval("location.href + ' ' + document.body.innerText.slice(0, 2000)")
                    .await;
                panic!("timed out after {secs} s waiting for {what}; the page: {page}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// One DevTools call on the page; its `result`.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let call = json!({"id": id, "method": method, "params": params});
        self.page
            .send(Message::Text(call.to_string().into()))
            .within(10, "a DevTools call to be sent")
            .await
            .unwrap();
        loop {
            let m = tokio::time::timeout(Duration::from_secs(10), self.page.next())
                .await
                .expect("DevTools answers")
                .unwrap()
                .unwrap();
            if let Message::Text(t) = m {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                if v["id"] == id {
                    return v["result"].clone();
                }
            }
        }
    }

    pub async fn close(mut self) {
        let _ = self.child.kill().within(10, "Chromium to end").await;
    }
}

/// The folders under `dir` that Chromium is given for everything it writes:
/// its profile (`--user-data-dir`), and a `HOME`, XDG folders and `TMPDIR` of
/// its own (it makes `org.chromium.Chromium.*` folders in `TMPDIR` and leaves
/// them there). `dir` is a temporary folder the test removes, so nothing of
/// Chromium's stays in `/tmp` or the user's home.
pub const FOLDERS: [(&str, &str); 7] = [
    ("--user-data-dir", "profile"),
    ("HOME", "home"),
    ("TMPDIR", "tmp"),
    ("XDG_CONFIG_HOME", "config"),
    ("XDG_CACHE_HOME", "cache"),
    ("XDG_DATA_HOME", "data"),
    ("XDG_RUNTIME_DIR", "runtime"),
];

/// `chromium` headless, with the DevTools protocol on a port of its choosing,
/// writing only into `dir` (see [`FOLDERS`]), which must exist.
pub fn command(chromium: &std::path::Path, dir: &std::path::Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-breakpad",
        "--remote-debugging-port=0",
    ]);
    for (name, folder) in FOLDERS {
        let path = dir.join(folder);
        std::fs::create_dir_all(&path).unwrap();
        if name.starts_with("--") {
            cmd.arg(format!("{name}={}", path.display()));
        } else {
            if name == "XDG_RUNTIME_DIR" {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
            }
            cmd.env(name, &path);
        }
    }
    cmd
}

/// The `org.chromium.Chromium.*` folders in `/tmp` now.
pub fn chromium_tmp_folders() -> std::collections::BTreeSet<std::path::PathBuf> {
    std::fs::read_dir("/tmp")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("org.chromium.Chromium.")
        })
        .map(|e| e.path())
        .collect()
}
