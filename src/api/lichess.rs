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

/// The boards of the event that go to one broadcast round when a round goes
/// to several: boards 1-64 to the first, 65-128 to the second, and so on (a
/// lichess round takes 64 games). The last takes the boards past its range
/// too, as far as it has room.
pub const BOARDS_PER_ID: usize = 64;

/// The most broadcast rounds one round of the event may go to.
pub const MAX_IDS: usize = 16;

/// A round's broadcast rounds, in the order of its boards (each an id or its
/// address): at least one, at most [`MAX_IDS`], none twice.
pub fn parse_ids<'a>(texts: impl IntoIterator<Item = &'a str>) -> Result<Vec<RoundId>, String> {
    let mut ids: Vec<RoundId> = Vec::new();
    for t in texts {
        if ids.len() == MAX_IDS {
            return Err(format!(
                "more than {MAX_IDS} broadcast rounds for one round ({} boards)",
                MAX_IDS * BOARDS_PER_ID
            ));
        }
        let id = RoundId::parse(t)?;
        if ids.contains(&id) {
            return Err(format!(
                "{id} is given twice: each broadcast round takes boards of its own"
            ));
        }
        ids.push(id);
    }
    if ids.is_empty() {
        return Err("no broadcast round's id: give one, or several for boards 1-64, 65-128, ...".into());
    }
    Ok(ids)
}

/// Which of a round's `parts` broadcast rounds board `board` goes to.
pub fn part_of(board: u32, parts: usize) -> usize {
    if parts <= 1 {
        return 0;
    }
    (usize::try_from(board.saturating_sub(1)).unwrap_or(usize::MAX) / BOARDS_PER_ID).min(parts - 1)
}

/// The boards of broadcast round `index` of a round's `parts`: the first and
/// the last (0: and up). `(1, 0)` for a round with one.
pub fn part_boards(index: usize, parts: usize) -> (u32, u32) {
    let board = |n: usize| u32::try_from(n.saturating_mul(BOARDS_PER_ID)).unwrap_or(u32::MAX);
    let first = board(index).saturating_add(1);
    let last = if index + 1 >= parts { 0 } else { board(index + 1) };
    (first, last)
}

/// `boards 1-64`, `boards 65 and up`; empty for the whole round.
pub fn boards_words(first: u32, last: u32) -> String {
    match (first, last) {
        (0 | 1, 0) => String::new(),
        (f, 0) => format!("boards {f} and up"),
        (f, l) => format!("boards {f}-{l}"),
    }
}

/// A round's broadcast rounds for people: `AbCd1234`, or `AbCd1234 (boards
/// 1-64) and EfGh5678 (boards 65 and up)`.
pub fn ids_words(ids: &[RoundId]) -> String {
    if let [one] = ids {
        return one.to_string();
    }
    let each: Vec<String> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let (first, last) = part_boards(i, ids.len());
            format!("{id} ({})", boards_words(first, last))
        })
        .collect();
    match each.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
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
    /// Round `round` of the event goes to the broadcast rounds `ids` from now
    /// on, boards 1-64 to the first, 65-128 to the second, ... (none: it is no
    /// longer pushed).
    SetRound { round: u32, ids: Vec<RoundId> },
}

impl RoundDecision {
    /// The decision as every door and journal has it
    /// ([`Decision::SetLichessRound`]; `""` for no id, as D-Bus takes it;
    /// several ids apart by spaces, `"AbCd1234 EfGh5678"`, as the journal has
    /// them since issue 60: one id reads as it always did).
    pub fn decision(&self) -> Decision {
        match self {
            RoundDecision::SetRound { round, ids } => {
                let ids: Vec<&str> = ids.iter().map(RoundId::as_str).collect();
                Decision::SetLichessRound(*round, ids.join(" "))
            }
        }
    }

    /// The journal's record (`arbiter SetLichessRound 3 "AbCd1234"`):
    /// [`Decision::record`] of [`RoundDecision::decision`].
    pub fn record(&self) -> crate::log::RecordKind {
        self.decision().record()
    }

    /// The decision about the pushes a journal's record holds: `None` for a
    /// record that is not an `arbiter` one, `Some(Err)` for one that does not
    /// read as a decision about lichess (read by [`Decision::from_record_texts`],
    /// the one parser of method names, then its ids checked). The one reader
    /// of the pushes' journal's decisions.
    pub fn from_record(kind: &crate::log::RecordKind) -> Option<Result<RoundDecision, String>> {
        let crate::log::RecordKind::Arbiter { method, args } = kind else {
            return None;
        };
        Some(
            Decision::from_record_texts(method, args)
                .map_err(|e| e.to_string())
                .and_then(|d| RoundDecision::from_decision(&d)),
        )
    }

