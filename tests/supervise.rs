//! Boards fail alone (`daemon::supervise`): the real binary (a debug build, whose
//! fault hook `EBOARD_BRIDGE_FAULT` makes a board's task panic) bridging two
//! emulated boards on real pseudo-terminals, on a private D-Bus broker. A board
//! whose task panics is started again from its journal and its game goes on; a
//! journal that panics the rules core while resuming is moved aside and the board
//! starts afresh; the other board loses no move either way.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::process::{Running, bin, board_property, run_command, run_config, value_text};
use common::{bus_client, output_within, pgn_moves, plies_in, private_bus, wait_for};
use shakmaty::{CastlingMode, Chess, Move, Position};

/// Board `n` of the two (serial number 11111 or 22222, at `dir/boardN`) playing
/// `moves` from `start` at `speed`, as simulated hands play them.
fn board(
    dir: &Path,
    n: usize,
    start: &Chess,
    moves: &[Move],
    seed: u64,
    speed: f64,
) -> tokio::task::JoinHandle<()> {
    let log = common::emulated::hands_log(start, moves, seed, 1500);
    let link = dir.join(format!("board{n}"));
    common::emulated::emulate(log, &link, speed, ["11111", "22222"][n])
}

/// The position after `moves` from the start.
fn after(moves: &[Move]) -> Chess {
    let mut pos = Chess::default();
    for m in moves {
        pos.play_unchecked(*m);
    }
    pos
}

fn sans(moves: &[Move]) -> Vec<String> {
    common::sans(&Chess::default(), moves)
}

fn ucis(moves: &[Move]) -> Vec<String> {
    moves
        .iter()
        .map(|m| m.to_uci(CastlingMode::Standard).to_string())
        .collect()
}

/// The moves of each game `eboard-bridge replay --format uci` finds in `log`.
fn replayed(log: &Path) -> Vec<Vec<String>> {
    let out = output_within(
        std::process::Command::new(bin())
            .args(["replay", "--format", "uci"])
            .arg(log),
        60,
        "replay",
    );
    assert!(out.status.success(), "replay {}: {out:?}", log.display());
    let mut games: Vec<Vec<String>> = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.starts_with("# game") {
            games.push(Vec::new());
        } else if let Some(g) = games.last_mut() {
            g.push(line.trim().to_string());
        }
    }
    games
}

/// The fault hook is built into debug builds only (`daemon::fault`): a release
/// build (`cargo test --release`) has no way to make a board's task panic, so
/// these tests say so and stop there.
fn fault_hook_built() -> bool {
    if cfg!(debug_assertions) {
        return true;
    }
    eprintln!(
        "skipped: the fault hook is built in debug builds only; run `cargo test --test suite supervise::` without --release"
    );
    false
}

/// The real binary bridging board0 and board1 in `dir` (numbers 1 and 2, round 1)
/// on the bus at `address`, with the fault hook set to `fault`.
fn start(dir: &Path, address: &str, fault: Option<&str>) -> Running {
    let cfg = run_config(dir, "");
    let devices = [dir.join("board0"), dir.join("board1")];
    let mut cmd = run_command(&cfg, &devices, Some(address));
    cmd.env_remove(eboard_bridge::daemon::fault::FAULT_VAR);
    if let Some(f) = fault {
        cmd.env(eboard_bridge::daemon::fault::FAULT_VAR, f);
    }
    Running::spawn(&mut cmd)
}

