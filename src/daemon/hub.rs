//! The boards of a running daemon. The hub sets each board up (its task, its line,
//! its D-Bus object) and, when the daemon watches a device directory (`/dev/eboard/`,
//! filled by the udev rules), takes boards as they appear there:
//!
//! - a new name in the directory is probed for the board's serial number;
//! - a board that is away and has that serial number gets the new device, and goes on
//!   with its game (a board plugged into another port comes back under another name
//!   when it has no USB serial number);
//! - any other device becomes a new board.
//!
//! The hub runs as one task of its own after start-up; it owns the list of boards and
//! publishes it on a `watch` channel.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::board::{BoardSetup, BoardUpdate};
use super::config::{self, DaemonConfig};
pub use super::dir::entries;
use super::dir::watch_dir;
use super::round::{AtReload, SetByCtl, pairings_of};
use super::supervise::Supervisor;
use super::{DaemonError, Input, device};
use crate::api::{BoardRef, Decision, Error, Request, Sink, Snapshot};
use crate::bus::{self, Board1, PairingsCall, Publisher};
use crate::log::escaped;
use crate::output::replay::Tags;
use crate::protocol::ClockSide;

struct Slot {
    id: String,
    number: u32,
    /// The device the board's line opens; changed when the board comes back elsewhere.
    device: watch::Sender<PathBuf>,
    snapshot: watch::Receiver<Snapshot>,
    /// The board's task (told of a new configuration).
    input: mpsc::Sender<Input>,
    /// The latest configuration it was told, for a task started again.
    update: watch::Sender<Option<BoardUpdate>>,
}

pub(crate) struct Hub {
    config: DaemonConfig,
    connection: Option<zbus::Connection>,
    /// Where every board's publications go besides D-Bus (`Daemon::start`
    /// makes the list).
    sinks: Vec<std::sync::Arc<dyn Sink>>,
    stop: watch::Receiver<bool>,
    reload: mpsc::Receiver<DaemonConfig>,
    /// `Manager1.SetPairings` calls.
    pairings_calls: Option<mpsc::Receiver<PairingsCall>>,
    /// The round's pairings by board number: the configuration's `pairings`
    /// file, replaced (board by board) by `SetPairings`; a board added later
    /// takes its own.
    pairings: std::collections::BTreeMap<u32, std::collections::BTreeMap<String, String>>,
    /// What `SetPairings` set over the configuration (`daemon::round`: it
    /// stands until the file's round or pairings change).
    ctl: Option<SetByCtl>,
    date: String,
    slots: Vec<Slot>,
    tasks: Vec<JoinHandle<()>>,
    /// The boards of the daemon's start whose first task is not set up yet
    /// (`started` waits for them; boards added later are not waited for).
    starting: Option<Vec<tokio::sync::oneshot::Receiver<()>>>,
    list: watch::Sender<Vec<BoardRef>>,
    /// The broadcast delay: each board's public snapshot comes from it (none:
    /// the live one).
    delay: Option<std::sync::Arc<super::delay::Delayed>>,
}

impl Hub {
    pub(crate) fn new(
        config: DaemonConfig,
        connection: Option<zbus::Connection>,
        sinks: Vec<std::sync::Arc<dyn Sink>>,
        stop: watch::Receiver<bool>,
        reload: mpsc::Receiver<DaemonConfig>,
        list: watch::Sender<Vec<BoardRef>>,
    ) -> Hub {
        let state = config.state_dir();
        let ctl = SetByCtl::load(&state).and_then(|set| match set.at_reload(&config) {
            AtReload::Kept(words) => {
                tracing::info!("as before the restart, {}", escaped(&words));
                Some(set)
            }
            AtReload::Replaced(words) => {
                tracing::warn!("since the restart, {}", escaped(&words));
                SetByCtl::forget(&state);
                None
            }
        });
        Hub {
            pairings: ctl
                .as_ref()
                .map_or_else(|| pairings_of(&config), |c| c.pairings.clone()),
            ctl,
            pairings_calls: None,
            config,
            connection,
            sinks,
            stop,
            reload,
            date: super::board::pgn_date(),
            slots: Vec::new(),
            tasks: Vec::new(),
            starting: Some(Vec::new()),
            list,
            delay: None,
        }
    }

    /// Each board's public snapshot from the broadcast delay.
    pub(crate) fn with_delay(mut self, delay: std::sync::Arc<super::delay::Delayed>) -> Hub {
        self.delay = Some(delay);
        self
    }

