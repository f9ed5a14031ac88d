//! The rules core end to end: real captures, and every real game of
//! `tests/data/games` played into sensor events the way hands play them.

use crate::common;

use std::process::Command;

use common::{data, pgn_games, uci_moves};
use eboard_bridge::board::Orientation;
use eboard_bridge::log::{Header, SensorLog};
use eboard_bridge::output::replay;
use eboard_bridge::rules::{Config, EventKind};
use eboard_bridge::sim::{Hands, Style};
use shakmaty::{Chess, Move, Position, Role, Square};

#[test]
fn captures_replay_to_exactly_their_moves() {
    for name in ["1", "2"] {
        let out = common::output_within(
            Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
                .args(["replay", "--format", "uci"])
                .arg(data(&format!("captures/{name}.esl"))),
            60,
            "eboard-bridge replay",
        );
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# game 1");
        let moves: Vec<String> = lines[1..].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            moves,
            uci_moves(&format!("captures/{name}.uci")),
            "capture {name}"
        );
    }
}

/// The events of the real captures are in order: times never go back, and every
/// `resolved` follows an `irregular` (capture 1 has a piece in the air for over 2 s
/// at 245 s, which once gave a `resolved` with nothing before it).
#[test]
fn capture_events_are_in_time_order_and_resolved_follows_irregular() {
    for name in ["1", "2"] {
        let path = data(&format!("captures/{name}.esl"));
        let log = eboard_bridge::log::read_log(&path).unwrap();
        let r = replay::run(&log, name, Config::default(), None).unwrap();
        let mut last = 0;
        let mut open = false;
        for e in &r.events {
            assert!(e.t_us >= last, "capture {name}: {e:?} after {last}");
            last = e.t_us;
            match e.kind {
                EventKind::Irregular { .. } => open = true,
                EventKind::Resolved { .. } => {
                    assert!(
                        open,
                        "capture {name}: resolved at {} with no irregular before",
                        e.seconds()
                    );
                    open = false;
                }
                _ => {}
            }
        }
    }
}

/// A fault the hands made on purpose, and what the rules core must report for it.
#[derive(Debug, Clone, PartialEq)]
struct Injected {
    kind: &'static str,
    side: &'static str,
    squares: Vec<Square>,
}

/// A fault for the move `mv` from `pos` (the game's earlier positions in `seen`),
/// chosen so that the Laws predict exactly one irregularity and no touch-move flag:
/// a piece no legal move lifts, knocked off and put back; or the moving piece first
/// set on a square it cannot go to, then taken back.
fn inject(hands: &mut Hands, pos: &Chess, mv: &Move, seen: &[Chess]) -> Option<Injected> {
    let legal = pos.legal_moves();
    let side = if pos.turn().is_white() { "white" } else { "black" };
    let lifted_by_a_move = |sq: Square| {
        legal.iter().any(|m| match *m {
            Move::Castle { king, rook } => king == sq || rook == sq,
            Move::EnPassant { from, to } => from == sq || Square::from_coords(to.file(), from.rank()) == sq,
            _ => m.from() == Some(sq) || (m.is_capture() && m.to() == sq),
        })
    };
    if hands.rng.chance(50) {
        let candidates: Vec<Square> = pos
            .board()
            .occupied()
            .into_iter()
            .filter(|sq| pos.board().role_at(*sq) != Some(Role::King) && !lifted_by_a_move(*sq))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let sq = candidates[hands.rng.range(0, candidates.len() as u64 - 1) as usize];
        let piece = pos.board().piece_at(sq)?;
        hands.wait(500);
        hands.knock(sq, piece, 2600);
        return Some(Injected {
            kind: "displaced",
            side,
            squares: vec![sq],
        });
    }
    let Move::Normal {
        role,
        from,
        promotion: None,
        ..
    } = *mv
    else {
        return None;
    };
    if role == Role::King {
        return None;
    }
    let piece = pos.board().piece_at(from)?;
    let candidates: Vec<Square> = (!pos.board().occupied())
        .into_iter()
        .filter(|to| {
            let mut board = pos.board().clone();
            board.discard_piece_at(from);
            board.set_piece_at(*to, piece);
            !legal.iter().any(|m| m.from() == Some(from) && m.to() == *to)
                && !seen.iter().any(|p| p.board() == &board)
                && !(role == Role::Pawn
                    && (to.rank() == shakmaty::Rank::First || to.rank() == shakmaty::Rank::Eighth))
        })
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let to = candidates[hands.rng.range(0, candidates.len() as u64 - 1) as usize];
    hands.wait(500);
    hands.illegal_attempt(from, to, piece, 2600);
    Some(Injected {
        kind: "illegal_move",
        side,
        squares: vec![from, to],
    })
}

