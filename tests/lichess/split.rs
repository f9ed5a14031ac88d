//! Issue 60, item 7: a round of more boards than a lichess round takes, split
//! over several broadcast rounds by board ranges.

use super::*;

/// The rounds `ctl` reads from `Manager1.Lichess`, as `(id, first board, last
/// board, state)`.
async fn parts(address: &str) -> Vec<(String, u32, u32, String)> {
    lichess_property(address)
        .await
        .into_iter()
        .map(|r| (r.id, r.first_board, r.last_board, r.state))
        .collect()
}

/// A round of 66 games (on disk: no board plays) and `rounds = { 1 =
/// ["Round001", "Round002"] }`: boards 1-64 reach the first broadcast round,
/// 65-66 the second, nothing is said to be left out; the doors show both.
/// `ctl lichess 1 Round003 Round004` moves both (journaled as one decision),
/// and a restart keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_of_66_boards_reaches_two_broadcast_rounds_64_and_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lichess = StandIn::start(&["Round001", "Round002", "Round003", "Round004"], &[]).await;
    token_file(d, TOKEN);
    games_on_disk(d, 1..=66);
    let address = private_bus(d).await;
    let cfg = device_dir_config(
        d,
        "",
        &format!(
            "url = \"{}\"\nrounds = {{ 1 = [\"Round001\", \"Round002\"] }}\nmax_per_second = 10",
            lichess.url
        ),
    );
    let run = || Running::spawn(&mut run_command(&cfg, &[], Some(&address)));
    let daemon = run();
    wait_for("boards 1-64 at Round001, 65-66 at Round002", 30, || {
        lichess.games_taken("Round001") == round_tags(1..=64)
            && lichess.games_taken("Round002") == round_tags(65..=66)
    })
    .await;
    assert_eq!(daemon.logged("not pushed"), 0, "{}", daemon.log());
    assert_eq!(
        daemon.logged("lichess: pushing to http://127.0.0.1"),
        1,
        "{}",
        daemon.log()
    );
    assert!(
        daemon
            .log()
            .contains("round 1 to Round001 (boards 1-64) and Round002 (boards 65 and up)"),
        "{}",
        daemon.log()
    );
    let both = |a: &str, b: &str| {
        vec![
            (a.to_string(), 1, 64, "pushed".to_string()),
            (b.to_string(), 65, 0, "pushed".to_string()),
        ]
    };
    common::wait_until("both broadcast rounds pushed", 10, || {
        let address = address.clone();
        let want = both("Round001", "Round002");
        async move {
            let p = parts(&address).await;
            if p == want { Ok(()) } else { Err(format!("{p:?}")) }
        }
    })
    .await;
    let (code, out, err) = ctl(&address, &["boards"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("lichess round 1 (Round001, boards 1-64): pushed, last pushed ")
            && out.contains(", 64 game(s) accepted, 128 move(s)"),
        "{out}"
    );
    assert!(
        out.contains("lichess round 1 (Round002, boards 65 and up): pushed, last pushed ")
            && out.contains(", 2 game(s) accepted, 4 move(s)"),
        "{out}"
    );

    // Two other broadcast rounds by ctl: each gets its boards, whole.
    let (code, out, err) = ctl(&address, &["lichess", "1", "Round003", "Round004"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "round 1: pushed to the lichess broadcast rounds Round003 (boards 1-64) and Round004 (boards 65 and up) from now on"
        ),
        "{out}"
    );
    wait_for("boards 1-64 at Round003, 65-66 at Round004", 30, || {
        lichess.games_taken("Round003") == round_tags(1..=64)
            && lichess.games_taken("Round004") == round_tags(65..=66)
    })
    .await;
    let journal = std::fs::read_to_string(d.join("state/lichess/rounds.esl")).unwrap();
    assert!(
        journal.contains("arbiter SetLichessRound 1 \"Round003 Round004\"\n"),
        "{journal}"
    );
    // `off` with an id is refused by ctl itself.
    let (code, _, err) = ctl(&address, &["lichess", "1", "Round003", "off"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("off"), "{err}");
    daemon.stop().await;

    // Started again: ctl's decision holds, both pushed whole at once.
    let before = lichess.seen().len();
    let daemon = run();
    wait_for("both pushed again after the restart", 30, || {
        let ids: std::collections::BTreeSet<String> = lichess.seen()[before..]
            .iter()
            .filter(|s| s.status == 200)
            .map(|s| s.id.clone())
            .collect();
        ids.len() == 2
    })
    .await;
    let again: Vec<standin::Seen> = lichess.seen()[before..].to_vec();
    assert!(
        again.iter().all(|s| s.id == "Round003" || s.id == "Round004"),
        "{:?}",
        again.iter().map(|s| &s.id).collect::<Vec<_>>()
    );
    assert_eq!(lichess.games_taken("Round003"), round_tags(1..=64));
    assert_eq!(lichess.games_taken("Round004"), round_tags(65..=66));
    daemon.stop().await;
}

/// One broadcast round for a round of 66 games: boards 1-64 are pushed, and
/// the daemon says how to give boards 65-66 a broadcast round of their own
/// (the `ctl` command and the configuration line); `ctl lichess` as it says:
/// boards 65-66 reach the second, the first is not pushed again for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_broadcast_round_for_66_boards_says_how_to_add_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lichess = StandIn::start(&["Round001", "Round002"], &[]).await;
    token_file(d, TOKEN);
    games_on_disk(d, 1..=66);
    let address = private_bus(d).await;
    let cfg = device_dir_config(
        d,
        "",
        &format!(
            "url = \"{}\"\nrounds = {{ 1 = \"Round001\" }}\nmax_per_second = 10",
            lichess.url
        ),
    );
    let daemon = Running::spawn(&mut run_command(&cfg, &[], Some(&address)));
    wait_for("boards 1-64 at Round001", 30, || {
        lichess.games_taken("Round001") == round_tags(1..=64)
    })
    .await;
    wait_for("the boards left out said", 10, || daemon.logged("not pushed") > 0).await;
    let log = daemon.log();
    assert!(
        log.contains("lichess: round 1: a lichess round takes 64 games: boards 65-66 are not pushed"),
        "{log}"
    );
    assert!(
        log.contains(
            "give round 1 another broadcast round on lichess for boards 65 and up: ctl lichess 1 Round001 <ID>, \
             or in [lichess] rounds = { 1 = [\"Round001\", \"<ID>\"] } and reload"
        ),
        "{log}"
    );
    assert!(!log.contains("split the round in two"), "{log}");
    let pushes = lichess.to("Round001").len();
    let (code, out, err) = ctl(&address, &["lichess", "1", "Round001", "Round002"]).await;
    assert_eq!(code, 0, "{out}{err}");
    wait_for("boards 65-66 at Round002", 30, || {
        lichess.games_taken("Round002") == round_tags(65..=66)
    })
    .await;
    assert_eq!(
        lichess.to("Round001").len(),
        pushes,
        "Round001 has its boards already"
    );
    let r = lichess_property(&address).await;
    assert!(r.iter().all(|r| r.not_pushed.is_empty()), "{r:?}");
    daemon.stop().await;
}
