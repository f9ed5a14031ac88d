//! The broadcast delay's one place (issue 61, `api::delay`): every board's
//! publication comes here after the arbiter's doors have it (D-Bus inline,
//! the console's event history, the event tap); the spectators' sinks (the
//! broadcast folder and the pushes to lichess behind it, the network's event
//! history behind SSE, MQTT) and each board's public snapshot (`/api/boards`,
//! the live page, LiveChess) get it from here only, `delay` after the board's
//! task published it.
//!
//! The delays are the configuration's `[broadcast]` and `ctl delay`'s, the
//! latter journaled in `<state>/broadcast/delays.esl` (the sensor-log format,
//! as `<state>/lichess/rounds.esl`):
//!
//! - `arbiter SetBroadcastDelay 3 "15m"` (after `note decided by alice` when
//!   the caller is known): `ctl delay 3 15m`; round 0 for every round.
//! - `note configured {"delay":"15m","rounds":{"3":"30m"}}`: the
//!   configuration's when the daemon started, written when it differs from
//!   the last written.
//!
//! The latest word wins: a decision sets a round's delay (or every round's),
//! and a `configured` line that differs from the one before replaces them all
//! with the configuration's. At start the configuration is such a line: a
//! `ctl delay` made at run time survives a restart unless the configuration
//! changed since.
//!
//! At the daemon's start each board's task rebuilds its delayed view from its
//! journal (`Rebuild`): the state at the start of the window is released at
//! once, every publication since at the time the board showed it plus the
//! delay, so a restart publishes nothing early and loses nothing.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};

use crate::api::delay::{Control, Delays, Finished, Rebuild, Seed, Window, words};
use crate::api::{Error, Publication, Sink, Snapshot};
use crate::log::{DECIDED_BY, Header, Journal, LogTime, Record, RecordKind};

/// The method of a `ctl delay` record.
const METHOD: &str = "SetBroadcastDelay";
const CONFIGURED: &str = "configured ";

/// `[broadcast]` in the configuration.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BroadcastConfig {
    /// Every round's delay: `"15m"`, `"90s"`, `"off"` (the default).
    #[serde(default)]
    pub delay: Option<String>,
    /// Rounds set apart: `{ 3 = "30m", 4 = "off" }`.
    #[serde(default)]
    pub rounds: BTreeMap<String, String>,
    /// A finished game: `"delayed"` (the default: its end and result after
    /// the delay too) or `"at_end"` (published whole when it ends).
    #[serde(default)]
    pub finished: Finished,
}

impl BroadcastConfig {
    /// The delays it gives, or what is wrong.
    pub fn delays(&self) -> Result<Delays, String> {
        let default_ms = match &self.delay {
            Some(d) => crate::api::delay::parse_duration(d).map_err(|e| format!("[broadcast] delay: {e}"))?,
            None => 0,
        };
        let mut rounds = BTreeMap::new();
        for (r, d) in &self.rounds {
            let round: u32 = r
                .parse()
                .ok()
                .filter(|r| *r > 0)
                .ok_or_else(|| format!("[broadcast] rounds: `{r}` is not a round (1, 2, ...)"))?;
            let ms =
                crate::api::delay::parse_duration(d).map_err(|e| format!("[broadcast] rounds.{r}: {e}"))?;
            rounds.insert(round, ms);
        }
        Ok(Delays {
            default_ms,
            rounds,
            finished: self.finished,
        })
    }
}

fn delays_json(d: &Delays) -> String {
    let rounds: BTreeMap<String, String> = d
        .rounds
        .iter()
        .map(|(r, ms)| (r.to_string(), words(*ms)))
        .collect();
    serde_json::json!({"delay": words(d.default_ms), "rounds": rounds}).to_string()
}

fn parse_delays(json: &str, finished: Finished) -> Option<Delays> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let default_ms = crate::api::delay::parse_duration(v.get("delay")?.as_str()?).ok()?;
    let mut rounds = BTreeMap::new();
    if let Some(m) = v.get("rounds").and_then(|r| r.as_object()) {
        for (r, d) in m {
            let ms = d.as_str().and_then(|d| crate::api::delay::parse_duration(d).ok());
            if let (Ok(r), Some(ms)) = (r.parse::<u32>(), ms) {
                rounds.insert(r, ms);
            }
        }
    }
    Some(Delays {
        default_ms,
        rounds,
        finished,
    })
}

/// The journal of the delays.
struct DelayJournal {
    path: PathBuf,
    journal: Journal,
    offset_us: u64,
    started: Instant,
}

