//! `eboard-bridge run`: every board bridged, each by a task of its own
//! (`board::BoardTask`), its serial line by another (`device`), the broadcast folder
//! by a third (`output::live`), published on D-Bus (`bus`).
//!
//! Devices come from the command line and the configuration. The udev rules make a
//! stable symlink per board in `/dev/eboard/` and start the one service; the daemon
//! opens the devices it is given and opens them again whenever they come back, so a
//! board unplugged mid-game keeps its game and resynchronises from a fresh dump.

pub mod board;
pub mod config;
pub mod device;
pub mod notify;

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;

use crate::bus::{self, Board1, Publisher, Request, Snapshot};
use crate::output::replay::Tags;
use crate::protocol::ClockSide;
pub use board::Tapped;
use board::{BoardSetup, BoardTask};
pub use config::Config;
use device::DeviceEvent;

/// Where the udev rules put a symlink per board (`udev/`).
pub const DEVICE_DIR: &str = "/dev/eboard";

/// One input of a board's task.
#[derive(Debug)]
pub enum Input {
    Device(DeviceEvent),
    Command(Request),
}

/// Which bus to publish on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusChoice {
    System,
    Session,
    None,
    /// A bus at this address (tests' private brokers).
    Address(String),
}

impl BusChoice {
    /// The system bus under systemd (`$INVOCATION_ID` set), else the session bus.
    pub fn default_for_environment() -> BusChoice {
        if std::env::var_os("INVOCATION_ID").is_some() {
            BusChoice::System
        } else {
            BusChoice::Session
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error(
        "no boards: give --device PATH, list `devices` in the configuration, or plug one in ({DEVICE_DIR}/ is empty)"
    )]
    NoDevices,
    #[error("D-Bus: {0}")]
    Bus(#[from] zbus::Error),
    #[error("D-Bus: cannot take the name org.eboardbridge: {0} (is another eboard-bridge running?)")]
    Name(zbus::Error),
    #[error("board {0}: {1}")]
    Board(String, board::BoardError),
}

/// A running daemon.
pub struct Daemon {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    live: Option<JoinHandle<()>>,
    pub connection: Option<zbus::Connection>,
    /// The boards: (id, object path, snapshot).
    pub boards: Vec<(String, String, watch::Receiver<Snapshot>)>,
    tap: broadcast::Sender<Tapped>,
}

/// The devices to open: given ones, configured ones, else those in `/dev/eboard/`.
pub fn devices(given: &[PathBuf], config: &Config) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = given.iter().chain(&config.devices).cloned().collect();
    if all.is_empty() {
        if let Ok(dir) = std::fs::read_dir(DEVICE_DIR) {
            let mut found: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
            found.sort();
            all = found;
        }
    }
    all.dedup();
    all
}

impl Daemon {
    /// Sets every board up (resuming recorded games), serves the objects, and only
    /// then takes the well-known name.
    pub async fn start(devices: Vec<PathBuf>, config: Config, bus: BusChoice) -> Result<Daemon, DaemonError> {
        if devices.is_empty() {
            return Err(DaemonError::NoDevices);
        }
        let connection = match &bus {
            BusChoice::None => None,
            BusChoice::System => Some(zbus::connection::Builder::system()?),
            BusChoice::Session => Some(zbus::connection::Builder::session()?),
            BusChoice::Address(a) => Some(zbus::connection::Builder::address(a.as_str())?),
        };
        let connection = match connection {
            Some(b) => Some(
                b.serve_at(bus::ROOT_PATH, zbus::fdo::ObjectManager)?
                    .build()
                    .await?,
            ),
            None => None,
        };
        let (stop, stop_rx) = watch::channel(false);
        let (live_tx, live_rx) = mpsc::channel(64);
        let live = tokio::spawn(crate::output::live::run(
            config.output_dir(),
            config.round(),
            live_rx,
        ));
        let white_side = match config.clock.white {
            config::WhiteSide::Auto => None,
            config::WhiteSide::Left => Some(ClockSide::Left),
            config::WhiteSide::Right => Some(ClockSide::Right),
        };
        let (tap, _) = broadcast::channel(1024);
        let date = board::pgn_date();
        let mut tasks = Vec::new();
        let mut boards = Vec::new();
        for (i, path) in devices.iter().enumerate() {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let id = bus::board_id(&name);
            let entry = config.board(None, path);
            let number = entry.map_or(i as u32 + 1, |b| b.number);
            let tags = Tags {
                event: config.event.clone().unwrap_or_else(|| "?".into()),
                site: config.site.clone().unwrap_or_else(|| "?".into()),
                date: date.clone(),
                round: format!("{}.{number}", config.round()),
                white: entry.and_then(|b| b.white.clone()).unwrap_or_else(|| "?".into()),
                black: entry.and_then(|b| b.black.clone()).unwrap_or_else(|| "?".into()),
            };
            let setup = BoardSetup {
                id: id.clone(),
                device: path.clone(),
                number,
                tags,
                rules: config.rules.core_config(),
                white_side,
                recording: config.state_dir().join("recordings").join(format!("{id}.esl")),
            };
            let (input_tx, input_rx) = mpsc::channel::<Input>(256);
            let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(64);
            let (snap_tx, snap_rx) = watch::channel(Snapshot::default());
            let object_path = bus::board_path(&id);
            let publisher_bus = match &connection {
                Some(conn) => {
                    // Forward D-Bus requests into the board's one channel.
                    let (req_tx, mut req_rx) = mpsc::channel::<Request>(16);
                    let fwd = input_tx.clone();
                    tokio::spawn(async move {
                        while let Some(r) = req_rx.recv().await {
                            if fwd.send(Input::Command(r)).await.is_err() {
                                break;
                            }
                        }
                    });
                    conn.object_server()
                        .at(object_path.as_str(), Board1::new(snap_rx.clone(), req_tx))
                        .await?;
                    let p = zbus::zvariant::OwnedObjectPath::try_from(object_path.clone())
                        .map_err(zbus::Error::from)?;
                    Some((conn.clone(), p))
                }
                None => None,
            };
            let publisher = Publisher::new(snap_tx, publisher_bus);
            let task = BoardTask::new(setup, out_tx, publisher, Some(live_tx.clone()))
                .map_err(|e| DaemonError::Board(id.clone(), e))?
                .with_tap(tap.clone());
            tasks.push(tokio::spawn(device::run(
                path.clone(),
                input_tx,
                out_rx,
                stop_rx.clone(),
            )));
            tasks.push(tokio::spawn(task.run(input_rx, stop_rx.clone())));
            boards.push((id, object_path, snap_rx));
        }
        drop(live_tx);
        let daemon = Daemon {
            stop,
            tasks,
            live: Some(live),
            connection,
            boards,
            tap,
        };
        if let Some(conn) = &daemon.connection {
            if let Err(e) = conn.request_name(bus::BUS_NAME).await {
                // The boards were running already: stop them cleanly, so that
                // their devices and recordings are released before the error.
                daemon.shutdown().await;
                return Err(DaemonError::Name(e));
            }
        }
        Ok(daemon)
    }

