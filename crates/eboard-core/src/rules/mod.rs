//! The rules core: sensor events in, the game as an arbiter sees it out
//! (`docs/RULES.md`). Pure: no I/O, no wall clock; time comes with each input.
//!
//! How it decides, in one paragraph: every change of the board is matched against
//! (1) the expected position, (2) the results of the legal moves from it, (3) for a
//! move not yet completed, the results of the other legal moves from the position
//! before it (an amendment), and (4) earlier positions and the legal moves from them
//! (a take-back). The record follows these matches, so it depends only on the
//! sequence of board states, never on timing. Timing decides only *when* a move is
//! reported as made (its last placement released, the clock pressed, or the opponent
//! starting their turn), whether a lift was sensor flicker, and when an unexplained
//! board has stood long enough to be irregular. Touches are tracked separately and
//! judged against the move played (Art. 4).
//!
//! One file per concern, each adding to `Core` what it needs: `matching` (placement
//! hashes and matching a board against the record), `touch` (lifts, placements and
//! touch-move), `record` (moves made, amended, taken back, completed),
//! `irregular` (Art. 7), `clock` (reports, flags, the host's clock), `start` (game
//! start and end, orientation), `resync` (line faults and inferred plies),
//! `decision` (an arbiter's decision as one value, its record), `arbiter` (what
//! it does). This file holds the state and routes the inputs.

mod arbiter;
pub mod book;
mod clock;
mod decision;
mod event;
mod game;
mod irregular;
mod matching;
mod outbox;
mod record;
mod resync;
mod settings;
mod start;
mod touch;
mod undo;
mod values;

use shakmaty::{Board, CastlingMode, Chess, Color, Piece, Position, Role, Square};

pub use arbiter::{NOT_A_BOARDS, Refused};
pub use decision::{
    ClockMs, Decision, FenPosition, GivenTimeControl, MAX_TERMINATION_CHARS, Seconds, TerminationWords,
    parse_result, parse_side, parse_start, termination_words,
};
pub use event::{
    Config, Event, EventKind, FlagPolicy, IrregularKind, MAX_THRESHOLD_MS, Penalty, Profile, Side,
    UnknownName,
};
pub use game::{Game, PlayedMove, fen as game_fen, round_trip};
pub use settings::{ClockMode, Pinned, SETTINGS_KEY, Settings, SettingsError};
pub use values::{Article, DrawReason, GameResult, Termination, Variant, joined, running_str};

use crate::board::{BoardEvent, Orientation};
use crate::protocol::{ClockSide, PieceCode};
use irregular::Irregular;
use matching::Sensors;
use record::UnderWay;
use resync::Line;
use touch::Hands;

pub use outbox::MAX_NOTES;

/// The rules core of one board.
#[derive(Debug)]
pub struct Core {
    cfg: Config,
    /// The sensors' placement in board numbering, with its placement hash.
    sensors: Sensors,
    game: Option<Game>,
    /// The games before the current one, their numbering, and how the next
    /// starts.
    games: start::Games,
    last_change: u64,
    /// The hands: lifts pending, the last placement, the touches (touch-move).
    hands: Hands,
    /// What the board shows beyond the record: moves not yet made, a
    /// take-back under way, a forced end waiting for its move's completion.
    under_way: UnderWay,
    irregular: Option<Irregular>,
    /// Completed violations per side (white, black).
    violations: [u32; 2],
    /// What the line left open: plies missed, hypotheses, dumps to confirm.
    line: Line,
    /// The clock's part: time control, the host's clock, commands, reports,
    /// presses and flags.
    clk: clock::Timing,
    /// How many board states have shown a new move so far (the daemon checks each
    /// against a dump).
    shown: u64,
    /// What undoing the last accepted decision puts back ([`Decision::Undo`]).
    undo: Option<undo::UndoPoint>,
    /// The events and warnings until the caller takes them; whether events
    /// are kept (a caller that wants only the record, `replay --format
    /// uci|pgn`, turns them off, and neither they nor their strings are made).
    outbox: outbox::Outbox,
}

