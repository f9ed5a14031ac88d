//! The session's tests: records and bytes, decisions as records, undo, and the
//! clock's figures.

mod records {
    use serde_json::Value;

    use crate::log::{LogTime, RecordKind, parse_log};
    use crate::log::{Player, Record};
    use crate::rules::{Core, Decision, Refused};
    use crate::session::Session;

    fn record(t: u64, kind: RecordKind) -> Record {
        Record {
            time: LogTime::from_micros(t),
            kind,
        }
    }

    const GAME: &str = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n\
                        1 lift e2 P\n1.2 place e4 P\n3 lift e7 p\n3.2 place e5 p\n5 lift g1 N\n5.3 place f3 N\n";

    /// Records fed one at a time give what the same log gives as a whole, and
    /// the live path's bytes (an `rx` record cut anywhere) give the same moves.
    #[test]
    fn a_log_as_records_and_as_bytes_gives_the_same_moves() {
        let log = parse_log(GAME, "t.esl").unwrap();
        let mut whole = Session::new(Core::new(crate::rules::Config::default()), "t.esl");
        for (i, r) in log.records.iter().enumerate() {
            whole.step(r, log.line_of(i)).unwrap();
        }
        whole.finish();
        let sans = |s: &Session| -> Vec<String> {
            s.core()
                .game()
                .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
                .unwrap_or_default()
        };
        assert_eq!(sans(&whole), ["e4", "e5", "Nf3"]);

        // The same board output as the bytes a board sends, in pieces of 3.
        let mut made = Vec::new();
        let mut player = Player::new("t.esl");
        let mut clock = crate::clock::ClockModel::new(
            crate::protocol::ClockTime::from_millis(0),
            crate::protocol::ClockTime::from_millis(0),
            0,
        );
        for r in &log.records {
            let bytes = crate::log::play::board_bytes(&r.kind, player.board(), &mut clock, r.time.micros())
                .unwrap()
                .unwrap();
            for chunk in bytes.chunks(3) {
                made.push(record(r.time.micros(), RecordKind::Rx(chunk.to_vec())));
            }
            player.play(r, None).unwrap();
        }
        let mut live = Session::new(Core::new(crate::rules::Config::default()), "live");
        let mut seen = 0;
        for r in &made {
            live.step_with(r, None, |_, _| seen += 1).unwrap();
        }
        live.finish();
        assert_eq!(sans(&live), sans(&whole));
        assert_eq!(seen, 7, "a dump and six field updates");
    }

    /// A call refused by `decide` changes nothing; an accepted one is the
    /// event its record gives when stepped.
    #[test]
    fn a_decision_is_applied_as_its_record_is() {
        let log = parse_log(GAME, "t.esl").unwrap();
        let mut live = Session::new(Core::new(crate::rules::Config::default()), "t.esl");
        let mut replayed = Session::new(Core::new(crate::rules::Config::default()), "t.esl");
        for r in &log.records {
            live.step(r, None).unwrap();
            replayed.step(r, None).unwrap();
        }
        let refused = live.decide(&Decision::Reinstate(9), None, 6_000_000);
        assert!(refused.is_err(), "{refused:?}");
        let bad = Decision::from_record("SetClock", &[Value::from("x")]);
        assert!(matches!(bad, Err(Refused::InvalidArgument(_))), "{bad:?}");
        live.decide(&Decision::Reinstate(1), Some("ana".into()), 6_000_000)
            .unwrap();
        replayed
            .step(
                &record(6_000_000, RecordKind::Note("decided by ana".into())),
                None,
            )
            .unwrap();
        replayed
            .step(
                &record(
                    6_000_000,
                    RecordKind::Arbiter {
                        method: "Reinstate".into(),
                        args: vec!["1".into()],
                    },
                ),
                None,
            )
            .unwrap();
        let (a, b) = (live.take_events(), replayed.take_events());
        assert_eq!(a, b);
        assert!(
            a.iter().any(
                |e| matches!(&e.kind, crate::rules::EventKind::Arbiter { decision, by }
                if *decision == Decision::Reinstate(1) && by.as_deref() == Some("ana"))
            ),
            "{a:?}"
        );
        assert_eq!(live.core().game().map(|g| g.moves.len()), Some(1));
    }
}

