//! Arbiter calls from the input's bytes, as the doors hand them to
//! `Session::decide` (a method and its arguments as JSON): each decision the
//! rules core takes, well formed and in range or out of it as an arbiter may
//! ask; the calls it does not take (players, tags, a text on the clock); and
//! malformed ones (wrong types, huge numbers, arguments missing or too many),
//! which must be refused.

use serde_json::{Value, json};
use shakmaty::{Chess, Position};

use super::Frame;
use crate::rules::{Game, game_fen};
use crate::sim::Seeded;

/// One call and what the driver does around it.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub(super) method: String,
    pub(super) args: Vec<Value>,
    /// Who decided, as the journal's note names them.
    pub(super) by: Option<String>,
    /// Arguments that do not fit the method: the call must be refused.
    pub(super) malformed: bool,
    /// Accepted (a take-back, a result), it is undone at once, and the game
    /// must be as it was before it.
    pub(super) undo_after: bool,
    /// Accepted, the players set the board up as the game now stands.
    pub(super) set_up: bool,
}

const RESULTS: [&str; 4] = ["1-0", "0-1", "1/2-1/2", "*"];

const TERMINATIONS: [&str; 4] = [
    "time forfeit",
    "adjudication",
    "  rules infraction ",
    "mutual agreement",
];

/// Time controls in every form `TimeControl::parse` takes.
const TIME_CONTROLS: [&str; 9] = [
    "90+30",
    "5400+30",
    "40/90+30:30+30",
    "90d5",
    "90b5",
    "*300",
    "1:30:00",
    "G/90",
    "3+2",
];

/// A Chess960 start (castling rights by file).
const CHESS960: &str = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";

/// A well-formed call from `f` (`a` which call, `b` its argument, `c` who
/// and what after, `d` a second argument), given the game under way.
pub(super) fn well_formed(f: &Frame, game: Option<&Game>) -> Call {
    let (kind, b, flags) = (f.a, f.b, f.c);
    let by = match flags % 3 {
        0 => None,
        1 => Some("ana".to_string()),
        _ => Some("Bo Li".to_string()),
    };
    let ply = game.map_or(0, Game::ply);
    // As a door's caller writes it: a method and JSON arguments, in range or
    // out of it.
    let (method, args) = match kind % 12 {
        0 => (
            "NewGame",
            json!([match b % 4 {
                0 | 1 => String::new(),
                2 => foreign(f.d),
                _ => CHESS960.into(),
            }]),
        ),
        // A position of the game (7.5.1), or a foreign one.
        1 => (
            "SetPosition",
            json!([match game {
                Some(g) => game_fen(&g.positions[usize::from(b) % g.positions.len()]),
                None => foreign(f.d),
            }]),
        ),
        2 if b & 1 == 0 => ("SetPosition", json!([foreign(f.d)])),
        2 => ("SetPosition", json!([CHESS960])),
        3 => ("Reinstate", json!([u32::from(b) % (ply as u32 + 1)])),
        4 if b & 0x80 != 0 => ("Reinstate", json!([u32::MAX])),
        4 => ("Reinstate", json!([ply as u32 + 1 + u32::from(b % 4)])),
        5 => ("SetResult", json!([RESULTS[usize::from(b) % 4]])),
        6 => (
            "SetResult",
            json!([RESULTS[usize::from(b) % 4], TERMINATIONS[usize::from(b >> 2) % 4]]),
        ),
        7 => {
            let spec = TIME_CONTROLS[usize::from(b) % TIME_CONTROLS.len()];
            if b & 0x80 != 0 {
                ("SetTimeControl", json!([spec, "report"]))
            } else {
                ("SetTimeControl", json!([spec]))
            }
        }
        // Up to 10:37:30: the DGT 3000 shows at most 9:59:59.
        8 => (
            "SetClock",
            json!([i64::from(b) * 150_000, i64::from(f.d) * 150_000]),
        ),
        9 => (
            "AddTime",
            json!([
                if b & 1 == 0 { "white" } else { "black" },
                i32::from(b as i8) * 10
            ]),
        ),
        10 if b & 1 != 0 => ("Undo", json!([true])),
        10 => ("Undo", json!([])),
        _ => {
            let (method, args) = not_taken(b);
            return Call {
                method: method.into(),
                args,
                by,
                malformed: false,
                undo_after: false,
                set_up: false,
            };
        }
    };
    let Value::Array(args) = args else {
        unreachable!("the arguments are an array")
    };
    Call {
        method: method.into(),
        args,
        by,
        malformed: false,
        // A take-back or a result.
        undo_after: flags & 0x10 != 0 && matches!(kind % 12, 3..=6),
        // A new game, a position, a take-back, an undo.
        set_up: flags & 0x20 != 0 && matches!(kind % 12, 0..=4 | 10),
    }
}

