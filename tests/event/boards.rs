//! The boards of a round of the event campaign: each one's game (a real game cut
//! to the round's plies, or a short mate left standing), played by seeded hands
//! at a human or a blitz pace with slips (an illegal move held, a piece knocked
//! over, another move made and taken back, another piece touched first), the
//! result given by kings on one board, its players with their ratings and
//! FIDE ids, and the pairings file.

use eboard_bridge::board::Orientation;
use eboard_bridge::log::SensorLog;
use eboard_bridge::protocol::ClockTime;
use eboard_bridge::sim::{Hands, Seeded, Style};
use shakmaty::{Chess, Move, Piece, Position, Role, Square};

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
    /// The log µs of the game's last ply (the board's play is over then, but
    /// for a piece held at its end).
    pub played: u64,
    /// A piece set where no move goes after the last ply and left there (log
    /// µs, from its placement to its lift), for the arbiter to give the
    /// result over it: a game that ends with an alarm standing.
    pub held_at_end: Option<(u64, u64)>,
    /// The result the hands gave by kings after the last ply (the DGT
    /// convention: both kings on the centre).
    pub kings: Option<&'static str>,
    /// The plies (0-based) before which the mover touched another of its
    /// pieces, one with a legal move, and put it back (Art. 4.3.1: that
    /// piece had to be moved): the daemon says `touch_move` when it sees it.
    pub touched: Vec<usize>,
    /// The board as the hands left it (the kings on the centre after a result
    /// by kings): where the next round's set-up starts.
    pub end_board: shakmaty::Board,
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

/// An arbiter's hands setting the board from `from` to `to`: every piece that
/// stands wrong taken off, then every piece put where it belongs.
fn set_up(hands: &mut Hands, from: &shakmaty::Board, to: &shakmaty::Board) {
    for sq in Square::ALL {
        if let Some(p) = from.piece_at(sq).filter(|p| to.piece_at(sq) != Some(*p)) {
            hands.lift(sq, p);
        }
    }
    for sq in Square::ALL {
        if let Some(p) = to.piece_at(sq).filter(|p| from.piece_at(sq) != Some(*p)) {
            hands.place(sq, p);
        }
    }
}

/// A move other than `mv` made (released, not pressed), then taken back (its
/// piece put back where it stood, a piece it took set up again) before `mv`
/// is played: the board returns to a position of the game, which the daemon
/// says as a `takeback` and the record goes on from (rules: take-backs). A
/// plain move (no castling, en passant or promotion) that ends nothing.
fn take_back_another(hands: &mut Hands, pos: &Chess, mv: &Move, rng: &mut Seeded) {
    let others: Vec<Move> = pos
        .legal_moves()
        .into_iter()
        .filter(|m| {
            m != mv
                && matches!(m, Move::Normal { promotion: None, .. })
                && !{
                    let mut after = pos.clone();
                    after.play_unchecked(*m);
                    after.is_game_over()
                }
        })
        .collect();
    let Some(&other) = others.get(rng.range(0, others.len().max(1) as u64 - 1) as usize) else {
        return;
    };
    let Move::Normal {
        role,
        from,
        to,
        capture,
        ..
    } = other
    else {
        return;
    };
    let press = hands.style.press;
    hands.style.press = 0;
    hands.play(pos, &other);
    hands.style.press = press;
    hands.wait(1500);
    let piece = Piece {
        color: pos.turn(),
        role,
    };
    hands.lift(to, piece);
    hands.place(from, piece);
    if let Some(taken) = capture {
        hands.place(
            to,
            Piece {
                color: !pos.turn(),
                role: taken,
            },
        );
    }
    hands.wait(1500);
}

/// How long (log ms) the boards of round 2 stand as round 1 left them before
/// they are set up again: the daemon's start and the arbiter's `ctl round`
/// come first.
pub const SET_UP_AFTER_MS: u64 = 24_000;

