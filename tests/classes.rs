//! Fidelity by class: generators that enumerate a whole class of board
//! histories over the games in `tests/data/games` (and seeded random games),
//! each case checked against the truth.
//!
//! - `forced_ends`: every game that ends in a position that ends it by itself
//!   (mate, stalemate, dead position, ...), played with and without a clock
//!   press: the end is published when the last move is made (5.1.1, 5.2.1),
//!   never later.
//! - `illegal_squares`: positions of the games, every piece of either side put
//!   down on every empty square no legal move of it reaches (pawns on their
//!   first and last rank included) and held past the irregular threshold, then
//!   put back, or (the side to move's) moved on to a legal square: the
//!   irregularity is raised and resolved, nothing is recorded for it, and the
//!   legal move after it is recorded.
//! - `gaps`: every gap of 1 to 6 whole plies, the game played on after it.
//! - `illegal_placements_after_gaps`: a gap of 1 to 3 plies, and the dump
//!   after it shows the side to move's piece set on a square no legal move of
//!   it reaches (held there past twice the irregular threshold, then put back,
//!   the game played on): the gap's plies are recorded, inferred, and no more;
//!   the placement is reported an illegal move and resolved; no ply published
//!   is ever taken back or amended (issue 62, seed 13 of the event campaign).
//! - `knocked_after_gaps`: a gap of 1 to 3 plies, then a piece knocked over
//!   (lifted, held, put back) at several moments after the dump, the game
//!   played on: the gap's plies are recorded, inferred, and nothing else; a
//!   piece no legal move lifts is raised `displaced` once it lies past the
//!   threshold, and resolved; no ply published is taken back or amended
//!   (seed 112 of the event campaign).
//! - `slides_cut`: every sliding move set down on the square it crosses
//!   first, the line lost before the release threshold, the rest of the move
//!   and up to 2 plies more lost, the board dumped when the line is back: the
//!   record the game's moves, the square crossed never a move (seed 521).
//!
//! `cargo test --test suite classes::` runs a sample; `CLASSES=full cargo test
//! --release --test suite classes::` runs every case (figures in
//! `docs/RELIABILITY.md`). `CLASSES_KEEP=DIR` writes each failing case's log
//! there; `CLASSES_FEN=1` prints each failing gap's positions before and
//! after its plies.

use crate::common;

use std::collections::HashSet;

use eboard_bridge::board::Orientation;
use eboard_bridge::log::{Header, SensorLog};
use eboard_bridge::output::replay;
use eboard_bridge::rules::{Config, EventKind, IrregularKind};
use eboard_bridge::sim::{Hands, Seeded, Style};
use shakmaty::{Board, CastlingMode, CastlingSide, Chess, Color, Move, Piece, Position, Role, Square};

pub(crate) fn full() -> bool {
    std::env::var("CLASSES").is_ok_and(|v| v == "full")
}

/// Hands that never touch a piece twice nor slide one, pressing the clock after
/// every move or never.
fn hands(seed: u64, press: bool) -> Hands {
    let style = Style {
        slide: 0,
        retouch: 0,
        press: if press { 100 } else { 0 },
        clock: press,
        step_ms: (150, 300),
        think_ms: (500, 1500),
        zero_time: false,
        settle_ms: 400,
        press_ms: None,
    };
    Hands::new(seed, style, Orientation::Normal)
}

/// A replayed game's moves (SAN), their `inferred` marks, and whether the
/// replay said `lost_track`.
fn recorded(game: &eboard_bridge::rules::Game, r: &replay::Replay) -> (Vec<String>, Vec<bool>, bool) {
    let published = game.moves.iter().map(|m| m.san.clone()).collect();
    let flags = game.moves.iter().map(|m| m.inferred).collect();
    let lost = r.events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::Irregular {
                kind: IrregularKind::LostTrack,
                ..
            }
        )
    });
    (published, flags, lost)
}

fn log_of(hands: Hands) -> SensorLog {
    SensorLog {
        header: Header::default(),
        records: hands.records,
        lines: Vec::new(),
    }
}

fn run(log: &SensorLog, start: &Chess) -> replay::Replay {
    replay::run(
        log,
        "generated",
        Config::default(),
        Some((start.clone(), CastlingMode::Standard)),
    )
    .expect("a generated log replays")
}

/// The games that end in a position that ends them by itself: the repository's
/// games that do, and seeded random games played until one does.
pub(crate) fn forced_end_games() -> Vec<(String, Chess, Vec<Move>)> {
    let mut games: Vec<_> = common::played::all_games()
        .into_iter()
        .filter(|(_, start, moves)| {
            let mut pos = start.clone();
            for m in moves {
                pos.play_unchecked(*m);
            }
            pos.legal_moves().is_empty() || pos.is_insufficient_material()
        })
        .collect();
    let random = if full() { 400 } else { 24 };
    let mut seed = 0;
    while games.len() < random + 4 {
        seed += 1;
        let mut pick = Seeded::new(seed);
        let mut pos = Chess::default();
        let mut moves = Vec::new();
        let mut seen = std::collections::HashMap::new();
        while moves.len() < 400 {
            let legal = pos.legal_moves();
            // The ends a position forces: no move, a dead position, the 75-move
            // rule, a fifth repetition.
            let key = shakmaty::fen::Epd::from_position(&pos, shakmaty::EnPassantMode::Legal).to_string();
            let reps = seen.entry(key).and_modify(|n| *n += 1).or_insert(1);
            if legal.is_empty() || pos.is_insufficient_material() || pos.halfmoves() >= 150 || *reps >= 5 {
                break;
            }
            // Captures first, so that games end within the plies.
            let caps: Vec<Move> = legal.iter().filter(|m| m.is_capture()).copied().collect();
            let from = if !caps.is_empty() && pick.chance(70) {
                caps
            } else {
                legal.to_vec()
            };
            let m = from[pick.range(0, from.len() as u64 - 1) as usize];
            pos.play_unchecked(m);
            moves.push(m);
        }
        if moves.len() < 400 {
            games.push((format!("random seed {seed}"), Chess::default(), moves));
        }
    }
    games
}

