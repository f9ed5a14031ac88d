//! The pushes to a lichess broadcast as the doors show and take them (D-Bus,
//! `ctl`, the console): a broadcast round's id ([`RoundId`]), the decision that
//! gives a round of the event its id ([`RoundDecision`], journaled), a round's state
//! ([`RoundStatus`]) and what is reported to the arbiters ([`Report`]); and the
//! link between the broadcast folder, which writes each round's `games.pgn`,
//! and the task that pushes it ([`rounds_link`]). The task is `crate::lichess`.

use std::sync::Arc;

use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use super::Error;
use crate::rules::Decision;

/// A lichess broadcast round's id: the 8 letters and digits at the end of the
/// round's address (`https://lichess.org/broadcast/<tour>/<round>/AbCd1234`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(into = "String")]
pub struct RoundId(String);

impl RoundId {
    /// The id, or the round's address on lichess copied from the browser (its
    /// page, or its edit page `/broadcast/round/<id>/edit`).
    pub fn parse(text: &str) -> Result<RoundId, String> {
        let t = text.trim();
        let bad = || {
            format!(
                "`{}` is not a lichess broadcast round id: 8 letters and digits, the end of the round's address (https://lichess.org/broadcast/.../.../AbCd1234)",
                crate::log::clip_to(t, 60)
            )
        };
        let id = match t.find("/broadcast/") {
            Some(i) => {
                let path = t[i + "/broadcast/".len()..]
                    .split(['?', '#'])
                    .next()
                    .unwrap_or_default();
                let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
                match parts.as_slice() {
                    ["round", id, ..] => *id,
                    [_tour, _round, id, ..] => *id,
                    _ => return Err(bad()),
                }
            }
            None => t,
        };
        if id.len() == 8 && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            Ok(RoundId(id.to_string()))
        } else {
            Err(bad())
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<RoundId> for String {
    fn from(id: RoundId) -> String {
        id.0
    }
}

impl std::fmt::Display for RoundId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A decision about the pushes, one value from the door (D-Bus, `ctl`) to the
/// journal (`<state>/lichess/rounds.esl`, as an `arbiter` record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoundDecision {
    /// Round `round` of the event goes to the broadcast round `id` from now on
    /// (`None`: it is no longer pushed).
    SetRound { round: u32, id: Option<RoundId> },
}

impl RoundDecision {
    /// The decision as every door and journal has it
    /// ([`Decision::SetLichessRound`]; `""` for no id, as D-Bus takes it).
    pub fn decision(&self) -> Decision {
        match self {
            RoundDecision::SetRound { round, id } => {
                Decision::SetLichessRound(*round, id.as_ref().map_or("", |i| i.as_str()).to_string())
            }
        }
    }

    /// The journal's record: the method and its arguments (`SetLichessRound 3
    /// "AbCd1234"`).
    pub fn record(&self) -> (&'static str, Vec<serde_json::Value>) {
        let d = self.decision();
        (d.method(), d.args())
    }

    /// The decision about the pushes a [`Decision`] holds (read from a record
    /// by [`Decision::from_record`], the one parser of method names), its id
    /// checked.
    pub fn from_decision(d: &Decision) -> Result<RoundDecision, String> {
        match d {
            Decision::SetLichessRound(round, id) => Ok(RoundDecision::SetRound {
                round: *round,
                id: match id.trim() {
                    "" => None,
                    id => Some(RoundId::parse(id)?),
                },
            }),
            other => Err(format!("{}: not a decision about lichess", other.method())),
        }
    }
}

/// What a door's call is refused with when `[lichess]` is not configured.
pub fn not_configured() -> Error {
    Error::Unavailable(
        "[lichess] is not in the daemon's configuration: add it (token_file, rounds; docs/BROADCAST.md) and restart the daemon".into(),
    )
}

/// A decision from a door, who made it, and where its answer goes.
#[derive(Debug)]
pub struct Call {
    pub decision: RoundDecision,
    pub by: Option<String>,
    pub reply: oneshot::Sender<Result<(), Error>>,
}

/// A round's `games.pgn` as the broadcast folder wrote it, with where each game
/// is in it: the push's body is this very text (cut after the games lichess
/// takes).
#[derive(Debug, Clone, PartialEq)]
pub struct RoundPgn {
    pub round: u32,
    pub text: Arc<str>,
    /// The games in the order of the text (by board, then by game).
    pub games: Vec<GameSpan>,
}

/// One game of a [`RoundPgn`]: its board, its place among the board's games of
/// the round, and its bytes in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameSpan {
    pub board: u32,
    pub index: u32,
    pub start: usize,
    pub end: usize,
}

/// The broadcast folder's side of the link: each round's `games.pgn` as it is
/// written goes out on `pgn`; a round asked for on `asked` is written (and
/// sent) again, as it stands.
pub struct RoundsOut {
    pub pgn: mpsc::UnboundedSender<RoundPgn>,
    pub asked: mpsc::UnboundedReceiver<u32>,
}

/// The pushing task's side of the link.
pub struct RoundsIn {
    pub pgn: mpsc::UnboundedReceiver<RoundPgn>,
    pub ask: mpsc::UnboundedSender<u32>,
}

