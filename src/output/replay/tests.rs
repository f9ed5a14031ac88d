use std::path::Path;

use shakmaty::Position;

use super::print::seconds_3;
use super::*;
use crate::board::Orientation;
use crate::log::{Record, RecordKind};
use crate::protocol::ClockTime;
use crate::rules::{GameResult, SETTINGS_KEY, Termination};
use crate::sim::{Hands, Seeded, Style};

/// An event's time in microseconds is written as the float format writes
/// the seconds (`{t:>9.3}`), which the text output always had.
#[test]
fn times_are_written_as_the_float_format_writes_them() {
    let check = |us: u64| {
        let mut s = String::new();
        seconds_3(&mut s, us);
        let t = us as f64 / 1e6;
        assert_eq!(s, format!("{t:>9.3}"), "{us} µs");
    };
    // Every microsecond of the first 3 s (ties at .xxx500 among them), then
    // a spread up to the largest times and beyond.
    for us in 0..3_000_000u64 {
        check(us);
    }
    let mut pick = Seeded::new(5);
    for _ in 0..200_000 {
        check(pick.range(0, 1 << 40));
    }
    for us in [
        123_456_789_000_500,
        999_999_999_500,
        999_999_999_999,
        10u64.pow(12),
        3 * 10u64.pow(15),
        u64::MAX,
    ] {
        check(us);
    }
}

/// Seeded random games played by the simulated hands: enough records for
/// many batches of steps and many chunks of output.
fn games(n: usize) -> Vec<Record> {
    let mut pick = Seeded::new(7);
    let mut hands = Hands::new(3, Style::default(), Orientation::Normal);
    for _ in 0..n {
        let mut pos = Chess::default();
        hands.board(pos.board());
        hands.set_clock(ClockTime::from_hms(0, 15, 0).expect("a valid time"));
        hands.random_game(&mut pos, &mut pick, 80);
        hands.wait(5000);
    }
    hands.records
}

fn write(dir: &Path, name: &str, header: &Header, records: &[Record]) -> std::path::PathBuf {
    let path = dir.join(name);
    let text = crate::log::to_string(header, records).expect("a log in memory");
    std::fs::write(&path, text).expect("the log written");
    path
}

/// What `replay` printed before it was split over two threads: the log
/// read whole, run through [`run`], formatted whole.
fn one_thread(path: &Path, file: &str, print: Print) -> Vec<u8> {
    let log = crate::log::read_log(path).expect("the log reads");
    let r = run(&log, file, Config::default(), None).expect("the log plays");
    let text = match print {
        Print::Text => text(&r.events),
        Print::Jsonl => jsonl(&r.events),
        Print::Uci => uci(r.core.games()),
        Print::Pgn => pgn(r.core.games(), &pgn_date(&log.header)),
    };
    text.into_bytes()
}

