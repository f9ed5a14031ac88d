//! The invariants a round must keep, as functions from what the simulated hands
//! and the arbiter really did (`Truth`) and what the daemon showed (`Seen`) to
//! the failures found. Each is shown able to fail by a test below that feeds it
//! the defect it guards against.

use std::collections::BTreeMap;

use shakmaty::{Chess, Move};

use super::common::played::same_game_modulo_order;
use super::common::sans;

/// What really happened on one board.
pub struct Truth {
    pub board: u32,
    pub start: Chess,
    pub moves: Vec<Move>,
    /// The result the game must end with: the board's forced end, or the one the
    /// arbiter gave, else `*`.
    pub result: String,
    /// Each player's own tags by name (`Elo`, `FideId`).
    pub players: BTreeMap<String, BTreeMap<&'static str, String>>,
    /// The arbiter's decisions accepted (`ctl` exit 0), by journal method name.
    pub decisions: BTreeMap<String, usize>,
    /// Who plays White and who Black, as the pairings and the arbiter's
    /// accepted `SetPlayers` say (`None`: a change came too near the game's
    /// first move to know which game it named).
    pub colours: Option<(String, String)>,
    /// The plies (0-based) before which the mover touched another of its
    /// pieces that could move and put it back (Art. 4.3.1).
    pub touched: Vec<usize>,
}

/// What the daemon showed of one board.
#[derive(Default, Clone)]
pub struct Seen {
    /// Each game file of the board in the round's folder: its name and text.
    pub files: Vec<(String, String)>,
    /// Per ply of the truth, how many of its lifts and placements reached the
    /// daemon while it knew the board, of all (`played::seen_per_ply`).
    pub touches: Vec<(usize, usize)>,
    /// The recording's `arbiter` records, by method.
    pub journaled: BTreeMap<String, usize>,
    /// The board's D-Bus `Status`, `White`, `Black` and `Result` after the last
    /// restart.
    pub bus: BTreeMap<&'static str, String>,
    /// `replay --format pgn` of the board's recording.
    pub replayed: String,
    /// The recording's events (`replay --format jsonl`) whose type is
    /// `irregular`, `resolved`, `move` (`inferred_move` for one found across a
    /// gap), `game_end` or `game_start`, in order.
    pub alarms: Vec<String>,
    /// The recording's events that change a game's record, in order, with the
    /// ply each names: `move` (its ply), `takeback` (the ply it goes back to),
    /// `move_amended` (its ply), `game_start` (0), and the arbiter's decisions
    /// that set the record (`arbiter`, 0: `NewGame`, `SetPosition`,
    /// `Reinstate`, `Undo`).
    pub record: Vec<(String, u32)>,
    /// Whether the round's events say `lost_track`.
    pub lost_track: bool,
    /// The recording's `touch_move` events: (side, article, the move played).
    pub touch_moves: Vec<(String, String, String)>,
}

/// The `touch_move` events of a `replay --format jsonl`: (side, article, the
/// move played).
pub fn touch_move_events(jsonl: &str) -> Vec<(String, String, String)> {
    jsonl
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "touch_move")
        .map(|e| {
            let field = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (field("side"), field("article"), field("played"))
        })
        .collect()
}

/// Each ply before which the mover touched another of its pieces that could
/// move and put it back, seen whole (every touch of it reached the daemon)
/// and recorded as seen, has its `touch_move` (Art. 4.3.1) for the mover and
/// that move: a player's touch is reported, not lost (issue 62). The move's
/// own touches may make a more precise article the one that applies: for a
/// castling the king and a rook's (seed 912: h1's rook touched and put back,
/// then 19. O-O-O, said under 4.4.1 with O-O legal), for a capture the
/// captured piece's (seed 971: e7's pawn touched, then f6's knight taken by
/// the d7 knight, said under 4.3.3: exf6 was the capture the touches asked).
fn touch_moves_said(t: &Truth, s: &Seen, published: &[String], marked: &[bool]) -> Vec<String> {
    let truth = sans(&t.start, &t.moves);
    t.touched
        .iter()
        .filter(|&&p| {
            s.touches.get(p).is_some_and(|&(seen, all)| seen == all && all > 0)
                && published.get(p) == truth.get(p)
                && marked.get(p) == Some(&false)
        })
        .filter(|&&p| {
            let side = if (p % 2 == 0) == shakmaty::Position::turn(&t.start).is_white() {
                "white"
            } else {
                "black"
            };
            !s.touch_moves
                .iter()
                .any(|(who, article, played)| {
                    who == side
                        && (article == "4.3.1"
                            || (truth[p].starts_with("O-O") && article.starts_with("4.4."))
                            || (truth[p].contains('x') && article == "4.3.3"))
                        && *played == truth[p]
                })
        })
        .map(|&p| {
            format!(
                "ply {} ({}): the mover touched another of its pieces that could move and put it back, and no touch_move (4.3.1) was said",
                p + 1,
                truth[p]
            )
        })
        .collect()
}