/// The link between the broadcast folder and the task that pushes its rounds.
pub fn rounds_link() -> (RoundsOut, RoundsIn) {
    let (pgn_tx, pgn_rx) = mpsc::unbounded_channel();
    let (ask_tx, ask_rx) = mpsc::unbounded_channel();
    (
        RoundsOut {
            pgn: pgn_tx,
            asked: ask_rx,
        },
        RoundsIn {
            pgn: pgn_rx,
            ask: ask_tx,
        },
    )
}

/// A round's pushes as the doors show them (D-Bus `Manager1.Lichess`, `ctl
/// boards`, the console). Never the token.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct RoundStatus {
    pub round: u32,
    /// The broadcast round's id.
    pub id: String,
    /// `waiting` (no game yet), `pushing`, `pushed` (lichess has the round as
    /// the folder holds it), `retrying` (lichess away or busy: the round is
    /// kept and pushed when it answers), `refused` (until the configuration
    /// changes: `error` says what to do), `off` (the token file holds no
    /// token: `error` says what to do; the boards are bridged all the same).
    pub state: String,
    /// When lichess last accepted a push (ms since the epoch; 0: never).
    pub last_push_ms: i64,
    /// Pushes lichess accepted since the daemon started.
    pub pushes: u64,
    pub games_accepted: u32,
    pub games_refused: u32,
    /// Each game of the last push lichess answered.
    pub games: Vec<GameStatus>,
    /// Boards whose games are not pushed: past the games a lichess round takes.
    pub not_pushed: Vec<u32>,
    /// What is wrong with the round, and what to do (empty when nothing is).
    pub error: String,
    /// When the next try is due while `retrying` (ms since the epoch; 0: none).
    pub next_try_ms: i64,
}

/// A game of a push, as lichess answered it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct GameStatus {
    pub board: u32,
    pub index: u32,
    /// `White - Black`.
    pub name: String,
    /// The moves (plies) lichess counted; 0 for a game it refused.
    pub moves: u32,
    /// Why lichess refused the game (empty: accepted).
    pub error: String,
}

/// Something about the pushes that an arbiter or organiser must know: a game
/// lichess refused, a round it refuses, lichess away and back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub round: u32,
    pub id: String,
    /// `game_refused`, `refused` (the token, the round id, a round with a
    /// source URL), `rejected` (the PGN as a whole), `unreachable` (network,
    /// server errors, too many requests: retried), `back` (accepted again),
    /// `not_pushed` (boards past the games a round takes).
    pub kind: String,
    /// The game, `board 12: White - Black` (empty when the report is the round's).
    pub game: String,
    pub text: String,
    /// What to do (empty when nothing is to be done).
    pub remedy: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_ids_from_the_id_or_the_address() {
        assert_eq!(RoundId::parse("AbCd1234").unwrap().as_str(), "AbCd1234");
        for url in [
            "https://lichess.org/broadcast/club-open-2026/round-3/AbCd1234",
            "https://lichess.org/broadcast/club-open-2026/round-3/AbCd1234/Xy12Zz90",
            "lichess.org/broadcast/round/AbCd1234/edit",
            " https://lichess.org/broadcast/t/r/AbCd1234?embed=1 ",
        ] {
            assert_eq!(RoundId::parse(url).unwrap().as_str(), "AbCd1234", "{url}");
        }
        for bad in [
            "",
            "AbCd123",
            "AbCd12345",
            "AbCd-234",
            "https://lichess.org/study/x",
            "../../x",
        ] {
            let e = RoundId::parse(bad).unwrap_err();
            assert!(e.contains("8 letters and digits"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_decision_is_its_record_and_back() {
        let d = RoundDecision::SetRound {
            round: 3,
            id: Some(RoundId::parse("AbCd1234").unwrap()),
        };
        let (method, args) = d.record();
        assert_eq!(method, "SetLichessRound");
        assert_eq!(
            serde_json::Value::from(args.clone()).to_string(),
            r#"[3,"AbCd1234"]"#
        );
        // As the journal reads a record: the one parser, then the id checked.
        let read = |method: &str, args: &[serde_json::Value]| -> Result<RoundDecision, String> {
            match Decision::from_record(method, args) {
                Ok(Some(d)) => RoundDecision::from_decision(&d),
                Ok(None) => Err(format!("{method}: no such method")),
                Err(e) => Err(e.to_string()),
            }
        };
        assert_eq!(read(method, &args).unwrap(), d);
        let off = RoundDecision::SetRound { round: 3, id: None };
        let (m, a) = off.record();
        assert_eq!(read(m, &a).unwrap(), off);
        let zero = read(method, &[0.into(), "AbCd1234".into()]).unwrap_err();
        assert!(zero.contains("not 0"), "{zero}");
        let nope = read(method, &[1.into(), "nope".into()]).unwrap_err();
        assert!(nope.contains("is not a lichess broadcast round id"), "{nope}");
        let other = read("SetResult", &["1-0".into()]).unwrap_err();
        assert_eq!(other, "SetResult: not a decision about lichess");
    }
}
