//! Blitz hands (`sim::Style::blitz`, players of 3+2): every game of
//! `tests/data/games` and random games (long endgames with king walks among
//! them) are played by blitz hands and replayed through the rules core three
//! ways: with the clock pressed, without a clock, and as a board polled once a
//! second. With the clock and without, each must give the game played, with no
//! touch-move flag, no irregularity (`displaced`, `lost_track`), no take-back.
//! Read by dumps, each must agree with the game played (but for the order of
//! plies no dump shows), or be reported at or before its first wrong ply, with
//! no touch-move flag.
//!
//! `cargo test --test suite blitz::` runs a small campaign (a few seconds). The full
//! campaign of `docs/RELIABILITY.md`:
//! `BLITZ=full cargo test --release --test suite blitz:: -- --nocapture`
//! (`BLITZ_SEED=N` plays only the random game of seed N, and keeps its logs in the
//! temporary folder, each with `# fen:` and `# played:` header lines: the start
//! and the moves played, to replay by hand; `BLITZ_GAME=NAME` does the same for
//! the games of `tests/data/games` whose name holds NAME).

use crate::common;

use eboard_bridge::board::Orientation;
use eboard_bridge::log::SensorLog;
use eboard_bridge::output::replay;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::rules::{Config, EventKind, IrregularKind};
use eboard_bridge::sim::{Hands, Seeded, Style};
use shakmaty::{CastlingMode, Chess, Color, Move, Position, Role};

/// A game to play: its name, start, castling mode and moves.
struct Played {
    name: String,
    start: Chess,
    mode: CastlingMode,
    moves: Vec<Move>,
}

/// Every game of `tests/data/games`.
fn real_games() -> Vec<Played> {
    let files = common::files_with_extension(&common::data("games"), "pgn");
    let mut games = Vec::new();
    for f in files {
        let rel = format!("games/{}", f.file_name().unwrap().to_string_lossy());
        for (k, g) in common::pgn_games(&rel).into_iter().enumerate() {
            games.push(Played {
                name: format!("{rel}#{}", k + 1),
                start: g.start,
                mode: g.mode,
                moves: g.moves,
            });
        }
    }
    games
}

/// Random legal moves from `pos` until the game ends or `max` plies; in an
/// ending (`kings` percent) a king move when there is one: king walks.
fn random_moves(mut pos: Chess, rng: &mut Seeded, max: usize, kings: u64) -> Vec<Move> {
    let mut moves = Vec::new();
    while moves.len() < max {
        let legal = pos.legal_moves();
        if legal.is_empty() || pos.is_insufficient_material() {
            break;
        }
        let king: Vec<&Move> = legal.iter().filter(|m| m.role() == Role::King).collect();
        let mv = if !king.is_empty() && rng.chance(kings) {
            *king[rng.range(0, king.len() as u64 - 1) as usize]
        } else {
            legal[rng.range(0, legal.len() as u64 - 1) as usize]
        };
        pos.play_unchecked(mv);
        moves.push(mv);
    }
    moves
}

/// The material of the endings (white's pieces, black's), kings added.
const ENDINGS: [(&str, &str); 12] = [
    ("Q", ""),
    ("R", ""),
    ("R", "P"),
    ("RP", "R"),
    ("P", "P"),
    ("PP", "P"),
    ("Q", "R"),
    ("RPP", "RP"),
    ("NP", "B"),
    ("B", "PP"),
    ("QP", "Q"),
    ("RB", "R"),
];

