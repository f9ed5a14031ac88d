//! What two real LiveChess clients make of the feed, written from their
//! descriptions (`docs/NETWORK.md`, "LiveChess clients"), over both real
//! captures and the demo game, with the rules core at its real thresholds:
//! - the Node client (lichess-dgt-boards' board manager) takes the last `san`
//!   entry of every push and plays it when it is legal;
//! - lichess's DGT page skips an empty list and a list equal to the last one it
//!   handled, and takes the list's growth as the new moves.
//!
//! Each must see every ply of the game in order and no move nobody made. The
//! one exception allowed is the demo's take-back of a completed move (3. Nf3,
//! clock pressed, knight home, then 3. Bc4): a list that shrinks is real, and
//! neither client handles it (the test says where).

use crate::common;

use eboard_bridge::api::Snapshot;
use eboard_bridge::log::{Player, SensorLog};
use eboard_bridge::net::livechess::{LiveBoard, LiveSession};
use eboard_bridge::rules::{Config, Core, Pinned};
use eboard_bridge::session::Judge;
use serde_json::Value;
use shakmaty::san::San;
use shakmaty::{Chess, Position};

/// A client's view of the game: its position and the moves it played.
struct Client {
    pos: Chess,
    played: Vec<String>,
    /// Entries it could not play (illegal in its position).
    refused: Vec<String>,
}

impl Client {
    fn new() -> Client {
        Client {
            pos: Chess::default(),
            played: Vec::new(),
            refused: Vec::new(),
        }
    }

    fn play(&mut self, san: &str) {
        match san.parse::<San>().ok().and_then(|s| s.to_move(&self.pos).ok()) {
            Some(m) => {
                self.pos.play_unchecked(m);
                self.played.push(san.to_string());
            }
            None => self.refused.push(san.to_string()),
        }
    }
}

/// The Node client: the last entry of every push that has `san`.
fn node(client: &mut Client, push: &Value) {
    if let Some(last) = push["param"]["san"].as_array().and_then(|l| l.last()) {
        client.play(last.as_str().unwrap_or_default());
    }
}

/// Lichess's page: the list's growth, a repeated or empty list skipped.
fn lichess(client: &mut Client, last: &mut Vec<String>, push: &Value) {
    let Some(list) = push["param"]["san"].as_array() else {
        return;
    };
    let list: Vec<String> = list
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect();
    if list.is_empty() || list == *last {
        return;
    }
    let new = list.len().saturating_sub(last.len());
    for san in &list[list.len() - new..] {
        client.play(san);
    }
    *last = list;
}

/// The feed's pushes (parsed) for a log played through the rules core, a
/// snapshot made after every step as the daemon makes it, each at its log time;
/// and the game's moves at the end.
fn pushes(log: &SensorLog, name: &str) -> (Vec<Value>, Vec<String>) {
    let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
    let steps = Player::play_log(log, name).expect("the log plays");
    let mut judge = Judge::new(Core::new(Config::default()), Pinned::default());
    let mut session = LiveSession::default();
    let view = |core: &Core| {
        let game = core.game();
        let orientation = game.map_or(eboard_bridge::board::Orientation::Normal, |g| g.orientation);
        LiveBoard {
            id: "dgt_1".into(),
            snapshot: Snapshot {
                connected: true,
                device: "/dev/eboard/dgt_1".into(),
                serial_number: "1".into(),
                fen: game.map(|g| g.fen()).unwrap_or_default(),
                moves: game
                    .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
                    .unwrap_or_default(),
                settled: game.map_or(0, |g| g.settled_plies()),
                start_fen: game.map_or_else(|| start.to_string(), |g| g.start_fen.clone()),
                placement: orientation.real_board(core.sensors()).to_string(),
                ..Snapshot::default()
            },
        }
    };
    let mut frames = session.call(
        r#"{"id":1,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":"1"}}}"#,
        &[view(judge.core())],
        0,
    );
    frames.extend(session.call(
        &format!(
            r#"{{"id":2,"call":"call","param":{{"id":1,"method":"setup","param":{{"fen":"{start}"}}}}}}"#
        ),
        &[view(judge.core())],
        0,
    ));
    for step in &steps {
        let ms = step.time.micros() / 1000;
        // The core's deadlines and the feed's settling, in time order, as the
        // daemon's timers wake them.
        loop {
            let core_at = judge
                .core()
                .next_deadline()
                .filter(|us| *us <= step.time.micros());
            let feed_at = session.next_deadline().filter(|at| *at <= ms);
            match (core_at, feed_at) {
                (Some(us), Some(at)) if us > at * 1000 => {
                    let v = view(judge.core());
                    frames.extend(session.pushes(|_| Some(v.clone()), at));
                }
                (Some(us), _) => {
                    judge.advance(us);
                    let v = view(judge.core());
                    frames.extend(session.pushes(|_| Some(v.clone()), us / 1000));
                }
                (None, Some(at)) => {
                    let v = view(judge.core());
                    frames.extend(session.pushes(|_| Some(v.clone()), at));
                }
                (None, None) => break,
            }
        }
        judge.step(step);
        let v = view(judge.core());
        frames.extend(session.pushes(|_| Some(v.clone()), ms));
    }
    judge.finish_with([]);
    let end = steps.last().map_or(0, |s| s.time.micros() / 1000) + 60_000;
    let v = view(judge.core());
    frames.extend(session.pushes(|_| Some(v.clone()), end));
    let moves = judge
        .core()
        .games()
        .last()
        .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
        .unwrap_or_default();
    let parsed = frames
        .iter()
        .map(|f| serde_json::from_str::<Value>(f).expect("a frame is JSON"))
        .filter(|v| v["response"] == "feed")
        .collect();
    (parsed, moves)
}

