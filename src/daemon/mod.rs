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
mod dates;
pub mod delay;
pub mod device;
mod dir;
pub mod fault;
pub mod hub;
pub mod notify;
mod record;
pub mod roster;
pub mod round;
pub mod supervise;

use std::path::PathBuf;

use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;

use crate::api::{BoardRef, Detached, Request, Sink, Snapshot};
use crate::bus;
pub use board::Tapped;
pub use config::DaemonConfig;
pub use dates::{civil_date, rfc3339_now, unix_from_rfc3339, unix_ms_now};
use device::DeviceEvent;
use hub::Hub;
pub use record::record;

/// Where the udev rules put a symlink per board (`udev/`).
pub const DEVICE_DIR: &str = "/dev/eboard";

/// One input of a board's task.
#[derive(Debug)]
pub enum Input {
    Device(DeviceEvent),
    Command(Request),
    /// The configuration was read again.
    Reload(board::BoardUpdate),
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

/// Connects to the bus chosen, serving the `ObjectManager` and `Manager1`.
async fn connect(bus: &BusChoice, manager: bus::Manager1) -> zbus::Result<zbus::Connection> {
    let builder = match bus {
        BusChoice::System | BusChoice::None => zbus::connection::Builder::system()?,
        BusChoice::Session => zbus::connection::Builder::session()?,
        BusChoice::Address(a) => zbus::connection::Builder::address(a.as_str())?,
    };
    builder
        .serve_at(bus::ROOT_PATH, zbus::fdo::ObjectManager)?
        .serve_at(bus::ROOT_PATH, manager)?
        .build()
        .await
}

impl BusChoice {
    /// The bus, for messages: which one and where it is looked for.
    pub fn describe(&self) -> String {
        let env = |var: &str, default: &str| {
            std::env::var(var).unwrap_or_else(|_| format!("{default} ({var} not set)"))
        };
        match self {
            BusChoice::System => format!(
                "system bus at {}",
                env("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/run/dbus/system_bus_socket")
            ),
            BusChoice::Session => format!("session bus at {}", env("DBUS_SESSION_BUS_ADDRESS", "no address")),
            BusChoice::Address(a) => format!("bus at {a}"),
            BusChoice::None => "no bus".into(),
        }
    }

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
    DaemonConfig(#[from] config::ConfigError),
    #[error(
        "no boards: give --device PATH, list `devices` in the configuration, or have the udev rules make {0} (its parent folder does not exist)"
    )]
    NoDevices(PathBuf),
    #[error(
        "D-Bus: cannot publish on the {bus}: {source}; start that bus, choose another with --bus, or run with --bus none to bridge without D-Bus"
    )]
    Bus { bus: String, source: zbus::Error },
    #[error("D-Bus: {0}")]
    Serve(#[from] zbus::Error),
    #[error("cannot watch for SIGTERM and SIGHUP: {0}")]
    Signal(std::io::Error),
    #[error("D-Bus: cannot take the name org.eboardbridge: {0}{hint}", hint = taken_hint(.0))]
    Name(zbus::Error),
    /// The bus refused the name (`AccessDenied`): its policy does not let this user
    /// own it.
    #[error(
        "D-Bus: the {bus} does not let this user (uid {uid}) own the name org.eboardbridge ({source}). \
         Its policy must grant it: install the policy file {POLICY_FILE} (from dbus/org.eboardbridge.conf \
         of the source, or the package) and reload D-Bus (systemctl reload dbus); it grants the name to \
         root and the user eboard-bridge, as whom the systemd unit runs. Or use --bus session or --bus none"
    )]
    NameDenied {
        bus: String,
        uid: u32,
        source: zbus::Error,
    },
    #[error("board {0}: {1}")]
    Board(String, board::BoardError),
    #[error("HTTP: {0}")]
    Http(#[from] crate::net::NetError),
    #[error("MQTT: {0}")]
    Mqtt(#[from] crate::mqtt::MqttError),
    #[error("cannot start a thread for a sink: {0}")]
    Sink(std::io::Error),
    #[error(transparent)]
    Lichess(#[from] crate::lichess::LichessError),
    #[error("broadcast delay: {0}")]
    Delay(String),
}

/// Publications that may wait for a sink given to [`Daemon::start_with`]
/// before the oldest is dropped.
pub const EXTRA_SINK_QUEUE: usize = 1024;

/// Where the D-Bus policy that lets the daemon own its name is installed.
pub const POLICY_FILE: &str = "/usr/share/dbus-1/system.d/org.eboardbridge.conf";

/// What to add to a refusal of the name: another daemon is the likely cause when
/// the name is taken.
fn taken_hint(e: &zbus::Error) -> &'static str {
    if matches!(e, zbus::Error::NameTaken) {
        " (is another eboard-bridge running?)"
    } else {
        ""
    }
}

/// Whether the bus refused a call for its policy (`AccessDenied`).
fn access_denied(e: &zbus::Error) -> bool {
    match e {
        zbus::Error::MethodError(name, ..) => name.as_str() == "org.freedesktop.DBus.Error.AccessDenied",
        zbus::Error::FDO(f) => matches!(**f, zbus::fdo::Error::AccessDenied(_)),
        _ => false,
    }
}

/// A running daemon.
pub struct Daemon {
    stop: watch::Sender<bool>,
    hub: Option<JoinHandle<()>>,
    live: Option<JoinHandle<crate::output::live::Written>>,
    /// The broadcast delay, and its task releasing what is due.
    delayed: std::sync::Arc<delay::Delayed>,
    releasing: Option<JoinHandle<()>>,
    pub connection: Option<zbus::Connection>,
    boards: watch::Receiver<Vec<BoardRef>>,
    tap: broadcast::Sender<Tapped>,
    /// A receiver of the tap from before the first board started, kept for
    /// [`Daemon::events_since_start`].
    first: std::sync::Mutex<Option<broadcast::Receiver<Tapped>>>,
    reload: mpsc::Sender<DaemonConfig>,
    http: Option<crate::net::Server>,
    mqtt: Option<crate::mqtt::Mqtt>,
    lichess: Option<crate::lichess::Lichess>,
    lichess_reload: Option<mpsc::Sender<crate::lichess::LichessConfig>>,
    doors: Option<crate::lichess::Doors>,
}

/// The board numbers the configuration knows (`[[board]]`, the pairings).
fn known_boards(config: &DaemonConfig) -> Vec<u32> {
    let mut n: Vec<u32> = config.boards.iter().map(|b| b.number).collect();
    n.extend(
        config
            .pairing_list
            .iter()
            .flat_map(|p| p.boards.iter().map(|b| b.board)),
    );
    n.sort_unstable();
    n.dedup();
    n
}

/// The devices named on the command line and in the configuration (`devices`, and
/// every `[[board]]` entry's `device`). None means the daemon watches the device
/// directory instead.
pub fn devices(given: &[PathBuf], config: &DaemonConfig) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = Vec::new();
    let entries = config.boards.iter().filter_map(|b| b.device.as_ref());
    for d in given.iter().chain(&config.devices).chain(entries) {
        if !all.contains(d) {
            all.push(d.clone());
        }
    }
    all
}

