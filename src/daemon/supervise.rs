//! Boards fail alone. Each board's task runs under a supervisor of its own, in
//! the board's own tokio task: it resumes the board from its journal there (not
//! in the hub, where a panic would stop every board and the daemon's start), and
//! catches a panic of the board's task (a bug: the rules core never panics on
//! input by design):
//!
//! - a panic while the board runs restarts it from its journal (the moves on
//!   disk come back; what the board did meanwhile is found from a fresh dump,
//!   as after any reconnect), after a back-off that doubles from 0.5 s up to
//!   30 s, at most `MAX_RESTARTS` times in a row (a board that ran calmly for
//!   10 minutes starts counting again); past that the board is stopped;
//! - a journal that panics while it is resumed twice in a row is moved aside
//!   (renamed `NAME.quarantined-YYYYMMDDTHHMMSSZ`, nothing deleted) and the board
//!   starts a fresh journal;
//! - each of these is said in the log (`error`, with the board and the panic's
//!   message) and in the board's `Fault` property (D-Bus, `/api/boards`, MQTT);
//!   a stopped board answers every call with `Unavailable` and that text.
//!
//! The board's input channel, its publisher and its line belong to the
//! supervisor, so a new task takes them over; the line is opened again for it
//! (its start-up commands and a dump put the new task in step with the board).
//! Every other board runs on: each has its own task and supervisor.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};

use super::Input;
use super::board::{BoardSetup, BoardTask, BoardUpdate};
use crate::api::{Error, Sink};
use crate::bus::Publisher;
use crate::log::clip_to;

/// Restarts in a row (without 10 calm minutes between) before a board is stopped.
pub const MAX_RESTARTS: u32 = 5;
/// The wait before the first restart; it doubles with each one in a row.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait before a restart.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A board that ran this long without a panic starts counting its restarts again.
pub const CALM: Duration = Duration::from_secs(600);
/// What a journal moved aside is renamed to: its name, this, and the time.
pub const QUARANTINE_SUFFIX: &str = ".quarantined-";

/// One board's supervisor: what outlives the board's task.
pub(super) struct Supervisor {
    /// The setup the board was added with.
    pub setup: BoardSetup,
    /// The configuration read again (the latest `Reload` the board was sent).
    pub updates: watch::Receiver<Option<BoardUpdate>>,
    /// The board's device: sent again to open its line again for a new task.
    pub device: watch::Sender<PathBuf>,
    pub outgoing: mpsc::Sender<Vec<u8>>,
    pub publisher: Arc<Publisher>,
    /// Where the board's publications go besides D-Bus (the daemon's list).
    pub sinks: Vec<Arc<dyn Sink>>,
    pub input: mpsc::Receiver<Input>,
    pub stop: watch::Receiver<bool>,
    /// Told once the board's first task is set up (or failed to be), so that the
    /// daemon's start waits for every board's resume, as it always did.
    pub ready: Option<oneshot::Sender<()>>,
}

/// What went wrong with a board so far, as the `Fault` property shows it.
#[derive(Default)]
struct Faults {
    /// The journal moved aside (kept for as long as the daemon runs).
    moved: Option<String>,
    /// The last panic or failure.
    last: Option<String>,
}