/// Both clients over a log: the moves each played, and what each refused.
fn clients(log: &SensorLog, name: &str) -> (Client, Client, Vec<String>, usize) {
    let (pushes, moves) = pushes(log, name);
    let (mut a, mut b) = (Client::new(), Client::new());
    let mut last = Vec::new();
    for p in &pushes {
        node(&mut a, p);
        lichess(&mut b, &mut last, p);
    }
    (a, b, moves, pushes.len())
}

/// SAN as a client compares it: without check marks.
fn plain(moves: &[String]) -> Vec<String> {
    moves
        .iter()
        .map(|m| m.trim_end_matches(['+', '#']).to_string())
        .collect()
}

#[test]
fn both_clients_follow_both_real_captures_exactly() {
    for name in ["1", "2"] {
        let log = eboard_bridge::log::read_log(&common::data(&format!("captures/{name}.esl")))
            .expect("the capture");
        let (node, lichess, moves, pushes) = clients(&log, name);
        let expected = common::uci_moves(&format!("captures/{name}.uci")).len();
        assert_eq!(moves.len(), expected, "capture {name}: the record itself");
        for (who, c) in [("node", &node), ("lichess", &lichess)] {
            assert_eq!(
                plain(&c.played),
                plain(&moves),
                "capture {name}, the {who} client: every ply in order (refused {:?})",
                c.refused
            );
            assert!(
                c.refused.is_empty(),
                "capture {name}, {who}: refused {:?}",
                c.refused
            );
        }
        eprintln!(
            "capture {name}: {pushes} pushes, {} plies, both clients exact",
            moves.len()
        );
    }
}

#[test]
fn both_clients_follow_the_demo_game_but_for_its_take_back() {
    let log = eboard_bridge::demo::demo_log();
    let (node, lichess, moves, _) = clients(&log, "demo");
    // The demo's 3. Nf3 was completed by the clock, then taken back and 3. Bc4
    // played: the list shrank, which neither client handles. Each has Nf3 where
    // the game has Bc4, from ply 5 on; before it, and the plies count, agree.
    let ply = moves.iter().position(|m| m == "Bc4").expect("3. Bc4 in the demo");
    assert_eq!(ply, 4);
    for (who, c) in [("node", &node), ("lichess", &lichess)] {
        assert_eq!(
            plain(&c.played[..ply]),
            plain(&moves[..ply]),
            "the demo, {who}: the plies before the take-back"
        );
        assert_eq!(
            c.played[ply], "Nf3",
            "the demo, {who}: the move taken back is what it kept"
        );
    }
    // What the feed sent, as lichess's list: every ply of the game in order, the
    // take-back the only list that shrank.
    let (pushes, _) = pushes(&log, "demo");
    let lists: Vec<Vec<String>> = pushes
        .iter()
        .filter_map(|p| p["param"]["san"].as_array())
        .map(|l| {
            l.iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .collect();
    let shrinks = lists.windows(2).filter(|w| w[1].len() < w[0].len()).count();
    assert_eq!(shrinks, 1, "one list shrank: the take-back of a completed move");
    assert_eq!(lists.last(), Some(&moves), "the last list is the game");
    for w in lists.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if b.len() >= a.len() {
            assert!(b.starts_with(a), "an entry replaced: {a:?} then {b:?}");
        }
    }
}