/// Plays a game as hands would and replays it; returns the events. With `faults`
/// (percent of plies), the hands also make the faults of `inject`, returned too.
fn hands_replay(
    game: &common::PgnGame,
    seed: u64,
    style: Style,
    orientation: Orientation,
) -> Vec<eboard_bridge::rules::Event> {
    hands_replay_faults(game, seed, style, orientation, 0).0
}

fn hands_replay_faults(
    game: &common::PgnGame,
    seed: u64,
    style: Style,
    orientation: Orientation,
    faults: u64,
) -> (Vec<eboard_bridge::rules::Event>, Vec<Injected>) {
    let mut hands = Hands::new(seed, style, orientation);
    hands.board(game.start.board());
    hands.set_clock(eboard_bridge::protocol::ClockTime::from_hms(1, 30, 0).unwrap());
    let mut pos = game.start.clone();
    let mut seen = vec![pos.clone()];
    let mut injected = Vec::new();
    for mv in &game.moves {
        if faults > 0 && hands.rng.chance(faults) {
            injected.extend(inject(&mut hands, &pos, mv, &seen));
        }
        hands.play(&pos, mv);
        pos.play_unchecked(*mv);
        seen.push(pos.clone());
    }
    let log = SensorLog {
        header: Header::default(),
        records: hands.records,
        lines: Vec::new(),
    };
    let start = (game.start != shakmaty::Chess::default() && game.mode == shakmaty::CastlingMode::Standard)
        .then(|| (game.start.clone(), game.mode));
    let r = replay::run(&log, "generated", Config::default(), start).expect("generated logs play");
    let played: Vec<String> = r
        .core
        .games()
        .last()
        .map(|g| g.moves.iter().map(|m| m.uci.clone()).collect())
        .unwrap_or_default();
    let expected: Vec<String> = game
        .moves
        .iter()
        .map(|m| shakmaty::uci::UciMove::from_move(*m, game.mode).to_string())
        .collect();
    assert_eq!(
        played,
        expected,
        "seed {seed}, {:?} vs {:?}",
        game.tag("White"),
        game.tag("Black")
    );
    (r.events, injected)
}

#[test]
fn every_real_game_played_by_hands_replays_exactly() {
    let files = [
        "games/anastasian-lewis.pgn",
        "games/immortal-games.pgn",
        "games/kasparov-deep-blue-1997.pgn",
        "games/molinari-bordais-1979.pgn",
        "games/nepomniachtchi-liren-game1.pgn",
        "games/stockfish-learning.pgn",
        "games/cutechess-fischerrandom.pgn",
    ];
    let mut played = 0;
    let mut total_moves = 0;
    for file in files {
        for (i, game) in pgn_games(file).iter().enumerate() {
            if game.moves.is_empty() {
                continue;
            }
            for (seed, orientation) in [(1, Orientation::Normal), (2, Orientation::Rotated)] {
                let events = hands_replay(game, seed * 1000 + i as u64, Style::default(), orientation);
                for e in &events {
                    assert!(
                        !matches!(
                            e.kind,
                            EventKind::Irregular { .. }
                                | EventKind::TouchMove { .. }
                                | EventKind::Takeback { .. }
                        ),
                        "{file} game {i} seed {seed}: nothing was injected, yet {e:?}"
                    );
                }
                assert!(events.iter().any(
                    |e| matches!(&e.kind, EventKind::GameStart { orientation: o, .. } if *o == orientation)
                ));
            }
            // All timestamps equal: the same moves.
            let zero = Style {
                zero_time: true,
                ..Style::default()
            };
            hands_replay(game, 7 + i as u64, zero, Orientation::Normal);
            played += 1;
            total_moves += game.moves.len();
        }
    }
    eprintln!("generated suite: {played} games, {total_moves} moves, each replayed three ways");
    assert!(played >= 40, "only {played} games played");
}

#[test]
fn injected_faults_are_reported_with_their_kind() {
    let files = [
        "games/immortal-games.pgn",
        "games/kasparov-deep-blue-1997.pgn",
        "games/nepomniachtchi-liren-game1.pgn",
        "games/cutechess-fischerrandom.pgn",
    ];
    let mut count = [0, 0];
    for file in files {
        for (i, game) in pgn_games(file).iter().enumerate() {
            if game.moves.is_empty() {
                continue;
            }
            let (events, injected) =
                hands_replay_faults(game, 500 + i as u64, Style::default(), Orientation::Normal, 8);
            let reported: Vec<Injected> = events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::Irregular {
                        kind,
                        side,
                        squares,
                        completed: false,
                        ..
                    } => Some(Injected {
                        kind: kind.name(),
                        side: side.name(),
                        squares: squares.clone(),
                    }),
                    _ => None,
                })
                .collect();
            assert_eq!(reported, injected, "{file} game {i}");
            let resolved = events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::Resolved { .. }))
                .count();
            assert_eq!(
                resolved,
                injected.len(),
                "{file} game {i}: every fault put right is resolved"
            );
            for e in &events {
                assert!(
                    !matches!(e.kind, EventKind::TouchMove { .. } | EventKind::Takeback { .. }),
                    "{file} game {i}: {e:?}"
                );
            }
            for f in &injected {
                count[usize::from(f.kind == "illegal_move")] += 1;
            }
        }
    }
    eprintln!(
        "injected: {} knocked pieces, {} illegal moves",
        count[0], count[1]
    );
    assert!(
        count[0] >= 20 && count[1] >= 20,
        "too few faults injected: {count:?}"
    );
}