/// Every game that ends by its last move, with and without presses: `game_end`
/// comes with the last move (when it is made), and says the end the position
/// forces.
#[test]
fn forced_ends() {
    let games = forced_end_games();
    let mut cases = 0;
    let mut failures = Vec::new();
    for (name, start, moves) in &games {
        for press in [false, true] {
            cases += 1;
            let mut h = hands(cases as u64, press);
            h.board(start.board());
            let log = common::played_log(h, start, moves, 20_000);
            let r = run(&log, start);
            let last_move = r.events.iter().rev().find_map(|e| match &e.kind {
                EventKind::Move { ply, .. } if *ply as usize == moves.len() => Some(e.t_us),
                _ => None,
            });
            let end = r.events.iter().find_map(|e| match &e.kind {
                EventKind::GameEnd { termination, .. } => Some((e.t_us, termination.name())),
                _ => None,
            });
            match (last_move, end) {
                (Some(made), Some((at, _))) if at == made => {}
                (made, end) => failures.push(format!(
                    "{name}, presses {press}: last move made at {made:?} µs, game_end {end:?}"
                )),
            }
        }
    }
    eprintln!(
        "forced_ends: {cases} cases over {} games, {} failures",
        games.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The boards the record may read as something other than an irregularity: an
/// earlier position, or one legal move from one (a take-back), or a result by
/// kings.
fn explained_boards(history: &[Chess]) -> HashSet<Board> {
    let mut known = HashSet::new();
    for p in history {
        known.insert(p.board().clone());
        for m in p.legal_moves() {
            let mut after = p.clone();
            after.play_unchecked(m);
            known.insert(after.board().clone());
        }
    }
    known
}

fn kings_on_centre(board: &Board) -> bool {
    let centre = [Square::D4, Square::D5, Square::E4, Square::E5];
    board.kings().into_iter().all(|k| centre.contains(&k))
}

struct Case {
    from: Square,
    to: Square,
    piece: Piece,
    /// A legal move of the piece to play after the illegal placement.
    then: Option<Move>,
}

/// The cases of one position: every piece, every empty square no legal move of
/// it reaches.
fn illegal_cases(history: &[Chess], limit_pieces: Option<usize>) -> Vec<Case> {
    let pos = history.last().expect("a position");
    let known = explained_boards(history);
    let legal = pos.legal_moves();
    let mut cases = Vec::new();
    let mut pieces: Vec<(Square, Piece)> = pos.board().clone().into_iter().collect();
    if let Some(n) = limit_pieces {
        // The side to move's pawns and officers first, then the opponent's.
        pieces.sort_by_key(|(_, p)| (p.color != pos.turn(), p.role == Role::King));
        pieces.truncate(n);
    }
    for (from, piece) in pieces {
        let reach: Vec<Move> = legal.iter().filter(|m| m.from() == Some(from)).copied().collect();
        // Where a legal move puts the piece (a castling king: on its castling
        // square, where shakmaty's `to` names the rook's).
        let lands = |m: &Move| match m {
            Move::Castle { king, rook } => {
                let side = if rook > king {
                    CastlingSide::KingSide
                } else {
                    CastlingSide::QueenSide
                };
                side.king_to(piece.color)
            }
            _ => m.to(),
        };
        for to in Square::ALL {
            if pos.board().piece_at(to).is_some() {
                continue;
            }
            if piece.color == pos.turn() && reach.iter().any(|m| lands(m) == to) {
                continue;
            }
            let mut b = pos.board().clone();
            b.discard_piece_at(from);
            b.set_piece_at(to, piece);
            if known.contains(&b) || kings_on_centre(&b) {
                continue;
            }
            let then = (piece.color == pos.turn())
                .then(|| {
                    reach
                        .iter()
                        .find(|m| !m.is_castle() && !m.is_en_passant() && !m.is_capture())
                        .copied()
                })
                .flatten();
            cases.push(Case {
                from,
                to,
                piece,
                then,
            });
        }
    }
    cases
}

/// Plays one case from `pos` (the board standing there since the start):
/// `None` when the truth is met, else what differs.
fn judge_case(pos: &Chess, case: &Case, seed: u64, move_on: bool) -> Option<String> {
    let mut h = hands(seed, false);
    h.board(pos.board());
    h.wait(1000);
    h.lift(case.from, case.piece);
    h.place(case.to, case.piece);
    let irregular_ms = Config::default().irregular_ms;
    h.wait(irregular_ms + 1500);
    h.lift(case.to, case.piece);
    let then = case.then.filter(|_| move_on);
    match then {
        Some(m) => {
            let piece = Piece {
                color: case.piece.color,
                role: m.promotion().unwrap_or(case.piece.role),
            };
            h.place(m.to(), piece);
        }
        None => h.place(case.from, case.piece),
    }
    h.wait(3000);
    let r = run(&log_of(h), pos);
    let mut raised = 0;
    let mut resolved = 0;
    let mut recorded = Vec::new();
    let mut other = Vec::new();
    for e in &r.events {
        match &e.kind {
            EventKind::Irregular { kind, .. } => {
                if matches!(kind, IrregularKind::IllegalMove | IrregularKind::Displaced) {
                    raised += 1;
                } else {
                    other.push(format!("irregular {}", kind.name()));
                }
            }
            EventKind::Resolved { .. } => resolved += 1,
            EventKind::Move { uci, .. } => recorded.push(uci.clone()),
            EventKind::MoveAmended { .. } | EventKind::Takeback { .. } | EventKind::GameEnd { .. } => {
                other.push(format!("{:?}", e.kind))
            }
            _ => {}
        }
    }
    let want: Vec<String> = then
        .map(|m| m.to_uci(CastlingMode::Standard).to_string())
        .into_iter()
        .collect();
    (raised != 1 || resolved != 1 || recorded != want || !other.is_empty()).then(|| {
        format!(
            "{} {} {}-{} then {:?}: raised {raised}, resolved {resolved}, recorded {recorded:?}, other {other:?}",
            shakmaty::fen::Fen::from_position(pos, shakmaty::EnPassantMode::Legal),
            case.piece.char(),
            case.from,
            case.to,
            want
        )
    })
}

/// Every piece on every illegal empty square, held past the threshold, then put
/// back or moved on legally.
#[test]
fn illegal_squares() {
    let (every, limit) = if full() { (4, None) } else { (25, Some(6)) };
    let mut cases = 0;
    let mut failures = Vec::new();
    let mut positions = 0;
    for (g, (_, start, moves)) in common::played::all_games().into_iter().enumerate() {
        let mut history = vec![start.clone()];
        for (ply, m) in moves.iter().enumerate() {
            let mut next = history.last().expect("a position").clone();
            next.play_unchecked(*m);
            history.push(next);
            if (ply + g) % every != 0 {
                continue;
            }
            positions += 1;
            let pos = history.last().expect("a position");
            for (k, case) in illegal_cases(&history, limit).iter().enumerate() {
                for move_on in [false, true] {
                    if move_on && case.then.is_none() {
                        continue;
                    }
                    cases += 1;
                    if let Some(f) = judge_case(pos, case, (g * 1000 + k) as u64, move_on) {
                        failures.push(f);
                    }
                }
            }
        }
    }
    eprintln!(
        "illegal_squares: {cases} cases over {positions} positions, {} failures",
        failures.len()
    );
    failures.truncate(40);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases > 500, "only {cases} cases");
}

/// The quoted member of the class: a white pawn set on e8 or d1, where no move
/// of it goes, held, then put back.
#[test]
fn a_pawn_on_its_last_or_first_rank_off_any_move_is_raised_and_resolved() {
    let pos: Chess = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"
        .parse::<shakmaty::fen::Fen>()
        .expect("fen")
        .into_position(CastlingMode::Standard)
        .expect("legal");
    let pawn = Piece {
        color: Color::White,
        role: Role::Pawn,
    };
    for to in [Square::D8, Square::A8, Square::D1, Square::H1] {
        let case = Case {
            from: Square::E2,
            to,
            piece: pawn,
            then: None,
        };
        assert_eq!(judge_case(&pos, &case, 1, false), None);
    }
}

/// A game played by hands, with the range of records each ply made.
struct Played {
    records: Vec<eboard_bridge::log::Record>,
    plies: Vec<std::ops::Range<usize>>,
}

fn play_game(start: &Chess, moves: &[Move], seed: u64) -> Played {
    let mut h = hands(seed, true);
    h.board(start.board());
    let mut pos = start.clone();
    let mut plies = Vec::new();
    for m in moves {
        let from = h.records.len();
        h.play(&pos, m);
        pos.play_unchecked(*m);
        plies.push(from..h.records.len());
    }
    h.wait(5000);
    h.flush();
    Played {
        records: h.records,
        plies,
    }
}

/// The log of `played` with plies `gap` (0-based, whole) lost on the line: a
/// `gap` record, then the board as a dump shows it after them.
/// With `clock`, the clock's last report of the gap is given right after the
/// dump (a clock read again after a restart says whose time
/// runs: the side to move, its plies' presses made; the event campaign's seed
/// 563).
fn with_gap(
    played: &Played,
    start: &Chess,
    moves: &[Move],
    gap: std::ops::Range<usize>,
    clock: bool,
) -> SensorLog {
    use eboard_bridge::log::{LogTime, Record, RecordKind};
    let cut = played.plies[gap.start].start..played.plies[gap.end - 1].end;
    let at = played.records[cut.end - 1].time.micros() + 50_000;
    let mut pos = start.clone();
    for m in &moves[..gap.end] {
        pos.play_unchecked(*m);
    }
    let mut records: Vec<Record> = played.records[..cut.start].to_vec();
    records.push(Record {
        time: LogTime::from_micros(at),
        kind: RecordKind::Gap("line away".into()),
    });
    records.push(Record {
        time: LogTime::from_micros(at),
        kind: RecordKind::Board(Box::new(eboard_bridge::protocol::Placement::from_board(
            pos.board(),
        ))),
    });
    if clock {
        let report = played.records[cut.clone()]
            .iter()
            .rev()
            .find(|r| matches!(r.kind, RecordKind::Clock { .. }));
        if let Some(r) = report {
            records.push(Record {
                time: LogTime::from_micros(at + 1),
                kind: r.kind.clone(),
            });
        }
    }
    let after: Vec<Record> = played.records[cut.end..]
        .iter()
        .filter(|r| r.time.micros() > at)
        .cloned()
        .collect();
    records.extend(after);
    SensorLog {
        header: Header::default(),
        records,
        lines: Vec::new(),
    }
}

/// Gap starts to try in a game: every `every`th ply, and every ply right
/// after a king's step onto a centre square.
fn gap_starts(start: &Chess, moves: &[Move], every: usize) -> Vec<usize> {
    let centre = [Square::D4, Square::D5, Square::E4, Square::E5];
    let _ = start;
    (1..moves.len())
        .filter(|&s| {
            s % every == 0 || (moves[s - 1].role() == Role::King && centre.contains(&moves[s - 1].to()))
        })
        .collect()
}

/// Every gap of 1 to 6 whole plies, at sampled starts and after every king step
/// onto the centre, with the game played on after it: the record is the game's
/// moves exactly, and `inferred` marks exactly the plies the line lost.
#[test]
fn gaps() {
    let (games, every): (usize, usize) = if full() { (usize::MAX, 3) } else { (8, 7) };
    let mut cases = 0;
    let (mut tempo_cases, mut tempo_lost) = (0, 0);
    let mut failures = Vec::new();
    for (g, (name, start, moves)) in common::played::all_games().into_iter().take(games).enumerate() {
        let played = play_game(&start, &moves, g as u64 + 7);
        for s in gap_starts(&start, &moves, every) {
            for (k, clock) in (1..=6).flat_map(|k| [(k, false), (k, true)]) {
                // Two plies at least are played after the gap, seen.
                if s + k + 2 > moves.len() {
                    continue;
                }
                cases += 1;
                let log = with_gap(&played, &start, &moves, s..s + k, clock);
                let r = run(&log, &start);
                let Some(game) = r.core.game() else {
                    failures.push(format!("{name}: gap of {k} after ply {s}: no game"));
                    continue;
                };
                let published: Vec<String> = game.moves.iter().map(|m| m.san.clone()).collect();
                let flags: Vec<bool> = game.moves.iter().map(|m| m.inferred).collect();
                let marks: Vec<usize> = game
                    .moves
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.inferred)
                    .map(|(i, _)| i)
                    .collect();
                let want_marks: Vec<usize> = (s..s + k).collect();
                let lost = r.events.iter().any(|e| {
                    matches!(
                        e.kind,
                        EventKind::Irregular {
                            kind: IrregularKind::LostTrack,
                            ..
                        }
                    )
                });
                // The moves seen are the ones played; the gap's plies end on
                // the position the game reached (in an order the dump cannot
                // tell, or fewer when a piece went and came back unseen, or
                // took a longer way than it needed).
                let same = common::played::same_game_modulo_count(&start, &moves, &published, &flags);
                let marks_ok = if published.len() == moves.len() {
                    marks == want_marks
                } else {
                    marks.iter().all(|i| want_marks.contains(i))
                };
                let mut before = start.clone();
                for m in &moves[..s] {
                    before.play_unchecked(*m);
                }
                // A gap whose plies take a piece away and back home having
                // taken nothing (a tempo no dump shows, which inference never
                // invents: docs/RULES.md, "What it never does"): `lost_track`
                // is the truth when no line without such a trip reaches the
                // dump, and what is published is still the game as played
                // (modulo order) up to some ply, no ply seen marked inferred.
                let tempo = tempo_trip(&before, &moves[s..s + k]);
                let honest_prefix = || {
                    (s..=moves.len()).any(|x| {
                        common::played::same_game_modulo_count(&start, &moves[..x], &published, &flags)
                    }) && marks.iter().all(|i| want_marks.contains(i))
                };
                let ok = if tempo && lost {
                    honest_prefix()
                } else {
                    same && marks_ok && !lost
                };
                if tempo {
                    tempo_cases += 1;
                    tempo_lost += usize::from(lost);
                }
                if !ok {
                    keep_case(
                        &log,
                        &start,
                        format!("gap-{}-{s}-{k}-{clock}.esl", name.replace(['/', '#'], "_")),
                    );
                    // The plies around the gap, played and published, to read the case by.
                    let truth = common::sans(&start, &moves);
                    let around = s.saturating_sub(1)..(s + k + 2).min(moves.len());
                    let ours = around.start.min(published.len())..around.end.min(published.len());
                    let trip = eboard_bridge::rules::round_trip(before.board(), &moves[s..s + k]);
                    if std::env::var("CLASSES_FEN").is_ok() {
                        let mut after = before.clone();
                        for m in &moves[s..s + k] {
                            after.play_unchecked(*m);
                        }
                        let fen =
                            |p: &Chess| shakmaty::fen::Fen::from_position(p, shakmaty::EnPassantMode::Legal);
                        eprintln!("FEN {name} {s} {k}|{}|{}", fen(&before), fen(&after));
                    }
                    failures.push(format!(
                        "{name}: gap of {k} after ply {s} (clock read after it: {clock}): {} of {} plies, same game {same}, inferred {marks:?} (want {want_marks:?}), lost_track {lost}, a trip in the gap {trip} (a tempo {tempo}); played {:?}, published {:?}",
                        published.len(),
                        moves.len(),
                        &truth[around],
                        &published[ours],
                    ));
                }
            }
        }
    }
    eprintln!(
        "gaps: {cases} cases ({tempo_cases} with a piece's trip home that took nothing, {tempo_lost} of them lost_track), {} failures",
        failures.len()
    );
    if full() {
        failures.truncate(300);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        return;
    }
    // The sample's failures not yet fixed (docs/RELIABILITY.md, "Classes"): any
    // other failure fails the test, and so does a known one that passes (take it
    // off the list).
    let new: Vec<&String> = failures
        .iter()
        .filter(|f| !KNOWN_GAP_FAILURES.iter().any(|k| f.starts_with(k)))
        .collect();
    let mended: Vec<&&str> = KNOWN_GAP_FAILURES
        .iter()
        .filter(|k| !failures.iter().any(|f| f.starts_with(**k)))
        .collect();
    assert!(
        new.is_empty(),
        "new failures:\n{}",
        new.iter().map(|f| f.as_str()).collect::<Vec<_>>().join("\n")
    );
    assert!(
        mended.is_empty(),
        "known failures that now pass (take them off KNOWN_GAP_FAILURES): {mended:?}"
    );
}

