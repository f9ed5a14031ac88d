//! What an arbiter (or a tool) asks of a board is a [`Decision`], one value from
//! every door (D-Bus, `ctl`, the console, MQTT) to the journal: the doors build
//! it, its payloads checked there (D-Bus from its typed methods with
//! `Decision::new_game`, `Decision::set_result`, ...; the console, MQTT and
//! D-Bus `Decide` from a method name and JSON arguments, by [`from_call`], that
//! is [`Decision::from_call`], the one parser of method names), and bound its
//! free texts here before a board takes it.

use super::Error;
use super::tags::MAX_TAG_CHARS;
use crate::log::clip_to;
pub use crate::rules::Decision;

/// The longest free text a decision takes, in bytes (after trimming): a text
/// on the clock is 8, a lichess round's id 8 a round. A player's name is
/// bounded in characters ([`MAX_TAG_CHARS`]), as a pairing's tags are; a FEN,
/// a result, a side and a time control are checked when the decision is made
/// (`rules::FenPosition`, ...).
const MAX_ARGUMENT: usize = 100;

/// The decision a door's method name and JSON arguments stand for; what is
/// wrong, else (a method no board has, arguments that do not fit it).
pub fn from_call(method: &str, args: &[serde_json::Value]) -> Result<Decision, Error> {
    Ok(Decision::from_call(method, args)?)
}

/// The longest JSON text of a decision's arguments a door takes (a round's
/// tags are the longest: a few hundred bytes).
pub const MAX_ARGS_JSON: usize = 16 * 1024;

/// The decision a method name and its arguments as JSON text (an array) stand
/// for, as D-Bus `Decide` takes them; what is wrong, else.
pub fn from_json_call(method: &str, args: &str) -> Result<Decision, Error> {
    if args.len() > MAX_ARGS_JSON {
        return Err(Error::InvalidArgument(format!(
            "the arguments are {} bytes of JSON; at most {MAX_ARGS_JSON} are taken",
            args.len()
        )));
    }
    let args: Vec<serde_json::Value> = match serde_json::from_str(args) {
        Ok(serde_json::Value::Array(a)) => a,
        Ok(_) => {
            return Err(Error::InvalidArgument(
                "the arguments are a JSON array (`[\"1-0\"]`, `[]`)".into(),
            ));
        }
        Err(e) => {
            return Err(Error::InvalidArgument(format!(
                "the arguments do not read as JSON: {e}"
            )));
        }
    };
    from_call(method, &args)
}

