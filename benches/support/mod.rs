//! What the end-to-end benches share: a private D-Bus broker, a listener for
//! `MoveMade` on a thread of its own, an emulated board that notes when it wrote
//! each record, and the arithmetic of the figures.

#![allow(dead_code)] // each bench uses its part

use std::path::Path;
use std::sync::{Arc, Mutex};

use eboard_bridge::device::{Emulator, EmulatorConfig};
use eboard_bridge::log::SensorLog;
use eboard_bridge::rules::EventKind;
use futures_util::StreamExt;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The rules of the benches: a move is made on its placement (`release_ms = 0`).
pub fn rules() -> eboard_bridge::rules::Config {
    eboard_bridge::rules::Config {
        release_ms: 0,
        ..eboard_bridge::rules::Config::default()
    }
}

/// The daemon's configuration for a bench in `dir`: its folders there, and the
/// bench's rules.
pub fn daemon_config(dir: &Path) -> eboard_bridge::daemon::DaemonConfig {
    let mut config = eboard_bridge::daemon::DaemonConfig {
        output: Some(dir.join("live")),
        state: Some(dir.join("state")),
        ..eboard_bridge::daemon::DaemonConfig::default()
    };
    config.rules.release_ms = rules().release_ms;
    config
}

/// For each move made, in order, the index of the record whose bytes make it and
/// its UCI (replayed offline with the same rules).
pub fn making_records(log: &SensorLog) -> Vec<(usize, String)> {
    let r = eboard_bridge::output::replay::run(log, "bench", rules(), None).expect("the log plays");
    r.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Move { uci, .. } => {
                let t = e.t_us;
                let i = log.records.iter().rposition(|r| r.time.micros() <= t)?;
                Some((i, uci.clone()))
            }
            _ => None,
        })
        .collect()
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// `name: N moves, last byte on the pty -> MoveMade on D-Bus: median, p90, p99, max`.
pub fn summary(name: &str, latencies: &mut [f64]) -> String {
    summary_of(
        name,
        "moves, last byte on the pty -> MoveMade on D-Bus",
        latencies,
    )
}

/// `name: N what: median, p90, p99, max` of latencies in ms.
pub fn summary_of(name: &str, what: &str, latencies: &mut [f64]) -> String {
    latencies.sort_by(f64::total_cmp);
    format!(
        "{name}: {} {what}: median {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        percentile(latencies, 0.5),
        percentile(latencies, 0.9),
        percentile(latencies, 0.99),
        latencies.last().copied().unwrap_or(0.0)
    )
}

/// Starts a private busd broker at `address` on the current runtime.
pub async fn broker(address: &str) {
    let mut bus = busd::bus::Bus::for_address(Some(address)).await.expect("busd");
    tokio::spawn(async move {
        let _ = bus.run().await;
    });
}

/// A real `dbus-daemon` (the broker of the system bus users have) on a private
/// socket in `dir`, with the session bus's policy; `None` when it is not installed.
pub struct DbusDaemon(std::process::Child);

impl Drop for DbusDaemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn dbus_daemon(dir: &Path) -> Option<(DbusDaemon, String)> {
    let socket = dir.join("dbus-daemon.sock");
    let address = format!("unix:path={}", socket.display());
    let child = std::process::Command::new("dbus-daemon")
        .args(["--session", "--nofork", "--nopidfile"])
        .arg(format!("--address={address}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let broker = DbusDaemon(child);
    for _ in 0..250 {
        if socket.exists() {
            return Some((broker, address));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    None
}

/// Every `MoveMade` signal on the bus at `address`: (arrival, UCI), noted by a
/// client on a thread and runtime of its own. Returns once the match rule is in.
pub fn listen(address: &str) -> Arc<Mutex<Vec<(Instant, String)>>> {
    let arrivals: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let noted = arrivals.clone();
    let address = address.to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let conn = zbus::connection::Builder::address(address.as_str())
                .expect("an address")
                .build()
                .await
                .expect("the bus");
            let rule = zbus::MatchRule::builder()
                .msg_type(zbus::message::Type::Signal)
                .interface("org.eboardbridge.Board1")
                .expect("a name")
                .member("MoveMade")
                .expect("a name")
                .build();
            let mut stream = zbus::MessageStream::for_match_rule(rule, &conn, None)
                .await
                .expect("a match rule");
            let _ = ready_tx.send(());
            while let Some(Ok(msg)) = stream.next().await {
                let at = Instant::now();
                if let Ok((_, _, uci, _)) = msg.body().deserialize::<(u32, String, String, String)>() {
                    noted.lock().expect("a lock").push((at, uci));
                }
            }
        });
    });
    ready_rx.recv().expect("the listener is ready");
    arrivals
}

/// When the emulator wrote each record (its index in the log).
pub type Trace = Arc<Mutex<Vec<(usize, Instant)>>>;

/// An emulated board playing `log` on a pty linked at `link`, noting when it wrote
/// each record's bytes.
pub fn board(log: &SensorLog, link: &Path) -> (JoinHandle<()>, Trace) {
    let trace: Trace = Arc::default();
    let emulator = Emulator::open().expect("a pty");
    std::os::unix::fs::symlink(emulator.path(), link).expect("a link");
    let cfg = EmulatorConfig {
        speed: 1.0,
        trace: Some(trace.clone()),
        ..EmulatorConfig::default()
    };
    let played = log.clone();
    let task = tokio::spawn(async move {
        let _ = emulator.run(&played, "bench", &cfg).await;
    });
    (task, trace)
}

/// The latency of each move (ms): its `MoveMade` arrival minus the time its
/// making record was written (see [`instants`]).
pub fn latencies(
    making: &[(usize, String)],
    trace: &[(usize, Instant)],
    arrivals: &[(Instant, String)],
) -> Vec<f64> {
    instants(making, trace, arrivals)
        .into_iter()
        .map(|(written, at)| at.saturating_duration_since(written).as_secs_f64() * 1e3)
        .collect()
}

/// Each move's instants: its making record written, its `MoveMade` arrived.
/// The k-th signal is the k-th move; its UCI must be the move's, or the bench
/// fails (a fast wrong answer cannot pass).
pub fn instants(
    making: &[(usize, String)],
    trace: &[(usize, Instant)],
    arrivals: &[(Instant, String)],
) -> Vec<(Instant, Instant)> {
    assert_eq!(arrivals.len(), making.len(), "one MoveMade per move");
    making
        .iter()
        .zip(arrivals)
        .map(|((record, uci), (at, got))| {
            assert_eq!(uci, got, "the moves arrive in order");
            let (_, written) = trace
                .iter()
                .find(|(i, _)| i == record)
                .expect("the emulator wrote every making record");
            (*written, *at)
        })
        .collect()
}
