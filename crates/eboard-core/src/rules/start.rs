//! Game start and end, and which way round the board stands: a start position
//! (standard or Chess960, either way round) starts a game; a game under way seen
//! after a gap is taken up; kings on the centre squares end it.

use super::resync::{Cause, Resync};
use super::{Core, EventKind, Game, GameResult, Termination, game};
use crate::board::Orientation;
use shakmaty::{Bitboard, Board, CastlingMode, Chess, Color, Piece, Position, Role, Square};

/// The start position the board shows, if any: standard or Chess960, either way round.
pub(super) fn start_position(sensors: &Board) -> Option<(Chess, CastlingMode, Orientation)> {
    // Every start position fills the first two ranks and the last two, and only
    // them (either way round): most boards are ruled out by that alone.
    if sensors.occupied() != Bitboard(0xffff_0000_0000_ffff) {
        return None;
    }
    for orientation in [Orientation::Normal, Orientation::Rotated] {
        let board = orientation.real_board(sensors);
        if board == Board::new() {
            return Some((Chess::default(), CastlingMode::Standard, orientation));
        }
        if let Some(pos) = chess960_start(&board) {
            return Some((pos, CastlingMode::Chess960, orientation));
        }
    }
    None
}

pub(super) fn chess960_start(board: &Board) -> Option<Chess> {
    use shakmaty::{File, Rank};
    let mut back = Vec::with_capacity(8);
    for f in 0..8 {
        let file = File::new(f);
        let w = board.piece_at(Square::from_coords(file, Rank::First))?;
        let b = board.piece_at(Square::from_coords(file, Rank::Eighth))?;
        if w.color != Color::White || b.color != Color::Black || w.role != b.role || w.role == Role::Pawn {
            return None;
        }
        back.push(w.role);
    }
    let mut expected = Board::empty();
    for f in 0..8 {
        let file = File::new(f);
        expected.set_piece_at(
            Square::from_coords(file, Rank::First),
            Piece {
                color: Color::White,
                role: back[f as usize],
            },
        );
        expected.set_piece_at(Square::from_coords(file, Rank::Second), Color::White.pawn());
        expected.set_piece_at(Square::from_coords(file, Rank::Seventh), Color::Black.pawn());
        expected.set_piece_at(
            Square::from_coords(file, Rank::Eighth),
            Piece {
                color: Color::Black,
                role: back[f as usize],
            },
        );
    }
    if &expected != board {
        return None;
    }
    let count = |r: Role| back.iter().filter(|x| **x == r).count();
    if count(Role::King) != 1 || count(Role::Queen) != 1 || count(Role::Rook) != 2 || count(Role::Bishop) != 2
    {
        return None;
    }
    let bishops: Vec<usize> = (0..8).filter(|i| back[*i] == Role::Bishop).collect();
    let rooks: Vec<usize> = (0..8).filter(|i| back[*i] == Role::Rook).collect();
    let king = back.iter().position(|r| *r == Role::King)?;
    if bishops[0] % 2 == bishops[1] % 2 || !(rooks[0] < king && king < rooks[1]) {
        return None;
    }
    let fen = format!("{} w KQkq - 0 1", board.board_fen());
    let fen: shakmaty::fen::Fen = fen.parse().ok()?;
    fen.into_position(CastlingMode::Chess960).ok()
}

/// Both kings on the centre squares: the DGT convention for a result.
pub(super) fn kings_result(board: &Board) -> Option<(GameResult, ())> {
    let kings = board.kings();
    if kings.count() != 2 || !kings.into_iter().all(|sq| CENTRE.contains(&sq)) {
        return None;
    }
    let light = kings.into_iter().filter(|sq| sq.is_light()).count();
    Some((
        match light {
            2 => GameResult::WhiteWins,
            0 => GameResult::BlackWins,
            _ => GameResult::Draw,
        },
        (),
    ))
}

pub(super) const CENTRE: [Square; 4] = [Square::D4, Square::D5, Square::E4, Square::E5];

/// The games besides the one under way: those over, in order, and their
/// numbering; where the first starts from, and whether moves get their SAN.
#[derive(Debug)]
pub(super) struct Games {
    /// Games before the current one, in order.
    finished: Vec<Game>,
    /// How many games have started (the last one's number).
    started: u32,
    /// A game to start from a given position once the board is seen (`--fen`).
    start_at: Option<(Chess, CastlingMode)>,
    /// Whether the games' moves get their SAN (the default; see
    /// [`Core::set_san`]).
    san: bool,
}

impl Default for Games {
    fn default() -> Games {
        Games {
            finished: Vec::new(),
            started: 0,
            start_at: None,
            san: true,
        }
    }
}

impl Games {
    /// A new game, numbered after the last; `previous` (the game under way
    /// until now) is kept, in order, with the games over.
    pub(super) fn start(
        &mut self,
        pos: Chess,
        mode: CastlingMode,
        orientation: Orientation,
        previous: Option<Game>,
    ) -> Game {
        self.started += 1;
        let mut g = Game::new(self.started, pos, mode, orientation);
        g.set_san(self.san);
        self.finished.extend(previous);
        g
    }

    pub(super) fn finished(&self) -> &[Game] {
        &self.finished
    }

    pub(super) fn take_finished(&mut self) -> Vec<Game> {
        std::mem::take(&mut self.finished)
    }

    /// The first game starts from `pos` once the board is seen.
    pub(super) fn start_from(&mut self, pos: Chess, mode: CastlingMode) {
        self.start_at = Some((pos, mode));
    }

    /// The position given for the first game, once.
    pub(super) fn take_start(&mut self) -> Option<(Chess, CastlingMode)> {
        self.start_at.take()
    }