/// The events of a `replay --format jsonl` that [`Seen::record`] keeps.
pub fn record_events(jsonl: &str) -> Vec<(String, u32)> {
    const SETS_RECORD: [&str; 4] = ["NewGame", "SetPosition", "Reinstate", "Undo"];
    jsonl
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| {
            let kind = e["type"].as_str()?;
            let ply = |field: &str| e[field].as_u64().map(|p| p as u32);
            match kind {
                "move" | "move_amended" => Some((kind.to_string(), ply("ply")?)),
                "takeback" => Some((kind.to_string(), ply("to_ply")?)),
                "game_start" => Some((kind.to_string(), 0)),
                "arbiter" if SETS_RECORD.contains(&e["method"].as_str()?) => Some((kind.to_string(), 0)),
                _ => None,
            }
        })
        .collect()
}

/// A PGN game's tag value.
pub fn tag(pgn: &str, name: &str) -> Option<String> {
    let head = format!("[{name} \"");
    pgn.lines()
        .find_map(|l| l.strip_prefix(&head).and_then(|v| v.strip_suffix("\"]")))
        .map(str::to_string)
}

/// The movetext of a PGN game (what follows its tags), blank lines trimmed.
pub fn movetext(pgn: &str) -> String {
    pgn.lines()
        .filter(|l| !l.starts_with('[') && !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The one honest way for a record to stop short of the game: a gap whose
/// plies went round a cycle no board showed, or took a piece out and home
/// (the board after them is a position the record holds, the same side to
/// move; or a piece's trip no board shows among them: a piece out and home
/// again, taking nothing, with the other side's moves between), which no
/// board can tell from any other such cycle; the daemon says `lost_track` and
/// records no more until an arbiter sets the position (RELIABILITY, "Known
/// limits"; the classes accept the same). So: the record the game as played
/// up to its last ply, `lost_track` said, and after it, in plies none of
/// whose touches reached the daemon, the game back on a position the record
/// holds.
pub fn lost_over_a_cycle(t: &Truth, s: &Seen, published: &[String]) -> bool {
    use shakmaty::Position;
    let n = published.len();
    let truth = sans(&t.start, &t.moves);
    if !s.lost_track || n >= truth.len() || truth[..n] != *published {
        return false;
    }
    let key = |p: &Chess| shakmaty::fen::Epd::from_position(p, shakmaty::EnPassantMode::Legal).to_string();
    let mut positions = vec![t.start.clone()];
    for m in &t.moves {
        let mut next = positions.last().expect("a position").clone();
        next.play_unchecked(*m);
        positions.push(next);
    }
    let recorded: Vec<String> = positions[..=n].iter().map(key).collect();
    // The plies after the record, while none of them reached the daemon:
    // back on a position the record holds, or with a piece that went out
    // and came home among them (13. Nh4 g5 14. Nhf3 while the daemon
    // restarted, seed 739: the board shows g5 alone, which no ply of Black's
    // reaches with White to move; a trip no board shows, the gaps class's
    // `lost_track` too).
    let unseen: Vec<usize> = (n + 1..=t.moves.len())
        .take_while(|j| s.touches.get(j - 1).is_some_and(|&(seen, _)| seen == 0))
        .collect();
    unseen.iter().any(|&j| recorded.contains(&key(&positions[j])))
        || unseen
            .iter()
            .any(|&j| eboard_bridge::rules::round_trip(positions[n].board(), &t.moves[n..j]))
}

/// Every failure of the board's round.
pub fn judge(t: &Truth, s: &Seen) -> Vec<String> {
    let mut failures = Vec::new();
    let mut fail = |m: String| failures.push(format!("board {}: {m}", t.board));
    // No game that the hands did not play, none lost, replaced or split.
    let [(name, pgn)] = s.files.as_slice() else {
        let names: Vec<&str> = s.files.iter().map(|(n, _)| n.as_str()).collect();
        fail(format!(
            "{} game files ({names:?}) for the one game played",
            s.files.len()
        ));
        return failures;
    };
    let published = super::common::pgn_moves(pgn)
        .into_iter()
        .next()
        .unwrap_or_default();
    let marked = super::common::played::inferred_marks(pgn);
    // Every published ply was shown by the board, or lies inside a gap.
    if !same_game_modulo_order(&t.start, &t.moves, &published, &marked)
        && !lost_over_a_cycle(t, s, &published)
    {
        fail(format!(
            "{name} publishes {published:?}\n  the hands played {:?}",
            sans(&t.start, &t.moves)
        ));
    }
    // No ply shown whole is marked inferred; none never shown is unmarked.
    if published.len() == s.touches.len() && marked.len() == published.len() {
        for (ply, (&(seen, all), &inferred)) in s.touches.iter().zip(&marked).enumerate() {
            if seen == all && all > 0 && inferred {
                fail(format!(
                    "ply {} ({}) reached the daemon whole but is marked inferred",
                    ply + 1,
                    published[ply]
                ));
            }
            if seen == 0 && all > 0 && !inferred {
                fail(format!(
                    "ply {} ({}) never reached the daemon but is not marked inferred",
                    ply + 1,
                    published[ply]
                ));
            }
        }
    }
    for f in touch_moves_said(t, s, &published, &marked) {
        fail(f);
    }
    // No ply published is withdrawn without a word: a move adds the ply after
    // the record's last; one that would replace plies comes after a
    // `takeback` (or is a `move_amended`), and the game file has every ply
    // the events left standing (issue 62: six plies invented, then dropped).
    let mut standing: Option<u32> = None;
    for (kind, ply) in &s.record {
        match kind.as_str() {
            "move" => {
                if let Some(last) = standing.filter(|last| ply <= last) {
                    fail(format!(
                        "ply {ply} published over the record's {last} plies: plies {ply}-{last} withdrawn without a word"
                    ));
                }
                standing = Some(*ply);
            }
            "takeback" => standing = Some(*ply),
            "move_amended" => {}
            _ => standing = None,
        }
    }
    if let Some(last) = standing.filter(|last| published.len() < *last as usize) {
        fail(format!(
            "{name} has {} plies, the recording published {last}: plies withdrawn without a word",
            published.len()
        ));
    }
    let result = tag(pgn, "Result").unwrap_or_default();
    if result != t.result {
        fail(format!("{name}: result {result}, not {}", t.result));
    }
    // Every decision accepted is in the journal, the PGN and on D-Bus.
    for (method, n) in &t.decisions {
        let got = s.journaled.get(method).copied().unwrap_or(0);
        if got < *n {
            fail(format!("{n} {method} accepted, {got} in the journal"));
        }
    }
    // The round's results table (`ctl results --format csv`) says the
    // PGN's result (issue 57: a new game erased a round's 1-0 there).
    if let Some(listed) = s.bus.get("ResultsTable") {
        let in_pgn = tag(pgn, "Result").unwrap_or_default();
        if *listed != in_pgn {
            fail(format!(
                "the results table says {listed:?}, the PGN's Result {in_pgn:?}"
            ));
        }
    }
    // No door made a decision that needed confirming without it: every new
    // game journaled was a call accepted (the campaign never confirms one).
    let asked = t.decisions.get("NewGame").copied().unwrap_or(0);
    let made = s.journaled.get("NewGame").copied().unwrap_or(0);
    if made > asked {
        fail(format!(
            "{made} NewGame in the journal, {asked} accepted: a door made one unconfirmed"
        ));
    }
    let moved_on = s.bus.contains_key(super::round::MOVED_ON);
    for (prop, tagname) in [("White", "White"), ("Black", "Black"), ("Result", "Result")] {
        if moved_on {
            break;
        }
        let on_bus = s.bus.get(prop).cloned().unwrap_or_default();
        let in_pgn = tag(pgn, tagname).unwrap_or_default();
        if on_bus != in_pgn {
            fail(format!("D-Bus {prop} is {on_bus:?}, the PGN's {in_pgn:?}"));
        }
    }
    // Who plays which colour is what the pairings and the arbiter said, across
    // restarts (issue 62: a `SetPlayers` lost on resume passed unless a later
    // rating call showed it).
    if let Some((white, black)) = &t.colours {
        let shown = (
            tag(pgn, "White").unwrap_or_default(),
            tag(pgn, "Black").unwrap_or_default(),
        );
        if (&shown.0, &shown.1) != (white, black) {
            fail(format!(
                "{name} says White {:?}, Black {:?}; the pairings and the arbiter's decisions say White {white:?}, Black {black:?}",
                shown.0, shown.1
            ));
        }
    }
    // Tags follow their player.
    for colour in ["White", "Black"] {
        let player = tag(pgn, colour).unwrap_or_default();
        let Some(own) = t.players.get(&player) else {
            fail(format!("{colour} is {player:?}, no player of this board"));
            continue;
        };
        for (suffix, value) in own {
            let got = tag(pgn, &format!("{colour}{suffix}")).unwrap_or_default();
            if &got != value {
                fail(format!(
                    "{colour} {player:?} shown with {colour}{suffix} {got:?}, theirs is {value:?}"
                ));
            }
        }
    }
    // Every alarm raised is cleared once its cause is gone: after each
    // irregularity, what comes first of its resolution, the game's end or a new
    // game, and a move seen, is not the move (the alarm of issue 47, 4 stayed up
    // over the moves that followed), and the last one is cleared. Moves found
    // across a gap (`inferred`) may come before the resolution: finding them is
    // how a lost track is resolved.
    for (i, _) in s.alarms.iter().enumerate().filter(|(_, a)| *a == "irregular") {
        let next = s.alarms[i + 1..]
            .iter()
            .find(|b| *b != "irregular" && *b != "inferred_move");
        match next.map(String::as_str) {
            Some("resolved" | "game_end" | "game_start") => {}
            other => {
                fail(format!(
                    "an irregularity (event {}) is never cleared: followed by {other:?}",
                    i + 1
                ));
                break;
            }
        }
    }
    if s.bus.get("Status").map(String::as_str) == Some("irregular") {
        fail("still shown irregular on D-Bus after the game".into());
    }
    // `replay` of the recording gives what was published live.
    // Its last game (a board's recording holds every round's games).
    let replayed = s
        .replayed
        .rsplit_once("\n\n[")
        .map_or(s.replayed.clone(), |(_, last)| format!("[{last}"));
    if movetext(&replayed) != movetext(pgn) {
        fail(format!(
            "replay of the recording gives\n{}\n  live:\n{}",
            movetext(&replayed),
            movetext(pgn)
        ));
    }
    failures
}

/// The results of a round's `games.pgn`, by its games' `Board` tag.
pub fn results_by_board(games_pgn: &str) -> BTreeMap<String, String> {
    games_pgn
        .split("[Event ")
        .filter_map(|game| Some((tag(game, "Board")?, tag(game, "Result")?)))
        .collect()
}

/// Round `round` kept whole once the next round began: every file of its
/// folder as it was when the round ended (`before`: nothing lost, changed or
/// renumbered), no file more, its `games.pgn`'s results those of the results
/// table read at its end (`bus`, each board's `ResultsTable`), and the results
/// table asked for it now (`table`: `ctl results --round N --format csv`, or
/// what its refusal said) the same, or pointing to the folder.
pub fn round_kept(
    round: u32,
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
    bus: &[BTreeMap<&'static str, String>],
    table: &Result<String, String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for (name, text) in before {
        match after.get(name) {
            None => failures.push(format!(
                "round-{round}/{name} lost once round {} began",
                round + 1
            )),
            Some(now) if now != text => failures.push(format!(
                "round-{round}/{name} changed once round {} began:\n  before:\n{}\n  after:\n{}",
                round + 1,
                movetext(text),
                movetext(now)
            )),
            Some(_) => {}
        }
    }
    for name in after.keys().filter(|n| !before.contains_key(*n)) {
        failures.push(format!(
            "round-{round}/{name} appeared once round {} began: no game of round {round} was played then",
            round + 1
        ));
    }
    let results = results_by_board(after.get("games.pgn").map_or("", String::as_str));
    for (i, props) in bus.iter().enumerate() {
        let n = (i + 1).to_string();
        let listed = props.get("ResultsTable").cloned().unwrap_or_default();
        let filed = results.get(&n).cloned().unwrap_or_else(|| "(no game)".into());
        if filed != listed {
            failures.push(format!(
                "round-{round}/games.pgn gives board {n} {filed}, the results table said {listed} at the round's end"
            ));
        }
        match table {
            Ok(text) => {
                let now = text
                    .lines()
                    .skip(1)
                    .find(|l| l.split(',').next() == Some(n.as_str()))
                    .and_then(|l| l.rsplit(',').next())
                    .unwrap_or("(no line)");
                if now != listed {
                    failures.push(format!(
                        "the results table of round {round} gives board {n} {now} once round {} began, {listed} at its end",
                        round + 1
                    ));
                }
            }
            Err(said) if !said.contains(&format!("round-{round}/")) => failures.push(format!(
                "the results table of round {round} refused once round {} began without saying where it is: {said}",
                round + 1
            )),
            Err(_) => {}
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The game 1. e4 e5 2. Nf3 as the hands played it and the daemon published
    /// it, its decisions, tags and alarms all in order: no failure.
    fn good() -> (Truth, Seen) {
        let start = Chess::default();
        let moves = super::super::moves_of(&start, &["e4", "e5", "Nf3"]);
        let mut players = BTreeMap::new();
        players.insert("A, Ann".to_string(), [("Elo", "2100".to_string())].into());
        players.insert("B, Bob".to_string(), [("Elo", "2200".to_string())].into());
        let truth = Truth {
            board: 1,
            start,
            moves,
            result: "1/2-1/2".into(),
            players,
            decisions: [("SetResult".to_string(), 1)].into(),
            colours: Some(("A, Ann".into(), "B, Bob".into())),
            touched: vec![2],
        };
        let pgn = "[Event \"E\"]\n[White \"A, Ann\"]\n[Black \"B, Bob\"]\n[Result \"1/2-1/2\"]\n[WhiteElo \"2100\"]\n[BlackElo \"2200\"]\n\n1. e4 e5 2. Nf3 1/2-1/2\n";
        let seen = Seen {
            files: vec![("game-1.pgn".into(), pgn.into())],
            touches: vec![(2, 2), (2, 2), (2, 2)],
            journaled: [("SetResult".to_string(), 1)].into(),
            bus: [
                ("Status", "finished".to_string()),
                ("White", "A, Ann".to_string()),
                ("Black", "B, Bob".to_string()),
                ("Result", "1/2-1/2".to_string()),
                ("ResultsTable", "1/2-1/2".to_string()),
            ]
            .into(),
            replayed: format!("[Event \"?\"]\n\n{}", movetext(pgn)),
            alarms: vec![
                "game_start".into(),
                "irregular".into(),
                "resolved".into(),
                "move".into(),
            ],
            record: vec![
                ("game_start".into(), 0),
                ("move".into(), 1),
                ("move".into(), 2),
                ("takeback".into(), 1),
                ("move".into(), 2),
                ("move".into(), 3),
            ],
            lost_track: false,
            touch_moves: vec![("white".into(), "4.3.1".into(), "Nf3".into())],
        };
        (truth, seen)
    }

    /// A touch of another piece before a move seen whole with no
    /// `touch_move` said fails (or one for the other side, another article
    /// or another move); a ply not seen whole, or inferred, is not judged.
    #[test]
    fn a_touch_move_never_said_fails() {
        let (t, mut s) = good();
        assert!(judge(&t, &s).is_empty());
        for said in [
            vec![],
            vec![("black".to_string(), "4.3.1".to_string(), "Nf3".to_string())],
            vec![("white".to_string(), "4.3.2".to_string(), "Nf3".to_string())],
            vec![("white".to_string(), "4.3.1".to_string(), "e5".to_string())],
            // A castling's articles say it only for a castling, a
            // capture's only for a capture.
            vec![("white".to_string(), "4.4.1".to_string(), "Nf3".to_string())],
            vec![("white".to_string(), "4.3.3".to_string(), "Nf3".to_string())],
        ] {
            s.touch_moves = said;
            let f = judge(&t, &s);
            assert!(
                f.iter().any(|f| f.contains("no touch_move (4.3.1) was said")),
                "{:?}: {f:?}",
                s.touch_moves
            );
        }
        s.touch_moves = Vec::new();
        s.touches[2] = (1, 2);
        assert!(judge(&t, &s).is_empty(), "a ply not seen whole is not judged");
    }

    /// A record stopped short: `lost_track` over a gap that went round a
    /// cycle no board showed passes (seed 557: Bf6 Be3 Bg7 unseen, the board
    /// back on the position after Bg7); the same record with any of those
    /// plies seen, with no cycle, or with no `lost_track` fails.
    #[test]
    fn a_record_stopped_short_passes_only_over_an_unseen_cycle_said_lost() {
        let (mut t, mut s) = good();
        t.moves = super::super::moves_of(&t.start, &["e4", "e5", "Nf3", "Nf6", "Ng1", "Ng8", "Nc3"]);
        s.touches = vec![(2, 2), (2, 2), (2, 2), (0, 2), (0, 2), (0, 2), (2, 2)];
        s.lost_track = true;
        let published: Vec<String> = ["e4", "e5", "Nf3"].map(String::from).into();
        assert!(lost_over_a_cycle(&t, &s, &published));
        let mut seen = s.clone();
        seen.touches[4] = (2, 2);
        assert!(
            !lost_over_a_cycle(&t, &seen, &published),
            "a ply of the cycle seen"
        );
        let mut unsaid = s.clone();
        unsaid.lost_track = false;
        assert!(!lost_over_a_cycle(&t, &unsaid, &published), "no lost_track");
        let short: Vec<String> = ["e4", "e5"].map(String::from).into();
        let (mut t2, mut s2) = (t, s);
        t2.moves = super::super::moves_of(&t2.start, &["e4", "e5", "Nf3", "Nc6", "Bb5"]);
        s2.touches = vec![(2, 2), (2, 2), (0, 2), (0, 2), (2, 2)];
        assert!(!lost_over_a_cycle(&t2, &s2, &short), "no cycle after the record");
        // A piece's trip among the unseen plies, the board on no position the
        // record holds (seed 739: 13. Nh4 g5 14. Nhf3): stopped short honestly;
        // with the trip's ply seen, not.
        let (mut t4, mut s4) = good();
        t4.moves = super::super::moves_of(&t4.start, &["e4", "e5", "Nf3", "Nc6", "Ng5", "d6", "Nf3", "Be7"]);
        s4.touches = vec![(2, 2), (2, 2), (2, 2), (2, 2), (0, 2), (0, 2), (0, 2), (2, 2)];
        s4.lost_track = true;
        let four: Vec<String> = ["e4", "e5", "Nf3", "Nc6"].map(String::from).into();
        assert!(lost_over_a_cycle(&t4, &s4, &four), "a knight's trip unseen");
        s4.touches[4] = (2, 2);
        assert!(!lost_over_a_cycle(&t4, &s4, &four), "the trip's first ply seen");
        // And through `judge`: the short record over the cycle is no failure
        // of the moves; without `lost_track` it is.
        let (mut t3, mut s3) = good();
        t3.moves = super::super::moves_of(&t3.start, &["e4", "e5", "Nf3", "Nf6", "Ng1", "Ng8", "Nc3"]);
        s3.touches = vec![(2, 2), (2, 2), (2, 2), (0, 2), (0, 2), (0, 2), (2, 2)];
        s3.lost_track = true;
        assert!(
            !judge(&t3, &s3).iter().any(|f| f.contains("publishes")),
            "{:?}",
            judge(&t3, &s3)
        );
        s3.lost_track = false;
        fails_with(&t3, &s3, "publishes");
    }

    fn fails_with(t: &Truth, s: &Seen, what: &str) {
        let f = judge(t, s);
        assert!(f.iter().any(|m| m.contains(what)), "{what:?} not in {f:?}");
    }

    /// The good round fails, saying `what`, once `change` is made to what was seen.
    fn fails_when(change: impl FnOnce(&mut Seen), what: &str) {
        let (t, mut s) = good();
        change(&mut s);
        fails_with(&t, &s, what);
    }

    #[test]
    fn a_round_as_played_passes() {
        let (t, s) = good();
        assert_eq!(judge(&t, &s), Vec::<String>::new());
        // A lost track resolved once the moves missed are found.
        let (t, mut s) = good();
        s.alarms = vec![
            "irregular".into(),
            "inferred_move".into(),
            "resolved".into(),
            "move".into(),
        ];
        assert_eq!(judge(&t, &s), Vec::<String>::new());
    }

    /// A results table that does not say the game's result (issue 57: an
    /// unconfirmed new game put `*` in place of a round's 1-0).
    #[test]
    fn a_results_table_that_differs_from_the_pgn_fails() {
        fails_when(
            |s| {
                s.bus.insert("ResultsTable", "*".into());
            },
            "the results table says",
        );
    }

    /// A new game a door made without the arbiter's confirmation (issue 57:
    /// raw D-Bus and MQTT took it), even one leaving the game file as it was.
    #[test]
    fn a_decision_made_unconfirmed_fails() {
        fails_when(
            |s| {
                s.journaled.insert("NewGame".into(), 1);
            },
            "a door made one unconfirmed",
        );
    }

    /// A phantom game after a restart (issue 47, 1).
    #[test]
    fn a_game_nobody_played_fails() {
        fails_when(
            |s| {
                s.files.push((
                    "game-1-2.pgn".into(),
                    "[Result \"*\"]\n\n1. e4 {inferred} e5 {inferred} *\n".into(),
                ));
            },
            "2 game files",
        );
    }

    /// A move invented, or one lost.
    #[test]
    fn a_move_the_board_did_not_show_fails() {
        fails_when(
            |s| s.files[0].1 = s.files[0].1.replace("2. Nf3", "2. Nc3"),
            "publishes",
        );
    }

    /// A ply seen whole marked inferred (issue 47, 2), and one never seen not.
    #[test]
    fn a_wrong_inferred_mark_fails() {
        fails_when(
            |s| s.files[0].1 = s.files[0].1.replace("e5 2.", "e5 {inferred} 2."),
            "reached the daemon whole but is marked inferred",
        );
        fails_when(|s| s.touches[1] = (0, 2), "never reached the daemon");
    }

    /// A decision lost by a restart: not journaled, or not on D-Bus.
    #[test]
    fn a_decision_lost_fails() {
        fails_when(|s| s.journaled.clear(), "SetResult accepted, 0 in the journal");
        fails_when(
            |s| {
                s.bus.insert("Result", "*".into());
            },
            "D-Bus Result",
        );
        fails_when(
            |s| s.files[0].1 = s.files[0].1.replace("[Result \"1/2-1/2\"]", "[Result \"*\"]"),
            "result *, not 1/2-1/2",
        );
    }

    /// A colour swap that leaves the ratings on the colours (issue 47, 5).
    /// A `SetPlayers` lost on resume: the game shows the pairing's colours
    /// again, though the arbiter swapped them.
    #[test]
    fn players_the_arbiter_set_lost_fail() {
        let (mut t, s) = good();
        t.colours = Some(("B, Bob".into(), "A, Ann".into()));
        fails_with(&t, &s, "the arbiter's decisions say White \"B, Bob\"");
    }

    #[test]
    fn tags_that_stay_on_the_colour_fail() {
        fails_when(
            |s| {
                s.files[0].1 = s.files[0].1.replace(
                    "[White \"A, Ann\"]\n[Black \"B, Bob\"]",
                    "[White \"B, Bob\"]\n[Black \"A, Ann\"]",
                );
                s.bus.insert("White", "B, Bob".into());
                s.bus.insert("Black", "A, Ann".into());
            },
            "shown with WhiteElo \"2100\", theirs is \"2200\"",
        );
    }

    /// An alarm that never clears (issue 47, 4).
    #[test]
    fn an_alarm_never_cleared_fails() {
        for alarms in [
            &["game_start", "move", "irregular"][..],
            &["game_start", "irregular", "move", "move"],
            &["irregular", "inferred_move", "move", "resolved"],
        ] {
            fails_when(
                |s| s.alarms = alarms.iter().map(|a| a.to_string()).collect(),
                "never cleared",
            );
        }
        fails_when(
            |s| {
                s.bus.insert("Status", "irregular".into());
            },
            "still shown irregular",
        );
    }

    /// Plies published and then withdrawn with no `takeback` (issue 62): a
    /// move over them, or a game file without them.
    #[test]
    fn a_ply_withdrawn_without_a_word_fails() {
        fails_when(
            |s| s.record.retain(|(kind, _)| kind != "takeback"),
            "plies 2-2 withdrawn without a word",
        );
        fails_when(
            |s| {
                s.record.push(("move".into(), 4));
                s.record.push(("move".into(), 5));
            },
            "has 3 plies, the recording published 5",
        );
        // Said with a take-back, or set by an arbiter's decision: no failure.
        let (t, mut s) = good();
        s.record = vec![
            ("move".into(), 1),
            ("move".into(), 2),
            ("arbiter".into(), 0),
            ("move".into(), 1),
            ("move".into(), 2),
            ("move".into(), 3),
        ];
        assert_eq!(judge(&t, &s), Vec::<String>::new());
        let parsed = record_events(concat!(
            "{\"t\":1.0,\"type\":\"move\",\"ply\":1,\"san\":\"e4\"}\n",
            "{\"t\":2.0,\"type\":\"touch\",\"side\":\"black\"}\n",
            "{\"t\":3.0,\"type\":\"takeback\",\"to_ply\":0,\"fen\":\"x\"}\n",
            "{\"t\":4.0,\"type\":\"arbiter\",\"method\":\"SetTags\",\"args\":[]}\n",
            "{\"t\":5.0,\"type\":\"arbiter\",\"method\":\"Undo\",\"args\":[]}\n",
        ));
        assert_eq!(
            parsed,
            vec![
                ("move".to_string(), 1),
                ("takeback".to_string(), 0),
                ("arbiter".to_string(), 0)
            ]
        );
    }

    /// `replay` of the recording that differs from what was published live.
    #[test]
    fn a_replay_that_differs_fails() {
        fails_when(
            |s| s.replayed = s.replayed.replace("Nf3", "Nf3 {inferred}"),
            "replay of the recording gives",
        );
    }

    /// A finished round's folder and results kept whole once the next began:
    /// a file changed, lost or added, a result lost from `games.pgn`, or a
    /// table that says otherwise, fails.
    #[test]
    fn a_round_not_kept_whole_fails() {
        let game = |board: u32, result: &str| {
            format!("[Event \"E\"]\n[Board \"{board}\"]\n[Result \"{result}\"]\n\n1. e4 {result}\n")
        };
        let before: BTreeMap<String, String> = [
            ("game-1.pgn".to_string(), game(1, "1-0")),
            ("game-2.pgn".to_string(), game(2, "1/2-1/2")),
            (
                "games.pgn".to_string(),
                format!("{}\n{}", game(1, "1-0"), game(2, "1/2-1/2")),
            ),
        ]
        .into();
        let bus: Vec<BTreeMap<&'static str, String>> = vec![
            [("ResultsTable", "1-0".to_string())].into(),
            [("ResultsTable", "1/2-1/2".to_string())].into(),
        ];
        let refused = Err("no board plays round 1 now: ... (round-1/)".to_string());
        assert_eq!(
            round_kept(1, &before, &before, &bus, &refused),
            Vec::<String>::new()
        );
        let table = Ok("board,white,black,result\n1,A,B,1-0\n2,C,D,1/2-1/2\n".to_string());
        assert_eq!(
            round_kept(1, &before, &before, &bus, &table),
            Vec::<String>::new()
        );
        // Round 2's game filed as round 1's second game of board 2, and
        // its result over round 1's.
        let mut after = before.clone();
        after.insert("game-2-2.pgn".into(), game(2, "*"));
        after.insert(
            "games.pgn".into(),
            format!("{}\n{}", game(1, "1-0"), game(2, "*")),
        );
        let f = round_kept(1, &before, &after, &bus, &table);
        assert!(f.iter().any(|m| m.contains("game-2-2.pgn appeared")), "{f:?}");
        assert!(f.iter().any(|m| m.contains("games.pgn changed")), "{f:?}");
        assert!(f.iter().any(|m| m.contains("gives board 2 *")), "{f:?}");
        // A game file lost; a table of round 1 that gives round 2's results.
        let mut after = before.clone();
        after.remove("game-1.pgn");
        let f = round_kept(
            1,
            &before,
            &after,
            &bus,
            &Ok("board,white,black,result\n1,A,B,*\n".into()),
        );
        assert!(f.iter().any(|m| m.contains("game-1.pgn lost")), "{f:?}");
        assert!(
            f.iter().any(|m| m.contains("gives board 1 * once round 2 began")),
            "{f:?}"
        );
        // A refusal that does not say where the round is.
        let f = round_kept(1, &before, &before, &bus, &Err("no such round".into()));
        assert!(f.iter().any(|m| m.contains("without saying where")), "{f:?}");
    }
}
