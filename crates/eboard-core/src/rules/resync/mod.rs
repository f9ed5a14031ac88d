//! Line faults in the rules core: gaps (a reconnect, skipped or corrupted bytes,
//! a `gap` record), dumps that settle the sensor board, a board read by dumps
//! only, and the plies the line may have missed, inferred honestly or reported
//! as `lost_track` (`docs/RULES.md`, "What it never does"; issue 9).
//!
//! This file holds the state of a stretch of doubt and handles gaps; `dumps`
//! reads whole-board reports against the record; `missed` searches for the
//! missed plies and records them.

use super::irregular::NOISY_FOR_US;
use super::{Core, Game, game};
use crate::protocol::{ClockSide, ClockStatus};
use shakmaty::{Board, Chess, Color, Move, Piece, Position, Square};

mod dumps;
mod missed;

/// Why the line may have missed changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cause {
    /// A gap (reconnect, skipped bytes, a `gap` record) or a dump the field updates
    /// did not lead to: every move found is inferred.
    Gap,
    /// A board read by dumps only (polled): several plies may fall between two.
    Poll,
    /// The record ends with inferred moves and the board has gone on in a way
    /// they cannot lead to: they may have been a wrong guess, and are looked at
    /// again (moves seen meanwhile are seen, not inferred).
    Tail,
}

/// Which search for missed plies waits for the board to rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Search {
    No,
    /// Up to [`SHORT_PLIES`], once the board has stood for the release threshold.
    Short,
    /// Up to [`game::MAX_INFERRED_PLIES`], once it has stood for the irregularity
    /// threshold: more plies can explain more, so a piece held in the hand must not
    /// be taken for one captured.
    Long,
    /// The board is a move under way after fewer plies than any that end on it
    /// exactly: a piece may be in the hand. Searched again once the board has
    /// stood for twice the irregularity threshold, without that explanation (a
    /// piece is not held that long: it is off the board).
    Rested,
}

/// The ply before the inferred moves the record ends with (at most
/// [`game::MAX_INFERRED_PLIES`] of them); the record's length when its last move
/// was seen.
pub(super) fn inferred_tail(game: &Game) -> usize {
    let n = game.ply();
    let inferred = game
        .moves
        .iter()
        .rev()
        .take(game::MAX_INFERRED_PLIES)
        .take_while(|m| m.inferred)
        .count();
    n - inferred
}

/// What [`Core::best_path`] found.
pub(super) enum Found {
    /// A path from this ply of the record.
    Path(usize, Vec<Move>),
    /// The board is a move under way after fewer plies than any path needs.
    UnderWay,
    /// The board is an illegal placement (a piece of the side to move set on a
    /// square no legal move of it reaches) after this path from the record as
    /// it stands, with fewer moves in all, the placement counted as one, than
    /// any path that ends on it exactly. The dump cannot tell that from a
    /// piece that moved twice while the line was away: nothing is recorded,
    /// and the placement is reported (an illegal move), never explained by
    /// plies invented to make it legal (issue 62).
    Displaced(Vec<Move>),
    /// The board is a position with one piece off it (knocked over, or put
    /// aside: lifted by no move), after this path from this ply of the record,
    /// with fewer moves in all, the piece off counted as one, than any path
    /// that ends on it exactly or any move under way. Those plies are
    /// recorded, and the piece off is the irregularity the board shows; a
    /// longer path would explain it by a capture and the capturer's way home
    /// that the line never showed (the event campaign's seed 772).
    Lying(usize, Vec<Move>),
    Nothing,
}

/// A board that is plies the line missed and a piece set where no move of
/// it goes ([`Found::Displaced`]), reported as that illegal move.
#[derive(Debug, Clone)]
pub(super) struct Slip {
    /// The board (real squares).
    pub(super) board: Board,
    /// Whose piece: the side to move after the plies.
    pub(super) side: Color,
    pub(super) from: Square,
    pub(super) to: Square,
}

/// The plies bridged as soon as the board rests.
pub(super) const SHORT_PLIES: usize = 2;

