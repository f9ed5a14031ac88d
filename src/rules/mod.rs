//! The rules core: sensor events in, the game as an arbiter sees it out
//! (`shared/spec/rules.md`). Pure: no I/O, no wall clock; time comes with each input.
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

mod arbiter;
mod clock;
pub mod drive;
mod event;
mod game;
mod matching;
mod touch;

use shakmaty::{Bitboard, Board, CastlingMode, Chess, Color, Move, Piece, Position, Role, Square};

pub use arbiter::{Decision, Refused, parse_start};
pub use event::{Config, Event, EventKind, FlagPolicy, IrregularKind, Profile, Side};
pub use game::{Game, Played, fen as game_fen};

use crate::board::{BoardEvent, Orientation};
use crate::protocol::{ClockSide, ClockStatus, PieceCode};
use matching::Sensors;
use touch::{Touch, TouchLog};

/// A move the board shows but that is not yet reported as made.
#[derive(Debug, Clone, Copy)]
struct Tentative {
    /// The ply it is played from: the current ply (a new move), one less (an
    /// amendment of a move not completed), or earlier (a take-back and a new move).
    base: usize,
    mv: Move,
    /// A king stepping onto a centre square may be the start of a result by kings:
    /// it waits for the irregular threshold instead of the release threshold.
    kings_hold: bool,
    /// Found across a gap in the line: marked, and judged for no touch-move.
    inferred: bool,
}

/// Why the line may have missed changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// A gap (reconnect, skipped bytes, a `gap` record) or a dump the field updates
    /// did not lead to: every move found is inferred.
    Gap,
    /// A board read by dumps only (polled): several plies may fall between two.
    Poll,
}

/// Which search for missed plies waits for the board to rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Search {
    No,
    /// Up to [`SHORT_PLIES`], once the board has stood for the release threshold.
    Short,
    /// Up to [`game::MAX_INFERRED_PLIES`], once it has stood for the irregularity
    /// threshold: more plies can explain more, so a piece held in the hand must not
    /// be taken for one captured.
    Long,
}

/// The plies bridged as soon as the board rests.
const SHORT_PLIES: usize = 2;

/// A stretch during which the board may be several plies ahead of the record.
#[derive(Debug, Clone)]
struct Resync {
    cause: Cause,
    /// Waiting for the first dump after a gap: the sensor board is not known, so
    /// field updates are not judged, and presses and clock reports are held.
    gated: bool,
    held_press: Option<ClockSide>,
    held_clock: Option<ClockStatus>,
    /// The board is unexplained: the plies that reach it are looked for once it
    /// has stood still long enough (see [`Core::search_at`]).
    search: Search,
    /// Squares pieces were seen lifted from meanwhile (real squares, in order):
    /// evidence of the order of the plies when several orders reach the board.
    lifts: Vec<Square>,
    /// Lifts and placements seen since the last dump: with a piece seen placed and
    /// none seen lifted and not placed again, the board is not a snapshot with a
    /// piece in the hand.
    lifted: u16,
    placed: u16,
    /// The board the dump after the gap showed (real squares): plies found across
    /// the gap end there; what was seen after it is judged as seen.
    anchor: Option<Board>,
}

impl Resync {
    fn new(cause: Cause, gated: bool) -> Resync {
        Resync {
            cause,
            gated,
            held_press: None,
            held_clock: None,
            search: Search::No,
            lifts: Vec::new(),
            lifted: 0,
            placed: 0,
            anchor: None,
        }
    }
}

/// An unexplained board that has been reported.
#[derive(Debug, Clone)]
struct Irregular {
    board: Board,
    /// The kind reported, `None` while the board is only unexplained.
    kind: Option<IrregularKind>,
}

#[derive(Debug, Clone, Copy)]
struct PendingLift {
    square: Square,
    piece: Piece,
    at: u64,
}

/// The rules core of one board.
#[derive(Debug)]
pub struct Core {
    cfg: Config,
    /// The sensors' placement in board numbering, with its placement hash.
    sensors: Sensors,
    game: Option<Game>,
    /// Games before the current one, in order.
    finished: Vec<Game>,
    games: u32,
    /// A game to start from a given position once the board is seen (`--fen`).
    start_at: Option<(Chess, CastlingMode)>,
    last_change: u64,
    pending: Vec<PendingLift>,
    /// The last placement (real square, piece, time), to tell slides from touches.
    last_place: Option<(Square, Piece, u64)>,
    touches: TouchLog,
    tentative: Option<Tentative>,
    /// A move the board showed when the opponent lifted a piece it could have
    /// captured: made only once the board goes on from it (it may yet become the
    /// capture).
    held: Option<Tentative>,
    /// An earlier ply the board shows (a take-back under way).
    takeback: Option<usize>,
    irregular: Option<Irregular>,
    /// Completed violations per side (white, black).
    violations: [u32; 2],
    white_side: Option<ClockSide>,
    clock: Option<ClockStatus>,
    clock_said: Option<(u64, u64, &'static str)>,
    clock_seen: bool,
    /// The ply whose mover's time the next clock report gives (after a press).
    clk_for: Option<usize>,
    /// Set while the board may be plies ahead of the record (`Resync`).
    resync: Option<Resync>,
    /// A field update has arrived: the board sends updates (it is not read by
    /// dumps only), so a dump that disagrees with them means the line lost
    /// something.
    updates_seen: bool,
    /// Line faults were seen until this time (plus a minute): a completed violation
    /// is then judged only once a dump has confirmed the board.
    noisy_until: Option<u64>,
    /// A press that would be a completed violation on a line that lost something
    /// lately, waiting to be confirmed.
    unconfirmed_press: Option<Unconfirmed>,
    /// A forced end (mate, stalemate, ...) waiting for its move to be completed:
    /// (ply, result, termination).
    pending_end: Option<(usize, &'static str, &'static str)>,
    /// A side whose fallen flag one clock report showed, waiting for the next
    /// report to confirm it; and the sides already reported this game.
    flag_seen: Option<ClockSide>,
    flags_reported: [bool; 2],
    /// The clock's part: time control, the host's clock, commands, reports.
    clk: clock::Timing,
    /// The lever (status bit 1) in the report before the last one.
    lever_before: Option<bool>,
    /// A dump taken after a gap or a line fault waits for a second dump that
    /// agrees with it (one dump may itself have been corrupted on the line).
    confirm_dump: bool,
    /// How many board states have shown a new move so far (the daemon checks each
    /// against a dump).
    shown: u64,
    /// The time of the last event: events never go back in time.
    last_emit: u64,
    out: Vec<Event>,
}

/// A press on a suspect line that would be a completed violation. A lever bit
/// flipped in one clock report looks like a press, and a field update lost looks
/// like no move: the violation is judged only when the next clock report shows
/// the lever still down on the presser's side and a dump shows the board as the
/// updates left it.
#[derive(Debug, Clone)]
struct Unconfirmed {
    color: Color,
    /// Where the press put the lever (status bit 1: high on the right).
    right_lever_high: bool,
    /// Clock reports since the press (the first is the press's own).
    reports: u8,
    dumped: bool,
    /// What the board showed at the press.
    board: Board,
    kind: IrregularKind,
    squares: Vec<String>,
}

/// A line that showed a fault stays suspect this long (µs).
const NOISY_FOR_US: u64 = 60_000_000;

const CENTRE: [Square; 4] = [Square::D4, Square::D5, Square::E4, Square::E5];

impl Core {
    pub fn new(cfg: Config) -> Core {
        Core {
            cfg,
            sensors: Sensors::default(),
            game: None,
            finished: Vec::new(),
            games: 0,
            start_at: None,
            last_change: 0,
            pending: Vec::new(),
            last_place: None,
            touches: TouchLog::default(),
            tentative: None,
            held: None,
            takeback: None,
            irregular: None,
            violations: [0, 0],
            white_side: None,
            clock: None,
            clock_said: None,
            clock_seen: false,
            clk_for: None,
            resync: None,
            updates_seen: false,
            noisy_until: None,
            unconfirmed_press: None,
            pending_end: None,
            flag_seen: None,
            flags_reported: [false; 2],
            clk: clock::Timing::default(),
            lever_before: None,
            confirm_dump: false,
            shown: 0,
            last_emit: 0,
            out: Vec::new(),
        }
    }