/// `replay` of many logs at once (a pool of threads, each a whole file) prints,
/// in every format, exactly what replaying them one at a time prints, in the
/// order given; a malformed log among them stops the replay there, after the
/// logs before it were printed.
#[test]
fn many_logs_at_once_print_what_each_prints_alone() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios");
    let mut logs: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .expect("the scenarios")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "esl"))
        .collect();
    logs.sort();
    // Reversed: the pool's order is not the folder's.
    logs.reverse();
    assert!(logs.len() >= 60, "{} scenario logs", logs.len());
    let bin = env!("CARGO_BIN_EXE_eboard-bridge");
    for format in ["uci", "pgn", "text", "jsonl"] {
        let mut expected = Vec::new();
        for log in &logs {
            let out = Command::new(bin)
                .args(["replay", "--format", format])
                .arg(log)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}: {:?}", log.display(), out);
            if format != "jsonl" {
                expected.extend(format!("# log {}\n", log.display()).into_bytes());
            }
            expected.extend(out.stdout);
        }
        let out = Command::new(bin)
            .args(["replay", "--format", format])
            .args(&logs)
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}: {out:?}");
        assert!(
            out.stdout == expected,
            "--format {format}: many logs at once differ from one at a time"
        );
    }
    // A malformed log third: the first two printed, then its problem, status 2.
    let tmp = tempfile::tempdir().unwrap();
    let bad = common::write_file(
        tmp.path(),
        "bad.esl",
        "# eboard-sensor-log 1\n0.000 board 8/8/8/8/8/8/8/8\n0.500 fly e2\n",
    );
    let mut some = logs[..2].to_vec();
    some.push(bad.clone());
    some.extend(logs[2..6].iter().cloned());
    let out = Command::new(bin)
        .args(["replay", "--format", "uci"])
        .args(&some)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let printed: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# log ")).collect();
    let first_two: Vec<String> = logs[..2].iter().map(|p| p.display().to_string()).collect();
    assert_eq!(printed, first_two);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains(&format!("{}:3:", bad.display())), "{err}");
}

/// `replay --format uci|pgn` runs the rules core with its events off (and, for
/// `uci`, its moves' SAN): on every scenario, the upgrade fixture and both
/// captures, and on games played by the hands, the games are exactly those of
/// a core with everything on (moves, completions, clocks, results), and the
/// printed output is what the games of that core print.
#[test]
fn a_core_without_events_or_san_records_the_same_games() {
    use eboard_bridge::log::Player;
    use eboard_bridge::session::{Session, Start};
    let mut logs: Vec<std::path::PathBuf> = Vec::new();
    for dir in [
        "tests/fixtures/scenarios",
        "tests/fixtures/upgrade",
        "tests/data/captures",
    ] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        logs.extend(
            std::fs::read_dir(&dir)
                .expect("a folder of logs")
                .map(|e| e.expect("an entry").path())
                .filter(|p| p.extension().is_some_and(|x| x == "esl")),
        );
    }
    logs.sort();
    assert!(logs.len() >= 80, "{} logs", logs.len());
    let tmp = tempfile::tempdir().unwrap();
    for (i, game) in pgn_games("games/immortal-games.pgn").iter().take(6).enumerate() {
        let mut hands = Hands::new(i as u64 + 40, Style::default(), Orientation::Normal);
        let mut pos = game.start.clone();
        hands.board(pos.board());
        for mv in &game.moves {
            hands.play(&pos, mv);
            pos.play_unchecked(*mv);
        }
        let path = tmp.path().join(format!("hands-{i}.esl"));
        let text = eboard_bridge::log::to_string(&Header::default(), &hands.records).unwrap();
        std::fs::write(&path, text).unwrap();
        logs.push(path);
    }
    let mut moves = 0;
    for path in &logs {
        let name = path.display().to_string();
        let log = eboard_bridge::log::read_log(path).expect("the log reads");
        let steps = Player::play_log(&log, &name).expect("the log plays");
        // The session as `replay` makes it from the header (its `fen`, if
        // any), keeping events and SAN or not.
        let judge = |events: bool| {
            let start = Start {
                events,
                san: events,
                ..Start::default()
            };
            Session::from_header(&log.header, &name, &start)
                .session
                .into_parts()
                .1
        };
        let (mut full, mut lean) = (judge(true), judge(false));
        for judge in [&mut full, &mut lean] {
            for step in &steps {
                judge.step(step);
            }
            judge.finish_with([]);
        }
        assert!(lean.take_events().is_empty(), "{name}: events kept");
        let (a, b): (Vec<_>, Vec<_>) = (full.core().games().collect(), lean.core().games().collect());
        assert_eq!(a.len(), b.len(), "{name}: games");
        for (g, h) in a.iter().zip(&b) {
            assert_eq!(g.result, h.result, "{name}: result");
            assert_eq!(g.start_fen, h.start_fen, "{name}");
            assert_eq!(g.clocks, h.clocks, "{name}: clocks");
            assert_eq!(g.time_control, h.time_control, "{name}");
            assert_eq!(g.positions, h.positions, "{name}: positions");
            assert_eq!(g.moves.len(), h.moves.len(), "{name}: plies");
            for (m, n) in g.moves.iter().zip(&h.moves) {
                assert_eq!(
                    (m.mv, &m.uci, m.completed, m.clk_ms, m.emt_ms, m.inferred),
                    (n.mv, &n.uci, n.completed, n.clk_ms, n.emt_ms, n.inferred),
                    "{name}"
                );
                assert!(!m.san.is_empty() && n.san.is_empty(), "{name}: SAN");
                moves += 1;
            }
        }
        // What replay prints of the log: the full core's games.
        let printed = |format| {
            let mut printed = Vec::new();
            let pinned = eboard_bridge::rules::Pinned::default();
            replay::replay_one(path, &name, pinned, None, format, &mut printed).expect("the log replays");
            printed
        };
        assert!(
            printed(replay::Print::Uci) == replay::uci(full.core().games()).into_bytes(),
            "{name}: --format uci"
        );
        let date = log
            .header
            .get("started")
            .and_then(|s| s.get(..10))
            .map_or_else(|| "????.??.??".to_string(), |d| d.replace('-', "."));
        assert!(
            printed(replay::Print::Pgn) == replay::pgn(full.core().games(), &date).into_bytes(),
            "{name}: --format pgn"
        );
    }
    assert!(moves > 500, "{moves} moves compared");
}