/// The cases of the `gaps` sample that fail today: none (issue 58). The one
/// listed before (`immortal-games.pgn#5`, gap of 5 after ply 21: 11...Nf6
/// 12.h4 Qg6 13.h5 Qg5, the queen's trip out and back a tempo no dump shows)
/// is `lost_track` with nothing invented, which is its truth.
const KNOWN_GAP_FAILURES: [&str; 0] = [];

/// Whether a piece that moved in `plies` from `pos` stands on its first
/// square at the end having captured nothing on the way (a tempo: no board
/// seen before and after shows it).
fn tempo_trip(pos: &Chess, plies: &[Move]) -> bool {
    // Each square's piece, named by the square it stood on in `pos`.
    let mut who: [Option<Square>; 64] = [None; 64];
    for sq in pos.board().occupied() {
        who[sq as usize] = Some(sq);
    }
    let mut moved = HashSet::new();
    let mut took = HashSet::new();
    for m in plies {
        let steps: Vec<(Square, Square)> = match *m {
            Move::Castle { king, rook } => {
                let side = if rook > king {
                    CastlingSide::KingSide
                } else {
                    CastlingSide::QueenSide
                };
                let rank = king.rank();
                vec![
                    (king, Square::from_coords(side.king_to_file(), rank)),
                    (rook, Square::from_coords(side.rook_to_file(), rank)),
                ]
            }
            _ => vec![(m.from().expect("a move from a square"), m.to())],
        };
        if m.is_capture() {
            if let Some(id) = who[steps[0].0 as usize] {
                took.insert(id);
            }
            let victim = if m.is_en_passant() {
                Square::from_coords(m.to().file(), steps[0].0.rank())
            } else {
                m.to()
            };
            who[victim as usize] = None;
        }
        let ids: Vec<(Option<Square>, Square)> = steps
            .iter()
            .map(|(from, to)| (who[*from as usize].take(), *to))
            .collect();
        for (id, to) in ids {
            who[to as usize] = id;
            if let Some(id) = id {
                moved.insert(id);
            }
        }
    }
    Square::ALL
        .into_iter()
        .any(|sq| who[sq as usize] == Some(sq) && moved.contains(&sq) && !took.contains(&sq))
}

/// Whether some path of at most `plies` plies from `pos` ends on `board`,
/// moving only pieces that stand where `board` has something else (a piece
/// that goes away and comes back is no shorter account), but for a piece a
/// like piece may replace.
fn reaches(pos: &Chess, board: &Board, plies: usize) -> bool {
    reaches_with(pos, board, plies, None)
}

/// [`reaches`], of a path of `odd` plies when given (an odd number of plies
/// when true). A parity is asked over up to 6 plies, where letting a like
/// piece replace another costs 15 times as long: only pieces that stand
/// where the board differs move then.
fn reaches_with(pos: &Chess, board: &Board, plies: usize, odd: Option<bool>) -> bool {
    if pos.board() == board && odd != Some(true) {
        return true;
    }
    if plies == 0 {
        return false;
    }
    pos.legal_moves().into_iter().any(|m| {
        let from = match m {
            Move::Castle { king, .. } => king,
            _ => m.from().unwrap_or(m.to()),
        };
        if pos.board().piece_at(from) == board.piece_at(from)
            && (odd.is_some() || !replaceable(pos.board(), board, from))
        {
            return false;
        }
        let mut after = pos.clone();
        after.play_unchecked(m);
        reaches_with(&after, board, plies - 1, odd.map(|o| !o))
    })
}

/// Whether the piece on `from` (a square `now` and `board` agree on) may
/// leave it for a piece like it to take its place: one stands on a square
/// where they differ (a knight to b6 and the other knight to d7 in its place).
fn replaceable(now: &Board, board: &Board, from: Square) -> bool {
    let Some(piece) = now.piece_at(from) else {
        return false;
    };
    (now.by_piece(piece) & !board.by_piece(piece))
        .into_iter()
        .any(|sq| sq != from)
}

/// `board` is `pos` with one piece of the side to move set on an empty square
/// no legal move of it reaches, nothing else changed.
fn slipped(pos: &Chess, board: &Board) -> bool {
    let now = pos.board();
    let diff: Vec<Square> = Square::ALL
        .into_iter()
        .filter(|sq| now.piece_at(*sq) != board.piece_at(*sq))
        .collect();
    let [a, b] = diff[..] else { return false };
    let (from, to) = if board.piece_at(a).is_none() {
        (a, b)
    } else {
        (b, a)
    };
    let Some(piece) = now.piece_at(from) else {
        return false;
    };
    piece.color == pos.turn()
        && board.piece_at(from).is_none()
        && now.piece_at(to).is_none()
        && board.piece_at(to) == Some(piece)
        && !pos.legal_moves().iter().any(|m| {
            let mut after = pos.clone();
            after.play_unchecked(*m);
            after.board() == board
        })
}

