//! One game: its positions, moves and how it ended. Legality, SAN, UCI and
//! repetition come from `shakmaty`. `infer` finds the plies a gap in the line
//! may have hidden.

use shakmaty::fen::Fen;
use shakmaty::san::{San, SanPlus, Suffix};
use shakmaty::uci::UciMove;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{Board, CastlingMode, Chess, EnPassantMode, Move, Position};

use super::matching;
use super::{DrawReason, GameResult, Termination, Variant};
use crate::board::Orientation;

mod infer;

pub use infer::{
    INFER_BUDGET, Inferred, MAX_INFERRED_PLIES, Seen, displaced_path, illegal_placement, infer_path,
    lying_path, orders, other_parity, round_trip, set_down_path, under_way_path,
};

/// A move in the record.
#[derive(Debug, Clone)]
pub struct PlayedMove {
    pub mv: Move,
    pub san: String,
    pub uci: String,
    pub completed: bool,
    /// The mover's clock after the move (ms), when a clock reported it.
    pub clk_ms: Option<u64>,
    /// The time the move took (ms): from the press before it to its own.
    pub emt_ms: Option<u64>,
    /// Found across a gap in the line (the board's state after it was seen, not
    /// the move itself): `{inferred}` in PGN, `inferred: true` in events.
    pub inferred: bool,
}

#[derive(Debug, Clone)]
pub struct Game {
    pub number: u32,
    pub orientation: Orientation,
    pub mode: CastlingMode,
    pub start_fen: String,
    /// `positions[k]` is the position after `k` plies.
    pub positions: Vec<Chess>,
    pub moves: Vec<PlayedMove>,
    hashes: Vec<u64>,
    /// The placement hash of each position (`matching`).
    placements: Vec<u64>,
    pub result: Option<(GameResult, Termination)>,
    /// The words of the PGN `Termination` tag an arbiter gave with the result
    /// (`time forfeit`); none: the tag is the termination's name.
    pub termination_words: Option<String>,
    /// Claims already reported, so each is said once per position.
    pub claimed: Vec<(usize, DrawReason)>,
    /// The time control the game is played at, in PGN syntax, when known.
    pub time_control: Option<String>,
    /// Both clocks (white's, black's ms) as the last completed move, a set the
    /// clock took (an arbiter's times, a penalty), a flag or the game's end
    /// left them: the `WhiteClock` and `BlackClock` tags.
    pub clocks: Option<(u64, u64)>,
    /// Whether moves pushed get their SAN ([`Game::set_san`]).
    san: bool,
}

impl Game {
    pub fn new(number: u32, start: Chess, mode: CastlingMode, orientation: Orientation) -> Game {
        let start_fen = fen(&start);
        let hash = hash(&start);
        let placement = matching::placement(start.board());
        Game {
            number,
            orientation,
            mode,
            start_fen,
            positions: with_room(start),
            moves: Vec::with_capacity(ROOM),
            hashes: with_room(hash),
            placements: with_room(placement),
            result: None,
            termination_words: None,
            claimed: Vec::new(),
            time_control: None,
            clocks: None,
            san: true,
        }
    }

    /// Whether the moves pushed from now on get their SAN (by default they do);
    /// without, [`PlayedMove::san`] is empty (for a caller that reads only UCI).
    pub fn set_san(&mut self, on: bool) {
        self.san = on;
    }

    pub fn variant(&self) -> Variant {
        match self.mode {
            CastlingMode::Standard => Variant::Standard,
            CastlingMode::Chess960 => Variant::Chess960,
        }
    }

    pub fn ply(&self) -> usize {
        self.moves.len()
    }

    pub fn current(&self) -> &Chess {
        self.positions.last().expect("a game has its start position")
    }

    pub fn is_over(&self) -> bool {
        self.result.is_some()
    }

    /// Plies that can no longer be amended as the hands go on: all of them once
    /// the last is completed (by the clock, or by the opponent's next move) or the
    /// game is over; else all but the last.
    pub fn settled_plies(&self) -> usize {
        match self.moves.last() {
            Some(last) if !last.completed && !self.is_over() => self.moves.len() - 1,
            _ => self.moves.len(),
        }
    }

    /// Plays a legal move onto the record.
    pub fn push(&mut self, mv: Move) -> &PlayedMove {
        let pos = self.current();
        let placement = matching::after(self.placement(self.ply()), &mv, pos.turn());
        let mut uci = String::with_capacity(5);
        UciMove::from_move(mv, self.mode).append_to_string(&mut uci);
        // SAN from shakmaty (the moves that need telling apart); its suffix
        // from whether the new position has a legal move.
        let plain = self.san.then(|| San::from_move(pos, mv));
        // The repetition hash from the one before where shakmaty can (most
        // moves: no en passant before or after, no castling right changed).
        let last = *self.hashes.last().expect("start hash");
        let incremental = pos.update_zobrist_hash(Zobrist64(last), mv, EnPassantMode::Legal);
        let mut after = pos.clone();
        after.play_unchecked(mv);
        let check = after.checkers().any();
        self.hashes
            .push(incremental.map_or_else(|| hash(&after), |h| h.0));
        self.placements.push(placement);
        self.positions.push(after);
        let mut san = String::new();
        if let Some(plain) = plain {
            let suffix = check.then(|| {
                if !matching::quick::has_legal_move(self.current()) {
                    Suffix::Checkmate
                } else {
                    Suffix::Check
                }
            });
            san.reserve(8);
            SanPlus { san: plain, suffix }.append_to_string(&mut san);
        }
        self.moves.push(PlayedMove {
            mv,
            san,
            uci,
            completed: false,
            clk_ms: None,
            emt_ms: None,
            inferred: false,
        });
        self.moves.last().expect("just pushed")
    }

