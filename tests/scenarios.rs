//! The scenario suite: one hand-written sensor log per article and kind of
//! the rules (`docs/RULES.md`), each carrying the events it must produce.
//!
//! A fixture states its expectations in comments:
//! - `# expect-moves: e2e4 e7e5 ...` the UCI moves of the game record (every game of
//!   the log, in order);
//! - `# expect: {json}` an event. The events the log produces, keeping only the
//!   types that are always checked (amendments, take-backs, touch-move flags,
//!   irregularities, resolutions, claims, flag falls, game ends) and the types some `expect` line names, must
//!   match the `expect` lines one for one, in order; every field an `expect` line
//!   gives must be equal, fields it leaves out are not compared.
//!
//! Anyone can replay a fixture: `eboard-bridge replay --format jsonl FIXTURE`.

use crate::common;

use std::path::PathBuf;

use eboard_bridge::log::read_log;
use eboard_bridge::output::replay;
use eboard_bridge::rules::Config;
use serde_json::Value;

const ALWAYS_CHECKED: [&str; 9] = [
    "flag",
    "move_amended",
    "takeback",
    "touch_move",
    "irregular",
    "resolved",
    "draw_claimable",
    "game_end",
    "game_start",
];

struct Expect {
    moves: Vec<String>,
    /// Which moves of `moves` (1-based) the record marks inferred, when given.
    inferred: Option<Vec<usize>>,
    events: Vec<Value>,
}

fn expectations(path: &PathBuf) -> Expect {
    let text = std::fs::read_to_string(path).unwrap();
    let mut moves = None;
    let mut inferred = None;
    let mut events = Vec::new();
    for line in text.lines() {
        if let Some(m) = line.strip_prefix("# expect-moves:") {
            moves = Some(m.split_whitespace().map(str::to_string).collect());
        } else if let Some(m) = line.strip_prefix("# expect-inferred:") {
            let plies = m
                .split_whitespace()
                .map(|w| {
                    w.parse()
                        .unwrap_or_else(|e| panic!("{}: bad expect-inferred `{w}`: {e}", path.display()))
                })
                .collect();
            inferred = Some(plies);
        } else if let Some(e) = line.strip_prefix("# expect:") {
            let v: Value = serde_json::from_str(e.trim())
                .unwrap_or_else(|err| panic!("{}: bad expect line `{e}`: {err}", path.display()));
            assert!(
                v.get("type").is_some(),
                "{}: expect line without type",
                path.display()
            );
            events.push(v);
        }
    }
    // A gap's inferred plies are exactly the plies the line did not show: every
    // gap scenario says which they are.
    let gap = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("gap_"));
    assert!(
        !gap || inferred.is_some(),
        "{}: a gap scenario without `# expect-inferred:`",
        path.display()
    );
    Expect {
        moves: moves.unwrap_or_else(|| panic!("{}: no `# expect-moves:` line", path.display())),
        inferred,
        events,
    }
}

/// Every field of `want` is in `got` with the same value; a `false` also
/// matches a field left out (events leave out flags that are false, such as
/// `inferred`).
fn matches(want: &Value, got: &Value) -> bool {
    want.as_object().is_some_and(|w| {
        w.iter()
            .all(|(k, v)| got.get(k) == Some(v) || (*v == Value::Bool(false) && got.get(k).is_none()))
    })
}

fn check(path: &PathBuf) -> Result<(), String> {
    let expect = expectations(path);
    let log = read_log(path).map_err(|e| e.to_string())?;
    let start = log
        .header
        .get("fen")
        .map(|f| replay::parse_start(f).expect("fixture fen"));
    // `# flag: end`: the fixture is run with flag falls ending the game.
    let cfg = Config {
        flag: log
            .header
            .get("flag")
            .map_or(Default::default(), |f| f.parse().expect("fixture flag")),
        ..Config::default()
    };
    let r = replay::run(&log, &path.display().to_string(), cfg, start).map_err(|e| e.to_string())?;
    let moves: Vec<String> = r
        .core
        .games()
        .flat_map(|g| g.moves.iter().map(|p| p.uci.clone()))
        .collect();
    if moves != expect.moves {
        return Err(format!("moves {moves:?}, expected {:?}", expect.moves));
    }
    if let Some(want) = &expect.inferred {
        let marked: Vec<usize> = r
            .core
            .games()
            .flat_map(|g| g.moves.iter().map(|p| p.inferred))
            .enumerate()
            .filter_map(|(i, inferred)| inferred.then_some(i + 1))
            .collect();
        if &marked != want {
            return Err(format!("moves marked inferred {marked:?}, expected {want:?}"));
        }
    }
    let named: Vec<&str> = expect.events.iter().filter_map(|v| v["type"].as_str()).collect();
    let got: Vec<Value> = r
        .events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .filter(|v| {
            let ty = v["type"].as_str().unwrap_or("");
            ALWAYS_CHECKED.contains(&ty) || named.contains(&ty)
        })
        .collect();
    let show = |vs: &[Value]| vs.iter().map(|v| format!("  {v}\n")).collect::<String>();
    if got.len() != expect.events.len() || !expect.events.iter().zip(&got).all(|(w, g)| matches(w, g)) {
        return Err(format!(
            "events differ\nexpected:\n{}got:\n{}",
            show(&expect.events),
            show(&got)
        ));
    }
    Ok(())
}

#[test]
fn every_scenario_produces_its_expected_events() {
    let paths = common::files_with_extension(&common::fixture("scenarios"), "esl");
    assert!(paths.len() >= 30, "only {} scenarios", paths.len());
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| check(p).err().map(|e| format!("{}: {e}", p.display())))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}

/// The matcher itself: a missing event, an extra one, or a wrong field fails.
#[test]
fn the_matcher_rejects_what_differs() {
    let want: Value = serde_json::json!({"type": "touch_move", "article": "4.3.1"});
    assert!(matches(
        &want,
        &serde_json::json!({"type": "touch_move", "article": "4.3.1", "side": "white"})
    ));
    assert!(!matches(
        &want,
        &serde_json::json!({"type": "touch_move", "article": "4.3.2"})
    ));
    assert!(!matches(&want, &serde_json::json!({"type": "touch_move"})));
    // A false flag matches the field left out, never a true one.
    let seen: Value = serde_json::json!({"type": "move", "inferred": false});
    assert!(matches(&seen, &serde_json::json!({"type": "move", "ply": 3})));
    assert!(!matches(
        &seen,
        &serde_json::json!({"type": "move", "inferred": true})
    ));
}
