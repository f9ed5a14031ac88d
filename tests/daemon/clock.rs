//! The clock: texts, commands acknowledged and resent, the arbiter's times, a
//! time control driven for 80 moves, what the clock shows.

use super::*;

/// `ShowText`'s End is sent by the board's task and recorded; a later text replaces
/// an earlier one and its End (the first End no longer cuts the second text short).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_text_replaces_an_earlier_one_and_its_end_is_recorded() {
    use eboard_bridge::protocol::{ClockCommand, HostCommand};
    let dir = tempfile::tempdir().unwrap();
    let _board = emulate(standing(""), &dir.path().join("board0"), 1.0);
    let (daemon, _, address) = bridged(dir.path(), config(dir.path())).await;
    let p = board0(&address).await;
    let first = HostCommand::Clock(ClockCommand::text("FIRST", false)).encode();
    let end = HostCommand::Clock(ClockCommand::End).encode();
    let second = HostCommand::Clock(ClockCommand::text("SECOND", false)).encode();
    p.call::<_, _, ()>("ShowText", &("FIRST", 1u32)).await.unwrap();
    wait_for("the first text on the clock", 10, || {
        sent_so_far(dir.path(), &first) == 1
    })
    .await;
    p.call::<_, _, ()>("ShowText", &("SECOND", 2u32)).await.unwrap();
    // The first End to go ends the test: if it were the first text's, it would
    // come well before 2 s after the second text.
    wait_for("an End", 10, || sent_so_far(dir.path(), &end) >= 1).await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    let (ends, seconds) = (sent_at(dir.path(), &end), sent_at(dir.path(), &second));
    assert_eq!(seconds.len(), 1, "the second text is recorded");
    assert_eq!(ends.len(), 1, "one End, recorded: {ends:?}");
    let shown = ends[0] - seconds[0];
    assert!(
        (1.9..2.5).contains(&shown),
        "the second text was shown {shown:.2} s"
    );
}

/// Clock commands one at a time: the clock's version query at connect has its
/// acknowledgement dropped, so it is sent again, identical, 2 s later; a text asked
/// for meanwhile waits for it. A clock that never answers has the command sent four
/// times, 2 s apart, then `clock_unresponsive`, and the next command goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_commands_wait_for_their_ack_are_resent_and_given_up() {
    use eboard_bridge::protocol::{ClockCommand, HostCommand};
    let version = HostCommand::Clock(ClockCommand::Version).encode();
    let text = HostCommand::Clock(ClockCommand::text("HELLO", false)).encode();
    for dropped in [1, 100] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = EmulatorConfig {
            drop_acks: dropped,
            ..EmulatorConfig::default()
        };
        let _board = emulate_with(standing(""), &dir.path().join("board0"), cfg);
        let (daemon, _, address) = bridged(dir.path(), config(dir.path())).await;
        let mut events = daemon.events();
        let p = board0(&address).await;
        wait_for("the version query", 10, || sent_so_far(dir.path(), &version) >= 1).await;
        p.call::<_, _, ()>("ShowText", &("HELLO", 30u32)).await.unwrap();
        // The text goes once the query is answered or given up (at most 8 s).
        wait_for("the text sent", 15, || sent_so_far(dir.path(), &text) == 1).await;
        let mut unresponsive = Vec::new();
        while let Ok(e) = events.try_recv() {
            if let EventKind::ClockUnresponsive { command } = e.event.kind {
                unresponsive.push(command);
            }
        }
        if dropped != 1 && unresponsive.is_empty() {
            // Said at the give-up, before the text goes; its event may trail the
            // recording.
            let said = async {
                loop {
                    if let EventKind::ClockUnresponsive { command } = events.recv().await.unwrap().event.kind
                    {
                        return command;
                    }
                }
            };
            unresponsive.push(said.within(5, "clock_unresponsive").await);
        }
        daemon.shutdown().within(30, "the daemon to stop").await;
        let (versions, texts) = (sent_at(dir.path(), &version), sent_at(dir.path(), &text));
        let gaps: Vec<f64> = versions.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.iter().all(|g| (1.9..2.4).contains(g)),
            "resent 2 s apart: {gaps:?}"
        );
        assert_eq!(texts.len(), 1, "the text is sent once: {texts:?}");
        assert!(
            texts[0] > versions[versions.len() - 1],
            "the text waited for the query"
        );
        if dropped == 1 {
            assert_eq!(versions.len(), 2, "sent, dropped, sent again: {versions:?}");
            assert!(unresponsive.is_empty());
        } else {
            assert_eq!(versions.len(), 4, "{versions:?}");
            let hex: Vec<String> = version.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(unresponsive, vec![hex.join(" ")]);
            assert!(
                texts[0] - versions[3] >= 1.9,
                "the text goes once the query is given up"
            );
        }
    }
}