impl Core {
    pub fn new(mut cfg: Config) -> Core {
        // Deadlines are times plus thresholds in µs: held to an hour, no sum of
        // them can overflow.
        for ms in [&mut cfg.release_ms, &mut cfg.flicker_ms, &mut cfg.irregular_ms] {
            *ms = (*ms).min(MAX_THRESHOLD_MS);
        }
        Core {
            cfg,
            sensors: Sensors::default(),
            game: None,
            games: start::Games::default(),
            last_change: 0,
            hands: Hands::default(),
            under_way: UnderWay::default(),
            irregular: None,
            violations: [0, 0],
            line: Line::default(),
            clk: clock::Timing::default(),
            shown: 0,
            undo: None,
            outbox: outbox::Outbox::default(),
        }
    }

    /// A core whose first game starts from `pos` when the board first reports.
    pub fn with_start(cfg: Config, pos: Chess, mode: CastlingMode) -> Core {
        let mut c = Core::new(cfg);
        c.games.start_from(pos, mode);
        c
    }

    /// The board as the sensors report it, in board numbering.
    pub fn sensors(&self) -> &Board {
        self.sensors.board()
    }

    /// The irregularity reported and not yet resolved, if any.
    pub fn irregularity(&self) -> Option<IrregularKind> {
        self.irregular.as_ref().and_then(|i| i.kind)
    }

    /// Whether a clock report would confirm a flag fall seen once.
    pub fn wants_clock(&self) -> bool {
        self.clk.flag_seen.is_some() || self.clk.unconfirmed_press.as_ref().is_some_and(|u| u.reports < 2)
    }

    /// Counts the board states that showed a new move: the daemon checks each one
    /// against a dump, so that a field update corrupted on the line into another
    /// legal move is amended before the move is completed.
    pub fn moves_shown(&self) -> u64 {
        self.shown
    }

    /// The last clock figures: (white ms, black ms, the side whose clock runs).
    pub fn clock(&self) -> Option<(u64, u64, Option<Side>)> {
        self.clk.said
    }

    /// Which clock side is white's, when known (configured or learnt).
    pub fn white_side(&self) -> Option<ClockSide> {
        self.clk.white()
    }

    /// Fixes which clock side is white's (from the configuration).
    pub fn set_white_side(&mut self, side: ClockSide) {
        self.clk.fix_white(side);
    }

    /// Arbiter: a new game from `pos` (the game under way, if unfinished, ends
    /// `*` / `abandoned`, and is kept). The board's orientation is kept.
    pub fn arbiter_new_game(&mut self, pos: Chess, mode: CastlingMode, t_us: u64) {
        self.restart_from(pos, mode, Termination::Abandoned, t_us);
    }

    /// A game from `pos`; the game under way, if unfinished, ends `*` with
    /// `termination` and is kept.
    fn restart_from(&mut self, pos: Chess, mode: CastlingMode, termination: Termination, t_us: u64) {
        self.advance(t_us);
        let orientation = self.game.as_ref().map_or(Orientation::Normal, |g| g.orientation);
        if self.game.as_ref().is_some_and(|g| !g.is_over()) {
            self.end_game(t_us, GameResult::Unfinished, termination);
        }
        self.start_game(pos, mode, orientation, t_us);
        self.last_change = t_us;
        self.evaluate(t_us);
    }

    /// Arbiter: back to ply `ply` of the game (7.5.1 reinstatement).
    pub fn arbiter_reinstate(&mut self, ply: usize, t_us: u64) -> Result<(), Refused> {
        self.advance(t_us);
        let Some(g) = &mut self.game else {
            return Err(Refused::NoGame("no game under way".into()));
        };
        if ply > g.ply() {
            return Err(Refused::NoGame(format!(
                "ply {ply} is beyond the game's {} plies",
                g.ply()
            )));
        }
        g.result = None;
        g.termination_words = None;
        self.under_way.drop_moves();
        self.take_back(ply, t_us);
        self.last_change = t_us;
        self.evaluate(t_us);
        Ok(())
    }

