//! The real binary killed and started again: the recording resumes the game,
//! the decisions and the rounds; a full disk loses no published move.

use super::*;
use eboard_bridge::log::RecordKind;
use eboard_bridge::rules::{GameResult, Termination};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_with_sigkill_resumes_the_same_game() {
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path(), "");
    let live = dir.path().join("live/round-1/game-1.pgn");
    let start = || start_binary(&cfg, &link, None);
    let _first = emulate(game_log(&game.start, &game.moves[..16], 3), &link, 8.0);
    let mut daemon = start();
    wait_for("sixteen moves on disk", 30, || plies_in(&live) == 16).await;
    signal(&mut daemon, "KILL").await;
    // Restarted on the same board: the same game, every move, and it goes on.
    let mut pos = game.start.clone();
    for m in &game.moves[..16] {
        pos.play_unchecked(*m);
    }
    let _second = emulate(game_log(&pos, &game.moves[16..24], 4), &link, 8.0);
    std::fs::remove_file(&live).unwrap();
    let mut daemon = start();
    wait_for("twenty-four moves on disk", 30, || plies_in(&live) == 24).await;
    let text = std::fs::read_to_string(&live).unwrap();
    assert_eq!(pgn_moves(&text), vec![sans(&game.moves[..24])]);
    // The journal says where the daemon stopped reading the board: a `gap`
    // at the time of the last record before the restart, before the new
    // process's own records (seed 521: what the board did meanwhile is judged
    // by the dump after it, live and in `replay`).
    let recording = dir.path().join("state/recordings/board0.esl");
    let log = eboard_bridge::log::read_log(&recording).unwrap();
    let down = log
        .records
        .iter()
        .position(|r| matches!(&r.kind, RecordKind::Gap(why) if why == "not read while the daemon was down"))
        .expect("a gap where the daemon stopped reading");
    let last = log.records[..down]
        .iter()
        .rev()
        .find(|r| !matches!(r.kind, RecordKind::Note(_)))
        .expect("records before the restart");
    assert_eq!(
        log.records[down].time.micros(),
        last.time.micros(),
        "the gap at the time of the last record the first process wrote"
    );
    // SIGTERM: a clean stop.
    send_signal(daemon.child.id(), libc::SIGTERM);
    let status = wait_exit(&mut daemon.child, 30, "the daemon after SIGTERM").await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_with_a_torn_last_line_resumes_and_is_mended() {
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("state/recordings/board0.esl");
    // Killed in the middle of writing the last line.
    let (daemon, snap) = resume_from(
        dir.path(),
        "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n1 lift e2 P\n1.4 place e4 P\n2 li",
        1,
    )
    .await;
    assert_eq!(snap.borrow().moves, vec!["e4".to_string()]);
    assert_eq!(snap.borrow().status, "disconnected");
    daemon.shutdown().within(30, "the daemon to stop").await;
    // The torn line is gone; what the daemon added reads as a sensor log.
    let text = std::fs::read_to_string(&recording).unwrap();
    assert!(!text.contains("2 li"), "{text}");
    eboard_bridge::log::read_log(&recording).unwrap();
}

