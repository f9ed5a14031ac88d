//! One game: its positions, moves and how it ended. Legality, SAN, UCI and
//! repetition come from `shakmaty`.

use shakmaty::fen::Fen;
use shakmaty::san::SanPlus;
use shakmaty::uci::UciMove;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{Board, CastlingMode, Chess, EnPassantMode, Move, Position};

use crate::board::Orientation;

/// A move in the record.
#[derive(Debug, Clone)]
pub struct Played {
    pub mv: Move,
    pub san: String,
    pub uci: String,
    pub completed: bool,
    /// The mover's clock after the move (ms), when a clock reported it.
    pub clk_ms: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct Game {
    pub number: u32,
    pub orientation: Orientation,
    pub mode: CastlingMode,
    pub start_fen: String,
    /// `positions[k]` is the position after `k` plies.
    pub positions: Vec<Chess>,
    pub moves: Vec<Played>,
    hashes: Vec<u64>,
    pub result: Option<(&'static str, &'static str)>,
    /// Claims already reported, so each is said once per position.
    pub claimed: Vec<(usize, &'static str)>,
}

impl Game {
    pub fn new(number: u32, start: Chess, mode: CastlingMode, orientation: Orientation) -> Game {
        let start_fen = fen(&start);
        let hash = hash(&start);
        Game {
            number,
            orientation,
            mode,
            start_fen,
            positions: vec![start],
            moves: Vec::new(),
            hashes: vec![hash],
            result: None,
            claimed: Vec::new(),
        }
    }

    pub fn variant(&self) -> &'static str {
        match self.mode {
            CastlingMode::Standard => "standard",
            CastlingMode::Chess960 => "chess960",
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

    /// Plays a legal move onto the record.
    pub fn push(&mut self, mv: Move) -> &Played {
        let pos = self.current().clone();
        let uci = UciMove::from_move(mv, self.mode).to_string();
        let mut after = pos;
        let san = SanPlus::from_move_and_play_unchecked(&mut after, mv).to_string();
        self.hashes.push(hash(&after));
        self.positions.push(after);
        self.moves.push(Played {
            mv,
            san,
            uci,
            completed: false,
            clk_ms: None,
        });
        self.moves.last().expect("just pushed")
    }

    /// Drops the record back to `ply` plies.
    pub fn truncate(&mut self, ply: usize) {
        self.moves.truncate(ply);
        self.positions.truncate(ply + 1);
        self.hashes.truncate(ply + 1);
        self.claimed.retain(|(p, _)| *p <= ply);
    }

    /// How often the current position has occurred.
    pub fn repetitions(&self) -> usize {
        let last = *self.hashes.last().expect("start hash");
        self.hashes.iter().filter(|h| **h == last).count()
    }

    /// The end the current position forces, if any (5.1.1, 5.2.1, 5.2.2, 9.6).
    pub fn forced_end(&self) -> Option<(&'static str, &'static str)> {
        let pos = self.current();
        if pos.is_checkmate() {
            return Some((if pos.turn().is_white() { "0-1" } else { "1-0" }, "checkmate"));
        }
        if pos.is_stalemate() {
            return Some(("1/2-1/2", "stalemate"));
        }
        if pos.is_insufficient_material() {
            return Some(("1/2-1/2", "insufficient_material"));
        }
        if self.repetitions() >= 5 {
            return Some(("1/2-1/2", "fivefold_repetition"));
        }
        if pos.halfmoves() >= 150 {
            return Some(("1/2-1/2", "seventyfive_moves"));
        }
        None
    }

    /// Draws the player to move could claim now (9.2, 9.3).
    pub fn claimable(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.repetitions() >= 3 {
            v.push("threefold");
        }
        if self.current().halfmoves() >= 100 {
            v.push("fifty_moves");
        }
        v
    }

    pub fn fen(&self) -> String {
        fen(self.current())
    }
}

pub fn fen(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

fn hash(pos: &Chess) -> u64 {
    pos.zobrist_hash::<Zobrist64>(EnPassantMode::Legal).0
}

/// The legal move of `pos` whose result shows `board`, if there is one.
pub fn move_to(pos: &Chess, board: &Board) -> Option<Move> {
    pos.legal_moves().into_iter().find(|m| {
        let mut after = pos.clone();
        after.play_unchecked(*m);
        after.board() == board
    })
}

/// Sequences of up to `depth` legal moves from `pos` that end on `board`
/// (shortest first), for a board that comes back after a lost connection.
pub fn moves_to(pos: &Chess, board: &Board, depth: usize) -> Option<Vec<Move>> {
    if depth == 0 {
        return None;
    }
    let mut frontier = vec![(pos.clone(), Vec::new())];
    for _ in 0..depth {
        let mut next = Vec::new();
        for (p, path) in frontier {
            for m in p.legal_moves() {
                let mut after = p.clone();
                after.play_unchecked(m);
                let mut path = path.clone();
                path.push(m);
                if after.board() == board {
                    return Some(path);
                }
                next.push((after, path));
            }
        }
        frontier = next;
    }
    None
}
