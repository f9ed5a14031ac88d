//! The writer's task with a clock: changes coalesced, the last state on disk,
//! no board waiting for the disk.

use std::time::Duration;

use super::*;

/// Sends `steps` versions of the games of boards `1..=boards` (version `k`
/// has `k` plies), all boards' version before the next, pausing `pause`
/// after each round of boards; returns the count sent.
async fn send_versions(tx: &Games, steps: usize, boards: u32, pause: Option<Duration>) -> u64 {
    let mut sent = 0;
    for step in 1..=steps {
        for board in 1..=boards {
            let key = GameKey {
                round: 1,
                board,
                index: 1,
            };
            let pgn = format!("[Round \"1.{board}\"]\n\n{}*\n\n", "e4 ".repeat(step));
            tx.send(LiveMsg::Game {
                key,
                plies: step,
                pgn,
            });
            sent += 1;
        }
        if let Some(p) = pause {
            tokio::time::sleep(p).await;
        }
    }
    sent
}

/// Four boards changing their games every 5 ms for about a second: each file
/// is written a few times a second at most, `games.pgn` about once a second,
/// and what is on disk at the end is the last state sent for every game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_are_coalesced_and_the_last_state_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = mailbox();
    let writer = tokio::spawn(run(dir.path().to_path_buf(), rx, None));
    let started = std::time::Instant::now();
    let sent = send_versions(&tx, 200, 4, Some(Duration::from_millis(5))).await;
    drop(tx);
    let written = writer.await.unwrap();
    let secs = started.elapsed().as_secs_f64();
    // At most one batch per FILE_EVERY (plus the first and the last), each
    // writing the four files once.
    let batches = (secs / FILE_EVERY.as_secs_f64()).ceil() as u64 + 2;
    assert!(
        written.files <= 4 * batches,
        "{written:?} in {secs:.2} s from {sent} changes"
    );
    assert!(written.files >= 4, "{written:?}");
    let combined = (secs / COMBINED_EVERY.as_secs_f64()).ceil() as u64 + 2;
    assert!(
        written.combined <= combined && written.combined >= 1,
        "{written:?} in {secs:.2} s"
    );
    let round = dir.path().join("round-1");
    for board in 1..=4 {
        let text = std::fs::read_to_string(round.join(format!("game-{board}.pgn"))).unwrap();
        assert_eq!(count_plies(&text), 200, "board {board}");
    }
    let all = std::fs::read_to_string(round.join("games.pgn")).unwrap();
    assert_eq!(
        count_plies(&all),
        800,
        "games.pgn holds the last state of all four"
    );
}

/// Sixteen boards sending 800 changes at once: the mailbox keeps each game's
/// latest, so no board waits for the disk; each file is written a couple of
/// times, with the last state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_board_never_waits_for_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = mailbox();
    let writer = tokio::spawn(run(dir.path().to_path_buf(), rx, None));
    let started = std::time::Instant::now();
    send_versions(&tx, 50, 16, None).await;
    let sending = started.elapsed();
    drop(tx);
    let written = writer.await.unwrap();
    // Held back for a batch's interval, the senders would have taken twelve.
    assert!(sending < FILE_EVERY, "800 changes sent in {sending:?}");
    assert!(written.files <= 3 * 16, "{written:?}");
    let round = dir.path().join("round-1");
    for board in 1..=16 {
        let text = std::fs::read_to_string(round.join(format!("game-{board}.pgn"))).unwrap();
        assert_eq!(count_plies(&text), 50, "board {board}");
    }
}

/// A round found on disk at start has its `games.pgn` written again, even when
/// no game file changes: the daemon may have stopped between a game file's
/// write and the round's (seed 1157: `game-2.pgn` said 1/2-1/2, `games.pgn`
/// `*`, and the restarted board's game, the same text, changed nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rounds_file_behind_its_games_is_written_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let round = dir.path().join("round-1");
    std::fs::create_dir_all(&round).unwrap();
    let ended = "[Round \"1.2\"]\n[Result \"1/2-1/2\"]\n\ne4 e5 1/2-1/2\n\n";
    std::fs::write(round.join("game-2.pgn"), ended).unwrap();
    // The round's file as it stood before the result reached it.
    std::fs::write(
        round.join("games.pgn"),
        "[Round \"1.2\"]\n[Result \"*\"]\n\ne4 e5 *\n\n",
    )
    .unwrap();
    let (tx, rx) = mailbox();
    let writer = tokio::spawn(run(dir.path().to_path_buf(), rx, None));
    // The restarted board's game: the very text on disk.
    tx.send(LiveMsg::Game {
        key: GameKey {
            round: 1,
            board: 2,
            index: 1,
        },
        plies: 2,
        pgn: ended.to_string(),
    });
    drop(tx);
    writer.await.unwrap();
    let combined = std::fs::read_to_string(round.join("games.pgn")).unwrap();
    assert!(
        combined.contains("1/2-1/2") && !combined.contains("e4 e5 *"),
        "{combined}"
    );
}