/// Arbiter decisions are part of the record: a result given over D-Bus comes back
/// after SIGKILL and after SIGTERM (properties and broadcast file), and `replay` of
/// the recording gives the same game and result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arbiters_result_survives_sigkill_and_sigterm_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path(), "");
    let address = private_bus(dir.path()).await;
    let live = dir.path().join("live/round-1/game-1.pgn");
    let start = || start_binary(&cfg, &link, Some(&address));
    let client = bus_client(&address).await;
    let proxy =
        |c: zbus::Connection| async move { common::board_proxy(&c, "/org/eboardbridge/board/board0").await };
    let result_of = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("[Result \"").and_then(|r| r.strip_suffix("\"]")))
                    .map(str::to_string)
            })
            .unwrap_or_default()
    };
    let _board = emulate(game_log(&game.start, &game.moves[..12], 5), &link, 8.0);
    let mut daemon = start();
    wait_for("twelve moves on disk", 30, || plies_in(&live) == 12).await;
    let p = proxy(client.clone()).await;
    // Refused calls change nothing and are not journaled; the accepted one is.
    let huge = "x".repeat(1 << 20);
    assert!(
        p.call::<_, _, ()>("SetPosition", &(huge.as_str(),))
            .await
            .is_err()
    );
    p.call::<_, _, ()>("SetResult", &("1-0",)).await.unwrap();
    wait_for("1-0 on disk", 10, || result_of(&live) == "1-0").await;
    let recording = dir.path().join("state/recordings/board0.esl");
    let text = std::fs::read_to_string(&recording).unwrap();
    assert!(text.contains(" arbiter SetResult \"1-0\"\n"), "no arbiter record");
    assert!(
        text.len() < 200_000,
        "a refused call was journaled ({} bytes)",
        text.len()
    );

    for how in ["KILL", "TERM"] {
        signal(&mut daemon, how).await;
        std::fs::remove_file(&live).unwrap();
        daemon = start();
        wait_for("the game on disk again", 30, || plies_in(&live) == 12).await;
        assert_eq!(result_of(&live), "1-0", "after SIG{how}");
        property_is(&address, "Result", "1-0").await;
        property_is(&address, "Status", "finished").await;
    }
    signal(&mut daemon, "TERM").await;
    // The recording replays to the published game, result included.
    let log = eboard_bridge::log::read_log(&recording).unwrap();
    let r = eboard_bridge::output::replay::run(&log, "board0", eboard_bridge::rules::Config::default(), None)
        .unwrap();
    let g = r.core.games().last().unwrap();
    assert_eq!(g.moves.len(), 12);
    assert_eq!(g.result, Some((GameResult::WhiteWins, Termination::Arbiter)));
}

/// A malformed line in the middle of a recording (a disk error, a hand edit) is
/// reported with its line and skipped: the board resumes every move around it
/// instead of failing to start (and taking the daemon down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_with_a_malformed_middle_line_resumes_every_move() {
    let dir = tempfile::tempdir().unwrap();
    let (daemon, snap) = resume_from(
        dir.path(),
        "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n1 lift e2 P\n1.4 place e4 P\n2 rx 8z zz\n3 lift e7 p\n3.4 place e5 p\n",
        2,
    )
    .await;
    assert_eq!(snap.borrow().moves, vec!["e4".to_string(), "e5".to_string()]);
    daemon.shutdown().within(30, "the daemon to stop").await;
}