/// A random legal position with the material of one of `ENDINGS`.
fn ending(rng: &mut Seeded) -> Chess {
    let (white, black) = ENDINGS[rng.range(0, ENDINGS.len() as u64 - 1) as usize];
    loop {
        let mut board = shakmaty::Board::empty();
        let put = |board: &mut shakmaty::Board, c: char, rng: &mut Seeded| loop {
            let piece = shakmaty::Piece::from_char(c).unwrap();
            let sq = shakmaty::Square::new(rng.range(0, 63) as u32);
            let edge = matches!(sq.rank(), shakmaty::Rank::First | shakmaty::Rank::Eighth);
            if board.piece_at(sq).is_none() && !(piece.role == Role::Pawn && edge) {
                board.set_piece_at(sq, piece);
                return;
            }
        };
        put(&mut board, 'K', rng);
        put(&mut board, 'k', rng);
        for c in white.chars() {
            put(&mut board, c, rng);
        }
        for c in black.chars() {
            put(&mut board, c.to_ascii_lowercase(), rng);
        }
        let turn = if rng.chance(50) {
            Color::White
        } else {
            Color::Black
        };
        let setup = shakmaty::Setup {
            board,
            turn,
            ..shakmaty::Setup::empty()
        };
        if let Ok(pos) = <Chess as shakmaty::FromSetup>::from_setup(setup, CastlingMode::Standard) {
            if !pos.legal_moves().is_empty() {
                return pos;
            }
        }
    }
}

/// Random game `seed`: even seeds a game from the start (up to 160 plies), odd
/// seeds a long ending with king walks (up to 120 plies).
fn random_game(seed: u64) -> Played {
    let mut rng = Seeded::new(0xb117_2000 + seed);
    let (start, moves) = if seed % 2 == 0 {
        let start = Chess::default();
        let moves = random_moves(start.clone(), &mut rng, 160, 0);
        (start, moves)
    } else {
        let start = ending(&mut rng);
        let moves = random_moves(start.clone(), &mut rng, 120, 60);
        (start, moves)
    };
    Played {
        name: format!("random seed {seed}"),
        start,
        mode: CastlingMode::Standard,
        moves,
    }
}

/// The game played by blitz hands (`clock`: the clock set for 3+2 and pressed
/// after every move).
fn blitz_log(game: &Played, seed: u64, clock: bool) -> SensorLog {
    let style = Style {
        clock,
        ..Style::blitz()
    };
    let mut hands = Hands::new(seed, style, Orientation::Normal);
    hands.board(game.start.board());
    if clock {
        // 3 minutes and the 2 s increments of a player's moves (the sensor
        // log's clock adds none).
        let secs = 180 + 2 * game.moves.len().div_ceil(2) as u32;
        hands.set_clock(ClockTime::from_hms(0, (secs / 60) as u8, (secs % 60) as u8).unwrap());
    }
    hands.wait(1000);
    common::played_log(hands, &game.start, &game.moves, 3000)
}

/// What one replay gave.
#[derive(Default)]
struct Tally {
    exact: bool,
    /// The record agrees with the game but for what dumps cannot show (see
    /// [`agrees`]); the plies of round trips no dump showed.
    agrees: bool,
    /// Where it stops agreeing: the first recorded ply (0-based) of the move or
    /// stretch that is not the game's.
    disagrees_at: Option<usize>,
    /// The first recorded ply (0-based) after the last point where the record
    /// stood on the game's position ([`wrong_from`]).
    wrong_from: usize,
    unseen: usize,
    /// The record's first ply (0-based) the first report (an `irregular`
    /// event: `ambiguous` names the ply it leaves open, the others stand for
    /// the record as it was) stands for: what is wrong from there on was said.
    reported_at: Option<usize>,
    ambiguous: usize,
    flags: usize,
    irregular: Vec<&'static str>,
    takebacks: usize,
    amended: usize,
    inferred: usize,
    moves: Vec<String>,
}

