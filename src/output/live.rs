//! Broadcast files, in the layout broadcast tools read from DGT's software:
//!
//! - `<out>/round-N/game-M.pgn`: the game of board M in round N;
//! - `<out>/round-N/game-M-K.pgn`: the K-th game of board M in round N, when a
//!   board has more than one in a round (a game abandoned and started again, a
//!   game the arbiter replaced with `NewGame`): a game never replaces another;
//! - `<out>/round-N/games.pgn`: every game of the round, by board, then by K.
//!
//! One task owns the folder; boards hand it their games' PGN (`LiveMsg`) through
//! a mailbox ([`mailbox`]) that keeps the latest change of each game: a board
//! never waits for it, the last state of a game is never lost, and what waits is
//! bounded by the number of games, however slow the disk. The writing itself runs on a blocking thread, one batch at a time, never on the
//! runtime's workers. Changes are coalesced: the latest state of a game wins, a
//! game's file is written at most every [`FILE_EVERY`], and a round's `games.pgn`
//! at most every [`COMBINED_EVERY`] (not for every move of every board). Files are
//! replaced atomically (written beside, synced, then renamed), so a reader never
//! sees half a file. `games.pgn` is made from every game file of the round, those
//! written before a restart included. When the daemon stops, everything sent is
//! written before the task ends.
//!
//! A resume never publishes fewer moves than were published: a game file found on
//! disk at start is kept until the game sent for it has at least as many moves
//! (say, a recording that lost writes resumed fewer); the daemon says so.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::api::throttle::{Throttle, more};
pub use crate::api::{GameKey, LiveMsg};
use crate::api::{Publication, Sink};

/// The shortest time between two writes of the folder's game files (a batch
/// holds the latest state of every game that changed meanwhile).
pub const FILE_EVERY: Duration = Duration::from_secs(1);

/// The shortest time between two writes of a round's `games.pgn`.
pub const COMBINED_EVERY: Duration = Duration::from_secs(1);

/// The boards' side of the folder's mailbox (a sink): each game's latest change
/// waits there, a newer one replacing it, until the folder's task takes them all.
#[derive(Clone)]
pub struct Games {
    pending: Arc<Mutex<BTreeMap<GameKey, LiveMsg>>>,
    /// One wake-up at most waits: the task takes everything at once.
    wake: mpsc::Sender<()>,
}

/// The folder's task's side of the mailbox.
pub struct Inbox {
    pending: Arc<Mutex<BTreeMap<GameKey, LiveMsg>>>,
    wake: mpsc::Receiver<()>,
}

/// A mailbox for the folder's task: [`Games`] for the boards (cloned, one each),
/// [`Inbox`] for [`run`], which ends once every `Games` is gone.
pub fn mailbox() -> (Games, Inbox) {
    let pending = Arc::new(Mutex::new(BTreeMap::new()));
    let (tx, rx) = mpsc::channel(1);
    (
        Games {
            pending: pending.clone(),
            wake: tx,
        },
        Inbox { pending, wake: rx },
    )
}

fn take(pending: &Mutex<BTreeMap<GameKey, LiveMsg>>) -> Vec<LiveMsg> {
    // A map is whole between two statements: a panic elsewhere cannot leave it
    // half-changed.
    let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::take(&mut *p).into_values().collect()
}

impl Games {
    /// Hands a game's change over; never waits.
    pub fn send(&self, m: LiveMsg) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(m.key(), m);
        // Full: a wake-up is already waiting, and takes this change too.
        let _ = self.wake.try_send(());
    }
}

impl Sink for Games {
    /// The files of the games that changed (a copy of each PGN) into the mailbox.
    fn offer(&self, publication: &Arc<Publication>) {
        for m in &publication.files {
            self.send(m.clone());
        }
    }
}