/// Arbiter decisions are part of the record: players named, a take-back to ply 8
/// (7.5.1), a new game on the game under way (which is kept, `*` abandoned, in its
/// own file), a result for the new game. Across SIGKILL and SIGTERM the daemon
/// comes back with exactly that (files and D-Bus), and `replay` of the recording
/// gives the same games.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbiter_decisions_and_every_game_survive_sigkill_and_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path(), "");
    let address = private_bus(dir.path()).await;
    let round = dir.path().join("live/round-1");
    let (first, second) = (round.join("game-1.pgn"), round.join("game-1-2.pgn"));
    let _board = emulate(game_log(&game.start, &game.moves[..12], 6), &link, 8.0);
    let mut daemon = start_binary(&cfg, &link, Some(&address));
    wait_for("twelve moves on disk", 30, || plies_in(&first) == 12).await;
    let p = board0(&address).await;
    // A time control set while moves are played would reset both clocks: refused.
    let e = p.call::<_, _, ()>("SetTimeControl", &("90",)).await.unwrap_err();
    assert!(e.to_string().contains("GameUnderWay"), "{e}");
    p.call::<_, _, ()>("SetPlayers", &("Anand, Viswanathan", "Carlsen, Magnus"))
        .await
        .unwrap();
    p.call::<_, _, ()>("Reinstate", &(8u32,)).await.unwrap();
    // An empty FEN is not a position: refused, nothing changes.
    assert!(p.call::<_, _, ()>("SetPosition", &("",)).await.is_err());
    // A new game on the game under way ends it `*`: the arbiter confirms it
    // (the method named after it is refused, saying so).
    let e = p.call::<_, _, ()>("NewGame", &("",)).await.unwrap_err();
    assert!(e.to_string().contains("NeedsForce"), "{e}");
    p.call::<_, _, ()>("Decide", &("NewGame", "[\"\"]", true))
        .await
        .unwrap();
    p.call::<_, _, ()>("SetResult", &("0-1",)).await.unwrap();
    let check = |when: &str| {
        assert_eq!(plies_in(&first), 8, "{when}: the first game");
        assert_eq!(tag_in(&first, "Result"), "*", "{when}");
        assert_eq!(tag_in(&first, "Termination"), "abandoned", "{when}");
        assert_eq!(tag_in(&first, "White"), "Anand, Viswanathan", "{when}");
        assert_eq!(plies_in(&second), 0, "{when}: the second game");
        assert_eq!(tag_in(&second, "Result"), "0-1", "{when}");
        assert_eq!(tag_in(&second, "Black"), "Carlsen, Magnus", "{when}");
        let all = std::fs::read_to_string(round.join("games.pgn")).unwrap();
        assert_eq!(all.matches("[Event ").count(), 2, "{when}: games.pgn");
    };
    // The writer replaces each game's file, then games.pgn: wait for both.
    let on_disk = || {
        plies_in(&first) == 8
            && tag_in(&second, "Result") == "0-1"
            && std::fs::read_to_string(round.join("games.pgn"))
                .is_ok_and(|a| a.matches("[Event ").count() == 2)
    };
    wait_for("the new game's file", 10, on_disk).await;
    check("live");
    for how in ["KILL", "TERM"] {
        signal(&mut daemon, how).await;
        // The folder emptied by hand: the restart writes every game again.
        std::fs::remove_dir_all(&round).unwrap();
        daemon = start_binary(&cfg, &link, Some(&address));
        wait_for("both games on disk again", 30, on_disk).await;
        check(&format!("after SIG{how}"));
        property_is(&address, "Result", "0-1").await;
        property_is(&address, "White", "Anand, Viswanathan").await;
        property_is(&address, "Status", "finished").await;
    }
    signal(&mut daemon, "TERM").await;
    let recording = dir.path().join("state/recordings/board0.esl");
    let log = eboard_bridge::log::read_log(&recording).unwrap();
    let r = eboard_bridge::output::replay::run(&log, "board0", eboard_bridge::rules::Config::default(), None)
        .unwrap();
    let games: Vec<_> = r.core.games().collect();
    assert_eq!(games.len(), 2);
    assert_eq!(games[0].moves.len(), 8);
    assert_eq!(
        games[0].result,
        Some((GameResult::Unfinished, Termination::Abandoned))
    );
    assert_eq!(games[1].moves.len(), 0);
    assert_eq!(
        games[1].result,
        Some((GameResult::BlackWins, Termination::Arbiter))
    );
}

