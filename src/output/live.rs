//! Broadcast files, in the layout broadcast tools read from DGT's software:
//!
//! - `<out>/round-N/game-M.pgn`: the game of board M in round N;
//! - `<out>/round-N/game-M-K.pgn`: the K-th game of board M in round N, when a
//!   board has more than one in a round (a game abandoned and started again, a
//!   game the arbiter replaced with `NewGame`): a game never replaces another;
//! - `<out>/round-N/games.pgn`: every game of the round, by board, then by K.
//!
//! One task owns the folder; boards send it their games' PGN (`LiveMsg`). Files are
//! replaced atomically (written beside, then renamed), so a reader never sees half
//! a file. `games.pgn` is made from every game file of the round, those written
//! before a restart included.
//!
//! A resume never publishes fewer moves than were published: a game file found on
//! disk at start is kept until the game sent for it has at least as many moves
//! (say, a recording that lost writes resumed fewer); the daemon says so.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

use crate::daemon::throttle::{Throttle, more};

/// Which file a game goes to: round, board number, and the game's place among the
/// board's games of the round (1 for the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct GameKey {
    pub round: u32,
    pub board: u32,
    pub index: u32,
}

impl GameKey {
    /// `game-M.pgn`, or `game-M-K.pgn` for a board's K-th game of the round.
    pub fn file_name(&self) -> String {
        if self.index <= 1 {
            format!("game-{}.pgn", self.board)
        } else {
            format!("game-{}-{}.pgn", self.board, self.index)
        }
    }

    /// The key a file name in round `round` stands for.
    pub fn parse(round: u32, name: &str) -> Option<GameKey> {
        let stem = name.strip_prefix("game-")?.strip_suffix(".pgn")?;
        let (board, index) = match stem.split_once('-') {
            Some((b, k)) => (b.parse().ok()?, k.parse().ok().filter(|k| *k > 1)?),
            None => (stem.parse().ok()?, 1),
        };
        Some(GameKey { round, board, index })
    }
}

/// What a board tells the folder's task.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveMsg {
    /// A game's PGN, with how many plies it holds.
    Game { key: GameKey, plies: usize, pgn: String },
    /// A game with no moves gave its place up (it was taken to another round, or
    /// replaced before a move was made): its file goes.
    Withdraw(GameKey),
}

/// Writes `text` to `path` atomically.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
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

    /// Applies the changes of one batch (the last word on each game wins) and
    /// rewrites the rounds' `games.pgn`.
    fn apply(&mut self, batch: Vec<LiveMsg>) {
        let mut changed: BTreeMap<GameKey, Option<(usize, String)>> = BTreeMap::new();
        for m in batch {
            match m {
                LiveMsg::Game { key, plies, pgn } => changed.insert(key, Some((plies, pgn))),
                LiveMsg::Withdraw(key) => changed.insert(key, None),
            };
        }
        let mut rounds = BTreeSet::new();
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
            rounds.insert(key.round);
        }
        for round in rounds {
            let combined: String = self.round(round).values().map(String::as_str).collect();
            let path = round_dir(&self.out, round).join("games.pgn");
            if let Err(e) = write_atomic(&path, &combined) {
                self.error(&path, e);
            }
        }
    }
}

/// Runs the writer until every sender is gone; the last state is on disk then.
pub async fn run(out: PathBuf, mut games: mpsc::Receiver<LiveMsg>) {
    let mut folder = Folder::new(out);
    while let Some(first) = games.recv().await {
        // Take everything waiting, then write each game once and each round's
        // `games.pgn` once.
        let mut batch = vec![first];
        while let Ok(g) = games.try_recv() {
            batch.push(g);
        }
        folder.apply(batch);
    }
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
        assert!(!out.join("round-1/game-1-2.pgn").exists());
        // Restarted: the files on disk count; a game with fewer moves waits.
        let mut f = Folder::new(out.clone());
        f.apply(vec![game(1, 2, 1, 4)]);
        assert_eq!(
            count_plies(&std::fs::read_to_string(out.join("round-1/game-2.pgn")).unwrap()),
            10
        );
        f.apply(vec![game(1, 2, 1, 11)]);
        assert_eq!(
            count_plies(&std::fs::read_to_string(out.join("round-1/game-2.pgn")).unwrap()),
            11
        );
        // Once passed, a take-back is published as it is.
        f.apply(vec![game(1, 2, 1, 9)]);
        assert_eq!(
            count_plies(&std::fs::read_to_string(out.join("round-1/game-2.pgn")).unwrap()),
            9
        );
        // A new round leaves the old one alone.
        f.apply(vec![game(2, 2, 1, 1)]);
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