/// The event campaign's seed 323, board 1's journal
/// (`tests/fixtures/campaign/seed323_drive_mate_press_after.esl`): in drive
/// mode, the press after a mate started the other side's clock on the
/// daemon's own clock, and an arbiter's time given and taken back after the
/// end set the game's tags from it: `WhiteClock` 14 s below the clock at the
/// mate. The tags are the clocks at the mate.
#[test]
fn seed_323_clock_tags_keep_the_mate_in_drive_mode() {
    let out = replay_campaign("seed323_drive_mate_press_after.esl", "pgn");
    let pgn = out;
    for tag in [
        "[Result \"0-1\"]",
        "[WhiteClock \"1:30:59\"]",
        "[BlackClock \"1:30:23\"]",
    ] {
        assert!(pgn.contains(tag), "{tag} missing from:\n{pgn}");
    }
}

/// The event campaign's seed 407, board 1's journal
/// (`tests/fixtures/campaign/seed407_drive_mate_no_bonus_after_end.esl`): in
/// drive mode the press after a mate gave the mover its bonus after the
/// game's end and set the clock with it. Every clock event from the first
/// game's end to the next game's start shows the clock at the mate.
#[test]
fn seed_407_no_bonus_after_the_mate() {
    let out = replay_campaign("seed407_drive_mate_no_bonus_after_end.esl", "jsonl");
    let events: Vec<serde_json::Value> = out.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let end = events
        .iter()
        .position(|e| e["type"] == "game_end")
        .expect("the mate ends game 1");
    let after: Vec<&serde_json::Value> = events[end..]
        .iter()
        .take_while(|e| e["type"] != "game_start")
        .filter(|e| e["type"] == "clock")
        .collect();
    assert!(!after.is_empty(), "the clock at the end");
    for e in &after {
        assert_eq!(
            (&e["white_ms"], &e["black_ms"]),
            (&after[0]["white_ms"], &after[0]["black_ms"]),
            "a clock after the end: {e}"
        );
    }
}