/// A new round by SIGHUP while a board is away: the game under way keeps its round
/// and players (nothing of it is written under the new round, not after a restart
/// either); when the board comes back showing the start position, the new game is
/// the new round's, with the new players, and the old one is kept, abandoned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_round_by_sighup_with_a_board_away_keeps_the_old_game_in_its_round() {
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let link = dir.path().join("board0");
    let address = private_bus(dir.path()).await;
    let cfg = round_config(dir.path(), 1, "White, Round1", "Black, Round1");
    let old = dir.path().join("live/round-1/game-7.pgn");
    let round2 = dir.path().join("live/round-2");
    let recording = dir.path().join("state/recordings/board0.esl");
    let board = emulate(game_log(&game.start, &game.moves[..6], 7), &link, 8.0);
    let mut daemon = start_binary(&cfg, &link, Some(&address));
    wait_for("six moves on disk", 30, || plies_in(&old) == 6).await;
    board.abort();
    property_is(&address, "Connected", "false").await;
    round_config(dir.path(), 2, "White, Round2", "Black, Round2");
    signal(&mut daemon, "HUP").await;
    wait_for("the configuration read again", 10, || {
        std::fs::read_to_string(&recording).is_ok_and(|t| t.contains("note configuration read again"))
    })
    .await;
    let old_game_kept = |when: &str| {
        assert_eq!(plies_in(&old), 6, "{when}");
        assert_eq!(tag_in(&old, "White"), "White, Round1", "{when}");
        assert_eq!(tag_in(&old, "Round"), "1.7", "{when}");
        let files = common::pgn_files(&round2);
        assert!(
            files.is_empty(),
            "{when}: the new round has a game: {:?}",
            files
                .iter()
                .map(|f| (
                    f.display().to_string(),
                    std::fs::read_to_string(f).unwrap_or_default()
                ))
                .collect::<Vec<_>>()
        );
    };
    property_is(&address, "Round", "1").await;
    property_is(&address, "White", "White, Round1").await;
    old_game_kept("after SIGHUP");
    // Restarted with the new round's configuration, the board still away.
    signal(&mut daemon, "TERM").await;
    daemon = start_binary(&cfg, &link, Some(&address));
    property_is(&address, "Connected", "false").await;
    property_is(&address, "Round", "1").await;
    property_is(&address, "White", "White, Round1").await;
    wait_for("the journal resumed", 10, || {
        std::fs::read_to_string(&recording).is_ok_and(|t| t.contains("note resumed at "))
    })
    .await;
    old_game_kept("after a restart");
    // The board comes back set up for the new round, and a game starts.
    let _board = emulate(game_log(&Chess::default(), &game.moves[..2], 8), &link, 8.0);
    let new = round2.join("game-7.pgn");
    wait_for("the new round's game", 30, || plies_in(&new) == 2).await;
    assert_eq!(tag_in(&new, "White"), "White, Round2");
    assert_eq!(tag_in(&new, "Round"), "2.7");
    property_is(&address, "Round", "2").await;
    assert_eq!(plies_in(&old), 6);
    assert_eq!(tag_in(&old, "Termination"), "abandoned");
    assert_eq!(tag_in(&old, "White"), "White, Round1");
    signal(&mut daemon, "TERM").await;
}