impl DelayJournal {
    /// Opens (or makes) `dir/delays.esl`, replays it and notes the
    /// configuration's delays: the journal and the delays in effect.
    fn open(dir: &Path, configured: &Delays) -> Result<(DelayJournal, Delays), String> {
        let path = dir.join("delays.esl");
        let mut delays = configured.clone();
        let mut last_configured: Option<Delays> = None;
        let (records, journal, offset_us) = crate::log::journal::open_kept(&path, || {
            let mut header = Header::default();
            header.set("source", "eboard-bridge broadcast: the delays of the rounds");
            header.set("started", &crate::daemon::rfc3339_now());
            header
        })?;
        for r in &records {
            match &r.kind {
                RecordKind::Note(text) => {
                    if let Some(c) = text
                        .strip_prefix(CONFIGURED)
                        .and_then(|j| parse_delays(j, configured.finished))
                    {
                        if last_configured.as_ref() != Some(&c) {
                            delays = c.clone();
                        }
                        last_configured = Some(c);
                    }
                }
                RecordKind::Arbiter { .. } => {
                    if let Some((round, ms)) = read_decision(&r.kind) {
                        delays.set(round, ms);
                    }
                }
                _ => {}
            }
        }
        let mut j = DelayJournal {
            path,
            journal,
            offset_us,
            started: Instant::now(),
        };
        let mut noted = configured.clone();
        noted.finished = Finished::default();
        let mut before = last_configured.clone();
        if let Some(b) = &mut before {
            b.finished = Finished::default();
        }
        if before.as_ref() != Some(&noted) {
            delays = configured.clone();
            j.write(RecordKind::Note(format!(
                "{CONFIGURED}{}",
                delays_json(configured)
            )));
            if let Err(e) = j.flush() {
                tracing::error!("{e}; the configuration's delays are noted once it works again");
            }
        }
        delays.finished = configured.finished;
        Ok((j, delays))
    }

    fn write(&mut self, kind: RecordKind) {
        let us = self.offset_us + self.started.elapsed().as_micros() as u64;
        let time = LogTime::from_micros(us.min(LogTime::MAX.micros()));
        self.journal.write(&Record { time, kind });
    }

    fn flush(&mut self) -> Result<(), String> {
        match self.journal.flush() {
            crate::log::Flushed::Failing(e) => Err(format!("{}: cannot write: {e}", self.path.display())),
            _ => Ok(()),
        }
    }
}

/// The delays' journal's record of a delay decided for a round (none: every
/// round): `arbiter SetBroadcastDelay 3 "15m"`. The one writer of it; read
/// back by [`read_decision`].
fn decision_record(round: Option<u32>, ms: u64) -> RecordKind {
    RecordKind::Arbiter {
        method: METHOD.into(),
        args: vec![
            round.unwrap_or(0).to_string(),
            serde_json::to_string(&words(ms)).unwrap_or_default(),
        ],
    }
}

/// The round (none: every round) and delay of a record
/// [`decision_record`] wrote; `None` for any other record. The one reader
/// of the delays' journal's decisions.
fn read_decision(kind: &RecordKind) -> Option<(Option<u32>, u64)> {
    let RecordKind::Arbiter { method, args } = kind else {
        return None;
    };
    if method != METHOD {
        return None;
    }
    let [round, delay] = args.as_slice() else {
        return None;
    };
    let round: u32 = serde_json::from_str(round).ok()?;
    let delay: String = serde_json::from_str(delay).ok()?;
    let ms = crate::api::delay::parse_duration(&delay).ok()?;
    Some(((round != 0).then_some(round), ms))
}

/// One board's delayed view.
struct Board {
    id: Arc<str>,
    window: Window,
    public: watch::Sender<Snapshot>,
    /// Its view was rebuilt or it has published in this run (a task
    /// restarted by its supervisor rebuilds nothing).
    started: bool,
}

struct Inner {
    delays: Delays,
    boards: HashMap<String, Board>,
}

/// The broadcast delay: a sink of every board's publications, the spectators'
/// sinks and public snapshots behind it.
pub struct Delayed {
    inner: Mutex<Inner>,
    journal: Mutex<Option<DelayJournal>>,
    /// Emptied when the daemon stops (the folder's writer ends once every
    /// mailbox of it is gone).
    spectators: Mutex<Vec<Arc<dyn Sink>>>,
    /// Wakes the release task when the next due time may have come nearer.
    wake: Notify,
}