/// The clock tags say the clocks as the game left them, in every scenario that
/// ends a game with a clock (the class of seed 106 of the event campaign: the
/// press completing the mate started the other side's clock, and its
/// `BlackClock` took the time that clock ran after the end). The side that
/// did not make the last move keeps its time at the end to the second; the
/// side that made it, the time the report after its press shows (within 2 s
/// of the end's: it stopped its clock then).
#[test]
fn clock_tags_are_the_clocks_at_the_games_end_in_every_scenario() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "esl"))
        .collect();
    files.sort();
    let run = |format: &str, file: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .args(["replay", "--format", format])
            .arg(file)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let tag_ms = |pgn: &str, name: &str| -> Option<u64> {
        let head = format!("[{name} \"");
        let v = pgn
            .lines()
            .find_map(|l| l.strip_prefix(&head).and_then(|v| v.strip_suffix("\"]")))?;
        let p: Vec<u64> = v.split(':').filter_map(|x| x.parse().ok()).collect();
        (p.len() == 3).then(|| ((p[0] * 60 + p[1]) * 60 + p[2]) * 1000)
    };
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in &files {
        let events: Vec<serde_json::Value> = run("jsonl", file)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let ends: Vec<usize> = (0..events.len())
            .filter(|&i| events[i]["type"] == "game_end")
            .collect();
        let pgn = run("pgn", file);
        let [end] = ends.as_slice() else { continue };
        if pgn.matches("[Event ").count() != 1 {
            continue;
        }
        let at_end = events[..*end].iter().rev().find(|e| e["type"] == "clock");
        let mover = events[..*end].iter().rev().find(|e| e["type"] == "move");
        let (Some(clock), Some(mover), Some(w), Some(b)) = (
            at_end,
            mover,
            tag_ms(&pgn, "WhiteClock"),
            tag_ms(&pgn, "BlackClock"),
        ) else {
            continue;
        };
        checked += 1;
        let (cw, cb) = (
            clock["white_ms"].as_u64().unwrap_or(0) / 1000 * 1000,
            clock["black_ms"].as_u64().unwrap_or(0) / 1000 * 1000,
        );
        let white_moved = mover["side"] == "white";
        let (moved, moved_tag, other, other_tag) = if white_moved {
            (cw, w, cb, b)
        } else {
            (cb, b, cw, w)
        };
        if other_tag != other || moved_tag.abs_diff(moved) > 2000 {
            failures.push(format!(
                "{}: tags white {w} black {b} ms, the clocks at the end white {cw} black {cb} ms ({} moved last)",
                file.file_name().unwrap().to_string_lossy(),
                if white_moved { "white" } else { "black" }
            ));
        }
    }
    assert!(checked >= 4, "only {checked} scenarios end a game with a clock");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `replay --format FORMAT` of a journal the event campaign kept
