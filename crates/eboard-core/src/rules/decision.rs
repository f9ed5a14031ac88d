//! An arbiter's decision as one value, from every door to the journal.
//!
//! [`Decision`] is built once at each door (D-Bus from its typed methods; `ctl`
//! from its command line; the console, MQTT and D-Bus `Decide` from a method
//! name and JSON arguments by [`Decision::from_call`]), its payloads typed and
//! checked there (a side, a result, clock times, a FEN that is a legal
//! position, a time control that parses). The board's task asks the rule book
//! about it, the session applies it, the rules core reports it in its
//! `arbiter` event as the value itself, and the journal writes it once, as
//! its `arbiter` record ([`Decision::record`]: the method and JSON arguments
//! `docs/SENSOR-LOG.md` defines), which resume and `replay` read back with
//! [`Decision::from_record`]. Those two, [`Decision::method`] and
//! [`Decision::BOARD_METHODS`] are the only places the method names are
//! spelt for a decision: everything else matches on the value and makes its
//! words from it (`crate::words::call_words`).

use std::collections::BTreeMap;

use serde_json::Value;
use shakmaty::{CastlingMode, Chess};

use super::{ClockMode, GameResult, Refused, Side};
use crate::clock::control::{MAX_SHOWN_MS, TimeControl};

/// An arbiter's call, or the configuration's time control. The rules core
/// applies those about the game and its clock ([`Decision::is_rules`]); the
/// others (the players, the tags, a round's pairing, a text on the clock) are
/// the daemon's, recorded the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// A new game from this position (none: the standard start).
    NewGame(Option<FenPosition>),
    /// The game goes on from this position.
    SetPosition(FenPosition),
    /// Back to this ply (7.5.1).
    Reinstate(u32),
    /// The game's result, and the words of its PGN `Termination` tag when the
    /// arbiter gives them (`time forfeit`, `adjudication`; else the tag says
    /// `arbiter`). Journaled as `SetResult` with one argument or two.
    SetResult(GameResult, Option<TerminationWords>),
    /// The time control of the game about to start, and who keeps the time: an
    /// arbiter's `SetTimeControl` drives the clock; the configuration's time
    /// control in report mode only names the periods and the `TimeControl` tag.
    SetTimeControl { spec: GivenTimeControl, mode: ClockMode },
    /// Both clock times (white's, black's), the running side going on.
    SetClock(ClockMs, ClockMs),
    /// Seconds added to (taken from, when negative) a side's clock.
    AddTime(Side, Seconds),
    /// The board's last accepted decision taken back (an undo undone gives it
    /// back); `force`: even when plies recorded since are dropped by it.
    /// Journaled as `Undo` (`Undo true` with force).
    Undo { force: bool },
    /// The players of the game under way (with none, of the next games).
    SetPlayers(String, String),
    /// The pairing's tags of the game under way and of the next games (an
    /// empty value removes one).
    SetTags(BTreeMap<String, String>),
    /// A round's pairing for the board's next game, or its game not begun: the
    /// round (0: the board's own) and the players and tags.
    SetPairing(u32, BTreeMap<String, String>),
    /// A text on the clock, for this many seconds.
    ShowText(String, u32),
    /// Round `round` of the event is pushed to the lichess broadcast round
    /// with this id from now on (empty: it is no longer pushed). The daemon's,
    /// not a board's: journaled in the pushes' own journal
    /// (`<state>/lichess/rounds.esl`); a board refuses it.
    SetLichessRound(u32, String),
    /// An `arbiter` record of a method this build does not know (a newer
    /// daemon's, in a journal): kept as read, it changes nothing and is
    /// reported as the event it is. Only [`Decision::from_record`] makes one;
    /// no door takes one ([`Decision::from_call`] refuses it).
    Unknown { method: String, args: Vec<Value> },
}

/// A position an arbiter gives, checked where it comes in: a FEN that parses
/// into a legal position (standard castling, or Chess960 when the FEN says
/// so). The FEN's text (trimmed) is kept as given, as the journal writes it.
#[derive(Debug, Clone)]
pub struct FenPosition {
    text: String,
    position: Chess,
    mode: CastlingMode,
}

impl FenPosition {
    /// The longest FEN taken, in bytes (after trimming): a real one is under 100.
    pub const MAX_BYTES: usize = 100;