impl Inbox {
    /// Every change waiting (the latest of each game), once there is one; `None`
    /// once every `Games` is gone and nothing waits.
    pub async fn recv(&mut self) -> Option<Vec<LiveMsg>> {
        match self.wake.recv().await {
            Some(()) => Some(take(&self.pending)),
            None => Some(take(&self.pending)).filter(|b| !b.is_empty()),
        }
    }
}

/// Writes `text` to `path` atomically; the folder is made when it is missing.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = match std::fs::File::create(&tmp) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            std::fs::File::create(&tmp)?
        }
        other => other?,
    };
    f.write_all(text.as_bytes())?;
    f.sync_data()?;
    std::fs::rename(&tmp, path)
}

pub fn round_dir(out: &Path, round: u32) -> PathBuf {
    out.join(format!("round-{round}"))
}

/// How many plies a PGN game's movetext holds (comments, move numbers and the
/// result left out).
pub fn count_plies(pgn: &str) -> usize {
    let mut moves = String::new();
    let mut depth = 0usize;
    for line in pgn.lines().filter(|l| !l.trim_start().starts_with('[')) {
        for c in line.chars() {
            match c {
                '{' | '(' => depth += 1,
                '}' | ')' => depth = depth.saturating_sub(1),
                _ if depth == 0 => moves.push(c),
                _ => {}
            }
        }
        moves.push(' ');
    }
    moves
        .split_whitespace()
        .filter(|t| !matches!(*t, "1-0" | "0-1" | "1/2-1/2" | "*"))
        // A move number before a move (`12.e4`, `12...`) is not a ply.
        .map(|t| t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.'))
        .filter(|t| !t.is_empty())
        .count()
}

/// The folder's state: every round's games, read from disk when the round is
/// first written.
struct Folder {
    out: PathBuf,
    rounds: BTreeMap<u32, BTreeMap<(u32, u32), String>>,
    /// Plies of the files found on disk, not yet matched by the game sent for them.
    floors: HashMap<GameKey, usize>,
    errors: Throttle,
    held: Throttle,
    /// Rounds whose `games.pgn` is behind their game files.
    stale: BTreeSet<u32>,
    written: Written,
}

/// What the writer wrote, for the record (and the tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Game files written (each synced and renamed into place).
    pub files: u64,
    /// `games.pgn` files written.
    pub combined: u64,
}

impl Folder {
    /// The folder at `out`, nothing read yet.
    fn new(out: PathBuf) -> Folder {
        Folder {
            out,
            rounds: BTreeMap::new(),
            floors: HashMap::new(),
            errors: Throttle::default(),
            held: Throttle::default(),
            stale: BTreeSet::new(),
            written: Written::default(),
        }
    }

