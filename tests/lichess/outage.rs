//! Lichess away for 30 s while the round goes on, then back.

use super::*;

/// A board plays on while the stand-in is down for 30 s: 5 s closing every
/// connection, 7 s answering 503, 18 s answering 429 with `Retry-After: 3`.
/// The daemon tries again 1 s, 2 s, 4 s, 8 s ... after each failure, never
/// sooner than a 429's `Retry-After`, never more than twice a second (its
/// `max_per_second`); lichess away and back are each reported once; the first
/// push taken after the outage carries every move played during it, and the
/// last is `games.pgn` as it stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lichess_away_30_s_then_back_nothing_lost_the_back_off_and_the_rate_kept() {
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lichess = StandIn::start(&["Round001"], &[]).await;
    token_file(d, TOKEN);
    let game = common::random_game(80, 51);
    // Twice a real board's pace: the game lasts past the outage.
    let _b1 = emulate(game_log(&game, 7, 0), &d.join("board1"), "5201", 2.0);
    let lichess_toml = format!(
        "url = \"{}\"\nrounds = {{ 1 = \"Round001\" }}\nmax_per_second = 2",
        lichess.url
    );
    let config = eboard_bridge::daemon::DaemonConfig::parse(
        &config_text(d, &[(1, "White", "Black")], &lichess_toml),
        "c.toml",
    )
    .unwrap();
    let daemon = eboard_bridge::daemon::Daemon::start(
        devices(d, &[1]),
        config,
        eboard_bridge::daemon::BusChoice::None,
    )
    .within(30, "the daemon to start")
    .await
    .unwrap();
    let mut reports = daemon.lichess().unwrap().reports.subscribe();
    wait_for("lichess to have four plies", 30, || {
        lichess.last_taken("Round001").is_some_and(|b| plies(&b) >= 4)
    })
    .await;

    // The outage: its phases are the scenario, timed by the clock.
    let down = std::time::Instant::now();
    let plies_before = plies(&games_pgn(d));
    lichess.set_mode(Mode::Drop);
    tokio::time::sleep(Duration::from_secs(5)).await;
    lichess.set_mode(Mode::Fail);
    tokio::time::sleep(Duration::from_secs(7)).await;
    lichess.set_mode(Mode::TooMany(3));
    tokio::time::sleep(Duration::from_secs(18)).await;
    let plies_at_up = plies(&games_pgn(d));
    lichess.set_mode(Mode::Up);
    let up = std::time::Instant::now();
    assert!(
        plies_at_up >= plies_before + 30,
        "the game went on: {plies_before} then {plies_at_up}"
    );

    wait_for("the whole game in games.pgn", 60, || plies(&games_pgn(d)) == 80).await;
    wait_for("lichess to have games.pgn as it stands", 30, || {
        lichess.last_taken("Round001").as_deref() == Some(games_pgn(d).as_str())
    })
    .await;

    let seen = lichess.seen();
    let during: Vec<&standin::Seen> = seen.iter().filter(|s| s.at >= down && s.at < up).collect();
    assert!(during.iter().all(|s| s.status != 200), "nothing taken while down");
    // The back-off: each wait after a failure at least the one before (1 s,
    // 2 s, 4 s, ...), until lichess says how long (429).
    let gaps: Vec<Duration> = during
        .windows(2)
        .map(|w| w[1].at.duration_since(w[0].at))
        .collect();
    let before_429 = during
        .iter()
        .position(|s| s.status == 429)
        .expect("a 429 answered");
    let backoff = &gaps[..before_429];
    assert!(backoff.len() >= 3, "tries while down: {gaps:?}");
    assert!(backoff[0] >= Duration::from_millis(950), "{gaps:?}");
    for w in backoff.windows(2) {
        assert!(
            w[1] + Duration::from_millis(100) >= w[0] * 2,
            "the back-off doubles: {gaps:?}"
        );
    }
    // Retry-After: 3 obeyed after every 429.
    for (i, s) in seen.iter().enumerate() {
        if s.status == 429 {
            let next = seen.get(i + 1).expect("a try after a 429");
            let waited = next.at.duration_since(s.at);
            assert!(
                waited >= Duration::from_millis(2950),
                "Retry-After: 3 obeyed: {waited:?}"
            );
        }
    }
    assert!(during.len() <= 14, "not hammered: {} tries in 30 s", during.len());
    // The rate, the whole time.
    let gap = shortest_gap(&seen);
    assert!(
        gap >= Duration::from_millis(480),
        "twice a second at most: {gap:?}"
    );
    // Nothing lost: the first push taken after the outage has every move
    // played during it.
    let first_back = seen.iter().find(|s| s.at >= up && s.status == 200).unwrap();
    assert!(
        plies(&first_back.body) >= plies_at_up,
        "the round whole after the outage"
    );
    let back_after = first_back.at.duration_since(up);
    assert!(
        back_after <= Duration::from_secs(4),
        "pushed again {back_after:?} after lichess came back"
    );

    let mut kinds = Vec::new();
    while let Ok(r) = reports.try_recv() {
        kinds.push(r.kind);
    }
    assert_eq!(kinds, ["unreachable", "back"], "away and back, each said once");
    daemon.shutdown().within(30, "the daemon to stop").await;
    eprintln!(
        "measured: {} tries in the 30 s outage, waits {gaps:?}, pushed again {back_after:?} after lichess came back, \
         shortest gap {gap:?}, {} requests in all, {:.1} s",
        during.len(),
        seen.len(),
        started.elapsed().as_secs_f64()
    );
}