    /// Arbiter: the game's result, and the words of its PGN `Termination` tag
    /// when given (else the tag says `arbiter`).
    pub fn arbiter_result_with(
        &mut self,
        result: GameResult,
        words: Option<String>,
        t_us: u64,
    ) -> Result<(), Refused> {
        self.advance(t_us);
        if self.game.is_none() {
            return Err(Refused::NoGame("no game under way".into()));
        }
        if let Some(g) = &mut self.game {
            g.result = None;
            g.termination_words = None;
        }
        self.end_game(t_us, result, Termination::Arbiter);
        if let Some(g) = &mut self.game {
            g.termination_words = words;
        }
        Ok(())
    }

    pub fn game(&self) -> Option<&Game> {
        self.game.as_ref()
    }

    /// Every game seen, in order, the current one last.
    pub fn games(&self) -> impl Iterator<Item = &Game> {
        self.games.finished().iter().chain(self.game.as_ref())
    }

    /// Hands over the current game (the core then has none): for a caller done
    /// with the input, as a replay at the end of a log.
    pub fn take_game(&mut self) -> Option<Game> {
        self.game.take()
    }

    /// Hands over the games that are over and no longer the current one (a
    /// replay prints them and lets them go; the daemon keeps them all).
    pub fn take_finished(&mut self) -> Vec<Game> {
        self.games.take_finished()
    }

    /// Whether events are kept (true by default). Off, the core decides exactly
    /// as with them on (an event's time still orders the ones after it) but keeps
    /// none and builds none of their strings: for a caller that reads only the
    /// games (`replay --format uci`, `pgn`).
    pub fn set_events(&mut self, on: bool) {
        self.outbox.set_keep(on);
    }

    /// Whether the moves of games started from now on are given their SAN (true
    /// by default). Off, `Played::san` stays empty and nothing else changes: for
    /// a caller that prints only UCI moves (`replay --format uci`) with events
    /// off (events and PGN show SAN).
    pub fn set_san(&mut self, on: bool) {
        self.games.set_san(on);
    }

    /// Warnings made so far and not yet taken (a clock report that contradicts
    /// the one before, moves played while the line was away), for the caller
    /// to log: the core itself writes no log. At most [`MAX_NOTES`] are kept
    /// (the latest).
    pub fn take_notes(&mut self) -> Vec<String> {
        self.outbox.take_notes()
    }

    fn note(&mut self, text: String) {
        self.outbox.note(text);
    }

    /// Events produced so far and not yet taken.
    pub fn take_events(&mut self) -> Vec<Event> {
        self.outbox.take()
    }