/// The boards after `plies` plies from `pos` (moving only pieces that stand
/// where `board` has something else) that `board` is a slip from.
fn slip_accounts(pos: &Chess, board: &Board, plies: usize, found: &mut HashSet<Board>) {
    if plies == 0 {
        if slipped(pos, board) {
            found.insert(pos.board().clone());
        }
        return;
    }
    for m in pos.legal_moves() {
        let from = match m {
            Move::Castle { king, .. } => king,
            _ => m.from().unwrap_or(m.to()),
        };
        if pos.board().piece_at(from) == board.piece_at(from) {
            continue;
        }
        let mut after = pos.clone();
        after.play_unchecked(m);
        slip_accounts(&after, board, plies - 1, found);
    }
}

/// The log of a game played by hands with plies `gap` (0-based, whole) lost
/// on the line, the side to move then setting `slip`'s piece on its square
/// no move reaches (the dump after the gap shows that), holding it past the
/// irregular threshold and putting it back; then the game's next two plies,
/// seen.
fn with_gap_and_slip(
    start: &Chess,
    moves: &[Move],
    gap: std::ops::Range<usize>,
    slip: &Case,
    seed: u64,
) -> SensorLog {
    let (mut h, pos) = up_to_gap(start, moves, gap.clone(), seed);
    let mut dumped = pos.board().clone();
    dumped.discard_piece_at(slip.from);
    dumped.set_piece_at(slip.to, slip.piece);
    h.board(&dumped);
    // Past twice the threshold: a board that may be a move under way after
    // as few moves is looked at again then, without that account.
    h.wait(2 * Config::default().irregular_ms + 1500);
    h.lift(slip.to, slip.piece);
    h.place(slip.from, slip.piece);
    two_plies_on(h, pos, moves, gap.end)
}

/// Hands that play the game to ply `gap.start`, then lose plies `gap` on the
/// line (a `gap` record, and a second for the dump to come): the hands, the
/// dump after the gap not made yet, and the position after the gap.
fn up_to_gap(start: &Chess, moves: &[Move], gap: std::ops::Range<usize>, seed: u64) -> (Hands, Chess) {
    use eboard_bridge::log::RecordKind;
    let mut h = hands(seed, true);
    h.board(start.board());
    let mut pos = start.clone();
    for m in &moves[..gap.start] {
        h.play(&pos, m);
        pos.play_unchecked(*m);
    }
    h.wait(500);
    h.push(RecordKind::Gap("line away".into()));
    for m in &moves[gap] {
        pos.play_unchecked(*m);
    }
    h.wait(1000);
    (h, pos)
}

/// The game's two plies after the gap ending at ply `end`, seen, and the log.
fn two_plies_on(mut h: Hands, mut pos: Chess, moves: &[Move], end: usize) -> SensorLog {
    for m in &moves[end..end + 2] {
        h.play(&pos, m);
        pos.play_unchecked(*m);
    }
    h.wait(5000);
    h.flush();
    log_of(h)
}

/// What a gap case published, judged on what both classes after a gap ask:
/// the record the game's moves (the gap's plies in any order the dump cannot
/// tell), `inferred` on exactly the gap's plies, and, event by event, a ply
/// only ever added (no amendment; no take-back, but with the turn `open`, see
/// [`judge_slip`]). The problems found, the alarms raised and how many
/// `resolved` followed them; `Err` when no game was recorded.
fn published_after_gap(
    start: &Chess,
    moves: &[Move],
    gap: std::ops::Range<usize>,
    open: bool,
    log: &SensorLog,
) -> Result<(Vec<String>, Vec<&'static str>, usize), String> {
    let r = run(log, start);
    let played = &moves[..gap.end + 2];
    let mut problems = Vec::new();
    let Some(game) = r.core.game() else {
        return Err("no game".into());
    };
    let published: Vec<String> = game.moves.iter().map(|m| m.san.clone()).collect();
    let flags: Vec<bool> = game.moves.iter().map(|m| m.inferred).collect();
    let marks: Vec<usize> = (0..game.moves.len())
        .filter(|i| game.moves[*i].inferred)
        .collect();
    let want: Vec<usize> = gap.collect();
    // The gap's plies in an order the dump cannot tell are the same game.
    if published.len() != played.len()
        || !common::played::same_game_modulo_order(start, played, &published, &flags)
    {
        problems.push(format!("publishes {published:?}"));
    }
    if marks != want {
        problems.push(format!("inferred {marks:?} (want {want:?})"));
    }
    // The record as published, event by event: a ply is only ever added.
    let mut len = 0u32;
    let mut raised = Vec::new();
    let mut resolved = 0;
    for e in &r.events {
        match &e.kind {
            EventKind::Move { ply, san, .. } => {
                if *ply != len + 1 {
                    problems.push(format!("ply {ply} ({san}) published over {len} without a word"));
                }
                len = *ply;
            }
            EventKind::Takeback { to_ply, .. } => {
                if !open {
                    problems.push(format!("plies {}-{len} published, then taken back", to_ply + 1));
                }
                len = *to_ply;
            }
            EventKind::MoveAmended { ply, was, san, .. } => {
                problems.push(format!("ply {ply} published as {was}, then amended to {san}"));
            }
            EventKind::Irregular { kind, .. } => raised.push(kind.name()),
            EventKind::Resolved { .. } if !raised.is_empty() => resolved += 1,
            _ => {}
        }
    }
    Ok((problems, raised, resolved))
}

