//! The daemon as a process of its own (`eboard-bridge run`), and its boards'
//! properties read over D-Bus, for the tests that start the real binary.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eboard_bridge::bus::{BOARD_INTERFACE, BOARD_PATH_PREFIX, BUS_NAME};

use super::CALL_SECS;

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_eboard-bridge"))
}

/// `eboard-bridge run --bus session --config CFG --device D ...` on the bus at
/// `address` (`--bus none` without one). More may be set on it before `spawn`.
pub fn run_command(cfg: &Path, devices: &[PathBuf], address: Option<&str>) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin());
    let bus = if address.is_some() { "session" } else { "none" };
    cmd.args(["run", "--bus", bus, "--config"]).arg(cfg);
    for d in devices {
        cmd.arg("--device").arg(d);
    }
    if let Some(a) = address {
        cmd.env("DBUS_SESSION_BUS_ADDRESS", a);
    }
    cmd
}

/// What `eboard-bridge ctl` answered: its exit status (-1: killed), stdout
/// and stderr.
pub struct CtlOut {
    pub code: i32,
    pub out: String,
    pub err: String,
}

/// `eboard-bridge ctl --bus session ARGS` against the bus at `address`; the test
/// fails if it has not finished in 20 s.
pub async fn ctl(address: &str, args: &[&str]) -> CtlOut {
    let run = tokio::process::Command::new(bin())
        .args(["ctl", "--bus", "session"])
        .args(args)
        .env("DBUS_SESSION_BUS_ADDRESS", address)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .unwrap_or_else(|_| panic!("ctl {args:?} did not finish in 20 s"))
        .unwrap();
    CtlOut {
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `eboard-bridge ctl --bus session ARGS` started (a command that goes on, as
/// `watch`) against the bus at `address`: its stdout piped, its stderr to
/// `stderr`; killed when dropped.
pub fn spawn_ctl(address: &str, args: &[&str], stderr: std::process::Stdio) -> tokio::process::Child {
    tokio::process::Command::new(bin())
        .args(["ctl", "--bus", "session"])
        .args(args)
        .env("DBUS_SESSION_BUS_ADDRESS", address)
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start ctl {args:?}: {e}"))
}

/// A daemon process, killed however the test ends. Its log goes through this
/// process (shown with the test's output, and kept for the test to read): a
/// file size limit set on the daemon must not cut its own log short.
pub struct Running {
    pub child: std::process::Child,
    log: Arc<Mutex<String>>,
}

impl Running {
    /// Starts `cmd`, its standard error captured.
    pub fn spawn(cmd: &mut std::process::Command) -> Running {
        let mut child = cmd
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin().display()));
        let err = child.stderr.take().expect("a piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("{line}");
                kept.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_str(&(line + "\n"));
            }
        });
        Running { child, log }
    }

    /// What the daemon has logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many lines it has logged that contain `text`.
    pub fn logged(&self, text: &str) -> usize {
        self.log().lines().filter(|l| l.contains(text)).count()
    }

    /// Stops it with SIGTERM; it must exit cleanly within 30 s.
    pub async fn stop(mut self) {
        super::send_signal(self.child.id(), libc::SIGTERM);
        let status = super::wait_exit(&mut self.child, 30, "the daemon after SIGTERM").await;
        assert!(status.success(), "{status:?}");
    }

    /// Kills it (SIGKILL) and waits for it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A property of board `board`'s object (`/org/eboardbridge/board/<board>`),
/// read afresh: a new connection and a proxy without a cache (the daemon behind
/// the name may have been replaced). The whole read (connection, proxy and
/// call) is bounded by [`CALL_SECS`]; `None` when nobody owns the daemon's
/// name, or the read cannot be made in that time or fails.
pub async fn board_property(address: &str, board: &str, name: &str) -> Option<zbus::zvariant::OwnedValue> {
    let read = async {
        let client = zbus::connection::Builder::address(address)
            .ok()?
            .method_timeout(Duration::from_secs(CALL_SECS))
            .build()
            .await
            .ok()?;
        // A call to a name nobody owns yet (the daemon starting) may go
        // unanswered: the broker says at once whether it has an owner.
        let bus = zbus::fdo::DBusProxy::new(&client).await.ok()?;
        let daemon = zbus::names::BusName::try_from(BUS_NAME).ok()?;
        if !bus.name_has_owner(daemon).await.ok()? {
            return None;
        }
        let proxy = zbus::proxy::Builder::<zbus::Proxy>::new(&client)
            .destination(BUS_NAME)
            .ok()?
            .path(format!("{BOARD_PATH_PREFIX}{board}"))
            .ok()?
            .interface(BOARD_INTERFACE)
            .ok()?
            .cache_properties(zbus::proxy::CacheProperties::No)
            .build()
            .await
            .ok()?;
        proxy.get_property(name).await.ok()
    };
    tokio::time::timeout(Duration::from_secs(CALL_SECS), read)
        .await
        .ok()
        .flatten()
}