/// The decision with its text arguments trimmed, or why it is refused when one
/// is longer than any real one: what is accepted is journaled, and a caller
/// must not be able to write a megabyte into the recording, the log or the PGN.
pub fn bounded(d: Decision) -> Result<Decision, Error> {
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
    // A player's name in characters, as a pairing's tags: a name in Cyrillic
    // or Greek takes two bytes a letter, in Chinese three.
    let name = |what: &str, text: String| {
        let t = text.trim();
        if t.chars().nth(MAX_TAG_CHARS).is_some() {
            return Err(Error::InvalidArgument(format!(
                "{what} is {} characters long; a name is at most {MAX_TAG_CHARS} characters",
                t.chars().count()
            )));
        }
        Ok(t.to_string())
    };
    Ok(match d {
        Decision::ShowText(t, secs) => Decision::ShowText(bounded("the text", t, MAX_ARGUMENT)?, secs),
        Decision::SetPlayers(w, b) => {
            Decision::SetPlayers(name("White's name", w)?, name("Black's name", b)?)
        }
        Decision::SetLichessRound(round, id) => {
            Decision::SetLichessRound(round, bounded("the round's id", id, MAX_ARGUMENT)?)
        }
        // Checked when made (a FEN, a result, clock times, a side, a time
        // control); tags are checked, names and values bounded, by
        // `check_tags`.
        other @ (Decision::NewGame(_)
        | Decision::SetPosition(_)
        | Decision::SetResult(..)
        | Decision::SetTimeControl { .. }
        | Decision::AddTime(..)
        | Decision::Reinstate(_)
        | Decision::Undo { .. }
        | Decision::SetClock(..)
        | Decision::SetTags(_)
        | Decision::SetPairing(..)) => other,
        Decision::Unknown { method, .. } => {
            return Err(Error::InvalidArgument(format!(
                "no method {}",
                clip_to(&method, 40)
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_arguments_say_what_is_wrong() {
        let e = |m: &str, a: serde_json::Value| from_call(m, a.as_array().unwrap()).unwrap_err().to_string();
        assert!(e("Resign", json!([])).contains("no method Resign"));
        assert!(e("SetPlayers", json!(["A"])).contains("SetPlayers takes"));
        assert!(e("SetPlayers", json!(["A", 3])).contains("SetPlayers takes"));
        assert!(e("Reinstate", json!([-1])).contains("ply number"));
        assert!(e("SetClock", json!([1.5, 2])).contains("ms"));
        assert!(e("AddTime", json!(["white", 1u64 << 40])).contains("seconds"));
        assert!(e("SetTags", json!([{"WhiteElo": 2830}])).contains("must be a string"));
    }

    #[test]
    fn arguments_are_trimmed_and_bounded_before_they_are_accepted() {
        let padded = format!("  8/8/8/8/8/8/8/K6k w - - 0 1{}", " ".repeat(1 << 20));
        assert_eq!(
            bounded(Decision::new_game(&padded).unwrap()).unwrap().args(),
            [serde_json::Value::from("8/8/8/8/8/8/8/K6k w - - 0 1")]
        );
        let long = |n: usize| "x".repeat(n);
        for d in [
            Decision::SetPlayers(long(201), "B".into()),
            Decision::SetPlayers("A".into(), long(201)),
            Decision::ShowText(long(101), 5),
        ] {
            match bounded(d.clone()) {
                Err(Error::InvalidArgument(m)) => assert!(m.contains("at most"), "{d:?}: {m}"),
                other => panic!("{d:?} was not refused: {other:?}"),
            }
        }
        // Those checked when the decision is made, at every door.
        for (method, args) in [
            ("SetPosition", json!([long(101)])),
            ("SetResult", json!([long(9)])),
            ("SetResult", json!(["1-0", long(61)])),
            ("AddTime", json!([long(9), 1])),
            ("SetTimeControl", json!(["40/5400+30:".repeat(3000)])),
        ] {
            match from_call(method, args.as_array().unwrap()) {
                Err(Error::InvalidArgument(m)) => assert!(m.contains("at most"), "{method}: {m}"),
                other => panic!("{method} {args} was not refused: {other:?}"),
            }
        }
        assert_eq!(
            bounded(Decision::SetPlayers(" Carlsen, Magnus ".into(), long(100))).unwrap(),
            Decision::SetPlayers("Carlsen, Magnus".into(), long(100))
        );
    }

    /// A player's name is bounded in characters (a name in Cyrillic or Greek
    /// takes two bytes a letter, in Chinese three), as a pairing's tags are,
    /// and docs/NETWORK.md says so.
    #[test]
    fn a_player_s_name_is_bounded_in_characters_as_the_docs_say() {
        let name = |n: usize| "Ж".repeat(n);
        assert!(bounded(Decision::SetPlayers(name(MAX_TAG_CHARS), "B".into())).is_ok());
        for d in [
            Decision::SetPlayers(name(MAX_TAG_CHARS + 1), "B".into()),
            Decision::SetPlayers("A".into(), "x".repeat(MAX_TAG_CHARS + 1)),
        ] {
            match bounded(d) {
                Err(Error::InvalidArgument(m)) => {
                    assert!(m.contains(&format!("at most {MAX_TAG_CHARS} characters")), "{m}")
                }
                other => panic!("not refused: {other:?}"),
            }
        }
        let doc = include_str!("../../docs/NETWORK.md")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            doc.contains(&format!("a player's name at most {MAX_TAG_CHARS} characters")),
            "docs/NETWORK.md does not say how long a name may be"
        );
    }
}
