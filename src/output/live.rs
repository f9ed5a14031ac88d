//! Broadcast files, in the layout broadcast tools read from DGT's software:
//! `<out>/round-N/game-M.pgn` per board (rewritten after every move) and
//! `<out>/round-N/games.pgn` with every board's game in board order. One task owns
//! the folder; boards send it their game's PGN. Files are replaced atomically
//! (written beside, then renamed), so a reader never sees half a file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

/// One board's game, as PGN.
#[derive(Debug, Clone)]
pub struct LiveGame {
    pub board: u32,
    pub pgn: String,
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

/// Runs the writer until every sender is gone; the last state is on disk then.
pub async fn run(out: PathBuf, round: u32, mut games: mpsc::Receiver<LiveGame>) {
    let dir = round_dir(&out, round);
    let mut all: BTreeMap<u32, String> = BTreeMap::new();
    while let Some(first) = games.recv().await {
        // Take everything waiting, then write once per board and once combined.
        let mut batch = vec![first];
        while let Ok(g) = games.try_recv() {
            batch.push(g);
        }
        let mut changed = BTreeMap::new();
        for g in batch {
            changed.insert(g.board, g.pgn);
        }
        for (board, pgn) in changed {
            let path = dir.join(format!("game-{board}.pgn"));
            if let Err(e) = write_atomic(&path, &pgn) {
                tracing::error!("{}: cannot write: {e}", path.display());
            }
            all.insert(board, pgn);
        }
        let combined: String = all.values().map(String::as_str).collect();
        let path = dir.join("games.pgn");
        if let Err(e) = write_atomic(&path, &combined) {
            tracing::error!("{}: cannot write: {e}", path.display());
        }
    }
}