    fn round(&mut self, round: u32) -> &mut BTreeMap<(u32, u32), String> {
        let out = &self.out;
        let floors = &mut self.floors;
        self.rounds.entry(round).or_insert_with(|| {
            let mut games = BTreeMap::new();
            let dir = round_dir(out, round);
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                let Some(key) = GameKey::parse(round, &name) else {
                    continue;
                };
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    floors.insert(key, count_plies(&text));
                    games.insert((key.board, key.index), text);
                }
            }
            games
        })
    }

    fn error(&mut self, path: &Path, e: std::io::Error) {
        if let Some(n) = self.errors.allow() {
            tracing::error!("{}: cannot write: {e}{}", path.display(), more(n));
        }
    }

    /// Applies the changes of one batch (the last word on each game wins); the
    /// rounds changed are marked for `write_combined`.
    fn apply(&mut self, batch: Vec<LiveMsg>) {
        let mut changed: BTreeMap<GameKey, Option<(usize, String)>> = BTreeMap::new();
        for m in batch {
            match m {
                LiveMsg::Game { key, plies, pgn } => changed.insert(key, Some((plies, pgn))),
                LiveMsg::Withdraw(key) => changed.insert(key, None),
            };
        }
        for (key, what) in changed {
            let dir = round_dir(&self.out, key.round);
            let path = dir.join(key.file_name());
            self.round(key.round);
            match what {
                Some((plies, pgn)) => {
                    if let Some(&floor) = self.floors.get(&key) {
                        if plies < floor {
                            if let Some(n) = self.held.allow() {
                                tracing::error!(
                                    "{}: the game has {plies} plies, the file published before the restart {floor}: the file is kept until the game has as many{}",
                                    path.display(),
                                    more(n)
                                );
                            }
                            continue;
                        }
                        self.floors.remove(&key);
                    }
                    if self.round(key.round).get(&(key.board, key.index)) == Some(&pgn) {
                        continue;
                    }
                    self.written.files += 1;
                    if let Err(e) = write_atomic(&path, &pgn) {
                        self.error(&path, e);
                    }
                    self.round(key.round).insert((key.board, key.index), pgn);
                }
                None => {
                    self.floors.remove(&key);
                    if self.round(key.round).remove(&(key.board, key.index)).is_none() {
                        continue;
                    }
                    if let Err(e) = std::fs::remove_file(&path) {
                        if e.kind() != std::io::ErrorKind::NotFound {
                            self.error(&path, e);
                        }
                    }
                }
            }
            self.stale.insert(key.round);
        }
    }

    /// Rewrites the `games.pgn` of every round changed since the last time.
    fn write_combined(&mut self) {
        for round in std::mem::take(&mut self.stale) {
            let combined: String = self.round(round).values().map(String::as_str).collect();
            let path = round_dir(&self.out, round).join("games.pgn");
            self.written.combined += 1;
            if let Err(e) = write_atomic(&path, &combined) {
                self.error(&path, e);
            }
        }
    }
}

