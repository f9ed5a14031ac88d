//! A round played on two emulated boards reaches the stand-in game by game and
//! move by move; the last push is `games.pgn` byte for byte.

use super::*;

/// Two boards, the second starting its game six seconds after the first, at
/// a real board's pace; five pushes a second at most. Every push carries the
/// round as the folder wrote it (the stand-in reads each game's moves from
/// it): each game's moves only grow, most plies are seen one by one, the
/// requests are never closer than the rate allows, each with the token and
/// `text/plain`; the last push is `games.pgn` as it stands on disk. D-Bus
/// (`Manager1.Lichess`) and `ctl boards` say the round is pushed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_reaches_lichess_game_by_game_and_move_by_move() {
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lichess = StandIn::start(&["Round001"], &[]).await;
    token_file(d, TOKEN);
    let _boards = two_real_boards(d, "510", [(IMMORTAL, 24, 1, 0), (DEEP_BLUE, 16, 2, 6000)]);
    let boards = [
        (1, "Anderssen, Adolf", "Kieseritzky, Lionel"),
        (2, "Kasparov, Garry", "Deep Blue"),
    ];
    let lichess_toml = format!(
        "url = \"{}\"\nrounds = {{ 1 = \"Round001\" }}\nmax_per_second = 5",
        lichess.url
    );
    let config =
        eboard_bridge::daemon::DaemonConfig::parse(&config_text(d, &boards, &lichess_toml), "c.toml")
            .unwrap();
    let address = private_bus(d).await;
    let daemon = eboard_bridge::daemon::Daemon::start(
        devices(d, &[1, 2]),
        config,
        eboard_bridge::daemon::BusChoice::Address(address.clone()),
    )
    .within(30, "the daemon to start")
    .await
    .unwrap();

    wait_for("both games whole in games.pgn", 60, || plies(&games_pgn(d)) == 40).await;
    wait_for("lichess to have games.pgn as it stands", 20, || {
        lichess.last_taken("Round001").as_deref() == Some(games_pgn(d).as_str())
    })
    .await;

    let pushes = lichess.to("Round001");
    assert!(pushes.iter().all(|p| p.status == 200), "every push taken");
    for p in &pushes {
        assert_eq!(p.authorization, format!("Bearer {TOKEN}"));
        assert_eq!(p.content_type.split(';').next(), Some("text/plain"));
    }
    // Game by game, move by move: each game's plies as lichess got them.
    let mut seen: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for p in &pushes {
        for (round, n) in plies_by_round_tag(&p.body) {
            let counts = seen.entry(round).or_default();
            if counts.last() != Some(&n) {
                counts.push(n);
            }
        }
    }
    let one = &seen["1.1"];
    let two = &seen["1.2"];
    for counts in [one, two] {
        assert!(
            counts.windows(2).all(|w| w[0] < w[1]),
            "moves only grow: {counts:?}"
        );
    }
    assert_eq!((*one.last().unwrap(), *two.last().unwrap()), (24, 16));
    assert!(
        one.len() >= 12 && two.len() >= 8,
        "most plies seen one by one: {one:?} {two:?}"
    );
    // Board 2 began later: lichess had board 1's moves before any of board 2's.
    let first_of_two = pushes
        .iter()
        .position(|p| plies_by_round_tag(&p.body).get("1.2").is_some_and(|n| *n > 0))
        .unwrap();
    assert!(plies_by_round_tag(&pushes[first_of_two].body)["1.1"] >= 3);
    let gap = shortest_gap(&pushes);
    assert!(
        gap >= Duration::from_millis(190),
        "5 pushes a second at most: {gap:?}"
    );

    // D-Bus and ctl say so.
    let rounds = lichess_property(&address).await;
    assert_eq!(rounds.len(), 1);
    let r = &rounds[0];
    assert_eq!(
        (r.round, r.id.as_str(), r.state.as_str()),
        (1, "Round001", "pushed")
    );
    assert_eq!((r.games_accepted, r.games_refused), (2, 0));
    assert_eq!(r.games.iter().map(|g| g.moves).collect::<Vec<_>>(), [24, 16]);
    assert!(r.last_push_ms > 0 && r.error.is_empty());
    let (code, out, err) = ctl(&address, &["boards"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("lichess round 1 (Round001): pushed, last pushed ")
            && out.contains("2 game(s) accepted, 40 move(s)"),
        "{out}"
    );
    let (_, json, _) = ctl(&address, &["boards", "--json"]).await;
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["lichess"]["moves"], 24, "{json}");
    assert_eq!(v[1]["lichess"]["id"], "Round001", "{json}");
    daemon.shutdown().within(30, "the daemon to stop").await;
    eprintln!(
        "measured: {} pushes for 40 plies, shortest gap {gap:?}, {:.1} s",
        pushes.len(),
        started.elapsed().as_secs_f64()
    );
}