/// The arbiter's clock: `AddTime` and `SetClock` set the DGT 3000 (set-and-run,
/// the running side going on running), and the clock's next reports show it;
/// arguments the clock cannot show are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_arbiter_adds_time_and_sets_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = "0 clock left=0:05:00 right=0:05:00 running=left\n";
    let _board = emulate(standing(clock), &dir.path().join("board0"), 1.0);
    let mut cfg = config(dir.path());
    cfg.clock.white = eboard_bridge::daemon::config::WhiteSide::Left;
    let (daemon, snap, address) = bridged(dir.path(), cfg).await;
    wait_for("a clock report", 10, || snap.borrow().black_clock_ms == 300_000).await;
    let p = board0(&address).await;
    // Black's clock is stopped: exactly two minutes more.
    p.call::<_, _, ()>("AddTime", &("black", 120i32)).await.unwrap();
    wait_for("black +120 s", 10, || snap.borrow().black_clock_ms == 420_000).await;
    assert_eq!(snap.borrow().clock_running, "white", "the running side goes on");
    p.call::<_, _, ()>("SetClock", &(60_000i64, 90_000i64))
        .await
        .unwrap();
    wait_for("the clock set", 10, || snap.borrow().black_clock_ms == 90_000).await;
    let white = snap.borrow().white_clock_ms;
    assert!((57_000..=60_000).contains(&white), "white {white} ms");
    assert_eq!(snap.borrow().clock_running, "white");
    for (method, bad) in [
        ("AddTime", p.call::<_, _, ()>("AddTime", &("green", 1i32)).await),
        ("SetClock", p.call::<_, _, ()>("SetClock", &(-1i64, 0i64)).await),
        (
            "SetClock",
            p.call::<_, _, ()>("SetClock", &(36_000_000i64, 0i64)).await,
        ),
    ] {
        let e = bad.unwrap_err().to_string();
        assert!(e.contains("InvalidArgument"), "{method}: {e}");
    }
    daemon.shutdown().within(30, "the daemon to stop").await;
    // Accepted calls are part of the record.
    let text = std::fs::read_to_string(dir.path().join("state/recordings/board0.esl")).unwrap();
    assert!(text.contains(" arbiter AddTime \"black\" 120\n"), "{text}");
    assert!(text.contains(" arbiter SetClock 60000 90000\n"));
}

