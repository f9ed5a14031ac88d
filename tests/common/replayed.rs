//! A daemon's recording against what it published: `eboard-bridge replay` of the
//! recording with no options gives, byte for byte, the jsonl of the events the
//! daemon published live for that board (the recording states the settings that
//! judged it, `docs/SENSOR-LOG.md`).

use std::path::Path;

use eboard_bridge::daemon::{Daemon, Tapped};
use tokio::sync::broadcast::error::RecvError;

/// The UCI of every move the games of replay `r` recorded, in order.
pub fn recorded_ucis(r: &eboard_bridge::output::replay::Replay) -> Vec<String> {
    r.core
        .games()
        .flat_map(|g| g.moves.iter().map(|m| m.uci.clone()))
        .collect()
}

/// Collects every event the daemon publishes from its start until it stops (the
/// task ends when the daemon's event channel closes). Fails the test if it fell
/// behind and lost events: the comparison would then prove nothing.
pub fn collect(daemon: &Daemon) -> tokio::task::JoinHandle<Vec<Tapped>> {
    let mut rx = daemon
        .events_since_start()
        .expect("the daemon's events since its start, taken once");
    tokio::spawn(async move {
        let mut all = Vec::new();
        loop {
            match rx.recv().await {
                Ok(t) => all.push(t),
                Err(RecvError::Closed) => break,
                Err(RecvError::Lagged(n)) => panic!("the event collector lost {n} events"),
            }
        }
        all
    })
}

/// The jsonl of the events `live` has for `board`, as `replay --format jsonl`
/// prints events.
pub fn live_jsonl(live: &[Tapped], board: &str) -> String {
    let mine: Vec<_> = live
        .iter()
        .filter(|t| t.board == board)
        .map(|t| t.event.clone())
        .collect();
    eboard_bridge::output::replay::jsonl(&mine)
}

/// `eboard-bridge replay --format jsonl RECORDING`, no other option.
pub fn replay_jsonl(recording: &Path) -> String {
    let out = super::output_within(
        std::process::Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .args(["replay", "--format", "jsonl"])
            .arg(recording),
        120,
        "eboard-bridge replay of a recording",
    );
    assert!(
        out.status.success(),
        "replay of {}: {}",
        recording.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("replay prints UTF-8")
}

/// The events `replay --format jsonl RECORDING` prints, each line read as JSON
/// (a line that is not JSON is passed over).
pub fn replayed_events(recording: &Path) -> Vec<serde_json::Value> {
    replay_jsonl(recording)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .collect()
}

/// Asserts that the recording of `board` (a daemon stopped, its events `live`)
/// replays with no options to the jsonl that was published live, byte for
/// byte. Returns how many events that is (a caller may check it is not none).
pub fn assert_replays_as_published(recording: &Path, board: &str, live: &[Tapped]) -> usize {
    match replay_difference(recording, board, live) {
        Ok(n) => n,
        Err(e) => panic!("{e}"),
    }
}

/// The same, as a result: how many events agree, or where the first one that
/// does not is.
pub fn replay_difference(recording: &Path, board: &str, live: &[Tapped]) -> Result<usize, String> {
    let published = live_jsonl(live, board);
    let replayed = replay_jsonl(recording);
    if replayed == published {
        return Ok(published.lines().count());
    }
    let (p, r): (Vec<&str>, Vec<&str>) = (published.lines().collect(), replayed.lines().collect());
    let first = p
        .iter()
        .zip(&r)
        .position(|(a, b)| a != b)
        .unwrap_or(p.len().min(r.len()));
    Err(format!(
        "{board}: replay of {} with no options is not what was published ({} events live, {} replayed); first difference at event {}:\n  live:   {}\n  replay: {}",
        recording.display(),
        p.len(),
        r.len(),
        first + 1,
        p.get(first).unwrap_or(&"(none)"),
        r.get(first).unwrap_or(&"(none)")
    ))
}