/// A log judged by the settings it states: the header's, then a
/// `# settings:` line's from there on, the same on every path (`run`, two
/// threads, the pool's one); an option given stands over them.
#[test]
fn a_log_is_judged_by_the_settings_it_states_unless_options_are_given() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let records = games(2);
    let half = records.len() / 2;
    let quick = Settings {
        release_ms: 40,
        flicker_ms: 20,
        ..Settings::default()
    };
    let slow = Settings {
        release_ms: 900,
        irregular_ms: 4000,
        ..Settings::default()
    };
    let mut stated = Header::default();
    stated.set(SETTINGS_KEY, &quick.to_json());
    let mut both = records[..half].to_vec();
    both.push(Record {
        time: records[half - 1].time,
        kind: RecordKind::Settings(slow.to_json()),
    });
    both.extend_from_slice(&records[half..]);
    let plain = write(dir.path(), "plain.esl", &Header::default(), &records);
    let quick_log = write(dir.path(), "quick.esl", &stated, &records);
    let changed = write(dir.path(), "changed.esl", &stated, &both);
    let jsonl_of = |path: &Path, pinned: Pinned| {
        let chunks = replay_file(path, "x.esl", pinned, None, Print::Jsonl).expect("it replays");
        let mut pooled = Vec::new();
        replay_one(path, "x.esl", pinned, None, Print::Jsonl, &mut pooled).expect("it replays");
        assert_eq!(chunks.concat(), pooled);
        pooled
    };
    let none = Pinned::default();
    for path in [&plain, &quick_log, &changed] {
        assert_eq!(jsonl_of(path, none), one_thread(path, "x.esl", Print::Jsonl));
    }
    let (plain_out, quick_out, changed_out) = (
        jsonl_of(&plain, none),
        jsonl_of(&quick_log, none),
        jsonl_of(&changed, none),
    );
    assert_ne!(plain_out, quick_out);
    assert_ne!(quick_out, changed_out);
    // Options given stand for the whole log, whatever it states.
    let pinned = Pinned {
        release_ms: Some(40),
        flicker_ms: Some(20),
        irregular_ms: Some(2000),
        ..Pinned::default()
    };
    assert_eq!(jsonl_of(&plain, pinned), quick_out);
    assert_eq!(jsonl_of(&changed, pinned), quick_out);
    // A header the rules core cannot take is the log's problem.
    let mut wrong = Header::default();
    wrong.set(SETTINGS_KEY, "{\"profile\":\"bullet\"}");
    let path = write(dir.path(), "wrong.esl", &wrong, &records);
    let e = replay_file(&path, "wrong.esl", none, None, Print::Jsonl).unwrap_err();
    assert!(e.starts_with("wrong.esl: header field `settings`: "), "{e}");
}

#[test]
fn two_threads_print_what_one_thread_prints() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut header = Header::default();
    header.set("started", "2026-11-23T10:00:00Z");
    let records = games(12);
    let path = write(dir.path(), "games.esl", &header, &records);
    for print in [Print::Text, Print::Jsonl, Print::Uci, Print::Pgn] {
        let chunks = replay_file(&path, "games.esl", Pinned::default(), None, print).expect("it replays");
        if print == Print::Jsonl {
            assert!(chunks.len() > 1, "jsonl in {} chunk(s)", chunks.len());
        }
        let printed = chunks.concat();
        let expected = one_thread(&path, "games.esl", print);
        assert!(printed.len() > 1000, "{print:?}: {} bytes", printed.len());
        assert!(
            printed == expected,
            "{print:?} differs from the one-thread replay"
        );
    }
    let pgn = String::from_utf8(one_thread(&path, "games.esl", Print::Pgn)).expect("UTF-8");
    assert_eq!(pgn.matches("[Date \"2026.11.23\"]").count(), 12);
    assert!(records.len() > 4 * BATCH, "{} records", records.len());
}

#[test]
fn a_log_with_a_problem_prints_nothing_and_names_the_first_problem() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let records = games(6);
    let n = records.len();
    let last = records[n - 1].time;
    // Late in the log, so the rules core has printed much already: a record
    // whose time goes back, then (later still) one that is not a record.
    let path = write(dir.path(), "back.esl", &Header::default(), &records);
    let mut text = std::fs::read_to_string(&path).expect("the log");
    text.push_str("0 note back in time\n99999 dance e4\n");
    std::fs::write(&path, &text).expect("written again");
    let line = text.lines().count() - 1;
    let e = replay_file(&path, "back.esl", Pinned::default(), None, Print::Jsonl).unwrap_err();
    assert_eq!(e, format!("back.esl:{line}: time goes back: 0.000 after {last}"));

    // A lift the board cannot make (the last record): found by the player,
    // not the parser.
    let mut bad = records.clone();
    bad.push(Record {
        time: last,
        kind: RecordKind::Lift {
            square: shakmaty::Square::E4,
            piece: Some(shakmaty::Piece::from_char('q').expect("a piece")),
        },
    });
    let path = write(dir.path(), "lift.esl", &Header::default(), &bad);
    let e = replay_file(&path, "lift.esl", Pinned::default(), None, Print::Text).unwrap_err();
    assert!(e.starts_with("lift.esl:"), "{e}");
    let line = std::fs::read_to_string(&path).expect("the log").lines().count();
    assert!(e.starts_with(&format!("lift.esl:{line}: lift e4")), "{e}");
    assert!(e.contains(", but the board has"), "{e}");

    // A start position the header gets wrong: the rules core's side stops.
    let mut header = Header::default();
    header.set("fen", "not a position");
    let path = write(dir.path(), "fen.esl", &header, &records);
    let e = replay_file(&path, "fen.esl", Pinned::default(), None, Print::Pgn).unwrap_err();
    assert!(e.starts_with("fen.esl: header field `fen`: "), "{e}");

    let e = replay_file(
        &dir.path().join("absent.esl"),
        "absent.esl",
        Pinned::default(),
        None,
        Print::Uci,
    )
    .unwrap_err();
    assert!(e.starts_with("absent.esl: cannot read: No such file"), "{e}");
}

