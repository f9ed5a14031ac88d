//! The broadcast files, the event stream, the board list and the connection
//! limits.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_pgn_is_the_folder_s_bytes_and_304_when_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let game = &mated_game();
    let expected = sans(&game.start, &game.moves);
    let (daemon, addr, emulator) =
        start_on_loopback(dir.path(), game_log(&game.start, &game.moves, 42, 1500), 8.0).await;
    let snap = daemon.boards()[0].2.clone();
    wait_for("the game's end", 60, || !snap.borrow().result.is_empty()).await;
    let round = dir.path().join("live/round-4");
    let all = round.join("games.pgn");
    wait_for("the round's file", 10, || {
        std::fs::read_to_string(&all).is_ok_and(|t| common::pgn_moves(&t) == vec![expected.clone()])
    })
    .await;
    for (path, file) in [
        ("/round-4/games.pgn", all.clone()),
        ("/round-4/game-7.pgn", round.join("game-7.pgn")),
    ] {
        let r = get(addr, path, &[]).await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(
            r.body,
            std::fs::read(&file).unwrap(),
            "{path}: the folder's bytes"
        );
        assert!(
            r.header("content-type")
                .unwrap()
                .starts_with("application/x-chess-pgn")
        );
        let tag = r.header("etag").unwrap().to_string();
        let modified = r.header("last-modified").unwrap().to_string();
        let again = get(addr, path, &[("If-None-Match", &tag)]).await;
        assert_eq!(again.status, 304, "{path}");
        assert!(again.body.is_empty());
        assert_eq!(again.header("etag"), Some(tag.as_str()));
        let since = get(addr, path, &[("If-Modified-Since", &modified)]).await;
        assert_eq!(since.status, 304, "{path}");
        let other = get(addr, path, &[("If-None-Match", "\"something-else\"")]).await;
        assert_eq!(other.status, 200);
    }
    // A change gives a new tag.
    let before = get(addr, "/round-4/games.pgn", &[]).await;
    let tag = before.header("etag").unwrap().to_string();
    stop(daemon, emulator).await;
    let after_tag = {
        let body = std::fs::read(&all).unwrap();
        let mut changed = body.clone();
        changed.extend_from_slice(b"\n");
        std::fs::write(&all, &changed).unwrap();
        eboard_bridge::net::pgn::etag(&changed)
    };
    assert_ne!(after_tag, tag);
    // Paths outside the folder's files are not served.
    let dir2 = tempfile::tempdir().unwrap();
    let (daemon, addr, emulator) =
        start_on_loopback(dir2.path(), game_log(&game.start, &game.moves[..2], 1, 500), 8.0).await;
    for path in [
        "/round-4/../state/recordings/board0.esl",
        "/round-x/games.pgn",
        "/round-4/none.pgn",
        "/etc/passwd",
    ] {
        let r = get(addr, path, &[]).await;
        assert_eq!(r.status, 404, "{path}");
    }
    stop(daemon, emulator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_resume_with_last_event_id_losing_none() {
    let dir = tempfile::tempdir().unwrap();
    let game = &mated_game();
    let (daemon, addr, emulator) =
        start_on_loopback(dir.path(), game_log(&game.start, &game.moves, 42, 1500), 6.0).await;
    // One client reads everything; another leaves after some events and comes
    // back with the last id it saw.
    let mut steady = SseClient::open(addr, None).await;
    let mut leaving = SseClient::open(addr, None).await;
    let mut seen = Vec::new();
    while seen.len() < 40 {
        seen.push(leaving.next(20).await.expect("events while the game is played"));
    }
    let last_id = seen.last().unwrap().id.clone().unwrap();
    drop(leaving);
    let snap = daemon.boards()[0].2.clone();
    let plies = snap.borrow().moves.len();
    wait_for("more moves while away", 30, || {
        snap.borrow().moves.len() >= plies + 6
    })
    .await;
    let mut back = SseClient::open(addr, Some(&last_id)).await;
    wait_for("the game's end", 60, || !snap.borrow().result.is_empty()).await;
    // Each reads up to the game's end (the clock goes on reporting after it).
    let ended = |e: &Sse| data(e)["type"] == "game_end";
    let mut all_steady = Vec::new();
    while let Some(e) = steady.next(5).await {
        all_steady.push(e);
        if ended(all_steady.last().unwrap()) {
            break;
        }
    }
    while let Some(e) = back.next(5).await {
        seen.push(e);
        if ended(seen.last().unwrap()) {
            break;
        }
    }
    // Ids are consecutive, every event has its board, and the one who came back
    // has exactly what the one who stayed has from its first event on.
    let ids = |v: &[Sse]| -> Vec<u64> {
        v.iter()
            .map(|e| {
                e.id.as_ref()
                    .unwrap()
                    .rsplit('-')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect()
    };
    let steady_ids = ids(&all_steady);
    assert!(steady_ids.windows(2).all(|w| w[1] == w[0] + 1), "{steady_ids:?}");
    let seen_ids = ids(&seen);
    assert!(
        seen_ids.windows(2).all(|w| w[1] == w[0] + 1),
        "no gap across the resume: {seen_ids:?}"
    );
    let from = all_steady.iter().position(|e| e.id == seen[0].id).unwrap();
    assert_eq!(all_steady[from..], seen[..]);
    let moves: Vec<String> = all_steady
        .iter()
        .map(data)
        .filter(|v| v["type"] == "move")
        .map(|v| {
            assert_eq!(v["board"], "board0");
            v["san"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        moves.last(),
        Some(&sans(&game.start, &game.moves)[game.moves.len() - 1])
    );
    assert!(all_steady.iter().map(data).any(|v| v["type"] == "game_end"));

    // An id of another run: a reset, then every event kept.
    let mut other = SseClient::open(addr, Some("1-5")).await;
    let reset = other.next(5).await.unwrap();
    assert_eq!(reset.event.as_deref(), Some("reset"));
    let first = other.next(5).await.unwrap();
    assert!(first.id.unwrap().ends_with("-1"));
    stop(daemon, emulator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_behind_the_history_is_told_what_it_lost_and_the_api_lists_the_boards() {
    let dir = tempfile::tempdir().unwrap();
    let game = &mated_game();
    let mut http = HttpConfig::on("127.0.0.1:0");
    http.event_history = 10;
    let (daemon, addr, emulator) = start(
        dir.path(),
        game_log(&game.start, &game.moves[..20], 3, 800),
        8.0,
        http,
    )
    .await;
    let mut client = SseClient::open(addr, None).await;
    let first = client.next(20).await.unwrap();
    let id = first.id.unwrap();
    let snap = daemon.boards()[0].2.clone();
    wait_for("the moves", 30, || snap.borrow().moves.len() == 20).await;
    let mut late = SseClient::open(addr, Some(&id)).await;
    let lost = late.next(5).await.unwrap();
    assert_eq!(lost.event.as_deref(), Some("lost"));
    let missed = data(&lost)["missed"].as_u64().unwrap();
    assert!(missed > 10, "{missed}");
    let next = late.next(5).await.unwrap();
    let n = |id: &str| id.rsplit('-').next().unwrap().parse::<u64>().unwrap();
    assert_eq!(n(next.id.as_ref().unwrap()), n(&id) + missed + 1);

    // Without `[http] arbiters` there is no console at all.
    for path in ["/arbiter", "/arbiter/login", "/arbiter/api/state"] {
        assert_eq!(get(addr, path, &[]).await.status, 404, "{path}");
    }

    let r = get(addr, "/api/boards", &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    let b = &v[0];
    let s = snap.borrow().clone();
    assert_eq!(b["Id"], "board0");
    assert_eq!(b["ObjectPath"], "/org/eboardbridge/board/board0");
    assert_eq!(b["Moves"], json!(s.moves));
    assert_eq!(b["Fen"], s.fen);
    assert_eq!(b["White"], "Anderssen, Adolf");
    assert_eq!(b["BoardNumber"], 7);
    assert_eq!(b["Tags"], json!({"Board": "7"}), "the board's tags");
    assert_eq!(b["Status"], "playing");
    assert_eq!(b["Connected"], true);
    assert_eq!(b["SerialNumber"], "23946");
    for p in [
        "WhiteClockMs",
        "BlackClockMs",
        "ClockRunning",
        "Pgn",
        "LastMove",
        "Irregularity",
        "Round",
        "TimeControl",
    ] {
        assert!(b.get(p).is_some(), "{p}");
    }
    stop(daemon, emulator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_limit_are_refused_and_a_stuck_client_holds_only_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let game = &mated_game();
    let mut http = HttpConfig::on("127.0.0.1:0");
    http.max_connections = 3;
    let (daemon, addr, emulator) =
        start(dir.path(), game_log(&game.start, &game.moves, 9, 1500), 8.0, http).await;
    // A client that never reads, and one that does.
    let stuck = SseClient::open(addr, None).await;
    let mut reader = SseClient::open(addr, None).await;
    assert_eq!(get(addr, "/api/boards", &[]).await.status, 200);
    let extra = SseClient::open(addr, None).await;
    // The fourth connection is answered 503 and closed.
    let r = tokio::time::timeout(Duration::from_secs(5), get(addr, "/api/boards", &[]))
        .await
        .expect("503 in time");
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("5"));
    drop(extra);
    // The server sees the close in its own time: asked again until it answers 200
    // (each 503 closed at once), for at most 5 s.
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let r = get(addr, "/api/boards", &[]).within(5, "an answer").await;
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 503);
        assert!(
            tokio::time::Instant::now() < until,
            "still 503 5 s after a client left"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The game goes on to its end, and the reading client gets it all.
    let snap = daemon.boards()[0].2.clone();
    wait_for("the game's end", 60, || !snap.borrow().result.is_empty()).await;
    let mut last_move = None;
    while let Some(e) = reader.next(5).await {
        let v = data(&e);
        if v["type"] == "move" {
            last_move = Some(v["san"].as_str().unwrap().to_string());
        }
        if v["type"] == "game_end" {
            break;
        }
    }
    assert_eq!(last_move, sans(&game.start, &game.moves).last().cloned());
    assert_eq!(snap.borrow().moves.len(), game.moves.len());
    drop(stuck);
    stop(daemon, emulator).await;
}