/// Board `b`'s game in round 1 (`before` `None`), or in round 2 after
/// `before`, the board's game of round 1 (its final position left standing,
/// then the board set up again), between `white` and `black`.
pub fn board_game(
    plan: &Plan,
    b: usize,
    before: Option<&BoardGame>,
    white: Player,
    black: Player,
) -> BoardGame {
    let round = if before.is_some() { 2 } else { 1 };
    let mut rng =
        Seeded::new(plan.seed.wrapping_mul(1_000_003) ^ (b as u64 * 7919) ^ ((round - 1) * 0x2_0000));
    let plies = if round == 2 { plan.plies2 } else { plan.plies };
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
        (name.clone(), moves[..plies.min(moves.len())].to_vec())
    };
    let blitz = rng.chance(33);
    let mut hands = Hands::new(
        rng.next_u64(),
        if blitz { quick() } else { human() },
        Orientation::Normal,
    );
    match before {
        Some(g) => {
            hands.board(&g.end_board);
            hands.wait(SET_UP_AFTER_MS);
            set_up(&mut hands, &g.end_board, start.board());
        }
        None => hands.board(start.board()),
    }
    hands.set_clock(ClockTime::from_hms(1, 30, 0).unwrap());
    hands.wait(if before.is_some() { 4000 } else { 8000 });
    let mut pos = start.clone();
    let mut owner: Vec<(usize, usize)> = Vec::new();
    let mut holds = Vec::new();
    let mut touched = Vec::new();
    // Touch-move at a human pace, drawn apart from the other slips.
    let mut touch_rng = Seeded::new(plan.seed ^ 0x70c4_3c4e ^ (b as u64 * 104_729) ^ round);
    for mv in &moves {
        // The mover touches another of its pieces that can move, and puts it
        // back, then plays the move (Art. 4.3.1: the touched piece had to
        // be moved). Its touches belong to the ply.
        let other = (!blitz && touch_rng.chance(7))
            .then(|| {
                let own = pos.board().by_color(pos.turn());
                own.into_iter().find(|sq| {
                    Some(*sq) != mv.from()
                        && !matches!(mv, Move::Castle { rook, .. } if rook == sq)
                        && pos.legal_moves().iter().any(|m| m.from() == Some(*sq))
                })
            })
            .flatten();
        let mut touch_from = None;
        if let Some(sq) = other {
            touch_from = Some(hands.records.len());
            let piece = pos.board().piece_at(sq).unwrap();
            // Held half a second: a touch, not a sensor's flicker (a lift
            // and a placement closer than `flicker_ms` are one).
            hands.lift(sq, piece);
            hands.wait(500);
            hands.place(sq, piece);
            hands.wait(300);
            touched.push(owner.len());
        }
        // Slips at a human pace (not with a touch): an illegal move held past
        // the threshold, the piece kept in the hand as long again, then put
        // back; a piece of the side not to move knocked over and set up again;
        // another move made and taken back before this one.
        let slips = touch_from.is_none() && !blitz;
        if slips && rng.chance(12) {
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
        } else if slips && rng.chance(8) {
            let theirs = pos.board().by_color(!pos.turn()) & !pos.board().by_role(Role::King);
            if let Some(sq) = theirs.into_iter().next() {
                let piece = pos.board().piece_at(sq).unwrap();
                hands.knock(sq, piece, 3000);
            }
        } else if slips && rng.chance(8) && owner.len() >= 2 {
            // Not the game's first two plies: the start position back on the
            // board is a new game (the rules), not a take-back (seed 602).
            take_back_another(&mut hands, &pos, mv, &mut rng);
        }
        let from = touch_from.unwrap_or(hands.records.len());
        hands.play(&pos, mv);
        owner.push((from, hands.records.len()));
        pos.play_unchecked(*mv);
    }
    let played = hands.now().micros();
    // On one board in the event's last round (its game without a forced
    // end), after the last ply, a piece of the side to move set where no
    // move of it goes (a slip of the hand) and left there while the arbiter
    // gives the result (an alarm standing at the game's end), then put back.
    let mut held_at_end = None;
    let last_round = round == 2 || plan.plies2 == 0;
    if last_round
        && b as u64 == plan.seed % plan.boards as u64
        && super::common::played::true_result(&start, &moves) == "*"
    {
        let slip = pos
            .board()
            .by_color(pos.turn())
            .into_iter()
            .find_map(|sq| Some((sq, illegal_square(&pos, sq)?)));
        if let Some((sq, to)) = slip {
            let piece = pos.board().piece_at(sq).unwrap();
            // After the round's timeline and the lines' recovery from its
            // last restart, whatever the hands' pace.
            let origin = if round == 2 { SET_UP_AFTER_MS } else { 0 };
            let real = super::round::real_ms(plies) + super::MAX_DOWN_MS + super::RESTART_RECOVERY_MS;
            let after = origin + (real as f64 * super::SPEED) as u64;
            hands.wait(3000 + (after * 1000).saturating_sub(hands.now().micros()) / 1000);
            hands.lift(sq, piece);
            hands.place(to, piece);
            let placed = hands.now().micros();
            hands.wait(HELD_AT_END_MS);
            held_at_end = Some((placed, hands.now().micros()));
            hands.lift(to, piece);
            hands.place(sq, piece);
        }
    }
    // On another board of round 1 (its game without a forced end), the
    // result given by kings two seconds after the last ply (the DGT
    // convention: both kings on d5/e4 1-0, on d4/e5 0-1, one of each a draw),
    // whatever the round's timeline does meanwhile.
    let mut kings = None;
    let mut end_board = pos.board().clone();
    if round == 1
        && plan.boards > 1
        && b as u64 == (plan.seed + 1) % plan.boards as u64
        && super::common::played::true_result(&start, &moves) == "*"
    {
        if let Some((result, end)) = result_by_kings(&mut hands, &pos, &mut rng) {
            kings = Some(result);
            end_board = end;
        }
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
    BoardGame {
        name,
        start,
        moves,
        log,
        touches,
        holds,
        played,
        held_at_end,
        kings,
        end_board,
        touched,
        white,
        black,
    }
}