/// A board's property (a string, or a list of strings joined by spaces), read
/// afresh; waits (at most 20 s) until it satisfies `want`, and returns it.
async fn property_until(address: &str, board: &str, name: &str, want: impl Fn(&str) -> bool) -> String {
    let until = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut last = String::new();
    while tokio::time::Instant::now() < until {
        if let Some(v) = board_property(address, board, name).await {
            last = value_text(&v);
            if want(&last) {
                return last;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out after 20 s waiting for {name} of {board}: it is {last:?}");
}

/// Two games of 24 plies from the start, for the two boards.
fn games() -> (Vec<Move>, Vec<Move>) {
    (common::random_game(24, 11), common::random_game(24, 12))
}

/// A board's task panics at ply 6 (the fault hook): the board is started again
/// from its journal after its back-off, its line opened again, and its game goes
/// on to its end: every move in the broadcast file, the earlier moves in the
/// journal before the restart and the later ones after it. The other board, and
/// its game, never notice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_board_whose_task_panics_is_restarted_and_its_game_goes_on() {
    if !fault_hook_built() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let address = private_bus(dir.path()).await;
    let (a, b) = games();
    let _board0 = board(dir.path(), 0, &Chess::default(), &a, 21, 1.0);
    let _board1 = board(dir.path(), 1, &Chess::default(), &b, 22, 1.0);
    let daemon = start(dir.path(), &address, Some("panic:board0:6"));
    let round = dir.path().join("live/round-1");
    wait_for("board0's task to panic and be started again", 60, || {
        daemon.logged("board board0: its task panicked") == 1
    })
    .await;
    let fault = property_until(&address, "board0", "Fault", |f| !f.is_empty()).await;
    assert!(fault.contains("its task panicked (fault hook"), "{fault}");
    assert!(fault.contains("restarted from its journal"), "{fault}");
    wait_for("both games whole on disk", 90, || {
        plies_in(&round.join("game-1.pgn")) == 24 && plies_in(&round.join("game-2.pgn")) == 24
    })
    .await;
    assert_eq!(daemon.logged("board board0: its task panicked"), 1, "one restart");
    let file = |n: u32| std::fs::read_to_string(round.join(format!("game-{n}.pgn"))).unwrap();
    assert_eq!(pgn_moves(&file(1)), vec![sans(&a)], "board0's game");
    assert_eq!(pgn_moves(&file(2)), vec![sans(&b)], "board1's game");
    assert_eq!(property_until(&address, "board1", "Fault", |_| true).await, "");
    assert_eq!(daemon.logged("board board1:"), 0, "board1 was never restarted");
    daemon.stop().await;

    // board0's journal: the moves before the restart, then (resumed) the rest.
    let recordings = dir.path().join("state/recordings");
    let journal = std::fs::read_to_string(recordings.join("board0.esl")).unwrap();
    let resumed = journal
        .find("\n# resumed ")
        .expect("a resume in board0's journal");
    let before = dir.path().join("before.esl");
    std::fs::write(&before, &journal[..resumed + 1]).unwrap();
    let early = replayed(&before);
    assert_eq!(early.len(), 1, "{early:?}");
    assert!(
        (6..24).contains(&early[0].len()),
        "{} moves before the restart",
        early[0].len()
    );
    assert_eq!(early[0], ucis(&a[..early[0].len()]));
    assert_eq!(replayed(&recordings.join("board0.esl")), vec![ucis(&a)]);
    assert_eq!(replayed(&recordings.join("board1.esl")), vec![ucis(&b)]);
    assert!(
        !std::fs::read_to_string(recordings.join("board1.esl"))
            .unwrap()
            .contains("# resumed")
    );
}

/// A journal that makes the rules core panic while it is resumed (the fault
/// hook), twice: it is moved aside with its bytes as they were, the board starts
/// a fresh journal and plays a new game in it, and the other board resumes its
/// own game and finishes it without losing a move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_that_panics_the_core_is_moved_aside_and_the_other_board_runs_on() {
    if !fault_hook_built() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let address = private_bus(dir.path()).await;
    let (a, b) = games();
    let round = dir.path().join("live/round-1");
    let recordings = dir.path().join("state/recordings");
    // First run: eight moves on each board.
    let first0 = board(dir.path(), 0, &Chess::default(), &a[..8], 31, 2.0);
    let first1 = board(dir.path(), 1, &Chess::default(), &b[..8], 32, 2.0);
    let daemon = start(dir.path(), &address, None);
    wait_for("eight moves on each board", 60, || {
        plies_in(&round.join("game-1.pgn")) == 8 && plies_in(&round.join("game-2.pgn")) == 8
    })
    .await;
    daemon.stop().await;
    first0.abort();
    first1.abort();
    let kept = std::fs::read(recordings.join("board0.esl")).unwrap();

    // Second run: board0's journal panics the core while it is resumed; board0
    // is set up for a new game (six moves of `b`), board1 plays on to 16.
    let _second0 = board(dir.path(), 0, &Chess::default(), &b[..6], 33, 2.0);
    let _second1 = board(dir.path(), 1, &after(&b[..8]), &b[8..16], 34, 2.0);
    let daemon = start(dir.path(), &address, Some("resume:board0"));
    wait_for("board1's game to go on to sixteen moves", 60, || {
        plies_in(&round.join("game-2.pgn")) == 16
    })
    .await;
    let fault = property_until(&address, "board0", "Fault", |f| !f.is_empty()).await;
    let moved: Vec<PathBuf> = std::fs::read_dir(&recordings)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains("board0.esl.quarantined-"))
        .collect();
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(
        std::fs::read(&moved[0]).unwrap(),
        kept,
        "the journal moved aside as it was"
    );
    assert!(fault.contains("moved aside to"), "{fault}");
    assert!(fault.contains(&moved[0].display().to_string()), "{fault}");
    assert_eq!(daemon.logged("made the rules core panic twice while resuming"), 1);
    assert_eq!(
        daemon.logged("resuming its journal panicked"),
        1,
        "tried again once first"
    );
    // board0 goes on with a fresh journal: its new game.
    let six = sans(&b[..6]).join(" ");
    property_until(&address, "board0", "Moves", |m| m == six).await;
    assert_eq!(property_until(&address, "board1", "Fault", |_| true).await, "");
    let file = std::fs::read_to_string(round.join("game-2.pgn")).unwrap();
    assert_eq!(pgn_moves(&file), vec![sans(&b[..16])], "board1's game, whole");
    daemon.stop().await;
    assert_eq!(replayed(&recordings.join("board0.esl")), vec![ucis(&b[..6])]);
    assert_eq!(
        replayed(&moved[0]),
        vec![ucis(&a[..8])],
        "the old game is in the journal moved aside"
    );
    assert_eq!(replayed(&recordings.join("board1.esl")), vec![ucis(&b[..16])]);
}

