//! Line faults, end to end: real games played by simulated hands on emulated boards,
//! each behind a relay (`tests/relay`, real pseudo-terminals) that drops or flips
//! the board's bytes at a seeded rate or cuts the line, and one real daemon bridging
//! them all. Judged by what a broadcast sees: the published PGN against the moves
//! really played, the results, the penalties, and `replay` of the recording.
//!
//! `cargo test --test faults` runs a small campaign (one game per fault kind, all
//! boards at once, about a minute). The full campaign of `docs/RELIABILITY.md`:
//! `FAULTS=full cargo test --release --test faults -- --nocapture`.

mod common;
mod relay;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Within, pgn_games, pgn_moves, sans};
use eboard_bridge::board::Orientation;
use eboard_bridge::bus::{BOARD_INTERFACE, BUS_NAME};
use eboard_bridge::daemon::{BusChoice, Config, Daemon, Tapped};
use eboard_bridge::device::{Emulator, EmulatorConfig};
use eboard_bridge::log::{RecordKind, SensorLog};
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::rules::EventKind;
use eboard_bridge::sim::{Hands, Seeded, Style};
use relay::{LineFaults, RelayStats};
use shakmaty::{Chess, Move, Piece, Position, Square};

/// Log time runs this many times faster than real time (the daemon's thresholds
/// are divided by the same factor, as `demo --speed` does).
const SPEED: f64 = 4.0;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Drop(f64),
    Flip(f64),
    /// Cuts of 0.5 to 10 s (log time) at random moments.
    Cuts,
}

impl Fault {
    fn name(self) -> String {
        match self {
            Fault::Drop(p) => format!("drop {}%", p * 100.0),
            Fault::Flip(p) => format!("flip {}%", p * 100.0),
            Fault::Cuts => "cuts".into(),
        }
    }
}

struct Run {
    fault: Fault,
    game: String,
    start: Chess,
    moves: Vec<Move>,
    seed: u64,
}

/// Hands at a human pace: a cut of 10 s spans a few plies, never more than 6.
fn style() -> Style {
    Style {
        think_ms: (1500, 3000),
        step_ms: (120, 350),
        ..Style::default()
    }
}

/// A lift (`false`) or a placement (`true`) of a piece on a square, as the board
/// reports it.
type Touch = (bool, Square, Option<Piece>);

fn touch_of(kind: &RecordKind) -> Option<Touch> {
    match kind {
        RecordKind::Lift { square, piece } => Some((false, *square, *piece)),
        RecordKind::Place { square, piece } => Some((true, *square, Some(*piece))),
        _ => None,
    }
}

