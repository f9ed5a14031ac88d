//! A LiveChess WebSocket client following a real game.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_livechess_client_gets_every_move_of_a_real_game() {
    let dir = tempfile::tempdir().unwrap();
    let game = &pgn_games("games/kasparov-deep-blue-1997.pgn")[0];
    let expected = sans(&game.start, &game.moves);
    let mut end = game.start.clone();
    for m in &game.moves {
        end.play_unchecked(*m);
    }
    let final_board = end.board().to_string();
    let (daemon, addr, emulator) =
        start_on_loopback(dir.path(), game_log(&game.start, &game.moves, 7, 1500), 6.0).await;
    let snap = daemon.boards()[0].2.clone();
    wait_for("the board's serial number", 10, || {
        !snap.borrow().serial_number.is_empty()
    })
    .await;

    // The lichess page: a browser origin, call ids 1, 2, 3 and feed id 1.
    let mut lichess = LiveChess::connect(addr, Some("https://lichess.org")).await;
    lichess.send(json!({"id": 1, "call": "eboards"})).await;
    let list = lichess.recv(5).await.unwrap();
    assert_eq!(list["response"], "call");
    assert_eq!(list["id"], 1);
    assert!(list["time"].as_u64().unwrap() > 1_700_000_000_000);
    let first = &list["param"][0];
    assert_eq!(first["serialnr"], "23946");
    assert_eq!(first["state"], "ACTIVE");
    assert_eq!(first["source"], "board0");
    for key in ["battery", "comment", "board", "flipped", "clock"] {
        assert!(first.get(key).is_some(), "{key} missing from {first}");
    }
    // A wired board (the emulator does not answer the battery question).
    assert!(first["battery"].is_null(), "{first}");
    lichess
        .send(json!({"id": 2, "call": "subscribe", "param": {"feed": "eboardevent", "id": 1, "param": {"serialnr": "23946"}}}))
        .await;
    let reply = lichess.recv(5).await.unwrap();
    assert_eq!(
        (reply["response"].clone(), reply["id"].clone()),
        (json!("call"), json!(2))
    );
    assert!(reply["param"].is_null());
    let state = lichess.recv(5).await.unwrap();
    assert_eq!(
        (state["response"].clone(), state["id"].clone()),
        (json!("feed"), json!(1))
    );
    assert_eq!(state["param"]["serialnr"], "23946");
    assert!(state["param"].get("clock").is_some(), "{state}");
    lichess
        .send(
            json!({"id": 3, "call": "call", "param": {"id": 1, "method": "setup", "param": {"fen": START}}}),
        )
        .await;

    // The chess.com page at the same time, with the same ids, no setup: boards only.
    let mut chesscom = LiveChess::connect(addr, Some("https://www.chess.com")).await;
    chesscom
        .send(json!({"id": 1, "call": "eboards", "param": {}}))
        .await;
    assert_eq!(chesscom.recv(5).await.unwrap()["id"], 1);
    chesscom
        .send(json!({"id": 2, "call": "subscribe", "param": {"feed": "eboardevent", "id": 1, "param": {"serialnr": "23946"}}}))
        .await;

    let mut moves: Vec<String> = Vec::new();
    let mut last: Vec<String> = Vec::new();
    let mut setup_seen = false;
    let mut clock_seen = false;
    let mut last_board = String::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(120);
    while moves.len() < expected.len() || last_board != final_board {
        assert!(
            tokio::time::Instant::now() < until,
            "the feed did not reach the game's end: {moves:?}, board {last_board}, record {:?}",
            snap.borrow().moves
        );
        let push = lichess
            .recv(30)
            .await
            .unwrap_or_else(|| panic!("no push within 30 s; moves so far {moves:?}"));
        if push["response"] == "call" {
            assert_eq!(push["id"], 3);
            setup_seen = true;
            continue;
        }
        assert_eq!(push["response"], "feed", "{push}");
        assert_eq!(push["id"], 1);
        let p = &push["param"];
        assert_eq!(p["serialnr"], "23946");
        assert_eq!(p["flipped"], false);
        if let Some(b) = p["board"].as_str() {
            last_board = b.to_string();
        }
        if let Some(c) = p.get("clock").filter(|c| !c.is_null()) {
            let secs = c["white"].as_u64().unwrap() + c["black"].as_u64().unwrap();
            assert!(secs <= 2 * 5400 && secs > 2 * 5000, "{c}");
            clock_seen = true;
        }
        let Some(san) = p.get("san").and_then(Value::as_array) else {
            continue;
        };
        assert_eq!(p["start"], START);
        let san: Vec<String> = san.iter().map(|s| s.as_str().unwrap().to_string()).collect();
        if san == last {
            continue;
        }
        if san.starts_with(&last) {
            moves.extend(san[last.len()..].iter().cloned());
        } else {
            moves = san.clone();
        }
        last = san;
    }
    assert!(setup_seen && clock_seen);
    assert_eq!(moves, expected);

    // The chess.com page saw the board move to the final position (its clock
    // goes on running: pushes go on coming).
    let mut boards: Vec<String> = Vec::new();
    while boards.last() != Some(&final_board) {
        let push = chesscom
            .recv(10)
            .await
            .unwrap_or_else(|| panic!("the chess.com feed stopped at {:?}", boards.last()));
        if push["response"] == "feed" {
            assert!(push["param"].get("san").is_none());
            if let Some(b) = push["param"]["board"].as_str() {
                boards.push(b.to_string());
            }
        }
    }
    assert_eq!(boards.last(), Some(&final_board));
    assert!(
        boards.len() > expected.len(),
        "a push per change: {}",
        boards.len()
    );

    // The same list over plain HTTP.
    let r = get(addr, "/api/v1.0/eboards", &[]).await;
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v[0]["board"], final_board.as_str());
    stop(daemon, emulator).await;
}