    /// The decision about the pushes a [`Decision`] holds (read from a record
    /// by [`Decision::from_record`], the one parser of method names), its id
    /// checked.
    pub fn from_decision(d: &Decision) -> Result<RoundDecision, String> {
        match d {
            Decision::SetLichessRound(round, ids) => Ok(RoundDecision::SetRound {
                round: *round,
                ids: match ids.trim() {
                    "" => Vec::new(),
                    ids => parse_ids(ids.split([' ', ',']).filter(|i| !i.is_empty()))?,
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
    /// The round's boards this broadcast round takes, the first and the last
    /// (0: and up): `1` and `0` when the round has one broadcast round; `1`
    /// and `64`, `65` and `0` for a round split over two.
    pub first_board: u32,
    pub last_board: u32,
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
    fn several_broadcast_rounds_by_board_ranges() {
        assert_eq!(part_of(1, 1), 0);
        assert_eq!(part_of(130, 1), 0, "one broadcast round takes the whole round");
        assert_eq!(part_of(64, 2), 0);
        assert_eq!(part_of(65, 2), 1);
        assert_eq!(part_of(200, 2), 1, "the last takes the boards past its range");
        assert_eq!(part_of(0, 2), 0);
        assert_eq!(part_of(u32::MAX, 3), 2);
        assert_eq!(part_boards(0, 1), (1, 0));
        assert_eq!(part_boards(0, 2), (1, 64));
        assert_eq!(part_boards(1, 2), (65, 0));
        assert_eq!(part_boards(1, 3), (65, 128));
        assert_eq!(boards_words(1, 0), "");
        assert_eq!(boards_words(65, 128), "boards 65-128");
        assert_eq!(boards_words(129, 0), "boards 129 and up");
        let ids = parse_ids([
            "AbCd1234",
            "https://lichess.org/broadcast/t/r/EfGh5678",
            "IjKl9012",
        ])
        .unwrap();
        assert_eq!(
            ids_words(&ids),
            "AbCd1234 (boards 1-64), EfGh5678 (boards 65-128) and IjKl9012 (boards 129 and up)"
        );
        assert_eq!(ids_words(&ids[..1]), "AbCd1234");
        assert!(parse_ids([]).unwrap_err().contains("no broadcast round"));
        assert!(parse_ids(["AbCd1234", "nope"]).unwrap_err().contains("8 letters"));
        let many: Vec<String> = (0..=MAX_IDS).map(|i| format!("Round{i:03}")).collect();
        let e = parse_ids(many.iter().map(String::as_str)).unwrap_err();
        assert!(e.contains("more than 16"), "{e}");
    }

    #[test]
    fn a_decision_is_its_record_and_back() {
        let d = RoundDecision::SetRound {
            round: 3,
            ids: vec![RoundId::parse("AbCd1234").unwrap()],
        };
        let arbiter = |args: &[&str]| crate::log::RecordKind::Arbiter {
            method: "SetLichessRound".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        };
        assert_eq!(d.record(), arbiter(&["3", r#""AbCd1234""#]));
        // As the journal reads a record: the one parser, then the id checked.
        let read = |method: &str, args: &[serde_json::Value]| -> Result<RoundDecision, String> {
            let kind = crate::log::RecordKind::Arbiter {
                method: method.into(),
                args: args.iter().map(ToString::to_string).collect(),
            };
            RoundDecision::from_record(&kind).unwrap()
        };
        let round_trip = |d: &RoundDecision| RoundDecision::from_record(&d.record()).unwrap();
        assert_eq!(round_trip(&d).unwrap(), d);
        let method = "SetLichessRound";
        let off = RoundDecision::SetRound {
            round: 3,
            ids: Vec::new(),
        };
        assert_eq!(round_trip(&off).unwrap(), off);
        // Several: one string, the ids apart by spaces; read back the same.
        let two = RoundDecision::SetRound {
            round: 3,
            ids: parse_ids(["AbCd1234", "EfGh5678"]).unwrap(),
        };
        assert_eq!(two.record(), arbiter(&["3", r#""AbCd1234 EfGh5678""#]));
        assert_eq!(round_trip(&two).unwrap(), two);
        let twice = read(method, &[1.into(), "AbCd1234 AbCd1234".into()]).unwrap_err();
        assert!(twice.contains("given twice"), "{twice}");
        let zero = read(method, &[0.into(), "AbCd1234".into()]).unwrap_err();
        assert!(zero.contains("not 0"), "{zero}");
        let nope = read(method, &[1.into(), "nope".into()]).unwrap_err();
        assert!(nope.contains("is not a lichess broadcast round id"), "{nope}");
        let other = read("SetResult", &["1-0".into()]).unwrap_err();
        assert_eq!(other, "SetResult: not a decision about lichess");
    }
}