/// Both kings lifted and set on the centre squares of a result (the DGT
/// convention the rules follow: both on light squares 1-0, both on dark 0-1,
/// one of each 1/2-1/2), quickly, so that no board between stands as long as
/// the irregularity threshold: the result and the board left. `None` when no
/// such pair of squares is empty.
fn result_by_kings(
    hands: &mut Hands,
    pos: &Chess,
    rng: &mut Seeded,
) -> Option<(&'static str, shakmaty::Board)> {
    use shakmaty::Color;
    const PAIRS: [(Square, Square, &str); 8] = [
        (Square::D5, Square::E4, "1-0"),
        (Square::E4, Square::D5, "1-0"),
        (Square::D4, Square::E5, "0-1"),
        (Square::E5, Square::D4, "0-1"),
        (Square::E4, Square::D4, "1/2-1/2"),
        (Square::D4, Square::E4, "1/2-1/2"),
        (Square::D5, Square::E5, "1/2-1/2"),
        (Square::E5, Square::D5, "1/2-1/2"),
    ];
    let board = pos.board();
    let first = rng.range(0, PAIRS.len() as u64 - 1) as usize;
    let (w_to, b_to, result) = (0..PAIRS.len())
        .map(|k| PAIRS[(first + k) % PAIRS.len()])
        .find(|(w, b, _)| board.piece_at(*w).is_none() && board.piece_at(*b).is_none())?;
    let (w_from, b_from) = (board.king_of(Color::White)?, board.king_of(Color::Black)?);
    let (wk, bk) = (board.piece_at(w_from)?, board.piece_at(b_from)?);
    hands.wait(2000);
    // Records of real squares (the campaign's boards stand the normal way),
    // 40 ms apart: the hands' own steps would leave a king off the board
    // past the threshold.
    use eboard_bridge::log::RecordKind::{Lift, Place};
    hands.push(Lift {
        square: w_from,
        piece: Some(wk),
    });
    hands.wait(40);
    hands.push(Lift {
        square: b_from,
        piece: Some(bk),
    });
    hands.wait(40);
    hands.push(Place {
        square: w_to,
        piece: wk,
    });
    hands.wait(40);
    hands.push(Place {
        square: b_to,
        piece: bk,
    });
    hands.wait(400);
    let mut end = board.clone();
    end.discard_piece_at(w_from);
    end.discard_piece_at(b_from);
    end.set_piece_at(w_to, wk);
    end.set_piece_at(b_to, bk);
    Some((result, end))
}

/// How long (log ms) a piece is held where no move goes at a game's end: long
/// enough for the arbiter to see the alarm and give the result over it.
const HELD_AT_END_MS: u64 = 10_000;

/// The players of board `b` (0-based) in round 1: White and Black.
pub fn round_one_players(b: usize) -> (Player, Player) {
    let n = b + 1;
    (
        Player {
            name: format!("White{n}, Ann"),
            elo: format!("{}", 2000 + 10 * n),
            fide: format!("{}", 100_000 + n),
        },
        Player {
            name: format!("Black{n}, Bob"),
            elo: format!("{}", 2300 + 10 * n),
            fide: format!("{}", 200_000 + n),
        },
    )
}

/// The players of board `b` in round 2, paired as a Swiss pairs them: round
/// 1's Black of this board with White, round 1's White of the next board with
/// Black (so no board keeps its pairing, and a pairing left from round 1 shows).
pub fn round_two_players(round_one: &[BoardGame], b: usize) -> (Player, Player) {
    let next = &round_one[(b + 1) % round_one.len()];
    (round_one[b].black.clone(), next.white.clone())
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
