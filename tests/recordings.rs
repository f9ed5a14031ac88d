//! Recordings that say how they were judged: a configured time control is a
//! journaled decision (it survives SIGKILL and `replay` applies it), and a
//! recording states the settings that judged it, so that `replay` with no
//! options gives what was published.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::process::{
    Running, board_property, run_command, run_config, run_config_text, tag_in, value_text,
};
use common::replayed::{assert_replays_as_published, collect, live_jsonl, replay_jsonl};
use common::{Within, pgn_moves, plies_in, private_bus, send_signal, wait_exit, wait_for};
use eboard_bridge::daemon::{BusChoice, Daemon};
use eboard_bridge::log::SensorLog;
use eboard_bridge::rules::{EventKind, Profile};
use shakmaty::{Chess, Move, Position};

/// Starts an emulator playing `log` at `speed` and points `link` at it.
fn emulate(log: SensorLog, link: &Path, speed: f64) -> tokio::task::JoinHandle<()> {
    common::emulated::emulate(log, link, speed, "24680")
}

fn game_log(start: &Chess, moves: &[Move], seed: u64) -> SensorLog {
    common::emulated::hands_log(start, moves, seed, 1500)
}

/// The real binary bridging `link` with the configuration `cfg`, on the bus at
/// `address`.
fn start_binary(cfg: &Path, link: &Path, address: &str) -> Running {
    Running::spawn(&mut run_command(cfg, &[link.to_path_buf()], Some(address)))
}

async fn stop(daemon: &mut Running, signal: i32, what: &str) {
    send_signal(daemon.child.id(), signal);
    wait_exit(&mut daemon.child, 30, what).await;
}

/// A string property of board0, read afresh (no cache: the daemon behind the
/// name may have been replaced); empty when it cannot be read.
async fn property(address: &str, name: &str) -> String {
    board_property(address, "board0", name)
        .await
        .map(|v| value_text(&v))
        .unwrap_or_default()
}

/// Report mode (the default) with a configured time control: the time control is
/// journaled as the decision it is, so after a SIGKILL in the middle of the game
/// the `TimeControl` property and the PGN tag are still there, and `replay` of
/// the recording with no options has it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_time_control_survives_sigkill_mid_game_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let game = common::game_of_at_least("games/immortal-games.pgn", 30);
    let link = dir.path().join("board0");
    let cfg = run_config(dir.path(), "[clock]\ntime_control = \"5400+30\"\n");
    let address = private_bus(dir.path()).await;
    let live = dir.path().join("live/round-1/game-1.pgn");
    let _first = emulate(game_log(&game.start, &game.moves[..12], 7), &link, 8.0);
    let mut daemon = start_binary(&cfg, &link, &address);
    wait_for("twelve moves on disk", 30, || plies_in(&live) == 12).await;
    assert_eq!(tag_in(&live, "TimeControl"), "5400+30");
    assert_eq!(property(&address, "TimeControl").await, "5400+30");
    stop(&mut daemon, libc::SIGKILL, "the daemon after SIGKILL").await;

    // Restarted mid-game: the time control is the game's still, and the game
    // goes on under it.
    let mut pos = game.start.clone();
    for m in &game.moves[..12] {
        pos.play_unchecked(*m);
    }
    let _second = emulate(game_log(&pos, &game.moves[12..20], 8), &link, 8.0);
    std::fs::remove_file(&live).unwrap();
    let mut daemon = start_binary(&cfg, &link, &address);
    wait_for("twenty moves on disk", 30, || plies_in(&live) == 20).await;
    assert_eq!(tag_in(&live, "TimeControl"), "5400+30", "the tag after SIGKILL");
    assert_eq!(
        property(&address, "TimeControl").await,
        "5400+30",
        "the property after SIGKILL"
    );
    stop(&mut daemon, libc::SIGTERM, "the daemon after SIGTERM").await;

    // The recording holds it as a decision, with its mode, once.
    let recording = dir.path().join("state/recordings/board0.esl");
    let text = std::fs::read_to_string(&recording).unwrap();
    assert_eq!(
        text.matches(" arbiter SetTimeControl \"5400+30\" \"report\"\n")
            .count(),
        1,
        "{text}"
    );
    // `replay` with no options: the tag, and the decision among the events.
    let pgn = common::output_within(
        std::process::Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .args(["replay", "--format", "pgn"])
            .arg(&recording),
        60,
        "replay --format pgn",
    );
    let pgn = String::from_utf8(pgn.stdout).unwrap();
    assert!(pgn.contains("[TimeControl \"5400+30\"]"), "{pgn}");
    assert_eq!(
        pgn_moves(&pgn),
        vec![common::sans(&game.start, &game.moves[..20])]
    );
    let jsonl = replay_jsonl(&recording);
    assert!(
        jsonl.contains(r#""type":"arbiter","method":"SetTimeControl","args":["5400+30","report"]"#),
        "{jsonl}"
    );
}

