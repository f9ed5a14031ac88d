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
//!
//! Each `games.pgn` written is also handed, as the very text written, to the
//! task that pushes rounds to lichess when there is one ([`RoundsOut`]); a
//! round it asks for is written again as it stands (and handed over), so that
//! after a restart lichess gets the round whole even when no move comes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

mod mailbox;
#[cfg(test)]
mod writer_tests;

use crate::api::lichess::{GameSpan, RoundPgn, RoundsOut};
use crate::api::throttle::{Throttle, more};
pub use crate::api::{GameKey, LiveMsg};
pub use mailbox::{Games, Inbox, mailbox};

/// The shortest time between two writes of the folder's game files (a batch
/// holds the latest state of every game that changed meanwhile).
pub const FILE_EVERY: Duration = Duration::from_secs(1);

/// The shortest time between two writes of a round's `games.pgn`.
pub const COMBINED_EVERY: Duration = Duration::from_secs(1);

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
    games: BTreeMap<u32, BTreeMap<(u32, u32), String>>,
    /// Plies of the files found on disk, not yet matched by the game sent for them.
    floors: HashMap<GameKey, usize>,
    errors: Throttle,
    held: Throttle,
    /// Rounds whose `games.pgn` is behind their game files.
    stale: BTreeSet<u32>,
    written: Written,
    /// Where each `games.pgn` written goes besides the disk (the pushes to lichess).
    rounds: Option<mpsc::UnboundedSender<RoundPgn>>,
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
            games: BTreeMap::new(),
            floors: HashMap::new(),
            errors: Throttle::default(),
            held: Throttle::default(),
            stale: BTreeSet::new(),
            written: Written::default(),
            rounds: None,
        }
    }

    /// The games of round `round`, read from its folder the first time (the
    /// files written before a restart). A round found with games on disk has
    /// its `games.pgn` written again once: the daemon may have stopped between
    /// a game file's write and the round's (seed 1157: SIGKILL 0.1 s after
    /// the arbiter's result, `game-2.pgn` said 1/2-1/2 and `games.pgn` `*`
    /// for good, since the restarted board's game, the same text, changed no
    /// file).
    fn round(&mut self, round: u32) -> &mut BTreeMap<(u32, u32), String> {
        if !self.games.contains_key(&round) {
            let mut games = BTreeMap::new();
            let dir = round_dir(&self.out, round);
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                let Some(key) = GameKey::parse(round, &name) else {
                    continue;
                };
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    self.floors.insert(key, count_plies(&text));
                    games.insert((key.board, key.index), text);
                }
            }
            if !games.is_empty() {
                self.stale.insert(round);
            }
            self.games.insert(round, games);
        }
        self.games.entry(round).or_default()
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

    /// Round `round` asked for again (by the pushes to lichess): its
    /// `games.pgn` is written with the next ones, when it has a game.
    fn ask(&mut self, round: u32) {
        if !self.round(round).is_empty() {
            self.stale.insert(round);
        }
    }

    /// Rewrites the `games.pgn` of every round changed since the last time, and
    /// hands each text written to the pushes to lichess.
    fn write_combined(&mut self) {
        for round in std::mem::take(&mut self.stale) {
            let mut combined = String::new();
            let mut games = Vec::new();
            for (&(board, index), text) in self.round(round).iter() {
                let start = combined.len();
                combined.push_str(text);
                games.push(GameSpan {
                    board,
                    index,
                    start,
                    end: combined.len(),
                });
            }
            let path = round_dir(&self.out, round).join("games.pgn");
            self.written.combined += 1;
            if let Err(e) = write_atomic(&path, &combined) {
                self.error(&path, e);
            }
            if let Some(tx) = &self.rounds {
                let _ = tx.send(RoundPgn {
                    round,
                    text: combined.into(),
                    games,
                });
            }
        }
    }
}

/// Runs the writer until every sender is gone; the last state is on disk then.
///
/// The channel is drained all the time, into one pending state per game (the
/// latest wins), also while a batch is being written: a board never waits for
/// the disk. The pending games are written at most every [`FILE_EVERY`], the
/// rounds' `games.pgn` at most every [`COMBINED_EVERY`]. With `rounds`, each
/// `games.pgn` written goes there too, and a round asked for there is written
/// again with the next ones.
pub async fn run(out: PathBuf, mut games: Inbox, rounds: Option<RoundsOut>) -> Written {
    let mut folder = Folder::new(out);
    let mut asks = rounds.map(|r| {
        folder.rounds = Some(r.pgn);
        r.asked
    });
    // Rounds asked for, not yet handed to the folder.
    let mut asked: BTreeSet<u32> = BTreeSet::new();
    let mut folder = Some(folder);
    // The batch being written, on the blocking pool; it gives the folder back.
    let mut job: Option<tokio::task::JoinHandle<Folder>> = None;
    let mut pending: BTreeMap<GameKey, LiveMsg> = BTreeMap::new();
    // When the game files and `games.pgn` were last written.
    let mut files_at: Option<Instant> = None;
    let mut combined_at: Option<Instant> = None;
    let mut open = true;
    loop {
        let stale = folder.as_ref().is_some_and(|f| !f.stale.is_empty()) || !asked.is_empty();
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
            r = async {
                match asks.as_mut() {
                    Some(a) => a.recv().await,
                    None => std::future::pending().await,
                }
            }, if open => match r {
                Some(round) => {
                    asked.insert(round);
                }
                None => asks = None,
            },
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
                let asked = if combine { std::mem::take(&mut asked) } else { BTreeSet::new() };
                // The writing blocks: on the blocking pool, one batch at a time.
                job = Some(tokio::task::spawn_blocking(move || {
                    f.apply(batch);
                    for round in asked {
                        f.ask(round);
                    }
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

    #[test]
    fn each_games_pgn_written_goes_to_the_pushes_as_written_and_a_round_asked_for_again() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().to_path_buf();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut f = Folder::new(out.clone());
        f.rounds = Some(tx);
        f.apply(vec![game(1, 2, 1, 3), game(1, 1, 1, 2), game(1, 1, 2, 1)]);
        f.write_combined();
        let sent = rx.try_recv().unwrap();
        let on_disk = std::fs::read_to_string(out.join("round-1/games.pgn")).unwrap();
        assert_eq!(&*sent.text, on_disk.as_str(), "the very text written");
        let order: Vec<(u32, u32)> = sent.games.iter().map(|g| (g.board, g.index)).collect();
        assert_eq!(order, [(1, 1), (1, 2), (2, 1)]);
        for g in &sent.games {
            let file = GameKey {
                round: 1,
                board: g.board,
                index: g.index,
            }
            .file_name();
            let text = std::fs::read_to_string(out.join("round-1").join(file)).unwrap();
            assert_eq!(&sent.text[g.start..g.end], text);
        }
        assert!(rx.try_recv().is_err());
        // Restarted: a round asked for is sent whole from what is on disk; a
        // round without a game is not.
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut f = Folder::new(out.clone());
        f.rounds = Some(tx);
        f.ask(1);
        f.ask(9);
        f.write_combined();
        let again = rx.try_recv().unwrap();
        assert_eq!(again.round, 1);
        assert_eq!(again.text, sent.text);
        assert!(rx.try_recv().is_err());
        assert!(!out.join("round-9").exists());
    }
}