/// `SetTimeControl` before the first move sends the DGT 3000 a set-and-run of both
/// sides (recorded) and sets the `TimeControl` property (PGN syntax, seconds); a
/// time the clock cannot show is refused, not clamped. (The clock is set, not
/// started: starting it is drive mode's, still to come.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_control_sets_the_clock_and_the_property() {
    let dir = tempfile::tempdir().unwrap();
    let clock = "0 clock left=0:05:00 right=0:05:00 running=none\n";
    let _board = emulate(standing(clock), &dir.path().join("board0"), 1.0);
    let (daemon, snap, address) = bridged(dir.path(), config(dir.path())).await;
    let p = board0(&address).await;
    let e = p
        .call::<_, _, ()>("SetTimeControl", &("10:00:00",))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("InvalidArgument"), "{e}");
    p.call::<_, _, ()>("SetTimeControl", &("90",)).await.unwrap();
    assert_eq!(snap.borrow().time_control, "5400");
    property_is(&address, "TimeControl", "5400").await;
    use eboard_bridge::protocol::{ClockCommand, ClockTime, Hms, HostCommand, RunFlags};
    let hms = Hms::from_time(ClockTime::from_hms(1, 30, 0).unwrap());
    let set = HostCommand::Clock(ClockCommand::SetAndRun {
        left: hms,
        right: hms,
        flags: RunFlags {
            left_runs: false,
            right_runs: false,
            paused: false,
            switch_on_lever: true,
        },
    });
    // The clock's commands go once its version query is answered or given up
    // (at most 8 s): on a loaded machine, later than the property.
    wait_for("the set-and-run sent", 15, || {
        sent_so_far(dir.path(), &set.encode()) >= 1
    })
    .await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    assert_eq!(
        sent_at(dir.path(), &set.encode()).len(),
        1,
        "one set-and-run of 1:30:00"
    );
}

/// How much faster than life the 80-move games are played: the emulated board
/// and clock at this speed, the daemon's time for the board scaled with them
/// (`DaemonConfig::time_scale`, as `demo --speed` does), so every time the tests
/// compare (the recording's, `%clk`, the clock's reports) is game time, and
/// their thresholds are the game's as at speed 1. The line's and the daemon's
/// latency grow with the speed in game time: driving the clock, a set and its
/// acknowledgement must come before the next move (think times from 50 ms) to
/// be checked. At 2, 155-158 of the 160 moves are (160 at 1, 130-134 at 3,
/// 69-120 at 4, which fails the test's 120).
const DRIVE_SPEED: f64 = 2.0;
/// The same for the clock's own program, where the clock's reports alone make
/// `%clk` (4: 31 s instead of 124).
const PROGRAM_SPEED: f64 = 4.0;