    /// A core whose first game starts from `pos` when the board first reports.
    pub fn with_start(cfg: Config, pos: Chess, mode: CastlingMode) -> Core {
        let mut c = Core::new(cfg);
        c.start_at = Some((pos, mode));
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

    /// The line may have lost changes here (a reconnect, skipped or corrupted
    /// bytes, a `gap` record). Until the next dump, field updates only move the
    /// sensor board (nothing is judged on it), and presses and clock reports are
    /// held; the dump is then matched against the positions up to
    /// [`game::MAX_INFERRED_PLIES`] plies ahead, and the held press only completes
    /// a move. Calling it again before the dump changes nothing.
    pub fn gap(&mut self, t_us: u64) {
        self.advance(t_us);
        self.pending.clear();
        self.last_place = None;
        self.unconfirmed_press = None;
        self.clk.resync_host = true;
        self.clock_line_lost();
        let r = self.resync.get_or_insert_with(|| Resync::new(Cause::Gap, true));
        r.cause = Cause::Gap;
        r.gated = true;
        r.search = Search::No;
    }

    /// Bytes from the board were skipped (lost or corrupted on the line): a field
    /// update may be missing, so the board is checked against a dump (one that
    /// disagrees with the updates is handled as a gap it closes), moves found
    /// meanwhile are marked inferred, and presses are judged only once confirmed.
    /// Unlike [`Core::gap`], what the board shows goes on being judged.
    pub fn line_fault(&mut self, t_us: u64) {
        self.advance(t_us);
        self.noisy_until = Some(t_us + NOISY_FOR_US);
        self.confirm_dump = true;
        if self.game.is_some() {
            let r = self.resync.get_or_insert_with(|| Resync::new(Cause::Gap, false));
            r.cause = Cause::Gap;
        }
    }

    /// Whether a fresh board dump would help now: after a gap, while a press waits
    /// for the board to be confirmed, while a flag fall waits for a second report
    /// (a clock report then), and while the board is irregular or unexplained
    /// on a line that may have lost something. The daemon asks the board for one
    /// when this turns true, and every few seconds while it stays so.
    pub fn wants_dump(&self) -> bool {
        if self.resync.as_ref().is_some_and(|r| r.gated)
            || self.unconfirmed_press.as_ref().is_some_and(|u| !u.dumped)
        {
            return true;
        }
        if self.confirm_dump || self.irregular.as_ref().is_some_and(|i| i.kind.is_some()) {
            return true;
        }
        self.resync.is_some() && self.tentative.is_none() && self.unexplained()
    }

    /// Whether the last dump awaits a second that agrees with it (or the first
    /// after a gap is still awaited): worth asking for at once, not only every few
    /// seconds.
    pub fn confirming(&self) -> bool {
        self.confirm_dump || self.resync.as_ref().is_some_and(|r| r.gated)
    }

    /// Whether a clock report would confirm a flag fall seen once.
    pub fn wants_clock(&self) -> bool {
        self.flag_seen.is_some() || self.unconfirmed_press.as_ref().is_some_and(|u| u.reports < 2)
    }

    /// Counts the board states that showed a new move: the daemon checks each one
    /// against a dump, so that a field update corrupted on the line into another
    /// legal move is amended before the move is completed.
    pub fn moves_shown(&self) -> u64 {
        self.shown
    }

    /// When plies may be inferred for the board as it stands: up to 2 once it has
    /// stood for the release threshold, up to 6 once it has stood for the
    /// irregularity threshold (a piece held in the hand must not be explained as
    /// one captured).
    fn search_at(&self, r: &Resync) -> Option<u64> {
        let at_rest = r.placed > 0 && r.lifted <= r.placed;
        let wait = match r.search {
            Search::No => return None,
            Search::Short => self.cfg.release_ms,
            Search::Long if at_rest => self.cfg.release_ms,
            Search::Long => self.cfg.irregular_ms,
        };
        Some(self.last_change + wait * 1000)
    }

    /// The board differs from the expected position with no move under way.
    fn unexplained(&self) -> bool {
        self.game
            .as_ref()
            .is_some_and(|g| !g.is_over() && g.current().board() != &self.real_board())
    }

    /// The last clock figures: (white ms, black ms, running side name).
    pub fn clock(&self) -> Option<(u64, u64, &'static str)> {
        self.clock_said
    }

    /// Which clock side is white's, when known (configured or learnt).
    pub fn white_side(&self) -> Option<ClockSide> {
        self.white_side
    }

    /// Fixes which clock side is white's (from the configuration).
    pub fn set_white_side(&mut self, side: ClockSide) {
        self.white_side = Some(side);
    }

    /// Arbiter: a new game from `pos` (the game under way, if unfinished, ends
    /// `*` / `abandoned`, and is kept). The board's orientation is kept.
    pub fn arbiter_new_game(&mut self, pos: Chess, mode: CastlingMode, t_us: u64) {
        self.advance(t_us);
        let orientation = self.game.as_ref().map_or(Orientation::Normal, |g| g.orientation);
        self.settle_end(t_us);
        if self.game.as_ref().is_some_and(|g| !g.is_over()) {
            self.end_game(t_us, "*", "abandoned");
        }
        self.start_game(pos, mode, orientation, t_us);
        self.last_change = t_us;
        self.evaluate(t_us);
    }

    /// Arbiter: back to ply `ply` of the game (7.5.1 reinstatement).
    pub fn arbiter_reinstate(&mut self, ply: usize, t_us: u64) -> Result<(), String> {
        self.advance(t_us);
        let Some(g) = &mut self.game else {
            return Err("no game under way".into());
        };
        if ply > g.ply() {
            return Err(format!("ply {ply} is beyond the game's {} plies", g.ply()));
        }
        g.result = None;
        self.tentative = None;
        self.held = None;
        self.take_back(ply, t_us);
        self.last_change = t_us;
        self.evaluate(t_us);
        Ok(())
    }

    /// Arbiter: the game's result (`1-0`, `0-1`, `1/2-1/2`, `*`).
    pub fn arbiter_result(&mut self, result: &str, t_us: u64) -> Result<(), String> {
        self.advance(t_us);
        let result: &'static str = match result {
            "1-0" => "1-0",
            "0-1" => "0-1",
            "1/2-1/2" => "1/2-1/2",
            "*" => "*",
            other => return Err(format!("`{other}` is not a result (1-0, 0-1, 1/2-1/2 or *)")),
        };
        if self.game.is_none() {
            return Err("no game under way".into());
        }
        if let Some(g) = &mut self.game {
            g.result = None;
        }
        self.end_game(t_us, result, "arbiter");
        Ok(())
    }

    pub fn game(&self) -> Option<&Game> {
        self.game.as_ref()
    }

    /// Every game seen, in order, the current one last.
    pub fn games(&self) -> impl Iterator<Item = &Game> {
        self.finished.iter().chain(self.game.as_ref())
    }

    /// Events produced so far and not yet taken.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.out)
    }

