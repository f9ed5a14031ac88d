//! Presses in the rules core: the host's clock switched, a completed move's
//! `%clk` and `%emt`, the host's flag (drive mode), and what a press decides
//! about the move it completes.

use super::{color_of, ix};
use crate::clock::host::HostClock;
use crate::protocol::ClockSide;
use crate::rules::irregular::Unconfirmed;
use crate::rules::{Core, IrregularKind};
use shakmaty::{Color, Position};

impl Core {
    /// A press (the lever changed side): the host's clock switches, and the time
    /// since the last press is the move's time if the press completes one.
    pub(in crate::rules) fn clock_pressed(&mut self, side: ClockSide, t: u64) -> Option<u64> {
        let emt = self.clk.last_press.replace(t).map(|p| t.saturating_sub(p) / 1000);
        // A finished game's clock stays stopped where the end left it: the
        // press that completes a mate after it starts no one's time (the
        // event campaign's seed 323: White's clock, started by Black's press
        // after 2... Qh4#, ran on the host, was set on the clock, and the
        // game's `WhiteClock` lost 14 s).
        let over = self.game.as_ref().is_some_and(|g| g.is_over());
        if self.clk.host.is_some() && !over {
            // Before the first move, a press starts the clock of the side to move:
            // the presser sits on the other side.
            if let Some(g) = self.game.as_ref().filter(|g| g.ply() == 0) {
                self.clk.learn_white(side.other(), g.current().turn());
            }
            if let (Some(white), Some(h)) = (self.clk.white(), self.clk.host.as_mut()) {
                let runs = if side.other() == white { 0 } else { 1 };
                h.switch(Some(runs), t);
            }
        }
        emt
    }

    /// Ply `ply` was completed by a press at `t` (`emt`: the time it took): its
    /// `%clk` and `%emt`; in drive mode the mover's bonus and next period, and
    /// the clock set from the host's clock.
    pub(in crate::rules) fn clock_completed(&mut self, ply: usize, emt: Option<u64>, t: u64) {
        let Some(game) = self.game.as_mut() else { return };
        if ply == 0 || ply > game.ply() {
            return;
        }
        game.moves[ply - 1].emt_ms = emt;
        let mover = game.positions[ply - 1].turn();
        let first = game.positions[0].turn();
        let moves = if first == mover { ply.div_ceil(2) } else { ply / 2 } as u32;
        let over = game.is_over();
        let Some(h) = &mut self.clk.host else {
            // The next report gives the mover's time.
            self.clk.for_ply = Some(ply);
            return;
        };
        if over {
            // The press after a mate: the game ended when the move was made,
            // and its time is the end's (`clock_of_last_move`). No bonus, and
            // no set: the clock keeps the end's times (the event campaign's
            // seeds 401 and 416: the clock showed Black's 30 s bonus after
            // 2... Qh4#, the game's tags the time at the mate).
            self.clk.for_ply = None;
            return;
        }
        h.completed(ix(mover), moves);
        game.moves[ply - 1].clk_ms = Some(h.left_ms(ix(mover), t));
        game.moves[ply - 1].emt_ms = Some(h.used_ms(ix(mover)));
        self.clk.for_ply = None;
        self.send_set(t);
    }

    /// The last move ends the game when it is made (a mate, a stalemate): no
    /// press completes it, so its `%clk` is the mover's time as the game ends.
    /// When the host drives the clock, its time now (no bonus: the game is
    /// over); otherwise the next clock report's, which a press that stops the
    /// clock after the mate makes at once.
    pub(in crate::rules) fn clock_of_last_move(&mut self, t: u64) {
        let Some(game) = self.game.as_mut() else { return };
        let ply = game.ply();
        if ply == 0 || game.moves[ply - 1].completed || game.moves[ply - 1].clk_ms.is_some() {
            return;
        }
        let mover = game.positions[ply - 1].turn();
        match &self.clk.host {
            Some(h) if h.running() == Some(ix(mover)) => {
                game.moves[ply - 1].clk_ms = Some(h.left_ms(ix(mover), t));
                game.moves[ply - 1].emt_ms = self.clk.last_press.map(|p| t.saturating_sub(p) / 1000);
            }
            Some(_) => {}
            None if self.clk.seen || self.clk.taken.is_some() => self.clk.for_ply = Some(ply),
            None => {}
        }
    }

