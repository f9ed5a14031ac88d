//! An arbiter's decisions about the game record. They are part of the record like
//! the moves: the daemon writes every accepted one to the board's sensor log as an
//! `arbiter` record (`docs/SENSOR-LOG.md`), and resume and `replay` apply
//! them to the rules core exactly as it was live.
//!
//! [`Decision`] is the one type of an arbiter's call from every door (D-Bus,
//! `ctl`, the console, MQTT) to the journal: each door builds one (from its
//! D-Bus method, or a method name and JSON arguments with
//! [`Decision::from_record`], the one parser of method names), the board's
//! session applies it, and the journal writes its [`Decision::method`] and
//! [`Decision::args`].

use std::collections::BTreeMap;

use serde_json::Value;
use shakmaty::{CastlingMode, Chess};

use super::{ClockMode, Core, Game, GameResult, Termination};

/// An arbiter's call, or the configuration's time control. The rules core
/// applies those about the game and its clock ([`Decision::is_rules`]); the
/// others (the players, the tags, a round's pairing, a text on the clock) are
/// the daemon's, recorded the same way. The journal's `arbiter` record is its
/// method and arguments ([`Decision::method`], [`Decision::args`],
/// [`Decision::from_record`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Decision {
    /// A new game from this FEN (empty: the standard start).
    NewGame(String),
    /// The game goes on from this position.
    SetPosition(String),
    /// Back to this ply (7.5.1).
    Reinstate(u32),
    /// The game's result (`1-0`, `0-1`, `1/2-1/2`, `*`).
    SetResult(String),
    /// The game's result and the words of the PGN `Termination` tag (`time
    /// forfeit`, `adjudication`): journaled as `SetResult` with a second argument
    /// (a journal's `SetResult` with one argument is [`Decision::SetResult`]).
    SetResultWith(String, String),
    /// The time control of the game about to start, and who keeps the time: an
    /// arbiter's `SetTimeControl` drives the clock; the configuration's time
    /// control in report mode only names the periods and the `TimeControl` tag.
    SetTimeControl { spec: String, mode: ClockMode },
    /// Both clock times (white's, black's ms), the running side going on.
    SetClock(i64, i64),
    /// Seconds added to a side's clock (`white` or `black`).
    AddTime(String, i32),
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
}

/// Why a board refuses [`Decision::SetLichessRound`].
pub const NOT_A_BOARDS: &str = "SetLichessRound is the daemon's decision, not a board's: use `eboard-bridge ctl lichess ROUND ID` (D-Bus Manager1.SetLichessRound)";