    /// When the core next needs to be told the time (a release, inference or
    /// irregularity deadline), in microseconds; `None` when nothing waits. After
    /// `advance(t)` it is always later than `t`.
    pub fn next_deadline(&self) -> Option<u64> {
        let release = self.last_change + self.cfg.release_ms * 1000;
        let irregular = self.last_change + self.cfg.irregular_ms * 1000;
        let tentative = self
            .tentative
            .as_ref()
            .map(|t| if t.kings_hold { irregular } else { release });
        let search = self.resync.as_ref().and_then(|r| self.search_at(r));
        let check = self.needs_irregular_check().then_some(irregular);
        let flag = self.host_flag_at();
        [tentative, search, check, flag].into_iter().flatten().min()
    }

    /// Time passes: handles every deadline up to `now_us`.
    pub fn advance(&mut self, now_us: u64) {
        // Each deadline handled clears itself or moves on; the guard only makes
        // sure that no state could ever loop here.
        for _ in 0..64 {
            match self.next_deadline() {
                Some(d) if d <= now_us => self.deadline(d),
                _ => return,
            }
        }
    }

    /// Ends the input: every deadline is handled, and a game end whose move was
    /// not completed stands (the board did not change after it).
    pub fn finish(&mut self) {
        self.clk.finishing = true;
        for _ in 0..64 {
            match self.next_deadline() {
                Some(d) => self.deadline(d),
                None => break,
            }
        }
        let t = self.last_change.max(self.last_emit);
        self.flush_touches(t);
        self.settle_end(t);
    }

    /// A pending forced end becomes the result.
    fn settle_end(&mut self, t: u64) {
        if let Some((_, result, termination)) = self.pending_end.take() {
            self.end_game(t, result, termination);
        }
    }

