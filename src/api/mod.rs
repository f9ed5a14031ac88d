//! What a board offers to the ways in and out of the daemon (D-Bus, the
//! network, MQTT, the broadcast folder): its reference, the calls it takes,
//! its snapshot, the errors it answers with, what it publishes and the sinks
//! it is offered to (`publication`); what the doors show and take of the
//! pushes to lichess (`lichess`), and the arbiters' alerts (`alerts`). The
//! sinks (`bus`, `net`, `mqtt`, `output::live`) depend on this layer, not on
//! `daemon`, which is the one place that wires them to the boards.

use std::collections::BTreeMap;

use tokio::sync::{mpsc, oneshot, watch};

pub mod alerts;
pub mod decision;
pub mod delay;
mod error;
pub mod force;
pub mod history;
pub mod lichess;
mod publication;
mod tags;
pub mod throttle;

pub use decision::Decision;
pub use error::{ERROR_PREFIX, Error};
pub use publication::{Detached, GameKey, LiveMsg, Publication, Published, Sink, with_board};
pub use tags::{MAX_PAIRINGS, MAX_TAG_CHARS, PAIRING_TAGS, check_pairing, check_tag, check_tags};

/// One board as the daemon's users see it.
#[derive(Debug, Clone)]
pub struct BoardRef {
    /// The board's id (from the device name it was first seen under).
    pub id: String,
    /// Its D-Bus object path.
    pub object_path: String,
    pub snapshot: watch::Receiver<Snapshot>,
    /// The snapshot spectators see: `snapshot` as it stood the broadcast
    /// delay ago (`delay`); `/api/boards`, the live page and LiveChess read
    /// it, the arbiters' doors read `snapshot`.
    pub public: watch::Receiver<Snapshot>,
    /// Arbiter calls to the board (as D-Bus and MQTT take them).
    pub commands: mpsc::Sender<Request>,
    /// Its decisions and alerts, in words.
    pub history: history::History,
}

/// Who asks for a call: a user name, when known, and the door it came through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asker {
    pub by: Option<String>,
    pub door: history::Door,
    /// The arbiter confirmed the decision (`ctl --force`, the console's second
    /// question, `force` in D-Bus `Decide` and MQTT): one the rule book says
    /// needs confirming is made only then (`rules::book`).
    pub force: bool,
}

/// A decision, who asked for it and where its answer goes.
pub type Request = (Decision, Asker, oneshot::Sender<Result<(), Error>>);

/// Hands `cmd` to a board's task (as MQTT calls do, naming nobody) and waits
/// for its answer.
pub async fn ask(commands: &mpsc::Sender<Request>, d: Decision, door: history::Door) -> Result<(), Error> {
    ask_as(
        commands,
        d,
        Asker {
            by: None,
            door,
            force: false,
        },
    )
    .await
}

/// The same, for `who`, who is then named with the decision in the record.
pub async fn ask_as(commands: &mpsc::Sender<Request>, d: Decision, who: Asker) -> Result<(), Error> {
    let d = decision::bounded(d)?;
    let (tx, rx) = oneshot::channel();
    let gone = || Error::Unavailable("the board's task has stopped".into());
    commands.send((d, who, tx)).await.map_err(|_| gone())?;
    rx.await.map_err(|_| gone())?
}

/// Everything the D-Bus `Board1` properties show, and what the network's clients need
/// besides. Serialized (`/api/boards`, MQTT) with the D-Bus property names.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Snapshot {
    pub connected: bool,
    pub device: String,
    pub serial_number: String,
    pub orientation: String,
    pub status: String,
    pub fen: String,
    pub moves: Vec<String>,
    /// Not a D-Bus property: the moves of `moves` found across a gap in the
    /// line, not seen (`{inferred}` in PGN), by their place in it (0 = the
    /// first).
    pub inferred: Vec<usize>,
    pub pgn: String,
    pub last_move: String,
    pub white_clock_ms: i64,
    pub black_clock_ms: i64,
    pub clock_running: String,
    pub result: String,
    pub termination: String,
    pub irregularity: String,
    /// The current game's (else the board's) PGN `Event`, round, board number and
    /// players.
    pub event: String,
    pub round: String,
    pub board_number: u32,
    pub white: String,
    pub black: String,
    /// The time control last set, PGN syntax (seconds), or empty.
    pub time_control: String,
    /// The current game's (else the board's) tags besides the seven tag roster:
    /// `Board` and the pairing's ([`crate::output::replay::EXTRA_TAGS`]).
    pub tags: BTreeMap<String, String>,
    /// Not a D-Bus property: the pieces on the board as its sensors show them,
    /// in real orientation (FEN placement), whatever the record says; empty before
    /// the board's first dump. LiveChess clients draw it.
    pub placement: String,
    /// Not a D-Bus property: the current game's start position (FEN).
    pub start_fen: String,
    /// Not a D-Bus property: whether a clock has reported.
    pub has_clock: bool,
    /// Not a D-Bus property: the charge a Bluetooth board reported (percent);
    /// `None` for a wired board.
    pub battery: Option<u8>,
    /// Not a D-Bus property: the plies of `moves` that are settled (completed,
    /// or followed by another move); LiveChess clients are sent only those.
    pub settled: usize,
    /// What went wrong with the board's task (it panicked and was restarted,
    /// its journal was moved aside, it was stopped), for the operator; empty
    /// while nothing has (`docs/RELIABILITY.md`, "A board that fails").
    pub fault: String,
}

/// Board numbers as a person lists them: `1-16`, `1-3, 7, 9-10`.
pub fn board_numbers(sorted: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        out.push(if end > start {
            format!("{start}-{end}")
        } else {
            start.to_string()
        });
        i += 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod numbers_tests {
    use super::*;

    #[test]
    fn board_numbers_in_ranges() {
        assert_eq!(board_numbers(&[1, 2, 3, 4]), "1-4");
        assert_eq!(board_numbers(&[1, 2, 3, 7, 9, 10]), "1-3, 7, 9-10");
        assert_eq!(board_numbers(&[5]), "5");
        assert_eq!(board_numbers(&[]), "");
    }
}