impl Daemon {
    /// Sets every board up (resuming recorded games), serves the objects, and only
    /// then takes the well-known name. With no devices given, the boards are those
    /// in the configuration's device directory (`/dev/eboard/` by default), and
    /// those that appear there later.
    pub async fn start(
        devices: Vec<PathBuf>,
        config: DaemonConfig,
        bus: BusChoice,
    ) -> Result<Daemon, DaemonError> {
        Daemon::start_with(devices, config, bus, Vec::new()).await
    }

    /// The same, every board's publications also offered to `extra`, after the
    /// daemon's own sinks. The daemon cannot know that they never wait: each
    /// runs on a thread of its own behind a queue of [`EXTRA_SINK_QUEUE`]
    /// publications ([`Detached`]: the oldest dropped when it is full, counted
    /// in the log), so none can hold a board up.
    pub async fn start_with(
        devices: Vec<PathBuf>,
        config: DaemonConfig,
        bus: BusChoice,
        extra: Vec<std::sync::Arc<dyn Sink>>,
    ) -> Result<Daemon, DaemonError> {
        let watched = devices.is_empty().then(|| config.device_dir());
        if let Some(dir) = &watched {
            let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
            if parent.is_some_and(|p| !p.is_dir()) {
                return Err(DaemonError::NoDevices(dir.clone()));
            }
        }
        // The pushes to lichess: what the doors show of them exists before
        // the bus serves it.
        let lichess_config = config.lichess.clone();
        let (doors, lichess_inputs) = lichess_config.is_some().then(crate::lichess::doors).unzip();
        let (calls_tx, calls_rx) = mpsc::channel(4);
        // The broadcast delay, the one place the spectators' sinks are fed
        // from (`delay`): its journal read before the bus serves `ctl delay`.
        let configured = match &config.broadcast {
            Some(b) => b.delays().map_err(DaemonError::Delay)?,
            None => Default::default(),
        };
        let delayed =
            delay::Delayed::open(&configured, Some(&config.state_dir())).map_err(DaemonError::Delay)?;
        // The arbiters' alerts on the bus, once the console is up.
        let alerts = crate::api::alerts::DeskSlot::default();
        let mut manager = bus::Manager1::new(calls_tx)
            .with_alerts(alerts.clone())
            .with_delay(delayed.clone());
        if let Some(d) = &doors {
            manager = manager.with_lichess(d.status.clone(), d.calls.clone());
        }
        let connection = match &bus {
            BusChoice::None => None,
            b => Some(connect(b, manager).await.map_err(|source| DaemonError::Bus {
                bus: b.describe(),
                source,
            })?),
        };
        // Its token is checked before any board starts (refused when others
        // may read or change it; a file with no token leaves the push off).
        let (rounds_out, rounds_in) = lichess_config
            .is_some()
            .then(crate::api::lichess::rounds_link)
            .unzip();
        let (lichess_reload, lichess_reload_rx) = mpsc::channel(4);
        let lichess = match (lichess_config, rounds_in, lichess_inputs) {
            (Some(c), Some(link), Some(inputs)) => Some(crate::lichess::Lichess::start(
                c,
                &config.state_dir(),
                link,
                inputs,
                lichess_reload_rx,
                &known_boards(&config),
            )?),
            _ => None,
        };
        if let (Some(conn), Some(d)) = (&connection, &doors) {
            tokio::spawn(bus::lichess::follow(
                conn.clone(),
                d.status.clone(),
                d.reports.subscribe(),
            ));
        }
        let (stop, stop_rx) = watch::channel(false);
        let (live_tx, live_rx) = crate::output::live::mailbox();
        let live = tokio::spawn(crate::output::live::run(config.output_dir(), live_rx, rounds_out));
        let (reload, reload_rx) = mpsc::channel(4);
        let (tap, first) = broadcast::channel(1024);
        let (list_tx, boards) = watch::channel(Vec::new());
        let feed = config
            .http
            .as_ref()
            .map(|h| crate::net::EventLog::new(h.event_history));
        // The arbiters' console follows the events live: a history of its own
        // when the spectators' is delayed.
        let console_feed = config
            .http
            .as_ref()
            .filter(|h| h.arbiters.is_some())
            .map(|h| crate::net::EventLog::new(h.event_history));
        let http_config = config.http.clone();
        let mqtt_config = config.mqtt.clone();
        let (mqtt_tx, mqtt_rx) = mqtt_config.is_some().then(crate::mqtt::outbox).unzip();
        // Every board's publications go, after D-Bus (inline, first), to these,
        // in this order; none of them waits (`docs/ARCHITECTURE.md`, "Publication").
        // The arbiter's (the event tap, the console's history) get them live;
        // the spectators' (MQTT, the network's history, the broadcast folder
        // and the pushes to lichess behind it) only through the delay.
        let mut sinks: Vec<std::sync::Arc<dyn Sink>> = vec![std::sync::Arc::new(board::Tap(tap.clone()))];
        if let Some(f) = &console_feed {
            sinks.push(f.clone());
        }
        let mut spectators: Vec<std::sync::Arc<dyn Sink>> = Vec::new();
        if let Some(m) = mqtt_tx {
            spectators.push(std::sync::Arc::new(m));
        }
        if let Some(f) = &feed {
            spectators.push(f.clone());
        }
        spectators.push(std::sync::Arc::new(live_tx));
        delayed.set_spectators(spectators);
        sinks.push(delayed.clone());
        let releasing = tokio::spawn(delayed.clone().run(stop_rx.clone()));
        for (i, s) in extra.into_iter().enumerate() {
            let detached =
                Detached::new(&format!("extra {}", i + 1), s, EXTRA_SINK_QUEUE).map_err(DaemonError::Sink)?;
            sinks.push(std::sync::Arc::new(detached));
        }
        let state_dir = config.state_dir();
        let output = config.output_dir();
        let initial = match &watched {
            Some(dir) => hub::entries(dir),
            None => devices,
        };
        let mut hub = Hub::new(
            config,
            connection.clone(),
            sinks,
            stop_rx.clone(),
            reload_rx,
            list_tx,
        )
        .with_pairings_calls(calls_rx)
        .with_delay(delayed.clone());
        let mut failed = hub.add_all(initial).await.err();
        // Every board resumed (each in its own task, side by side) before the
        // name is taken, as clients expect the games there once it is.
        hub.started().await;
        let mut http = None;
        if let (None, Some(h), Some(events)) = (&failed, &http_config, feed) {
            let ctx = crate::net::Context {
                boards: boards.clone(),
                console_events: console_feed.unwrap_or_else(|| events.clone()),
                events,
                output,
                stop: stop_rx.clone(),
                settle_ms: h.settle_ms,
                idle_timeout_ms: h.idle_timeout_ms,
                state: state_dir.clone(),
                relays: Default::default(),
                lichess: doors.as_ref().map(|d| d.status.clone()),
            };
            match crate::net::Server::start(h, ctx).await {
                Ok(s) => {
                    if let Some(desk) = s.alerts() {
                        let _ = alerts.set(desk);
                    }
                    http = Some(s)
                }
                Err(e) => failed = Some(e.into()),
            }
        }
        let mut mqtt = None;
        if let (None, Some(m), Some(rx)) = (&failed, mqtt_config, mqtt_rx) {
            match crate::mqtt::Mqtt::start(m, state_dir, boards.clone(), rx) {
                Ok(s) => mqtt = Some(s),
                Err(e) => failed = Some(e.into()),
            }
        }
        if failed.is_none() {
            if let Some(conn) = &connection {
                // Not queued behind another owner: a second daemon must say so
                // rather than run unseen.
                let flags = zbus::fdo::RequestNameFlags::DoNotQueue.into();
                if let Err(e) = conn.request_name_with_flags(bus::BUS_NAME, flags).await {
                    failed = Some(if access_denied(&e) {
                        DaemonError::NameDenied {
                            bus: bus.describe(),
                            // SAFETY: geteuid(2) cannot fail and touches no memory.
                            uid: unsafe { libc::geteuid() },
                            source: e,
                        }
                    } else {
                        DaemonError::Name(e)
                    });
                }
            }
        }
        if let Some(e) = failed {
            // Boards may be running already: stop them cleanly, so that their
            // devices and recordings are released before the error.
            let _ = stop.send(true);
            hub.abandon().await;
            delayed.close();
            let _ = releasing.await;
            let _ = live.await;
            if let Some(l) = lichess {
                l.stopped().await;
            }
            if let Some(s) = http {
                s.stopped().await;
            }
            if let Some(m) = mqtt {
                m.stopped().await;
            }
            return Err(e);
        }
        Ok(Daemon {
            stop,
            hub: Some(tokio::spawn(hub.run(watched))),
            live: Some(live),
            delayed,
            releasing: Some(releasing),
            connection,
            boards,
            tap,
            first: std::sync::Mutex::new(Some(first)),
            reload,
            http,
            mqtt,
            lichess,
            lichess_reload: doors.is_some().then_some(lichess_reload),
            doors,
        })
    }

