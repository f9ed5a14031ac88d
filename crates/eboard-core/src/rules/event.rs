//! What the rules core reports (`docs/INTERFACES.md`, "Replay output").

use serde::Serialize;
use shakmaty::{Piece, Square};

use super::values::{
    Article, DrawReason, GameResult, Termination, Variant, piece_letter, running_name, square_name,
    square_names,
};
use crate::board::Orientation;
use crate::protocol::ClockButton;

fn is_false(b: &bool) -> bool {
    !*b
}

/// Which player.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    White,
    Black,
}

impl From<shakmaty::Color> for Side {
    fn from(c: shakmaty::Color) -> Side {
        if c.is_white() { Side::White } else { Side::Black }
    }
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::White => "white",
            Side::Black => "black",
        }
    }
}

/// Kinds of irregular position (Art. 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IrregularKind {
    IllegalMove,
    Displaced,
    PromotionIncomplete,
    ClockWithoutMove,
    /// Across a gap in the line, a board that no sequence of up to 6 legal plies
    /// from the record reaches.
    LostTrack,
    /// The board changed after the game ended (nothing is recorded).
    AfterEnd,
    /// On a board read by dumps only, with no clock: sequences of different
    /// lengths (the other side to move after one) reach the board the dumps
    /// showed, and the next dump did not rule the other out. The plies
    /// recorded from `ply` on are inferred and may be another path to the same
    /// boards. A report, not a state, made once a game: recording goes on.
    Ambiguous,
}

impl IrregularKind {
    pub fn name(self) -> &'static str {
        match self {
            IrregularKind::IllegalMove => "illegal_move",
            IrregularKind::Displaced => "displaced",
            IrregularKind::PromotionIncomplete => "promotion_incomplete",
            IrregularKind::ClockWithoutMove => "clock_without_move",
            IrregularKind::LostTrack => "lost_track",
            IrregularKind::AfterEnd => "after_end",
            IrregularKind::Ambiguous => "ambiguous",
        }
    }
}

/// One event, with the time it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// Microseconds since the start of the log; `t` in seconds in JSON.
    #[serde(rename = "t", serialize_with = "as_seconds")]
    pub t_us: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    /// The time in seconds since the start of the log (as JSON gives it).
    pub fn seconds(&self) -> f64 {
        self.t_us as f64 / 1e6
    }
}

fn as_seconds<S: serde::Serializer>(t_us: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*t_us as f64 / 1e6)
}

/// The events of the rules core.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    GameStart {
        game: u32,
        fen: String,
        variant: Variant,
        orientation: Orientation,
    },
    Touch {
        side: Side,
        #[serde(serialize_with = "square_name")]
        square: Square,
        #[serde(serialize_with = "piece_letter")]
        piece: Piece,
        first: bool,
        returned: bool,
    },
    Move {
        ply: u32,
        san: String,
        uci: String,
        fen: String,
        side: Side,
        /// Found across a gap in the line, not seen being played.
        #[serde(skip_serializing_if = "is_false")]
        inferred: bool,
    },
    MoveAmended {
        ply: u32,
        was: String,
        san: String,
        uci: String,
        fen: String,
        #[serde(skip_serializing_if = "is_false")]
        inferred: bool,
    },
    MoveCompleted {
        ply: u32,
        side: Side,
    },
    Takeback {
        to_ply: u32,
        fen: String,
    },
    TouchMove {
        article: Article,
        side: Side,
        #[serde(serialize_with = "square_names")]
        touched: Vec<Square>,
        played: String,
    },
    Irregular {
        kind: IrregularKind,
        side: Side,
        #[serde(serialize_with = "square_names")]
        squares: Vec<Square>,
        completed: bool,
        count: u32,
        /// For a completed violation: the penalty FIDE prescribes for this count
        /// under the rules profile (applying it is the arbiter's call); in
        /// JSON, its words ([`Penalty`]'s `Display` and `Serialize`, in `crate::words`).
        #[serde(skip_serializing_if = "Option::is_none")]
        penalty: Option<Penalty>,
        /// For `lost_track`: the board seen (FEN placement, real squares).
        #[serde(skip_serializing_if = "Option::is_none")]
        board: Option<String>,
        /// For `ambiguous`: the first ply the dumps left open (1 = white's first).
        #[serde(skip_serializing_if = "Option::is_none")]
        ply: Option<u32>,
    },
    Resolved {
        fen: String,
    },
    Clock {
        white_ms: u64,
        black_ms: u64,
        /// The side whose clock runs (`none` in JSON when neither).
        #[serde(serialize_with = "running_name")]
        running: Option<Side>,
    },
    DrawClaimable {
        reason: DrawReason,
    },
    /// A flag has fallen (6.8): reported, the game goes on.
    Flag {
        side: Side,
        ply: u32,
        period_moves: u32,
        count_met: bool,
    },
    GameEnd {
        result: GameResult,
        termination: Termination,
    },
    /// A clock command was never acknowledged (sent and resent); the bytes in hex.
    ClockUnresponsive {
        command: String,
    },
    /// A front button of the DGT 3000 was pressed.
    ClockButton {
        button: ClockButton,
    },
    /// An arbiter's call was accepted (the sensor log's `arbiter` record):
    /// the decision itself; in JSON its `method` and `args`, as the record
    /// holds them.
    Arbiter {
        #[serde(flatten)]
        decision: super::Decision,
        /// Who decided (a user name), when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
}

