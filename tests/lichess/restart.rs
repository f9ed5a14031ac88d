//! SIGKILL mid-round, and a start again.

use super::*;

/// Two boards playing; mid-round the arbiter moves the round to another
/// broadcast round with `ctl lichess` (journaled, with who decided), and the
/// daemon is killed (SIGKILL). Started again, it pushes to the round `ctl`
/// chose, not the configuration's, at once and whole: every game with every
/// move the broadcast folder holds, before any new move is needed; the last
/// push is `games.pgn` as it stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_round_and_a_restart_push_the_round_whole_again() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lichess = StandIn::start(&["Round001", "Round002"], &[]).await;
    token_file(d, TOKEN);
    // Twice a real board's pace: what is checked is the round whole after the
    // restart, not the moves' times.
    let _boards = two_boards_at(d, "550", [(IMMORTAL, 40, 5, 0), (DEEP_BLUE, 40, 6, 0)], 2.0);
    let address = private_bus(d).await;
    let cfg = config_file(
        d,
        &[
            (1, "Anderssen, Adolf", "Kieseritzky, Lionel"),
            (2, "Kasparov, Garry", "Deep Blue"),
        ],
        &format!(
            "url = \"{}\"\nrounds = {{ 1 = \"Round001\" }}\nmax_per_second = 4",
            lichess.url
        ),
    );
    let run = || Running::spawn(&mut run_command(&cfg, &devices(d, &[1, 2]), Some(&address)));
    let daemon = run();
    wait_for("six plies of each game on lichess", 40, || {
        lichess
            .last_taken("Round001")
            .is_some_and(|t| plies_by_round_tag(&t).values().filter(|n| **n >= 6).count() == 2)
    })
    .await;
    let (code, out, err) = ctl(&address, &["lichess", "1", "Round002"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("round 1: pushed to the lichess broadcast round Round002"),
        "{out}"
    );
    wait_for("the round whole at Round002", 20, || {
        lichess.last_taken("Round002").is_some_and(|t| plies(&t) >= 12)
    })
    .await;
    let journal = std::fs::read_to_string(d.join("state/lichess/rounds.esl")).unwrap();
    let me = eboard_bridge::bus::user_name(unsafe { libc::getuid() });
    assert!(journal.contains(&format!("note decided by {me}\n")), "{journal}");
    assert!(
        journal.contains("arbiter SetLichessRound 1 \"Round002\"\n"),
        "{journal}"
    );

    daemon.kill();
    let killed = std::time::Instant::now();
    let at_kill = plies_by_round_tag(&games_pgn(d));
    assert!(
        at_kill.values().all(|n| *n >= 6 && *n < 40),
        "mid-round: {at_kill:?}"
    );
    // What the killed daemon had sent is in: its connections are closed.
    wait_for("the killed daemon's connections closed", 10, || {
        lichess.open_connections() == 0
    })
    .await;
    let before = lichess.seen().len();
    let restarted = std::time::Instant::now();
    let daemon = run();
    wait_for("a push after the restart", 30, || lichess.seen().len() > before).await;
    let first = lichess.seen()[before].clone();
    assert_eq!(first.id, "Round002", "ctl's decision survived the restart");
    assert_eq!(first.status, 200);
    let whole = plies_by_round_tag(&first.body);
    assert_eq!(whole.len(), 2, "every game: {whole:?}");
    for (round, n) in &at_kill {
        assert!(
            whole[round] >= *n,
            "game {round}: {} plies pushed, {n} in the folder at the kill",
            whole[round]
        );
    }
    let again = first.at.duration_since(restarted);
    assert!(
        lichess.to("Round001").iter().all(|s| s.at < killed),
        "nothing to the configuration's id after"
    );

    wait_for("both games whole in games.pgn", 60, || plies(&games_pgn(d)) == 80).await;
    wait_for("lichess to have games.pgn as it stands", 20, || {
        lichess.last_taken("Round002").as_deref() == Some(games_pgn(d).as_str())
    })
    .await;
    daemon.stop().await;
    eprintln!("measured: the round pushed whole {again:?} after the daemon was started again");
}