    /// The pushes to lichess, when `[lichess]` is configured: each round's
    /// state, the reports, and where a round's id is set.
    pub fn lichess(&self) -> Option<&crate::lichess::Doors> {
        self.doors.as_ref()
    }

    /// The broadcast delay (the spectators' side of every board).
    pub fn delay(&self) -> &std::sync::Arc<delay::Delayed> {
        &self.delayed
    }

    /// Where the HTTP server listens (none when it is off).
    pub fn http_addresses(&self) -> Vec<std::net::SocketAddr> {
        self.http
            .as_ref()
            .map(|h| h.addresses.clone())
            .unwrap_or_default()
    }

    /// The configuration read again (SIGHUP): each board's round, number and
    /// players for the games that start from now on; devices newly listed.
    pub async fn reload(&self, config: DaemonConfig) {
        match (&self.lichess_reload, &config.lichess) {
            (Some(tx), Some(l)) => {
                let _ = tx.send(l.clone()).await;
            }
            (Some(_), None) => {
                tracing::warn!(
                    "[lichess] is gone from the configuration: the pushes stop when the daemon restarts"
                )
            }
            (None, Some(_)) => {
                tracing::warn!(
                    "[lichess] is new in the configuration: the pushes start when the daemon restarts"
                )
            }
            (None, None) => {}
        }
        let _ = self.reload.send(config).await;
    }

