//! The boards of a round of the event campaign: each one's game (a real game cut
//! to the round's plies, or a short mate left standing), played by seeded hands
//! at a human or a blitz pace with slips (an illegal move held, a piece knocked
//! over), its players with their ratings and FIDE ids, and the pairings file.

use eboard_bridge::board::Orientation;
use eboard_bridge::log::SensorLog;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::{Hands, Seeded, Style};
use shakmaty::{Chess, Move, Position, Role, Square};

use super::common::played::{Touch, all_games, touch_of};
use super::{Plan, moves_of};

/// One board's game as the hands play it.
pub struct BoardGame {
    pub name: String,
    pub start: Chess,
    pub moves: Vec<Move>,
    pub log: SensorLog,
    /// Every lift and placement of the log in order (log µs), with the ply it
    /// belongs to (`None`: a slip's).
    pub touches: Vec<(Option<usize>, u64, Touch)>,
    /// Each piece the hands held where no move goes longer than the
    /// threshold: from its placement to its lift (log µs).
    pub holds: Vec<(u64, u64)>,
    pub white: Player,
    pub black: Player,
}

#[derive(Clone)]
pub struct Player {
    pub name: String,
    pub elo: String,
    pub fide: String,
}

/// A human pace: think 1.5-3 s.
fn human() -> Style {
    Style {
        think_ms: (1500, 3000),
        step_ms: (120, 350),
        ..Style::default()
    }
}

/// Blitz hands (premove reaches, presses landing late), a little slower to
/// think, so that a restart of the daemon spans no more plies than a gap may.
fn quick() -> Style {
    Style {
        think_ms: (600, 1500),
        ..Style::blitz()
    }
}

/// An empty square `piece` on `from` cannot reach by a legal move: where hands
/// put it down illegally.
fn illegal_square(pos: &Chess, from: Square) -> Option<Square> {
    let legal: Vec<Square> = pos
        .legal_moves()
        .iter()
        .filter(|m| m.from() == Some(from))
        .map(|m| m.to())
        .collect();
    Square::ALL.into_iter().find(|sq| {
        pos.board().piece_at(*sq).is_none()
            && !legal.contains(sq)
            && sq.distance(from) >= 2
            && !matches!(sq.rank(), shakmaty::Rank::First | shakmaty::Rank::Eighth)
    })
}

pub fn board_game(plan: &Plan, b: usize) -> BoardGame {
    let mut rng = Seeded::new(plan.seed.wrapping_mul(1_000_003) ^ (b as u64 * 7919));
    let start = Chess::default();
    // Board 1 sometimes plays a short mate that stays on the board (the
    // phantom game of issue 47 came from such a board after a restart).
    let (name, moves) = if b == 0 && rng.chance(50) {
        if rng.chance(50) {
            (
                "fool's mate".to_string(),
                moves_of(&start, &["f3", "e5", "g4", "Qh4#"]),
            )
        } else {
            (
                "scholar's mate".to_string(),
                moves_of(&start, &["e4", "e5", "Bc4", "Nc6", "Qh5", "Nf6", "Qxf7#"]),
            )
        }
    } else {
        let games = all_games();
        let (name, _, moves) = &games[rng.range(0, games.len() as u64 - 1) as usize];
        (name.clone(), moves[..plan.plies.min(moves.len())].to_vec())
    };
    let blitz = rng.chance(33);
    let mut hands = Hands::new(
        rng.next_u64(),
        if blitz { quick() } else { human() },
        Orientation::Normal,
    );
    hands.board(start.board());
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    hands.wait(8000);
    let mut pos = start.clone();
    let mut owner: Vec<(usize, usize)> = Vec::new();
    let mut holds = Vec::new();
    for mv in &moves {
        // Slips at a human pace: an illegal move held past the threshold, the
        // piece kept in the hand as long again, then put back; a piece of the
        // side not to move knocked over and set up again.
        if !blitz && rng.chance(12) {
            if let (Some(from), Some(piece)) = (mv.from(), mv.from().and_then(|f| pos.board().piece_at(f))) {
                if let Some(to) = illegal_square(&pos, from) {
                    hands.lift(from, piece);
                    hands.place(to, piece);
                    let placed = hands.now().micros();
                    hands.wait(3000);
                    hands.lift(to, piece);
                    holds.push((placed, hands.now().micros()));
                    hands.wait(3000);
                    hands.place(from, piece);
                    hands.wait(600);
                }
            }
        } else if !blitz && rng.chance(8) {
            let theirs = pos.board().by_color(!pos.turn()) & !pos.board().by_role(Role::King);
            if let Some(sq) = theirs.into_iter().next() {
                let piece = pos.board().piece_at(sq).unwrap();
                hands.knock(sq, piece, 3000);
            }
        }
        let from = hands.records.len();
        hands.play(&pos, mv);
        owner.push((from, hands.records.len()));
        pos.play_unchecked(*mv);
    }
    hands.flush();
    let touches = hands
        .records
        .iter()
        .enumerate()
        .filter_map(|(k, r)| {
            let ply = owner.iter().position(|(a, z)| (*a..*z).contains(&k));
            touch_of(&r.kind).map(|t| (ply, r.time.micros(), t))
        })
        .collect();
    let log = super::common::played_log(hands, &pos, &[], 3000);
    let n = b + 1;
    BoardGame {
        name,
        start,
        moves,
        log,
        touches,
        holds,
        white: Player {
            name: format!("White{n}, Ann"),
            elo: format!("{}", 2000 + 10 * n),
            fide: format!("{}", 100_000 + n),
        },
        black: Player {
            name: format!("Black{n}, Bob"),
            elo: format!("{}", 2300 + 10 * n),
            fide: format!("{}", 200_000 + n),
        },
    }
}

/// The pairings file: each board's players with their ratings and FIDE ids,
/// board `swapped`'s colours swapped.
pub fn pairings(games: &[BoardGame], swapped: &[bool]) -> String {
    let mut s = String::from("board,white,black,white_elo,black_elo,white_fide_id,black_fide_id\n");
    for (i, g) in games.iter().enumerate() {
        let (w, b) = if swapped[i] {
            (&g.black, &g.white)
        } else {
            (&g.white, &g.black)
        };
        s.push_str(&format!(
            "{},\"{}\",\"{}\",{},{},{},{}\n",
            i + 1,
            w.name,
            b.name,
            w.elo,
            b.elo,
            w.fide,
            b.fide
        ));
    }
    s
}