/// Judges one case: `None` when the record is the game's moves, the gap's
/// exactly inferred, the slip raised as an illegal move and resolved, and no
/// ply published taken back or amended; but with the turn `open` (plies of
/// the other parity also end on the real position, and no clock report after
/// the gap says whose turn it is), a take-back said (`takeback`) of the
/// fewest plies, recorded once the board stood past the threshold, is the
/// documented account (`gap_wrong_guess_taken_back`), as in
/// `knocked_after_gaps`.
fn judge_slip(
    start: &Chess,
    moves: &[Move],
    gap: std::ops::Range<usize>,
    open: bool,
    log: &SensorLog,
) -> Option<String> {
    let (mut problems, raised, resolved) = match published_after_gap(start, moves, gap, open, log) {
        Ok(p) => p,
        Err(e) => return Some(e),
    };
    if raised != ["illegal_move"] || resolved != 1 {
        problems.push(format!("irregular {raised:?}, resolved {resolved}"));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// Gaps of 1 to 3 plies at sampled starts, each followed by a dump that shows
/// a piece of the side to move set where no move of it goes: the explanation
/// with fewer moves, the gap's plies and an illegal move, is the one recorded,
/// never a longer path invented to make the square legal. Left out, as no
/// dump can tell them: cases where a path of as few moves in all (the slip
/// counted as one) reaches the dump (the legal account is as good), and
/// cases where other plies as many and a slip do (another piece's square or
/// another path; the core takes one, and takes it back, said, if the board
/// then shows the other).
#[test]
fn illegal_placements_after_gaps() {
    let (games, every, slips): (usize, usize, usize) = if full() { (usize::MAX, 3, 3) } else { (8, 7, 1) };
    let mut cases = 0;
    let mut failures = Vec::new();
    for (g, (name, start, moves)) in common::played::all_games().into_iter().take(games).enumerate() {
        let history = positions(&start, &moves);
        for (s, k) in short_gaps(moves.len(), g, every) {
            let pos = &history[s + k];
            let mut candidates: Vec<Case> = illegal_cases(&history[..=s + k], None)
                .into_iter()
                .filter(|c| c.piece.color == pos.turn())
                .collect();
            let mut pick = Seeded::new((g * 10_000 + s * 10 + k) as u64);
            let mut taken = 0;
            while taken < slips && !candidates.is_empty() {
                let i = pick.range(0, candidates.len() as u64 - 1) as usize;
                let slip = candidates.swap_remove(i);
                let mut dumped = pos.board().clone();
                dumped.discard_piece_at(slip.from);
                dumped.set_piece_at(slip.to, slip.piece);
                let mut accounts = HashSet::new();
                slip_accounts(&history[s], &dumped, k, &mut accounts);
                if reaches(&history[s], &dumped, k + 1) || accounts.len() != 1 {
                    continue;
                }
                taken += 1;
                cases += 1;
                let log = with_gap_and_slip(&start, &moves, s..s + k, &slip, cases as u64);
                let open = reaches_with(&history[s], pos.board(), 6, Some(k % 2 == 0));
                if let Some(f) = judge_slip(&start, &moves, s..s + k, open, &log) {
                    keep_case(
                        &log,
                        &start,
                        format!(
                            "slip-{}-{s}-{k}-{}{}.esl",
                            name.replace(['/', '#'], "_"),
                            slip.from,
                            slip.to
                        ),
                    );
                    failures.push(format!(
                        "{name}: gap of {k} after ply {s}, {} {}-{}: {f}",
                        slip.piece.char(),
                        slip.from,
                        slip.to
                    ));
                }
            }
        }
    }
    eprintln!(
        "illegal_placements_after_gaps: {cases} cases, {} failures",
        failures.len()
    );
    failures.truncate(40);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases >= 20, "only {cases} cases");
}

/// Whether a legal move from `pos` lifts the piece on `sq` (its own piece, the
/// piece it captures, a castling's rook): such a piece in the hand is a move
/// under way, not an irregularity.
fn lifted_by_a_move(pos: &Chess, sq: Square) -> bool {
    pos.legal_moves().iter().any(|m| match m {
        Move::EnPassant { from, to } => *from == sq || Square::from_coords(to.file(), from.rank()) == sq,
        Move::Castle { king, rook } => *king == sq || *rook == sq,
        m => m.from() == Some(sq) || (m.is_capture() && m.to() == sq),
    })
}

/// The game to ply `gap.start`, the plies `gap` lost on the line and the dump
/// after them; `after_ms` later, the piece on `knock` lifted and held past the
/// irregular threshold, put back; then the game's next two plies.
fn with_gap_and_knock(
    start: &Chess,
    moves: &[Move],
    gap: std::ops::Range<usize>,
    knock: Square,
    after_ms: u64,
    seed: u64,
) -> SensorLog {
    let (mut h, pos) = up_to_gap(start, moves, gap.clone(), seed);
    let piece = pos.board().piece_at(knock).expect("a piece to knock");
    if after_ms == LYING_AT_THE_DUMP {
        // Knocked over while the line was away: the dump shows it off the
        // board, and it lies there past the threshold before it is set up.
        let mut lying = pos.board().clone();
        lying.discard_piece_at(knock);
        h.board(&lying);
        h.wait(Config::default().irregular_ms + 800);
        h.place(knock, piece);
        h.wait(400);
    } else {
        h.board(pos.board());
        h.wait(after_ms);
        h.knock(knock, piece, Config::default().irregular_ms + 800);
    }
    two_plies_on(h, pos, moves, gap.end)
}

/// A knock's delay that stands for a piece knocked over while the line was
/// away, lying off the board when the dump comes (the event campaign's seed
/// 772: a bishop knocked over during a restart, explained as 5... Bh3 6.
/// Bxh3 Ngf6 7. Bg2, a capture and the capturer's way home).
const LYING_AT_THE_DUMP: u64 = u64::MAX;

/// Judges one knocked case: `None` when the record is the game's moves with
/// the gap's exactly inferred, no ply published was taken back or amended,
/// and the knocked piece was raised `displaced` and resolved when no legal
/// move lifts it (`displaced`), nothing raised otherwise. With the turn
/// `open` (plies of the other parity also end on the dump, and no clock
/// report after the gap says whose turn it is), the core records the fewest
/// once the dump has stood past the threshold and takes them back, said, when
/// the next move shows the other turn (`gap_wrong_guess_taken_back`): a
/// take-back is then no failure, and the knocked piece is judged by the turn
/// the core could know (either answer, as long as a raised alarm is
/// resolved). So is a piece lying at the dump that is a move under way after
/// fewer plies than the gap's (`held`): a piece in the hand raises nothing.
fn judge_knock(
    start: &Chess,
    moves: &[Move],
    gap: std::ops::Range<usize>,
    displaced: bool,
    open: bool,
    held: bool,
    log: &SensorLog,
) -> Option<String> {
    let (mut problems, raised, resolved) = match published_after_gap(start, moves, gap, open, log) {
        Ok(p) => p,
        Err(e) => return Some(e),
    };
    let want_raised: &[&str] = if displaced { &["displaced"] } else { &[] };
    let either = (open || held) && (raised.is_empty() || raised == ["displaced"]) && resolved == raised.len();
    if !either && (raised != want_raised || resolved != usize::from(displaced)) {
        problems.push(format!(
            "irregular {raised:?}, resolved {resolved} (want {want_raised:?})"
        ));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// Gaps of 1 to 3 plies at sampled starts, and the dump after each followed
/// by a piece knocked over (at once, while the plies missed are looked for,
/// and once they are recorded), or knocked over in the gap and lying off the
/// board at the dump (seed 772), pieces of both sides chosen by seed: the
/// plies missed are the gap's, never a path to the board with the piece off
/// it (seed 112: a pawn knocked over explained as a knight's trip out to take
/// it and home, four plies never played).
#[test]
fn knocked_after_gaps() {
    let delays: &[u64] = if full() { &[100, 700, 2500] } else { &[100, 2500] };
    knocked("knocked_after_gaps", delays);
}

/// The knocked class with the piece knocked over in the gap and lying off
/// the board at the dump (the event campaign's seed 772): the gap's plies
/// are recorded and the piece off is `displaced`, never explained by a
/// capture whose piece goes home again (5... Bh3 6. Bxh3 Ngf6 7. Bg2), nor
/// said `lost_track` or `illegal_move` (29 of the sample's 63 cases did
/// before `Found::Lying`).
#[test]
fn knocked_in_gaps_lying_at_the_dump() {
    knocked("knocked_in_gaps_lying_at_the_dump", &[LYING_AT_THE_DUMP]);
}

/// The knocked classes: each gap's dump followed by a piece knocked over
/// `delays` ms after it (or lying at it: [`LYING_AT_THE_DUMP`]).
fn knocked(class: &str, delays: &[u64]) {
    let (games, every, pieces): (usize, usize, usize) = if full() { (usize::MAX, 3, 4) } else { (8, 7, 1) };
    let mut cases = 0;
    let mut trips = 0;
    let mut tied = 0;
    let mut failures = Vec::new();
    for (g, (name, start, moves)) in common::played::all_games().into_iter().take(games).enumerate() {
        let history = positions(&start, &moves);
        for (s, k) in short_gaps(moves.len(), g, every) {
            // A gap whose plies take a piece out and home having taken
            // nothing is the `gaps` class's (no dump shows the tempo: its
            // truth is `lost_track`, or the game as played up to a ply);
            // here the gap is one a dump shows.
            if tempo_trip(&history[s], &moves[s..s + k]) {
                trips += 1;
                continue;
            }
            let pos = &history[s + k];
            let open = reaches_with(&history[s], pos.board(), 6, Some(k % 2 == 0));
            let mut squares: Vec<Square> = pos.board().occupied().into_iter().collect();
            let mut pick = Seeded::new((g * 10_000 + s * 10 + k) as u64);
            for _ in 0..pieces.min(squares.len()) {
                let i = pick.range(0, squares.len() as u64 - 1) as usize;
                let sq = squares.swap_remove(i);
                let displaced = !lifted_by_a_move(pos, sq);
                for &after in delays {
                    // Lying at the dump: left out where plies as few in all as
                    // the gap's and the piece off (one more) end on the dump
                    // legally (a pawn's step and its capture for a pawn
                    // knocked over: as good an account, taken back with a
                    // word when the piece is set up again).
                    // And where it is a move under way after fewer plies
                    // than the gap's (the piece that moved last in the gap
                    // knocked over: its move seen as still in the hand, and
                    // made when the piece comes down), no alarm is as good
                    // an account as `displaced`: a piece held is none.
                    let mut held = false;
                    if after == LYING_AT_THE_DUMP {
                        let mut lying = pos.board().clone();
                        lying.discard_piece_at(sq);
                        if reaches(&history[s], &lying, k + 1) {
                            tied += 1;
                            continue;
                        }
                        held = (0..k).any(|j| {
                            let p = &history[s + j];
                            let off = p.board().occupied() & !lying.occupied();
                            off.count() == 1
                                && (p.board().occupied() ^ lying.occupied()) == off
                                && off.first().is_some_and(|o| lifted_by_a_move(p, o))
                                && p.board()
                                    .occupied()
                                    .into_iter()
                                    .all(|q| off.contains(q) || p.board().piece_at(q) == lying.piece_at(q))
                        });
                    }
                    cases += 1;
                    let log = with_gap_and_knock(&start, &moves, s..s + k, sq, after, cases as u64);
                    if let Some(f) = judge_knock(&start, &moves, s..s + k, displaced, open, held, &log) {
                        keep_case(
                            &log,
                            &start,
                            format!("knock-{}-{s}-{k}-{sq}-{after}.esl", name.replace(['/', '#'], "_")),
                        );
                        failures.push(format!(
                            "{name}: gap of {k} after ply {s}, {sq} knocked {}: {f}",
                            if after == LYING_AT_THE_DUMP {
                                "in the gap, lying at the dump".to_string()
                            } else {
                                format!("{after} ms after the dump")
                            }
                        ));
                    }
                }
            }
        }
    }
    eprintln!(
        "{class}: {cases} cases ({trips} gaps left out: a piece's trip home that took nothing; {tied} pieces lying at the dump left out: as few plies end on it legally), {} failures",
        failures.len()
    );
    failures.truncate(40);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases >= 20, "only {cases} cases");
}

/// The positions of a game: before its first ply, then after each.
fn positions(start: &Chess, moves: &[Move]) -> Vec<Chess> {
    let mut history = vec![start.clone()];
    for m in moves {
        let mut next = history.last().expect("a position").clone();
        next.play_unchecked(*m);
        history.push(next);
    }
    history
}

/// With `CLASSES_KEEP=DIR`, a failing case's log is written there as `file`
/// (a sensor log with its start position), to replay and read.
fn keep_case(log: &SensorLog, start: &Chess, file: String) {
    let Ok(dir) = std::env::var("CLASSES_KEEP") else {
        return;
    };
    let text: String = log.records.iter().map(|r| format!("{r}\n")).collect();
    let fen = shakmaty::fen::Fen::from_position(start, shakmaty::EnPassantMode::Legal);
    std::fs::write(
        format!("{dir}/{file}"),
        format!("# eboard-sensor-log 1\n# fen: {fen}\n{text}"),
    )
    .expect("write the kept log");
}

/// The gaps the classes after a gap try in a game of `len` plies (the `g`th
/// game): 1 to 3 plies from every `every`th ply (offset by the game's index),
/// with two plies played on after each.
fn short_gaps(len: usize, g: usize, every: usize) -> Vec<(usize, usize)> {
    (1..len)
        .filter(|s| (s + g) % every == 0)
        .flat_map(|s| (1..=3).map(move |k| (s, k)))
        .filter(|(s, k)| s + k + 2 <= len)
        .collect()
}

/// The square a sliding move crosses first (a pawn's double step, a rook,
/// bishop or queen going two squares or more, taking nothing): where hands
/// that slide it set it down on the way.
fn crossed_first(m: &Move) -> Option<Square> {
    let Move::Normal {
        role,
        from,
        to,
        capture: None,
        promotion: None,
    } = *m
    else {
        return None;
    };
    let (dx, dy) = (
        i32::from(to.file()) - i32::from(from.file()),
        i32::from(to.rank()) - i32::from(from.rank()),
    );
    let slides = matches!(role, Role::Pawn | Role::Rook | Role::Bishop | Role::Queen);
    if !slides || dx.abs().max(dy.abs()) < 2 {
        return None;
    }
    let file = i32::from(from.file()) + dx.signum();
    let rank = i32::from(from.rank()) + dy.signum();
    Some(Square::from_coords(
        shakmaty::File::new(u32::try_from(file).ok()?),
        shakmaty::Rank::new(u32::try_from(rank).ok()?),
    ))
}

/// The log of `played` where ply `k` (a sliding move) is set down on the
/// square it crosses first, the line lost `d_ms` after that (before the
/// release threshold), the rest of the move and the next `more` plies lost
/// with it, then the board dumped when the line is back, and the game on.
fn with_slide_cut(
    played: &Played,
    start: &Chess,
    moves: &[Move],
    k: usize,
    more: usize,
    d_ms: u64,
) -> Option<SensorLog> {
    use eboard_bridge::log::{LogTime, Record, RecordKind};
    let mid = crossed_first(&moves[k])?;
    let from = moves[k].from()?;
    let mut pos = start.clone();
    for m in &moves[..k] {
        pos.play_unchecked(*m);
    }
    let piece = pos.board().piece_at(from)?;
    let cut = played.plies[k].start..played.plies[k + more].end;
    let t0 = played.records[cut.start].time.micros();
    let put = t0 + 120_000;
    let lost = put + d_ms * 1000;
    let back = played.records[cut.end - 1].time.micros() + 50_000;
    if back <= lost {
        return None;
    }
    for m in &moves[k..=k + more] {
        pos.play_unchecked(*m);
    }
    let at = |us: u64, kind: RecordKind| Record {
        time: LogTime::from_micros(us),
        kind,
    };
    let mut records: Vec<Record> = played.records[..cut.start].to_vec();
    records.push(at(
        t0,
        RecordKind::Lift {
            square: from,
            piece: Some(piece),
        },
    ));
    records.push(at(put, RecordKind::Place { square: mid, piece }));
    records.push(at(lost, RecordKind::Gap("line away".into())));
    records.push(at(back, RecordKind::Gap("line back".into())));
    records.push(at(
        back,
        RecordKind::Board(Box::new(eboard_bridge::protocol::Placement::from_board(
            pos.board(),
        ))),
    ));
    records.extend(
        played.records[cut.end..]
            .iter()
            .filter(|r| r.time.micros() > back)
            .cloned(),
    );
    Some(SensorLog {
        header: Header::default(),
        records,
        lines: Vec::new(),
    })
}

/// `slides_cut`: every sliding move of the games (a pawn's double step, a
/// rook, bishop or queen going two squares or more, taking nothing) made as
/// hands slide it: set down on the square it crosses first, the line lost 5,
/// 30 or 60 ms after that (before the release threshold: a board stopped,
/// killed or cut mid-slide), the rest of the move and 0 to 2 plies more lost
/// with it, the board dumped when the line is back, two plies played on. The
/// record is the game's moves exactly (the square crossed never a move),
/// `inferred` only on the plies lost, no `lost_track` (gaps whose plies make a
/// trip no dump shows are the gaps class's). The event campaign's seed 521:
/// the pawn of 1. e4 set down on e3, the daemon stopped 3 ms later; e3 was
/// recorded at the restart and 1... e6 2. e4 e5 invented to go on from it.
#[test]
fn slides_cut() {
    let (games, every): (usize, usize) = if full() { (usize::MAX, 1) } else { (6, 3) };
    let mut cases = 0;
    let mut failures = Vec::new();
    for (g, (name, start, moves)) in common::played::all_games().into_iter().take(games).enumerate() {
        let played = play_game(&start, &moves, g as u64 + 11);
        let history = positions(&start, &moves);
        for k in (0..moves.len()).filter(|k| (k + g) % every == 0) {
            for more in 0..=2 {
                if k + more + 3 > moves.len() || tempo_trip(&history[k], &moves[k..=k + more]) {
                    continue;
                }
                for d_ms in [5, 30, 60] {
                    let Some(log) = with_slide_cut(&played, &start, &moves, k, more, d_ms) else {
                        continue;
                    };
                    cases += 1;
                    let r = run(&log, &start);
                    let Some(game) = r.core.game() else {
                        failures.push(format!(
                            "{name}: ply {} cut {d_ms} ms into its slide: no game",
                            k + 1
                        ));
                        continue;
                    };
                    let (published, flags, lost) = recorded(game, &r);
                    let marks_ok = flags
                        .iter()
                        .enumerate()
                        .all(|(i, &f)| !f || (k..=k + more).contains(&i));
                    // The square crossed is itself a legal move from which as
                    // many plies, those after it inferred, reach the board (a
                    // queen set on e7 on her way to f6, the line lost, then 8.
                    // e5 Qxe5): the piece was seen set down there, and no board
                    // can tell that move from the slide. Either account is the
                    // truth as far as the line shows, not one ply more.
                    let crossed_move = published.len() == moves.len()
                        && published
                            .get(k)
                            .is_some_and(|p| *p != common::sans(&start, &moves)[k])
                        && {
                            let mut as_if = flags.clone();
                            as_if[k] = true;
                            as_if[k + 1..=k + more].iter().all(|&f| f)
                                && common::played::same_game_modulo_count(&start, &moves, &published, &as_if)
                        };
                    if lost
                        || !marks_ok
                        || !(crossed_move
                            || common::played::same_game_modulo_count(&start, &moves, &published, &flags))
                    {
                        keep_case(
                            &log,
                            &start,
                            format!(
                                "slide-{}-{}-{more}-{d_ms}.esl",
                                name.replace(['/', '#'], "_"),
                                k + 1
                            ),
                        );
                        failures.push(format!(
                            "{name}: ply {} ({}) cut {d_ms} ms into its slide, {more} plies more lost: published {:?}{}",
                            k + 1,
                            common::sans(&start, &moves)[k],
                            &published[k.saturating_sub(1)..published.len().min(k + more + 3)],
                            if lost { ", lost_track" } else { "" }
                        ));
                    }
                }
            }
        }
    }
    eprintln!("slides_cut: {cases} cases, {} failures", failures.len());
    assert!(cases > 0 && failures.is_empty(), "{}", failures.join("\n"));
}

/// A log of ply `c` caught at a dump, `k` plies lost before it, replayed
/// and judged: the moves published, whether the record is the game's moves
/// with `inferred` only on the plies lost and ply `c`, whether `lost_track`
/// was said and whether a take-back was; `None` when no game was recorded.
fn at_dump_outcome(
    log: &SensorLog,
    start: &Chess,
    moves: &[Move],
    c: usize,
    k: usize,
) -> Option<(Vec<String>, bool, bool, bool)> {
    let (published, flags, lost, taken_back) = replayed_at_dump(log, start)?;
    let marks_ok = flags
        .iter()
        .enumerate()
        .all(|(i, &f)| !f || (c - k..=c).contains(&i));
    let right = marks_ok && common::played::same_game_modulo_count(start, moves, &published, &flags);
    Some((published, right, lost, taken_back))
}

/// A class's failing case at a dump said: ply `c` (of `moves` from `start`)
/// caught `how`, `k` plies lost before it, what was published around it, and
/// the marks that apply (`lost_track`, a take-back).
fn at_dump_failure(
    name: &str,
    start: &Chess,
    moves: &[Move],
    (c, k): (usize, usize),
    how: &str,
    published: &[String],
    marks: &[(bool, &str)],
) -> String {
    let truth = common::sans(start, moves);
    let around = &published[(c - k).saturating_sub(1).min(published.len())..published.len().min(c + 3)];
    let marks: String = marks.iter().filter(|(on, _)| *on).map(|(_, m)| *m).collect();
    format!(
        "{name}: ply {} ({}) caught at the dump {how}, {k} plies lost before it: published {around:?}{marks}",
        c + 1,
        truth[c]
    )
}

/// A log of a move caught at a dump replayed: the moves published, their
/// `inferred` marks, whether `lost_track` was said and whether a take-back
/// was; `None` when no game was recorded.
fn replayed_at_dump(log: &SensorLog, start: &Chess) -> Option<(Vec<String>, Vec<bool>, bool, bool)> {
    let r = run(log, start);
    let (published, flags, lost) = recorded(r.core.game()?, &r);
    let taken_back = r
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::Takeback { .. }));
    Some((published, flags, lost, taken_back))
}