    /// The boards: (id, object path, snapshot), in the order they came.
    pub fn boards(&self) -> Vec<(String, String, watch::Receiver<Snapshot>)> {
        self.boards
            .borrow()
            .iter()
            .map(|b| (b.id.clone(), b.object_path.clone(), b.snapshot.clone()))
            .collect()
    }

    /// The list of boards, changed whenever one is added.
    pub fn board_list(&self) -> watch::Receiver<Vec<BoardRef>> {
        self.boards.clone()
    }

    /// Every rules event of every board from now on. A receiver that falls more
    /// than 1,024 events behind loses the oldest (`RecvError::Lagged`).
    pub fn events(&self) -> broadcast::Receiver<Tapped> {
        self.tap.subscribe()
    }

    /// Every rules event of every board since the daemon started (its first
    /// 1,024 at most, until taken; `RecvError::Lagged` past them), for whoever
    /// must see them all: a test comparing what was published with `replay` of
    /// the recording. Given once; `None` after.
    pub fn events_since_start(&self) -> Option<broadcast::Receiver<Tapped>> {
        self.first.lock().ok()?.take()
    }

    /// Stops every board, flushing recordings and broadcast files.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(h) = self.hub.take() {
            let _ = h.await;
        }
        // The boards are done: the spectators' sinks are let go.
        self.delayed.close();
        if let Some(r) = self.releasing.take() {
            let _ = r.await;
        }
        if let Some(l) = self.live.take() {
            let _ = l.await;
        }
        // After the folder: its last `games.pgn` is what it pushes last.
        if let Some(l) = self.lichess.take() {
            l.stopped().await;
        }
        if let Some(h) = self.http.take() {
            h.stopped().await;
        }
        // Last: the boards' final events are in its queue.
        if let Some(m) = self.mqtt.take() {
            m.stopped().await;
        }
    }
}

