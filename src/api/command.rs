//! What an arbiter (or a tool) asks of a board: one type for every way in
//! (D-Bus, MQTT, the console), with the bounds every argument is held to.

use std::collections::BTreeMap;

use super::Error;
use super::tags::MAX_TAG_CHARS;

/// What an arbiter (or a tool) asks of a board.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    NewGame(String),
    SetPosition(String),
    Reinstate(u32),
    SetResult(String),
    /// The result and the words of the PGN `Termination` tag (`time forfeit`):
    /// D-Bus `SetResultWith`, journaled as `SetResult` with a second argument.
    SetResultWith(String, String),
    SetTimeControl(String),
    ShowText(String, u32),
    SetPlayers(String, String),
    SetClock(i64, i64),
    AddTime(String, i32),
    /// The pairing's tags ([`PAIRING_TAGS`](super::PAIRING_TAGS)) of the game under way and the next
    /// games; an empty value removes one.
    SetTags(BTreeMap<String, String>),
    /// A round's pairing for the board's next game (or the one not begun): the
    /// round (0: the board's own), the players and tags.
    SetPairing(u32, BTreeMap<String, String>),
    /// The board's last decision taken back; `true`: even when plies recorded
    /// since are dropped by it.
    Undo(bool),
}

impl Command {
    /// The rules core's decision this call stands for (none for the calls the
    /// core does not take: players, tags, a text on the clock). An arbiter's
    /// time control drives the clock.
    pub fn decision(&self) -> Option<crate::rules::Decision> {
        self.split().ok()
    }

    /// The method's name and its arguments as JSON values, as the sensor log's
    /// `arbiter` record holds them (a decision's as [`crate::rules::Decision`]
    /// writes it).
    pub fn record(&self) -> (&'static str, Vec<serde_json::Value>) {
        match self.split() {
            Ok(d) => (d.method(), d.args()),
            Err(record) => record,
        }
    }

    /// The decision, or the record of a call that is not one.
    fn split(&self) -> Result<crate::rules::Decision, (&'static str, Vec<serde_json::Value>)> {
        use crate::rules::Decision;
        use serde_json::Value;
        Ok(match self {
            Command::NewGame(f) => Decision::NewGame(f.clone()),
            Command::SetPosition(f) => Decision::SetPosition(f.clone()),
            Command::Reinstate(p) => Decision::Reinstate(*p),
            Command::SetResult(r) => Decision::SetResult(r.clone()),
            Command::SetResultWith(r, t) => Decision::SetResultWith(r.clone(), t.clone()),
            Command::SetTimeControl(s) => Decision::SetTimeControl {
                spec: s.clone(),
                mode: crate::rules::ClockMode::Drive,
            },
            Command::SetClock(w, b) => Decision::SetClock(*w, *b),
            Command::AddTime(side, s) => Decision::AddTime(side.clone(), *s),
            Command::Undo(force) => Decision::Undo { force: *force },
            Command::ShowText(t, s) => {
                return Err(("ShowText", vec![Value::from(t.as_str()), Value::from(*s)]));
            }
            Command::SetPlayers(w, b) => {
                return Err((
                    "SetPlayers",
                    vec![Value::from(w.as_str()), Value::from(b.as_str())],
                ));
            }
            Command::SetTags(tags) => return Err(("SetTags", vec![tags_json(tags)])),
            Command::SetPairing(round, tags) => {
                return Err(("SetPairing", vec![Value::from(*round), tags_json(tags)]));
            }
        })
    }

    /// The command a method name and its arguments (JSON, as `record` gives
    /// them) stand for; what is wrong, else.
    pub fn from_json(method: &str, args: &[serde_json::Value]) -> Result<Command, String> {
        use serde_json::Value;
        let text = |i: usize| match args.get(i) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(format!("{method}: argument {} must be a string, not {v}", i + 1)),
            None => Err(format!("{method}: argument {} is missing", i + 1)),
        };
        let int = |i: usize| match args.get(i) {
            Some(v) => v
                .as_i64()
                .ok_or_else(|| format!("{method}: argument {} must be an integer, not {v}", i + 1)),
            None => Err(format!("{method}: argument {} is missing", i + 1)),
        };
        let map = |i: usize| match args.get(i) {
            Some(Value::Object(o)) => o
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    v => Err(format!("{method}: tag {k} must be a string, not {v}")),
                })
                .collect::<Result<BTreeMap<String, String>, String>>(),
            Some(v) => Err(format!("{method}: argument {} must be an object, not {v}", i + 1)),
            None => Err(format!("{method}: argument {} is missing", i + 1)),
        };
        let arity = match method {
            // The result, and optionally the termination's words.
            "SetResult" if args.len() == 2 => 2,
            "Undo" if args.len() == 1 => 1,
            "Undo" => 0,
            "NewGame" | "SetPosition" | "Reinstate" | "SetResult" | "SetTimeControl" | "SetTags" => 1,
            "ShowText" | "SetPlayers" | "SetClock" | "AddTime" | "SetPairing" | "SetResultWith" => 2,
            _ => return Err(format!("no method {method}")),
        };
        if args.len() != arity {
            return Err(format!("{method} takes {arity} argument(s), not {}", args.len()));
        }
        let range = |v: i64, what: &str| format!("{method}: {v} is out of range for {what}");
        Ok(match method {
            "Undo" => Command::Undo(match args.first() {
                None => false,
                Some(serde_json::Value::Bool(force)) => *force,
                Some(v) => return Err(format!("Undo: argument 1 (force) must be true or false, not {v}")),
            }),
            "NewGame" => Command::NewGame(text(0)?),
            "SetPosition" => Command::SetPosition(text(0)?),
            "Reinstate" => {
                let p = int(0)?;
                Command::Reinstate(u32::try_from(p).map_err(|_| range(p, "a ply"))?)
            }
            "SetResult" if arity == 2 => Command::SetResultWith(text(0)?, text(1)?),
            "SetResult" => Command::SetResult(text(0)?),
            "SetResultWith" => Command::SetResultWith(text(0)?, text(1)?),
            "SetTimeControl" => Command::SetTimeControl(text(0)?),
            "ShowText" => {
                let s = int(1)?;
                Command::ShowText(text(0)?, u32::try_from(s).map_err(|_| range(s, "seconds"))?)
            }
            "SetPlayers" => Command::SetPlayers(text(0)?, text(1)?),
            "SetClock" => Command::SetClock(int(0)?, int(1)?),
            "SetTags" => Command::SetTags(map(0)?),
            "SetPairing" => {
                let r = int(0)?;
                Command::SetPairing(u32::try_from(r).map_err(|_| range(r, "a round"))?, map(1)?)
            }
            _ => {
                let s = int(1)?;
                Command::AddTime(text(0)?, i32::try_from(s).map_err(|_| range(s, "seconds"))?)
            }
        })
    }
}

