use super::view::fold;
use super::*;
use crate::api::Snapshot;
use crate::output::replay;
use crate::rules::Event;
use crate::rules::{IrregularKind, Side};

/// The demo's log through the rules core (as `replay` runs it): the game's moves,
/// one take-back, one illegal move resolved, nothing else irregular.
#[test]
fn the_demo_log_is_the_game_with_a_take_back_and_a_corrected_illegal_move() {
    let log = demo_log();
    let r = replay::run(&log, "demo", crate::rules::Config::default(), None).unwrap();
    let game = r.core.game().expect("a game");
    let sans: Vec<&str> = game.moves.iter().map(|m| m.san.as_str()).collect();
    assert_eq!(sans, GAME.split_whitespace().collect::<Vec<_>>());
    assert_eq!(
        game.result.map(|(r, t)| (r.to_string(), t.to_string())),
        Some(("1-0".into(), "checkmate".into()))
    );
    let kinds: Vec<&EventKind> = r
        .events
        .iter()
        .map(|e| &e.kind)
        .filter(|k| {
            !matches!(
                k,
                EventKind::Touch { .. }
                    | EventKind::Clock { .. }
                    | EventKind::Move { .. }
                    | EventKind::MoveCompleted { .. }
                    | EventKind::GameStart { .. }
                    | EventKind::GameEnd { .. }
            )
        })
        .collect();
    let [
        EventKind::Takeback { to_ply: 4, .. },
        EventKind::Irregular {
            kind: IrregularKind::IllegalMove,
            side: Side::White,
            squares,
            completed: false,
            ..
        },
        EventKind::Resolved { .. },
    ] = kinds.as_slice()
    else {
        panic!("expected a take-back, then an illegal move and its resolution: {kinds:#?}");
    };
    assert!(
        squares.contains(&shakmaty::Square::D1) && squares.contains(&shakmaty::Square::D4),
        "{squares:?}"
    );
    // And a slide: a piece put down on a square and lifted from it again on its
    // way, other than where it was lifted from.
    let mut slides = 0;
    let mut lifted_from = None;
    for w in log.records.windows(2) {
        if let RecordKind::Lift { square, .. } = &w[0].kind {
            lifted_from = Some(*square);
        }
        if let (RecordKind::Place { square: a, .. }, RecordKind::Lift { square: b, .. }) =
            (&w[0].kind, &w[1].kind)
        {
            if a == b && lifted_from != Some(*a) {
                slides += 1;
            }
        }
    }
    // One of these is the illegal queen move, put down on d4 and lifted again.
    assert!(slides >= 2, "no slide in the demo ({slides})");
}

#[test]
fn the_view_shows_board_clocks_moves_and_flags() {
    let mut view = View {
        title: "title".into(),
        bus: "bus line".into(),
        ..View::default()
    };
    let at = |t: f64, kind: EventKind| Event {
        t_us: (t * 1e6) as u64,
        kind,
    };
    let clock = at(
        1.0,
        EventKind::Clock {
            white_ms: 298_000,
            black_ms: 300_000,
            running: Some(Side::Black),
        },
    );
    assert_eq!(view.event(&clock), None, "clock readings are no lines");
    view.event(&at(
        2.0,
        EventKind::MoveCompleted {
            ply: 1,
            side: Side::White,
        },
    ));
    view.event(&at(
        3.0,
        EventKind::Takeback {
            to_ply: 0,
            fen: "start".into(),
        },
    ));
    let snap = Snapshot {
        connected: true,
        serial_number: "18510".into(),
        status: "playing".into(),
        fen: "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1".into(),
        moves: vec!["e4".into(), "e5".into(), "Nf3".into()],
        last_move: "e2e4".into(),
        white_clock_ms: 298_000,
        black_clock_ms: 300_000,
        clock_running: "black".into(),
        ..Snapshot::default()
    };
    let f = view.frame(&snap, None);
    let lines: Vec<&str> = f.lines().collect();
    assert_eq!(&lines[..2], ["title", "bus line"]);
    assert!(lines.contains(&"  8 r n b q k b n r     White    0:04:58"), "{f}");
    assert!(
        lines.contains(&"  7 p p p p p p p p     Black    0:05:00  <- running"),
        "{f}"
    );
    assert!(
        lines.contains(&"  3 . . . . . . . .     last move    e2e4"),
        "{f}"
    );
    assert!(lines.contains(&"  1. e4 e5 2. Nf3"), "{f}");
    assert!(lines.contains(&"  3.000  take-back to ply 0: start"), "{f}");
    assert!(
        lines.contains(&"    2.000  white completes ply 1 (clock: white 0:04:58, black 0:05:00)"),
        "{f}"
    );

    // A small terminal: nothing wraps or scrolls; the newest event stays.
    let small = view.frame(&snap, Some((40, 22)));
    let lines: Vec<&str> = small.lines().collect();
    assert!(lines.len() < 22, "{} lines:\n{small}", lines.len());
    assert!(lines.iter().all(|l| l.chars().count() <= 40), "{small}");
    assert_eq!(
        lines.last(),
        Some(&"    3.000  take-back to ply 0: start"),
        "{small}"
    );
    assert!(
        lines.contains(&"  8 r n b q k b n r     White    0:04:58"),
        "{small}"
    );
}