impl Delayed {
    /// The delay with the configuration's `configured`, the journal's word
    /// over it (`state/broadcast/delays.esl`; `None`: no journal, for tests).
    pub fn open(configured: &Delays, state: Option<&Path>) -> Result<Arc<Delayed>, String> {
        let (journal, delays) = match state.map(|dir| DelayJournal::open(&dir.join("broadcast"), configured))
        {
            Some(Ok((j, d))) => (Some(j), d),
            // The boards must run: the configuration's delays, said.
            Some(Err(e)) => {
                tracing::error!(
                    "broadcast delay: {e}; the configuration's delays hold, and a ctl delay is not kept across a restart"
                );
                (None, configured.clone())
            }
            None => (None, configured.clone()),
        };
        if delays.max() > 0 {
            tracing::info!("broadcast delay: {}", delays.words());
        }
        Ok(Arc::new(Delayed {
            inner: Mutex::new(Inner {
                delays,
                boards: HashMap::new(),
            }),
            journal: Mutex::new(journal),
            spectators: Mutex::new(Vec::new()),
            wake: Notify::new(),
        }))
    }

    /// The sinks that show games to spectators (set once, before any board).
    pub fn set_spectators(&self, sinks: Vec<Arc<dyn Sink>>) {
        *self.spectators() = sinks;
    }

    /// The daemon stops, its boards have: the spectators' sinks are let go
    /// (what is still held stays held: the journals rebuild it at the next
    /// start).
    pub fn close(&self) {
        self.spectators().clear();
    }

    fn spectators(&self) -> MutexGuard<'_, Vec<Arc<dyn Sink>>> {
        self.spectators.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // Whole between two statements: a panic cannot leave it half-changed.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Board `id`'s public snapshot.
    pub fn public(&self, id: &str) -> watch::Receiver<Snapshot> {
        let mut inner = self.inner();
        board(&mut inner, id).public.subscribe()
    }

    /// Releases what is due at `now`, in order, to the spectators (the lock
    /// held, so that a board's publications never pass each other); when the
    /// next is due.
    fn release(&self, inner: &mut Inner, now: Instant) -> Option<Instant> {
        let spectators = self.spectators().clone();
        let Inner { delays, boards } = inner;
        let mut next: Option<Instant> = None;
        for b in boards.values_mut() {
            for p in b.window.due(&b.id, now, delays) {
                if let Some(s) = &p.snapshot {
                    b.public.send_replace((**s).clone());
                }
                let p = Arc::new(p);
                for s in &spectators {
                    s.offer(&p);
                }
            }
            if let Some(at) = b.window.next_due(delays) {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        next
    }

    /// Releases what is due, and again when the next is, until `stop`.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        loop {
            let next = {
                let mut inner = self.inner();
                self.release(&mut inner, Instant::now())
            };
            let sleep = async {
                match next {
                    Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = sleep => {}
                _ = self.wake.notified() => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
        // Stopping: what is held stays held; the journals rebuild it.
    }

    /// Entries held for board `id` (tests).
    pub fn held(&self, id: &str) -> usize {
        self.inner().boards.get(id).map_or(0, |b| b.window.len())
    }
}

fn board<'a>(inner: &'a mut Inner, id: &str) -> &'a mut Board {
    inner
        .boards
        .entry(id.to_string())
        .or_insert_with(|| new_board(id))
}

fn new_board(id: &str) -> Board {
    Board {
        id: id.into(),
        window: Window::default(),
        public: watch::Sender::new(Snapshot::default()),
        started: false,
    }
}

impl Sink for Delayed {
    /// Held in the board's window; what is due at once (no delay) is handed
    /// on here, on the board's task, as before the delay existed.
    fn offer(&self, p: &Arc<Publication>) {
        let mut guard = self.inner();
        let Inner { delays, boards } = &mut *guard;
        let b = boards
            .entry(p.board.to_string())
            .or_insert_with(|| new_board(&p.board));
        b.started = true;
        if b.window.passes(p, delays) {
            // No delay: on at once, the very publication, as before the delay.
            if let Some(s) = &p.snapshot {
                b.public.send_replace((**s).clone());
            }
            for s in self.spectators().iter() {
                s.offer(p);
            }
            return;
        }
        let was_empty = b.window.is_empty();
        b.window.hold(p, Instant::now(), delays.finished);
        // Due at once (a game published whole at its end): on now.
        let due = b.window.due(&b.id, Instant::now(), delays);
        if !due.is_empty() {
            let spectators = self.spectators().clone();
            for p in due {
                if let Some(s) = &p.snapshot {
                    b.public.send_replace((**s).clone());
                }
                let p = Arc::new(p);
                for s in &spectators {
                    s.offer(&p);
                }
            }
        }
        let waiting = !b.window.is_empty();
        drop(guard);
        if waiting && was_empty {
            self.wake.notify_one();
        }
    }