    /// Takes `Manager1.SetPairings` calls from `calls`.
    pub(crate) fn with_pairings_calls(mut self, calls: mpsc::Receiver<PairingsCall>) -> Hub {
        self.pairings_calls = Some(calls);
        self
    }

    /// The board number for a board the configuration does not name: the lowest
    /// number neither configured nor taken.
    fn free_number(&self) -> u32 {
        let taken: HashSet<u32> = self
            .config
            .boards
            .iter()
            .map(|b| b.number)
            .chain(self.slots.iter().map(|s| s.number))
            .collect();
        (1..).find(|n| !taken.contains(n)).unwrap_or(1)
    }

    /// A board on `device`, whose serial number may already be known. Its id comes
    /// from the device name; a second board whose device has the same name gets a
    /// suffix, so that ids and object paths stay unique.
    pub(crate) async fn add(&mut self, device: PathBuf, serial: Option<&str>) -> Result<(), DaemonError> {
        let name = device
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let mut id = bus::board_id(&name);
        if self.slots.iter().any(|s| s.id == id) {
            let base = id.clone();
            id = (2..)
                .map(|n| format!("{base}_{n}"))
                .find(|c| self.slots.iter().all(|s| &s.id != c))
                .unwrap_or(base);
        }
        let fallback = self.free_number();
        let configured = self.board_update(serial, &device, fallback);
        let number = configured.number;
        // What the object shows from the moment it is on the bus, before the
        // board's task publishes: the board's number, round, players and tags
        // as its games take them (not board 0 with no players).
        let first = Snapshot {
            device: device.display().to_string(),
            board_number: number,
            round: configured.round.to_string(),
            event: configured.tags.event.clone(),
            white: configured.tags.white.clone(),
            black: configured.tags.black.clone(),
            tags: configured.tags.extra.clone(),
            ..Snapshot::default()
        };
        let white_side = match self.config.clock.white {
            config::WhiteSide::Auto => None,
            config::WhiteSide::Left => Some(ClockSide::Left),
            config::WhiteSide::Right => Some(ClockSide::Right),
        };
        let setup = BoardSetup {
            id: id.clone(),
            device: device.clone(),
            configured,
            round_format: self.config.round_format,
            rules: self.config.core_config(),
            white_side,
            show_moves: self.config.clock.show_moves,
            recording: self
                .config
                .state_dir()
                .join("recordings")
                .join(format!("{id}.esl")),
            time_scale: self
                .config
                .time_scale
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(1.0),
        };
        let (input_tx, input_rx) = mpsc::channel::<Input>(256);
        let input_tx_keep = input_tx.clone();
        let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(64);
        let (snap_tx, snap_rx) = watch::channel(first);
        let (publishing_tx, publishing_rx) = watch::channel(false);
        let (history_tx, history_rx) = watch::channel(std::sync::Arc::new(Vec::new()));
        let object_path = bus::board_path(&id);
        // Arbiter calls (D-Bus, MQTT) go into the board's one channel.
        let (req_tx, mut req_rx) = mpsc::channel::<Request>(16);
        let fwd = input_tx.clone();
        tokio::spawn(async move {
            while let Some(r) = req_rx.recv().await {
                if fwd.send(Input::Command(r)).await.is_err() {
                    break;
                }
            }
        });
        let publisher_bus = match &self.connection {
            Some(conn) => {
                conn.object_server()
                    .at(
                        object_path.as_str(),
                        Board1::new(snap_rx.clone(), publishing_rx, req_tx.clone())
                            .with_history(history_rx.clone()),
                    )
                    .await?;
                let p = zbus::zvariant::OwnedObjectPath::try_from(object_path.clone())
                    .map_err(zbus::Error::from)?;
                Some((conn.clone(), p))
            }
            None => None,
        };
        let publisher = std::sync::Arc::new(
            Publisher::new(snap_tx, publishing_tx, publisher_bus).with_history(history_tx),
        );
        let (device_tx, device_rx) = watch::channel(device);
        let (update_tx, update_rx) = watch::channel(None);
        self.tasks.push(tokio::spawn(device::run(
            device_rx,
            input_tx,
            out_rx,
            self.stop.clone(),
        )));
        // The board is resumed from its journal in its own task, under its
        // supervisor: a journal or a task that panics stops this board alone.
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        if let Some(starting) = &mut self.starting {
            starting.push(ready_rx);
        }
        let supervisor = Supervisor {
            setup,
            updates: update_rx,
            device: device_tx.clone(),
            outgoing: out_tx,
            publisher,
            sinks: self.sinks.clone(),
            input: input_rx,
            stop: self.stop.clone(),
            ready: Some(ready_tx),
        };
        // The supervisor itself failing (a bug) is said in the log, with the board.
        let board_task = tokio::spawn(supervisor.run());
        let board_id = id.clone();
        self.tasks.push(tokio::spawn(async move {
            if let Err(e) = board_task.await {
                tracing::error!(
                    "board {board_id}: its supervisor stopped: {e}; the recording keeps what was played"
                );
            }
        }));
        self.slots.push(Slot {
            id: id.clone(),
            number,
            device: device_tx,
            snapshot: snap_rx.clone(),
            input: input_tx_keep,
            update: update_tx,
        });
        self.list.send_modify(|l| {
            l.push(BoardRef {
                public: match &self.delay {
                    Some(d) => d.public(&id),
                    None => snap_rx.clone(),
                },
                id,
                object_path,
                snapshot: snap_rx,
                commands: req_tx,
                history: history_rx,
            })
        });
        Ok(())
    }