    /// Events produced so far and not yet taken, leaving the core's buffer in
    /// place for the next ones.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, Event> {
        self.outbox.drain()
    }

    /// When the core next needs to be told the time (a release, inference or
    /// irregularity deadline), in microseconds; `None` when nothing waits. After
    /// `advance(t)` it is always later than `t`.
    pub fn next_deadline(&self) -> Option<u64> {
        self.deadline_by(u64::MAX)
    }

    /// [`Core::next_deadline`] when it is at or before `by`, else `None`. The
    /// irregularity deadline's check compares the boards: it is made only when
    /// that deadline is due by then (advancing a few ms after each event, it
    /// mostly is not).
    fn deadline_by(&self, by: u64) -> Option<u64> {
        let release = self.last_change + self.cfg.release_ms * 1000;
        let irregular = self.last_change + self.cfg.irregular_ms * 1000;
        // The earliest of the deadlines that are set, in plain comparisons (this
        // runs two or three times an input); the irregularity check, which
        // compares boards, last and only when it could be the earliest.
        let earliest = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) | (None, x) => x,
        };
        let tentative = self
            .under_way
            .tentative
            .as_ref()
            .map(|t| if t.kings_hold { irregular } else { release });
        let search = self.line.resync.as_ref().and_then(|r| self.search_at(r));
        let flag = self.host_flag_at();
        let press = self.clk.press_waiting.map(|(_, at)| at);
        let at = earliest(earliest(tentative, search), earliest(flag, press));
        let check = irregular <= by && at.is_none_or(|a| irregular < a) && self.needs_irregular_check();
        let at = if check { Some(irregular) } else { at };
        at.filter(|d| *d <= by)
    }

    /// Time passes: handles every deadline up to `now_us`.
    pub fn advance(&mut self, now_us: u64) {
        // Each deadline handled clears itself or moves on; the guard only makes
        // sure that no state could ever loop here.
        for _ in 0..64 {
            match self.deadline_by(now_us) {
                Some(d) => self.deadline(d),
                None => return,
            }
        }
    }

    /// Ends the input: every deadline is handled and the touches pending judged.
    pub fn finish(&mut self) {
        self.clk.finishing = true;
        for _ in 0..64 {
            match self.next_deadline() {
                Some(d) => self.deadline(d),
                None => break,
            }
        }
        let t = self.last_change.max(self.outbox.last());
        self.flush_touches(t);
    }

    /// One board-level event at `t_us`.
    pub fn input(&mut self, ev: &BoardEvent, t_us: u64) {
        if let Some((side, at)) = self.clk.press_waiting.take() {
            let suspect = match ev {
                BoardEvent::Clock(status) => self.report_contradicts(status, t_us),
                _ => false,
            };
            self.advance(at);
            self.press(side, at, suspect);
        }
        self.clk.last_input = self.clk.last_input.max(t_us);
        self.advance(t_us);
        let gated = self.line.resync.as_ref().is_some_and(|r| r.gated);
        match ev {
            BoardEvent::Dump(p) => self.dump(p.to_board(), t_us),
            BoardEvent::Lift { square, piece } => {
                self.line.updates_seen = true;
                let orientation = self.game.as_ref().map_or(Orientation::Normal, |g| g.orientation);
                if let Some(r) = &mut self.line.resync {
                    if r.lifts.len() < 64 {
                        r.lifts.push(orientation.real(*square));
                    }
                    r.lifted = r.lifted.saturating_add(1);
                }
                self.sensors.discard(*square);
                self.last_change = t_us;
                if !gated {
                    let lifted = piece.piece();
                    self.changed(t_us, lifted.map(|p| (*square, p, true)));
                }
            }
            BoardEvent::Place { square, piece, .. } => {
                self.line.updates_seen = true;
                let orientation = self.game.as_ref().map_or(Orientation::Normal, |g| g.orientation);
                if let Some(r) = &mut self.line.resync {
                    r.placed = r.placed.saturating_add(1);
                    if let (Some(p), true) = (piece.piece(), r.puts.len() < 64) {
                        r.puts.push((orientation.real(*square), p));
                    }
                }
                match piece {
                    PieceCode::Piece(p) => self.sensors.set(*square, *p),
                    _ => self.sensors.discard(*square),
                }
                self.last_change = t_us;
                if !gated
                    && piece
                        .piece()
                        .is_some_and(|p| self.impossible_placement(*square, p))
                {
                    self.line_fault(t_us);
                }
                if !gated {
                    self.changed(t_us, piece.piece().map(|p| (*square, p, false)));
                }
            }
            BoardEvent::Press(side) => match &mut self.line.resync {
                Some(r) if r.gated => r.held_press = Some(*side),
                _ => self.clk.press_waiting = Some((*side, t_us)),
            },
            BoardEvent::Clock(status) => match &mut self.line.resync {
                Some(r) if r.gated => r.held_clock = Some(*status),
                _ => self.clock_report(status, t_us),
            },
            // A front button of the clock: reported, it decides nothing (an arbiter
            // or a tool may give it a meaning).
            BoardEvent::Button(b) => self.emit(t_us, EventKind::ClockButton { button: *b }),
            BoardEvent::ClockAck(crate::protocol::AckKind::Command { command, .. }) => {
                self.clock_acked(*command, t_us)
            }
            BoardEvent::ClockAck(_) | BoardEvent::Info(_) => {}
        }
    }

    /// The side to move in the record (white before any game).
    fn to_move(&self) -> Color {
        self.game.as_ref().map_or(Color::White, |g| g.current().turn())
    }

    fn emit(&mut self, t_us: u64, kind: EventKind) {
        self.emit_with(t_us, |_| kind);
    }

    /// An event made by `make` only when events are kept (its strings cost more
    /// than the decision); its time counts either way.
    fn emit_with(&mut self, t_us: u64, make: impl FnOnce(&Core) -> EventKind) {
        let t_us = self.outbox.stamp(t_us);
        if !self.outbox.keeps() {
            return;
        }
        let kind = make(self);
        self.outbox.push(t_us, kind);
    }

    /// A placement left more pieces of its kind on the sensor board than the game
    /// has had (a third knight, a second king, a ninth pawn) and not as a promotion
    /// under way (an officer set on its side's last rank). No hand makes that; a
    /// lift lost or corrupted into another square on the line does (a flipped bit
    /// inside a well-formed message): handled as a line fault, so the board is
    /// checked against a dump before anything is judged on it.
    fn impossible_placement(&self, square: Square, piece: Piece) -> bool {
        let Some(game) = &self.game else { return false };
        let count = |b: &Board| b.by_piece(piece).count();
        let now = count(self.sensors.board());
        if now <= count(game.positions[0].board()).max(count(game.current().board())) {
            return false;
        }
        let last = if piece.color.is_white() {
            shakmaty::Rank::Eighth
        } else {
            shakmaty::Rank::First
        };
        match piece.role {
            Role::King | Role::Pawn => true,
            _ => game.orientation.real(square).rank() != last,
        }
    }

    fn real_board(&self) -> Board {
        let o = self.game.as_ref().map_or(Orientation::Normal, |g| g.orientation);
        o.real_board(self.sensors.board())
    }

    /// The placement hash of the real board (`real_board`).
    fn real_hash(&self) -> u64 {
        let o = self.game.as_ref().map_or(Orientation::Normal, |g| g.orientation);
        self.sensors.hash(o)
    }

    fn deadline(&mut self, d: u64) {
        // A press whose report never came (a real board always sends it with
        // the press) is judged as it is.
        if let Some((side, at)) = self.clk.press_waiting.take() {
            self.press(side, at, false);
            return;
        }
        if self.host_flag_at().is_some_and(|at| at <= d) {
            self.host_flag(d);
            return;
        }
        if let Some(tent) = self.under_way.tentative {
            let wait = if tent.kings_hold {
                self.cfg.irregular_ms
            } else {
                self.cfg.release_ms
            };
            if self.last_change + wait * 1000 <= d {
                self.commit(d);
                // Made while the line was away (a gap open, no dump since).
                let ply = self.game.as_ref().map(Game::ply);
                if let Some(r) = self
                    .line
                    .resync
                    .as_mut()
                    .filter(|r| r.gated && r.cause == resync::Cause::Gap)
                {
                    r.unheard_last = ply;
                }
                return;
            }
        }
        if self
            .line
            .resync
            .as_ref()
            .and_then(|r| self.search_at(r))
            .is_some_and(|at| at <= d)
        {
            self.infer(d);
            return;
        }
        if self.last_change + self.cfg.irregular_ms * 1000 <= d {
            if let Some(k) = self.under_way.takeback.take() {
                self.take_back(k, d);
                self.resolve(d);
                return;
            }
            self.report_irregular(d);
        }
    }
}

fn side_index(s: Side) -> usize {
    match s {
        Side::White => 0,
        Side::Black => 1,
    }
}
