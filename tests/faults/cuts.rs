//! A cut longer than inference can bridge: the game is lost track of and resumes.

use super::*;

/// Plies from `pos` played by `hands`; `pos` is left after them.
fn play_on(hands: &mut Hands, pos: &mut Chess, moves: &[Move]) {
    for mv in moves {
        hands.play(pos, mv);
        pos.play_unchecked(*mv);
    }
}

/// An arbiter's hands setting the board from `from` to `to`: every piece that
/// stands wrong taken off, then every piece put where it belongs.
fn set_up(hands: &mut Hands, from: &shakmaty::Board, to: &shakmaty::Board) {
    for sq in shakmaty::Square::ALL {
        if let Some(p) = from.piece_at(sq).filter(|p| to.piece_at(sq) != Some(*p)) {
            hands.lift(sq, p);
        }
    }
    for sq in shakmaty::Square::ALL {
        if let Some(p) = to.piece_at(sq).filter(|p| from.piece_at(sq) != Some(*p)) {
            hands.place(sq, p);
        }
    }
}

/// The value of a PGN tag in `text` (empty when absent).
fn tag(text: &str, name: &str) -> String {
    let start = format!("[{name} \"");
    text.lines()
        .find_map(|l| l.strip_prefix(start.as_str()).and_then(|r| r.strip_suffix("\"]")))
        .unwrap_or("")
        .to_string()
}