/// The most boards `Resync::seen_boards` keeps (the first ones, and the last).
pub(super) const SEEN_BOARDS: usize = 8;

/// A stretch during which the board may be several plies ahead of the record.
/// The rules core's state of the line: what a gap, a line fault or a board
/// read by dumps only left open, and how it is being settled.
#[derive(Debug, Default)]
pub(super) struct Line {
    /// Set while the board may be plies ahead of the record (`Resync`).
    pub(super) resync: Option<Resync>,
    /// The game's plies have been reported `ambiguous` (from a ply on): the
    /// report stands for the rest of the game (nothing on a board read by
    /// dumps only, with no clock, settles whose turn it is), so it is made once.
    pub(super) open_said: bool,
    /// On a board read by dumps only: the other hypotheses for the plies just
    /// found (the ply each starts from, its plies, its position: the same
    /// board with the other side to move, or with a piece in the hand).
    /// Reported `ambiguous` when the next dump that differs can follow from
    /// one too, taken up when only they can, dropped when none can.
    pub(super) rival: Vec<(usize, Vec<Move>, Chess)>,
    /// A field update has arrived: the board sends updates (it is not read by
    /// dumps only), so a dump that disagrees with them means the line lost
    /// something.
    pub(super) updates_seen: bool,
    /// Line faults were seen until this time (plus a minute): a completed violation
    /// is then judged only once a dump has confirmed the board.
    pub(super) noisy_until: Option<u64>,
    /// A dump taken after a gap or a line fault waits for a second dump that
    /// agrees with it (one dump may itself have been corrupted on the line).
    pub(super) confirm_dump: bool,
}

impl Line {
    /// A new game: what the line left open of the game before is settled.
    pub(super) fn new_game(&mut self) {
        self.resync = None;
        self.open_said = false;
        self.rival.clear();
    }
}

#[derive(Debug, Clone)]
pub(super) struct Resync {
    pub(super) cause: Cause,
    /// Waiting for the first dump after a gap: the sensor board is not known, so
    /// field updates are not judged, and presses and clock reports are held.
    pub(super) gated: bool,
    pub(super) held_press: Option<ClockSide>,
    pub(super) held_clock: Option<ClockStatus>,
    /// A press by the side to move (and the time its move took) while the board
    /// was unexplained: it completes the last ply found, when that is its side's.
    pub(super) pressed: Option<(Color, Option<u64>)>,
    /// The board is unexplained: the plies that reach it are looked for once it
    /// has stood still long enough (see [`Core::search_at`]).
    pub(super) search: Search,
    /// Squares pieces were seen lifted from meanwhile (real squares, in order):
    /// evidence of the order of the plies when several orders reach the board.
    pub(super) lifts: Vec<Square>,
    /// Pieces seen put down meanwhile (real squares, the first 64): evidence of a
    /// piece's trip back to its square whose other bytes the line lost.
    pub(super) puts: Vec<(Square, Piece)>,
    /// Lifts and placements seen since the last dump: with a piece seen placed and
    /// none seen lifted and not placed again, the board is not a snapshot with a
    /// piece in the hand.
    pub(super) lifted: u16,
    pub(super) placed: u16,
    /// The board the dump after the gap showed (real squares): plies found across
    /// the gap end there; what was seen after it is judged as seen.
    /// The record's ply when it was taken: once the record has moved on, the
    /// plies missed are behind it and the dump is no longer looked at.
    pub(super) anchor: Option<(Board, usize)>,
    /// How many of `lifts` and `puts` the line had shown when the anchor's dump
    /// came: the plies across the gap end on the dump, so only what was seen
    /// before it is evidence of them (what came after is the next plies').
    pub(super) anchor_seen: (usize, usize),
    /// The record's ply when the dump after the gap came (its board is the
    /// first of `seen_boards`); kept when `anchor` is taken.
    pub(super) dump_ply: Option<usize>,
    /// The boards the line was known to show whole since it was last in step
    /// (real squares): the dump's after the gap (or the position the inferred
    /// moves a `Tail` stretch looks at again ended on), then each later dump's
    /// that agreed with the updates (at most `SEEN_BOARDS`: the first ones and
    /// the last). Plies played from any of them that the line then showed are
    /// seen, not inferred (the line is in step since the first). A dump that
    /// agrees adds its board and replaces none: one that catches a ply the line
    /// is showing (under way, or made before the search for the plies missed
    /// has run) must not make that ply inferred (issue 47). On a board read by
    /// dumps only, the last dump's alone.
    pub(super) seen_boards: Vec<Board>,
    /// The last board found to be plies and a slip, and the slip.
    pub(super) slip: Option<Slip>,
    /// The record's length when the line went away: the moves before it that
    /// are not inferred were seen being made, and no inference replaces them
    /// (it may only add plies after them).
    pub(super) facts: usize,
    /// A clock report has been taken since the line went away: before one,
    /// the clock's running side is the one from before the gap, and says
    /// nothing of whose turn it is after the plies the line missed (their
    /// presses went with them).
    pub(super) clock_fresh: bool,
    /// The ply of a move made by its release threshold passing while the line
    /// was away (placed just before it went: a board stopped, killed or cut
    /// mid-slide; the event campaign's seed 521, 1. e4's pawn set down on e3
    /// and the daemon stopped 3 ms later, e3 recorded at the restart and 1...
    /// e6 2. e4 e5 invented to go on from it). It is no fact (it came after
    /// `facts`), and while it is the record's last, the plies missed are
    /// looked for from before it too, even once it is completed (the
    /// opponent's touch after the gap completes it, from a board the line
    /// did not show).
    pub(super) unheard_last: Option<usize>,
}