impl Faults {
    fn text(&self) -> String {
        [&self.moved, &self.last]
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl Supervisor {
    /// Runs the board until the daemon stops.
    pub(super) async fn run(mut self) {
        let id = self.setup.id.clone();
        let mut faults = Faults::default();
        // Panics and failures in a row, and those of them while resuming.
        let mut in_a_row = 0u32;
        let mut resume_panics = 0u32;
        let mut reopen = false;
        loop {
            if *self.stop.borrow() {
                break;
            }
            let setup = self.current_setup();
            let recording = setup.recording.clone();
            let (outgoing, publisher, sinks) =
                (self.outgoing.clone(), self.publisher.clone(), self.sinks.clone());
            let made = std::panic::catch_unwind(AssertUnwindSafe(|| {
                BoardTask::new(setup, outgoing, publisher, sinks)
            }));
            // The daemon's start waits for the first try only: a board that
            // fails is tried again while the others are served.
            if let Some(ready) = self.ready.take() {
                let _ = ready.send(());
            }
            let task = match made {
                Ok(Ok(task)) => task,
                Ok(Err(e)) => {
                    // Its journal cannot be opened or made (a disk, rights).
                    in_a_row += 1;
                    faults.last = Some(format!("cannot open its journal: {e}"));
                    if !self.again(&mut faults, in_a_row).await {
                        break;
                    }
                    continue;
                }
                Err(panic) => {
                    let why = panic_text(&*panic);
                    resume_panics += 1;
                    in_a_row += 1;
                    if resume_panics >= 2 && recording.exists() {
                        resume_panics = 0;
                        in_a_row = 0;
                        match quarantine(&recording) {
                            Ok(to) => {
                                tracing::error!(
                                    board = %id,
                                    "board {id}: its journal {} made the rules core panic twice while resuming ({}): \
                                     moved aside to {}; the board starts a fresh journal (its earlier games: \
                                     eboard-bridge replay {})",
                                    recording.display(),
                                    crate::log::escaped(&why),
                                    to.display(),
                                    to.display()
                                );
                                faults.moved = Some(format!(
                                    "its journal made the rules core panic twice while resuming ({why}): moved aside to {}, a fresh journal started",
                                    to.display()
                                ));
                                faults.last = None;
                                continue;
                            }
                            Err(e) => {
                                faults.last = Some(format!(
                                    "its journal {} made the rules core panic twice while resuming ({why}) and cannot be moved aside: {e}",
                                    recording.display()
                                ));
                                self.stopped(&faults).await;
                                return;
                            }
                        }
                    }
                    faults.last = Some(format!("resuming its journal panicked ({why})"));
                    if !self.again(&mut faults, in_a_row).await {
                        break;
                    }
                    continue;
                }
            };
            resume_panics = 0;
            if reopen {
                // The line's `Connected` went to the task that panicked: the line
                // is opened again, so that the new task sets the board up.
                self.device.send_modify(|_| {});
            }
            let task = task.with_fault(faults.text());
            let started = Instant::now();
            let ran = CatchUnwind(Box::pin(task.run(&mut self.input, self.stop.clone()))).await;
            let Err(panic) = ran else {
                // Stopped, or every sender gone.
                break;
            };
            reopen = true;
            if started.elapsed() >= CALM {
                in_a_row = 0;
            }
            in_a_row += 1;
            faults.last = Some(format!(
                "its task panicked ({}) at {}",
                panic_text(&*panic),
                super::rfc3339_now()
            ));
            if !self.again(&mut faults, in_a_row).await {
                break;
            }
        }
        if let Some(ready) = self.ready.take() {
            let _ = ready.send(());
        }
    }

    /// The board's setup now: as added, with the configuration read since and
    /// the device it is on.
    fn current_setup(&self) -> BoardSetup {
        let mut setup = self.setup.clone();
        if let Some(u) = self.updates.borrow().clone() {
            setup.configured = u;
        }
        setup.device = self.device.borrow().clone();
        setup
    }

    /// After the `n`th failure in a row: says so, shows it, and waits the
    /// back-off. False when the daemon stops meanwhile or the board is stopped
    /// (past `MAX_RESTARTS`).
    async fn again(&mut self, faults: &mut Faults, n: u32) -> bool {
        let id = &self.setup.id;
        let what = faults.last.clone().unwrap_or_default();
        if n > MAX_RESTARTS {
            faults.last = Some(format!(
                "{what}; stopped after {MAX_RESTARTS} restarts in a row (restart the daemon once the cause is found)"
            ));
            self.stopped(faults).await;
            return false;
        }
        let wait = backoff(n);
        tracing::error!(
            board = %id,
            "board {id}: {}; starting it again from its journal in {:.1} s (restart {n} of at most {MAX_RESTARTS} in a row); the other boards run on",
            crate::log::escaped(&what),
            wait.as_secs_f64()
        );
        faults.last = Some(format!(
            "{what}; restarted from its journal (restart {n} in a row)"
        ));
        self.show(faults).await;
        tokio::select! {
            _ = tokio::time::sleep(wait) => true,
            _ = self.stop.wait_for(|s| *s) => false,
        }
    }

    /// Publishes the board's last snapshot with `faults` shown.
    async fn show(&self, faults: &Faults) {
        let mut snap = self.publisher.last();
        snap.fault = faults.text();
        self.publisher.publish(snap).await;
    }

    /// The board is stopped: said, shown, and every call to it answered
    /// `Unavailable` with why, until the daemon stops.
    async fn stopped(&mut self, faults: &Faults) {
        let id = self.setup.id.clone();
        let text = faults.text();
        tracing::error!(
            board = %id,
            "board {id} is stopped: {}; the other boards run on",
            crate::log::escaped(&text)
        );
        self.show(faults).await;
        if let Some(ready) = self.ready.take() {
            let _ = ready.send(());
        }
        loop {
            tokio::select! {
                msg = self.input.recv() => match msg {
                    Some(Input::Command((_, _, reply))) => {
                        let _ = reply.send(Err(Error::Unavailable(format!("board {id} is stopped: {text}"))));
                    }
                    // The line's bytes and the configuration have nobody to go to.
                    Some(_) => {}
                    None => return,
                },
                _ = self.stop.wait_for(|s| *s) => return,
            }
        }
    }
}

/// A future whose panic comes back as an `Err` (with its payload) instead of
/// unwinding further. What the future owns is dropped by the unwinding; what it
/// borrows (the board's input channel) stays with the caller.
struct CatchUnwind<F>(std::pin::Pin<Box<F>>);

impl<F: std::future::Future> std::future::Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn std::any::Any + Send>>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(v)) => std::task::Poll::Ready(Ok(v)),
            Err(panic) => std::task::Poll::Ready(Err(panic)),
        }
    }
}