/// A disk that fills and empties under the daemon (a file size limit set on the
/// running process with `prlimit`: its writes fail with EFBIG as on a full disk):
/// the game goes on and is published meanwhile, the journal holds what it cannot
/// write and writes it when the disk works again, tears no line, and a restart
/// after SIGKILL resumes every move published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_fills_and_empties_loses_no_published_move() {
    if !need(&[Need::Tool("prlimit", "util-linux")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let game = &long_game();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path(), "");
    let live = dir.path().join("live/round-1/game-1.pgn");
    let recording = dir.path().join("state/recordings/board0.esl");
    let size = || std::fs::metadata(&recording).map_or(0, |m| m.len());
    let _board = emulate(game_log(&game.start, &game.moves[..24], 9), &link, 1.0);
    let mut daemon = start_binary(&cfg, &link, None);
    let pid = daemon.child.id().to_string();
    let prlimit = |limit: &str| {
        let out = common::output_within(
            std::process::Command::new("prlimit").args(["--pid", &pid, &format!("--fsize={limit}:")]),
            10,
            "prlimit",
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    wait_for("four moves on disk", 30, || plies_in(&live) >= 4).await;
    // The disk is full: the recording cannot grow. Its size is read again once
    // the limit is set: a record written between the first reading and the
    // limit (a busy machine) is already on disk, and nothing can follow it.
    prlimit(&size().to_string());
    let full = size();
    let at_full = plies_in(&live);
    wait_for("eight more moves published", 60, || {
        plies_in(&live) >= at_full + 8
    })
    .await;
    assert_eq!(size(), full, "the recording grew on a full disk");
    // Every input failed a write; the error is said once (a minute).
    assert_eq!(
        daemon.logged("cannot write"),
        1,
        "the write error is said once a minute"
    );
    let text = std::fs::read_to_string(&recording).unwrap();
    assert!(text.ends_with('\n'), "a torn line on a full disk");
    // Room again: what was held is written, the game goes on.
    prlimit("unlimited");
    wait_for("every move published", 60, || plies_in(&live) == 24).await;
    wait_for("the recording written again", 10, || size() > full).await;
    wait_for("what was held written whole", 10, || {
        std::fs::read_to_string(&recording).is_ok_and(|t| t.ends_with('\n'))
            && eboard_bridge::log::read_log(&recording).is_ok()
    })
    .await;
    signal(&mut daemon, "KILL").await;
    let published = std::fs::read_to_string(&live).unwrap();
    eboard_bridge::log::read_log(&recording).expect("the recording reads whole");
    std::fs::remove_file(&live).unwrap();
    let mut daemon = start_binary(&cfg, &link, None);
    wait_for("every move resumed", 30, || plies_in(&live) == 24).await;
    assert_eq!(
        pgn_moves(&std::fs::read_to_string(&live).unwrap()),
        pgn_moves(&published)
    );
    assert_eq!(pgn_moves(&published), vec![sans(&game.moves[..24])]);
    signal(&mut daemon, "TERM").await;
}

/// The SIGKILL soak (`docs/RELIABILITY.md`): the daemon killed `SOAK_KILLS` times
/// (4 in CI; 100 for the documented figure) at random moments (`SOAK_SEED`) while
/// a game is played on the board, with an arbiter's call (`SetPlayers`) accepted
/// between kills. After every restart the published game has every move published
/// before the kill and the last decision stands; at the end the game is whole and
/// a result given just before the last kill stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_soak_loses_no_move_and_no_decision() {
    let kills: u32 = std::env::var("SOAK_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(4);
    let mut seed: u64 = std::env::var("SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut random = |lo: u64, hi: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (seed >> 33) % (hi - lo)
    };
    let dir = tempfile::tempdir().unwrap();
    let game = common::STANDARD_GAME_FILES
        .iter()
        .flat_map(|f| pgn_games(f))
        .filter(|g| g.start == Chess::default())
        .max_by_key(|g| g.moves.len())
        .unwrap();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path(), "");
    let address = private_bus(dir.path()).await;
    let live = dir.path().join("live/round-1/game-1.pgn");
    // The game spread over the kills (a kill and a restart take about 1.6 s), at
    // most a ply every 0.7 s: a kill and a restart miss a ply or two, which the
    // daemon finds across the gap.
    let plies = game.moves.len().min(6 + 2 * kills as usize);
    let speed = (plies as f64 / (1.6 * f64::from(kills.max(1)))).clamp(0.3, 1.5);
    let _board = emulate(game_log(&game.start, &game.moves[..plies], 10), &link, speed);
    let p = board0(&address).await;
    let mut daemon = start_binary(&cfg, &link, Some(&address));
    let started = std::time::Instant::now();
    let mut decided: Option<String> = None;
    let mut decisions = 0;
    for i in 0..kills {
        // Paces the kills (and the calls between them) at random: no outcome awaited.
        tokio::time::sleep(Duration::from_millis(random(300, 1500))).await;
        if random(0, 2) == 0 {
            let white = format!("White {i}");
            let args = (white.as_str(), "Black");
            let call = p.call::<_, _, ()>("SetPlayers", &args);
            if let Ok(Ok(())) = tokio::time::timeout(Duration::from_secs(5), call).await {
                decided = Some(white);
                decisions += 1;
            }
            tokio::time::sleep(Duration::from_millis(random(0, 300))).await;
        }
        let before = plies_in(&live);
        signal(&mut daemon, "KILL").await;
        daemon = start_binary(&cfg, &link, Some(&address));
        wait_for("the game published again", 30, || plies_in(&live) >= before).await;
        if let Some(w) = &decided {
            property_is(&address, "White", w).await;
        }
    }
    wait_for("the whole game", 60 + 3 * plies as u64, || {
        plies_in(&live) == plies
    })
    .await;
    let published = pgn_moves(&std::fs::read_to_string(&live).unwrap());
    assert_eq!(published, vec![sans(&game.moves[..plies])]);
    p.call::<_, _, ()>("SetResult", &("1/2-1/2",)).await.unwrap();
    signal(&mut daemon, "KILL").await;
    std::fs::remove_file(&live).unwrap();
    let mut daemon = start_binary(&cfg, &link, Some(&address));
    wait_for("the game after the last kill", 30, || plies_in(&live) == plies).await;
    wait_for("the result after the last kill", 10, || {
        tag_in(&live, "Result") == "1/2-1/2"
    })
    .await;
    if let Some(w) = &decided {
        assert_eq!(tag_in(&live, "White"), *w);
    }
    signal(&mut daemon, "TERM").await;
    eprintln!(
        "soak: {kills} kills, {plies} plies, {} decisions, 0 moves and 0 decisions lost, {:.0} s",
        decisions + 1,
        started.elapsed().as_secs_f64()
    );
}

/// The moves of `sans` from the standard start.
fn moves_of(sans: &[&str]) -> Vec<Move> {
    let mut pos = Chess::default();
    sans.iter()
        .map(|s| {
            let m = s.parse::<shakmaty::san::San>().unwrap().to_move(&pos).unwrap();
            pos.play_unchecked(m);
            m
        })
        .collect()
}

/// The daemon's connections to the board in the recording (its `gap` records,
/// one a connect) and the whole-board dumps since the last one, as `replay
/// --format sensors` reads its bytes.
fn connects_and_dumps(recording: &Path) -> (usize, usize) {
    let out = std::process::Command::new(common::process::bin())
        .args(["replay", "--format", "sensors"])
        .arg(recording)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let word = |l: &&str| l.split(' ').nth(1).map(str::to_string);
    let lines: Vec<&str> = text.lines().collect();
    let gaps = lines.iter().filter(|l| word(l).as_deref() == Some("gap")).count();
    let from = lines
        .iter()
        .rposition(|l| word(l).as_deref() == Some("gap"))
        .unwrap_or(0);
    let dumps = lines[from..]
        .iter()
        .filter(|l| word(l).as_deref() == Some("board"))
        .count();
    (gaps, dumps)
}

/// A game that ended (a mate, completed) stays on its board, as at every event
/// until the players leave, while the daemon is killed (SIGKILL) and stopped
/// (SIGTERM) and started again: the finished game is resumed, and no second game
/// is inferred from the start position to the position on the board (issue 47:
/// before, `1. f3 {inferred} e5 {inferred} 2. g4 {inferred} Qh4# {inferred} *`
/// was published as `game-1-2.pgn` after the first restart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_game_left_on_its_board_is_no_new_game_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path(), "");
    let round = dir.path().join("live/round-1");
    let live = round.join("game-1.pgn");
    let recording = dir.path().join("state/recordings/board0.esl");
    let start = || start_binary(&cfg, &link, None);
    let moves = moves_of(&["f3", "e5", "g4", "Qh4#"]);
    let _board = emulate(game_log(&Chess::default(), &moves, 7), &link, 8.0);
    let mut daemon = start();
    wait_for("the mate on disk", 30, || tag_in(&live, "Result") == "0-1").await;
    for how in ["KILL", "TERM"] {
        signal(&mut daemon, how).await;
        std::fs::remove_file(&live).unwrap();
        let (connects, _) = connects_and_dumps(&recording);
        daemon = start();
        // The board's dump on connecting: the finished game's position.
        wait_for("a dump since the restart", 30, || {
            let (c, dumps) = connects_and_dumps(&recording);
            c > connects && dumps >= 1
        })
        .await;
        wait_for("the mate on disk again", 30, || tag_in(&live, "Result") == "0-1").await;
    }
    signal(&mut daemon, "TERM").await;
    assert_eq!(
        pgn_moves(&std::fs::read_to_string(&live).unwrap()),
        vec![sans(&moves)]
    );
    let files: Vec<String> = std::fs::read_dir(&round)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("game-"))
        .collect();
    assert_eq!(files, ["game-1.pgn"], "a game nobody played was published");
    // What was published live is what the recording replays to: one game.
    let log = eboard_bridge::log::read_log(&recording).unwrap();
    let r = eboard_bridge::output::replay::run(&log, "board0", eboard_bridge::rules::Config::default(), None)
        .unwrap();
    assert_eq!(
        r.core.games().count(),
        1,
        "games: {:?}",
        r.core.games().map(|g| g.moves.len()).collect::<Vec<_>>()
    );
}