    /// One board-level event at `t_us`.
    pub fn input(&mut self, ev: &BoardEvent, t_us: u64) {
        self.clk.last_input = self.clk.last_input.max(t_us);
        self.advance(t_us);
        let gated = self.resync.as_ref().is_some_and(|r| r.gated);
        match ev {
            BoardEvent::Dump(p) => self.dump(p.to_board(), t_us),
            BoardEvent::Lift { square, piece } => {
                self.updates_seen = true;
                let orientation = self.game.as_ref().map_or(Orientation::Normal, |g| g.orientation);
                if let Some(r) = &mut self.resync {
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
                self.updates_seen = true;
                if let Some(r) = &mut self.resync {
                    r.placed = r.placed.saturating_add(1);
                }
                match piece {
                    PieceCode::Piece(p) => self.sensors.set(*square, *p),
                    _ => self.sensors.discard(*square),
                }
                self.last_change = t_us;
                if !gated {
                    self.changed(t_us, piece.piece().map(|p| (*square, p, false)));
                }
            }
            BoardEvent::Press(side) => match &mut self.resync {
                Some(r) if r.gated => r.held_press = Some(*side),
                _ => self.press(*side, t_us),
            },
            BoardEvent::Clock(status) => match &mut self.resync {
                Some(r) if r.gated => r.held_clock = Some(*status),
                _ => self.clock_report(status, t_us),
            },
            // A front button of the clock: reported, it decides nothing (an arbiter
            // or a tool may give it a meaning).
            BoardEvent::Button(b) => self.emit(t_us, EventKind::ClockButton { button: b.name() }),
            BoardEvent::ClockAck(crate::protocol::AckKind::Command { command, .. }) => {
                self.clock_acked(*command)
            }
            BoardEvent::ClockAck(_) | BoardEvent::Info(_) => {}
        }
    }

    /// A whole-board report. After a gap it settles the sensor board; on a board
    /// read by dumps only it is the next board state, seen as lifts and placements;
    /// on a board sending updates, one that disagrees with them means the line lost
    /// something, and it is handled as a gap that this dump closes.
    fn dump(&mut self, board: Board, t: u64) {
        let polled = !self.updates_seen;
        let gated = self.resync.as_ref().is_some_and(|r| r.gated);
        if !gated && &board == self.sensors.board() {
            self.confirm_dump = false;
            // Confirmed: the board is as the updates left it. If it also shows the
            // record (or a move on from it), the line is in step again.
            let in_step = self.tentative.is_some() || !self.unexplained();
            if in_step && self.resync.as_ref().is_some_and(|r| r.cause == Cause::Gap) {
                self.resync = None;
            }
            // A board still unexplained, now confirmed: plies may be looked for.
            if let Some(r) = &mut self.resync {
                if !in_step && r.search == Search::No {
                    r.search = Search::Short;
                }
            }
            // The board as the updates left it: a press waiting for it may be judged.
            if let Some(u) = &mut self.unconfirmed_press {
                u.dumped = true;
            }
            self.judge_confirmed(t);
            return;
        }
        self.unconfirmed_press = None;
        if !gated && polled && self.game.is_some() {
            self.resync.get_or_insert_with(|| Resync::new(Cause::Poll, false));
            // A step of one move (or the pieces of one in the air) is seen as
            // lifts and placements, so touches count; a dump further on than
            // that is matched as a whole (its lifts would be guesses).
            if self.one_step(&board) {
                self.dump_as_changes(&board, t);
                return;
            }
        }
        if !gated && !polled && self.game.is_some() {
            // The updates did not lead to this board: something was lost.
            self.noisy_until = Some(t + NOISY_FOR_US);
            let r = self.resync.get_or_insert_with(|| Resync::new(Cause::Gap, false));
            r.cause = Cause::Gap;
        }
        self.sensors = Sensors::new(board);
        self.pending.clear();
        self.last_place = None;
        self.last_change = t;
        // A dump taken on a line that has shown faults is confirmed by a second;
        // so is the first with no game under way (it decides whether one starts).
        self.confirm_dump = self.noisy_until.is_some_and(|until| t < until) || self.game.is_none();
        let (clock, press) = match &mut self.resync {
            Some(r) => {
                r.gated = false;
                r.lifted = 0;
                r.placed = 0;
                (r.held_clock.take(), r.held_press.take())
            }
            None => (None, None),
        };
        let anchor = self.real_board();
        if let Some(r) = &mut self.resync {
            r.anchor = Some(anchor);
        }
        self.changed(t, None);
        // A move the dump after a gap shows was made (released) while the line was
        // away: it is made now, not after another release threshold.
        if gated && self.tentative.is_some() {
            self.commit(t);
        }
        if let Some(status) = clock {
            self.clock_report(&status, t);
        }
        // Up to 2 plies missed are looked for at once on the dump itself (few plies
        // explain little; the board may not rest again before more are played).
        if self.resync.as_ref().is_some_and(|r| r.search != Search::No) && !self.confirm_dump {
            let board = self.real_board();
            if let Some((base, path)) = self.best_path(&board, SHORT_PLIES) {
                self.commit_found(base, path, t);
                if let Some(r) = &mut self.resync {
                    r.anchor = None;
                    r.search = Search::No;
                }
            }
        }
        // A press held over the gap completes the move it follows: now if the board
        // is explained, else once the plies that reach it are found.
        match (&mut self.resync, press) {
            (Some(r), Some(side)) if r.search != Search::No => r.held_press = Some(side),
            (_, Some(side)) => self.held_press(side, t),
            _ => {}
        }
    }

    /// The side to move in the record (white before any game).
    fn to_move(&self) -> Color {
        self.game.as_ref().map_or(Color::White, |g| g.current().turn())
    }

    /// `board` (board numbering) is at most one move from the record: the expected
    /// position, a legal move's result or amendment, or a move under way.
    fn one_step(&self, board: &Board) -> bool {
        let Some(g) = &self.game else { return false };
        let real = g.orientation.real_board(board);
        let h = matching::placement(&real);
        let n = g.ply();
        real == *g.current().board()
            || g.move_from(n, h, &real).is_some()
            || is_partial(g.current(), &real)
            || (n > 0 && !g.moves[n - 1].completed && g.move_from(n - 1, h, &real).is_some())
    }

    /// A dump of a polled board that differs from the last: the pieces gone are
    /// lifts and the pieces arrived are placements, at the dump's time. Lifts of
    /// the side to move come first, a king before its rook, as hands do.
    fn dump_as_changes(&mut self, board: &Board, t: u64) {
        let before = self.sensors.board().clone();
        let to_move = self.to_move();
        let mut lifts: Vec<(Square, Piece)> = Square::ALL
            .into_iter()
            .filter_map(|sq| {
                let was = before.piece_at(sq)?;
                (board.piece_at(sq) != Some(was)).then_some((sq, was))
            })
            .collect();
        lifts.sort_by_key(|(_, p)| (p.color != to_move, p.role != Role::King));
        let places: Vec<(Square, Piece)> = Square::ALL
            .into_iter()
            .filter_map(|sq| {
                let now = board.piece_at(sq)?;
                (before.piece_at(sq) != Some(now)).then_some((sq, now))
            })
            .collect();
        for (sq, piece) in lifts {
            // A piece replaced directly (a capture) is seen as the placement only.
            if board.piece_at(sq).is_some() {
                continue;
            }
            self.sensors.discard(sq);
            self.last_change = t;
            self.changed(t, Some((sq, piece, true)));
        }
        for (sq, piece) in places {
            self.sensors.set(sq, piece);
            self.last_change = t;
            self.changed(t, Some((sq, piece, false)));
        }
    }

    /// A press held over a gap: it completes the move its presser made, and is
    /// judged for nothing else (what happened in the gap is not known).
    fn held_press(&mut self, side: ClockSide, t: u64) {
        self.clock_seen = true;
        if self.tentative.is_some() {
            self.commit(t);
        }
        let Some(game) = &self.game else { return };
        let n = game.ply();
        if n == 0 || game.moves[n - 1].completed || game.is_over() {
            return;
        }
        let mover = game.positions[n - 1].turn();
        // Who pressed across a gap is known only from the clock's sides, never
        // learnt from such a press (it may be any press made while away).
        let Some(white) = self.white_side else { return };
        let presser = if white == side { Color::White } else { Color::Black };
        let emt = self.clock_pressed(side, t);
        if presser == mover {
            self.complete(n, t);
            self.clock_completed(n, emt, t);
        }
    }

    /// Looks for the plies that reach the board from the record (the line may have
    /// missed them). Found: recorded, marked inferred, all but the last completed.
    /// Not found: the board stays unexplained and the irregular deadline reports it
    /// (`lost_track` after a gap).
    fn infer(&mut self, t: u64) {
        let Some(r) = &mut self.resync else { return };
        let (plies, next) = match r.search {
            Search::Short => (SHORT_PLIES, Search::Long),
            _ => (game::MAX_INFERRED_PLIES, Search::No),
        };
        r.search = next;
        // Only on a board a dump has confirmed (the confirming dump looks again).
        if self.confirm_dump {
            if let Some(r) = &mut self.resync {
                r.search = Search::No;
            }
            return;
        }
        let board = self.real_board();
        // The plies missed end on the board the dump after the gap showed, when the
        // board has moved on from it since: those are found first (up to 6 plies at
        // once, unless that dump had a piece in the air: the board after it has more
        // pieces), and what was seen after the dump is then judged as seen.
        let anchor = self.resync.as_mut().and_then(|r| r.anchor.take());
        if let Some(anchor) = anchor {
            if anchor != board && board.occupied().count() <= anchor.occupied().count() {
                if let Some((base, path)) = self.best_path(&anchor, game::MAX_INFERRED_PLIES) {
                    self.commit_found(base, path, t);
                    self.evaluate(t);
                    return;
                }
            }
        }
        if let Some((base, path)) = self.best_path(&board, plies) {
            self.commit_found(base, path, t);
        }
    }

    /// The path of at most `plies` to `board` (real squares) from the record, or
    /// from before its last move when that is not completed: (base ply, path).
    fn best_path(&self, board: &Board, plies: usize) -> Option<(usize, Vec<Move>)> {
        let game = self.game.as_ref()?;
        if game.is_over() {
            return None;
        }
        let lifts = self
            .resync
            .as_ref()
            .map(|r| r.lifts.as_slice())
            .unwrap_or_default();
        // From the record, and, when its last move is not completed, from before
        // it (that move may have gone on while the line was away: a slide cut in
        // the middle is an amendment, not a ply more).
        let n = game.ply();
        let mut bases = vec![n];
        if n > 0 && !game.moves[n - 1].completed {
            bases.push(n - 1);
        }
        // The side whose time runs on the clock is the side to move (before the
        // press held over the gap, if any, which may have started it).
        let turn = self.clock_turn();
        let mut best: Option<(usize, Vec<Move>)> = None;
        let mut best_key = None;
        for base in bases {
            let from = &game.positions[base];
            let game::Inferred::Path(path) = game::infer_path(from, board, plies, game::INFER_BUDGET, lifts)
            else {
                continue;
            };
            let ends = if path.len() % 2 == 0 {
                from.turn()
            } else {
                !from.turn()
            };
            // The clock agrees, then fewer plies, then the record as it stands.
            let key = (turn.is_none_or(|c| c == ends), usize::MAX - path.len(), base == n);
            if best_key.is_none_or(|k| key > k) {
                best_key = Some(key);
                best = Some((base, path));
            }
        }
        best
    }

    /// Records a path found from ply `base` of the record; a press held over the
    /// gap then completes the last of its plies.
    fn commit_found(&mut self, base: usize, path: Vec<Move>, t: u64) {
        let n = self.game.as_ref().map_or(0, Game::ply);
        // Taken first: recording the plies closes the window that holds it.
        let press = self.resync.as_mut().and_then(|r| r.held_press.take());
        if base < n {
            // The first ply amends the move not completed.
            let mut rest = path.into_iter();
            if let Some(first) = rest.next() {
                self.tentative = Some(Tentative {
                    base,
                    mv: first,
                    kings_hold: false,
                    inferred: true,
                });
                self.commit(t);
                let later: Vec<Move> = rest.collect();
                if !later.is_empty() {
                    self.complete(n, t);
                    self.commit_inferred(later, t);
                }
            }
        } else {
            self.commit_inferred(path, t);
        }
        if let Some(side) = press {
            self.held_press(side, t);
        }
    }

    /// The side to move as the clock shows it (its running side), when the clock
    /// runs and its sides are known.
    fn clock_turn(&self) -> Option<Color> {
        let side = self.clock?.running_side()?;
        let white = self.white_side?;
        Some(if side == white { Color::White } else { Color::Black })
    }

    /// Records plies found across a gap: marked inferred, all but the last
    /// completed.
    fn commit_inferred(&mut self, path: Vec<Move>, t: u64) {
        let last = path.len().saturating_sub(1);
        for (i, mv) in path.into_iter().enumerate() {
            let base = self.game.as_ref().map_or(0, Game::ply);
            self.tentative = Some(Tentative {
                base,
                mv,
                kings_hold: false,
                inferred: true,
            });
            self.commit(t);
            if i < last {
                self.complete(base + 1, t);
            }
        }
    }

    fn emit(&mut self, t_us: u64, kind: EventKind) {
        // Events are in order: one decided late (a touch known only when its
        // flicker threshold passed) carries the time it is reported at.
        let t_us = t_us.max(self.last_emit);
        self.last_emit = t_us;
        self.out.push(Event {
            t: t_us as f64 / 1e6,
            kind,
        });
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

    /// A board change. `change` is (board square, piece, is a lift).
    fn changed(&mut self, t: u64, change: Option<(Square, Piece, bool)>) {
        if self.try_new_game(t, change.is_none()) {
            return;
        }
        let Some(game) = &self.game else { return };
        if game.is_over() {
            // After the end nothing is recorded; a board back at the final position
            // resolves what was reported (the irregular deadline reports a change).
            if game.current().board() == &self.real_board() {
                self.resolve(t);
            }
            return;
        }
        let orientation = game.orientation;
        if let Some((sq, piece, lift)) = change {
            let real = orientation.real(sq);
            if lift {
                // The opponent starting their turn makes the move the board shows.
                self.opponent_lift(real, piece, t);
                // A lift from a square the piece slid onto a moment ago continues
                // the same touch.
                let sliding = self.last_place.is_some_and(|(sq, p, at)| {
                    sq == real && p == piece && t.saturating_sub(at) < self.cfg.release_ms * 1000
                });
                if !sliding {
                    self.pending.push(PendingLift {
                        square: real,
                        piece,
                        at: t,
                    });
                }
            } else {
                self.last_place = Some((real, piece, t));
                self.touches.placed(real, piece);
                // The piece back where it was lifted within the flicker threshold:
                // sensor noise, not a touch.
                let flicker = self.cfg.flicker_ms * 1000;
                if let Some(i) = self
                    .pending
                    .iter()
                    .rposition(|p| p.square == real && p.piece == piece && t.saturating_sub(p.at) <= flicker)
                {
                    self.pending.remove(i);
                } else {
                    self.flush_touches(t);
                }
            }
        }
        self.evaluate(t);
    }

    /// Turns the lifts waiting out the flicker threshold into touches.
    fn flush_touches(&mut self, t: u64) {
        let board = self.real_board();
        for p in std::mem::take(&mut self.pending) {
            let returned = board.piece_at(p.square) == Some(p.piece) && t > p.at;
            self.touch(p, returned);
        }
    }

    fn touch(&mut self, p: PendingLift, returned: bool) {
        let Some(game) = &self.game else { return };
        // A touch belongs to the player having the move: once a move is made, that
        // is the opponent (an amendment later gives the mover's pieces back to the
        // mover); while the board shows a move not yet made, its mover's pieces are
        // still theirs.
        let side = match &self.tentative {
            Some(t) if game.positions[t.base].turn() == p.piece.color => p.piece.color,
            _ if self.amending(p.piece.color) => p.piece.color,
            _ => game.current().turn(),
        };
        let first = self.touches.push(Touch {
            side,
            square: p.square,
            piece: p.piece,
            returned,
        });
        self.emit(
            p.at,
            EventKind::Touch {
                side: side.into(),
                square: p.square.to_string(),
                piece: p.piece.char().to_string(),
                first,
                returned,
            },
        );
    }

    /// The board shows the last move, not yet completed, changed by its mover
    /// `color` into another legal move.
    fn amending(&self, color: Color) -> bool {
        let Some(game) = &self.game else { return false };
        let n = game.ply();
        if n == 0 || game.moves[n - 1].completed || game.positions[n - 1].turn() != color {
            return false;
        }
        let board = self.real_board();
        &board != game.current().board() && game.move_from(n - 1, self.real_hash(), &board).is_some()
    }

    /// The opponent of a move the board shows lifts a piece of their own: that move
    /// is made (the opponent starts their turn), and completed if there is no clock.
    fn opponent_lift(&mut self, square: Square, piece: Piece, t: u64) {
        let Some(game) = &self.game else { return };
        if let Some(tent) = self.tentative {
            let base = &game.positions[tent.base];
            let mover = base.turn();
            if piece.color != mover && !(tent.kings_hold && piece.role == Role::King) {
                if capture_target(base, square) {
                    self.held = Some(tent);
                } else {
                    self.commit(t);
                }
            }
        }
        let Some(game) = &self.game else { return };
        if let Some(last) = game.moves.last() {
            let mover = game.positions[game.ply() - 1].turn();
            // Without a clock the opponent's touch completes the move; with one,
            // a move that ended the game is completed by it too (the opponent
            // has no move to make: the game is over).
            let ends = self.pending_end.is_some_and(|(p, ..)| p == game.ply());
            if !last.completed && piece.color != mover && (!self.clock_seen || ends) {
                let ply = game.ply();
                self.complete(ply, t);
            }
        }
    }

    /// A start position on the board starts a game; so does, on a `dump` after a
    /// gap with no game under way, a game a few plies in.
    fn try_new_game(&mut self, t: u64, dump: bool) -> bool {
        if let Some((pos, mode)) = self.start_at.take() {
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
        // A mate or other forced end whose move was not completed stands.
        self.settle_end(t);
        if let Some(g) = &self.game {
            if !g.is_over() && g.ply() > 0 {
                self.end_game(t, "*", "abandoned");
            }
        }
        self.start_game(pos, mode, orientation, t);
        true
    }

    /// With no game under way, a dump after a gap that shows a standard game a few
    /// plies in (its start was lost on the line, or the daemon started late): the
    /// game starts from the start position and those plies are inferred.
    fn game_under_way(&mut self, t: u64) -> bool {
        if self.game.as_ref().is_some_and(|g| !g.is_over())
            || !self
                .resync
                .as_ref()
                .is_some_and(|r| r.cause == Cause::Gap && !r.gated)
        {
            return false;
        }
        let start = Chess::default();
        for orientation in [Orientation::Normal, Orientation::Rotated] {
            let board = orientation.real_board(self.sensors.board());
            let game::Inferred::Path(path) =
                game::infer_path(&start, &board, game::MAX_INFERRED_PLIES, game::INFER_BUDGET, &[])
            else {
                continue;
            };
            self.settle_end(t);
            self.start_game(start, CastlingMode::Standard, orientation, t);
            self.resync = Some(Resync::new(Cause::Gap, false));
            self.commit_inferred(path, t);
            return true;
        }
        false
    }

    /// The board shows a legal move of the game under way (knights back home can
    /// bring the start position back): that is a move, not a new game.
    fn continues_game(&self) -> bool {
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

    fn start_game(&mut self, pos: Chess, mode: CastlingMode, orientation: Orientation, t: u64) {
        self.games += 1;
        let g = Game::new(self.games, pos, mode, orientation);
        if let Some(prev) = self.game.take() {
            self.finished.push(prev);
        }
        self.emit(
            t,
            EventKind::GameStart {
                game: g.number,
                fen: g.start_fen.clone(),
                variant: g.variant(),
                orientation: orientation.name(),
            },
        );
        self.game = Some(g);
        self.pending.clear();
        self.touches = TouchLog::default();
        self.tentative = None;
        self.held = None;
        self.takeback = None;
        self.irregular = None;
        self.violations = [0, 0];
        self.clk_for = None;
        self.resync = None;
        self.unconfirmed_press = None;
        self.pending_end = None;
        self.flag_seen = None;
        self.flags_reported = [false; 2];
        self.clk.last_press = None;
        if let Some(g) = &mut self.game {
            g.time_control = self.clk.tc.as_ref().map(crate::clock::control::TimeControl::pgn);
        }
        self.clk.host = None;
        self.start_host(t);
    }

    fn end_game(&mut self, t: u64, result: &'static str, termination: &'static str) {
        self.pending_end = None;
        if let Some(g) = &mut self.game {
            if g.result.is_none() {
                g.result = Some((result, termination));
                self.tentative = None;
                self.held = None;
                self.resync = None;
                self.unconfirmed_press = None;
                self.emit(t, EventKind::GameEnd { result, termination });
                self.stop_host(t);
            }
        }
    }

    /// Matches the board against what the game allows.
    fn evaluate(&mut self, t: u64) {
        let board = self.real_board();
        if let Some(r) = &mut self.resync {
            r.search = Search::No;
        }
        let Some(game) = &self.game else { return };
        if let Some((result, _)) = kings_result(&board) {
            // A forced end whose move was not completed stands: the kings only say
            // the game is over.
            if self.pending_end.is_some() {
                self.settle_end(t);
                return;
            }
            // Never a move: drop a king step onto the centre that is not completed.
            self.tentative = None;
            let Some(g) = self.game.as_ref() else { return };
            if let Some(last) = g.moves.last() {
                if !last.completed && last.mv.role() == Role::King && CENTRE.contains(&last.mv.to()) {
                    let ply = g.ply() - 1;
                    self.take_back(ply, t);
                }
            }
            self.end_game(t, result, "result_kings");
            return;
        }
        let n = game.ply();
        let h = self.real_hash();
        // Across a gap, what the board shows was not seen being played.
        let inferred = self.resync.as_ref().is_some_and(|r| r.cause == Cause::Gap);
        self.takeback = None;
        if game.shows(n, h, &board) {
            self.tentative = None;
            self.held = None;
            self.resync = None;
            self.resolve(t);
            return;
        }
        if let Some(mv) = game.move_from(n, h, &board) {
            let kings_hold = mv.role() == Role::King && CENTRE.contains(&mv.to());
            self.show(Tentative {
                base: n,
                mv,
                kings_hold,
                inferred,
            });
            self.resolve(t);
            return;
        }
        if n > 0 && !game.moves[n - 1].completed {
            if let Some(mv) = game.move_from(n - 1, h, &board) {
                self.show(Tentative {
                    base: n - 1,
                    mv,
                    kings_hold: false,
                    inferred,
                });
                self.resolve(t);
                return;
            }
        }
        // An earlier position, or a legal move from one: a take-back.
        for k in (n.saturating_sub(8)..n).rev() {
            if game.shows(k, h, &board) {
                self.tentative = None;
                self.takeback = Some(k);
                return;
            }
            if let Some(mv) = game.move_from(k, h, &board) {
                self.show(Tentative {
                    base: k,
                    mv,
                    kings_hold: false,
                    inferred,
                });
                return;
            }
        }
        self.tentative = None;
        // The opponent lifted a piece the held move could have captured, and the
        // board goes on from that move: it was made after all.
        if let Some(h) = self.held {
            let mut after = game.positions[h.base].clone();
            after.play_unchecked(h.mv);
            // Something set down beyond the held move, on the way to a reply.
            let placed = diff_squares(after.board(), &board)
                .iter()
                .any(|sq| board.piece_at(*sq).is_some());
            if h.base == n
                && (game::move_to(&after, &board).is_some() || (placed && is_partial(&after, &board)))
            {
                self.tentative = Some(h);
                self.commit(t);
                self.evaluate(t);
                return;
            }
        }
        // The line may have missed plies: look for them once the board rests.
        if let Some(r) = &mut self.resync {
            if !r.gated {
                r.search = Search::Short;
            }
        }
    }

    /// The board shows a move not yet made: it waits for its release. A new move
    /// shown is counted (the daemon checks it against a dump).
    fn show(&mut self, tent: Tentative) {
        let same = self
            .tentative
            .is_some_and(|t| t.base == tent.base && t.mv == tent.mv);
        if !same {
            self.shown += 1;
        }
        self.tentative = Some(tent);
    }

    /// The board is explained again: `resolved`, when an irregularity was reported.
    fn resolve(&mut self, t: u64) {
        if let Some(irr) = self.irregular.take() {
            if irr.kind.is_some() {
                let fen = self.game.as_ref().map(Game::fen).unwrap_or_default();
                self.emit(t, EventKind::Resolved { fen });
            }
        }
    }

    fn needs_irregular_check(&self) -> bool {
        if self.tentative.is_some() || self.resync.as_ref().is_some_and(|r| r.gated) {
            return false;
        }
        let Some(game) = &self.game else { return false };
        let board = self.real_board();
        if game.current().board() == &board {
            return false;
        }
        match &self.irregular {
            Some(irr) if irr.board == board => false,
            // After the end, a change is reported once (until the board is back).
            Some(irr) if game.is_over() && irr.kind.is_some() => false,
            _ => !(game.is_over() && kings_result(&board).is_some()),
        }
    }

    fn deadline(&mut self, d: u64) {
        if self.host_flag_at().is_some_and(|at| at <= d) {
            self.host_flag(d);
            return;
        }
        if let Some(tent) = self.tentative {
            let wait = if tent.kings_hold {
                self.cfg.irregular_ms
            } else {
                self.cfg.release_ms
            };
            if self.last_change + wait * 1000 <= d {
                self.commit(d);
                return;
            }
        }
        if self
            .resync
            .as_ref()
            .and_then(|r| self.search_at(r))
            .is_some_and(|at| at <= d)
        {
            self.infer(d);
            return;
        }
        if self.last_change + self.cfg.irregular_ms * 1000 <= d {
            if let Some(k) = self.takeback.take() {
                self.take_back(k, d);
                self.resolve(d);
                return;
            }
            self.report_irregular(d);
        }
    }

    /// The board shows a move (or an amendment, or a take-back and a move): record it.
    fn commit(&mut self, t: u64) {
        let Some(tent) = self.tentative.take() else { return };
        self.held = None;
        self.flush_touches(t);
        let Some(game) = self.game.as_mut() else { return };
        let n = game.ply();
        if tent.base + 1 == n && !game.moves[n - 1].completed {
            if game.moves[n - 1].mv == tent.mv {
                return;
            }
            // Amendment of a move made but not completed.
            let was = game.moves[n - 1].clone();
            let mover = game.positions[n - 1].turn();
            game.truncate(n - 1);
            game.push(tent.mv);
            let Some(played) = game.moves.last_mut() else {
                return;
            };
            played.inferred = tent.inferred;
            let played = played.clone();
            let fen = game.fen();
            self.emit(
                t,
                EventKind::MoveAmended {
                    ply: n as u32,
                    was: was.san.clone(),
                    san: played.san.clone(),
                    uci: played.uci,
                    fen,
                    inferred: tent.inferred,
                },
            );
            let Some(base) = self.game.as_ref().map(|g| g.positions[n - 1].clone()) else {
                return;
            };
            let touched = self.touches.amend(mover);
            let article = touch::amendment_article(&base, &was.mv, &tent.mv).filter(|_| !tent.inferred);
            if let Some(article) = article {
                self.emit(
                    t,
                    EventKind::TouchMove {
                        article,
                        side: mover.into(),
                        touched,
                        played: played.san,
                    },
                );
            }
            self.after_move(t);
            return;
        }
        if tent.base < n {
            self.take_back(tent.base, t);
        }
        let Some(game) = self.game.as_mut() else { return };
        let n = game.ply();
        // The previous move (the opponent's) is completed by this one at the latest.
        if n > 0 && !game.moves[n - 1].completed {
            self.complete(n, t);
        }
        let Some(game) = self.game.as_mut() else { return };
        let mover = game.current().turn();
        game.push(tent.mv);
        let Some(played) = game.moves.last_mut() else {
            return;
        };
        played.inferred = tent.inferred;
        let played = played.clone();
        let fen = game.fen();
        let ply = game.ply() as u32;
        // Touches are judged only for a move seen being played.
        let flags = if tent.inferred {
            Vec::new()
        } else {
            let legal = self
                .game
                .as_ref()
                .map(|g| g.legal(g.ply() - 1))
                .unwrap_or_default();
            self.touches.flags(&legal, &tent.mv, mover)
        };
        for (article, touched) in flags {
            self.emit(
                t,
                EventKind::TouchMove {
                    article,
                    side: mover.into(),
                    touched,
                    played: played.san.clone(),
                },
            );
        }
        self.emit(
            t,
            EventKind::Move {
                ply,
                san: played.san,
                uci: played.uci,
                fen,
                side: mover.into(),
                inferred: tent.inferred,
            },
        );
        self.touches.next_turn(!mover);
        self.after_move(t);
    }

    /// After a move is recorded: a forced end waits for the move to be completed
    /// (until then the same player may still amend it); draws claimable are said.
    fn after_move(&mut self, t: u64) {
        // The board is where the record is: the line is in step again.
        let board = self.real_board();
        if self.game.as_ref().is_some_and(|g| g.current().board() == &board) {
            self.resync = None;
        }
        let Some(game) = self.game.as_mut() else { return };
        let ply = game.ply();
        self.pending_end = game.forced_end().map(|(r, term)| (ply, r, term));
        if let Some((_, result, termination)) = self.pending_end {
            if game.moves.last().is_some_and(|m| m.completed) {
                self.end_game(t, result, termination);
            }
            return;
        }
        let ply = game.ply();
        let fresh: Vec<&'static str> = game
            .claimable()
            .into_iter()
            .filter(|r| !game.claimed.contains(&(ply, *r)))
            .collect();
        game.claimed.extend(fresh.iter().map(|r| (ply, *r)));
        for reason in fresh {
            self.emit(t, EventKind::DrawClaimable { reason });
        }
    }

    fn take_back(&mut self, to_ply: usize, t: u64) {
        let Some(game) = self.game.as_mut() else { return };
        if to_ply >= game.ply() {
            return;
        }
        game.truncate(to_ply);
        if self.pending_end.is_some_and(|(p, ..)| p > to_ply) {
            self.pending_end = None;
        }
        let fen = game.fen();
        let turn = game.current().turn();
        self.emit(
            t,
            EventKind::Takeback {
                to_ply: to_ply as u32,
                fen,
            },
        );
        self.touches.retract(turn);
    }

    fn complete(&mut self, ply: usize, t: u64) {
        let Some(game) = self.game.as_mut() else { return };
        if ply == 0 || ply > game.ply() || game.moves[ply - 1].completed {
            return;
        }
        game.moves[ply - 1].completed = true;
        let side = game.positions[ply - 1].turn();
        self.emit(
            t,
            EventKind::MoveCompleted {
                ply: ply as u32,
                side: side.into(),
            },
        );
        if self.pending_end.is_some_and(|(p, ..)| p == ply) {
            self.settle_end(t);
        }
    }

    fn press(&mut self, side: ClockSide, t: u64) {
        self.clock_seen = true;
        let Some(game) = &self.game else { return };
        if game.is_over() {
            return;
        }
        // Who pressed: the mover of a move the board shows or that is not completed.
        let presser = match (&self.tentative, game.moves.last()) {
            (Some(tent), _) => Some(game.positions[tent.base].turn()),
            (None, Some(last)) if !last.completed => Some(game.positions[game.ply() - 1].turn()),
            _ => None,
        };
        if let (Some(color), None) = (presser, self.white_side) {
            self.white_side = Some(if color.is_white() { side } else { side.other() });
        }
        let color = presser.or_else(|| {
            self.white_side
                .map(|w| if w == side { Color::White } else { Color::Black })
        });
        // Before the first move, a press with the board changed is the side to move's.
        let color = match color {
            None if game.ply() == 0 && game.current().board() != &self.real_board() => {
                let us = game.current().turn();
                self.white_side = Some(if us.is_white() { side } else { side.other() });
                Some(us)
            }
            c => c,
        };
        let emt = self.clock_pressed(side, t);
        if self.tentative.is_some() {
            self.commit(t);
        }
        let Some(game) = &self.game else { return };
        let n = game.ply();
        if n > 0 && !game.moves[n - 1].completed && Some(game.positions[n - 1].turn()) == color {
            self.complete(n, t);
            self.clock_completed(n, emt, t);
            return;
        }
        // A press with no move made: a completed violation (7.5), except before the
        // first move with the board untouched, when pressing starts the game's clock.
        if n == 0 && game.current().board() == &self.real_board() {
            return;
        }
        let Some(color) = color else { return };
        if color != game.current().turn() {
            return;
        }
        // While the board may be plies ahead of the record, a press is no
        // violation: what was played in the gap is not known.
        if self.resync.is_some() {
            return;
        }
        self.flush_touches(t);
        let (kind, squares) = self
            .classify()
            .unwrap_or((IrregularKind::ClockWithoutMove, Vec::new()));
        // On a line that lost something lately, the press and the board must first
        // be confirmed (the daemon asks for a clock report and a dump): noise is
        // no violation. A lever back where it stood before one contradicting report
        // is that report's bit put right, not a press.
        if self.noisy_until.is_some_and(|until| t < until) {
            if self.lever_before == Some(side == ClockSide::Left) {
                return;
            }
            self.unconfirmed_press = Some(Unconfirmed {
                color,
                right_lever_high: side == ClockSide::Left,
                reports: 0,
                dumped: false,
                board: self.real_board(),
                kind,
                squares,
            });
            return;
        }
        self.report_completed(t, color, self.real_board(), kind, squares);
    }

    /// A press waiting for confirmation that has it: the completed violation, as
    /// the board showed it at the press.
    fn judge_confirmed(&mut self, t: u64) {
        if !self
            .unconfirmed_press
            .as_ref()
            .is_some_and(|u| u.dumped && u.reports >= 2)
        {
            return;
        }
        let Some(u) = self.unconfirmed_press.take() else {
            return;
        };
        if self
            .game
            .as_ref()
            .is_none_or(|g| g.is_over() || g.current().turn() != u.color)
        {
            return;
        }
        self.report_completed(t, u.color, u.board, u.kind, u.squares);
    }

    /// Classifies the board against the expected position.
    fn classify(&self) -> Option<(IrregularKind, Vec<String>)> {
        let game = self.game.as_ref()?;
        let board = self.real_board();
        let pos = game.current();
        if pos.board() == &board {
            return None;
        }
        let us = pos.turn();
        let diff = diff_squares(pos.board(), &board);
        // Pawn released on the last rank: a promotion under way.
        let promo = diff.iter().any(|sq| {
            board.piece_at(*sq) == Some(us.pawn())
                && sq.rank() == shakmaty::Rank::new(if us.is_white() { 7 } else { 0 })
        });
        if promo {
            return Some((
                IrregularKind::PromotionIncomplete,
                diff.iter().map(Square::to_string).collect(),
            ));
        }
        if is_partial(pos, &board) {
            return None;
        }
        if let Some((from, to)) =
            one_piece_moved(pos.board(), &board, us).or_else(|| castling_attempt(pos.board(), &board, us))
        {
            return Some((IrregularKind::IllegalMove, vec![from.to_string(), to.to_string()]));
        }
        Some((
            IrregularKind::Displaced,
            diff.iter().map(Square::to_string).collect(),
        ))
    }

    fn report_irregular(&mut self, t: u64) {
        let board = self.real_board();
        if self.irregular.as_ref().is_some_and(|i| i.board == board) {
            return;
        }
        let Some(game) = &self.game else { return };
        let side: Side = game.current().turn().into();
        let count = self.violations[side_index(side)];
        if game.is_over() {
            // Nothing is recorded after the end, but a board that changes is said.
            let squares = diff_squares(game.current().board(), &board);
            let squares = squares.iter().map(Square::to_string).collect();
            self.raise(t, board, IrregularKind::AfterEnd, side, squares, count, None);
            return;
        }
        // Pieces only lifted (in the air) or a move under way are not irregular;
        // neither is an earlier position (handled as a take-back).
        let Some((kind, squares)) = self.classify() else {
            self.irregular = Some(Irregular { board, kind: None });
            return;
        };
        // Promotion under way without a press is not yet a violation.
        if kind == IrregularKind::PromotionIncomplete {
            self.irregular = Some(Irregular { board, kind: None });
            return;
        }
        // Across a gap, a board no legal sequence reaches: the record lost track of
        // the game (nothing is invented; a known position or the arbiter resumes it).
        let kind = match &self.resync {
            Some(r) if r.cause == Cause::Gap && kind != IrregularKind::IllegalMove => {
                IrregularKind::LostTrack
            }
            _ => kind,
        };
        self.raise(t, board, kind, side, squares, count, None);
    }

    /// Reports an irregularity and remembers the board it stands on. A completed
    /// violation (7.5) is the one that carries a penalty.
    #[allow(clippy::too_many_arguments)]
    fn raise(
        &mut self,
        t: u64,
        board: Board,
        kind: IrregularKind,
        side: Side,
        squares: Vec<String>,
        count: u32,
        penalty: Option<String>,
    ) {
        let seen = (kind == IrregularKind::LostTrack).then(|| board.board_fen().to_string());
        self.irregular = Some(Irregular {
            board,
            kind: Some(kind),
        });
        self.emit(
            t,
            EventKind::Irregular {
                kind,
                side,
                squares,
                completed: penalty.is_some(),
                count,
                penalty,
                board: seen,
            },
        );
    }

    fn report_completed(
        &mut self,
        t: u64,
        color: Color,
        board: Board,
        kind: IrregularKind,
        squares: Vec<String>,
    ) {
        let side: Side = color.into();
        self.violations[side_index(side)] += 1;
        let count = self.violations[side_index(side)];
        let mut penalty = self.cfg.profile.penalty(side, count);
        if count == 1 && self.penalty_to_clock(color, t) {
            penalty.push_str("; added to the clock");
        }
        self.raise(t, board, kind, side, squares, count, Some(penalty));
    }
}

fn side_index(s: Side) -> usize {
    match s {
        Side::White => 0,
        Side::Black => 1,
    }
}

/// The start position the board shows, if any: standard or Chess960, either way round.
fn start_position(sensors: &Board) -> Option<(Chess, CastlingMode, Orientation)> {
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

fn chess960_start(board: &Board) -> Option<Chess> {
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
fn kings_result(board: &Board) -> Option<(&'static str, ())> {
    let kings = board.kings();
    if kings.count() != 2 || !kings.into_iter().all(|sq| CENTRE.contains(&sq)) {
        return None;
    }
    let light = kings.into_iter().filter(|sq| sq.is_light()).count();
    Some((
        match light {
            2 => "1-0",
            0 => "0-1",
            _ => "1/2-1/2",
        },
        (),
    ))
}

fn diff_squares(a: &Board, b: &Board) -> Vec<Square> {
    Square::ALL
        .into_iter()
        .filter(|sq| a.piece_at(*sq) != b.piece_at(*sq))
        .collect()
}

/// A board on the way from `pos` to a legal move's result: only the move's squares
/// differ, each showing what it had, what it will have, nothing, or the moving
/// piece; or pieces only lifted from the expected position.
fn is_partial(pos: &Chess, board: &Board) -> bool {
    let expected = pos.board();
    let diff = diff_squares(expected, board);
    if diff.iter().all(|sq| board.piece_at(*sq).is_none()) {
        // Pieces in the air: each must be one a legal move lifts (its own piece, a
        // castling rook, or the piece it captures); a piece off the board that no
        // legal move touches was knocked off or taken away.
        let legal = pos.legal_moves();
        return diff.iter().all(|sq| {
            legal.iter().any(|m| match *m {
                Move::Castle { king, rook } => king == *sq || rook == *sq,
                Move::EnPassant { from, to } => {
                    from == *sq || Square::from_coords(to.file(), from.rank()) == *sq
                }
                _ => m.from() == Some(*sq) || (m.is_capture() && m.to() == *sq),
            })
        });
    }
    pos.legal_moves().into_iter().any(|m| {
        let mut after = pos.clone();
        after.play_unchecked(m);
        let result = after.board();
        let mut touched = Bitboard::EMPTY;
        for sq in Square::ALL {
            if expected.piece_at(sq) != result.piece_at(sq) {
                touched.add(sq);
            }
        }
        let mover = m.from().and_then(|f| expected.piece_at(f));
        diff.iter().all(|sq| {
            touched.contains(*sq) && {
                let now = board.piece_at(*sq);
                now.is_none() || now == expected.piece_at(*sq) || now == result.piece_at(*sq) || now == mover
            }
        })
    })
}

/// A piece on `square` that a legal move from `pos` captures.
fn capture_target(pos: &Chess, square: Square) -> bool {
    pos.legal_moves().iter().any(|m| match *m {
        Move::EnPassant { from, to } => Square::from_coords(to.file(), from.rank()) == square,
        _ => m.is_capture() && m.to() == square,
    })
}

/// The board shows `us` castling (king two or more squares along the back rank and
/// a rook of `us` jumped over it) from `expected`, whether legal or not.
fn castling_attempt(expected: &Board, board: &Board, us: Color) -> Option<(Square, Square)> {
    let diff = diff_squares(expected, board);
    if diff.len() != 4 {
        return None;
    }
    let king = us.king();
    let rook = us.rook();
    let from = *diff
        .iter()
        .find(|sq| expected.piece_at(**sq) == Some(king) && board.piece_at(**sq).is_none())?;
    let to = *diff.iter().find(|sq| board.piece_at(**sq) == Some(king))?;
    let rook_from = *diff
        .iter()
        .find(|sq| expected.piece_at(**sq) == Some(rook) && board.piece_at(**sq).is_none())?;
    let rook_to = *diff.iter().find(|sq| board.piece_at(**sq) == Some(rook))?;
    let same_rank = [to, rook_from, rook_to].iter().all(|sq| sq.rank() == from.rank());
    // The rook ends between the king's squares (or on the king's first square).
    let between = from.min(to) <= rook_to && rook_to <= from.max(to);
    (same_rank && between && from != to).then_some((from, to))
}

/// Exactly one piece of `us` left its square and stands on another (maybe on an
/// opponent's piece): an attempted move.
fn one_piece_moved(expected: &Board, board: &Board, us: Color) -> Option<(Square, Square)> {
    let diff = diff_squares(expected, board);
    let vacated: Vec<Square> = diff
        .iter()
        .copied()
        .filter(|sq| board.piece_at(*sq).is_none())
        .collect();
    let arrived: Vec<Square> = diff
        .iter()
        .copied()
        .filter(|sq| board.piece_at(*sq).is_some())
        .collect();
    match (vacated.as_slice(), arrived.as_slice()) {
        ([from], [to]) => {
            let p = expected.piece_at(*from)?;
            (p.color == us
                && board.piece_at(*to) == Some(p)
                && expected.piece_at(*to).is_none_or(|q| q.color != us))
            .then_some((*from, *to))
        }
        _ => None,
    }
}