/// A cut over more plies than inference bridges (10 played while the line is
/// away): `lost_track` with nothing invented, then the game resumed in each of the
/// two ways an arbiter has. On board 1 the last recorded position is set up again
/// and the ten moves replayed: every ply is recorded, none inferred. On board 2 the
/// arbiter, told of `lost_track`, sets the position the board shows over D-Bus
/// (`SetPosition`): the moves known stay in the first game, which ends `*` with
/// the termination `position_set`, and play goes on in a second game from that
/// position. Real pseudo-terminals, a real relay cutting the line, the daemon on
/// a private bus (busd).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_over_more_than_six_plies_is_lost_track_and_the_game_resumes() {
    const BEFORE: usize = 12;
    const AWAY: usize = 10;
    const PLIES: usize = 40;
    let (game, start, all) = all_games()
        .into_iter()
        .find(|(_, _, m)| m.len() >= PLIES)
        .expect("a real game of 40 plies");
    let moves = &all[..PLIES];
    let dir = tempfile::tempdir().unwrap();
    let address = common::private_bus(dir.path()).await;
    // Board 1 has the position set up again and the moves replayed; board 2 waits
    // for the arbiter's SetPosition. Each log notes where its cut goes.
    let mut logs = Vec::new();
    let mut cuts = Vec::new();
    let mut after_cut = start.clone();
    for restore in [true, false] {
        let mut hands = Hands::new(if restore { 61 } else { 62 }, style(), Orientation::Normal);
        hands.board(start.board());
        hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
        hands.wait(8000);
        let mut pos = start.clone();
        play_on(&mut hands, &mut pos, &moves[..BEFORE]);
        let before = pos.clone();
        hands.wait(2000);
        let cut_at = hands.now().micros();
        play_on(&mut hands, &mut pos, &moves[BEFORE..BEFORE + AWAY]);
        hands.wait(2000);
        cuts.push((cut_at, hands.now().micros() - cut_at));
        after_cut = pos.clone();
        if restore {
            // The arbiter stops the clock, has the last position recorded set up
            // and the moves replayed from it.
            hands.wait(12_000);
            set_up(&mut hands, pos.board(), before.board());
            hands.wait(2000);
            pos = before;
            play_on(&mut hands, &mut pos, &moves[BEFORE..BEFORE + AWAY]);
        } else {
            // The arbiter sets the position the board shows, on the bus.
            hands.wait(24_000);
        }
        play_on(&mut hands, &mut pos, &moves[BEFORE + AWAY..]);
        hands.wait(3000);
        logs.push(SensorLog {
            header: eboard_bridge::log::Header::default(),
            records: hands.records,
            lines: Vec::new(),
        });
    }
    let (emulators, relays, devices) =
        relay::relayed_boards(logs, SPEED, 30000, dir.path(), |_| LineFaults::CLEAN);
    let daemon = Daemon::start(
        devices,
        config(dir.path(), 2),
        BusChoice::Address(address.clone()),
    )
    .within(30, "the daemon to start")
    .await
    .unwrap();
    let mut tap = daemon.events_since_start().expect("the events since the start");
    let started = tokio::time::Instant::now();
    let real = |us: u64| Duration::from_secs_f64(us as f64 / 1e6 / SPEED);
    for (i, (at, length)) in cuts.iter().copied().enumerate() {
        let line = relays[i].0.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(started + real(at)).await;
            let _ = line.send(real(length)).await;
        });
    }
    // The arbiter of board 2: told of lost_track, sets the position the board
    // shows (known from the score sheets: side to move, castling rights).
    let path = daemon
        .boards()
        .into_iter()
        .find(|(id, _, _)| id == "line1")
        .map(|(_, path, _)| path)
        .unwrap();
    let client = common::bus_client(&address).await;
    let board2 = zbus::proxy::Builder::<zbus::Proxy>::new(&client)
        .destination(BUS_NAME)
        .unwrap()
        .path(path)
        .unwrap()
        .interface(BOARD_INTERFACE)
        .unwrap()
        .build()
        .within(10, "a proxy of board 2")
        .await
        .unwrap();
    let fen = shakmaty::fen::Fen::from_position(&after_cut, shakmaty::EnPassantMode::Legal).to_string();
    let mut events = Vec::new();
    let told = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(t) = tap.recv().await {
            let lost = t.board == "line1"
                && matches!(&t.event.kind, EventKind::Irregular { kind, .. } if kind.name() == "lost_track");
            events.push(t);
            if lost {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(told, Ok(true), "board 2: no lost_track after its cut");
    board2
        .call::<_, _, ()>("SetPosition", &(fen.as_str(),))
        .await
        .unwrap();
    // The rest of both games, then a moment for the files.
    let collector = tokio::spawn(async move {
        while let Ok(t) = tap.recv().await {
            events.push(t);
        }
        events
    });
    let round = dir.path().join("live/round-1");
    let whole = sans(&start, moves);
    let rest = sans(&after_cut, &moves[BEFORE + AWAY..]);
    let done = || {
        let first = std::fs::read_to_string(round.join("game-1.pgn")).unwrap_or_default();
        let second = std::fs::read_to_string(round.join("game-2-2.pgn")).unwrap_or_default();
        pgn_moves(&first).concat() == whole && pgn_moves(&second).concat() == rest
    };
    let until = tokio::time::Instant::now() + Duration::from_secs(120);
    while !done() && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let events = stop_and_collect(daemon, collector, emulators).await.unwrap();
    let mut stats = Vec::new();
    for (line, handle) in relays {
        drop(line);
        stats.push(tokio::time::timeout(Duration::from_secs(5), handle).await);
    }
    let read = |name: &str| std::fs::read_to_string(round.join(name)).unwrap_or_default();
    println!("{game}: cuts {cuts:?} (log µs), relays {stats:?}");
    for (i, board) in ["line0", "line1"].into_iter().enumerate() {
        let (inferred, penalties, lost_track) = counts(&events, board);
        assert!(lost_track > 0, "board {}: lost_track was not raised", i + 1);
        assert_eq!(
            inferred,
            0,
            "board {}: a move inferred across a gap of 10 plies",
            i + 1
        );
        assert_eq!(penalties, 0, "board {}: a penalty from the cut", i + 1);
    }
    // Board 1: the whole game, every ply seen, none marked.
    let first = read("game-1.pgn");
    assert_eq!(pgn_moves(&first).concat(), whole, "board 1:\n{first}");
    assert!(!first.contains("{inferred}"), "board 1:\n{first}");
    // Board 2: the twelve plies known, then a game from the position set.
    let known = read("game-2.pgn");
    assert_eq!(
        pgn_moves(&known).concat(),
        sans(&start, &moves[..BEFORE]),
        "board 2:\n{known}"
    );
    assert_eq!(tag(&known, "Result"), "*", "board 2:\n{known}");
    assert_eq!(tag(&known, "Termination"), "position_set", "board 2:\n{known}");
    let resumed = read("game-2-2.pgn");
    assert_eq!(tag(&resumed, "FEN"), fen, "board 2:\n{resumed}");
    assert_eq!(pgn_moves(&resumed).concat(), rest, "board 2:\n{resumed}");
    // The recordings replay to the games published.
    let rules = config(dir.path(), 2).rules.core_config();
    for (id, published) in [
        ("line0", vec![whole.clone()]),
        ("line1", vec![sans(&start, &moves[..BEFORE]), rest.clone()]),
    ] {
        let log =
            eboard_bridge::log::read_log(&dir.path().join(format!("state/recordings/{id}.esl"))).unwrap();
        let replay = eboard_bridge::output::replay::run(&log, id, rules, None).unwrap();
        let games: Vec<Vec<String>> = replay
            .core
            .games()
            .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
            .filter(|m: &Vec<String>| !m.is_empty())
            .collect();
        assert_eq!(games, published, "{id}: replay of the recording");
        // With no options, `replay` prints what was published, the arbiter's
        // position included.
        let recording = dir.path().join(format!("state/recordings/{id}.esl"));
        common::replayed::assert_replays_as_published(&recording, id, &events);
    }
}
