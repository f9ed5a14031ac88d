//! What needs an arbiter: the rules events that raise (or settle) an alert, and
//! each board's urgency, from its state and its alerts. Pure: events and
//! snapshots in, the store's state changed.

use serde_json::Value;

use super::store::{Alert, State};
use crate::api::Snapshot;

/// A board's urgency, most urgent first (the console sorts by it).
pub const LEVELS: [&str; 10] = [
    "irregular position",
    "touch-move",
    "flag fall",
    "lost track",
    "clock not answering",
    "disconnected",
    "draw claimable",
    "under way",
    "finished",
    "waiting",
];

/// The FIDE Laws' article of an irregular position.
fn irregular_article(kind: &str) -> &'static str {
    match kind {
        "illegal_move" => "7.5.1",
        "promotion_incomplete" => "7.5.2",
        "clock_without_move" => "7.5.3",
        "displaced" => "7.4.1",
        _ => "",
    }
}

fn words(s: &str) -> String {
    s.replace('_', " ")
}

fn list(v: &Value) -> String {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Applies one rules event (the network's JSON, with `board`) to the alerts;
/// true if they changed. Arbiter decisions are not handled here.
pub fn observe(state: &mut State, e: &Value, now_ms: u64) -> bool {
    let Some(board) = e["board"].as_str() else {
        return false;
    };
    let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
    let t = e["t"].as_f64().unwrap_or(0.0);
    match e["type"].as_str().unwrap_or_default() {
        "irregular" => {
            let kind = s("kind");
            if kind == "after_end" {
                return false;
            }
            let completed = e["completed"].as_bool().unwrap_or(false);
            let count = e["count"].as_u64().unwrap_or(0);
            let mut text = format!("{} ({}", words(&kind), s("side"));
            let squares = list(&e["squares"]);
            if !squares.is_empty() {
                text.push_str(&format!(": {squares}"));
            }
            text.push(')');
            if completed {
                text.push_str(&format!(", completed, violation {count}"));
            }
            if let Some(p) = e["penalty"].as_str() {
                text.push_str(&format!("; penalty: {p}"));
            }
            let alert = match kind.as_str() {
                "lost_track" => "lost_track",
                "ambiguous" => "ambiguous",
                _ => "irregular",
            };
            if kind == "lost_track" {
                text = "the record lost track of the board: set the position, or have the players set up the last recorded one".into();
            }
            let mut key = format!("{kind}:{completed}:{count}");
            if kind == "ambiguous" {
                // A report, not a state: it stands until acknowledged.
                let ply = e["ply"].as_u64().unwrap_or(0);
                text = format!(
                    "the board's dumps leave the moves open from ply {ply}: the inferred moves may be another path to the same board (the other side to move); check the score with the players"
                );
                key = format!("ambiguous:{ply}");
            }
            state.raise(board, alert, key, text, irregular_article(&kind), now_ms);
            true
        }
        "resolved" => state.settle(board, |k| k == "irregular" || k == "lost_track"),
        "touch_move" => {
            let text = format!(
                "{} touched {} and played {}",
                s("side"),
                list(&e["touched"]),
                s("played")
            );
            state.raise(
                board,
                "touch_move",
                format!("touch:{t}"),
                text,
                &s("article"),
                now_ms,
            );
            true
        }
        "flag" => {
            let count_met = e["count_met"].as_bool().unwrap_or(false);
            let text = format!(
                "{}'s flag has fallen after ply {}{}",
                s("side"),
                e["ply"],
                if count_met { " (move count met)" } else { "" }
            );
            let article = if count_met { "6.8" } else { "6.9" };
            state.raise(
                board,
                "flag",
                format!("flag:{}:{}", s("side"), e["ply"]),
                text,
                article,
                now_ms,
            );
            true
        }
        "draw_claimable" => {
            let reason = s("reason");
            let article = match reason.as_str() {
                "threefold" => "9.2",
                "fifty_moves" => "9.3",
                _ => "",
            };
            let text = format!("a draw may be claimed: {}", words(&reason));
            state.raise(
                board,
                "draw_claimable",
                format!("draw:{reason}:{t}"),
                text,
                article,
                now_ms,
            );
            true
        }
        "clock_unresponsive" => {
            let text = "the clock does not answer: check its power and cable".to_string();
            state.raise(board, "clock_unresponsive", "clock".into(), text, "", now_ms);
            true
        }
        "clock" => state.settle(board, |k| k == "clock_unresponsive"),
        "game_start" => state.settle(board, |k| k != "disconnected" && k != "clock_unresponsive"),
        "game_end" => state.settle(board, |k| matches!(k, "touch_move" | "flag" | "draw_claimable")),
        _ => false,
    }
}

/// A board connected or not (seen in its snapshot); true if the alerts changed.
pub fn connection(state: &mut State, board: &str, connected: bool, now_ms: u64) -> bool {
    if connected {
        return state.settle(board, |k| k == "disconnected");
    }
    let had = state
        .alerts
        .get(board)
        .is_some_and(|l| l.iter().any(|a| a.active && a.kind == "disconnected"));
    if had {
        return false;
    }
    let text = "the board is disconnected: check its cable and power (the game is kept)".to_string();
    state.raise(board, "disconnected", "disconnected".into(), text, "", now_ms);
    true
}

/// The board's urgency (an index into [`LEVELS`]).
pub fn level(snap: &Snapshot, alerts: &[&Alert]) -> usize {
    let open = |kind: &str| {
        alerts
            .iter()
            .any(|a| a.active && a.acked_by.is_none() && a.kind == kind)
    };
    // Irregular positions and lost track stand until resolved, acknowledged or
    // not; the core reports them (the alert) before its snapshot says so.
    let standing = |kind: &str| alerts.iter().any(|a| a.active && a.kind == kind);
    let out_of_time =
        snap.status == "playing" && snap.has_clock && (snap.white_clock_ms <= 0 || snap.black_clock_ms <= 0);
    let irregular = snap.irregularity.as_str();
    if (!irregular.is_empty() && irregular != "lost_track" && irregular != "after_end")
        || standing("irregular")
    {
        0
    } else if open("touch_move") {
        1
    } else if open("flag") || out_of_time {
        2
    } else if irregular == "lost_track" || standing("lost_track") || open("ambiguous") {
        3
    } else if open("clock_unresponsive") {
        4
    } else if !snap.connected {
        5
    } else if open("draw_claimable") {
        6
    } else {
        match snap.status.as_str() {
            "finished" => 8,
            "waiting" => 9,
            _ => 7,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_raise_settle_and_rank_alerts() {
        let mut st = State::default();
        let ev = json!({"board": "b1", "t": 3.0, "type": "irregular", "kind": "illegal_move",
            "side": "white", "squares": ["e2", "e5"], "completed": false, "count": 1});
        assert!(observe(&mut st, &ev, 1));
        assert!(observe(&mut st, &ev, 2), "the same alert, updated");
        assert_eq!(st.alerts["b1"].len(), 1);
        assert_eq!(st.alerts["b1"][0].article, "7.5.1");
        let mut snap = Snapshot {
            connected: true,
            status: "irregular".into(),
            irregularity: "illegal_move".into(),
            ..Snapshot::default()
        };
        let refs: Vec<&Alert> = st.alerts["b1"].iter().collect();
        assert_eq!(LEVELS[level(&snap, &refs)], "irregular position");
        assert!(observe(
            &mut st,
            &json!({"board": "b1", "type": "resolved", "fen": ""}),
            3
        ));
        assert!(!st.alerts["b1"][0].active);
        let touch = json!({"board": "b1", "t": 4.0, "type": "touch_move", "article": "4.3.1",
            "side": "black", "touched": ["g8"], "played": "Nc6"});
        assert!(observe(&mut st, &touch, 4));
        snap.status = "playing".into();
        snap.irregularity.clear();
        let refs: Vec<&Alert> = st.alerts["b1"].iter().collect();
        assert_eq!(LEVELS[level(&snap, &refs)], "touch-move");
        let id = st.alerts["b1"][1].id;
        assert!(st.ack(id, "alice", 5));
        let refs: Vec<&Alert> = st.alerts["b1"].iter().collect();
        assert_eq!(LEVELS[level(&snap, &refs)], "under way", "acknowledged");
        snap.connected = false;
        assert!(connection(&mut st, "b1", false, 6));
        assert!(!connection(&mut st, "b1", false, 7), "raised once");
        let refs: Vec<&Alert> = st.alerts["b1"].iter().collect();
        assert_eq!(LEVELS[level(&snap, &refs)], "disconnected");
        assert!(connection(&mut st, "b1", true, 8));
        assert!(!observe(&mut st, &json!({"board": "b1", "type": "move"}), 9));
    }
}