/// The longest argument a command takes, in bytes (after trimming): a FEN is
/// under 100, a name in a pairing list well under 100.
const MAX_ARGUMENT: usize = 100;

/// The longest time control (PGN syntax or event form): a few periods.
const MAX_TIME_CONTROL: usize = 64;

impl Command {
    /// The command with its text arguments trimmed, or why it is refused when
    /// one is longer than any real one: what is accepted is journaled, and a
    /// caller must not be able to write a megabyte into the recording, the log
    /// or the PGN.
    pub fn normalized(self) -> Result<Command, Error> {
        let bounded = |what: &str, text: String, max: usize| {
            let t = text.trim();
            if t.len() > max {
                return Err(Error::InvalidArgument(format!(
                    "{what} is {} bytes long; at most {max} are taken",
                    t.len()
                )));
            }
            Ok(t.to_string())
        };
        Ok(match self {
            Command::NewGame(f) => Command::NewGame(bounded("the FEN", f, MAX_ARGUMENT)?),
            Command::SetPosition(f) => Command::SetPosition(bounded("the FEN", f, MAX_ARGUMENT)?),
            Command::SetResult(r) => Command::SetResult(bounded("the result", r, 8)?),
            Command::SetResultWith(r, t) => {
                Command::SetResultWith(bounded("the result", r, 8)?, crate::rules::termination_words(&t)?)
            }
            Command::SetTimeControl(t) => {
                Command::SetTimeControl(bounded("the time control", t, MAX_TIME_CONTROL)?)
            }
            Command::ShowText(t, secs) => Command::ShowText(bounded("the text", t, MAX_ARGUMENT)?, secs),
            // A name as a pairing's tag may be (in characters).
            Command::SetPlayers(w, b) => Command::SetPlayers(
                bounded("White's name", w, MAX_TAG_CHARS * 4)?,
                bounded("Black's name", b, MAX_TAG_CHARS * 4)?,
            ),
            Command::AddTime(side, secs) => Command::AddTime(bounded("the side", side, 8)?, secs),
            // Tags are checked, names and values bounded, by `check_tags`.
            other @ (Command::Reinstate(_)
            | Command::Undo(_)
            | Command::SetClock(..)
            | Command::SetTags(_)
            | Command::SetPairing(..)) => other,
        })
    }
}

/// Tags as one JSON object (as the `arbiter` record holds them).
fn tags_json(tags: &BTreeMap<String, String>) -> serde_json::Value {
    serde_json::Value::Object(
        tags.iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_arguments_say_what_is_wrong() {
        let e = |m: &str, a: serde_json::Value| Command::from_json(m, a.as_array().unwrap()).unwrap_err();
        assert!(e("Resign", json!([])).contains("no method Resign"));
        assert!(e("SetPlayers", json!(["A"])).contains("takes 2"));
        assert!(e("SetPlayers", json!(["A", 3])).contains("argument 2 must be a string"));
        assert!(e("Reinstate", json!([-1])).contains("out of range"));
        assert!(e("SetClock", json!([1.5, 2])).contains("integer"));
        assert!(e("AddTime", json!(["white", 1u64 << 40])).contains("out of range"));
    }

    #[test]
    fn arguments_are_trimmed_and_bounded_before_they_are_accepted() {
        let padded = format!("  8/8/8/8/8/8/8/K6k w - - 0 1{}", " ".repeat(1 << 20));
        assert_eq!(
            Command::NewGame(padded).normalized().unwrap(),
            Command::NewGame("8/8/8/8/8/8/8/K6k w - - 0 1".into())
        );
        let long = |n: usize| "x".repeat(n);
        for c in [
            Command::SetPosition(long(101)),
            Command::SetPlayers(long(801), "B".into()),
            Command::SetPlayers("A".into(), long(801)),
            Command::ShowText(long(101), 5),
            Command::SetResult(long(9)),
            Command::SetResultWith("1-0".into(), long(61)),
            Command::AddTime(long(9), 1),
            Command::SetTimeControl("40/5400+30:".repeat(3000)),
        ] {
            match c.clone().normalized() {
                Err(Error::InvalidArgument(m)) => assert!(m.contains("at most"), "{c:?}: {m}"),
                other => panic!("{c:?} was not refused: {other:?}"),
            }
        }
        assert_eq!(
            Command::SetPlayers(" Carlsen, Magnus ".into(), long(100))
                .normalized()
                .unwrap(),
            Command::SetPlayers("Carlsen, Magnus".into(), long(100))
        );
    }
}