    /// What the configuration says of the board with `serial` on `device`: its
    /// round, number (`fallback` when no entry names it) and players.
    fn board_update(&self, serial: Option<&str>, device: &Path, fallback: u32) -> BoardUpdate {
        let entry = self.config.board(serial, device);
        let number = entry.map_or(fallback, |b| b.number);
        let round = self.round();
        let mut tags = Tags {
            event: self.config.event.clone().unwrap_or_else(|| "?".into()),
            site: self.config.site.clone().unwrap_or_else(|| "?".into()),
            date: self.date.clone(),
            round: self.config.round_format.tag(round, number),
            white: entry.and_then(|b| b.white.clone()).unwrap_or_else(|| "?".into()),
            black: entry.and_then(|b| b.black.clone()).unwrap_or_else(|| "?".into()),
            extra: [("Board".to_string(), number.to_string())].into(),
        };
        if let Some(p) = self.pairings.get(&number) {
            super::board::pairing_into(&mut tags, p);
        }
        BoardUpdate {
            round,
            number,
            tags,
            pairings: self.pairings.clone(),
            by_serial: self
                .config
                .boards
                .iter()
                .filter(|b| b.serial.is_some())
                .cloned()
                .collect(),
            time_control: self.config.time_control(),
        }
    }

    /// The configuration was read again: every board is told its round, number
    /// and players for the games that start from now on; devices newly listed
    /// are bridged. (The folders, the rules and the bus stay as they started.)
    async fn reconfigure(&mut self, config: DaemonConfig) {
        let devices = super::devices(&[], &config);
        let mut said = None;
        let mut replaced = None;
        match self.ctl.as_ref().map(|c| c.at_reload(&config)) {
            Some(AtReload::Kept(words)) => said = Some(words),
            Some(AtReload::Replaced(words)) => {
                tracing::warn!("configuration read again: {}", escaped(&words));
                replaced = Some(words);
                SetByCtl::forget(&self.config.state_dir());
                self.ctl = None;
                self.pairings = pairings_of(&config);
            }
            None => self.pairings = pairings_of(&config),
        }
        self.config = config;
        self.date = super::board::pgn_date();
        for i in 0..self.slots.len() {
            let (serial, device, number) = {
                let s = &self.slots[i];
                let snap = s.snapshot.borrow();
                (snap.serial_number.clone(), s.device.borrow().clone(), s.number)
            };
            let serial = (!serial.is_empty()).then_some(serial);
            let update = self.board_update(serial.as_deref(), &device, number);
            self.slots[i].number = update.number;
            self.slots[i].update.send_replace(Some(update.clone()));
            let _ = self.slots[i].input.send(Input::Reload(update)).await;
        }
        for d in devices {
            if !self.slots.iter().any(|s| *s.device.borrow() == d) {
                tracing::info!("{}: listed in the configuration now: bridging it", d.display());
                if let Err(e) = self.add(d.clone(), None).await {
                    tracing::error!("{}: cannot bridge it: {e}", d.display());
                }
            }
        }
        let round = self.round();
        let (kind, words) = match said {
            Some(words) => {
                tracing::info!("configuration read again: {}", escaped(&words));
                ("kept", words)
            }
            None => {
                tracing::info!("configuration read again: round {}", self.config.round());
                let words = format!("round {}", self.config.round());
                match replaced {
                    Some(r) => ("replaced", r),
                    None => ("file", words),
                }
            }
        };
        if let Some(conn) = &self.connection {
            bus::say_reloaded(conn, round, kind, &words).await;
        }
    }

    /// The round that stands: what `ctl` set, else the configuration's.
    fn round(&self) -> u32 {
        self.ctl
            .as_ref()
            .map_or_else(|| self.config.round(), |c| c.round_or(&self.config))
    }