/// The game's sensor log, and each ply's lifts and placements with their log
/// times (µs).
fn game_log(run: &Run) -> (SensorLog, Vec<Vec<(u64, Touch)>>) {
    let mut hands = Hands::new(run.seed, style(), Orientation::Normal);
    hands.board(run.start.board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    // The board stands set up for a while before the round starts.
    hands.wait(8000);
    let mut pos = run.start.clone();
    let mut plies = Vec::new();
    for mv in &run.moves {
        let from = hands.records.len();
        hands.play(&pos, mv);
        pos.play_unchecked(*mv);
        plies.push(
            hands.records[from..]
                .iter()
                .filter_map(|r| touch_of(&r.kind).map(|t| (r.time.micros(), t)))
                .collect(),
        );
    }
    (common::played_log(hands, &pos, &[], 3000), plies)
}

/// Which of each ply's lifts and placements reached the daemon while it knew the
/// board (read after the dump that follows a gap or unreadable bytes): the longest
/// common subsequence of the log's touches and those the recording decoded, a
/// touch matching only one within 3 s (real time) of its time in the log (the
/// two clocks aligned on the first touch of both). Returns, per ply, (seen, all).
fn seen_per_ply(plies: &[Vec<(u64, Touch)>], recording: &SensorLog) -> Vec<(usize, usize)> {
    use eboard_bridge::board::BoardEvent;
    use eboard_bridge::log::{Played, Player};
    let sent: Vec<(usize, u64, Touch)> = plies
        .iter()
        .enumerate()
        .flat_map(|(p, ts)| ts.iter().map(move |(t, touch)| (p, *t, *touch)))
        .collect();
    // After a gap or bytes it could not read, the daemon knows the board again
    // only from the next dump: touches read before it are not counted as shown.
    let mut known = true;
    let got: Vec<(u64, Touch)> = Player::play_log(recording, "recording")
        .unwrap_or_default()
        .into_iter()
        .filter_map(|s| match s.what {
            Played::Gap(_) | Played::Skipped(_) => {
                known = false;
                None
            }
            Played::Board(BoardEvent::Dump(_)) => {
                known = true;
                None
            }
            Played::Board(BoardEvent::Lift { square, piece }) if known => {
                Some((s.time.micros(), (false, square, piece.piece())))
            }
            Played::Board(BoardEvent::Place { square, piece, .. }) if known => {
                piece.piece().map(|p| (s.time.micros(), (true, square, Some(p))))
            }
            _ => None,
        })
        .collect();
    let mut out: Vec<(usize, usize)> = plies.iter().map(|ts| (0, ts.len())).collect();
    let Some(&(t0, first)) = got.first() else {
        return out;
    };
    let Some(s0) = sent.iter().find(|s| s.2 == first).map(|s| s.1) else {
        return out;
    };
    // Real µs of the recording for a log time.
    let real = |log_us: u64| (log_us as f64 - s0 as f64) / SPEED + t0 as f64;
    let same = |s: &(usize, u64, Touch), g: &(u64, Touch)| s.2 == g.1 && (real(s.1) - g.0 as f64).abs() < 3e6;
    let (n, m) = (sent.len(), got.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if same(&sent[i], &got[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if same(&sent[i], &got[j]) && lcs[i][j] == lcs[i + 1][j + 1] + 1 {
            out[sent[i].0].0 += 1;
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The result the board shows at the end: a forced end, else none.
fn true_result(start: &Chess, moves: &[Move]) -> &'static str {
    let mut pos = start.clone();
    for m in moves {
        pos.play_unchecked(*m);
    }
    if pos.is_checkmate() {
        if pos.turn().is_white() { "0-1" } else { "1-0" }
    } else if pos.is_stalemate() || pos.is_insufficient_material() {
        "1/2-1/2"
    } else {
        "*"
    }
}

fn config(dir: &Path, boards: usize) -> Config {
    let mut text = format!(
        "event = \"Fault campaign\"\nround = 1\noutput = \"{}\"\nstate = \"{}\"\n[rules]\nrelease_ms = {}\nflicker_ms = {}\nirregular_ms = {}\n",
        dir.join("live").display(),
        dir.join("state").display(),
        (300.0 / SPEED) as u64,
        (150.0 / SPEED) as u64,
        (2000.0 / SPEED) as u64,
    );
    for i in 0..boards {
        text.push_str(&format!(
            "[[board]]\ndevice = \"{}\"\nnumber = {}\n",
            dir.join(format!("line{i}")).display(),
            i + 1
        ));
    }
    Config::parse(&text, "faults.toml").unwrap()
}

/// Cut times (log µs from the start of play) and lengths: `count` cuts that do
/// not overlap, each followed by the second or so the daemon needs to reopen.
fn cut_plan(rng: &mut Seeded, log_end_us: u64, count: usize) -> Vec<(u64, u64)> {
    let mut plan = Vec::new();
    let usable = log_end_us.saturating_sub(15_000_000);
    let slot = usable / count.max(1) as u64;
    for i in 0..count as u64 {
        let length = rng.range(500_000, 10_000_000);
        let room = slot.saturating_sub(length + 2_000_000);
        let at = 5_000_000 + i * slot + rng.range(0, room.max(1));
        plan.push((at, length));
    }
    plan
}

struct Outcome {
    name: String,
    plies: usize,
    published: Vec<String>,
    /// Which published moves carry `{inferred}`.
    marked: Vec<bool>,
    result: String,
    inferred: usize,
    penalties: usize,
    lost_track: usize,
    replayed: Vec<String>,
    /// `replay` of the recording with no options against the events published
    /// live: how many agree, or the first that does not.
    as_published: Result<usize, String>,
    /// Per ply, how many of its lifts and placements reached the daemon, of all.
    seen: Vec<(usize, usize)>,
    stats: RelayStats,
}

async fn campaign(runs: Vec<Run>) -> Vec<Outcome> {
    let dir = tempfile::tempdir().unwrap();
    let n = runs.len();
    let (logs, plies): (Vec<SensorLog>, Vec<_>) = runs.iter().map(game_log).unzip();
    let mut relays = Vec::new();
    let mut emulators = Vec::new();
    for (i, (run, log)) in runs.iter().zip(&logs).enumerate() {
        let emulator = Emulator::open().unwrap();
        let board = emulator.path().to_path_buf();
        let cfg = EmulatorConfig {
            speed: SPEED,
            serial: format!("{}", 20000 + i),
            ..EmulatorConfig::default()
        };
        let log = log.clone();
        emulators.push(tokio::spawn(async move {
            let _ = emulator.run(&log, "generated", &cfg).await;
        }));
        let faults = match run.fault {
            Fault::Drop(p) => LineFaults {
                drop: p,
                flip: 0.0,
                seed: run.seed,
            },
            Fault::Flip(p) => LineFaults {
                drop: 0.0,
                flip: p,
                seed: run.seed,
            },
            Fault::Cuts => LineFaults::CLEAN,
        };
        let link = dir.path().join(format!("line{i}"));
        relays.push(relay::start(&board, &link, faults).unwrap());
    }
    let devices: Vec<PathBuf> = (0..n).map(|i| dir.path().join(format!("line{i}"))).collect();
    let daemon = Daemon::start(devices, config(dir.path(), n), BusChoice::None)
        .within(30, "the daemon to start")
        .await
        .unwrap();
    let collector = common::replayed::collect(&daemon);
    // The cuts, on their own clock (log time is real time times SPEED).
    let started = tokio::time::Instant::now();
    let mut cutters = Vec::new();
    for (i, (run, log)) in runs.iter().zip(&logs).enumerate() {
        if run.fault != Fault::Cuts {
            continue;
        }
        let end = log.records.last().map_or(0, |r| r.time.micros());
        let mut rng = Seeded::new(run.seed ^ 0xc475);
        let count = (run.moves.len() / 4).clamp(1, 20);
        let plan = cut_plan(&mut rng, end, count);
        let cuts = relays[i].0.clone();
        cutters.push(tokio::spawn(async move {
            for (at, length) in plan {
                let real = |us: u64| Duration::from_secs_f64(us as f64 / 1e6 / SPEED);
                tokio::time::sleep_until(started + real(at)).await;
                let _ = cuts.send(real(length)).await;
            }
        }));
    }
    // Every game played out, then a while for the boards to settle.
    let longest = logs
        .iter()
        .map(|l| l.records.last().map_or(0, |r| r.time.micros()))
        .max()
        .unwrap_or(0);
    tokio::time::sleep(Duration::from_secs_f64(longest as f64 / 1e6 / SPEED + 2.0)).await;
    let boards = daemon.boards();
    let expected: Vec<Vec<String>> = runs.iter().map(|r| sans(&r.start, &r.moves)).collect();
    let until = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::time::Instant::now() < until {
        let done = boards.iter().all(|(id, _, snap)| {
            let i: usize = id.trim_start_matches("line").parse().unwrap_or(0);
            snap.borrow().moves == expected[i]
        });
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for c in cutters {
        let _ = c.within(60, "the line cuts to be done").await;
    }
    daemon.shutdown().within(30, "the daemon to stop").await;
    let events = collector
        .within(10, "the daemon's event stream to close after it stopped")
        .await
        .unwrap_or_default();
    for e in emulators {
        e.abort();
    }
    if std::env::var_os("FAULTS_KEEP").is_some() {
        println!("campaign folder kept: {}", dir.path().display());
    }
    let mut outcomes = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let id = format!("line{i}");
        let stats = {
            // Closing its channel ends the relay, which returns what it did.
            let (cuts, handle) = relays.remove(0);
            drop(cuts);
            match tokio::time::timeout(Duration::from_secs(5), handle).await {
                Ok(Ok(s)) => s,
                _ => RelayStats::default(),
            }
        };
        let file = dir.path().join(format!("live/round-1/game-{}.pgn", i + 1));
        let pgn = std::fs::read_to_string(&file).unwrap_or_default();
        let published = pgn_moves(&pgn).into_iter().next().unwrap_or_default();
        let marked = inferred_marks(&pgn);
        let result = pgn
            .lines()
            .find_map(|l| l.strip_prefix("[Result \"").and_then(|r| r.strip_suffix("\"]")))
            .unwrap_or("")
            .to_string();
        let (inferred, penalties, lost_track) = counts(&events, &id);
        // The recording replays to the game that was published.
        let recording = dir.path().join(format!("state/recordings/{id}.esl"));
        let log = eboard_bridge::log::read_log(&recording).unwrap();
        let rules = config(dir.path(), n).rules.core_config();
        let seen = seen_per_ply(&plies[i], &log);
        let replay = eboard_bridge::output::replay::run(&log, &id, rules, None).unwrap();
        let replayed = replay
            .core
            .games()
            .last()
            .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
            .unwrap_or_default();
        // And `replay` of it with no options prints what was published.
        let as_published = common::replayed::replay_difference(&recording, &id, &events);
        outcomes.push(Outcome {
            name: format!("{} on {} (seed {})", run.fault.name(), run.game, run.seed),
            plies: run.moves.len(),
            published,
            marked,
            result,
            inferred,
            penalties,
            lost_track,
            replayed,
            as_published,
            seen,
            stats,
        });
    }
    if std::env::var_os("FAULTS_KEEP").is_some() {
        let _ = dir.keep();
    }
    outcomes
}

/// A board's moves inferred, completed violations (penalties) and `lost_track`
/// irregularities among the daemon's events.
fn counts(events: &[Tapped], board: &str) -> (usize, usize, usize) {
    let mine = || events.iter().filter(|t| t.board == board).map(|t| &t.event.kind);
    let inferred = mine()
        .filter(|k| matches!(k, EventKind::Move { inferred: true, .. }))
        .count();
    let penalties = mine()
        .filter(|k| matches!(k, EventKind::Irregular { completed: true, .. }))
        .count();
    let lost_track = mine()
        .filter(|k| matches!(k, EventKind::Irregular { kind, .. } if kind.name() == "lost_track"))
        .count();
    (inferred, penalties, lost_track)
}

/// Checks every outcome and prints a line for each; returns the failures.
fn judge(runs: &[Run], outcomes: &[Outcome]) -> Vec<String> {
    let mut failures = Vec::new();
    for (run, o) in runs.iter().zip(outcomes) {
        let expected = sans(&run.start, &run.moves);
        let want_result = true_result(&run.start, &run.moves);
        println!(
            "{}: {} plies, published {} exact={} result {} (board {}), inferred {}, penalties {}, lost_track {}, replay equal={}; line: {} bytes, {} dropped, {} flipped, {} cuts",
            o.name,
            o.plies,
            o.published.len(),
            o.published == expected,
            o.result,
            want_result,
            o.inferred,
            o.penalties,
            o.lost_track,
            o.replayed == o.published,
            o.stats.bytes,
            o.stats.dropped,
            o.stats.flipped,
            o.stats.cuts
        );
        // Across cuts several orders may reach the board: each stretch of inferred
        // moves must have the true length and end on the true position, and every
        // move seen must be the one played.
        let agrees = if run.fault == Fault::Cuts {
            same_game_modulo_order(&run.start, &run.moves, &o.published, &o.marked)
        } else {
            o.published == expected
        };
        if !agrees {
            failures.push(format!(
                "{}: published {:?}\n  expected {:?}",
                o.name, o.published, expected
            ));
        }
        if o.result != want_result {
            failures.push(format!(
                "{}: result {} but the board shows {want_result}",
                o.name, o.result
            ));
        }
        if o.penalties > 0 {
            failures.push(format!("{}: {} penalties from line faults", o.name, o.penalties));
        }
        if o.replayed != o.published {
            failures.push(format!(
                "{}: replay of the recording gives {:?}",
                o.name, o.replayed
            ));
        }
        match &o.as_published {
            Ok(0) => failures.push(format!("{}: no event published", o.name)),
            Ok(_) => {}
            Err(e) => failures.push(format!("{}: {e}", o.name)),
        }
        // A gap's inferred plies are exactly those the line did not show: a ply
        // none of whose lifts and placements reached the daemon is inferred, one
        // whose every lift and placement did is not (a ply cut in the middle may be
        // either). Where a round trip left plies out, the plies and the published
        // moves no longer pair up, and only the line above judges. Flipped bytes
        // are not gaps: one can read as a wrong touch, after which the daemon
        // rightly trusts nothing until a dump, so a flip run is not judged here.
        let gaps = !matches!(run.fault, Fault::Flip(_));
        if gaps && o.published.len() == o.seen.len() {
            for (ply, (&(seen, all), &marked)) in o.seen.iter().zip(&o.marked).enumerate() {
                if seen == all && marked {
                    failures.push(format!(
                        "{}: ply {} ({}) reached the daemon whole but is marked inferred",
                        o.name,
                        ply + 1,
                        o.published[ply]
                    ));
                }
                if seen == 0 && all > 0 && !marked {
                    failures.push(format!(
                        "{}: ply {} ({}) never reached the daemon but is not marked inferred",
                        o.name,
                        ply + 1,
                        o.published[ply]
                    ));
                }
            }
        } else if gaps {
            println!(
                "{}: plies and published moves do not pair up; inferred marks judged by order only",
                o.name
            );
        }
        if run.fault == Fault::Cuts && (o.stats.cuts == 0 || o.inferred == 0) {
            failures.push(format!(
                "{}: no cut bridged ({} cuts, {} inferred)",
                o.name, o.stats.cuts, o.inferred
            ));
        }
    }
    failures
}

/// The `{inferred}` marks of the first game of a PGN text, one per move.
fn inferred_marks(pgn: &str) -> Vec<bool> {
    let body: String = pgn
        .lines()
        .filter(|l| !l.starts_with('['))
        .collect::<Vec<_>>()
        .join(" ");
    let mut marks = Vec::new();
    let mut comment = String::new();
    let mut in_comment = false;
    for tok in body.split_whitespace() {
        if in_comment || tok.starts_with('{') {
            in_comment = !tok.ends_with('}');
            comment.push_str(tok);
            if !in_comment {
                if comment == "{inferred}" {
                    if let Some(last) = marks.last_mut() {
                        *last = true;
                    }
                }
                comment.clear();
            }
            continue;
        }
        if tok.ends_with('.') || ["*", "1-0", "0-1", "1/2-1/2"].contains(&tok) {
            continue;
        }
        marks.push(false);
    }
    marks
}

/// The published game is the played one but for what no board seen across a cut
/// can show: each move seen is the one played; each stretch of inferred moves ends
/// on the position the game really reached, after as many plies, or after fewer
/// when a piece went back to the square it started from while the line was away
/// (a trip no board seen before and after shows, and one the daemon never
/// invents: `rules::round_trip`); a cycle of plies back to the same position may
/// be missing altogether.
fn same_game_modulo_order(start: &Chess, played: &[Move], published: &[String], marked: &[bool]) -> bool {
    if marked.len() != published.len() {
        return false;
    }
    let truth = sans(start, played);
    let key = |p: &Chess| {
        let fen = eboard_bridge::rules::game_fen(p);
        fen.split(' ').take(3).collect::<Vec<_>>().join(" ")
    };
    // The positions the game really went through: real[i] before ply i.
    let mut real = vec![start.clone()];
    for m in played {
        let mut next = real[real.len() - 1].clone();
        next.play_unchecked(*m);
        real.push(next);
    }
    let keys: Vec<String> = real.iter().map(key).collect();
    let (mut i, mut k) = (0usize, 0usize);
    let mut ours = start.clone();
    while k < published.len() {
        let end = if marked[k] {
            (k..published.len())
                .find(|&x| !marked[x])
                .unwrap_or(published.len())
        } else {
            k + 1
        };
        for san in &published[k..end] {
            let Ok(san) = san.parse::<shakmaty::san::San>() else {
                return false;
            };
            let Ok(mv) = san.to_move(&ours) else { return false };
            ours.play_unchecked(mv);
        }
        let here = key(&ours);
        let len = end - k;
        let next = if marked[k] {
            (i + len..=played.len()).find(|&j| {
                keys[j] == here
                    && (j == i + len
                        || (i + 1..=j)
                            .any(|m| eboard_bridge::rules::round_trip(real[i].board(), &played[i..m])))
            })
        } else if truth.get(i) == Some(&published[k]) {
            Some(i + 1)
        } else {
            // A cycle back to this position, then the move seen.
            (i + 1..played.len())
                .find(|&j| keys[j] == keys[i] && truth[j] == published[k])
                .map(|j| j + 1)
        };
        let Some(j) = next else { return false };
        i = j;
        k = end;
    }
    i == played.len()
}

fn all_games() -> Vec<(String, Chess, Vec<Move>)> {
    let mut games = Vec::new();
    for file in common::STANDARD_GAME_FILES {
        for (k, g) in pgn_games(file).into_iter().enumerate() {
            if g.mode == shakmaty::CastlingMode::Standard && g.moves.len() >= 10 {
                games.push((format!("{file}#{}", k + 1), g.start, g.moves));
            }
        }
    }
    games
}

const FAULTS: [Fault; 5] = [
    Fault::Drop(0.001),
    Fault::Drop(0.01),
    Fault::Flip(0.001),
    Fault::Flip(0.01),
    Fault::Cuts,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_faults_lose_no_move_and_invent_none() {
    let full = std::env::var("FAULTS").is_ok_and(|v| v == "full");
    let games = all_games();
    let mut runs = Vec::new();
    if full {
        for (gi, (name, start, moves)) in games.iter().enumerate() {
            for (fi, fault) in FAULTS.into_iter().enumerate() {
                runs.push(Run {
                    fault,
                    game: name.clone(),
                    start: start.clone(),
                    moves: moves.clone(),
                    seed: 1000 + (gi * FAULTS.len() + fi) as u64,
                });
            }
        }
    } else {
        // One game per fault kind, at most 60 plies each (80 with 20 cuts), all at
        // once.
        for (fi, fault) in FAULTS.into_iter().enumerate() {
            let (name, start, moves) = match fault {
                Fault::Cuts => games.iter().find(|(_, _, m)| m.len() >= 80).unwrap_or(&games[0]),
                _ => &games[(fi * 7) % games.len()],
            };
            let plies = if fault == Fault::Cuts { 80 } else { 60 };
            runs.push(Run {
                fault,
                game: name.clone(),
                start: start.clone(),
                moves: moves.iter().take(plies).copied().collect(),
                seed: 7 + fi as u64,
            });
        }
    }
    // FAULTS_SEED=N[,N...] runs only the runs with those seeds (to look into them).
    if let Ok(list) = std::env::var("FAULTS_SEED") {
        let seeds: Vec<u64> = list.split(',').filter_map(|s| s.trim().parse().ok()).collect();
        runs.retain(|r| seeds.contains(&r.seed));
    }
    // At most 16 boards at a time on this machine's two cores.
    let mut failures = Vec::new();
    let mut totals = (0usize, 0usize);
    while !runs.is_empty() {
        let batch: Vec<Run> = runs.drain(..runs.len().min(16)).collect();
        let outcomes = campaign(batch.iter().map(copy_run).collect()).await;
        totals.0 += outcomes.len();
        totals.1 += outcomes.iter().map(|o| o.plies).sum::<usize>();
        failures.extend(judge(&batch, &outcomes));
    }
    println!(
        "{} games, {} plies, {} failures",
        totals.0,
        totals.1,
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn copy_run(r: &Run) -> Run {
    Run {
        fault: r.fault,
        game: r.game.clone(),
        start: r.start.clone(),
        moves: r.moves.clone(),
        seed: r.seed,
    }
}

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
    let mut relays = Vec::new();
    let mut emulators = Vec::new();
    for (i, log) in logs.into_iter().enumerate() {
        let emulator = Emulator::open().unwrap();
        let board = emulator.path().to_path_buf();
        let cfg = EmulatorConfig {
            speed: SPEED,
            serial: format!("{}", 30000 + i),
            ..EmulatorConfig::default()
        };
        emulators.push(tokio::spawn(async move {
            let _ = emulator.run(&log, "generated", &cfg).await;
        }));
        let link = dir.path().join(format!("line{i}"));
        relays.push(relay::start(&board, &link, LineFaults::CLEAN).unwrap());
    }
    let devices: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("line{i}"))).collect();
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
    daemon.shutdown().within(30, "the daemon to stop").await;
    let events = collector
        .within(10, "the daemon's event stream to close after it stopped")
        .await
        .unwrap();
    for e in emulators {
        e.abort();
    }
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