    pub(super) fn set_san(&mut self, on: bool) {
        self.san = on;
    }
}

impl Core {
    /// A start position on the board starts a game; so does, on a `dump` after a
    /// gap with no game under way, a game a few plies in.
    pub(super) fn try_new_game(&mut self, t: u64, dump: bool) -> bool {
        if let Some((pos, mode)) = self.games.take_start() {
            let placement = pos.board().clone();
            let orientation = if Orientation::Rotated.real_board(self.sensors.board()) == placement {
                Orientation::Rotated
            } else {
                Orientation::Normal
            };
            self.start_game(pos, mode, orientation, t);
            return true;
        }
        let Some((pos, mode, orientation)) = start_position(self.sensors.board()) else {
            return dump && self.game_under_way(t);
        };
        let fresh = self.game.as_ref().is_some_and(|g| {
            g.ply() == 0 && !g.is_over() && g.orientation == orientation && g.current() == &pos
        });
        if fresh || self.continues_game() {
            return false;
        }
        if let Some(g) = &self.game {
            if !g.is_over() && g.ply() > 0 {
                self.end_game(t, GameResult::Unfinished, Termination::Abandoned);
            }
        }
        self.start_game(pos, mode, orientation, t);
        true
    }

    /// With no game under way, a dump after a gap that shows a standard game a few
    /// plies in (its start was lost on the line, or the daemon started late): the
    /// game starts from the start position and those plies are inferred. Never a
    /// position of the game that ended on this board: that is the finished game
    /// still standing, not a new one.
    pub(super) fn game_under_way(&mut self, t: u64) -> bool {
        if self.game.as_ref().is_some_and(|g| !g.is_over())
            || !self
                .line
                .resync
                .as_ref()
                .is_some_and(|r| r.cause == Cause::Gap && !r.gated)
        {
            return false;
        }
        let start = Chess::default();
        // The lifts seen meanwhile (sensor squares: no game, no orientation yet)
        // tell the order of the plies when several reach the board.
        let (seen, puts) = self
            .line
            .resync
            .as_ref()
            .map(|r| (r.lifts.clone(), r.puts.clone()))
            .unwrap_or_default();
        for orientation in [Orientation::Normal, Orientation::Rotated] {
            let board = orientation.real_board(self.sensors.board());
            // A finished game's positions stay on the board until it is set up
            // again (its final one until the players leave): after a restart or a
            // cut they are that game, not a new one a few plies in.
            if self
                .game
                .as_ref()
                .is_some_and(|g| g.positions.iter().any(|p| p.board() == &board))
            {
                continue;
            }
            let lifts: Vec<Square> = seen.iter().map(|sq| orientation.real(*sq)).collect();
            // Pieces seen put down, likewise on sensor squares.
            let placed: Vec<(Square, Piece)> =
                puts.iter().map(|(sq, p)| (orientation.real(*sq), *p)).collect();
            let game::Inferred::Path(path) = game::infer_path(
                &start,
                &board,
                game::MAX_INFERRED_PLIES,
                game::INFER_BUDGET,
                game::Seen {
                    lifts: &lifts,
                    placed: &placed,
                    boards: &[],
                },
                false,
            ) else {
                continue;
            };
            self.start_game(start, CastlingMode::Standard, orientation, t);
            self.line.resync = Some(Resync::new(Cause::Gap, false, 0));
            self.commit_inferred(path, t);
            return true;
        }
        false
    }

    /// The board shows a legal move of the game under way (knights back home can
    /// bring the start position back): that is a move, not a new game.
    pub(super) fn continues_game(&self) -> bool {
        let Some(g) = &self.game else { return false };
        if g.is_over() || g.ply() == 0 {
            return false;
        }
        let board = self.real_board();
        let h = self.real_hash();
        let n = g.ply();
        g.move_from(n, h, &board).is_some()
            || (!g.moves[n - 1].completed && g.move_from(n - 1, h, &board).is_some())
    }

    pub(super) fn start_game(&mut self, pos: Chess, mode: CastlingMode, orientation: Orientation, t: u64) {
        let g = self.games.start(pos, mode, orientation, self.game.take());
        self.emit(
            t,
            EventKind::GameStart {
                game: g.number,
                fen: g.start_fen.clone(),
                variant: g.variant(),
                orientation,
            },
        );
        self.game = Some(g);
        self.hands.new_game();
        self.under_way.clear();
        // A board reported irregular (the last game's, or this one's before it
        // started) is explained by the new game: `resolved`, so that no
        // alarm raised stands for ever.
        self.resolve(t);
        self.violations = [0, 0];
        self.line.new_game();
        if let Some(g) = &mut self.game {
            g.time_control = self.clk.tc.as_ref().map(crate::clock::control::TimeControl::pgn);
        }
        self.clk.new_game();
        self.start_host(t);
    }

    pub(super) fn end_game(&mut self, t: u64, result: GameResult, termination: Termination) {
        if let Some(g) = &mut self.game {
            if g.result.is_none() {
                g.result = Some((result, termination));
                self.under_way.drop_moves();
                self.line.resync = None;
                self.clk.unconfirmed_press = None;
                self.emit(t, EventKind::GameEnd { result, termination });
                self.stop_host(t);
                self.clocks_to_game(t);
                // The record is final: an irregularity of the game (an arbiter's
                // result given over an illegal position, a lost track) no
                // longer stands. The board as it is now is the end's; a change
                // from it is reported as after the end.
                if self.irregular.as_ref().is_some_and(|i| i.kind.is_some()) {
                    self.resolve(t);
                    self.irregular = Some(super::irregular::Irregular {
                        board: self.real_board(),
                        kind: None,
                    });
                }
            }
        }
    }
}