/// What a board remembers besides its game is read back from the journal by the
/// same checks as live (issue 50): a journal's `SetPlayers` with a name the live
/// call refuses (a control character) is refused on resume too, and the
/// players stay; the same call live is refused with the same words; a good
/// call in the same journal is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journals_bad_names_are_refused_on_resume_as_they_are_live() {
    use eboard_bridge::api::history::Door;
    use eboard_bridge::api::{Asker, Decision, ask_as};
    let dir = tempfile::tempdir().unwrap();
    let (daemon, snap) = resume_from(
        dir.path(),
        "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n\
         1 arbiter SetPlayers \"Carlsen, Magnus\" \"Ding, Liren\"\n\
         2 arbiter SetPlayers \"Bad\\u0007Name\" \"Ding, Liren\"\n\
         3 lift e2 P\n3.4 place e4 P\n",
        1,
    )
    .await;
    let players = |s: &eboard_bridge::api::Snapshot| (s.white.clone(), s.black.clone());
    let want = ("Carlsen, Magnus".to_string(), "Ding, Liren".to_string());
    assert_eq!(
        players(&snap.borrow()),
        want,
        "the good call applied, the bad one refused"
    );
    let board = daemon.board_list().borrow()[0].clone();
    let who = Asker {
        by: None,
        door: Door::Bus,
        force: false,
    };
    let live = ask_as(
        &board.commands,
        Decision::SetPlayers("Bad\u{7}Name".into(), "Ding, Liren".into()),
        who,
    )
    .await;
    match live {
        Err(e) => assert!(
            e.message()
                .contains("a player's name is one line of at most 200 characters"),
            "{e}"
        ),
        Ok(()) => panic!("the live call was accepted"),
    }
    assert_eq!(players(&snap.borrow()), want);
    daemon.shutdown().within(30, "the daemon to stop").await;
}