fn replay_log(game: &Played, log: &SensorLog) -> Tally {
    let start = (game.start != Chess::default() || game.mode != CastlingMode::Standard)
        .then(|| (game.start.clone(), game.mode));
    let r = replay::run(log, &game.name, Config::default(), start).unwrap();
    let moves = common::replayed::recorded_ucis(&r);
    let truth: Vec<String> = game
        .moves
        .iter()
        .map(|m| m.to_uci(game.mode).to_string())
        .collect();
    let marked: Vec<bool> = r
        .core
        .games()
        .flat_map(|g| g.moves.iter().map(|m| m.inferred))
        .collect();
    let unseen = agrees(game, &moves, &marked);
    let wrong = wrong_from(game, &moves, &marked);
    let mut t = Tally {
        wrong_from: wrong,
        exact: moves == truth,
        agrees: unseen.is_ok(),
        disagrees_at: unseen.err(),
        unseen: unseen.unwrap_or(0),
        moves,
        ..Tally::default()
    };
    // The record's length as the events go.
    let mut plies = 0usize;
    for e in &r.events {
        match &e.kind {
            EventKind::Move { ply, .. } => plies = *ply as usize,
            EventKind::Takeback { to_ply, .. } => plies = *to_ply as usize,
            _ => {}
        }
        match &e.kind {
            EventKind::TouchMove { .. } => t.flags += 1,
            EventKind::Irregular { kind, ply, .. } => {
                let from = match (kind, ply) {
                    (IrregularKind::Ambiguous, Some(p)) => (*p as usize).saturating_sub(1),
                    _ => plies,
                };
                t.reported_at.get_or_insert(from);
                t.ambiguous += usize::from(*kind == IrregularKind::Ambiguous);
                t.irregular.push(kind.name());
            }
            EventKind::Takeback { .. } => t.takebacks += 1,
            EventKind::MoveAmended { .. } => t.amended += 1,
            EventKind::Move { inferred: true, .. } => t.inferred += 1,
            _ => {}
        }
    }
    t
}

/// A position's board, side to move and castling rights (what a dump and the
/// turn say), as FEN fields.
fn key(p: &Chess) -> String {
    let fen = eboard_bridge::rules::game_fen(p);
    fen.split(' ').take(3).collect::<Vec<_>>().join(" ")
}

/// The game's positions, from its start, and its moves in UCI.
fn positions_and_moves(game: &Played) -> (Vec<Chess>, Vec<String>) {
    let mut real = vec![game.start.clone()];
    for m in &game.moves {
        let mut next = real[real.len() - 1].clone();
        next.play_unchecked(*m);
        real.push(next);
    }
    let truth = game
        .moves
        .iter()
        .map(|m| m.to_uci(game.mode).to_string())
        .collect();
    (real, truth)
}

/// Whether the record (`moves`, UCI, with their `inferred` marks) is the game
/// played but for what no dump a second apart can show: each move not marked is
/// the one played; each stretch of inferred moves ends on the position the game
/// reached after as many plies (their order may differ where several reach it),
/// or after more when pieces went somewhere and back between two dumps (a round
/// trip, never invented). The plies of those round trips, or `None`.
fn agrees(game: &Played, moves: &[String], marked: &[bool]) -> Result<usize, usize> {
    let (real, truth) = positions_and_moves(game);
    let (mut i, mut k, mut unseen) = (0usize, 0usize, 0usize);
    let mut ours = game.start.clone();
    while k < moves.len() {
        let end = if marked[k] {
            (k..moves.len()).find(|&x| !marked[x]).unwrap_or(moves.len())
        } else {
            k + 1
        };
        for uci in &moves[k..end] {
            let mv = uci
                .parse::<shakmaty::uci::UciMove>()
                .ok()
                .and_then(|u| u.to_move(&ours).ok());
            ours.play_unchecked(mv.ok_or(k)?);
        }
        let len = end - k;
        let j = if marked[k] {
            (i + len..=game.moves.len())
                .find(|&j| key(&real[j]) == key(&ours))
                .ok_or(k)?
        } else if truth.get(i) == Some(&moves[k]) {
            i + 1
        } else {
            return Err(k);
        };
        unseen += j - i - len;
        i = j;
        k = end;
    }
    if i == game.moves.len() { Ok(unseen) } else { Err(k) }
}