/// Each thing `game_pgn` shows, changed alone, changes the PGN and the
/// digest; a copy of the same game has the same digest.
#[test]
fn the_pgn_digest_changes_with_everything_the_pgn_shows() {
    let mut g = Game::new(1, Chess::default(), CastlingMode::Standard, Orientation::Normal);
    for uci in ["e2e4", "e7e5", "g1f3"] {
        let mv = uci
            .parse::<shakmaty::uci::UciMove>()
            .expect("a UCI move")
            .to_move(g.current())
            .expect("a legal move");
        g.push(mv);
    }
    let tags = Tags::unknown("2026.11.25");
    let base = (game_pgn(&g, &tags), game_pgn_digest(&g, &tags));
    assert_eq!(game_pgn_digest(&g.clone(), &tags.clone()), base.1);
    type Change = fn(&mut Game, &mut Tags);
    let changes: [(&str, Change); 13] = [
        ("event", |_, t| t.event = "Open".into()),
        ("site", |_, t| t.site = "Hall".into()),
        ("date", |_, t| t.date = "2026.11.26".into()),
        ("round", |_, t| t.round = "2".into()),
        ("white", |_, t| t.white = "A".into()),
        ("black", |_, t| t.black = "B".into()),
        ("result", |g, _| {
            g.result = Some((GameResult::WhiteWins, Termination::Checkmate))
        }),
        ("time control", |g, _| g.time_control = Some("5400+30".into())),
        ("clocks", |g, _| g.clocks = Some((60_000, 61_000))),
        ("san", |g, _| g.moves[1].san = "e6".into()),
        ("inferred", |g, _| g.moves[2].inferred = true),
        ("clk", |g, _| g.moves[0].clk_ms = Some(5_400_000)),
        ("emt", |g, _| {
            g.moves[0].clk_ms = Some(5_400_000);
            g.moves[0].emt_ms = Some(1_000)
        }),
    ];
    for (what, change) in changes {
        let (mut g2, mut t2) = (g.clone(), tags.clone());
        change(&mut g2, &mut t2);
        assert_ne!(game_pgn(&g2, &t2), base.0, "{what}: the PGN is the same");
        assert_ne!(
            game_pgn_digest(&g2, &t2),
            base.1,
            "{what}: the digest is the same"
        );
    }
    // A move more, and a move taken back.
    let mut longer = g.clone();
    let mv = "b8c6"
        .parse::<shakmaty::uci::UciMove>()
        .expect("a UCI move")
        .to_move(longer.current())
        .expect("a legal move");
    longer.push(mv);
    assert_ne!(game_pgn_digest(&longer, &tags), base.1);
    let mut shorter = g.clone();
    shorter.truncate(2);
    assert_ne!(game_pgn(&shorter, &tags), base.0);
    assert_ne!(game_pgn_digest(&shorter, &tags), base.1);
}