/// A legal position from the start, 0 to 15 plies on, chosen by `seed` (the
/// board shows a position the record does not have).
fn foreign(seed: u8) -> String {
    let mut rng = Seeded::new(u64::from(seed));
    let mut pos = Chess::default();
    for _ in 0..seed % 16 {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            break;
        }
        pos.play_unchecked(moves[rng.range(0, moves.len() as u64 - 1) as usize]);
    }
    game_fen(&pos)
}

/// The calls the rules core does not take: its events only.
fn not_taken(b: u8) -> (&'static str, Vec<Value>) {
    match b % 4 {
        0 => ("SetPlayers", vec![json!("Ana"), json!("Bo Li")]),
        1 => ("ShowText", vec![json!("adjourned"), json!(5)]),
        2 => ("SetTags", vec![json!({"Event": "Open", "Round": "3"})]),
        _ => (
            "SetPairing",
            vec![json!(3), json!({"White": "Ana", "Black": "Bo Li"})],
        ),
    }
}

/// A call whose arguments do not fit its method, whatever the game: the
/// `which`-th of them (modulo their number).
pub(super) fn malformed(which: u8) -> Call {
    let (method, args) = bad(which);
    Call {
        method: method.into(),
        args,
        by: None,
        malformed: true,
        undo_after: false,
        set_up: false,
    }
}

/// The malformed calls, and calls no board takes, one for each `b` (modulo
/// their number).
fn bad(b: u8) -> (&'static str, Vec<Value>) {
    let long = "x".repeat(5000);
    let calls: [(&str, Value); 63] = [
        ("NewGame", json!([])),
        ("NewGame", json!([1])),
        ("NewGame", json!([null])),
        ("NewGame", json!(["", ""])),
        ("NewGame", json!([{}])),
        ("NewGame", json!(["not a position"])),
        ("NewGame", json!(["8/8/8/8/8/8/8/8 w - - 0 1"])),
        ("NewGame", json!([long])),
        ("SetPosition", json!([""])),
        ("SetPosition", json!(["   "])),
        ("SetPosition", json!([true])),
        ("SetPosition", json!([])),
        (
            "SetPosition",
            json!(["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 1]),
        ),
        (
            "SetPosition",
            json!(["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1 extra"]),
        ),
        ("Reinstate", json!([])),
        ("Reinstate", json!([-1])),
        ("Reinstate", json!([1.5])),
        ("Reinstate", json!(["1"])),
        ("Reinstate", json!([u64::MAX])),
        ("Reinstate", json!([4_294_967_296u64])),
        ("Reinstate", json!([null])),
        ("Reinstate", json!([1, 2])),
        ("Reinstate", json!([[1]])),
        ("SetResult", json!([])),
        ("SetResult", json!(["2-0"])),
        ("SetResult", json!([""])),
        ("SetResult", json!([1])),
        ("SetResult", json!(["1-0", 3])),
        ("SetResult", json!(["1-0", ""])),
        ("SetResult", json!(["1-0", "a\nb"])),
        ("SetResult", json!(["1-0", "x".repeat(61)])),
        ("SetResult", json!(["1-0", "a", "b"])),
        ("SetTimeControl", json!([])),
        ("SetTimeControl", json!([""])),
        ("SetTimeControl", json!(["nonsense"])),
        ("SetTimeControl", json!([5400])),
        ("SetTimeControl", json!(["5400+30", "auto"])),
        ("SetTimeControl", json!(["5400+30", 1])),
        ("SetTimeControl", json!(["99999999999999999999+0"])),
        ("SetTimeControl", json!(["90+30", "drive", "x"])),
        ("SetClock", json!([])),
        ("SetClock", json!([1])),
        ("SetClock", json!(["x", 1])),
        ("SetClock", json!([-1, 0])),
        ("SetClock", json!([0, 36_000_000])),
        ("SetClock", json!([i64::MAX, 0])),
        ("SetClock", json!([u64::MAX, i64::MIN])),
        ("SetClock", json!([1.5, 0])),
        ("SetClock", json!([0, 0, 0])),
        ("AddTime", json!([])),
        ("AddTime", json!(["white"])),
        ("AddTime", json!(["purple", 10])),
        ("AddTime", json!(["white", "10"])),
        ("AddTime", json!(["white", 2_147_483_648i64])),
        ("AddTime", json!(["black", i64::MIN])),
        ("AddTime", json!(["White", 10])),
        ("Undo", json!(["yes"])),
        ("Undo", json!([1])),
        ("Undo", json!([true, true])),
        ("Undo", json!([{}])),
        // The daemon's decision, not a board's: refused however well formed.
        ("SetLichessRound", json!([3, "AbCd1234"])),
        ("SetLichessRound", json!([0, ""])),
        ("SetLichessRound", json!(["3", ""])),
    ];
    let (method, args) = calls[usize::from(b) % calls.len()].clone();
    let args = match args {
        Value::Array(a) => a,
        other => vec![other],
    };
    (method, args)
}