/// Where the record went wrong: the ply (0-based) after the last point at
/// which it stood on the game's position (board, side to move and castling,
/// as many plies in or more: round trips no dump shows), every move not marked
/// inferred before it being the one played. The record's length when it
/// never did.
fn wrong_from(game: &Played, moves: &[String], marked: &[bool]) -> usize {
    let (real, truth) = positions_and_moves(game);
    // (record plies, game plies) at the last point the two stood on the same
    // position.
    let (mut synced, mut i) = (0usize, 0usize);
    let mut ours = game.start.clone();
    for (k, uci) in moves.iter().enumerate() {
        let Some(mv) = uci
            .parse::<shakmaty::uci::UciMove>()
            .ok()
            .and_then(|u| u.to_move(&ours).ok())
        else {
            break;
        };
        if !marked[k] && (synced != k || truth.get(i) != Some(uci)) {
            break;
        }
        ours.play_unchecked(mv);
        let since = k + 1 - synced;
        if let Some(j) = (i + since..=game.moves.len()).find(|&j| key(&real[j]) == key(&ours)) {
            synced = k + 1;
            i = j;
        }
    }
    synced
}

/// Figures of a campaign.
#[derive(Default)]
struct Figures {
    games: usize,
    plies: usize,
    replays: usize,
    exact: usize,
    agree: usize,
    /// Wrong from a ply on, and reported at or before it.
    reported: usize,
    /// Wrong before any report (a polled replay's failure).
    unreported: usize,
    ambiguous: usize,
    unseen: usize,
    flags: usize,
    irregular: usize,
    takebacks: usize,
    amended: usize,
    inferred: usize,
}

/// Plays `game` with the clock and without (or, `polled_only`, read by dumps);
/// returns the failures.
fn judge(game: &Played, seed: u64, fig: &mut Figures, show: bool, polled_only: bool) -> Vec<String> {
    let with_clock = blitz_log(game, seed, true);
    let without = blitz_log(game, seed, false);
    let polled = common::polled(&without);
    let mut failures = Vec::new();
    fig.games += 1;
    fig.plies += game.moves.len();
    let ways = [
        ("clock", &with_clock),
        ("no clock", &without),
        ("polled", &polled),
    ];
    for (way, log) in ways.into_iter().filter(|(w, _)| (*w == "polled") == polled_only) {
        if show {
            // BLITZ_SEED: the logs are kept to look into.
            let file = std::env::temp_dir().join(format!("blitz-{seed}-{}.esl", way.replace(' ', "-")));
            // The start and the moves played, to replay and compare by hand.
            let mut header = log.header.clone();
            header.set("fen", &eboard_bridge::rules::game_fen(&game.start));
            let truth: Vec<String> = game
                .moves
                .iter()
                .map(|m| m.to_uci(game.mode).to_string())
                .collect();
            header.set("played", &truth.join(" "));
            let text = eboard_bridge::log::to_string(&header, &log.records).unwrap();
            std::fs::write(&file, text).unwrap();
            println!("{}: {}", game.name, file.display());
        }
        let t = replay_log(game, log);
        fig.replays += 1;
        fig.exact += usize::from(t.exact);
        fig.agree += usize::from(t.agrees);
        fig.unseen += t.unseen;
        fig.flags += t.flags;
        fig.irregular += t.irregular.len();
        fig.takebacks += t.takebacks;
        fig.amended += t.amended;
        fig.inferred += t.inferred;
        // Update mode must be exact, with no irregularity and no take-back.
        // Dumps a second apart at blitz pace cannot tell the order of the
        // plies between them, nor always how many there were: the record must
        // agree, or be reported where it stops agreeing (never wrong before a
        // report), with no touch-move flag.
        let said = t.reported_at.is_some_and(|report| report <= t.wrong_from);
        let right = if way == "polled" {
            (t.agrees || said) && t.flags == 0
        } else {
            t.exact && t.flags == 0 && t.irregular.is_empty() && t.takebacks == 0
        };
        if way == "polled" && !t.agrees {
            fig.reported += usize::from(said);
            fig.unreported += usize::from(!said);
        }
        fig.ambiguous += t.ambiguous;
        if !right {
            failures.push(format!(
                "{} ({way}, hands seed {seed}): exact={} agrees={} (disagrees from ply {}, wrong from ply {}, first report from ply {}) flags {} irregular {:?} takebacks {}; recorded {} of {} plies{}",
                game.name,
                t.exact,
                t.agrees,
                t.disagrees_at.map_or("-".to_string(), |k| (k + 1).to_string()),
                t.wrong_from + 1,
                t.reported_at.map_or("-".to_string(), |k| (k + 1).to_string()),
                t.flags,
                t.irregular,
                t.takebacks,
                t.moves.len(),
                game.moves.len(),
                first_difference(game, &t.moves),
            ));
        }
    }
    failures
}