/// The log of `played` with the plies `c - k .. c` lost on the line and
/// `castling` (ply `c`) caught halfway by the dump after them: its king on
/// its castling square and the rook home (the Laws' order, 4.4.2); the rook
/// then seen going across, the castler's press, and the game on. `None` when
/// it is no castling.
fn with_castling_at_dump(
    played: &Played,
    history: &[Chess],
    castling: Move,
    c: usize,
    k: usize,
) -> Option<SensorLog> {
    use eboard_bridge::log::RecordKind;
    let Move::Castle { king, rook } = castling else {
        return None;
    };
    let side = CastlingSide::from_queen_side(rook < king);
    let k_to = Square::from_coords(side.king_to_file(), king.rank());
    let r_to = Square::from_coords(side.rook_to_file(), king.rank());
    let before = history[c].board();
    let rp = before.piece_at(rook)?;
    // The dump: the board before the castling with its king across.
    let mut dump = before.clone();
    let moved = dump.remove_piece_at(king)?;
    dump.set_piece_at(k_to, moved);
    let then = [
        RecordKind::Lift {
            square: rook,
            piece: None,
        },
        RecordKind::Place {
            square: r_to,
            piece: rp,
        },
    ];
    with_ply_at_dump(played, c, k, &dump, then)
}

/// The log of `played` with the plies `c - k .. c` lost on the line and ply
/// `c` caught halfway by the dump after them (`dump`, 150 ms into the ply):
/// then the lift and the placement that complete it (`then`, 200 and 350 ms
/// after the dump), the mover's press, and the game on a second later.
fn with_ply_at_dump(
    played: &Played,
    c: usize,
    k: usize,
    dump: &Board,
    then: [eboard_bridge::log::RecordKind; 2],
) -> Option<SensorLog> {
    use eboard_bridge::log::{LogTime, Record, RecordKind};
    let gap_start = played.plies[c - k].start;
    let ply = played.plies[c].clone();
    let at = played.records[ply.start].time.micros() + 150_000;
    let mut records: Vec<Record> = played.records[..gap_start].to_vec();
    let mut push = |time: u64, kind: RecordKind| {
        records.push(Record {
            time: LogTime::from_micros(time),
            kind,
        })
    };
    push(at, RecordKind::Gap("line away".into()));
    push(
        at,
        RecordKind::Board(Box::new(eboard_bridge::protocol::Placement::from_board(dump))),
    );
    let [lift, place] = then;
    push(at + 200_000, lift);
    push(at + 350_000, place);
    let press = played.records[ply.clone()]
        .iter()
        .find(|r| matches!(r.kind, RecordKind::Press(_)))
        .map(|r| r.kind.clone());
    if let Some(press) = press {
        push(at + 500_000, press);
    }
    // The game on, a second after the press at the earliest.
    let next = played.records.get(ply.end)?.time.micros();
    let shift = (at + 1_500_000).saturating_sub(next);
    records.extend(played.records[ply.end..].iter().map(|r| Record {
        time: LogTime::from_micros(r.time.micros() + shift),
        kind: r.kind.clone(),
    }));
    Some(SensorLog {
        header: Header::default(),
        records,
        lines: Vec::new(),
    })
}

