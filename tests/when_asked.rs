//! The rules core decides by the times of its inputs, not by when it is asked.
//!
//! Live, the daemon meets the core's deadlines (`Core::advance`) whenever its
//! timer fires or bytes arrive, at any moment between two reads; `replay` and
//! resume meet them only when the next record's time passes them. What is
//! published live and what `replay` prints of the recording must still be the
//! same, byte for byte (the fault campaign compares them). This test plays
//! games by simulated hands, with the clock, as a board's bytes cut into reads
//! of any size and with bits flipped as a bad line flips them, and replays each
//! twice: as `replay` does, and as the daemon does, advancing the core at
//! random moments once a deadline is due (at the next read's own time too: a
//! read waiting while a deadline is handled gets the core's time). The events
//! must be equal.

use eboard_bridge::board::Orientation;
use eboard_bridge::log::play::board_bytes;
use eboard_bridge::log::{LogTime, Player, Record, RecordKind};
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::rules::{Config, Core};
use eboard_bridge::session::Session;
use eboard_bridge::sim::{Hands, Seeded, Style};
use shakmaty::{Chess, Position};

/// A game by hands as `rx` records: each record's bytes, bits flipped at
/// `flip` per byte, cut into reads of 1 to 24 bytes, each read a few µs after
/// the one before.
fn rx_game(seed: u64, style: Style, plies: usize, flip: f64) -> Vec<Record> {
    let mut hands = Hands::new(seed, style, Orientation::Normal);
    let start = Chess::default();
    hands.board(start.board());
    hands.set_clock(ClockTime::from_hms(0, 5, 0).unwrap());
    hands.wait(3000);
    let mut pos = start.clone();
    let mut pick = Seeded::new(seed ^ 0x5eed);
    hands.random_game(&mut pos, &mut pick, plies);
    hands.wait(5000);
    hands.flush();

    let mut rng = Seeded::new(seed.wrapping_mul(31) + 7);
    let threshold = (flip * u64::MAX as f64) as u64;
    let mut player = Player::new("hands");
    let mut clock =
        eboard_bridge::clock::ClockModel::new(ClockTime::from_millis(0), ClockTime::from_millis(0), 0);
    let mut out = Vec::new();
    let mut last = 0u64;
    for r in &hands.records {
        let t = r.time.micros();
        let bytes =
            board_bytes(&r.kind, player.board(), &mut clock, t).expect("the hands' records fit the board");
        player.play(r, None).expect("the hands' records fit the board");
        let Some(mut bytes) = bytes else { continue };
        for b in &mut bytes {
            if threshold > 0 && rng.next_u64() < threshold {
                *b ^= 1 << rng.range(0, 7);
            }
        }
        let mut at = t.max(last);
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let n = (rng.range(1, 24) as usize).min(rest.len());
            out.push(Record {
                time: LogTime::from_micros(at),
                kind: RecordKind::Rx(rest[..n].to_vec()),
            });
            rest = &rest[n..];
            last = at;
            at += rng.range(0, 400);
        }
    }
    out
}

/// The events (as JSON lines) of `records` stepped through a session. With
/// `asked`, the core is also advanced at random moments between reads, as
/// the daemon's timer does: each time a deadline falls at or before the next
/// read, to a moment between that deadline and the read.
fn events(records: &[Record], cfg: &Config, mut asked: Option<&mut Seeded>) -> Vec<String> {
    let mut session = Session::new(Core::new(*cfg), "hands");
    let mut out = Vec::new();
    let taken = |session: &mut Session| {
        let events = session.take_events();
        events
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect::<Vec<_>>()
    };
    for (i, r) in records.iter().enumerate() {
        // A `rx` record never fails: bytes are skipped, never refused.
        session.step(r, None).expect("rx records always fit");
        if let Some(rng) = asked.as_deref_mut() {
            let next = records.get(i + 1).map_or(u64::MAX, |n| n.time.micros());
            // Each advance moves the next deadline past `to`; bounded all the
            // same, so that a deadline that kept coming back could not hang.
            for _ in 0..10_000 {
                let Some(d) = session.core().next_deadline().filter(|d| *d <= next) else {
                    break;
                };
                let to = if next == u64::MAX { d } else { rng.range(d, next) };
                session.advance(to);
            }
        }
        out.extend(taken(&mut session));
    }
    session.finish();
    out.extend(taken(&mut session));
    out
}

fn first_difference(a: &[String], b: &[String]) -> String {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    format!(
        "event {at} of {}/{}:\n  replayed: {}\n  asked:    {}",
        a.len(),
        b.len(),
        a.get(at).map_or("(none)", String::as_str),
        b.get(at).map_or("(none)", String::as_str)
    )
}

fn campaign(seeds: std::ops::Range<u64>, style: Style, flip: f64, cfg: &Config) -> Vec<String> {
    let mut failures = Vec::new();
    for seed in seeds {
        let records = rx_game(seed, style.clone(), 60, flip);
        let replayed = events(&records, cfg, None);
        for ask in 0..3 {
            let mut rng = Seeded::new(seed * 1000 + ask);
            let asked = events(&records, cfg, Some(&mut rng));
            if asked != replayed {
                failures.push(format!(
                    "seed {seed}, asked {ask}: {}",
                    first_difference(&replayed, &asked)
                ));
                break;
            }
        }
    }
    failures
}

/// The thresholds the fault campaign runs with (a quarter of the defaults:
/// its hands play four times faster than real time).
fn quick() -> Config {
    Config {
        release_ms: 75,
        flicker_ms: 37,
        irregular_ms: 500,
        ..Config::default()
    }
}

fn seeds() -> u64 {
    std::env::var("WHEN_ASKED_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40)
}

/// Every game of `seeds` decides the same whenever the core is asked.
fn all_equal(seeds: std::ops::Range<u64>, style: Style, flip: f64, cfg: &Config) {
    let failures = campaign(seeds, style, flip, cfg);
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_clean_line_decides_the_same_whenever_the_core_is_asked() {
    all_equal(0..seeds(), Style::default(), 0.0, &Config::default());
}

#[test]
fn a_noisy_line_decides_the_same_whenever_the_core_is_asked() {
    all_equal(0..seeds(), Style::default(), 0.01, &Config::default());
}

#[test]
fn blitz_decides_the_same_whenever_the_core_is_asked() {
    all_equal(0..seeds(), Style::blitz(), 0.005, &Config::default());
}

#[test]
fn a_noisy_line_at_the_campaign_s_pace_decides_the_same_whenever_the_core_is_asked() {
    all_equal(100..100 + seeds(), Style::default(), 0.01, &quick());
}
