//! Hands on a sensor board: turns legal moves into the lift and place records a
//! person's hands produce, with a seeded choice of physical order, slides over the
//! squares a piece crosses, touches that are put back, and clock presses.
//!
//! Used to build sensor-level test sequences from real games, and the demo.

use shakmaty::{CastlingSide, Chess, Move, Piece, Position, Square};

use crate::board::Orientation;
use crate::log::{LogTime, Record, RecordKind};
use crate::protocol::ClockSide;

/// A small seeded generator (SplitMix64): the same seed, the same hands.
#[derive(Debug, Clone)]
pub struct Seeded(u64);

impl Seeded {
    pub fn new(seed: u64) -> Seeded {
        Seeded(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

/// How the hands behave.
#[derive(Debug, Clone)]
pub struct Style {
    /// Percent of quiet slider moves played as a slide over the crossed squares.
    pub slide: u64,
    /// Percent of moves preceded by touching the moving piece and putting it back
    /// (a lift and return: an adjustment, no touch-move obligation beyond the piece
    /// itself, which is then moved).
    pub retouch: u64,
    /// Percent of moves after which the clock is pressed (when `clock` is true).
    pub press: u64,
    pub clock: bool,
    /// Milliseconds between steps of one move (inclusive range).
    pub step_ms: (u64, u64),
    /// Milliseconds a player thinks before a move (inclusive range).
    pub think_ms: (u64, u64),
    /// All records at time 0 (timing must not matter to the game).
    pub zero_time: bool,
    /// Milliseconds the hands wait after a move's last placement (and after a
    /// retouch), so that it is released.
    pub settle_ms: u64,
    /// Blitz timing (`Some((lo, hi))`): the press lands `lo..=hi` ms after the
    /// move's last placement, while the opponent may already be reaching for a
    /// piece (a premove reach: their first lift may come before it); `think_ms`
    /// then counts from the opponent's last placement, not from the press, and
    /// `settle_ms` is not waited. The press always lands before the opponent
    /// sets a piece down.
    pub press_ms: Option<(u64, u64)>,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            slide: 20,
            retouch: 10,
            press: 100,
            clock: true,
            step_ms: (120, 500),
            think_ms: (800, 3000),
            zero_time: false,
            settle_ms: 400,
            press_ms: None,
        }
    }
}

impl Style {
    /// Hands of players of 3+2: replies started 0.15-0.8 s after the opponent's
    /// placement, presses 0.1-0.3 s after the placement (the next lift sometimes
    /// before the press lands), quick steps, slides, no retouches.
    pub fn blitz() -> Style {
        Style {
            slide: 25,
            retouch: 0,
            press: 100,
            clock: true,
            step_ms: (50, 180),
            think_ms: (150, 800),
            zero_time: false,
            settle_ms: 0,
            press_ms: Some((100, 300)),
        }
    }
}

/// Writes records for moves as hands make them.
#[derive(Debug)]
pub struct Hands {
    pub rng: Seeded,
    pub style: Style,
    pub orientation: Orientation,
    /// Which clock side is white's.
    pub white_side: ClockSide,
    now_us: u64,
    /// The time of the last placement of the last move played.
    placed_us: u64,
    /// A blitz press not yet landed: (time, side).
    pending_press: Option<(u64, ClockSide)>,
    pub records: Vec<Record>,
}

impl Hands {
    pub fn new(seed: u64, style: Style, orientation: Orientation) -> Hands {
        Hands {
            rng: Seeded::new(seed),
            style,
            orientation,
            white_side: ClockSide::Left,
            now_us: 0,
            placed_us: 0,
            pending_press: None,
            records: Vec::new(),
        }
    }

    /// Lands a press still pending (blitz timing): call before taking `records`.
    pub fn flush(&mut self) {
        if let Some((at, side)) = self.pending_press.take() {
            self.records.push(Record {
                time: LogTime::from_micros(at),
                kind: RecordKind::Press(side),
            });
        }
    }

    /// The current time of the recording.
    pub fn now(&self) -> LogTime {
        LogTime::from_micros(self.now_us)
    }

    /// Lets `ms` milliseconds pass.
    pub fn wait(&mut self, ms: u64) {
        if !self.style.zero_time {
            self.now_us += ms * 1000;
        }
    }

    fn step(&mut self) {
        let (lo, hi) = self.style.step_ms;
        let ms = self.rng.range(lo, hi);
        self.wait(ms);
    }