/// Runs until SIGTERM or SIGINT: readiness and watchdog for systemd. SIGHUP reads
/// the configuration again (`config_file`, else the default file): rounds and
/// players change for the games that start from then on.
pub async fn run(
    devices: Vec<PathBuf>,
    config: DaemonConfig,
    config_file: Option<PathBuf>,
    bus: BusChoice,
) -> Result<(), DaemonError> {
    use tokio::signal::unix::{SignalKind, signal};
    // A file size limit reached (RLIMIT_FSIZE) fails the write like a full disk:
    // its signal must not kill the daemon. Handled, it is ignored.
    const SIGXFSZ: i32 = 25;
    let _xfsz = signal(SignalKind::from_raw(SIGXFSZ)).map_err(DaemonError::Signal)?;
    let mut term = signal(SignalKind::terminate()).map_err(DaemonError::Signal)?;
    let mut hup = signal(SignalKind::hangup()).map_err(DaemonError::Signal)?;
    let bus_name = match &bus {
        BusChoice::None => "no bus".to_string(),
        b => format!("{b:?} bus as {}", bus::BUS_NAME).to_lowercase(),
    };
    let watching = devices.is_empty().then(|| config.device_dir());
    // Where the daemon writes, said at the start (issue 59): as absolute paths,
    // whatever the working directory.
    let whole = |p: PathBuf| std::path::absolute(&p).unwrap_or(p);
    let recordings = whole(config.state_dir().join("recordings"));
    let broadcast = whole(config.output_dir());
    let daemon = Daemon::start(devices, config, bus).await?;
    let count = daemon.boards().len();
    match &watching {
        Some(dir) if count == 0 => tracing::warn!(
            "no boards yet: waiting for boards to appear in {}, {bus_name}",
            dir.display()
        ),
        Some(dir) => tracing::info!(
            "bridging {count} board(s) and those that appear in {}, {bus_name}",
            dir.display()
        ),
        None => tracing::info!("bridging {count} board(s), {bus_name}"),
    }
    tracing::info!(
        "writing the recordings (each board's journal) in {}, the broadcast folder in {}",
        recordings.display(),
        broadcast.display()
    );
    notify::notify(&format!("READY=1\nSTATUS=bridging {count} board(s)"));
    let watchdog = notify::watchdog_interval();
    let mut tick = tokio::time::interval(watchdog.map_or(std::time::Duration::from_secs(3600), |w| w / 2));
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            _ = hup.recv() => {
                notify::notify("RELOADING=1");
                match DaemonConfig::load(config_file.as_deref()) {
                    Ok(c) => daemon.reload(c).await,
                    Err(e) => {
                        tracing::error!("SIGHUP: configuration not read again, the one running stays: {e}");
                        if let Some(conn) = &daemon.connection {
                            let words = format!("the one running stays: {e}");
                            bus::say_reloaded(conn, 0, "failed", &words).await;
                        }
                    }
                }
                notify::notify("READY=1");
            }
            _ = tick.tick() => if watchdog.is_some() { notify::notify("WATCHDOG=1") },
        }
    }
    notify::notify("STOPPING=1");
    tracing::info!("stopping: flushing recordings and broadcast files");
    daemon.shutdown().await;
    Ok(())
}