impl EventKind {
    /// The `type` name of the event.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::GameStart { .. } => "game_start",
            EventKind::Touch { .. } => "touch",
            EventKind::Move { .. } => "move",
            EventKind::MoveAmended { .. } => "move_amended",
            EventKind::MoveCompleted { .. } => "move_completed",
            EventKind::Takeback { .. } => "takeback",
            EventKind::TouchMove { .. } => "touch_move",
            EventKind::Irregular { .. } => "irregular",
            EventKind::Resolved { .. } => "resolved",
            EventKind::Clock { .. } => "clock",
            EventKind::DrawClaimable { .. } => "draw_claimable",
            EventKind::Flag { .. } => "flag",
            EventKind::GameEnd { .. } => "game_end",
            EventKind::Arbiter { .. } => "arbiter",
            EventKind::ClockButton { .. } => "clock_button",
            EventKind::ClockUnresponsive { .. } => "clock_unresponsive",
        }
    }
}

/// The rules profile: which FIDE penalties apply (standard, rapid or blitz play).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    #[default]
    Standard,
    Rapid,
    Blitz,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Standard => "standard",
            Profile::Rapid => "rapid",
            Profile::Blitz => "blitz",
        }
    }
}

/// The penalty FIDE prescribes for a player's `count`-th completed violation
/// under a rules profile (Art. 7.5.5; rapid and blitz: Appendices A.4.2 and
/// B.3, one minute since 2023). The rules core decides it; its words are made
/// only where it is shown (`Display`: the JSON, the text output, the console).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Penalty {
    pub profile: Profile,
    pub offender: Side,
    /// The offender's completed violations so far, this one included.
    pub count: u32,
    /// The extra time went on the opponent's clock (`apply_penalties`).
    pub to_clock: bool,
}

/// A name that is none of a setting's values (a profile, a flag policy), with
/// the values it takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnknownName(pub String);

impl std::str::FromStr for Profile {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Profile, UnknownName> {
        match s {
            "standard" => Ok(Profile::Standard),
            "rapid" => Ok(Profile::Rapid),
            "blitz" => Ok(Profile::Blitz),
            _ => Err(UnknownName(format!(
                "unknown rules profile `{s}` (standard, rapid or blitz)"
            ))),
        }
    }
}

/// The longest threshold taken (an hour): the configuration and the command
/// line refuse more, and the core holds a larger one to it.
pub const MAX_THRESHOLD_MS: u64 = 3_600_000;

/// Thresholds and profile; the defaults follow FIDE 2023 and `rules.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// A placement that stays this long is a release (ms).
    pub release_ms: u64,
    /// A lift whose piece is back within this time is sensor noise (ms).
    pub flicker_ms: u64,
    /// A board that stays this long in an unexplained state is irregular (ms).
    pub irregular_ms: u64,
    pub profile: Profile,
    /// What a flag fall does: reported only (the default), or the game ends.
    pub flag: FlagPolicy,
    /// A completed violation's time penalty (7.5.5) is added to the opponent's
    /// clock (otherwise it is reported, for the arbiter to apply).
    pub apply_penalties: bool,
}

/// What a flag fall does (6.8, 6.9). Only the arbiter decides by default: the fall
/// is reported and the game goes on being recorded. `End` is the opt-in: the game
/// ends on the fall, lost, or drawn when the opponent cannot checkmate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagPolicy {
    #[default]
    Report,
    End,
}

impl std::str::FromStr for FlagPolicy {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<FlagPolicy, UnknownName> {
        match s {
            "report" => Ok(FlagPolicy::Report),
            "end" => Ok(FlagPolicy::End),
            other => Err(UnknownName(format!(
                "`{other}`: a flag fall can `report` or `end`"
            ))),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            release_ms: 300,
            flicker_ms: 150,
            irregular_ms: 2000,
            profile: Profile::Standard,
            flag: FlagPolicy::Report,
            apply_penalties: false,
        }
    }
}