    /// Adds a record at the current time (after a pending press that is due;
    /// a placement lands it first in any case).
    pub fn push(&mut self, kind: RecordKind) {
        let placing = matches!(kind, RecordKind::Place { .. });
        if let Some((at, side)) = self.pending_press {
            if at <= self.now_us || placing {
                self.pending_press = None;
                self.records.push(Record {
                    time: LogTime::from_micros(at.min(self.now_us)),
                    kind: RecordKind::Press(side),
                });
            }
        }
        self.records.push(Record {
            time: self.now(),
            kind,
        });
    }

    /// Records a lift of `piece` from real square `sq`.
    pub fn lift(&mut self, sq: Square, piece: Piece) {
        let square = self.orientation.board(sq);
        self.push(RecordKind::Lift {
            square,
            piece: Some(piece),
        });
        self.step();
    }

    /// Records a placement of `piece` on real square `sq`.
    pub fn place(&mut self, sq: Square, piece: Piece) {
        let square = self.orientation.board(sq);
        self.push(RecordKind::Place { square, piece });
        self.placed_us = self.now_us;
        self.step();
    }

    /// The whole board (real placement) as a `board` record.
    pub fn board(&mut self, real: &shakmaty::Board) {
        let b = self.orientation.real_board(real);
        self.push(RecordKind::Board(Box::new(
            crate::protocol::Placement::from_board(&b),
        )));
    }

    /// Sets the clock, stopped, as an arbiter does before the game.
    pub fn set_clock(&mut self, time: crate::protocol::ClockTime) {
        self.push(RecordKind::Clock {
            left: time,
            right: time,
            running: crate::log::Running::None,
        });
    }

    /// Presses the clock for `mover`.
    pub fn press(&mut self, mover: shakmaty::Color) {
        let side = self.side_of(mover);
        self.push(RecordKind::Press(side));
    }

    fn side_of(&self, mover: shakmaty::Color) -> ClockSide {
        if mover.is_white() {
            self.white_side
        } else {
            self.white_side.other()
        }
    }

    /// A fault: `piece` knocked off real square `sq`, left lying `ms`, put back.
    pub fn knock(&mut self, sq: Square, piece: Piece, ms: u64) {
        self.lift(sq, piece);
        self.wait(ms);
        self.place(sq, piece);
        self.wait(400);
    }

    /// A fault: `piece` moved from `from` to the empty square `to` (not a legal
    /// move), left there `ms`, then taken back to `from`.
    pub fn illegal_attempt(&mut self, from: Square, to: Square, piece: Piece, ms: u64) {
        self.lift(from, piece);
        self.place(to, piece);
        self.wait(ms);
        self.lift(to, piece);
        self.place(from, piece);
        self.wait(400);
    }

    /// Plays `mv` (legal in `pos`) with a random physical order; then the player
    /// thinks, and presses the clock when the style says so.
    pub fn play(&mut self, pos: &Chess, mv: &Move) {
        let (lo, hi) = self.style.think_ms;
        let think = self.rng.range(lo, hi);
        if self.style.press_ms.is_some() && !self.style.zero_time {
            // The reply starts `think` after the opponent's last placement.
            self.now_us = self.now_us.max(self.placed_us + think * 1000);
        } else {
            self.wait(think);
        }
        let us = pos.turn();
        if self.rng.chance(self.style.retouch) {
            if let Some(from) = mv.from() {
                let piece = pos
                    .board()
                    .piece_at(from)
                    .expect("a legal move's piece stands on its square");
                self.lift(from, piece);
                self.place(from, piece);
                self.wait(self.style.settle_ms);
            }
        }
        self.hands(pos, mv);
        if let Some((lo, hi)) = self.style.press_ms {
            // The press lands a moment after the placement, perhaps after the
            // opponent's first lift.
            let at = self.placed_us + self.rng.range(lo, hi) * 1000;
            if self.style.clock && self.rng.chance(self.style.press) {
                self.flush();
                self.pending_press = Some((at, self.side_of(us)));
            }
            return;
        }
        // Let the last placement be released.
        self.wait(self.style.settle_ms);
        if self.style.clock && self.rng.chance(self.style.press) {
            self.press(us);
            self.step();
        }
    }

    /// Plays random legal moves from `pos` (each chosen by `pick`, then played
    /// as [`Hands::play`] does), at most `max_plies`, until the side to move has
    /// none or neither side can mate; `pos` is left where the game stops.
    /// Returns the moves played.
    pub fn random_game(&mut self, pos: &mut Chess, pick: &mut Seeded, max_plies: usize) -> Vec<Move> {
        let mut played = Vec::new();
        while played.len() < max_plies {
            let legal = pos.legal_moves();
            if legal.is_empty() || pos.is_insufficient_material() {
                break;
            }
            let mv = legal[pick.range(0, legal.len() as u64 - 1) as usize];
            self.play(pos, &mv);
            pos.play_unchecked(mv);
            played.push(mv);
        }
        played
    }