/// A board whose task panics again after every restart (the fault hook, 9 times)
/// is restarted 5 times, each after a longer wait, then stopped: its `Fault`
/// says so, a call to it is answered `Unavailable` with why, and the other board
/// plays its game to the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_board_that_keeps_panicking_is_stopped_alone_after_five_restarts() {
    if !fault_hook_built() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let address = private_bus(dir.path()).await;
    let (a, b) = games();
    let _board0 = board(dir.path(), 0, &Chess::default(), &a, 41, 1.0);
    // board1's game (about 27 s at three quarters of a real board's pace) lasts
    // past board0's restarts (0.5 + 1 + 2 + 4 + 8 s).
    let _board1 = board(dir.path(), 1, &Chess::default(), &b, 42, 0.75);
    let daemon = start(dir.path(), &address, Some("panic:board0:2:9"));
    let fault = property_until(&address, "board0", "Fault", |f| f.contains("stopped after")).await;
    assert!(fault.contains("stopped after 5 restarts in a row"), "{fault}");
    assert_eq!(
        daemon.logged("board board0: its task panicked"),
        5,
        "five restarts"
    );
    assert_eq!(daemon.logged("board board0 is stopped"), 1);
    let client = bus_client(&address).await;
    let p = common::board_proxy(&client, "/org/eboardbridge/board/board0").await;
    let e = p.call::<_, _, ()>("SetPlayers", &("A", "B")).await.unwrap_err();
    assert!(e.to_string().contains("Unavailable"), "{e}");
    assert!(e.to_string().contains("stopped after 5 restarts"), "{e}");
    // The arbiter's desk shows it with the board.
    let out = output_within(
        std::process::Command::new(bin())
            .args(["ctl", "--bus", "session", "boards"])
            .env("DBUS_SESSION_BUS_ADDRESS", &address),
        20,
        "ctl boards",
    );
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    let line = table.lines().find(|l| l.contains("board0")).unwrap_or_default();
    assert!(
        line.contains("fault: ") && line.contains("stopped after 5 restarts"),
        "{table}"
    );
    let round = dir.path().join("live/round-1");
    wait_for("board1's whole game", 90, || {
        plies_in(&round.join("game-2.pgn")) == 24
    })
    .await;
    let file = std::fs::read_to_string(round.join("game-2.pgn")).unwrap();
    assert_eq!(pgn_moves(&file), vec![sans(&b)], "board1's game");
    assert_eq!(property_until(&address, "board1", "Fault", |_| true).await, "");
    daemon.stop().await;
    assert_eq!(
        replayed(&dir.path().join("state/recordings/board1.esl")),
        vec![ucis(&b)]
    );
}