/// The demo's game at the demo's speed (`demo::demo_config`, 10 times faster)
/// judged by thresholds, profile and flag policy other than the defaults: the
/// recording states them, and `replay` of it with no options prints the events
/// that were published, byte for byte. The same recording without its settings
/// line replays to other events: the line is what makes them agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_with_other_thresholds_replays_as_published_with_no_options() {
    let dir = tempfile::tempdir().unwrap();
    let device = dir.path().join(eboard_bridge::demo::DEVICE_NAME);
    let speed = 10.0;
    let log = eboard_bridge::demo::demo_log();
    let length = log.records.last().map_or(0, |r| r.time.micros());
    let emulator = emulate(log, &device, speed);
    let mut cfg = eboard_bridge::demo::demo_config(dir.path(), &device, speed);
    cfg.rules.release_ms = 120;
    cfg.rules.flicker_ms = 60;
    cfg.rules.irregular_ms = 900;
    cfg.rules.profile = Profile::Rapid;
    cfg.clock.flag = eboard_bridge::rules::FlagPolicy::End;
    let daemon = Daemon::start(vec![device.clone()], cfg, BusChoice::None)
        .within(30, "the daemon to start")
        .await
        .unwrap();
    let live = collect(&daemon);
    let snap = daemon.boards()[0].2.clone();
    let plies = eboard_bridge::demo::GAME.split_whitespace().count();
    let secs = Duration::from_secs_f64(length as f64 / 1e6 / speed).as_secs() + 30;
    wait_for("the demo's game to end", secs, || {
        let s = snap.borrow();
        s.moves.len() == plies && !s.result.is_empty() && s.result != "*"
    })
    .await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    emulator.abort();
    let live = live.within(10, "the daemon's events to end").await.unwrap();
    assert!(
        live.iter()
            .any(|t| matches!(t.event.kind, EventKind::GameEnd { .. })),
        "the game ended live"
    );
    let board = eboard_bridge::bus::board_id(eboard_bridge::demo::DEVICE_NAME);
    let recording = dir.path().join(format!("state/recordings/{board}.esl"));
    let n = assert_replays_as_published(&recording, &board, &live);
    assert!(n > plies, "{n} events for {plies} plies");

    // Without its settings the same recording is judged by the defaults, and
    // the events are not those published.
    let text = std::fs::read_to_string(&recording).unwrap();
    let header = text
        .lines()
        .find(|l| l.starts_with("# settings: "))
        .expect("a settings header field");
    assert!(header.contains(r#""release_ms":120"#), "{header}");
    let bare = dir.path().join("bare.esl");
    let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with("# settings: ")).collect();
    std::fs::write(&bare, kept.join("\n") + "\n").unwrap();
    assert_ne!(replay_jsonl(&bare), live_jsonl(&live, &board));
}

/// A daemon configuration for board0 in `dir` with these `[rules]`.
fn rules_config(dir: &Path, rules: &str) -> eboard_bridge::daemon::DaemonConfig {
    eboard_bridge::daemon::DaemonConfig::parse(
        &run_config_text(dir, &format!("[rules]\n{rules}\n")),
        "rules.toml",
    )
    .unwrap()
}

/// A daemon restarted with other `[rules]` on the same recording judges the rest
/// of the game by them and says so in the recording (a `# settings:` line), so
/// that `replay` with no options gives every event both daemons published: the
/// first part by the first settings, the rest by the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_other_rules_is_in_the_recording_and_replays_as_published() {
    let dir = tempfile::tempdir().unwrap();
    let game = common::game_of_at_least("games/immortal-games.pgn", 20);
    let link = dir.path().join("board0");
    let mut live = Vec::new();
    let mut pos = game.start.clone();
    let parts = [
        (
            0..10,
            "release_ms = 80\nflicker_ms = 40\nirregular_ms = 700\nprofile = \"blitz\"",
        ),
        (10..20, "release_ms = 400\nirregular_ms = 2500"),
    ];
    for (i, (plies, rules)) in parts.into_iter().enumerate() {
        let emulator = emulate(
            game_log(&pos, &game.moves[plies.clone()], 11 + i as u64),
            &link,
            8.0,
        );
        for m in &game.moves[plies.clone()] {
            pos.play_unchecked(*m);
        }
        let daemon = Daemon::start(
            vec![link.clone()],
            rules_config(dir.path(), rules),
            BusChoice::None,
        )
        .within(30, "the daemon to start")
        .await
        .unwrap();
        let events = collect(&daemon);
        let mut completions = daemon.events();
        let snap = daemon.boards()[0].2.clone();
        wait_for("the part's moves", 30, || snap.borrow().moves.len() == plies.end).await;
        // The last move made is completed by its press before the stop.
        let last_completed = async {
            loop {
                let e = completions.recv().await.expect("the daemon's events");
                if matches!(e.event.kind, eboard_bridge::rules::EventKind::MoveCompleted { ply, .. } if ply as usize == plies.end)
                {
                    break;
                }
            }
        };
        last_completed.within(10, "the part's last move completed").await;
        daemon.shutdown().within(30, "the daemon to stop").await;
        emulator.abort();
        live.extend(events.within(10, "the daemon's events to end").await.unwrap());
    }
    let recording = dir.path().join("state/recordings/board0.esl");
    let text = std::fs::read_to_string(&recording).unwrap();
    let stated: Vec<&str> = text.lines().filter(|l| l.starts_with("# settings: ")).collect();
    assert_eq!(stated.len(), 2, "the header and the restart's line:\n{stated:?}");
    assert!(stated[0].contains(r#""release_ms":80"#) && stated[0].contains(r#""profile":"blitz""#));
    assert!(stated[1].contains(r#""release_ms":400"#) && stated[1].contains(r#""profile":"standard""#));
    let n = assert_replays_as_published(&recording, "board0", &live);
    assert!(n > 20, "{n} events");
    // Without the restart's line the rest is judged by the first settings, and
    // the events are not those published.
    let bare = dir.path().join("bare.esl");
    let kept: Vec<&str> = text.lines().filter(|l| *l != stated[1]).collect();
    std::fs::write(&bare, kept.join("\n") + "\n").unwrap();
    assert_ne!(replay_jsonl(&bare), live_jsonl(&live, "board0"));
}