/// Undo through the session, as the daemon, resume and `replay` apply it
/// (`rules::undo`).
mod undo {
    use serde_json::Value;

    use crate::log::{Record, RecordKind, parse_log};
    use crate::rules::{Config, Core, EventKind, GameResult, Refused};
    use crate::session::Session;

    const GAME: &str = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n\
                        1 lift e2 P\n1.2 place e4 P\n3 lift e7 p\n3.2 place e5 p\n5 lift g1 N\n5.3 place f3 N\n";

    fn played() -> Session {
        let log = parse_log(GAME, "t.esl").unwrap();
        let mut s = Session::new(Core::new(Config::default()), "t.esl");
        for r in &log.records {
            s.step(r, None).unwrap();
        }
        s.take_events();
        s
    }

    /// A call as a door makes it: its method and JSON arguments read into a
    /// decision (refused there when they do not fit), then decided.
    fn call(s: &mut Session, method: &str, args: Vec<Value>, t_s: u64) -> Result<(), Refused> {
        let d = crate::rules::Decision::from_call(method, &args)?;
        s.decide(&d, None, t_s * 1_000_000)
    }

    fn state(s: &Session) -> (usize, Option<GameResult>) {
        let g = s.core().game().unwrap();
        (g.moves.len(), g.result.map(|(r, _)| r))
    }