    /// The position `fen` gives, or what is wrong with it (too long, not a
    /// FEN, not a legal position).
    pub fn parse(fen: &str) -> Result<FenPosition, Refused> {
        let text = trimmed_within(fen, Self::MAX_BYTES, "the FEN")?;
        let (position, mode) = parse_start(text)?;
        Ok(FenPosition {
            text: text.to_string(),
            position,
            mode,
        })
    }

    /// The FEN as given (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The position and its castling mode.
    pub fn position(&self) -> (&Chess, CastlingMode) {
        (&self.position, self.mode)
    }
}

impl PartialEq for FenPosition {
    fn eq(&self, other: &FenPosition) -> bool {
        self.text == other.text
    }
}

impl Eq for FenPosition {}

/// A start position from a FEN (standard castling, or Chess960 when the FEN says so).
pub fn parse_start(fen: &str) -> Result<(Chess, CastlingMode), Refused> {
    // The FEN comes from outside (a D-Bus call, a log): messages quote the start.
    let shown = crate::text::clip_to(fen, 100);
    let parsed: shakmaty::fen::Fen = fen
        .parse()
        .map_err(|e| Refused::InvalidArgument(format!("`{shown}`: {e}")))?;
    match parsed.clone().into_position(CastlingMode::Standard) {
        Ok(p) => Ok((p, CastlingMode::Standard)),
        Err(_) => parsed
            .into_position(CastlingMode::Chess960)
            .map(|p| (p, CastlingMode::Chess960))
            .map_err(|e| Refused::InvalidArgument(format!("`{shown}` is not a legal position: {e}"))),
    }
}

/// The most characters the words of a `Termination` tag an arbiter gives take.
pub const MAX_TERMINATION_CHARS: usize = 60;

/// The words of a `Termination` tag an arbiter gives (`time forfeit`,
/// `adjudication`), checked: one line of at most [`MAX_TERMINATION_CHARS`]
/// characters, not empty, trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminationWords(String);

impl TerminationWords {
    /// The words, or what is wrong with them. They come from outside (a call,
    /// a journal): what is wrong is said, nothing panics.
    pub fn parse(text: &str) -> Result<TerminationWords, Refused> {
        termination_words(text).map(TerminationWords)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The words of a `Termination` tag an arbiter gives (`time forfeit`,
/// `adjudication`), trimmed: one line of at most [`MAX_TERMINATION_CHARS`]
/// characters, not empty.
pub fn termination_words(text: &str) -> Result<String, Refused> {
    let t = text.trim();
    if t.is_empty() {
        return Err(Refused::InvalidArgument(
            "the termination is empty: say how the game ended (time forfeit, adjudication)".into(),
        ));
    }
    if t.chars().count() > MAX_TERMINATION_CHARS || t.chars().any(char::is_control) {
        return Err(Refused::InvalidArgument(format!(
            "the termination `{}` is not one line of at most {MAX_TERMINATION_CHARS} characters",
            crate::text::clip_to(t, 40)
        )));
    }
    Ok(t.to_string())
}

/// `text` trimmed, when it is at most `max` bytes long; else what is wrong,
/// naming it as `what` (`the FEN`).
fn trimmed_within<'t>(text: &'t str, max: usize, what: &str) -> Result<&'t str, Refused> {
    let t = text.trim();
    if t.len() > max {
        return Err(Refused::InvalidArgument(format!(
            "{what} is {} bytes long; at most {max} are taken",
            t.len()
        )));
    }
    Ok(t)
}

/// A result as an arbiter gives it (`1-0`, `0-1`, `1/2-1/2`, `*`), or what is
/// wrong with it.
pub fn parse_result(text: &str) -> Result<GameResult, Refused> {
    let t = trimmed_within(text, 8, "the result")?;
    GameResult::parse(t)
        .ok_or_else(|| Refused::InvalidArgument(format!("`{t}` is not a result (1-0, 0-1, 1/2-1/2 or *)")))
}

/// A side as an arbiter names it (`white`, `black`), or what is wrong with it.
pub fn parse_side(text: &str) -> Result<Side, Refused> {
    let t = trimmed_within(text, 8, "the side")?;
    match t {
        "white" => Ok(Side::White),
        "black" => Ok(Side::Black),
        other => Err(Refused::InvalidArgument(format!(
            "`{}`: the side is `white` or `black`",
            crate::text::clip_to(other, 20)
        ))),
    }
}

/// A time on the clock as an arbiter sets it: 0 to 9:59:59 (the most the
/// DGT 3000 shows), in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClockMs(u32);

impl ClockMs {
    /// The time, or why the clock cannot show it.
    pub fn new(ms: i64) -> Result<ClockMs, Refused> {
        if !(0..=MAX_SHOWN_MS as i64).contains(&ms) {
            return Err(Refused::InvalidArgument(format!(
                "{ms} ms: the DGT 3000 shows 0 to 9:59:59"
            )));
        }
        Ok(ClockMs(ms as u32))
    }