impl Resync {
    pub(super) fn new(cause: Cause, gated: bool, facts: usize) -> Resync {
        Resync {
            cause,
            gated,
            held_press: None,
            held_clock: None,
            pressed: None,
            search: Search::No,
            lifts: Vec::new(),
            puts: Vec::new(),
            lifted: 0,
            placed: 0,
            anchor: None,
            anchor_seen: (0, 0),
            dump_ply: None,
            seen_boards: Vec::new(),
            slip: None,
            facts,
            clock_fresh: false,
            unheard_last: None,
        }
    }
}

impl Core {
    /// The line may have lost changes here (a reconnect, skipped or corrupted
    /// bytes, a `gap` record). Until the next dump, field updates only move the
    /// sensor board (nothing is judged on it), and presses and clock reports are
    /// held; the dump is then matched against the positions up to
    /// [`game::MAX_INFERRED_PLIES`] plies ahead, and the held press only completes
    /// a move. Calling it again before the dump changes nothing.
    pub fn gap(&mut self, t_us: u64) {
        self.advance(t_us);
        self.hands.pending.clear();
        self.hands.last_place = None;
        self.clk.unconfirmed_press = None;
        self.clk.resync_host = true;
        self.clock_before_gap();
        self.clock_line_lost();
        self.line_away();
        let r = self
            .line
            .resync
            .get_or_insert_with(|| Resync::new(Cause::Gap, true, 0));
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
        self.line.noisy_until = Some(t_us + NOISY_FOR_US);
        self.line.confirm_dump = true;
        // With no game yet, one may be started meanwhile and its start lost: the
        // next dumps are looked at for a game a few plies in.
        self.line_away();
    }

    /// The line may have lost changes from here on: a stretch of `Cause::Gap`
    /// (kept if one is open), whose moves made so far are facts; but for a
    /// last move the board shows taken back already (its position before it
    /// on the board, the take-back not yet decided: the event campaign's seed
    /// 779, 4. Ng5 made, released and taken back 0.5 s before a kill, then
    /// 4. Nxd4 e6 played while the daemon was down).
    fn line_away(&mut self) {
        let n = self.game.as_ref().map_or(0, Game::ply);
        let taken_back = n > 0
            && self
                .game
                .as_ref()
                .is_some_and(|g| *g.positions[n - 1].board() == self.real_board());
        let facts = if taken_back { n - 1 } else { n };
        let r = self
            .line
            .resync
            .get_or_insert_with(|| Resync::new(Cause::Gap, false, facts));
        r.facts = if r.cause == Cause::Gap {
            r.facts.min(facts)
        } else {
            facts
        };
        r.cause = Cause::Gap;
        r.seen_boards.clear();
        r.clock_fresh = false;
    }