/// `castlings_at_dumps`: every castling of the games caught halfway by the
/// dump after a gap of 0 to 3 plies before it (the king on its castling
/// square, the rook home), the rook then seen going across, two plies on. The record is the
/// game's moves exactly, `inferred` only on the plies lost and the
/// castling, nothing taken back, no `lost_track`. The event campaign's seed
/// 523: the dump after a restart caught Black's king on g8 with the rook on
/// h8, and 9. Qd2 Kf8 10. Qxd4 Kg8 were inferred (a king's walk never
/// played), then taken back when the rook went across.
#[test]
fn castlings_at_dumps() {
    let games = if full() { usize::MAX } else { 12 };
    let mut cases = 0;
    let mut failures = Vec::new();
    for (g, (name, start, moves)) in common::played::all_games().into_iter().take(games).enumerate() {
        let played = play_game(&start, &moves, g as u64 + 13);
        let history = positions(&start, &moves);
        for c in (0..moves.len()).filter(|&c| moves[c].is_castle() && c + 3 <= moves.len()) {
            // King first only: a rook set down first with the king home is the
            // board after a legal rook move (Rf1), recorded as that and then
            // taken back for the castling, a word said; and Art. 4.4.2 makes
            // a rook touched first a rook move.
            for k in 0..=3.min(c) {
                if tempo_trip(&history[c - k], &moves[c - k..=c]) {
                    continue;
                }
                let Some(log) = with_castling_at_dump(&played, &history, moves[c], c, k) else {
                    continue;
                };
                cases += 1;
                let Some((published, right, lost, taken_back)) = at_dump_outcome(&log, &start, &moves, c, k)
                else {
                    failures.push(format!("{name}: castling at ply {}: no game", c + 1));
                    continue;
                };
                if lost || taken_back || !right {
                    keep_case(
                        &log,
                        &start,
                        format!("castling-{}-{}-{k}.esl", name.replace(['/', '#'], "_"), c + 1),
                    );
                    failures.push(at_dump_failure(
                        &name,
                        &start,
                        &moves,
                        (c, k),
                        "king first",
                        &published,
                        &[(lost, ", lost_track"), (taken_back, ", a take-back")],
                    ));
                }
            }
        }
    }
    eprintln!("castlings_at_dumps: {cases} cases, {} failures", failures.len());
    assert!(cases > 0 && failures.is_empty(), "{}", failures.join("\n"));
}

/// `slides_caught_at_dumps`: every move of a rook, bishop or queen going two
/// squares or more, taking nothing, caught by the dump after a gap of 1 to 3
/// plies before it while its piece rests on the first square it crosses
/// (before its mover pressed), then seen going on to its square, the press,
/// two plies on. The record is the game's moves exactly, `inferred` only on
/// the plies lost and the slide, no `lost_track`. The event campaign's seed
/// 1300: the dump after a restart caught Black's rook on e8, on its way from
/// h8 to d8; the clock (Black's side running) made 16. Qd2 Re8 17. Qd3 of
/// 16. Qd3 Rd8, a tempo never played.
#[test]
fn slides_caught_at_dumps() {
    use eboard_bridge::log::RecordKind;
    let (games, every) = if full() { (usize::MAX, 1) } else { (8, 3) };
    let mut cases = 0;
    let mut failures = Vec::new();
    for (g, (name, start, moves)) in common::played::all_games().into_iter().take(games).enumerate() {
        let played = play_game(&start, &moves, g as u64 + 17);
        let history = positions(&start, &moves);
        for c in (1..moves.len()).filter(|&c| (c + g) % every == 0 && c + 3 <= moves.len()) {
            let Move::Normal {
                role,
                from,
                to,
                capture: None,
                promotion: None,
            } = moves[c]
            else {
                continue;
            };
            let crossed: Vec<Square> = {
                let mut between: Vec<Square> = shakmaty::attacks::between(from, to).into_iter().collect();
                between.sort_by_key(|sq| sq.distance(from));
                between
            };
            let (Some(&first), true) = (
                crossed.first(),
                matches!(role, Role::Rook | Role::Bishop | Role::Queen),
            ) else {
                continue;
            };
            let piece = Piece {
                color: history[c].turn(),
                role,
            };
            for k in 1..=3.min(c) {
                if tempo_trip(&history[c - k], &moves[c - k..=c]) {
                    continue;
                }
                // The dump: the board before the slide with its piece on the
                // first square it crosses.
                let mut dump = history[c].board().clone();
                dump.discard_piece_at(from);
                dump.set_piece_at(first, piece);
                let then = [
                    RecordKind::Lift {
                        square: first,
                        piece: None,
                    },
                    RecordKind::Place { square: to, piece },
                ];
                let Some(log) = with_ply_at_dump(&played, c, k, &dump, then) else {
                    continue;
                };
                cases += 1;
                let Some((published, right, lost, _)) = at_dump_outcome(&log, &start, &moves, c, k) else {
                    failures.push(format!("{name}: slide at ply {}: no game", c + 1));
                    continue;
                };
                if lost || !right {
                    keep_case(
                        &log,
                        &start,
                        format!(
                            "slide-at-dump-{}-{}-{k}.esl",
                            name.replace(['/', '#'], "_"),
                            c + 1
                        ),
                    );
                    failures.push(at_dump_failure(
                        &name,
                        &start,
                        &moves,
                        (c, k),
                        &format!("on {first}"),
                        &published,
                        &[(lost, ", lost_track")],
                    ));
                }
            }
        }
    }
    eprintln!(
        "slides_caught_at_dumps: {cases} cases, {} failures",
        failures.len()
    );
    assert!(cases > 0 && failures.is_empty(), "{}", failures.join("\n"));
}