/// Why a decision was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    NoGame(String),
    /// A change that needs a game without moves (a time control).
    #[error("{0}")]
    GameUnderWay(String),
    /// An undo with nothing it may take back (what to do instead is said).
    #[error("{0}")]
    NotUndone(String),
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
    /// are the daemon's (players, tags, pairings, a text on the clock).
    pub fn is_rules(&self) -> bool {
        !matches!(
            self,
            Decision::SetPlayers(..)
                | Decision::SetTags(_)
                | Decision::SetPairing(..)
                | Decision::ShowText(..)
                | Decision::SetLichessRound(..)
        )
    }

    /// The D-Bus method name, as the `arbiter` record names it.
    pub fn method(&self) -> &'static str {
        match self {
            Decision::NewGame(_) => "NewGame",
            Decision::SetPosition(_) => "SetPosition",
            Decision::Reinstate(_) => "Reinstate",
            Decision::SetResult(_) | Decision::SetResultWith(..) => "SetResult",
            Decision::SetTimeControl { .. } => "SetTimeControl",
            Decision::SetClock(..) => "SetClock",
            Decision::AddTime(..) => "AddTime",
            Decision::Undo { .. } => "Undo",
            Decision::SetPlayers(..) => "SetPlayers",
            Decision::SetTags(_) => "SetTags",
            Decision::SetPairing(..) => "SetPairing",
            Decision::ShowText(..) => "ShowText",
            Decision::SetLichessRound(..) => "SetLichessRound",
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

    /// The arguments as JSON values. `SetTimeControl` takes the D-Bus call's one
    /// argument when it drives the clock (as recordings always had it), and the
    /// mode after it otherwise (`"5400+30", "report"`).
    pub fn args(&self) -> Vec<Value> {
        match self {
            Decision::NewGame(s) | Decision::SetPosition(s) | Decision::SetResult(s) => {
                vec![Value::String(s.clone())]
            }
            Decision::SetResultWith(r, t) => vec![Value::String(r.clone()), Value::String(t.clone())],
            Decision::SetTimeControl { spec, mode } => match mode {
                ClockMode::Drive => vec![Value::String(spec.clone())],
                ClockMode::Report => vec![Value::String(spec.clone()), Value::from(mode.name())],
            },
            Decision::Reinstate(p) => vec![Value::from(*p)],
            Decision::SetClock(w, b) => vec![Value::from(*w), Value::from(*b)],
            Decision::AddTime(side, s) => vec![Value::String(side.clone()), Value::from(*s)],
            Decision::Undo { force: false } => Vec::new(),
            Decision::Undo { force: true } => vec![Value::Bool(true)],
            Decision::SetPlayers(w, b) => vec![Value::String(w.clone()), Value::String(b.clone())],
            Decision::SetTags(tags) => vec![tags_json(tags)],
            Decision::SetPairing(round, tags) => vec![Value::from(*round), tags_json(tags)],
            Decision::ShowText(text, seconds) => vec![Value::String(text.clone()), Value::from(*seconds)],
            Decision::SetLichessRound(round, id) => vec![Value::from(*round), Value::String(id.clone())],
        }
    }

    /// The decision an `arbiter` record (or a door's method name and JSON
    /// arguments) holds. `Ok(None)` for a method this build does not know (a
    /// newer daemon's, in a journal: read on, as the event it is); `Err` for
    /// arguments that do not fit the method.
    pub fn from_record(method: &str, args: &[Value]) -> Result<Option<Decision>, Refused> {
        // What the method takes, said when its arguments do not fit.
        let takes = |what: &str| Refused::InvalidArgument(format!("{method} takes {what}"));
        let one_string = || match args {
            [Value::String(s)] => Ok(s.clone()),
            _ => Err(takes("one string argument")),
        };
        Ok(Some(match method {
            "NewGame" => Decision::NewGame(one_string()?),
            "SetPosition" => Decision::SetPosition(one_string()?),
            "SetResult" => match args {
                [Value::String(r)] => Decision::SetResult(r.clone()),
                [Value::String(r), Value::String(t)] => Decision::SetResultWith(r.clone(), t.clone()),
                _ => return Err(takes("a result and, optionally, the termination's words")),
            },
            "SetTimeControl" => match args {
                [Value::String(spec)] => Decision::SetTimeControl {
                    spec: spec.clone(),
                    mode: ClockMode::Drive,
                },
                [Value::String(spec), mode] => Decision::SetTimeControl {
                    spec: spec.clone(),
                    mode: serde_json::from_value(mode.clone()).map_err(|_| {
                        Refused::InvalidArgument(format!(
                            "SetTimeControl's mode is \"report\" or \"drive\", not {mode}"
                        ))
                    })?,
                },
                _ => return Err(takes("a time control and a mode")),
            },
            "SetClock" => match args {
                [w, b] => Decision::SetClock(integer(method, w, "ms")?, integer(method, b, "ms")?),
                _ => return Err(takes("white's and black's ms")),
            },
            "AddTime" => match args {
                [Value::String(side), s] => Decision::AddTime(side.clone(), integer(method, s, "seconds")?),
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
            // The D-Bus method's name for a result with its words.
            "SetResultWith" => match args {
                [Value::String(r), Value::String(t)] => Decision::SetResultWith(r.clone(), t.clone()),
                _ => return Err(takes("a result and the termination's words")),
            },
            _ => return Ok(None),
        }))
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

/// A forced end in words, with its article.
fn forced_words(termination: Termination) -> &'static str {
    match termination {
        Termination::Checkmate => "checkmate (5.1.1)",
        Termination::Stalemate => "stalemate (5.2.1)",
        Termination::InsufficientMaterial => "dead, no checkmate possible (5.2.2)",
        Termination::FivefoldRepetition => "on the board for the fifth time (9.6.1)",
        Termination::SeventyfiveMoves => "75 moves past a capture or a pawn move (9.6.2)",
        _ => "over",
    }
}

/// The most characters the words of a `Termination` tag an arbiter gives take.
pub const MAX_TERMINATION_CHARS: usize = 60;

/// The words of a `Termination` tag an arbiter gives (`time forfeit`,
/// `adjudication`), trimmed: one line of at most [`MAX_TERMINATION_CHARS`]
/// characters, not empty. They come from outside (a call, a journal): what is
/// wrong is said, nothing panics.
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

impl Core {
    /// Reports an accepted arbiter call (an `arbiter` event), whatever it changes:
    /// the daemon and `replay` call it for every `arbiter` record.
    pub fn arbiter_call(&mut self, method: &str, args: Vec<Value>, by: Option<String>, t_us: u64) {
        self.advance(t_us);
        self.emit(
            t_us,
            super::EventKind::Arbiter {
                method: method.to_string(),
                args,
                by,
            },
        );
    }

    /// Applies an arbiter's decision at `t_us`. A refused decision changes nothing.
    ///
    /// - `NewGame`: a new game; one under way with moves ends `*` (`abandoned`) and
    ///   is kept.
    /// - `SetPosition`: the game goes on from the position given. A position of the
    ///   game itself (7.5.1, the position before an irregularity) takes the game
    ///   back to it. Any other (the position the board shows after the record lost
    ///   track of it, a position corrected by hand) cannot follow the moves
    ///   recorded in one game score: the game under way, if unfinished, ends `*`
    ///   with the termination `position_set` (it was not abandoned: play goes on)
    ///   and is kept, and a game starts from the position. An empty FEN is refused
    ///   (it would be `NewGame`).
    pub fn arbiter(&mut self, decision: &Decision, t_us: u64) -> Result<(), Refused> {
        match decision {
            Decision::Undo { force } => return self.undo(*force, t_us),
            Decision::SetLichessRound(..) => return Err(Refused::InvalidArgument(NOT_A_BOARDS.into())),
            _ => {}
        }
        if !decision.is_rules() {
            // The daemon's (players, tags, a text): the record and the time
            // only, and nothing an undo would take back.
            self.advance(t_us);
            return Ok(());
        }
        let taken = self.before_decision(decision, t_us);
        self.decide(decision, t_us)?;
        self.end_if_forced(t_us);
        self.after_decision(decision, taken, t_us);
        Ok(())
    }

    /// A game a decision left open on a position that ends it (a mate, a
    /// stalemate, a dead position: 5.1.1, 5.2.1, 5.2.2, 9.6; a ply of a mated
    /// game reinstated, a mated position set) ends as that position says: no
    /// decision leaves a mate open.
    fn end_if_forced(&mut self, t_us: u64) {
        let Some(game) = self.game.as_ref().filter(|g| !g.is_over()) else {
            return;
        };
        if let Some((result, termination)) = game.forced_end() {
            self.end_game(t_us, result, termination);
        }
    }

    /// Refuses a result other than the one the game's position forces (a mate
    /// is 1-0 or 0-1 whatever anyone says: 5.1.1), saying what to do instead.
    fn forced_stands(&self, result: &str) -> Result<(), Refused> {
        let Some((forced, termination)) = self.game.as_ref().and_then(Game::forced_end) else {
            return Ok(());
        };
        if GameResult::parse(result) == Some(forced) {
            return Ok(());
        }
        Err(Refused::InvalidArgument(format!(
            "the game's position is {}: its result is {forced}; to play on, reinstate an earlier ply (`ctl reinstate`)",
            forced_words(termination)
        )))
    }

    /// A decision other than an undo, applied.
    fn decide(&mut self, decision: &Decision, t_us: u64) -> Result<(), Refused> {
        match decision {
            Decision::NewGame(fen) => {
                let (pos, mode) = if fen.trim().is_empty() {
                    (Chess::default(), CastlingMode::Standard)
                } else {
                    parse_start(fen.trim())?
                };
                self.arbiter_new_game(pos, mode, t_us);
                Ok(())
            }
            Decision::SetPosition(fen) => {
                if fen.trim().is_empty() {
                    return Err(Refused::InvalidArgument(
                        "SetPosition needs a FEN (NewGame \"\" starts a game from the standard position)"
                            .into(),
                    ));
                }
                let (pos, mode) = parse_start(fen.trim())?;
                let earlier = self.game.as_ref().and_then(|g| {
                    let wanted = super::game_fen(&pos);
                    let strip = |f: &str| f.rsplitn(3, ' ').nth(2).map(str::to_string);
                    g.positions
                        .iter()
                        .rposition(|p| strip(&super::game_fen(p)) == strip(&wanted))
                });
                match earlier {
                    Some(ply) => self.arbiter_reinstate(ply, t_us),
                    None => {
                        self.restart_from(pos, mode, Termination::PositionSet, t_us);
                        Ok(())
                    }
                }
            }
            Decision::Reinstate(ply) => self.arbiter_reinstate(*ply as usize, t_us),
            Decision::SetResult(r) => {
                self.forced_stands(r)?;
                self.arbiter_result_with(r, None, t_us)
            }
            Decision::SetResultWith(r, words) => {
                let words = termination_words(words)?;
                self.forced_stands(r)?;
                self.arbiter_result_with(r, Some(words), t_us)
            }
            Decision::SetTimeControl { spec, mode } => {
                let tc = crate::clock::control::TimeControl::parse(spec)
                    .map_err(|e| Refused::InvalidArgument(e.0))?;
                self.set_time_control(Some(tc), *mode == ClockMode::Drive, t_us)
            }
            Decision::SetClock(w, b) => self.arbiter_set_clock(*w, *b, t_us),
            Decision::AddTime(side, s) => self.arbiter_add_time(side, *s, t_us),
            Decision::Undo { force } => self.undo(*force, t_us),
            Decision::SetPlayers(..)
            | Decision::SetTags(_)
            | Decision::SetPairing(..)
            | Decision::ShowText(..) => Ok(()),
            // Refused by `arbiter`.
            Decision::SetLichessRound(..) => Err(Refused::InvalidArgument(NOT_A_BOARDS.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for d in [
            Decision::NewGame(String::new()),
            Decision::SetPosition("8/8/8/8/8/8/8/K1k5 w - - 0 1".into()),
            Decision::Reinstate(4),
            Decision::SetResult("1/2-1/2".into()),
            Decision::SetResultWith("1-0".into(), "time forfeit".into()),
            Decision::SetTimeControl {
                spec: "40/5400+30:1800+30".into(),
                mode: ClockMode::Drive,
            },
            Decision::SetTimeControl {
                spec: "5400+30".into(),
                mode: ClockMode::Report,
            },
            Decision::SetClock(5_400_000, 0),
            Decision::AddTime("black".into(), -30),
            Decision::Undo { force: false },
            Decision::Undo { force: true },
            Decision::SetPlayers("Carlsen, Magnus".into(), "Caruana, Fabiano".into()),
            Decision::SetTags([("WhiteElo".to_string(), "2830".to_string())].into()),
            Decision::SetPairing(3, [("White".to_string(), "Carlsen, Magnus".to_string())].into()),
            Decision::ShowText("ARBITER".into(), 5),
        ] {
            assert_eq!(Decision::from_record(d.method(), &d.args()), Ok(Some(d.clone())));
        }
        assert_eq!(
            Decision::from_record("SetPlayers", &[Value::from("A"), Value::from("B")]),
            Ok(Some(Decision::SetPlayers("A".into(), "B".into())))
        );
        assert_eq!(Decision::from_record("Resign", &[]), Ok(None));
        assert!(Decision::from_record("SetPlayers", &[Value::from("A")]).is_err());
        assert!(Decision::from_record("SetTags", &[serde_json::json!({"WhiteElo": 2830})]).is_err());
        assert!(Decision::from_record("SetPairing", &[Value::from(-1), serde_json::json!({})]).is_err());
        assert!(Decision::from_record("SetClock", &[Value::from("x"), Value::from(2)]).is_err());
        assert!(Decision::from_record("Reinstate", &[Value::from("x")]).is_err());
        assert!(Decision::from_record("SetResult", &[]).is_err());
        // A journal written before the termination's words: one argument.
        assert_eq!(
            Decision::from_record("SetResult", &[Value::from("1-0")]),
            Ok(Some(Decision::SetResult("1-0".into())))
        );
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
            Ok(Some(Decision::SetTimeControl {
                spec: "G/90".into(),
                mode: ClockMode::Drive
            }))
        );
        assert!(
            Decision::from_record("SetTimeControl", &[Value::from("G/90"), Value::from("auto")]).is_err()
        );
    }
}