/// Runs the writer until every sender is gone; the last state is on disk then.
///
/// The channel is drained all the time, into one pending state per game (the
/// latest wins), also while a batch is being written: a board never waits for
/// the disk. The pending games are written at most every [`FILE_EVERY`], the
/// rounds' `games.pgn` at most every [`COMBINED_EVERY`].
pub async fn run(out: PathBuf, mut games: Inbox) -> Written {
    let mut folder = Some(Folder::new(out));
    // The batch being written, on the blocking pool; it gives the folder back.
    let mut job: Option<tokio::task::JoinHandle<Folder>> = None;
    let mut pending: BTreeMap<GameKey, LiveMsg> = BTreeMap::new();
    // When the game files and `games.pgn` were last written.
    let mut files_at: Option<Instant> = None;
    let mut combined_at: Option<Instant> = None;
    let mut open = true;
    loop {
        let stale = folder.as_ref().is_some_and(|f| !f.stale.is_empty());
        if !open && job.is_none() && pending.is_empty() && !stale {
            break;
        }
        // What is due when (at once once the channel is closed).
        let due = |at: Option<Instant>, every: Duration| match (open, at) {
            (true, Some(t)) => t + every,
            _ => Instant::now(),
        };
        let files_due = (!pending.is_empty()).then(|| due(files_at, FILE_EVERY));
        let combined_due = stale.then(|| due(combined_at, COMBINED_EVERY));
        let next = match (files_due, combined_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        tokio::select! {
            m = games.recv(), if open => match m {
                Some(batch) => {
                    for m in batch {
                        pending.insert(m.key(), m);
                    }
                }
                None => open = false,
            },
            done = async {
                match job.as_mut() {
                    Some(j) => j.await,
                    None => std::future::pending().await,
                }
            } => {
                job = None;
                match done {
                    Ok(f) => folder = Some(f),
                    Err(e) => {
                        tracing::error!("the broadcast folder's writer failed: {e}");
                        return Written::default();
                    }
                }
            },
            _ = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if job.is_none() && next.is_some() => {
                let now = Instant::now();
                let write_files = files_due.is_some_and(|d| d <= now);
                let combine = combined_due.is_some_and(|d| d <= now);
                let batch: Vec<LiveMsg> = if write_files {
                    std::mem::take(&mut pending).into_values().collect()
                } else {
                    Vec::new()
                };
                if write_files {
                    files_at = Some(now);
                }
                if combine {
                    combined_at = Some(now);
                }
                let Some(mut f) = folder.take() else { continue };
                // The writing blocks: on the blocking pool, one batch at a time.
                job = Some(tokio::task::spawn_blocking(move || {
                    f.apply(batch);
                    if combine {
                        f.write_combined();
                    }
                    f
                }));
            },
        }
    }
    folder.map(|f| f.written).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip() {
        for (board, index, name) in [
            (7, 1, "game-7.pgn"),
            (7, 2, "game-7-2.pgn"),
            (12, 10, "game-12-10.pgn"),
        ] {
            let key = GameKey {
                round: 3,
                board,
                index,
            };
            assert_eq!(key.file_name(), name);
            assert_eq!(GameKey::parse(3, name), Some(key));
        }
        for other in [
            "games.pgn",
            "game-x.pgn",
            "game-7-1.pgn",
            ".game-7.pgn.tmp",
            "game-7.pgn~",
        ] {
            assert_eq!(GameKey::parse(3, other), None, "{other}");
        }
    }

    #[test]
    fn plies_are_counted_without_numbers_comments_or_results() {
        let pgn =
            "[Event \"x\"]\n[Result \"*\"]\n\n1. e4 {inferred} e5 2. Nf3 (2. f4 exf4) Nc6 3... a6 1/2-1/2\n";
        assert_eq!(count_plies(pgn), 5);
        assert_eq!(count_plies("[Event \"x\"]\n\n*\n"), 0);
        assert_eq!(count_plies("1. e4 1-0"), 1);
    }

    fn game(round: u32, board: u32, index: u32, plies: usize) -> LiveMsg {
        LiveMsg::Game {
            key: GameKey { round, board, index },
            plies,
            pgn: format!("[Round \"{round}.{board}\"]\n\n{}\n\n", "e4 ".repeat(plies)),
        }
    }

    #[test]
    fn games_are_never_replaced_and_a_shorter_resume_does_not_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().to_path_buf();
        let mut f = Folder::new(out.clone());
        f.apply(vec![game(1, 2, 1, 10), game(1, 1, 1, 3), game(1, 1, 2, 0)]);
        f.write_combined();
        let games = std::fs::read_to_string(out.join("round-1/games.pgn")).unwrap();
        assert_eq!(count_plies(&games), 13);
        // Board order, then each board's games in order.
        let order: Vec<usize> = games.match_indices("[Round").map(|(i, _)| i).collect();
        assert_eq!(order.len(), 3);
        assert!(games.find("\"1.2\"").unwrap() > games.rfind("\"1.1\"").unwrap());
        f.apply(vec![LiveMsg::Withdraw(GameKey {
            round: 1,
            board: 1,
            index: 2,
        })]);
        f.write_combined();
        assert!(!out.join("round-1/game-1-2.pgn").exists());
        // Restarted: the files on disk count; a game with fewer moves waits.
        let mut f = Folder::new(out.clone());
        f.apply(vec![game(1, 2, 1, 4)]);
        f.write_combined();
        assert_eq!(
            count_plies(&std::fs::read_to_string(out.join("round-1/game-2.pgn")).unwrap()),
            10
        );
        f.apply(vec![game(1, 2, 1, 11)]);
        f.write_combined();
        assert_eq!(
            count_plies(&std::fs::read_to_string(out.join("round-1/game-2.pgn")).unwrap()),
            11
        );
        // Once passed, a take-back is published as it is.
        f.apply(vec![game(1, 2, 1, 9)]);
        f.write_combined();
        assert_eq!(
            count_plies(&std::fs::read_to_string(out.join("round-1/game-2.pgn")).unwrap()),
            9
        );
        // A new round leaves the old one alone.
        f.apply(vec![game(2, 2, 1, 1)]);
        f.write_combined();
        assert_eq!(
            count_plies(&std::fs::read_to_string(out.join("round-1/games.pgn")).unwrap()),
            12
        );
        assert_eq!(
            count_plies(&std::fs::read_to_string(out.join("round-2/games.pgn")).unwrap()),
            1
        );
    }
}