    pub fn ms(self) -> i64 {
        i64::from(self.0)
    }
}

/// Seconds an arbiter adds to a clock (negative: takes from it): at most the
/// most a clock shows, 9:59:59, either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seconds(i32);

impl Seconds {
    /// The most seconds added or taken at once.
    pub const MAX: i32 = (MAX_SHOWN_MS / 1000) as i32;

    pub fn new(seconds: i64) -> Option<Seconds> {
        (-i64::from(Self::MAX)..=i64::from(Self::MAX))
            .contains(&seconds)
            .then_some(Seconds(seconds as i32))
    }

    pub fn get(self) -> i32 {
        self.0
    }
}

/// A time control as an arbiter or the configuration gives it: its text
/// (trimmed, as the journal writes it) and the periods it parses into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenTimeControl {
    text: String,
    control: TimeControl,
}

impl GivenTimeControl {
    /// The longest time control taken (PGN syntax or event form): a few periods.
    pub const MAX_BYTES: usize = 64;

    /// The time control `text` gives, or what is wrong with it.
    pub fn parse(text: &str) -> Result<GivenTimeControl, Refused> {
        let t = trimmed_within(text, Self::MAX_BYTES, "the time control")?;
        let control = TimeControl::parse(t).map_err(|e| Refused::InvalidArgument(e.0))?;
        Ok(GivenTimeControl {
            text: t.to_string(),
            control,
        })
    }

    /// The text as given (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn control(&self) -> &TimeControl {
        &self.control
    }
}

impl From<TimeControl> for GivenTimeControl {
    /// A time control the configuration gives: its PGN text.
    fn from(control: TimeControl) -> GivenTimeControl {
        GivenTimeControl {
            text: control.pgn(),
            control,
        }
    }
}

/// The typed doors' constructors (D-Bus's methods, `ctl`'s commands): each
/// payload checked as [`Decision::from_record`] checks it, in the same words.
impl Decision {
    /// A new game from `fen` (empty: the standard start).
    pub fn new_game(fen: &str) -> Result<Decision, Refused> {
        Ok(Decision::NewGame(if fen.trim().is_empty() {
            None
        } else {
            Some(FenPosition::parse(fen)?)
        }))
    }

    /// The game goes on from `fen` (not empty: that would be a new game).
    pub fn set_position(fen: &str) -> Result<Decision, Refused> {
        if fen.trim().is_empty() {
            return Err(Refused::InvalidArgument(
                "SetPosition needs a FEN (NewGame \"\" starts a game from the standard position)".into(),
            ));
        }
        Ok(Decision::SetPosition(FenPosition::parse(fen)?))
    }

    /// The result, with the termination's words when given.
    pub fn set_result(result: &str, termination: Option<&str>) -> Result<Decision, Refused> {
        // The words first, as the rules core checked them.
        let words = termination.map(TerminationWords::parse).transpose()?;
        Ok(Decision::SetResult(parse_result(result)?, words))
    }

    /// A time control, and who keeps the time.
    pub fn set_time_control(spec: &str, mode: ClockMode) -> Result<Decision, Refused> {
        Ok(Decision::SetTimeControl {
            spec: GivenTimeControl::parse(spec)?,
            mode,
        })
    }

    /// Both clock times, in ms.
    pub fn set_clock(white_ms: i64, black_ms: i64) -> Result<Decision, Refused> {
        Ok(Decision::SetClock(
            ClockMs::new(white_ms)?,
            ClockMs::new(black_ms)?,
        ))
    }

    /// Seconds added to (negative: taken from) `side`'s clock.
    pub fn add_time(side: &str, seconds: i64) -> Result<Decision, Refused> {
        let secs = Seconds::new(seconds)
            .ok_or_else(|| Refused::InvalidArgument(format!("AddTime takes seconds, not {seconds}")))?;
        Ok(Decision::AddTime(parse_side(side)?, secs))
    }
}

