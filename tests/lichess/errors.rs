//! What lichess refuses, and what the daemon refuses before it pushes.

use super::*;

/// Waits until the stand-in has a request to `id`, then until `games.pgn` has
/// three more plies (three more texts of the round the daemon was handed and
/// could have pushed), and checks that it still has that one.
async fn once(lichess: &StandIn, d: &Path, id: &str, status: u16) {
    wait_for(&format!("a push to {id}"), 30, || !lichess.to(id).is_empty()).await;
    let now = plies(&games_pgn(d));
    wait_for("three more plies", 30, || plies(&games_pgn(d)) >= now + 3).await;
    let seen = lichess.to(id);
    assert_eq!(seen.len(), 1, "one try of {id}, not one per change: {seen:?}");
    assert_eq!(seen[0].status, status, "{seen:?}");
}

/// A wrong token (401), a round id lichess does not have (404), a round with
/// a source URL (lichess refuses its pushes): each tried once, reported once
/// in the log with what to do, and tried again only after a change of
/// configuration (the token mended and the daemon reloaded; another id with
/// `ctl lichess`), while the board plays on; then a good id: pushed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_an_unknown_round_and_a_source_url_are_each_reported_once_with_their_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lichess = StandIn::start(&["Round001"], &["Source01"]).await;
    let token = token_file(d, "lip_wrongToken");
    let _b1 = emulate(
        game_log(&common::random_game(80, 5), 9, 0),
        &d.join("board1"),
        "5401",
        1.0,
    );
    let address = private_bus(d).await;
    let cfg = config_file(
        d,
        &[(1, "White", "Black")],
        &format!(
            "url = \"{}\"\nrounds = {{ 1 = \"Missing1\" }}\nmax_per_second = 4",
            lichess.url
        ),
    );
    let daemon = Running::spawn(&mut run_command(&cfg, &devices(d, &[1]), Some(&address)));

    once(&lichess, d, "Missing1", 401).await;
    let said = |what: &str| daemon.logged(what);
    assert_eq!(said("refused the token (401)"), 1, "{}", daemon.log());
    assert!(
        daemon.log().contains("study:write scope (http://127.0.0.1")
            && daemon
                .log()
                .contains(&format!("put it in {} and reload the daemon", token.display())),
        "{}",
        daemon.log()
    );
    assert!(
        !daemon.log().contains("lip_wrongToken"),
        "the token is never logged"
    );
    let r = &lichess_property(&address).await[0];
    assert_eq!(r.state, "refused");
    assert!(
        r.error.contains("(401)") && !r.error.contains("lip_"),
        "{}",
        r.error
    );

    // The token mended and the daemon reloaded: tried again, once: 404.
    token_file(d, TOKEN);
    common::send_signal(daemon.child.id(), libc::SIGHUP);
    wait_for("a second push to Missing1", 30, || {
        lichess.to("Missing1").len() == 2
    })
    .await;
    let seen = lichess.to("Missing1");
    assert_eq!(seen[1].status, 404);
    let now = plies(&games_pgn(d));
    wait_for("three more plies", 30, || plies(&games_pgn(d)) >= now + 3).await;
    assert_eq!(lichess.to("Missing1").len(), 2, "404: not tried again");
    assert_eq!(
        said("has no broadcast round Missing1 (404)"),
        1,
        "{}",
        daemon.log()
    );
    assert!(daemon.log().contains("ctl lichess ROUND ID"), "{}", daemon.log());

    // Another id, by ctl: a round with a source URL.
    let (code, out, err) = ctl(&address, &["lichess", "1", "Source01"]).await;
    assert_eq!(code, 0, "{out}{err}");
    once(&lichess, d, "Source01", 200).await;
    assert_eq!(
        said("round Source01 on lichess has a source URL: pushes are refused"),
        1,
        "{}",
        daemon.log()
    );

    // A round id that is not one: refused by ctl itself (exit 2).
    let (code, _, err) = ctl(&address, &["lichess", "1", "nope"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("8 letters and digits"), "{err}");
    // A good id, as its address on lichess: pushed, the round whole.
    let (code, out, err) = ctl(
        &address,
        &[
            "lichess",
            "1",
            "https://lichess.org/broadcast/lichess-open/round-1/Round001",
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    wait_for("the round on lichess", 30, || {
        lichess
            .last_taken("Round001")
            .is_some_and(|b| plies(&b) >= now + 3)
    })
    .await;
    let r = &lichess_property(&address).await[0];
    assert_eq!((r.id.as_str(), r.error.as_str()), ("Round001", ""));
    daemon.stop().await;
}

/// A round with more boards than a lichess round takes (the pairings name 66,
/// a round takes 64): the daemon says so at start, naming the boards not pushed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_boards_than_a_round_takes_are_named_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    token_file(d, TOKEN);
    let mut csv = String::from("board,white,black\n");
    for n in 1..=66 {
        csv += &format!("{n},White {n},Black {n}\n");
    }
    std::fs::write(d.join("pairings.csv"), csv).unwrap();
    let cfg = device_dir_config(
        d,
        "pairings = \"pairings.csv\"\n",
        "url = \"http://127.0.0.1:9\"\nrounds = { 1 = \"Round001\" }",
    );
    let daemon = Running::spawn(&mut run_command(&cfg, &[], None));
    wait_for("the daemon to say so", 20, || daemon.logged("not pushed") > 0).await;
    assert_eq!(
        daemon.logged("lichess: 66 boards, and a lichess round takes 64 games: boards 65-66 are not pushed"),
        1,
        "{}",
        daemon.log()
    );
    assert!(
        daemon.log().contains(
            "give round 1 another broadcast round on lichess for boards 65 and up: ctl lichess 1 Round001 <ID>"
        ),
        "{}",
        daemon.log()
    );
    daemon.stop().await;
}