    /// When the host's clock sees the running side's time exhausted (drive mode).
    pub(in crate::rules) fn host_flag_at(&self) -> Option<u64> {
        let h = self.clk.host.as_ref()?;
        let game = self.game.as_ref()?;
        if game.is_over() {
            return None;
        }
        let (side, at) = h.flag_due()?;
        if self.clk.flags_reported[side] || (self.clk.finishing && at > self.clk.last_input) {
            return None;
        }
        Some(at)
    }

    /// The host's clock: a flag has fallen at `t`.
    pub(in crate::rules) fn host_flag(&mut self, t: u64) {
        let Some((side, _)) = self.clk.host.as_ref().and_then(HostClock::flag_due) else {
            return;
        };
        self.flag_fell(color_of(side), t);
    }

    /// A press on `side` at `t`; `report_suspect`: the clock report it came in
    /// contradicts the reports before it (a report whose fields a dropped byte
    /// shifted), so a violation it would complete must first be confirmed.
    pub(in crate::rules) fn press(&mut self, side: ClockSide, t: u64, report_suspect: bool) {
        self.clk.seen = true;
        let Some(game) = &self.game else { return };
        if game.is_over() {
            // The mover of a mate (or another forced end) stops the clock: the
            // press completes that move; nothing else is judged after the end.
            let mover = game.ply().checked_sub(1).map(|p| game.positions[p].turn());
            let white = self.clk.white();
            if mover.is_some_and(|m| white.is_none_or(|w| (w == side) == m.is_white())) {
                let emt = self.clk.last_press.map(|p| t.saturating_sub(p) / 1000);
                self.complete_after_end(emt, t);
            }
            return;
        }
        // A king step onto the centre held since the other king was lifted (it
        // might still have become a result by kings): its mover's press makes it.
        if self.under_way.tentative.is_none() {
            if let Some(h) = self.under_way.held.filter(|h| h.base == game.ply()) {
                let mover = game.positions[h.base].turn();
                if self.clk.white().is_none_or(|w| (w == side) == mover.is_white()) {
                    self.under_way.tentative = Some(h);
                }
            }
        }
        let Some(game) = &self.game else { return };
        // Who pressed: the mover of a move the board shows or that is not completed.
        let presser = match (&self.under_way.tentative, game.moves.last()) {
            (Some(tent), _) => Some(game.positions[tent.base].turn()),
            (None, Some(last)) if !last.completed => Some(game.positions[game.ply() - 1].turn()),
            _ => None,
        };
        if let Some(color) = presser {
            self.clk.learn_white(side, color);
        }
        let color = presser.or_else(|| {
            self.clk
                .white()
                .map(|w| if w == side { Color::White } else { Color::Black })
        });
        // Before the first move, a press with the board changed is the side to move's.
        let color = match color {
            None if game.ply() == 0 && game.current().board() != &self.real_board() => {
                let us = game.current().turn();
                self.clk.learn_white(side, us);
                Some(us)
            }
            c => c,
        };
        let emt = self.clock_pressed(side, t);
        if self.under_way.tentative.is_some() {
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
        // violation: what was played in the gap is not known. It may complete
        // the last of the plies not found yet (a mate among them): kept for them.
        if let Some(r) = &mut self.line.resync {
            r.pressed = Some((color, emt));
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
        if report_suspect || self.line.noisy_until.is_some_and(|until| t < until) {
            if self.clk.lever_before == Some(side == ClockSide::Left) {
                return;
            }
            self.clk.unconfirmed_press = Some(Unconfirmed {
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
}