/// A narrow terminal wraps the header (its advice is read whole), never cuts it.
#[test]
fn a_narrow_terminal_wraps_the_header_lines() {
    let advice = "D-Bus: not published, no session bus to publish on (session bus at \
                  unix:path=/run/user/1000/a-very-long-socket-name-that-fills-a-line: connection \
                  refused); the game is shown here only";
    let view = View {
        title: "eboard-bridge demo: Anderssen - Kieseritzky, London 1851, on a virtual DGT board".into(),
        bus: format!("{advice}\nHTTP: no live page (address in use); try --http 127.0.0.1:PORT"),
        ..View::default()
    };
    let f = view.frame(&Snapshot::default(), Some((32, 60)));
    let lines: Vec<&str> = f.lines().collect();
    assert!(lines.iter().all(|l| l.chars().count() <= 32), "{f}");
    // Every character of the header is there, in order (spaces aside).
    let shown: String = f.chars().filter(|c| !c.is_whitespace()).collect();
    for text in [
        &view.title,
        advice,
        "HTTP: no live page (address in use); try --http 127.0.0.1:PORT",
    ] {
        let want: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        assert!(shown.contains(&want), "`{text}` is not whole in:\n{f}");
    }
    assert!(lines[1].starts_with("  "), "continuation lines are indented: {f}");
    assert_eq!(fold("short", Some(32)), ["short"]);
    assert_eq!(fold("a b", None), ["a b"]);
    assert_eq!(fold("abcdefghij", Some(6)), ["abcdef", "  ghij"]);
}

/// The demo's line when nothing is published gives no `run` option (`--bus`),
/// which the demo does not take.
#[test]
fn not_published_says_why_without_run_options() {
    let errors = [
        DaemonError::Bus {
            bus: "session bus at unix:path=/nowhere".into(),
            source: zbus::Error::Failure("connection refused".into()),
        },
        DaemonError::Name(zbus::Error::NameTaken),
        DaemonError::NameDenied {
            bus: "session bus at unix:path=/x".into(),
            uid: 1000,
            source: zbus::Error::Failure("AccessDenied".into()),
        },
    ];
    for e in &errors {
        let line = not_published(e);
        assert!(line.starts_with("D-Bus: not published, "), "{line}");
        assert!(!line.contains("--bus"), "{line}");
    }
    assert!(not_published(&errors[0]).contains("no session bus to publish on"));
    assert!(!not_published(&errors[0]).contains("connection refused"));
    assert!(not_published(&errors[1]).contains("is taken"));
    assert!(not_published(&errors[2]).contains("policy"));
}

/// A completed move's line gives the times of the report of its press (its
/// `%clk`), not those of the report before (issue 59: the live line said 0:05:00
/// where the PGN said 0:04:58).
#[test]
fn a_completed_move_shows_the_clock_of_its_press() {
    let mut view = View::default();
    let at = |t: f64, kind: EventKind| Event {
        t_us: (t * 1e6) as u64,
        kind,
    };
    let clock = |t: f64, white_s: u64, running: Side| {
        at(
            t,
            EventKind::Clock {
                white_ms: white_s * 1000,
                black_ms: 300_000,
                running: Some(running),
            },
        )
    };
    assert_eq!(view.event(&clock(1.0, 300, Side::White)), None);
    let completed = at(
        2.0,
        EventKind::MoveCompleted {
            ply: 1,
            side: Side::White,
        },
    );
    assert_eq!(view.event(&completed), None, "held for the press's report");
    assert_eq!(
        view.event(&clock(2.0, 298, Side::Black)).as_deref(),
        Some("    2.000  white completes ply 1 (clock: white 0:04:58, black 0:05:00)")
    );
    // No report after the press: the line comes with the next event, or at the end.
    view.event(&completed);
    let takeback = at(
        3.0,
        EventKind::Takeback {
            to_ply: 0,
            fen: "start".into(),
        },
    );
    assert_eq!(
        view.event(&takeback).as_deref(),
        Some(
            "    2.000  white completes ply 1 (clock: white 0:04:58, black 0:05:00)\n    3.000  take-back to ply 0: start"
        )
    );
    view.event(&completed);
    assert_eq!(
        view.flush().as_deref(),
        Some("    2.000  white completes ply 1 (clock: white 0:04:58, black 0:05:00)")
    );
    assert_eq!(view.flush(), None);
}

/// The demo's `replay it:` command names this program as a shell there runs it
/// (issue 59: `eboard-bridge` was not on a newcomer's `PATH` after `cargo run`).
#[test]
fn the_replay_command_names_this_program_as_the_shell_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let bin = root.join("bin");
    let other = root.join("other");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let exe = bin.join("eboard-bridge");
    std::fs::write(&exe, "this").unwrap();
    let path = |dirs: &[&Path]| std::env::join_paths(dirs).unwrap();
    let elsewhere = &other;
    // On the PATH: its name.
    assert_eq!(
        program_name(&exe, Some(&path(&[&other, &bin])), Some(elsewhere)),
        "eboard-bridge"
    );
    // Another program of that name first on the PATH, or none: its path, from
    // the working directory when it is under it.
    std::fs::write(other.join("eboard-bridge"), "another").unwrap();
    let full = exe.display().to_string();
    assert_eq!(
        program_name(&exe, Some(&path(&[&other, &bin])), Some(elsewhere)),
        full
    );
    assert_eq!(program_name(&exe, None, Some(elsewhere)), full);
    assert_eq!(program_name(&exe, None, None), full);
    assert_eq!(program_name(&exe, None, Some(Path::new("/"))), full);
    assert_eq!(program_name(&exe, None, Some(&root)), "./bin/eboard-bridge");
    // Words a shell would split or expand are quoted.
    assert_eq!(shell_word("/tmp/a b/it's.esl"), "'/tmp/a b/it'\\''s.esl'");
    assert_eq!(shell_word("/tmp/demo-1/dgt_demo.esl"), "/tmp/demo-1/dgt_demo.esl");
}