/// (`tests/fixtures/campaign/NAME`): its output, the replay having succeeded.
fn replay_campaign(name: &str, format: &str) -> String {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/campaign")
        .join(name);
    let out = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
        .args(["replay", "--format", format])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The events of a kept campaign journal (`replay --format jsonl`).
fn campaign_events(name: &str) -> Vec<serde_json::Value> {
    replay_campaign(name, "jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The moves the journal's first game published that the game played
/// (`truth`) did not have at their ply, as "ply N SAN".
fn invented_in_first_game(events: &[serde_json::Value], truth: &[String]) -> Vec<String> {
    invented_in_game(events, 1, truth, false)
}

/// The events of game `game` (1, 2) of a kept campaign journal.
fn game_events(events: &[serde_json::Value], game: u64) -> &[serde_json::Value] {
    let from = events
        .iter()
        .position(|e| e["type"] == "game_start" && e["game"] == game)
        .unwrap_or(events.len());
    let to = events[from..]
        .iter()
        .position(|e| e["type"] == "game_start" && e["game"] == game + 1)
        .map_or(events.len(), |k| from + k);
    &events[from..to]
}

/// The moves game `game` published (with `inferred_only`, those marked
/// inferred) that the game played (`truth`) did not have at their ply, as
/// "ply N SAN".
fn invented_in_game(
    events: &[serde_json::Value],
    game: u64,
    truth: &[String],
    inferred_only: bool,
) -> Vec<String> {
    game_events(events, game)
        .iter()
        .filter(|e| e["type"] == "move" && (!inferred_only || e["inferred"] == true))
        .filter_map(|e| {
            let ply = e["ply"].as_u64()? as usize;
            let san = e["san"].as_str()?.to_string();
            (truth.get(ply - 1) != Some(&san)).then(|| format!("ply {ply} {san}"))
        })
        .collect()
}

/// The event campaign's seed 112, its board shrunk to the journal
/// (`tests/fixtures/campaign/seed112_knocked_after_gap.esl`): a pawn knocked
/// over right after a gap was explained as four plies never played (a
/// knight's trip out to capture it and home), published and then taken back.
/// Every move published must be the game's at its ply, and the pawn is
/// reported displaced and resolved. The class: `classes::knocked_after_gaps`.
#[test]
fn seed_112_knocked_after_gap_invents_no_plies() {
    let game = &pgn_games("games/kasparov-deep-blue-1997.pgn")[0];
    let truth = common::sans(&game.start, &game.moves);
    let events = campaign_events("seed112_knocked_after_gap.esl");
    let invented = invented_in_first_game(&events, &truth);
    assert!(invented.is_empty(), "published, never played: {invented:?}");
    let takebacks = events.iter().filter(|e| e["type"] == "takeback").count();
    assert_eq!(takebacks, 0, "a ply published, then taken back");
    let d5 = events
        .iter()
        .position(|e| e["type"] == "irregular" && e["kind"] == "displaced" && e["squares"][0] == "d5")
        .expect("the knocked pawn reported displaced");
    assert!(
        events[d5..].iter().any(|e| e["type"] == "resolved"),
        "the knocked pawn's alarm resolved"
    );
}

/// The event campaign's seed 563, board 3's journal
/// (`tests/fixtures/campaign/seed563_cycle_in_gap_other_parity.esl`): while
/// the daemon restarted, 13... Bf6 14. Be3 Bg7 brought the board back on the
/// position after 12... Bg7 (a cycle), and 15. Qd2 a5 16. b5 Bxf3 followed.
/// Seven plies, a cycle in them: no path the search may take reaches the
/// board with White to move. The daemon took six plies with Black's bishop
/// going the long way (14... Bh5, never played), then recorded the seen
/// 17. Bxf3 and 17... Nd4 in the other order and reported three completed
/// violations by Black. The dump after the restart showed 14. Be3 with the
/// a-pawn home (the queen in the hand): that path never stood on it. Every
/// move of the first game published must be the game's at its ply (a cycle
/// no board shows stops the record short, with `lost_track`), and no
/// violation is completed. Fixed in the search: a path stands on every board
/// the line showed whole since the gap, in order (`Search::stands_on_seen`).
#[test]
fn seed_563_a_cycle_in_a_gap_invents_no_route() {
    let game = &pgn_games("games/stockfish-learning.pgn")[0];
    let truth = common::sans(&game.start, &game.moves);
    let events = campaign_events("seed563_cycle_in_gap_other_parity.esl");
    let invented = invented_in_first_game(&events, &truth);
    let first = game_events(&events, 1);
    assert!(invented.is_empty(), "published, never played: {invented:?}");
    let completed: Vec<&serde_json::Value> = first
        .iter()
        .filter(|e| e["type"] == "irregular" && e["completed"] == true)
        .collect();
    assert!(completed.is_empty(), "violations no player made: {completed:?}");
    assert!(
        first
            .iter()
            .any(|e| e["type"] == "irregular" && e["kind"] == "lost_track"),
        "the board the cycle left unexplained is reported lost_track"
    );
}

/// The event campaign's seed 521, board 4's journal
/// (`tests/fixtures/campaign/seed521_slide_cut_by_a_stop.esl`): round 2's
/// first move, 1. e4, slid through e3, and the daemon stopped 3 ms after the
/// pawn was set down there; the restart took e3 as made and invented 1... e6
/// 2. e4 e5 to reach the board. Every move of round 2's game published must be
/// the game's at its ply (e3 may be published and amended to e4). The class:
/// `classes::slides_cut`.
#[test]
fn seed_521_a_slide_cut_by_a_stop_invents_no_plies() {
    let game = &pgn_games("games/immortal-games.pgn")[16];
    let truth = common::sans(&game.start, &game.moves);
    let events = campaign_events("seed521_slide_cut_by_a_stop.esl");
    let record = game_record(&events, 2);
    assert!(record.len() >= 20, "round 2's game recorded: {record:?}");
    assert_eq!(record[..], truth[..record.len()], "round 2's record");
    assert!(
        !game_events(&events, 2)
            .iter()
            .any(|e| e["type"] == "move" && e["san"] == "e6"),
        "1... e6, never played, published"
    );
}

/// The event campaign's seed 523, board 3's journal
/// (`tests/fixtures/campaign/seed523_castling_under_way_at_a_dump.esl`): the
/// dump after a restart caught Black's castling king first (the king on g8,
/// the rook still on h8), and the daemon inferred a king's walk (9. Qd2 Kf8
/// 10. Qxd4 Kg8) never played, taken back with a word when the rook moved.
/// Every move of the first game published must be the game's at its ply.
/// Fixed: a dump that is a move under way with a piece set down after fewer
/// plies than any that end on it is no board at rest (`Core::anchor_path`),
/// and a path stands on it as that move under way (`Search::stands_on_seen`).
#[test]
fn seed_523_castling_under_way_at_a_dump_invents_no_walk() {
    let game = &pgn_games("games/nepomniachtchi-liren-game1.pgn")[0];
    let truth = common::sans(&game.start, &game.moves);
    let events = campaign_events("seed523_castling_under_way_at_a_dump.esl");
    let invented = invented_in_first_game(&events, &truth);
    assert!(invented.is_empty(), "published, never played: {invented:?}");
}

/// The event campaign's seed 772, board 4's journal
/// (`tests/fixtures/campaign/seed772_knocked_lying_at_a_dump.esl`): Black's
/// bishop on g4 was knocked over while the daemon restarted, and lay off the
/// board when the dump came; the daemon inferred 5... Bh3 6. Bxh3 Ngf6 7. Bg2
/// (a capture and the capturer's way home, never played), took them back
/// when the bishop was set up again, and recorded 5... Ngf6 as seen. Every
/// move of the first game published must be the game's at its ply. Fixed:
/// a board that is fewer plies and a piece off it, the piece off counted as
/// a move, than any path that ends on it is those plies and the piece
/// `displaced` (`Found::Lying`); its class:
/// `classes::knocked_in_gaps_lying_at_the_dump`.
#[test]
fn seed_772_a_piece_lying_at_a_dump_invents_no_capture() {
    let game = &pgn_games("games/kasparov-deep-blue-1997.pgn")[0];
    let truth = common::sans(&game.start, &game.moves);
    let events = campaign_events("seed772_knocked_lying_at_a_dump.esl");
    // The hands also made moves and took them back (published, then taken
    // back with a word): only what was inferred is judged here.
    let invented = invented_in_game(&events, 1, &truth, true);
    assert!(invented.is_empty(), "inferred, never played: {invented:?}");
}

/// The record of game `game` (1, 2) of a kept campaign journal's events, as
/// its `move`, `move_amended` and `takeback` events leave it.
fn game_record(events: &[serde_json::Value], game: u64) -> Vec<String> {
    let mut record: Vec<String> = Vec::new();
    for e in game_events(events, game) {
        let ply = e["ply"].as_u64().unwrap_or(0) as usize;
        let san = e["san"].as_str().unwrap_or_default().to_string();
        match e["type"].as_str() {
            Some("move") if ply > 0 => {
                record.truncate(ply - 1);
                record.push(san);
            }
            Some("move_amended") if ply > 0 && ply <= record.len() => record[ply - 1] = san,
            Some("takeback") => record.truncate(e["to_ply"].as_u64().unwrap_or(0) as usize),
            _ => {}
        }
    }
    record
}

/// The event campaign's seed 779, board 4's journal
/// (`tests/fixtures/campaign/seed779_take_back_under_way_at_a_kill.esl`): the
/// hands made 4. Ng5, released it, and took it back (the knight home on f3)
/// 0.5 s before the daemon was killed; the take-back not yet decided, 4. Ng5
/// stood as a move seen before the gap, and the 4. Nxd4 e6 played meanwhile
/// could not follow from it (`lost_track` for the rest of the game). The
/// board the line showed last before the gap was the position before 4.
/// Ng5: every move of the first game published must be the game's at its
/// ply. Fixed: a last move the board shows taken back when the line goes is
/// no fact (`Core::line_away`); its class `classes::taken_back_before_gaps`.
#[test]
fn seed_779_a_take_back_under_way_at_a_kill_keeps_no_move() {
    let game = &pgn_games("games/immortal-games.pgn")[15];
    let truth = common::sans(&game.start, &game.moves);
    let events = campaign_events("seed779_take_back_under_way_at_a_kill.esl");
    let record = game_record(&events, 1);
    assert!(record.len() > 7, "the game recorded on past 4. Nxd4: {record:?}");
    assert_eq!(record[..], truth[..record.len()], "the first game's record");
}

/// The event campaign's seed 744, board 3's journal
/// (`tests/fixtures/campaign/seed744_capture_under_way_at_a_dump.esl`): in
/// round 2 the hands made 3... Qd6, released it and took it back, and the
/// daemon was killed twice; after the restart Black's d5 pawn was in the
/// hand (3... dxe4 under way) when the dump came, and the daemon inferred 4.
/// Nxd5 Qd8 5. Nc3 (a capture and the capturer's way home, never played),
/// then said `lost_track` for the rest of the game. The record of round 2's
/// game must be the game's moves.
#[test]
#[ignore = "open (issue 62, seed 744): a piece in the hand at a dump explained by a capture and the capturer's way home"]
fn seed_744_a_capture_under_way_at_a_dump_invents_no_trip() {
    let game = &pgn_games("games/kasparov-deep-blue-1997.pgn")[5];
    let truth = common::sans(&game.start, &game.moves);
    let events = campaign_events("seed744_capture_under_way_at_a_dump.esl");
    let record = game_record(&events, 2);
    assert!(record.len() > 8, "round 2's game recorded on: {record:?}");
    assert_eq!(record[..], truth[..record.len()], "round 2's record");
    // Nothing inferred that was not played, even for a while.
    let invented = invented_in_game(&events, 2, &truth, true);
    assert!(invented.is_empty(), "inferred, never played: {invented:?}");
}

/// The event campaign's seed 1143, its board's journal
/// (`tests/fixtures/campaign/seed1143_kings_after_gap.esl`): 19. Nxh3 Qf3+
/// played while the daemon was down (a start killed as it came up), then the
/// kings set on the centre (the result by kings). The dump after the restart
/// showed all of it; the result was taken and the two plies lost. They are
/// found now (inferred), before the result.
#[test]
fn seed_1143_plies_before_a_result_by_kings_across_a_gap_are_found() {
    let events = campaign_events("seed1143_kings_after_gap.esl");
    let game = game_events(&events, 1);
    let tail: Vec<(String, bool)> = game
        .iter()
        .filter(|e| e["type"] == "move")
        .map(|e| {
            (
                e["san"].as_str().unwrap_or_default().to_string(),
                e["inferred"] == true,
            )
        })
        .skip(34)
        .collect();
    let want = [("Kd1", false), ("f2", false), ("Nxh3", true), ("Qf3+", true)];
    assert_eq!(
        tail,
        want.iter().map(|(s, i)| (s.to_string(), *i)).collect::<Vec<_>>(),
        "the game's last plies"
    );
    let end = game
        .iter()
        .find(|e| e["type"] == "game_end")
        .expect("the game ends");
    assert_eq!(
        (end["result"].as_str(), end["termination"].as_str()),
        (Some("1/2-1/2"), Some("result_kings"))
    );
}

/// Plies played across a gap before the kings were set on the centre, as
/// the dump after it shows them: found when the board says which (the
/// fewest, one way only), never guessed when it does not (moves that could
/// come in another order; a king's own move, where the king stood being
/// unknown); the result by kings stands either way.
#[test]
fn plies_before_a_result_by_kings_are_found_only_when_the_board_says_which() {
    let opening = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n\
        1 lift g1 N\n1.3 place f3 N\n2 lift g8 n\n2.3 place f6 n\n\
        3 lift b1 N\n3.3 place c3 N\n4 lift b8 n\n4.3 place c6 n\n5 gap line lost\n7 gap connected\n";
    let cases = [
        // 3. g3 g6, then the kings on d4 and d5: found.
        (
            "r1bq1b1r/pppppp1p/2n2np1/3k4/3K4/2N2NP1/PPPPPP1P/R1BQ1B1R",
            vec!["g3", "g6"],
        ),
        // 3. g3 g6 4. b3, or 3. b3 g6 4. g3: no plies.
        (
            "r1bq1b1r/pppppp1p/2n2np1/3k4/3K4/1PN2NP1/P1PPPP1P/R1BQ1B1R",
            vec![],
        ),
        // 3. Rg1 Rg8: a rook each, one way: found.
        (
            "r1bq1br1/pppppppp/2n2n2/3k4/3K4/2N2N2/PPPPPPPP/R1BQ1BR1",
            vec!["Rg1", "Rg8"],
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (k, (board, want)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("kings-{k}.esl"));
        std::fs::write(&file, format!("{opening}7.1 board {board}\n10 board {board}\n")).unwrap();
        let events = common::replayed::replayed_events(&file);
        let moves: Vec<&str> = events
            .iter()
            .filter(|e| e["type"] == "move")
            .filter_map(|e| e["san"].as_str())
            .collect();
        assert_eq!(moves[..4], ["Nf3", "Nf6", "Nc3", "Nc6"], "case {k}");
        assert_eq!(moves[4..], want[..], "case {k}: the plies found before the kings");
        assert!(
            events
                .iter()
                .filter(|e| e["type"] == "move")
                .skip(4)
                .all(|e| e["inferred"] == true),
            "case {k}: plies found across a gap are inferred"
        );
        let end = events.iter().find(|e| e["type"] == "game_end");
        assert_eq!(
            end.and_then(|e| e["termination"].as_str()),
            Some("result_kings"),
            "case {k}: {events:?}"
        );
    }
}

/// The event campaign's seed 1300, board 3's journal
/// (`tests/fixtures/campaign/seed1300_slide_caught_at_a_dump.esl`): a restart
/// missed 15... Kxe7 16. Qd3, and the dump after it caught Black's rook on e8,
/// on its way from h8 to d8, before Black pressed. The clock's side to move
/// made 16. Qd2 Re8 17. Qd3 of it (a tempo never played); the rook's going on
/// to d8 says it was a slide: 16... Re8 is recorded and amended to Rd8. No
/// ply published that the game did not play at its ply, and 16... Rd8 stands.
#[test]
fn seed_1300_a_slide_caught_at_a_dump_is_no_tempo_more() {
    let game = &pgn_games("games/immortal-games.pgn")[12];
    let truth = common::sans(&game.start, &game.moves);
    assert_eq!(truth[31], "Rd8", "the game of the journal");
    let events = campaign_events("seed1300_slide_caught_at_a_dump.esl");
    let invented: Vec<String> = invented_in_first_game(&events, &truth)
        .into_iter()
        // Re8, the slide's square, published and amended to Rd8 at once.
        .filter(|m| m != "ply 32 Re8")
        .collect();
    assert!(invented.is_empty(), "published, never played: {invented:?}");
    let amended = game_events(&events, 1)
        .iter()
        .any(|e| e["type"] == "move_amended" && e["ply"] == 32 && e["san"] == "Rd8");
    assert!(amended, "16... Re8 amended to Rd8");
}