fn first_difference(game: &Played, got: &[String]) -> String {
    let truth: Vec<String> = game
        .moves
        .iter()
        .map(|m| m.to_uci(game.mode).to_string())
        .collect();
    match truth.iter().zip(got).position(|(a, b)| a != b) {
        Some(i) => format!(
            ", first difference at ply {}: {} recorded as {}",
            i + 1,
            truth[i],
            got[i]
        ),
        None => String::new(),
    }
}

fn campaign(
    real: Vec<(usize, Played)>,
    randoms: Vec<u64>,
    show: bool,
    polled: bool,
) -> (Figures, Vec<String>) {
    let mut fig = Figures::default();
    let mut failures = Vec::new();
    for (k, g) in &real {
        failures.extend(judge(g, 500 + *k as u64, &mut fig, show, polled));
    }
    for seed in randoms {
        failures.extend(judge(&random_game(seed), seed, &mut fig, show, polled));
    }
    (fig, failures)
}

#[test]
fn blitz_hands_are_recorded_exactly() {
    run(false);
}

/// The same games read by dumps once a second. At blitz pace two to four
/// plies fall between two dumps, and nothing on the board tells their order
/// (or at times their number): each game must agree with the play, or be
/// reported at or before the first ply it records wrong, with no touch-move
/// flag (`docs/RELIABILITY.md`).
#[test]
fn blitz_hands_on_a_polled_board() {
    run(true);
}

fn run(polled: bool) {
    let full = std::env::var("BLITZ").is_ok_and(|v| v == "full");
    let (real, randoms, show) = if let Ok(s) = std::env::var("BLITZ_SEED") {
        let seeds = s.split(',').filter_map(|x| x.trim().parse().ok()).collect();
        (Vec::new(), seeds, true)
    } else if let Ok(name) = std::env::var("BLITZ_GAME") {
        // The games of `tests/data/games` whose name holds this, with the
        // hands' seed of the full campaign; their logs are kept.
        let pick = real_games()
            .into_iter()
            .enumerate()
            .filter(|(_, g)| g.name.contains(&name));
        (pick.collect(), Vec::new(), true)
    } else if full {
        (
            real_games().into_iter().enumerate().collect(),
            (0..300).collect(),
            false,
        )
    } else {
        // A few seconds: two real games (one Chess960) and four random ones
        // (two endings).
        let all = real_games();
        // The hands' seeds as before: by the place in this pick.
        let pick: Vec<(usize, Played)> = all
            .into_iter()
            .enumerate()
            .filter(|(i, g)| *i == 0 || (g.mode == CastlingMode::Chess960 && g.moves.len() < 90))
            .map(|(_, g)| g)
            .take(2)
            .enumerate()
            .collect();
        (pick, (0..4).collect(), false)
    };
    let (fig, failures) = campaign(real, randoms, show, polled);
    println!(
        "blitz{}: {} games, {} plies, {} replays ({} exact, {} agree, {} wrong from a report on, {} wrong before any report), {} plies of round trips between dumps, {} flags, {} irregularities ({} ambiguous), {} take-backs, {} amendments, {} moves inferred",
        if polled { " (polled)" } else { "" },
        fig.games,
        fig.plies,
        fig.replays,
        fig.exact,
        fig.agree,
        fig.reported,
        fig.unreported,
        fig.unseen,
        fig.flags,
        fig.irregular,
        fig.ambiguous,
        fig.takebacks,
        fig.amended,
        fig.inferred
    );
    assert!(fig.games > 0);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