/// The wait before the `n`th restart in a row (from 1).
pub fn backoff(n: u32) -> Duration {
    let doubled = FIRST_BACKOFF.saturating_mul(1u32 << n.saturating_sub(1).min(16));
    doubled.min(MAX_BACKOFF)
}

/// A panic's message, clipped.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    clip_to(&text, 300).to_string()
}

/// Moves a journal aside: renamed `NAME.quarantined-YYYYMMDDTHHMMSSZ` (`-2`,
/// `-3`, ... after it if that name is taken) in its folder; nothing is deleted.
pub fn quarantine(path: &Path) -> std::io::Result<PathBuf> {
    let stamp: String = super::rfc3339_now()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let base = path.with_file_name(format!("{name}{QUARANTINE_SUFFIX}{stamp}"));
    let mut to = base.clone();
    let mut n = 2;
    while std::fs::symlink_metadata(&to).is_ok() {
        to = PathBuf::from(format!("{}-{n}", base.display()));
        n += 1;
    }
    std::fs::rename(path, &to)?;
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_back_off_doubles_up_to_its_cap() {
        let waits: Vec<u64> = (1..=8).map(|n| backoff(n).as_millis() as u64).collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }

    #[test]
    fn a_journal_moved_aside_keeps_its_bytes_and_never_overwrites_another() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("board0.esl");
        std::fs::write(&journal, "# eboard-sensor-log 1\n0 note one\n").unwrap();
        let first = quarantine(&journal).unwrap();
        assert!(!journal.exists());
        let name = first.file_name().unwrap().to_string_lossy().to_string();
        assert!(name.starts_with("board0.esl.quarantined-"), "{name}");
        assert_eq!(
            std::fs::read_to_string(&first).unwrap(),
            "# eboard-sensor-log 1\n0 note one\n"
        );
        // A second one within the same second gets a name of its own.
        std::fs::write(&journal, "# eboard-sensor-log 1\n0 note two\n").unwrap();
        let second = quarantine(&journal).unwrap();
        assert_ne!(first, second);
        assert_eq!(
            std::fs::read_to_string(&first).unwrap(),
            "# eboard-sensor-log 1\n0 note one\n"
        );
        assert_eq!(
            std::fs::read_to_string(&second).unwrap(),
            "# eboard-sensor-log 1\n0 note two\n"
        );
    }
}