    /// The number each board's next games take (as `reconfigure` finds it).
    fn numbers(&self) -> Vec<u32> {
        self.slots
            .iter()
            .map(|s| {
                let serial = s.snapshot.borrow().serial_number.clone();
                let serial = (!serial.is_empty()).then_some(serial);
                self.config
                    .board(serial.as_deref(), &s.device.borrow())
                    .map_or(s.number, |b| b.number)
            })
            .collect()
    }

    /// `Manager1.SetPairings`: refused whole when a number is no board's (one
    /// present, or one the configuration lists); else each present board is
    /// given its pairing (journaled there, with who decided), and the hub keeps
    /// them for boards that come later.
    async fn set_pairings(&mut self, call: PairingsCall) {
        let PairingsCall {
            round,
            boards,
            by,
            reply,
            new_round,
        } = call;
        let numbers = self.numbers();
        let mut known: Vec<u32> = numbers
            .iter()
            .copied()
            .chain(self.config.boards.iter().map(|b| b.number))
            .collect();
        known.sort_unstable();
        known.dedup();
        let unknown: Vec<String> = boards
            .iter()
            .filter(|(n, _)| !known.contains(n))
            .map(|(n, _)| n.to_string())
            .collect();
        if !unknown.is_empty() {
            let all = if known.is_empty() {
                "the daemon has no boards yet".to_string()
            } else {
                format!("boards are {}", crate::api::board_numbers(&known))
            };
            // Every number that is no board's (issue 57: only the first was
            // named), at most ten.
            let more = match unknown.len().saturating_sub(10) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            let list = unknown[..unknown.len().min(10)].join(", ");
            let _ = reply.send(Err(Error::NoBoard(format!("no board {list}{more}: {all}"))));
            return;
        }
        // A new round: the boards the call does not name have no pairing for
        // it (the round that stands keeps its pairings).
        if new_round && round != self.round() {
            self.pairings.clear();
        }
        for (n, tags) in &boards {
            self.pairings.insert(*n, tags.clone());
        }
        let mut answers = Vec::new();
        for (i, slot) in self.slots.iter().enumerate() {
            let tags = match self.pairings.get(&numbers[i]) {
                Some(tags) if new_round || boards.iter().any(|(n, _)| *n == numbers[i]) => tags.clone(),
                Some(_) => continue,
                None if new_round => self.unpaired(slot),
                None => continue,
            };
            let (tx, rx) = tokio::sync::oneshot::channel();
            let cmd = Decision::SetPairing(round, tags);
            if slot
                .input
                .send(Input::Command((
                    cmd,
                    crate::api::Asker {
                        by: by.clone(),
                        door: crate::api::history::Door::Bus,
                        force: false,
                    },
                    tx,
                )))
                .await
                .is_ok()
            {
                answers.push((slot.id.clone(), rx));
            }
        }
        let mut set = self
            .ctl
            .take()
            .unwrap_or_else(|| SetByCtl::over(&self.config, Default::default()));
        if round != 0 {
            set.round = Some(round);
        }
        set.via = if new_round { "ctl round" } else { "ctl pairings" }.into();
        set.pairings = self.pairings.clone();
        if let Err(e) = set.save(&self.config.state_dir()) {
            tracing::warn!(
                "cannot keep the pairings `ctl pairings` set in {} ({e}): after a restart the configuration's stand",
                self.config.state_dir().display()
            );
        }
        self.ctl = Some(set);
        let mut result = Ok(());
        for (id, rx) in answers {
            let r = match tokio::time::timeout(Duration::from_secs(10), rx).await {
                Ok(Ok(r)) => r,
                Ok(Err(_)) => Err(Error::Unavailable(format!("board {id}: its task has stopped"))),
                Err(_) => Err(Error::Unavailable(format!("board {id} did not answer in 10 s"))),
            };
            if let Err(e) = r {
                tracing::error!("SetPairings: board {id}: {}", escaped(&e.to_string()));
                result = Err(e);
            }
        }
        let _ = reply.send(result);
    }

    /// The pairing of a board a new round names no players for: the
    /// configuration's `[[board]]` names, else `?`.
    fn unpaired(&self, slot: &Slot) -> std::collections::BTreeMap<String, String> {
        let serial = slot.snapshot.borrow().serial_number.clone();
        let serial = (!serial.is_empty()).then_some(serial);
        let entry = self.config.board(serial.as_deref(), &slot.device.borrow());
        let name = |n: Option<&String>| n.cloned().unwrap_or_else(|| "?".into());
        [
            ("White".to_string(), name(entry.and_then(|b| b.white.as_ref()))),
            ("Black".to_string(), name(entry.and_then(|b| b.black.as_ref()))),
        ]
        .into()
    }

