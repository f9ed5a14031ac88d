//! Throughput of the rules core on a long sensor log: `cargo bench --bench core`.
//!
//! The log is built by the simulated hands (`eboard_bridge::sim`): random legal
//! games with slides, retouches, captures in every order and clock presses, at a
//! fixed seed so that every run measures the same input. The board-level events
//! are decoded once (through the same decoder and player `replay` uses); the
//! figure is the rules core alone consuming them, then the whole `replay` path.

use std::hint::black_box;
use std::time::{Duration, Instant};

use eboard_bridge::board::Orientation;
use eboard_bridge::log::{Header, Played, Player, SensorLog};
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::rules::{Config, Core};
use eboard_bridge::sim::{Hands, Seeded, Style};
use shakmaty::{Chess, Position};

const GAMES: usize = 200;
const MAX_PLIES: usize = 120;

fn long_log() -> (SensorLog, usize) {
    let mut pick = Seeded::new(2026);
    let mut hands = Hands::new(11, Style::default(), Orientation::Normal);
    let mut plies = 0;
    for _ in 0..GAMES {
        let mut pos = Chess::default();
        hands.board(pos.board());
        hands.set_clock(ClockTime::from_hms(1, 30, 0).expect("a valid time"));
        for _ in 0..MAX_PLIES {
            let legal = pos.legal_moves();
            if legal.is_empty() || pos.is_insufficient_material() {
                break;
            }
            let mv = legal[pick.range(0, legal.len() as u64 - 1) as usize];
            hands.play(&pos, &mv);
            pos.play_unchecked(mv);
            plies += 1;
        }
        hands.wait(5000);
    }
    let log = SensorLog {
        header: Header::default(),
        records: hands.records,
        lines: Vec::new(),
    };
    (log, plies)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let (log, plies) = long_log();
    let steps = Player::play_log(&log, "bench").expect("the generated log plays");
    let events: Vec<_> = steps
        .iter()
        .filter_map(|s| match &s.what {
            Played::Board(ev) => Some((ev.clone(), s.time.micros())),
            _ => None,
        })
        .collect();
    let runs = 7;
    let mut core_times = Vec::new();
    let mut moves = 0;
    for _ in 0..runs {
        let start = Instant::now();
        let mut core = Core::new(Config::default());
        let mut out = 0;
        for (ev, t) in &events {
            core.input(black_box(ev), *t);
            out += core.take_events().len();
        }
        core.finish();
        black_box(out);
        core_times.push(start.elapsed());
        moves = core.games().map(|g| g.moves.len()).sum::<usize>();
    }
    let mut replay_times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let r = eboard_bridge::output::replay::run(&log, "bench", Config::default(), None).expect("plays");
        black_box(r.events.len());
        replay_times.push(start.elapsed());
    }
    let core = median(core_times);
    let replay = median(replay_times);
    let per_sec = |n: usize, d: Duration| n as f64 / d.as_secs_f64();
    println!(
        "long log: {} records, {} board events, {GAMES} games, {plies} plies played",
        log.records.len(),
        events.len()
    );
    println!("recorded moves: {moves}");
    println!(
        "rules core: {:.3} s median of {runs}, {:.0} events/s, {:.0} moves/s, {:.2} µs/event",
        core.as_secs_f64(),
        per_sec(events.len(), core),
        per_sec(moves, core),
        core.as_secs_f64() * 1e6 / events.len() as f64
    );
    println!(
        "replay (decoder + player + rules core): {:.3} s median of {runs}, {:.0} records/s",
        replay.as_secs_f64(),
        per_sec(log.records.len(), replay)
    );
    assert_eq!(moves, plies, "the bench log must replay to the moves played");
}