    /// Only the physical steps of `mv`, in a random valid order.
    pub fn hands(&mut self, pos: &Chess, mv: &Move) {
        let us = pos.turn();
        match *mv {
            Move::Normal {
                role,
                from,
                capture,
                to,
                promotion,
            } => {
                let piece = Piece { color: us, role };
                let arriving = Piece {
                    color: us,
                    role: promotion.unwrap_or(role),
                };
                let captured = capture.map(|r| Piece { color: !us, role: r });
                let order = self.rng.range(0, 2);
                match (captured, order) {
                    // Captured piece off first.
                    (Some(c), 0) => {
                        self.lift(to, c);
                        self.lift(from, piece);
                        self.arrive(to, piece, arriving);
                    }
                    // Both in the air: mover up, captured off, mover down.
                    (Some(c), 1) => {
                        self.lift(from, piece);
                        self.lift(to, c);
                        self.arrive(to, piece, arriving);
                    }
                    // Direct replacement: the sensors see the square change piece.
                    (Some(_), _) => {
                        self.lift(from, piece);
                        self.arrive(to, piece, arriving);
                    }
                    (None, _) => {
                        self.lift(from, piece);
                        if promotion.is_none() && self.rng.chance(self.style.slide) {
                            self.slide(from, to, piece);
                        }
                        self.arrive(to, piece, arriving);
                    }
                }
            }
            Move::EnPassant { from, to } => {
                let pawn = us.pawn();
                let victim_sq = Square::from_coords(to.file(), from.rank());
                let victim = (!us).pawn();
                if self.rng.chance(50) {
                    self.lift(from, pawn);
                    self.place(to, pawn);
                    self.lift(victim_sq, victim);
                } else {
                    self.lift(victim_sq, victim);
                    self.lift(from, pawn);
                    self.place(to, pawn);
                }
            }
            Move::Castle { king, rook } => {
                let side = CastlingSide::from_queen_side(rook < king);
                let k_to = Square::from_coords(side.king_to_file(), king.rank());
                let r_to = Square::from_coords(side.rook_to_file(), king.rank());
                let kp = us.king();
                let rp = us.rook();
                let standard = king.file() == shakmaty::File::E
                    && (rook.file() == shakmaty::File::A || rook.file() == shakmaty::File::H);
                if standard && self.rng.chance(70) {
                    // King first, as the Laws ask (4.4.2).
                    self.lift(king, kp);
                    self.place(k_to, kp);
                    self.lift(rook, rp);
                    self.place(r_to, rp);
                } else {
                    // Both in the air (works also when the squares overlap, as
                    // they may in Chess960), the king touched first; blitz hands
                    // set either down first.
                    self.lift(king, kp);
                    self.lift(rook, rp);
                    if self.style.press_ms.is_none() || self.rng.chance(50) {
                        self.place(k_to, kp);
                        self.place(r_to, rp);
                    } else {
                        self.place(r_to, rp);
                        self.place(k_to, kp);
                    }
                }
            }
            Move::Put { .. } => {}
        }
    }

    /// The moving piece arrives on `to`: for a promotion, with the pawn first put on
    /// the last rank (4.6) or the new piece placed straight away.
    fn arrive(&mut self, to: Square, piece: Piece, arriving: Piece) {
        if piece != arriving && self.rng.chance(50) {
            self.place(to, piece);
            self.wait(200);
            self.lift(to, piece);
            self.place(to, arriving);
        } else {
            self.place(to, arriving);
        }
    }

    /// Short placements on the squares between `from` and `to` (a slide). Only for
    /// straight lines and diagonals, over empty squares.
    fn slide(&mut self, from: Square, to: Square, piece: Piece) {
        // From `from` towards `to` (a bitboard iterates by square index).
        let mut between: Vec<Square> = shakmaty::attacks::between(from, to).into_iter().collect();
        between.sort_by_key(|sq| sq.distance(from));
        for sq in between {
            let board_sq = self.orientation.board(sq);
            self.push(RecordKind::Place {
                square: board_sq,
                piece,
            });
            let on = self.rng.range(30, 90);
            self.wait(on);
            self.push(RecordKind::Lift {
                square: board_sq,
                piece: Some(piece),
            });
            let off = self.rng.range(20, 60);
            self.wait(off);
        }
    }
}