/// What a daemon resuming from a journal decides as it comes back (a move
/// whose release threshold passes only then, an amendment the journal's last
/// dump asks) is published as any change is: its signals before the properties
/// that show it. Every restart moment of a short game, the journal cut after
/// each of its records (and one whose last dump, after a cut line, shows
/// another last move): no `MoveMade` or `MoveAmended` comes after a
/// `PropertiesChanged` that already showed its ply (the event campaign's seed
/// 956: the resumed process showed 13. Nd5 in `Moves` before it said
/// `MoveAmended` of 13. b3, and a listener saw a ply withdrawn without a word).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_resume_decides_is_signalled_before_the_properties_show_it() {
    let game = [
        "0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR",
        "1 lift e2 P",
        "1.4 place e4 P",
        "2 lift e7 p",
        "2.3 place e5 p",
        "3 lift g1 N",
        "3.2 place f3 N",
        "4 lift b8 n",
        "4.5 place c6 n",
    ];
    // The knight seen on c6, then the line away, and the board read again
    // with it on f6 instead: 2... Nf6, amended.
    let amended = [
        "5 gap line lost",
        "6 gap connected",
        "6.1 board rnbqkb1r/pppp1ppp/5n2/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R",
    ];
    let mut journals: Vec<String> = (2..=game.len()).map(|k| game[..k].join("\n")).collect();
    journals.push(
        game.iter()
            .chain(&amended)
            .copied()
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let mut signalled = 0;
    // What the journal one record shorter showed: what the last turn changed
    // must be said.
    let mut before: Vec<String> = Vec::new();
    for (k, body) in journals.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let recording = dir.path().join("state/recordings/board0.esl");
        std::fs::create_dir_all(recording.parent().unwrap()).unwrap();
        std::fs::write(&recording, format!("# eboard-sensor-log 1\n{body}\n")).unwrap();
        let address = private_bus(dir.path()).await;
        let client = bus_client(&address).await;
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .path("/org/eboardbridge/board/board0")
            .unwrap()
            .build();
        let mut stream = zbus::MessageStream::for_match_rule(rule, &client, None)
            .within(10, "the bus to take a match rule")
            .await
            .unwrap();
        let daemon = Daemon::start(
            vec![dir.path().join("board0")],
            config(dir.path()),
            BusChoice::Address(address.clone()),
        )
        .within(30, "the daemon to start")
        .await
        .unwrap();
        // Everything said in the first second (no board: nothing else comes).
        let mut heard: Vec<(String, Vec<String>, u32)> = Vec::new();
        let until = tokio::time::Instant::now() + Duration::from_secs(1);
        while let Ok(Some(Ok(msg))) = tokio::time::timeout_at(until, stream.next()).await {
            let member = msg.header().member().map(|m| m.to_string()).unwrap_or_default();
            let body = msg.body();
            match member.as_str() {
                "PropertiesChanged" => {
                    if let Some(moves) =
                        common::changed_properties(&body).and_then(|c| common::changed_texts(&c, "Moves"))
                    {
                        heard.push((member, moves, 0));
                    }
                }
                "MoveMade" => {
                    let (ply, san, _, _) = body.deserialize::<(u32, String, String, String)>().unwrap();
                    heard.push((member, vec![san], ply));
                }
                "MoveAmended" => {
                    let (ply, _, san, _, _) = body
                        .deserialize::<(u32, String, String, String, String)>()
                        .unwrap();
                    heard.push((member, vec![san], ply));
                }
                _ => {}
            }
        }
        daemon.shutdown().within(30, "the daemon to stop").await;
        let shown = heard
            .iter()
            .rev()
            .find(|(m, _, _)| m == "PropertiesChanged")
            .map_or(Vec::new(), |(_, moves, _)| moves.clone());
        for (p, san) in shown.iter().enumerate() {
            if before.get(p) != Some(san) {
                assert!(
                    heard.iter().any(|(m, what, ply)| m != "PropertiesChanged"
                        && *ply as usize == p + 1
                        && what.first() == Some(san)),
                    "journal {k} ({}): ply {} ({san}) shown, never said: {heard:?}",
                    body.lines().last().unwrap_or_default(),
                    p + 1
                );
            }
        }
        before = shown;
        for (i, (member, what, ply)) in heard.iter().enumerate() {
            if member == "PropertiesChanged" {
                continue;
            }
            signalled += 1;
            let shown_before = heard[..i].iter().any(|(m, moves, _)| {
                m == "PropertiesChanged" && moves.get(*ply as usize - 1) == what.first()
            });
            assert!(
                !shown_before,
                "journal {k} ({}): {member} of ply {ply} ({}) came after the properties showed it: {heard:?}",
                body.lines().last().unwrap_or_default(),
                what[0]
            );
        }
    }
    // The class is not empty: resuming decided moves (and the amendment).
    assert!(
        signalled >= 4,
        "only {signalled} signals heard across the restarts"
    );
}
