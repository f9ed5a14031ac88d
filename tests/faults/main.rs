//! Line faults, end to end: real games played by simulated hands on emulated boards,
//! each behind a relay (`tests/relay`, real pseudo-terminals) that drops or flips
//! the board's bytes at a seeded rate or cuts the line, and one real daemon bridging
//! them all. Judged by what a broadcast sees: the published PGN against the moves
//! really played, the results, the penalties, and `replay` of the recording.
//!
//! `cargo test --test suite faults::` runs a small campaign (one game per fault kind, all
//! boards at once, about a minute). The full campaign of `docs/RELIABILITY.md`:
//! `FAULTS=full cargo test --release --test suite faults:: -- --nocapture`.

mod campaign;
use crate::common;
mod cuts;
use crate::relay;

use std::path::Path;
use std::time::Duration;

use common::played::{
    Touch, all_games, inferred_marks, same_game_modulo_order, seen_per_ply, touch_of, true_result,
};
use common::{Within, pgn_moves, sans};
use eboard_bridge::board::Orientation;
use eboard_bridge::bus::{BOARD_INTERFACE, BUS_NAME};
use eboard_bridge::daemon::{BusChoice, Daemon, DaemonConfig, Tapped};
use eboard_bridge::log::SensorLog;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::rules::EventKind;
use eboard_bridge::sim::{Hands, Seeded, Style};
use relay::{LineFaults, RelayStats};
use shakmaty::{Chess, Move, Position};

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

/// Stops `daemon` (within 30 s), then the emulated boards; what `collector`
/// gathered of its events once their stream has closed (within 10 s).
async fn stop_and_collect(
    daemon: Daemon,
    collector: tokio::task::JoinHandle<Vec<Tapped>>,
    emulators: Vec<tokio::task::JoinHandle<()>>,
) -> Result<Vec<Tapped>, tokio::task::JoinError> {
    daemon.shutdown().within(30, "the daemon to stop").await;
    let events = collector
        .within(10, "the daemon's event stream to close after it stopped")
        .await;
    for e in emulators {
        e.abort();
    }
    events
}

fn config(dir: &Path, boards: usize) -> DaemonConfig {
    let mut text = format!(
        "event = \"Fault campaign\"\nround = 1\noutput = \"{}\"\nstate = \"{}\"\n{}",
        dir.join("live").display(),
        dir.join("state").display(),
        common::played::scaled_rules(SPEED),
    );
    for i in 0..boards {
        text.push_str(&format!(
            "[[board]]\ndevice = \"{}\"\nnumber = {}\n",
            dir.join(format!("line{i}")).display(),
            i + 1
        ));
    }
    DaemonConfig::parse(&text, "faults.toml").unwrap()
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

const FAULTS: [Fault; 5] = [
    Fault::Drop(0.001),
    Fault::Drop(0.01),
    Fault::Flip(0.001),
    Fault::Flip(0.01),
    Fault::Cuts,
];