    /// Drops the record back to `ply` plies.
    pub fn truncate(&mut self, ply: usize) {
        self.moves.truncate(ply);
        self.positions.truncate(ply + 1);
        self.hashes.truncate(ply + 1);
        self.placements.truncate(ply + 1);
        self.claimed.retain(|(p, _)| *p <= ply);
    }

    /// The placement hash of the position after `ply` plies.
    pub fn placement(&self, ply: usize) -> u64 {
        self.placements[ply]
    }

    /// The legal move from the position after `ply` plies whose result shows
    /// `board`, whose placement hash is `h` (from the moves that can explain
    /// the squares that differ: `matching::quick`).
    pub fn move_from(&self, ply: usize, h: u64, board: &Board) -> Option<Move> {
        matching::quick::find(&self.positions[ply], self.placements[ply], h, board)
    }

    /// The legal moves of the position after `ply` plies.
    pub fn legal(&self, ply: usize) -> shakmaty::MoveList {
        self.positions[ply].legal_moves()
    }

    /// The position after `ply` plies shows `board` (placement hash `h`).
    pub fn shows(&self, ply: usize, h: u64, board: &Board) -> bool {
        self.placements[ply] == h && self.positions[ply].board() == board
    }

    /// How often the current position has occurred.
    pub fn repetitions(&self) -> usize {
        let last = *self.hashes.last().expect("start hash");
        // No position before the last capture or pawn move (the halfmove
        // clock) can be the current one: it had more pieces, or its pawns
        // elsewhere. Only the positions since are compared.
        let since = (self.current().halfmoves() as usize).saturating_add(1);
        self.hashes
            .iter()
            .rev()
            .take(since)
            .filter(|h| **h == last)
            .count()
    }

    /// The end the current position forces, if any (5.1.1, 5.2.1, 5.2.2, 9.6).
    pub fn forced_end(&self) -> Option<(GameResult, Termination)> {
        let pos = self.current();
        if !matching::quick::has_legal_move(pos) {
            return Some(if pos.is_check() {
                (GameResult::lost_by(pos.turn()), Termination::Checkmate)
            } else {
                (GameResult::Draw, Termination::Stalemate)
            });
        }
        if pos.is_insufficient_material() {
            return Some((GameResult::Draw, Termination::InsufficientMaterial));
        }
        if self.repetitions() >= 5 {
            return Some((GameResult::Draw, Termination::FivefoldRepetition));
        }
        if pos.halfmoves() >= 150 {
            return Some((GameResult::Draw, Termination::SeventyfiveMoves));
        }
        None
    }

    /// Draws the player to move could claim now (9.2, 9.3).
    pub fn claimable(&self) -> Vec<DrawReason> {
        let mut v = Vec::new();
        if self.repetitions() >= 3 {
            v.push(DrawReason::Threefold);
        }
        if self.current().halfmoves() >= 100 {
            v.push(DrawReason::FiftyMoves);
        }
        v
    }

    pub fn fen(&self) -> String {
        fen(self.current())
    }
}

/// Plies a game's lists have room for from the start: most games' (a list
/// grown as the moves come copied its positions about twice over).
const ROOM: usize = 128;

/// A list of one, with room for [`ROOM`] plies after it.
fn with_room<T>(first: T) -> Vec<T> {
    let mut v = Vec::with_capacity(ROOM + 1);
    v.push(first);
    v
}

pub fn fen(pos: &Chess) -> String {
    let mut s = String::with_capacity(90);
    Fen::from_position(pos, EnPassantMode::Legal).append_to_string(&mut s);
    s
}

fn hash(pos: &Chess) -> u64 {
    pos.zobrist_hash::<Zobrist64>(EnPassantMode::Legal).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Seeded;

    /// The repetition hashes pushed (from the one before where shakmaty can)
    /// are the hashes of the positions, over seeded random games from the
    /// standard start and a Chess960 one: double pawn steps and en passant,
    /// castling, rights lost by king and rook moves and captures, promotions.
    /// So are the repetition counts the whole list gives.
    #[test]
    fn pushed_hashes_are_the_positions_hashes() {
        let chess960: Chess = "bnrqkrnb/pppppppp/8/8/8/8/PPPPPPPP/BNRQKRNB w FCfc - 0 1"
            .parse::<Fen>()
            .expect("a FEN")
            .into_position(CastlingMode::Chess960)
            .expect("a position");
        let mut pick = Seeded::new(42);
        let (mut plies, mut ep, mut castles) = (0, 0, 0);
        for (start, mode) in [
            (Chess::default(), CastlingMode::Standard),
            (chess960, CastlingMode::Chess960),
        ] {
            for _ in 0..40 {
                let mut g = Game::new(1, start.clone(), mode, Orientation::Normal);
                g.set_san(false);
                for _ in 0..200 {
                    let moves = g.current().legal_moves();
                    if moves.is_empty() {
                        break;
                    }
                    let mv = moves[pick.range(0, moves.len() as u64 - 1) as usize];
                    ep += usize::from(mv.is_en_passant());
                    castles += usize::from(mv.is_castle());
                    g.push(mv);
                    plies += 1;
                    assert_eq!(g.hashes.last(), Some(&hash(g.current())), "{}", g.fen());
                    let all = g.hashes.iter().filter(|h| Some(*h) == g.hashes.last()).count();
                    assert_eq!(g.repetitions(), all, "{}", g.fen());
                }
            }
        }
        assert!(
            plies > 10_000 && ep > 0 && castles > 10,
            "{plies} plies, {ep} en passant, {castles} castlings"
        );
    }
}