    /// The boards of the daemon's start, on `paths`. When the configuration
    /// names boards by serial number, a board whose device it does not name is
    /// asked its serial number first (all at once, as a board that appears
    /// later is): it then has its configured number from its first
    /// publication. (Issue 57: such boards took the numbers after the
    /// configured ones, and `ctl watch` called boards 1-4 5-8, suggesting
    /// commands for the wrong boards.)
    pub(crate) async fn add_all(&mut self, paths: Vec<PathBuf>) -> Result<(), DaemonError> {
        let by_serial = self.config.boards.iter().any(|b| b.serial.is_some());
        let mut asked = tokio::task::JoinSet::new();
        for (i, path) in paths.iter().enumerate() {
            if by_serial && self.config.board(None, path).is_none() {
                let path = path.clone();
                asked.spawn(async move { (i, probe_serial(&path).await) });
            }
        }
        let mut serials = vec![None; paths.len()];
        while let Some(answer) = asked.join_next().await {
            if let Ok((i, serial)) = answer {
                serials[i] = serial;
            }
        }
        for (path, serial) in paths.into_iter().zip(serials) {
            self.add(path, serial.as_deref()).await?;
        }
        Ok(())
    }

    /// A device that appeared in the watched directory.
    async fn appeared(&mut self, path: PathBuf) {
        if self.slots.iter().any(|s| *s.device.borrow() == path) {
            // A board's own device back: its line opens it again by itself.
            return;
        }
        let serial = probe_serial(&path).await;
        if let Some(serial) = &serial {
            let away = self.slots.iter().find(|s| {
                let snap = s.snapshot.borrow();
                !snap.connected && snap.serial_number == *serial
            });
            if let Some(slot) = away {
                tracing::info!(
                    "board {} (serial number {serial}) is back on {}",
                    slot.id,
                    path.display()
                );
                let _ = slot.device.send(path);
                return;
            }
        }
        tracing::info!("new board on {}", path.display());
        if let Err(e) = self.add(path.clone(), serial.as_deref()).await {
            tracing::error!("{}: cannot bridge it: {e}", path.display());
        }
    }

    /// Runs until stop: takes boards appearing in `dir` (when given), then waits
    /// for every board's task to flush and end.
    pub(crate) async fn run(mut self, dir: Option<PathBuf>) {
        let (found_tx, found) = mpsc::channel::<PathBuf>(16);
        let mut found = Some(found);
        let watcher = dir.map(|d| {
            tokio::spawn(async move {
                if let Err(e) = watch_dir(&d, found_tx).await {
                    tracing::error!("{}: cannot watch for boards: {e}", d.display());
                }
            })
        });
        let mut stop = self.stop.clone();
        let mut calls = self.pairings_calls.take();
        loop {
            let next_call = async {
                match &mut calls {
                    Some(c) => c.recv().await,
                    None => std::future::pending().await,
                }
            };
            let next_found = async {
                match &mut found {
                    Some(f) => f.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                p = next_found => match p {
                    Some(p) => self.appeared(p).await,
                    // No watcher (or it failed): nothing more to take.
                    None => found = None,
                },
                call = next_call => match call {
                    Some(call) => self.set_pairings(call).await,
                    None => calls = None,
                },
                c = self.reload.recv() => match c {
                    Some(c) => self.reconfigure(c).await,
                    None => { let _ = stop.changed().await; break; }
                },
                _ = stop.changed() => break,
            }
        }
        if let Some(w) = watcher {
            w.abort();
        }
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
    }

    /// Waits until every board of the daemon's start has its first task set up
    /// (resumed from its journal), or failed to (then tried again meanwhile).
    pub(crate) async fn started(&mut self) {
        for ready in self.starting.take().unwrap_or_default() {
            let _ = ready.await;
        }
    }

    /// Stops the boards started so far (start-up failed after them).
    pub(crate) async fn abandon(mut self) {
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
    }
}

/// The serial number of the board on `path` (asked, 3 s at most); `None`, said
/// in the log, when it does not answer.
async fn probe_serial(path: &Path) -> Option<String> {
    match tokio::time::timeout(Duration::from_secs(3), crate::device::serial::probe(path)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::warn!("{}: cannot ask the board its serial number: {e}", path.display());
            None
        }
        Err(_) => {
            tracing::warn!("{}: no serial number within 3 s", path.display());
            None
        }
    }
}