impl Decision {
    /// The methods of every decision a board takes, as its `arbiter` record
    /// and every door name them: each door takes all of them.
    pub const BOARD_METHODS: [&'static str; 13] = [
        "NewGame",
        "SetPosition",
        "Reinstate",
        "SetResult",
        "SetResultWith",
        "SetTimeControl",
        "SetClock",
        "AddTime",
        "Undo",
        "SetPlayers",
        "SetTags",
        "SetPairing",
        "ShowText",
    ];

    /// Whether the rules core applies it (the game and its clock); the others
    /// are the daemon's (players, tags, pairings, a text on the clock), and a
    /// call this build does not know changes nothing.
    pub fn is_rules(&self) -> bool {
        !matches!(
            self,
            Decision::SetPlayers(..)
                | Decision::SetTags(_)
                | Decision::SetPairing(..)
                | Decision::ShowText(..)
                | Decision::SetLichessRound(..)
                | Decision::Unknown { .. }
        )
    }

    /// Whether it is about the clock (it needs the clock connected).
    pub fn is_clock(&self) -> bool {
        matches!(
            self,
            Decision::SetTimeControl { .. } | Decision::SetClock(..) | Decision::AddTime(..)
        )
    }

    /// The method name, as the `arbiter` record and D-Bus name it.
    pub fn method(&self) -> &str {
        match self {
            Decision::NewGame(_) => "NewGame",
            Decision::SetPosition(_) => "SetPosition",
            Decision::Reinstate(_) => "Reinstate",
            Decision::SetResult(..) => "SetResult",
            Decision::SetTimeControl { .. } => "SetTimeControl",
            Decision::SetClock(..) => "SetClock",
            Decision::AddTime(..) => "AddTime",
            Decision::Undo { .. } => "Undo",
            Decision::SetPlayers(..) => "SetPlayers",
            Decision::SetTags(_) => "SetTags",
            Decision::SetPairing(..) => "SetPairing",
            Decision::ShowText(..) => "ShowText",
            Decision::SetLichessRound(..) => "SetLichessRound",
            Decision::Unknown { method, .. } => method,
        }
    }

    /// The journal's `arbiter` record of the decision: its method and its
    /// arguments, each as JSON text. The one place a decision is written (the
    /// daemon's journal, the pushes' journal, the fuzzer's); read back by
    /// [`Decision::from_record`].
    pub fn record(&self) -> crate::log::RecordKind {
        crate::log::RecordKind::Arbiter {
            method: self.method().to_string(),
            args: self.args().iter().map(ToString::to_string).collect(),
        }
    }

    /// The arguments as JSON values, as the record and the `arbiter` event
    /// hold them. `SetTimeControl` takes the D-Bus call's one argument when it
    /// drives the clock (as recordings always had it), and the mode after it
    /// otherwise (`"5400+30", "report"`).
    pub fn args(&self) -> Vec<Value> {
        let s = |t: &str| Value::String(t.to_string());
        match self {
            Decision::NewGame(p) => vec![s(p.as_ref().map_or("", FenPosition::as_str))],
            Decision::SetPosition(p) => vec![s(p.as_str())],
            Decision::SetResult(r, None) => vec![s(r.as_str())],
            Decision::SetResult(r, Some(t)) => vec![s(r.as_str()), s(t.as_str())],
            Decision::SetTimeControl { spec, mode } => match mode {
                ClockMode::Drive => vec![s(spec.as_str())],
                ClockMode::Report => vec![s(spec.as_str()), s(mode.name())],
            },
            Decision::Reinstate(p) => vec![Value::from(*p)],
            Decision::SetClock(w, b) => vec![Value::from(w.ms()), Value::from(b.ms())],
            Decision::AddTime(side, secs) => vec![s(side.name()), Value::from(secs.get())],
            Decision::Undo { force: false } => Vec::new(),
            Decision::Undo { force: true } => vec![Value::Bool(true)],
            Decision::SetPlayers(w, b) => vec![s(w), s(b)],
            Decision::SetTags(tags) => vec![tags_json(tags)],
            Decision::SetPairing(round, tags) => vec![Value::from(*round), tags_json(tags)],
            Decision::ShowText(text, seconds) => vec![s(text), Value::from(*seconds)],
            Decision::SetLichessRound(round, id) => vec![Value::from(*round), s(id)],
            Decision::Unknown { args, .. } => args.clone(),
        }
    }