    /// Whether the record's move at index `i` was seen being made before the
    /// line went away (see [`Resync::facts`]).
    pub(super) fn fact(&self, i: usize) -> bool {
        let Some(g) = &self.game else { return false };
        self.line
            .resync
            .as_ref()
            .is_some_and(|r| r.cause == Cause::Gap && i < r.facts)
            && g.moves.get(i).is_some_and(|m| !m.inferred)
    }

    /// Whether a fresh board dump would help now: after a gap, while a press waits
    /// for the board to be confirmed, while a flag fall waits for a second report
    /// (a clock report then), and while the board is irregular or unexplained
    /// on a line that may have lost something. The daemon asks the board for one
    /// when this turns true, and every few seconds while it stays so.
    pub fn wants_dump(&self) -> bool {
        if self.line.resync.as_ref().is_some_and(|r| r.gated)
            || self.clk.unconfirmed_press.as_ref().is_some_and(|u| !u.dumped)
        {
            return true;
        }
        if self.line.confirm_dump || self.irregular.as_ref().is_some_and(|i| i.kind.is_some()) {
            return true;
        }
        self.line.resync.is_some() && self.under_way.tentative.is_none() && self.unexplained()
    }

    /// Whether the last dump awaits a second that agrees with it (or the first
    /// after a gap is still awaited): worth asking for at once, not only every few
    /// seconds.
    pub fn confirming(&self) -> bool {
        self.line.confirm_dump || self.line.resync.as_ref().is_some_and(|r| r.gated)
    }

    /// When plies may be inferred for the board as it stands: up to 2 once it has
    /// stood for the release threshold, up to 6 once it has stood for the
    /// irregularity threshold (a piece held in the hand must not be explained as
    /// one captured).
    pub(super) fn search_at(&self, r: &Resync) -> Option<u64> {
        let at_rest = r.placed > 0 && r.lifted <= r.placed;
        let wait = match r.search {
            Search::No => return None,
            Search::Short => self.cfg.release_ms,
            Search::Long if at_rest => self.cfg.release_ms,
            Search::Long => self.cfg.irregular_ms,
            Search::Rested => self.cfg.irregular_ms.saturating_mul(2),
        };
        Some(self.last_change.saturating_add(wait.saturating_mul(1000)))
    }

    /// The board differs from the expected position with no move under way.
    pub(super) fn unexplained(&self) -> bool {
        self.game
            .as_ref()
            .is_some_and(|g| !g.is_over() && g.current().board() != &self.real_board())
    }

    /// The line is in step again. A press the mover made while the board was
    /// unexplained (kept, not judged) completes the move the board now shows or
    /// the record ends with: it was made before the press, whose bytes the line
    /// carried while those of the move were lost.
    pub(super) fn leave_resync(&mut self, t: u64) {
        let Some((color, emt)) = self.line.resync.take().and_then(|r| r.pressed) else {
            return;
        };
        let shown_by_presser = match (&self.under_way.tentative, &self.game) {
            (Some(tent), Some(g)) => g.positions[tent.base].turn() == color,
            _ => false,
        };
        if shown_by_presser {
            self.commit(t);
        }
        self.complete_pressed(color, emt, t);
    }

    /// A press held over a gap: it completes the move its presser made, and is
    /// judged for nothing else (what happened in the gap is not known).
    pub(super) fn held_press(&mut self, side: ClockSide, t: u64) {
        self.clk.seen = true;
        if self.under_way.tentative.is_some() {
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
        let Some(white) = self.clk.white() else { return };
        let presser = if white == side { Color::White } else { Color::Black };
        let emt = self.clock_pressed(side, t);
        if presser == mover {
            self.complete(n, t);
            self.clock_completed(n, emt, t);
        }
    }
}