    /// Every rules event of every board from now on. A receiver that falls more
    /// than 1,024 events behind loses the oldest (`RecvError::Lagged`).
    pub fn events(&self) -> broadcast::Receiver<Tapped> {
        self.tap.subscribe()
    }

    /// Stops every board, flushing recordings and broadcast files.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        if let Some(l) = self.live.take() {
            let _ = l.await;
        }
    }
}

/// Runs until SIGTERM or SIGINT: readiness and watchdog for systemd.
pub async fn run(devices: Vec<PathBuf>, config: Config, bus: BusChoice) -> Result<(), DaemonError> {
    let bus_name = match &bus {
        BusChoice::None => "no bus".to_string(),
        b => format!("{b:?} bus as {}", bus::BUS_NAME).to_lowercase(),
    };
    let daemon = Daemon::start(devices, config, bus).await?;
    tracing::info!("bridging {} board(s), {bus_name}", daemon.boards.len());
    notify::notify(&format!(
        "READY=1\nSTATUS=bridging {} board(s)",
        daemon.boards.len()
    ));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| DaemonError::Bus(zbus::Error::InputOutput(e.into())))?;
    let watchdog = notify::watchdog_interval();
    let mut tick = tokio::time::interval(watchdog.map_or(std::time::Duration::from_secs(3600), |w| w / 2));
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            _ = tick.tick() => if watchdog.is_some() { notify::notify("WATCHDOG=1") },
        }
    }
    notify::notify("STOPPING=1");
    tracing::info!("stopping: flushing recordings and broadcast files");
    daemon.shutdown().await;
    Ok(())
}

/// `record`: one board bridged, every byte both ways appended to `out` (a sensor
/// log), until SIGINT or SIGTERM.
pub async fn record(device: &std::path::Path, out: &std::path::Path) -> std::io::Result<()> {
    use crate::log::{Header, LogTime, LogWriter, Record, RecordKind};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut line = crate::device::serial::open(device)?;
    let mut header = Header::default();
    header.set("device", &device.display().to_string());
    header.set("started", &rfc3339_now());
    header.set("source", "eboard-bridge record");
    let file =
        std::fs::File::create(out).map_err(|e| std::io::Error::other(format!("{}: {e}", out.display())))?;
    let mut w = LogWriter::new(std::io::BufWriter::new(file), &header)?;
    let start = std::time::Instant::now();
    let at = |start: std::time::Instant| LogTime::from_micros(start.elapsed().as_micros() as u64);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    for cmd in crate::device::serial::start_up_commands() {
        let bytes = cmd.encode();
        line.write_all(&bytes).await?;
        w.write(&Record {
            time: at(start),
            kind: RecordKind::Tx(bytes),
        })?;
    }
    w.flush()?;
    eprintln!(
        "eboard-bridge: recording {} to {} (Ctrl-C to stop)",
        device.display(),
        out.display()
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut buf = vec![0u8; 4096];
    loop {
        tokio::select! {
            r = line.read(&mut buf) => match r? {
                0 => break,
                n => {
                    w.write(&Record { time: at(start), kind: RecordKind::Rx(buf[..n].to_vec()) })?;
                    w.flush()?;
                }
            },
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    w.flush()
}

/// The current UTC time, RFC 3339.
pub fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

/// Today's UTC date.
pub fn civil_date() -> (i64, u32, u32) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_from_days((secs / 86_400) as i64)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(super::civil_from_days(11_016), (2000, 2, 29));
    }
}