    /// The decision a door's method name and JSON arguments stand for (the
    /// console, MQTT, D-Bus `Decide`), or what is wrong (a method no board or
    /// daemon has, arguments that do not fit it).
    pub fn from_call(method: &str, args: &[Value]) -> Result<Decision, Refused> {
        match Decision::from_record(method, args)? {
            Decision::Unknown { .. } => Err(Refused::InvalidArgument(format!(
                "no method {}",
                crate::text::clip_to(method, 40)
            ))),
            d => Ok(d),
        }
    }

    /// The decision an `arbiter` record holds, its arguments as the record's
    /// JSON texts; `Err` when one is not JSON (a hand-written log) or they do
    /// not fit the method.
    pub fn from_record_texts(method: &str, args: &[String]) -> Result<Decision, Refused> {
        let values: Vec<Value> = args
            .iter()
            .map(|a| serde_json::from_str(a))
            .collect::<Result<_, _>>()
            .map_err(|e| Refused::InvalidArgument(format!("{method}: an argument is not JSON: {e}")))?;
        Decision::from_record(method, &values)
    }

    /// The decision an `arbiter` record (or a door's method name and JSON
    /// arguments) holds: the one parser of method names. A method this build
    /// does not know (a newer daemon's, in a journal) is
    /// [`Decision::Unknown`], read on as the event it is; `Err` for arguments
    /// that do not fit the method.
    pub fn from_record(method: &str, args: &[Value]) -> Result<Decision, Refused> {
        // What the method takes, said when its arguments do not fit.
        let takes = |what: &str| Refused::InvalidArgument(format!("{method} takes {what}"));
        let one_string = || match args {
            [Value::String(s)] => Ok(s.as_str()),
            _ => Err(takes("one string argument")),
        };
        Ok(match method {
            "NewGame" => Decision::new_game(one_string()?)?,
            "SetPosition" => Decision::set_position(one_string()?)?,
            "SetResult" => match args {
                [Value::String(r)] => Decision::set_result(r, None)?,
                [Value::String(r), Value::String(t)] => Decision::set_result(r, Some(t))?,
                _ => return Err(takes("a result and, optionally, the termination's words")),
            },
            // The D-Bus method's name for a result with its words.
            "SetResultWith" => match args {
                [Value::String(r), Value::String(t)] => Decision::set_result(r, Some(t))?,
                _ => return Err(takes("a result and the termination's words")),
            },
            "SetTimeControl" => match args {
                [Value::String(spec)] => Decision::set_time_control(spec, ClockMode::Drive)?,
                [Value::String(spec), mode] => {
                    let mode = serde_json::from_value(mode.clone()).map_err(|_| {
                        Refused::InvalidArgument(format!(
                            "SetTimeControl's mode is \"report\" or \"drive\", not {mode}"
                        ))
                    })?;
                    Decision::set_time_control(spec, mode)?
                }
                _ => return Err(takes("a time control and a mode")),
            },
            "SetClock" => match args {
                [w, b] => Decision::set_clock(integer(method, w, "ms")?, integer(method, b, "ms")?)?,
                _ => return Err(takes("white's and black's ms")),
            },
            "AddTime" => match args {
                [Value::String(side), s] => {
                    let seconds = integer::<i64>(method, s, "seconds")?;
                    Decision::add_time(side, seconds)?
                }
                _ => return Err(takes("a side and seconds")),
            },
            "Reinstate" => match args {
                [v] => Decision::Reinstate(integer(method, v, "a ply number")?),
                _ => return Err(takes("one ply number")),
            },
            "Undo" => match args {
                [] => Decision::Undo { force: false },
                [Value::Bool(force)] => Decision::Undo { force: *force },
                _ => return Err(takes("nothing, or true to drop the plies recorded since")),
            },
            "SetPlayers" => match args {
                [Value::String(w), Value::String(b)] => Decision::SetPlayers(w.clone(), b.clone()),
                _ => return Err(takes("White's and Black's names")),
            },
            "SetTags" => match args {
                [tags] => Decision::SetTags(tags_of(method, tags)?),
                _ => return Err(takes("one object of tags")),
            },
            "SetPairing" => match args {
                [round, tags] => {
                    Decision::SetPairing(integer(method, round, "a round")?, tags_of(method, tags)?)
                }
                _ => return Err(takes("a round and an object of tags")),
            },
            "ShowText" => match args {
                [Value::String(text), s] => Decision::ShowText(text.clone(), integer(method, s, "seconds")?),
                _ => return Err(takes("a text and seconds")),
            },
            "SetLichessRound" => match args {
                [round, Value::String(id)] => match integer(method, round, "a round number (1, 2, ...)")? {
                    0 => return Err(takes("a round number (1, 2, ...), not 0")),
                    r => Decision::SetLichessRound(r, id.clone()),
                },
                _ => return Err(takes("a round and a broadcast round's id (\"\" for none)")),
            },
            _ => Decision::Unknown {
                method: method.to_string(),
                args: args.to_vec(),
            },
        })
    }
}