/// 80 moves (160 plies) with random think times through the daemon driving the
/// emulated DGT 3000 at 90+30: the clock is set at the start, and after every
/// completed move the clock shows the mover's time as the host's model has it
/// (to the second it shows) and the opponent's within a second of the model: no
/// drift. The published PGN is the replay of the recording. Played at
/// [`DRIVE_SPEED`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_drives_the_clock_for_80_moves_without_drift() {
    use eboard_bridge::board::BoardEvent;
    use eboard_bridge::log::{Played, Player};
    use eboard_bridge::protocol::{AckKind, ClockCommand, HostInput, clock_code};
    let dir = tempfile::tempdir().unwrap();
    let moves = common::random_game(160, 3);
    let mut hands = Hands::new(5, common::steady_hands((50, 400), (30, 60)), Orientation::Normal);
    hands.board(Chess::default().board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    let log = common::played_log(hands, &Chess::default(), &moves, 1500);
    let _board = emulate(log, &dir.path().join("board0"), DRIVE_SPEED);
    let text = format!(
        "output = \"{}\"\nstate = \"{}\"\n[[board]]\ndevice = \"{}\"\nnumber = 1\n[clock]\nmode = \"drive\"\ntime_control = \"90+30\"\n",
        dir.path().join("live").display(),
        dir.path().join("state").display(),
        dir.path().join("board0").display()
    );
    let mut cfg = DaemonConfig::parse(&text, "drive.toml").unwrap();
    cfg.time_scale = Some(DRIVE_SPEED);
    let (daemon, snap, _) = bridged(dir.path(), cfg).await;
    wait_for("160 plies", 240, || snap.borrow().moves.len() == 160).await;
    // The last move's clock in the PGN, then its set, the set's acknowledgement
    // and the clock's next report in the recording.
    wait_for("the last move's clock", 10, || {
        snap.borrow().pgn.matches("%clk").count() == 160
    })
    .await;
    wait_for("a report after the last set", 10, || {
        let steps = recorded_steps(dir.path());
        let is_set = |s: &&eboard_bridge::log::Step| {
            matches!(
                &s.what,
                Played::Host(HostInput::Command(eboard_bridge::protocol::HostCommand::Clock(
                    ClockCommand::SetAndRun { .. }
                )))
            )
        };
        let Some(last_set) = steps.iter().rposition(|s| is_set(&s)) else {
            return false;
        };
        let after = &steps[last_set..];
        let acked = after.iter().position(|s| {
            matches!(
                s.what,
                Played::Board(BoardEvent::ClockAck(AckKind::Command { command, .. }))
                    if command == clock_code::SET_AND_RUN
            )
        });
        acked.is_some_and(|a| {
            after[a..]
                .iter()
                .any(|s| matches!(s.what, Played::Board(BoardEvent::Clock(_))))
        })
    })
    .await;
    assert_eq!(snap.borrow().time_control, "5400+30");
    let published = snap.borrow().pgn.clone();
    daemon.shutdown().within(30, "the daemon to stop").await;

    let path = dir.path().join("state/recordings/board0.esl");
    let recording = eboard_bridge::log::read_log(&path).unwrap();
    let replayed = eboard_bridge::output::replay::run(
        &recording,
        "board0.esl",
        eboard_bridge::rules::Config::default(),
        None,
    )
    .unwrap();
    let game = replayed.core.game().unwrap();
    assert_eq!(game.ply(), 160);
    assert_eq!(game.moves.iter().filter(|m| m.clk_ms.is_some()).count(), 160);
    // The live PGN's moves and clocks are the replay's.
    let moves_part = |pgn: &str| pgn[pgn.find("\n\n").unwrap()..].to_string();
    let replay_pgn =
        eboard_bridge::output::replay::game_pgn(game, &eboard_bridge::output::replay::Tags::unknown("?"));
    assert_eq!(moves_part(&published), moves_part(&replay_pgn));

    // What the clock was told and what it showed, in order.
    let steps = Player::play_log(&recording, "board0.esl").unwrap();
    let completed: Vec<(u64, u32)> = replayed
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::MoveCompleted { ply, .. } => Some((e.t_us, ply)),
            _ => None,
        })
        .collect();
    assert!(completed.len() >= 159, "{} moves completed", completed.len());
    let sets: Vec<(u64, ClockCommand)> = steps
        .iter()
        .filter_map(|s| match &s.what {
            Played::Host(HostInput::Command(eboard_bridge::protocol::HostCommand::Clock(
                c @ ClockCommand::SetAndRun { .. },
            ))) => Some((s.time.micros(), c.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        eboard_bridge::protocol::HostCommand::Clock(sets[0].1.clone()).encode(),
        [0x2b, 0x0a, 0x03, 0x0a, 1, 30, 0, 1, 30, 0, 0x08, 0],
        "1:30:00 on both sides at the start"
    );
    let (mut checked, mut worst) = (0, 0);
    for &(t, ply) in &completed {
        let clk = game.moves[ply as usize - 1].clk_ms.unwrap();
        let white_moved = ply % 2 == 1;
        // The set made for this move, its ack, and the clock's next report.
        let Some((ts, ClockCommand::SetAndRun { left, right, .. })) = sets.iter().find(|(ts, _)| *ts >= t)
        else {
            panic!("no set after ply {ply}")
        };
        let mover = if white_moved { left } else { right };
        assert_eq!(
            u64::from(mover.to_time().unwrap().millis()),
            clk / 1000 * 1000,
            "ply {ply}: the set carries the model's time"
        );
        let acked = steps
            .iter()
            .find(|s| {
                s.time.micros() >= *ts
                    && matches!(
                        s.what,
                        Played::Board(BoardEvent::ClockAck(AckKind::Command { command, .. }))
                            if command == clock_code::SET_AND_RUN
                    )
            })
            .map(|s| s.time.micros());
        let Some(acked) = acked else { continue };
        let shown = steps.iter().find_map(|s| match &s.what {
            Played::Board(BoardEvent::Clock(status)) if s.time.micros() > acked => {
                Some((s.time.micros(), *status))
            }
            _ => None,
        });
        let Some((tr, status)) = shown else { continue };
        if completed.iter().any(|&(tc, _)| tc > t && tc <= tr) {
            continue; // the next move came first
        }
        let (mine, theirs) = if white_moved {
            (status.left, status.right)
        } else {
            (status.right, status.left)
        };
        assert_eq!(
            u64::from(mine.millis()),
            clk / 1000 * 1000,
            "ply {ply}: the mover's time on the clock"
        );
        // The opponent's time in the model: its last clock minus the time since
        // the press.
        let theirs_model = if ply == 1 {
            5_400_000
        } else {
            game.moves[ply as usize - 2].clk_ms.unwrap()
        } as i64
            - ((tr - t) / 1000) as i64;
        let diff = i64::from(theirs.millis()) - theirs_model;
        assert!(
            diff.abs() <= 1000,
            "ply {ply}: the opponent's clock {diff} ms off the model"
        );
        worst = worst.max(diff.abs());
        checked += 1;
    }
    assert!(
        checked >= 120,
        "only {checked} moves had a report after their set"
    );
    eprintln!("drive: {checked} moves checked, the opponent's clock at most {worst} ms off the model");
}

/// An 80-move game on the clock's own program, through the emulator and the
/// daemon: every move's `[%clk]` in the live PGN is the one `replay` gives for
/// the same sensor log (what the clock showed after the press). Played at
/// [`PROGRAM_SPEED`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_clocks_are_the_replay_s_for_80_moves() {
    let dir = tempfile::tempdir().unwrap();
    let moves = common::random_game(160, 21);
    // Played at the log's pace, in game time: a real clock runs in real time,
    // and the daemon ignores a report that falls faster than the time between
    // reports allows (its time is scaled with the emulator's).
    let style = common::steady_hands((30, 400), (20, 50));
    let mut hands = Hands::new(9, style, Orientation::Normal);
    hands.board(Chess::default().board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    let log = common::played_log(hands, &Chess::default(), &moves, 1500);
    let replayed =
        eboard_bridge::output::replay::run(&log, "generated", eboard_bridge::rules::Config::default(), None)
            .unwrap();
    let _board = emulate(log, &dir.path().join("board0"), PROGRAM_SPEED);
    let mut cfg = config(dir.path());
    cfg.time_scale = Some(PROGRAM_SPEED);
    let (daemon, snap, _) = bridged(dir.path(), cfg).await;
    // Moves and clocks (a move's time, `%emt`, is measured by the daemon, to
    // within the line's latency).
    let clocks = |pgn: &str| -> Vec<String> {
        pgn.split("[%clk ")
            .skip(1)
            .map(|s| s[..s.find(']').unwrap()].to_string())
            .collect()
    };
    wait_for("160 plies", 180, || snap.borrow().moves.len() == 160).await;
    // The last move's `%clk` comes with the clock's report after the press.
    wait_for("the last move's clock", 10, || {
        clocks(&snap.borrow().pgn).len() == 160
    })
    .await;
    let published = snap.borrow().pgn.clone();
    daemon.shutdown().within(30, "the daemon to stop").await;
    let game = replayed.core.game().unwrap();
    let want = clocks(&eboard_bridge::output::replay::game_pgn(
        game,
        &eboard_bridge::output::replay::Tags::unknown("?"),
    ));
    assert_eq!(want.len(), 160);
    assert_eq!(clocks(&published), want);
    assert_eq!(pgn_moves(&published), vec![sans(&moves)]);
}

/// `[clock] show_moves`: after each completed move its SAN goes to the clock as
/// text, and the times come back 3 s later (an End).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_moves_puts_each_completed_move_on_the_clock() {
    use eboard_bridge::protocol::{ClockCommand, HostCommand};
    let dir = tempfile::tempdir().unwrap();
    let moves = "0 clock left=0:05:00 right=0:05:00 running=none\n\
                 1.000 lift e2 P\n1.400 place e4 P\n2.000 press left\n\
                 3.000 lift g8 n\n3.400 place f6 n\n4.000 press right\n";
    let _board = emulate(standing(moves), &dir.path().join("board0"), 1.0);
    let mut cfg = config(dir.path());
    cfg.clock.show_moves = true;
    let (daemon, snap, _) = bridged(dir.path(), cfg).await;
    wait_for("two moves", 10, || snap.borrow().moves.len() == 2).await;
    let nf6_shown = HostCommand::Clock(ClockCommand::text("Nf6", false)).encode();
    let end = HostCommand::Clock(ClockCommand::End).encode();
    // The first End after Nf6 ends the wait: were it e4's, it would come less
    // than 3 s after Nf6.
    wait_for("an End after Nf6", 10, || {
        sent_so_far(dir.path(), &nf6_shown) == 1 && sent_so_far(dir.path(), &end) >= 1
    })
    .await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    let text = |s: &str| {
        sent_at(
            dir.path(),
            &HostCommand::Clock(ClockCommand::text(s, false)).encode(),
        )
    };
    let (e4, nf6) = (text("e4"), text("Nf6"));
    assert_eq!((e4.len(), nf6.len()), (1, 1), "each move shown once");
    assert!(nf6[0] - e4[0] > 1.5, "e4 at {}, Nf6 at {}", e4[0], nf6[0]);
    // e4's End was replaced by Nf6; Nf6's came 3 s after it.
    let ends = sent_at(dir.path(), &HostCommand::Clock(ClockCommand::End).encode());
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert!(
        (2.9..3.5).contains(&(ends[0] - nf6[0])),
        "End {} s after Nf6",
        ends[0] - nf6[0]
    );
}

/// A DGT XL (clock version 1) has no text: `ShowText` goes to its six 7-segment
/// characters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xl_clock_gets_its_segment_display() {
    use eboard_bridge::protocol::HostCommand;
    let dir = tempfile::tempdir().unwrap();
    let cfg = EmulatorConfig {
        clock_version: (1, 14),
        serial: "13579".into(),
        ..EmulatorConfig::default()
    };
    let _board = emulate_with(standing(""), &dir.path().join("board0"), cfg);
    let (daemon, _, address) = bridged(dir.path(), config(dir.path())).await;
    // The version answer comes with the start-up commands.
    wait_for("the clock's version", 10, || {
        recorded_steps(dir.path()).iter().any(|s| {
            matches!(
                s.what,
                eboard_bridge::log::Played::Board(eboard_bridge::board::BoardEvent::ClockAck(
                    eboard_bridge::protocol::AckKind::Version { .. }
                ))
            )
        })
    })
    .await;
    board0(&address)
        .await
        .call::<_, _, ()>("ShowText", &("Nf3", 2u32))
        .await
        .unwrap();
    let xl = HostCommand::Clock(eboard_bridge::clock::segments("Nf3", false)).encode();
    wait_for("the segments sent", 10, || sent_so_far(dir.path(), &xl) >= 1).await;
    daemon.shutdown().within(30, "the daemon to stop").await;
    assert_eq!(
        xl,
        [0x2b, 0x0b, 0x03, 0x01, 0x4f, 0x71, 0x54, 0, 0, 0, 0, 0x01, 0]
    );
    assert_eq!(sent_at(dir.path(), &xl).len(), 1);
}
