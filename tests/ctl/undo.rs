//! Issue 48: `ctl undo` takes a finished game's take-back back (its moves and
//! its result come back), `ctl history` says every decision in words with the
//! time of day, who and through which door, and both hold across a SIGKILL.

use super::results::{six_plies_on_board1, start_two};
use super::*;

/// Board 1 plays six plies and is given 1-0 on time; `reinstate --force`
/// takes it back to ply 2 and clears the result; `undo` gives back the six
/// plies and 1-0, in the PGN too; `history` says each decision in words,
/// marks the undone one, and says the same after a SIGKILL. Board 2, with no
/// decision, has nothing to undo, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_gives_a_finished_game_its_moves_and_result_back_and_history_says_it_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg, daemon, game1) = six_plies_on_board1(d, 48, "481").await;

    ok(&address, &["result", "1", "1-0", "--termination", "time forfeit"]).await;
    property_is(&address, 1, "Result", "1-0").await;
    ok(&address, &["reinstate", "1", "2", "--force"]).await;
    property_is(&address, 1, "Result", "").await;

    let said = ok(&address, &["undo", "1"]).await;
    assert!(said.contains("undo: take back to 1... "), "{said}");
    assert!(said.contains("(ply 2)"), "{said}");
    property_is(&address, 1, "Result", "1-0").await;
    let sans = |v: zbus::zvariant::OwnedValue| -> usize {
        let text = value_text(&v);
        text.split_whitespace().count()
    };
    assert_eq!(
        sans(property(&address, 1, "Moves").await.unwrap()),
        6,
        "the six plies are back"
    );
    wait_for("the PGN's six plies and 1-0 back", 30, || {
        plies_in(&game1) == 6 && tag_in(&game1, "Result") == "1-0"
    })
    .await;

    let history = ok(&address, &["history", "1"]).await;
    let me = me();
    for words in [
        format!("DECISION  result 1-0 (time forfeit)  ({me}, D-Bus)"),
        "(ply 2)".to_string(),
        "[undone]".to_string(),
        "undo: take back to 1... ".to_string(),
    ] {
        assert!(history.contains(&words), "{words:?} not in:\n{history}");
    }
    assert!(history.contains("GAME      game 1 starts"), "{history}");

    // Nothing to undo on board 2: said, exit 1.
    let o = ctl(&address, &["undo", "2"]).await;
    assert_eq!(o.code, 1, "{}{}", o.out, o.err);
    assert!(o.err.contains("no decision"), "{}", o.err);

    // The history is made again from the journal after a SIGKILL: the same
    // entries, with the same times, doors and words.
    let before = ok(&address, &["history", "1", "--json"]).await;
    daemon.kill();
    let _daemon = start_two(&cfg, d, &address);
    property_is(&address, 1, "Result", "1-0").await;
    let after = ok(&address, &["history", "1", "--json"]).await;
    let decisions = |json: &str| -> Vec<serde_json::Value> {
        let all: Vec<serde_json::Value> = serde_json::from_str(json).unwrap();
        all.into_iter().filter(|e| e["kind"] == "decision").collect()
    };
    assert_eq!(decisions(&after), decisions(&before), "{after}");
    assert_eq!(decisions(&after).len(), 3, "{after}");
    let last = ok(&address, &["history", "1", "--last", "1", "--json"]).await;
    let last: Vec<serde_json::Value> = serde_json::from_str(&last).unwrap();
    assert_eq!(last.len(), 1, "{last:?}");
}

/// Issue 57, defect 4: with the clock running its own program (report mode,
/// the default), `ctl undo` of `add-time` and of `set-clock` gives the time
/// back: before, the undo set the same times again while saying it gave
/// them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_of_time_added_or_clocks_set_in_report_mode_gives_the_time_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, _cfg, _daemon, _game1) = six_plies_on_board1(d, 57, "574").await;
    property_is(&address, 2, "BlackClockMs", "5400000").await;
    ok(&address, &["add-time", "2", "black", "+1m"]).await;
    property_is(&address, 2, "BlackClockMs", "5460000").await;
    let said = ok(&address, &["undo", "2"]).await;
    assert!(said.contains("undo: black +1:00"), "{said}");
    property_is(&address, 2, "BlackClockMs", "5400000").await;
    property_is(&address, 2, "WhiteClockMs", "5400000").await;
    ok(&address, &["set-clock", "2", "1:00:00", "0:45:00"]).await;
    property_is(&address, 2, "BlackClockMs", "2700000").await;
    ok(&address, &["undo", "2"]).await;
    property_is(&address, 2, "WhiteClockMs", "5400000").await;
    property_is(&address, 2, "BlackClockMs", "5400000").await;
}