/// In JSON (the `arbiter` event's fields), a decision is its record: its
/// `method` and `args`.
impl serde::Serialize for Decision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("method", self.method())?;
        m.serialize_entry("args", &self.args())?;
        m.end()
    }
}

/// An integer argument of `method` that fits `T` (`what` it is, in the
/// refusal: `Reinstate takes a ply number, not -1`).
fn integer<T: TryFrom<i64>>(method: &str, v: &Value, what: &str) -> Result<T, Refused> {
    v.as_i64()
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| Refused::InvalidArgument(format!("{method} takes {what}, not {v}")))
}

/// Tags as one JSON object (as the `arbiter` record holds them).
fn tags_json(tags: &BTreeMap<String, String>) -> Value {
    Value::Object(
        tags.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// An object of tags whose values are strings.
fn tags_of(method: &str, v: &Value) -> Result<BTreeMap<String, String>, Refused> {
    let Value::Object(o) = v else {
        return Err(Refused::InvalidArgument(format!(
            "{method} takes an object of tags, not {v}"
        )));
    };
    o.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            v => Err(Refused::InvalidArgument(format!(
                "{method}: tag {k} must be a string, not {v}"
            ))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fen(text: &str) -> FenPosition {
        FenPosition::parse(text).unwrap()
    }

    #[test]
    fn records_round_trip() {
        for d in [
            Decision::NewGame(None),
            Decision::NewGame(Some(fen("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"))),
            Decision::SetPosition(fen("8/8/8/8/8/8/8/K1k5 w - - 0 1")),
            Decision::Reinstate(4),
            Decision::SetResult(GameResult::Draw, None),
            Decision::SetResult(
                GameResult::WhiteWins,
                Some(TerminationWords::parse("time forfeit").unwrap()),
            ),
            Decision::SetTimeControl {
                spec: GivenTimeControl::parse("40/5400+30:1800+30").unwrap(),
                mode: ClockMode::Drive,
            },
            Decision::SetTimeControl {
                spec: GivenTimeControl::parse("5400+30").unwrap(),
                mode: ClockMode::Report,
            },
            Decision::SetClock(ClockMs::new(5_400_000).unwrap(), ClockMs::new(0).unwrap()),
            Decision::AddTime(Side::Black, Seconds::new(-30).unwrap()),
            Decision::Undo { force: false },
            Decision::Undo { force: true },
            Decision::SetPlayers("Carlsen, Magnus".into(), "Caruana, Fabiano".into()),
            Decision::SetTags([("WhiteElo".to_string(), "2830".to_string())].into()),
            Decision::SetPairing(3, [("White".to_string(), "Carlsen, Magnus".to_string())].into()),
            Decision::ShowText("ARBITER".into(), 5),
            Decision::SetLichessRound(2, "AbCd1234".into()),
            Decision::Unknown {
                method: "Resign".into(),
                args: vec![Value::from("white")],
            },
        ] {
            assert_eq!(Decision::from_record(d.method(), &d.args()), Ok(d.clone()));
            let crate::log::RecordKind::Arbiter { method, args } = d.record() else {
                panic!("{d:?}: not an arbiter record");
            };
            assert_eq!(Decision::from_record_texts(&method, &args), Ok(d.clone()));
        }
        assert_eq!(
            Decision::from_record("SetPlayers", &[Value::from("A"), Value::from("B")]),
            Ok(Decision::SetPlayers("A".into(), "B".into()))
        );
        assert!(matches!(
            Decision::from_record("Resign", &[]),
            Ok(Decision::Unknown { .. })
        ));
        assert_eq!(
            Decision::from_call("Resign", &[]),
            Err(Refused::InvalidArgument("no method Resign".into()))
        );
        assert!(Decision::from_record("SetPlayers", &[Value::from("A")]).is_err());
        assert!(Decision::from_record("SetTags", &[serde_json::json!({"WhiteElo": 2830})]).is_err());
        assert!(Decision::from_record("SetPairing", &[Value::from(-1), serde_json::json!({})]).is_err());
        assert!(Decision::from_record("SetClock", &[Value::from("x"), Value::from(2)]).is_err());
        assert!(Decision::from_record("Reinstate", &[Value::from("x")]).is_err());
        assert!(Decision::from_record("SetResult", &[]).is_err());
        assert!(Decision::from_record_texts("SetResult", &["1-0 oops".into()]).is_err());
        // A journal written before the termination's words: one argument.
        assert_eq!(
            Decision::from_record("SetResult", &[Value::from("1-0")]),
            Ok(Decision::SetResult(GameResult::WhiteWins, None))
        );
        // The D-Bus method's name: the same decision, journaled as `SetResult`.
        let with = Decision::from_record(
            "SetResultWith",
            &[Value::from("0-1"), Value::from(" adjudication ")],
        )
        .unwrap();
        assert_eq!(with.method(), "SetResult");
        assert_eq!(with.args(), [Value::from("0-1"), Value::from("adjudication")]);
        assert!(Decision::from_record("SetResult", &[Value::from("1-0"), Value::from(3)]).is_err());
        assert_eq!(
            termination_words("  time forfeit "),
            Ok("time forfeit".to_string())
        );
        assert!(termination_words(" ").is_err());
        assert!(termination_words("a\nb").is_err());
        assert!(termination_words(&"x".repeat(61)).is_err());
        // The D-Bus call's form (and every recording before the mode was
        // written) drives the clock.
        assert_eq!(
            Decision::from_record("SetTimeControl", &[Value::from("G/90")]),
            Ok(Decision::SetTimeControl {
                spec: GivenTimeControl::parse("G/90").unwrap(),
                mode: ClockMode::Drive
            })
        );
        assert!(
            Decision::from_record("SetTimeControl", &[Value::from("G/90"), Value::from("auto")]).is_err()
        );
    }

    /// Each payload is checked where the decision is made, in the words the
    /// rules core used when it checked them itself.
    #[test]
    fn payloads_are_checked_at_the_door_in_the_same_words() {
        let e = |m: &str, a: serde_json::Value| {
            Decision::from_record(m, a.as_array().unwrap())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e("AddTime", serde_json::json!(["purple", 10])),
            "`purple`: the side is `white` or `black`"
        );
        assert_eq!(
            e("SetResult", serde_json::json!(["2-0"])),
            "`2-0` is not a result (1-0, 0-1, 1/2-1/2 or *)"
        );
        assert_eq!(
            e("SetClock", serde_json::json!([36_000_000, 0])),
            "36000000 ms: the DGT 3000 shows 0 to 9:59:59"
        );
        assert!(
            e("NewGame", serde_json::json!(["8/8/8/8/8/8/8/8 w - - 0 1"])).contains("not a legal position")
        );
        assert!(e("SetPosition", serde_json::json!(["not a position"])).starts_with("`not a position`"));
        assert!(
            e("AddTime", serde_json::json!(["white", 36_000])).contains("AddTime takes seconds, not 36000")
        );
        assert!(e("SetTimeControl", serde_json::json!(["nonsense"])).contains("nonsense"));
        assert!(e("SetPosition", serde_json::json!(["x".repeat(101)])).contains("at most 100"));
        // A Chess960 start is a legal position (castling by file).
        let p = FenPosition::parse(" bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9 ")
            .unwrap();
        assert_eq!(p.position().1, CastlingMode::Chess960);
        assert_eq!(
            p.as_str(),
            "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"
        );
    }

    /// The `arbiter` event's JSON is the record's method and arguments.
    #[test]
    fn in_json_a_decision_is_its_method_and_arguments() {
        let d = Decision::SetResult(GameResult::BlackWins, None);
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"method":"SetResult","args":["0-1"]}"#
        );
    }
}