/// A call of `method` on board `board`'s object (`/org/eboardbridge/board/<board>`)
/// at the bus at `address`, bounded by [`CALL_SECS`]: refused, its error's
/// name and message (a call that cannot be made says so as both).
pub async fn board_call<B>(address: &str, board: &str, method: &str, body: &B) -> Result<(), (String, String)>
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
{
    let call = async {
        let conn = zbus::connection::Builder::address(address)
            .map_err(|e| e.to_string())?
            .method_timeout(Duration::from_secs(CALL_SECS))
            .build()
            .await
            .map_err(|e| e.to_string())?;
        let path = format!("{BOARD_PATH_PREFIX}{board}");
        Ok::<_, String>(
            conn.call_method(Some(BUS_NAME), path.as_str(), Some(BOARD_INTERFACE), method, body)
                .await,
        )
    };
    match tokio::time::timeout(Duration::from_secs(CALL_SECS + 1), call).await {
        Ok(Ok(Ok(_))) => Ok(()),
        Ok(Ok(Err(zbus::Error::MethodError(name, message, _)))) => {
            Err((name.to_string(), message.unwrap_or_default()))
        }
        Ok(Ok(Err(e))) => Err((format!("{method}: {e}"), e.to_string())),
        Ok(Err(e)) => Err((format!("{method}: {e}"), e)),
        Err(_) => Err((
            format!("{method}: no answer"),
            format!("no answer in {CALL_SECS} s"),
        )),
    }
}

/// A property's value as text: a string, a list of strings joined by spaces,
/// a number; the value's debug form else.
pub fn value_text(v: &zbus::zvariant::OwnedValue) -> String {
    if let Ok(s) = v.downcast_ref::<zbus::zvariant::Str>() {
        s.to_string()
    } else if let Ok(i) = v.downcast_ref::<i64>() {
        i.to_string()
    } else if let Ok(u) = v.downcast_ref::<u32>() {
        u.to_string()
    } else if let Ok(b) = v.downcast_ref::<bool>() {
        b.to_string()
    } else if let Ok(list) = v.try_clone().map(Vec::<String>::try_from) {
        match list {
            Ok(list) => list.join(" "),
            Err(_) => format!("{v:?}"),
        }
    } else {
        format!("{v:?}")
    }
}

/// The configuration `eboard-bridge run` reads in these tests: round 1, the
/// broadcast in `dir/live`, the state in `dir/state`, then `more` (TOML).
pub fn run_config_text(dir: &Path, more: &str) -> String {
    format!(
        "round = 1\noutput = \"{}\"\nstate = \"{}\"\n{more}",
        dir.join("live").display(),
        dir.join("state").display()
    )
}

/// The in-process daemon's configuration of these tests: the Test Open, round 4,
/// one board (`dir/board0`, number 7, Anderssen - Kieseritzky), the broadcast in
/// `dir/live`, the state in `dir/state`.
pub fn test_open(dir: &Path) -> eboard_bridge::daemon::DaemonConfig {
    let text = format!(
        "event = \"Test Open\"\nround = 4\noutput = \"{}\"\nstate = \"{}\"\n[[board]]\ndevice = \"{}\"\nnumber = 7\nwhite = \"Anderssen, Adolf\"\nblack = \"Kieseritzky, Lionel\"\n",
        dir.join("live").display(),
        dir.join("state").display(),
        dir.join("board0").display()
    );
    eboard_bridge::daemon::DaemonConfig::parse(&text, "test.toml").unwrap()
}

/// [`run_config_text`] written to `dir/config.toml`; its path.
pub fn run_config(dir: &Path, more: &str) -> PathBuf {
    let cfg = dir.join("config.toml");
    std::fs::write(&cfg, run_config_text(dir, more)).expect("the test's configuration is written");
    cfg
}

/// A tag's value in a PGN file ("" while the file or the tag is missing).
pub fn tag_in(path: &Path, tag: &str) -> String {
    let start = format!("[{tag} \"");
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix(start.as_str()).and_then(|r| r.strip_suffix("\"]")))
                .map(str::to_string)
        })
        .unwrap_or_default()
}