#[cfg(test)]
mod writer_tests {
    use super::*;

    /// Sends `steps` versions of the games of boards `1..=boards` (version `k`
    /// has `k` plies), all boards' version before the next, pausing `pause`
    /// after each round of boards; returns the count sent.
    async fn send_versions(tx: &Games, steps: usize, boards: u32, pause: Option<Duration>) -> u64 {
        let mut sent = 0;
        for step in 1..=steps {
            for board in 1..=boards {
                let key = GameKey {
                    round: 1,
                    board,
                    index: 1,
                };
                let pgn = format!("[Round \"1.{board}\"]\n\n{}*\n\n", "e4 ".repeat(step));
                tx.send(LiveMsg::Game {
                    key,
                    plies: step,
                    pgn,
                });
                sent += 1;
            }
            if let Some(p) = pause {
                tokio::time::sleep(p).await;
            }
        }
        sent
    }

    /// Four boards changing their games every 5 ms for about a second: each file
    /// is written a few times a second at most, `games.pgn` about once a second,
    /// and what is on disk at the end is the last state sent for every game.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn changes_are_coalesced_and_the_last_state_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = mailbox();
        let writer = tokio::spawn(run(dir.path().to_path_buf(), rx));
        let started = std::time::Instant::now();
        let sent = send_versions(&tx, 200, 4, Some(Duration::from_millis(5))).await;
        drop(tx);
        let written = writer.await.unwrap();
        let secs = started.elapsed().as_secs_f64();
        // At most one batch per FILE_EVERY (plus the first and the last), each
        // writing the four files once.
        let batches = (secs / FILE_EVERY.as_secs_f64()).ceil() as u64 + 2;
        assert!(
            written.files <= 4 * batches,
            "{written:?} in {secs:.2} s from {sent} changes"
        );
        assert!(written.files >= 4, "{written:?}");
        let combined = (secs / COMBINED_EVERY.as_secs_f64()).ceil() as u64 + 2;
        assert!(
            written.combined <= combined && written.combined >= 1,
            "{written:?} in {secs:.2} s"
        );
        let round = dir.path().join("round-1");
        for board in 1..=4 {
            let text = std::fs::read_to_string(round.join(format!("game-{board}.pgn"))).unwrap();
            assert_eq!(count_plies(&text), 200, "board {board}");
        }
        let all = std::fs::read_to_string(round.join("games.pgn")).unwrap();
        assert_eq!(
            count_plies(&all),
            800,
            "games.pgn holds the last state of all four"
        );
    }

    /// Sixteen boards sending 800 changes at once: the mailbox keeps each game's
    /// latest, so no board waits for the disk; each file is written a couple of
    /// times, with the last state.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_board_never_waits_for_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = mailbox();
        let writer = tokio::spawn(run(dir.path().to_path_buf(), rx));
        let started = std::time::Instant::now();
        send_versions(&tx, 50, 16, None).await;
        let sending = started.elapsed();
        drop(tx);
        let written = writer.await.unwrap();
        // Held back for a batch's interval, the senders would have taken twelve.
        assert!(sending < FILE_EVERY, "800 changes sent in {sending:?}");
        assert!(written.files <= 3 * 16, "{written:?}");
        let round = dir.path().join("round-1");
        for board in 1..=16 {
            let text = std::fs::read_to_string(round.join(format!("game-{board}.pgn"))).unwrap();
            assert_eq!(count_plies(&text), 50, "board {board}");
        }
    }
}