/// `captures_at_dumps`: every capture of the games (but en passant) caught
/// halfway by the dump after a gap of 0 to 3 plies before it, the capturer
/// in the hand (its victim still on its square) or the victim taken off
/// first (the capturer home), the capture then seen completed. The record
/// is the game's moves exactly, `inferred` only on the plies lost and the
/// capture, nothing taken back, no `lost_track`. The event campaign's seed
/// 744: the dump after a restart caught 3... dxe4 with the d5 pawn in the
/// hand, and 4. Nxd5 Qd8 5. Nc3 were inferred (the pawn explained as taken
/// and the knight's way home) when the capture came down: the board had no
/// piece more on it than the dump, which was then taken for a board at rest.
#[test]
fn captures_at_dumps() {
    let (games, every) = if full() { (usize::MAX, 1) } else { (12, 3) };
    let mut cases = 0;
    let mut tied_cases = 0;
    let mut failures = Vec::new();
    for (g, (name, start, moves)) in common::played::all_games().into_iter().take(games).enumerate() {
        let played = play_game(&start, &moves, g as u64 + 29);
        let history = positions(&start, &moves);
        let captures = (0..moves.len())
            .filter(|&c| matches!(moves[c], Move::Normal { capture: Some(_), .. }) && c + 3 <= moves.len());
        for c in captures.step_by(every) {
            for k in 0..=3.min(c) {
                if tempo_trip(&history[c - k], &moves[c - k..=c]) {
                    continue;
                }
                for capturer_first in [true, false] {
                    let Some((log, dump)) =
                        with_capture_at_dump(&played, &history, moves[c], c, k, capturer_first)
                    else {
                        continue;
                    };
                    cases += 1;
                    // Plies as few as the gap's and the capture end on the dump
                    // exactly (36. Qe3 Nxe3 for 36. Qh5 Ne3 and the queen
                    // lifted to take on h7): the dump cannot tell, and those
                    // plies are recorded until the capture comes down; then
                    // taken back with a word, and the game's recorded.
                    let tied = reaches(&history[c - k], &dump, k + 1);
                    tied_cases += usize::from(tied);
                    let Some((published, flags, lost, taken_back)) = replayed_at_dump(&log, &start) else {
                        failures.push(format!("{name}: capture at ply {}: no game", c + 1));
                        continue;
                    };
                    // Only the gap's plies and the capture may be marked
                    // inferred, and the gap's must be: they never reached
                    // the daemon (seed 772's symptom was such a ply marked
                    // seen).
                    let marks_ok = flags
                        .iter()
                        .enumerate()
                        .all(|(i, &f)| !f || (c - k..=c).contains(&i))
                        && (published.len() != moves.len()
                            || (c - k..c).all(|i| flags.get(i) == Some(&true)));
                    if lost
                        || (taken_back && !tied)
                        || !marks_ok
                        || !common::played::same_game_modulo_count(&start, &moves, &published, &flags)
                    {
                        let first = if capturer_first { "capturer" } else { "victim" };
                        keep_case(
                            &log,
                            &start,
                            format!(
                                "capture-{}-{}-{k}-{first}.esl",
                                name.replace(['/', '#'], "_"),
                                c + 1
                            ),
                        );
                        failures.push(at_dump_failure(
                            &name,
                            &start,
                            &moves,
                            (c, k),
                            &format!("with the {first} lifted"),
                            &published,
                            &[(lost, ", lost_track"), (taken_back, ", a take-back")],
                        ));
                    }
                }
            }
        }
    }
    eprintln!(
        "captures_at_dumps: {cases} cases ({tied_cases} tied: as few plies end on the dump), {} failures",
        failures.len()
    );
    assert!(cases > 0 && failures.is_empty(), "{}", failures.join("\n"));
}

/// The log of game `played` with the plies `c - k .. c` lost in a gap and
/// ply `c`, a capture, caught by the dump after it with its capturer lifted
/// (`capturer_first`) or its victim taken off first; the capture then
/// completed on the line, its press, and the game on.
fn with_capture_at_dump(
    played: &Played,
    history: &[Chess],
    capture: Move,
    c: usize,
    k: usize,
    capturer_first: bool,
) -> Option<(SensorLog, Board)> {
    use eboard_bridge::log::RecordKind;
    let Move::Normal { from, to, .. } = capture else {
        return None;
    };
    let before = history[c].board();
    let after = history[c + 1].board().piece_at(to)?;
    // The dump: the board before the capture with one of its pieces lifted.
    let mut dump = before.clone();
    let (first, then) = if capturer_first { (from, to) } else { (to, from) };
    dump.remove_piece_at(first)?;
    let rest = [
        RecordKind::Lift {
            square: then,
            piece: None,
        },
        RecordKind::Place {
            square: to,
            piece: after,
        },
    ];
    let log = with_ply_at_dump(played, c, k, &dump, rest)?;
    Some((log, dump))
}

/// The log of a game played to ply `s`, where the mover first makes another
/// legal move `other` (released: recorded), takes it back (the piece home,
/// `back_ms` before the line goes), and the line is then lost for the plies
/// `s .. s + k` (the real move among them); the dump after them, two plies on.
fn with_take_back_before_gap(
    start: &Chess,
    moves: &[Move],
    s: usize,
    k: usize,
    other: Move,
    back_ms: u64,
    seed: u64,
) -> SensorLog {
    use eboard_bridge::log::RecordKind;
    let mut h = hands(seed, true);
    h.board(start.board());
    let mut pos = start.clone();
    for m in &moves[..s] {
        h.play(&pos, m);
        pos.play_unchecked(*m);
    }
    let (Some(from), Move::Normal { role, to, .. }) = (other.from(), other) else {
        unreachable!("a plain move");
    };
    let piece = Piece {
        color: pos.turn(),
        role,
    };
    h.wait(800);
    h.lift(from, piece);
    h.place(to, piece);
    // Released (past the release threshold): the move is recorded.
    h.wait(600);
    h.lift(to, piece);
    h.place(from, piece);
    h.wait(back_ms);
    h.push(RecordKind::Gap("line away".into()));
    for m in &moves[s..s + k] {
        pos.play_unchecked(*m);
    }
    h.wait(1000);
    h.board(pos.board());
    two_plies_on(h, pos, moves, s + k)
}

/// `taken_back_before_gaps`: at every 7th ply (every 3rd in full), the mover
/// makes another legal move (plain, taking nothing), releases it, takes it
/// back, and the line goes 100 ms or 400 ms later (before the take-back is
/// decided) for 1 to 3 plies, the real move first; the dump, two plies on.
/// The record is the game's moves (the move taken back amended or taken back
/// with a word), `inferred` only on the plies lost, no `lost_track`. The
/// event campaign's seed 779: 4. Ng5 made and taken back 0.5 s before a
/// kill stood as a move seen before the gap, and 4. Nxd4 e6 could not follow
/// from it (`lost_track` for the rest of the game).
#[test]
fn taken_back_before_gaps() {
    let (games, every) = if full() { (usize::MAX, 3) } else { (8, 7) };
    let mut cases = 0;
    let mut failures = Vec::new();
    for (g, (name, start, moves)) in common::played::all_games().into_iter().take(games).enumerate() {
        let history = positions(&start, &moves);
        for s in (2..moves.len()).filter(|s| (s + g) % every == 0) {
            let pos = &history[s];
            // Another plain move, ending nothing, whose board is no other
            // position of the game's next plies.
            let Some(other) = pos.legal_moves().into_iter().find(|m| {
                *m != moves[s]
                    && matches!(
                        m,
                        Move::Normal {
                            promotion: None,
                            capture: None,
                            ..
                        }
                    )
                    && m.role() != Role::King
            }) else {
                continue;
            };
            for k in 1..=3 {
                if s + k + 2 > moves.len() || tempo_trip(pos, &moves[s..s + k]) {
                    continue;
                }
                for back_ms in [100, 400] {
                    cases += 1;
                    let log = with_take_back_before_gap(&start, &moves, s, k, other, back_ms, cases as u64);
                    let r = run(&log, &start);
                    let Some(game) = r.core.game() else {
                        failures.push(format!("{name}: ply {}: no game", s + 1));
                        continue;
                    };
                    let (published, flags, lost) = recorded(game, &r);
                    let marks_ok = flags
                        .iter()
                        .enumerate()
                        .all(|(i, &f)| !f || (s..s + k).contains(&i));
                    if lost
                        || !marks_ok
                        || !common::played::same_game_modulo_count(
                            &start,
                            &moves[..s + k + 2],
                            &published,
                            &flags,
                        )
                    {
                        keep_case(
                            &log,
                            &start,
                            format!(
                                "takeback-{}-{}-{k}-{back_ms}.esl",
                                name.replace(['/', '#'], "_"),
                                s + 1
                            ),
                        );
                        let truth = common::sans(&start, &moves);
                        failures.push(format!(
                            "{name}: another move made and taken back before ply {} ({}), the line lost {back_ms} ms later for {k} plies: published {:?}, inferred {:?}{}",
                            s + 1,
                            truth[s],
                            &published[s.saturating_sub(1).min(published.len())..published.len().min(s + k + 2)],
                            flags.iter().enumerate().filter(|(_, f)| **f).map(|(i, _)| i).collect::<Vec<_>>(),
                            if lost { ", lost_track" } else { "" }
                        ));
                    }
                }
            }
        }
    }
    eprintln!(
        "taken_back_before_gaps: {cases} cases, {} failures",
        failures.len()
    );
    failures.truncate(40);
    assert!(cases > 0 && failures.is_empty(), "{}", failures.join("\n"));
}