    fn delay(&self) -> Option<&dyn Rebuild> {
        Some(self)
    }
}

impl Rebuild for Delayed {
    fn window(&self, id: &str) -> Option<Duration> {
        let mut inner = self.inner();
        let max = inner.delays.max();
        let b = board(&mut inner, id);
        if b.started || max == 0 {
            return None;
        }
        b.started = true;
        Some(Duration::from_millis(max))
    }

    fn seed(&self, id: &str, seed: Seed) {
        let mut inner = self.inner();
        let finished = inner.delays.finished;
        let spectators = self.spectators().clone();
        let b = board(&mut inner, id);
        // The state at the window's start, as the spectators saw it then (or
        // had yet to see): out at once.
        let base = Arc::new(seed.base);
        if let Some(s) = &base.snapshot {
            b.public.send_replace((**s).clone());
        }
        b.window.start_from(base.snapshot.clone());
        for s in &spectators {
            s.offer(&base);
        }
        for (at, p) in &seed.since {
            b.window.hold(p, *at, finished);
        }
        self.release(&mut inner, Instant::now());
        drop(inner);
        self.wake.notify_one();
    }
}

impl Control for Delayed {
    fn set(&self, round: Option<u32>, ms: u64, by: Option<String>) -> Result<(), Error> {
        {
            let mut j = self.journal.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(j) = j.as_mut() {
                if let Some(by) = &by {
                    j.write(RecordKind::Note(format!("{DECIDED_BY}{by}")));
                }
                j.write(decision_record(round, ms));
                j.flush()
                    .map_err(|e| Error::Unavailable(format!("{e}; the delay is as it was")))?;
            }
        }
        let mut inner = self.inner();
        inner.delays.set(round, ms);
        tracing::info!(
            "broadcast delay{}: {} ({}), now {}",
            round.map(|r| format!(" of round {r}")).unwrap_or_default(),
            words(ms),
            by.as_deref().map_or_else(
                || "decided via D-Bus".to_string(),
                |b| format!("decided by {}", crate::log::escaped(b))
            ),
            inner.delays.words()
        );
        self.release(&mut inner, Instant::now());
        drop(inner);
        self.wake.notify_one();
        Ok(())
    }

    fn delays(&self) -> Delays {
        self.inner().delays.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(delay: &str, rounds: &[(&str, &str)]) -> Delays {
        BroadcastConfig {
            delay: Some(delay.into()),
            rounds: rounds
                .iter()
                .map(|(r, d)| (r.to_string(), d.to_string()))
                .collect(),
            finished: Finished::Delayed,
        }
        .delays()
        .unwrap()
    }

    #[test]
    fn the_configuration_reads_and_says_what_is_wrong() {
        let d = conf("15m", &[("3", "30m"), ("4", "off")]);
        assert_eq!(d.of(1), 900_000);
        assert_eq!(d.of(3), 1_800_000);
        assert_eq!(d.of(4), 0);
        let bad = BroadcastConfig {
            rounds: [("x".to_string(), "1m".to_string())].into(),
            ..Default::default()
        };
        assert!(bad.delays().unwrap_err().contains("`x` is not a round"));
        let bad = BroadcastConfig {
            delay: Some("soon".into()),
            ..Default::default()
        };
        assert!(bad.delays().unwrap_err().starts_with("[broadcast] delay: `soon`"));
    }

    #[test]
    fn a_ctl_delay_survives_a_restart_until_the_configuration_changes() {
        let dir = tempfile::tempdir().unwrap();
        let c = conf("15m", &[]);
        let d = Delayed::open(&c, Some(dir.path())).unwrap();
        assert_eq!(d.delays(), c);
        d.set(Some(3), 0, Some("alice".into())).unwrap();
        d.set(None, 20_000, None).unwrap();
        d.set(Some(2), 60_000, None).unwrap();
        drop(d);
        let text = std::fs::read_to_string(dir.path().join("broadcast/delays.esl")).unwrap();
        assert!(text.contains("note decided by alice\n"), "{text}");
        assert!(text.contains("arbiter SetBroadcastDelay 3 \"off\"\n"), "{text}");
        assert!(text.contains("arbiter SetBroadcastDelay 0 \"20s\"\n"), "{text}");
        // The same configuration: the decisions stand.
        let d = Delayed::open(&c, Some(dir.path())).unwrap();
        assert_eq!(d.delays().words(), "20s (round 2: 1m)");
        drop(d);
        // The configuration changed: it wins.
        let c2 = conf("5m", &[]);
        let d = Delayed::open(&c2, Some(dir.path())).unwrap();
        assert_eq!(d.delays(), c2);
        drop(d);
        let text = std::fs::read_to_string(dir.path().join("broadcast/delays.esl")).unwrap();
        assert_eq!(text.matches("note configured").count(), 2, "{text}");
    }
}