    #[test]
    fn an_undone_take_back_gives_the_moves_and_the_result_back_and_an_undo_undone_redoes_it() {
        let mut s = played();
        call(&mut s, "SetResult", vec!["1-0".into()], 6).unwrap();
        call(&mut s, "Reinstate", vec![1.into()], 7).unwrap();
        assert_eq!(state(&s), (1, None));
        s.take_events();
        call(&mut s, "Undo", vec![], 8).unwrap();
        assert_eq!(state(&s), (3, Some(GameResult::WhiteWins)));
        let events: Vec<EventKind> = s.take_events().into_iter().map(|e| e.kind).collect();
        let moves: Vec<(u32, &str)> = events
            .iter()
            .filter_map(|e| match e {
                EventKind::Move { ply, san, .. } => Some((*ply, san.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(moves, [(2, "e5"), (3, "Nf3")], "{events:?}");
        assert!(
            events.iter().any(|e| matches!(e, EventKind::GameEnd { .. })),
            "{events:?}"
        );
        // Undone again: the take-back stands again.
        call(&mut s, "Undo", vec![], 9).unwrap();
        assert_eq!(state(&s), (1, None));
        let events: Vec<EventKind> = s.take_events().into_iter().map(|e| e.kind).collect();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventKind::Takeback { to_ply: 1, .. })),
            "{events:?}"
        );
    }

    #[test]
    fn a_result_undone_leaves_the_game_going_on() {
        let mut s = played();
        call(
            &mut s,
            "SetResult",
            vec!["1/2-1/2".into(), "adjudication".into()],
            6,
        )
        .unwrap();
        call(&mut s, "Undo", vec![], 7).unwrap();
        assert_eq!(state(&s), (3, None));
        assert_eq!(s.core().game().unwrap().termination_words, None);
    }

    #[test]
    fn plies_recorded_since_the_decision_are_dropped_only_with_force() {
        let log = parse_log(GAME, "t.esl").unwrap();
        let mut s = Session::new(Core::new(Config::default()), "t.esl");
        // e4 e5 played, then the arbiter takes the game back to e4; e5 is
        // played again, then Nf3.
        for r in &log.records[..5] {
            s.step(r, None).unwrap();
        }
        call(&mut s, "Reinstate", vec![1.into()], 4).unwrap();
        let again = "# eboard-sensor-log 1\n4.5 lift e5 p\n4.6 place e7 p\n4.8 lift e7 p\n4.9 place e5 p\n5 lift g1 N\n5.3 place f3 N\n";
        let more = parse_log(again, "t.esl").unwrap();
        for r in &more.records {
            s.step(r, None).unwrap();
        }
        s.advance(6_000_000);
        assert_eq!(state(&s), (3, None));
        match call(&mut s, "Undo", vec![], 7) {
            Err(Refused::GameUnderWay(m)) => assert!(m.contains("ply 3 was") && m.contains("force"), "{m}"),
            other => panic!("not refused: {other:?}"),
        }
        assert_eq!(state(&s), (3, None), "a refused undo changes nothing");
        call(&mut s, "Undo", vec![true.into()], 8).unwrap();
        assert_eq!(state(&s), (2, None));
    }

    #[test]
    fn what_is_not_taken_back_says_what_to_do_instead() {
        let mut s = played();
        match call(&mut s, "Undo", vec![], 6) {
            Err(Refused::NotUndone(m)) => assert!(m.contains("no decision"), "{m}"),
            other => panic!("{other:?}"),
        }
        call(&mut s, "NewGame", vec!["".into()], 7).unwrap();
        match call(&mut s, "Undo", vec![], 8) {
            Err(Refused::NotUndone(m)) => assert!(m.contains("ctl position"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(call(&mut s, "Undo", vec!["yes".into()], 9).is_err());
    }

    /// Resume and `replay` keep the same point to go back to: the journal's
    /// records give the state the calls gave.
    #[test]
    fn an_undo_journaled_is_applied_as_it_was_live() {
        let mut live = played();
        let mut replayed = played();
        let calls: [(&str, Vec<Value>); 3] = [
            ("SetResult", vec!["0-1".into()]),
            ("Reinstate", vec![2.into()]),
            ("Undo", vec![]),
        ];
        for (i, (method, args)) in calls.into_iter().enumerate() {
            let t = (6 + i as u64) * 1_000_000;
            let d = crate::rules::Decision::from_call(method, &args).unwrap();
            live.decide(&d, None, t).unwrap();
            let record = Record {
                time: crate::log::LogTime::from_micros(t),
                kind: RecordKind::Arbiter {
                    method: method.into(),
                    args: args.iter().map(ToString::to_string).collect(),
                },
            };
            replayed.step(&record, None).unwrap();
        }
        assert_eq!(live.take_events(), replayed.take_events());
        assert_eq!(state(&live), (3, Some(GameResult::BlackWins)));
        assert_eq!(state(&replayed), state(&live));
    }
}

/// Decisions on a game a forced end finished (issue 57: `ctl position
/// --force` with the position before a mate left the mate inferred again and
/// the game open).
mod on_a_finished_game {
    use crate::log::parse_log;
    use crate::rules::{Config, Core, Decision, FenPosition, GameResult};
    use crate::session::Session;

    /// Fool's mate, then the board left as the mate shows it.
    const MATE: &str = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n\
                        1 lift f2 P\n1.2 place f3 P\n3 lift e7 p\n3.2 place e5 p\n5 lift g2 P\n5.3 place g4 P\n\
                        7 lift d8 q\n7.3 place h4 q\n";

    fn mated() -> Session {
        let log = parse_log(MATE, "t.esl").unwrap();
        let mut s = Session::new(Core::new(Config::default()), "t.esl");
        for r in &log.records {
            s.step(r, None).unwrap();
        }
        s.advance(10_000_000);
        s.take_events();
        s
    }

    /// Every position of the game set, and every ply reinstated, while the
    /// board still shows the mate: the game is never left open on a board
    /// whose position is mate; a move the board shows from the position set is
    /// recorded as any move is, and a mate it gives ends the game.
    #[test]
    fn every_position_of_a_mated_game_set_while_the_board_shows_the_mate() {
        let s0 = mated();
        let g = s0.core().game().unwrap();
        assert_eq!(g.result.map(|(r, _)| r), Some(GameResult::BlackWins));
        let fens: Vec<String> = g.positions.iter().map(crate::rules::game_fen).collect();
        for (k, fen) in fens.iter().enumerate() {
            for d in [
                Decision::SetPosition(FenPosition::parse(fen).unwrap()),
                Decision::Reinstate(k as u32),
            ] {
                let mut s = mated();
                let t = 20_000_000;
                s.decide(&d, None, t).unwrap();
                // Time goes on with the board as it stands.
                for i in 1..=10 {
                    s.advance(t + i * 1_000_000);
                }
                let g = s.core().game().unwrap();
                let shows_mate = g.positions.last().is_some_and(|p| {
                    use shakmaty::Position;
                    p.is_checkmate()
                });
                assert!(
                    !shows_mate || g.result.is_some(),
                    "{d:?}: the record ends on the mate ({:?}) and the game is open",
                    g.moves.iter().map(|m| m.san.clone()).collect::<Vec<_>>()
                );
            }
        }
    }

    /// A result other than the mate's is refused, saying why; the mate's own
    /// is taken. A mated position set as a new game, or from outside the
    /// game, is over at once.
    #[test]
    fn a_mate_keeps_its_result_and_a_mated_position_set_is_over() {
        for (r, taken) in [("*", false), ("1-0", false), ("1/2-1/2", false), ("0-1", true)] {
            let mut s = mated();
            let got = s.decide(
                &Decision::SetResult(crate::rules::parse_result(r).unwrap(), None),
                None,
                20_000_000,
            );
            assert_eq!(got.is_ok(), taken, "{r}: {got:?}");
            if let Err(e) = got {
                assert!(e.to_string().contains("checkmate (5.1.1)"), "{e}");
            }
            let g = s.core().game().unwrap();
            assert_eq!(g.result.map(|(r, _)| r), Some(GameResult::BlackWins));
        }
        // Black mated on the back rank, from outside the game.
        let fen = "R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1";
        let p = FenPosition::parse(fen).unwrap();
        for d in [Decision::SetPosition(p.clone()), Decision::NewGame(Some(p))] {
            let mut s = mated();
            s.decide(&d, None, 20_000_000).unwrap();
            let g = s.core().game().unwrap();
            assert_eq!(g.result.map(|(r, _)| r), Some(GameResult::WhiteWins), "{d:?}");
        }
    }
}

/// The clock's figures a session shows, as the rules core keeps them
/// (`rules::clock`): issue 48's stale ones.
mod clock_figures {
    /// The decision a method and its JSON arguments hold.
    fn rec(method: &str, args: Vec<serde_json::Value>) -> crate::rules::Decision {
        crate::rules::Decision::from_call(method, &args).unwrap()
    }

    use serde_json::Value;

    use crate::log::{LogTime, Record, RecordKind, parse_log};
    use crate::protocol::{BoardMessage, ClockAck, ClockSide, clock_code};
    use crate::rules::{Config, Core};
    use crate::session::Session;

    /// A session of the standard start, then `more` (sensor-log lines), white on
    /// the clock's left.
    fn board(more: &str) -> Session {
        let text =
            format!("# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n{more}");
        let log = parse_log(&text, "t.esl").unwrap();
        let mut core = Core::new(Config::default());
        core.set_white_side(ClockSide::Left);
        let mut s = Session::new(core, "t.esl");
        for r in &log.records {
            s.step(r, None).unwrap();
        }
        s
    }

    fn step(s: &mut Session, t_us: u64, kind: RecordKind) {
        let r = Record {
            time: LogTime::from_micros(t_us),
            kind,
        };
        s.step(&r, None).unwrap();
    }

    /// A board without a clock whose first game's clock the daemon drove (an
    /// arbiter's time control), then a time control the clock runs itself:
    /// neither that game nor the next shows the host's times any more.
    #[test]
    fn a_new_game_on_a_board_without_a_clock_shows_no_clock() {
        let mut s = board("");
        assert_eq!(s.core().clock(), None);
        s.decide(
            &rec("SetTimeControl", vec![Value::from("300+0")]),
            None,
            1_000_000,
        )
        .unwrap();
        assert_eq!(s.core().clock(), Some((300_000, 300_000, None)));
        s.decide(
            &rec("AddTime", vec!["white".into(), Value::from(60)]),
            None,
            2_000_000,
        )
        .unwrap();
        assert_eq!(s.core().clock(), Some((360_000, 300_000, None)));
        s.decide(&rec("NewGame", vec!["".into()]), None, 3_000_000)
            .unwrap();
        assert_eq!(
            s.core().clock(),
            Some((300_000, 300_000, None)),
            "a new game, driven"
        );
        s.decide(
            &rec("SetTimeControl", vec!["600+0".into(), "report".into()]),
            None,
            4_000_000,
        )
        .unwrap();
        assert_eq!(
            s.core().clock(),
            None,
            "the clock runs its own program: there is none"
        );
        s.decide(&rec("NewGame", vec!["".into()]), None, 5_000_000)
            .unwrap();
        assert_eq!(s.core().clock(), None, "the last game's clocks on a new game");
    }

    /// A stopped clock at 0:00:00 on white's side: time added by the arbiter
    /// is what it shows once it acknowledges the set, and the report after it
    /// is believed (it was held as one that contradicts the one before, and a
    /// stopped clock sends no other: the flag stood).
    #[test]
    fn time_added_to_a_stopped_clock_is_shown_once_acknowledged() {
        let mut s = board("0 clock left=0:00:00 right=0:05:00 running=none\n");
        assert_eq!(s.core().clock(), Some((0, 300_000, None)));
        s.decide(
            &rec("AddTime", vec!["white".into(), Value::from(120)]),
            None,
            2_000_000,
        )
        .unwrap();
        assert_eq!(s.take_clock_commands().len(), 1);
        let ack = BoardMessage::ClockAck(ClockAck::ok(clock_code::SET_AND_RUN)).encode();
        step(&mut s, 2_100_000, RecordKind::Rx(ack));
        assert_eq!(s.core().clock(), Some((120_000, 300_000, None)));
        let report = parse_log(
            "# eboard-sensor-log 1\n2.2 clock left=0:02:00 right=0:05:00 running=none\n",
            "t.esl",
        )
        .unwrap();
        s.step(&report.records[0], None).unwrap();
        assert_eq!(s.core().clock(), Some((120_000, 300_000, None)));
        // Running again on white's side, the reports that follow are taken.
        s.decide(
            &rec("SetClock", vec![Value::from(100_000), Value::from(300_000)]),
            None,
            3_000_000,
        )
        .unwrap();
        let ack = BoardMessage::ClockAck(ClockAck::ok(clock_code::SET_AND_RUN)).encode();
        step(&mut s, 3_100_000, RecordKind::Rx(ack));
        assert_eq!(s.core().clock(), Some((100_000, 300_000, None)));
    }
    /// Every clock decision in report mode (the clock runs its own program),
    /// on a stopped clock and on each side's running clock, its set
    /// acknowledged before the undo or not yet: the undo gives the times
    /// before back (issue 57: an undo set the same times again, since the
    /// times it read were the last report's, from before the decision).
    #[test]
    fn every_clock_decision_undone_in_report_mode_gives_the_times_back() {
        let decisions = [
            rec("AddTime", vec!["white".into(), Value::from(60)]),
            rec("AddTime", vec!["black".into(), Value::from(60)]),
            rec("AddTime", vec!["black".into(), Value::from(-30)]),
            rec("SetClock", vec![Value::from(200_000), Value::from(250_000)]),
        ];
        let ack = || RecordKind::Rx(BoardMessage::ClockAck(ClockAck::ok(clock_code::SET_AND_RUN)).encode());
        for running in ["none", "left", "right"] {
            for d in &decisions {
                for acked in [false, true] {
                    let mut s = board(&format!("1 clock left=0:05:00 right=0:05:00 running={running}\n"));
                    let before = s.core().clock().expect("a clock report");
                    s.decide(d, None, 1_000_000).unwrap();
                    if acked {
                        step(&mut s, 1_000_000, ack());
                        assert_ne!(s.core().clock(), Some(before), "{d:?} changed the times");
                    }
                    s.decide(&rec("Undo", vec![]), None, 1_000_000).unwrap();
                    let sets = s.take_clock_commands().len();
                    for _ in 0..sets - usize::from(acked) {
                        step(&mut s, 1_000_000, ack());
                    }
                    assert_eq!(
                        s.core().clock(),
                        Some(before),
                        "{d:?} undone (running {running}, acknowledged before the undo: {acked})"
                    );
                }
            }
        }
    }
}

/// A session made from a recording's header (`Session::from_header`), as
/// resume and `replay` make it.
mod from_header {
    use crate::log::parse_log;
    use crate::rules::{Config, SETTINGS_KEY, Settings};
    use crate::session::{HeaderError, Session, Start};

    const FEN: &str = "r3k2r/ppq1bpp1/2p2nn1/4p2p/3P3P/2P3P1/PP1NQPB1/R1B1K2R w KQkq - 0 16";
    const PLACEMENT: &str = "r3k2r/ppq1bpp1/2p2nn1/4p2p/3P3P/2P3P1/PP1NQPB1/R1B1K2R";

    /// A log whose header has `fields` (`key: value` lines), then the board.
    fn log(fields: &[(&str, &str)], placement: &str) -> crate::log::SensorLog {
        let mut text = String::from("# eboard-sensor-log 1\n");
        for (k, v) in fields {
            text.push_str(&format!("# {k}: {v}\n"));
        }
        text.push_str(&format!("0 board {placement}\n"));
        parse_log(&text, "h.esl").unwrap()
    }

    /// The settings and the start position the header states are the
    /// session's; the ones pinned stand over them.
    #[test]
    fn the_header_states_the_settings_and_the_start() {
        let stated = Settings::new(
            Config {
                release_ms: 900,
                ..Config::default()
            },
            None,
        );
        let log = log(&[(SETTINGS_KEY, &stated.to_json()), ("fen", FEN)], PLACEMENT);
        let made = Session::from_header(&log.header, "h.esl", &Start::default());
        assert!(made.passed_over.is_empty(), "{:?}", made.passed_over);
        assert_eq!(made.stated, Some(stated));
        assert_eq!(made.session.core().config().release_ms, 900);
        let mut s = made.session;
        s.step(&log.records[0], None).unwrap();
        assert_eq!(s.core().game().map(|g| g.start_fen.as_str()), Some(FEN));

        let pinned = crate::rules::Pinned {
            release_ms: Some(300),
            ..Default::default()
        };
        let start = Start {
            pinned,
            ..Start::default()
        };
        let made = Session::from_header(&log.header, "h.esl", &start);
        assert_eq!(made.session.core().config().release_ms, 300);
    }

    /// Fields that do not read are passed over, each named: the defaults and
    /// the standard start stand for them.
    #[test]
    fn fields_that_do_not_read_are_named_and_passed_over() {
        let standard = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";
        let log = log(
            &[(SETTINGS_KEY, "{\"profile\":\"bullet\"}"), ("fen", "not a fen")],
            standard,
        );
        let defaults = Settings::new(
            Config {
                release_ms: 700,
                ..Config::default()
            },
            None,
        );
        let start = Start {
            defaults,
            ..Start::default()
        };
        let made = Session::from_header(&log.header, "h.esl", &start);
        assert_eq!(made.stated, None);
        assert!(
            matches!(
                made.passed_over.as_slice(),
                [HeaderError::Settings(_), HeaderError::Fen(_)]
            ),
            "{:?}",
            made.passed_over
        );
        let said: Vec<String> = made.passed_over.iter().map(|e| e.to_string()).collect();
        assert!(
            said[0].starts_with(&format!("header field `{SETTINGS_KEY}`: ")),
            "{said:?}"
        );
        assert!(
            said[1].starts_with("header field `fen`: ") && said[1].contains("not a fen"),
            "{said:?}"
        );
        assert_eq!(made.session.core().config().release_ms, 700);
        let mut s = made.session;
        s.step(&log.records[0], None).unwrap();
        assert_eq!(
            s.core().game().map(|g| g.start_fen.clone()),
            Some(format!("{standard} w KQkq - 0 1"))
        );
    }
}
