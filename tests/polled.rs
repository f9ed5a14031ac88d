//! A board read by dumps once a second (as some software polls it instead of using
//! update mode) gives the same game as the same board in update mode, and no move
//! that was not played. Every standard game of `tests/data/games/` is played by
//! simulated hands; the update-mode log is turned into the dumps a poller would
//! have read each second, and both logs are replayed through the rules core.

use crate::common;

use common::pgn_games;
use eboard_bridge::board::Orientation;
use eboard_bridge::log::SensorLog;
use eboard_bridge::output::replay;
use eboard_bridge::rules::{Config, EventKind};
use eboard_bridge::sim::{Hands, Style};
use shakmaty::{Chess, Move, Position};

fn update_log(start: &Chess, moves: &[Move], seed: u64, quick: bool) -> SensorLog {
    let style = if quick {
        // Blitz hands: two plies often fall between two polls.
        Style {
            clock: false,
            think_ms: (400, 1200),
            step_ms: (60, 150),
            retouch: 0,
            ..Style::default()
        }
    } else {
        Style {
            clock: false,
            ..Style::default()
        }
    };
    let mut hands = Hands::new(seed, style, Orientation::Normal);
    hands.board(start.board());
    common::played_log(hands, start, moves, 3000)
}

fn moves_of(log: &SensorLog) -> (Vec<String>, usize, usize) {
    let r = replay::run(log, "polled", Config::default(), None).unwrap();
    let moves = common::replayed::recorded_ucis(&r);
    let inferred = r
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Move { inferred: true, .. }))
        .count();
    let irregular = r
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Irregular { .. }))
        .count();
    (moves, inferred, irregular)
}

#[test]
fn a_board_polled_once_a_second_gives_the_same_game_as_update_mode() {
    let (games, plies, inferred) = every_game(false);
    assert!(games >= 40, "only {games} games");
    println!(
        "human pace: {games} games, {plies} plies, {inferred} found between two dumps (marked inferred)"
    );
}

#[test]
fn at_blitz_pace_two_plies_between_polls_are_found_and_marked() {
    let (games, plies, inferred) = every_game(true);
    assert!(inferred > 0, "no two plies ever fell between two polls");
    println!(
        "blitz pace: {games} games, {plies} plies, {inferred} found between two dumps (marked inferred)"
    );
}

/// Plays every standard game both ways; (games, plies, moves inferred).
fn every_game(quick: bool) -> (usize, usize, usize) {
    let mut games = 0;
    let mut plies = 0;
    let mut inferred_total = 0;
    for file in common::STANDARD_GAME_FILES {
        for (k, g) in pgn_games(file).into_iter().enumerate() {
            if g.mode != shakmaty::CastlingMode::Standard || g.start != Chess::default() {
                continue;
            }
            let log = update_log(&g.start, &g.moves, 100 + k as u64, quick);
            let (by_updates, _, _) = moves_of(&log);
            let (by_dumps, inferred, irregular) = moves_of(&common::polled(&log));
            let truth: Vec<String> = g
                .moves
                .iter()
                .map(|m| shakmaty::uci::UciMove::from_standard(*m).to_string())
                .collect();
            assert_eq!(by_updates, truth, "{file} game {}: update mode", k + 1);
            assert_eq!(by_dumps, truth, "{file} game {}: polled", k + 1);
            assert_eq!(
                irregular,
                0,
                "{file} game {}: irregularities on a clean polled game",
                k + 1
            );
            games += 1;
            plies += truth.len();
            inferred_total += inferred;
        }
    }
    (games, plies, inferred_total)
}
