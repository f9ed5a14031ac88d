//! The rules core end to end: real captures, and every real game of
//! `../shared/games` played into sensor events the way hands play them.

mod common;

use std::process::Command;

use common::{pgn_games, shared, uci_moves};
use eboard_bridge::board::Orientation;
use eboard_bridge::log::{Header, SensorLog};
use eboard_bridge::output::replay;
use eboard_bridge::rules::{Config, EventKind};
use eboard_bridge::sim::{Hands, Style};
use shakmaty::Position;

#[test]
fn captures_replay_to_exactly_their_moves() {
    for name in ["1", "2"] {
        let out = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .args(["replay", "--format", "uci"])
            .arg(shared(&format!("captures/{name}.esl")))
            .output()
            .unwrap();
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

/// Plays a game as hands would and replays it; returns the events.
fn hands_replay(
    game: &common::PgnGame,
    seed: u64,
    style: Style,
    orientation: Orientation,
) -> Vec<eboard_bridge::rules::Event> {
    let mut hands = Hands::new(seed, style, orientation);
    hands.board(game.start.board());
    hands.set_clock(eboard_bridge::protocol::ClockTime::from_hms(1, 30, 0).unwrap());
    let mut pos = game.start.clone();
    for mv in &game.moves {
        hands.play(&pos, mv);
        pos.play_unchecked(*mv);
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
    r.events
}

#[test]
fn every_shared_game_played_by_hands_replays_exactly() {
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
                assert!(events.iter().any(|e| matches!(&e.kind, EventKind::GameStart { orientation: o, .. } if *o == orientation.name())));
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
