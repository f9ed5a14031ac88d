//! Clock reports in the rules core: checked against the report before (one
//! that cannot follow from it is held until the next agrees), flags (6.8),
//! and the clock across a gap in the line.

use super::{AcrossGap, color_of};
use crate::protocol::{ClockSide, ClockStatus};
use crate::rules::{Core, EventKind, FlagPolicy, GameResult, IrregularKind, Side, Termination, side_index};
use shakmaty::{Color, Position};

impl Core {
    /// A clock report. Its times are believed unless a set is pending (the
    /// clock may not have taken it yet) or they contradict the report before by
    /// more than the time between them allows, which one report may do by a
    /// glitch on the line: it is then kept aside and taken only if the next
    /// report agrees with it. In drive mode the host's clock has the times; a
    /// report only shows them ticking.
    pub(in crate::rules) fn clock_report(&mut self, status: &ClockStatus, t: u64) {
        self.clk.seen = true;
        self.clk.lever_before = self.clk.status.map(|c| c.right_lever_high);
        self.clk.status = Some(*status);
        if let Some(r) = self.line.resync.as_mut().filter(|r| !r.gated) {
            r.clock_fresh = true;
        }
        self.clock_times(status, t);
        if let Some(u) = &mut self.clk.unconfirmed_press {
            if status.right_lever_high != u.right_lever_high {
                // The lever is back: one report with a flipped bit, not a press.
                self.clk.unconfirmed_press = None;
            } else {
                u.reports = u.reports.saturating_add(1);
                self.judge_confirmed(t);
            }
        }
    }

    fn clock_times(&mut self, status: &ClockStatus, t: u64) {
        // A clock started (by a press that moved no lever, or on its own
        // buttons): the side to move's turn begins now.
        if let Some(s) = status.running_side() {
            let was_stopped = self.clk.taken.is_none_or(|(p, _)| p.running_side().is_none());
            if was_stopped {
                self.clk.last_press.get_or_insert(t);
            }
            if self.clk.host.as_ref().is_some_and(|h| h.running().is_none()) {
                if let Some(g) = self.game.as_ref().filter(|g| !g.is_over()) {
                    let to_move = g.current().turn();
                    if g.ply() == 0 {
                        self.clk.learn_white(s, to_move);
                    }
                    if let (Some(white), Some(h)) = (self.clk.white(), self.clk.host.as_mut()) {
                        h.switch(Some(if s == white { 0 } else { 1 }), t);
                    }
                }
            }
        }
        if self.set_pending(t) {
            return;
        }
        if let Some((prev, _)) = self.clk.taken.filter(|_| self.report_contradicts(status, t)) {
            self.note(format!(
                "clock report at {:.3} s ({} / {}) contradicts the one before ({} / {}): ignored unless the next agrees",
                t as f64 / 1e6,
                status.left,
                status.right,
                prev.left,
                prev.right
            ));
            self.clk.suspect = Some((*status, t));
            return;
        }
        self.clk.suspect = None;
        self.clk.taken = Some((*status, t));
        self.clock_across_gap(status, t);
        let known = self.clk.white().is_some();
        let white_side = self.clk.white().unwrap_or(ClockSide::Left);
        let running = status.running_side().map(|s| {
            if s == white_side {
                Color::White
            } else {
                Color::Black
            }
        });
        if let Some(h) = &mut self.clk.host {
            // After a gap the clock ran on without the host: its times stand.
            if std::mem::take(&mut self.clk.resync_host) && known {
                let (w, b) = (
                    status.time(white_side).millis(),
                    status.time(white_side.other()).millis(),
                );
                let off = |side: usize, shown: u32| h.left_ms(side, t).abs_diff(u64::from(shown)) > 1000;
                if off(0, w) || off(1, b) {
                    h.set(i64::from(w) * 1000, i64::from(b) * 1000, t);
                }
            }
            let (w, b) = (h.left_ms(0, t) / 1000 * 1000, h.left_ms(1, t) / 1000 * 1000);
            let running = h.running().map(color_of);
            self.emit_clock(w, b, running, t);
            return;
        }
        let white = u64::from(status.time(white_side).millis());
        let black = u64::from(status.time(white_side.other()).millis());
        if let (Some(ply), Some(game)) = (self.clk.for_ply.take(), self.game.as_mut()) {
            if ply <= game.ply() {
                let mover = game.positions[ply - 1].turn();
                game.moves[ply - 1].clk_ms = Some(if mover.is_white() { white } else { black });
                game.clocks = match game.clocks {
                    // The press that completes a game's last move comes after
                    // its end: the mover's time is the one it stopped at; the
                    // other side's clock, started by that press, ran after the
                    // end and keeps the end's time (seed 106 of the event
                    // campaign: `BlackClock` 3 s below the clock at the mate).
                    Some((w, b)) if game.result.is_some() => {
                        Some(if mover.is_white() { (white, b) } else { (w, black) })
                    }
                    _ => Some((white, black)),
                };
            }
        }
        self.emit_clock(white, black, running, t);
        self.flag_check(status, t);
    }

    /// A flag fall (6.8) seen from the clock's fallen bit, confirmed by the next
    /// report (one report that the ones around it contradict is a glitch), and
    /// never from a display of 0:00:00, which rounds down.
    fn flag_check(&mut self, status: &ClockStatus, t: u64) {
        let fallen = [ClockSide::Left, ClockSide::Right]
            .into_iter()
            .find(|side| match side {
                ClockSide::Left => status.left_flags.fallen,
                ClockSide::Right => status.right_flags.fallen,
            });
        let seen = std::mem::replace(&mut self.clk.flag_seen, fallen);
        let (Some(side), Some(white)) = (fallen, self.clk.white()) else {
            return;
        };
        if seen != Some(side) {
            return;
        }
        if self.game.as_ref().is_none_or(|g| g.ply() == 0) {
            return;
        }
        self.clk.flag_seen = None;
        self.flag_fell(if side == white { Color::White } else { Color::Black }, t);
    }

    /// A flag has fallen: reported once a game per side, with the moves made in
    /// the period; the game goes on being recorded unless configured to end.
    pub(super) fn flag_fell(&mut self, color: Color, t: u64) {
        let Some(game) = &self.game else { return };
        if game.is_over() {
            return;
        }
        let idx = side_index(color.into());
        if self.clk.flags_reported[idx] {
            return;
        }
        self.clk.flags_reported[idx] = true;
        let first = game.positions[0].turn();
        let ply = game.ply();
        let moves = if first == color { ply.div_ceil(2) } else { ply / 2 } as u32;
        let (period_moves, count_met) = match &self.clk.tc {
            Some(tc) => {
                let (p, into) = tc.period_at(moves);
                // At a period's boundary the count of the period before is met.
                if into == 0 && p > 0 && moves > 0 {
                    (tc.periods[p - 1].moves.unwrap_or(0), true)
                } else if into == 0 && moves > 0 && tc.periods[p].moves.is_some() {
                    (tc.periods[p].moves.unwrap_or(0), true)
                } else {
                    (into, false)
                }
            }
            None => (moves, false),
        };
        let opponent_mates = !game.current().has_insufficient_material(!color);
        let side: Side = color.into();
        self.emit(
            t,
            EventKind::Flag {
                side,
                ply: ply as u32,
                period_moves,
                count_met,
            },
        );
        self.clocks_to_game(t);
        if self.cfg.flag == FlagPolicy::End {
            // 6.9: lost, unless the opponent cannot checkmate by any series of
            // legal moves (then drawn).
            let result = match (opponent_mates, color) {
                (false, _) => GameResult::Draw,
                (true, loser) => GameResult::lost_by(loser),
            };
            self.end_game(t, result, Termination::TimeForfeit);
        }
    }

    /// A clock report whose times cannot follow the report taken before it (nor
    /// the one kept aside as suspect): it is kept aside in turn.
    pub(in crate::rules) fn report_contradicts(&self, status: &ClockStatus, t: u64) -> bool {
        let Some((prev, at)) = self.clk.taken else {
            return false;
        };
        !plausible(&prev, at, status, t)
            && !self
                .clk
                .suspect
                .is_some_and(|(s, s_at)| plausible(&s, s_at, status, t))
    }

    /// The line went away: the last report taken is kept, to be compared with
    /// the first one taken once the board is known again.
    pub(in crate::rules) fn clock_before_gap(&mut self) {
        if self.clk.across_gap.is_some() {
            return;
        }
        let (Some((before, _)), Some(g)) = (self.clk.taken, self.game.as_ref()) else {
            return;
        };
        if !g.is_over() {
            self.clk.across_gap = Some(AcrossGap {
                before,
                game: g.number,
                ply: g.ply(),
            });
        }
    }

    /// The first report taken after a gap whose board showed the record's own
    /// position, nothing missed: if the side not to move had its clock stopped
    /// before the gap and shows another time now, it pressed while the line was
    /// away. Moves were then played that the board cannot show (pieces back on
    /// their squares, an even number of plies): nothing is invented, and the
    /// record's loss of them is reported as `lost_track`, resolved at once since
    /// the board stands on the record's position.
    fn clock_across_gap(&mut self, status: &ClockStatus, t: u64) {
        let Some(gap) = self.clk.across_gap else { return };
        if self.line.resync.as_ref().is_some_and(|r| r.gated) {
            return;
        }
        let Some(game) = self.game.as_ref() else {
            self.clk.across_gap = None;
            return;
        };
        if game.number != gap.game || game.is_over() || game.ply() != gap.ply {
            // Plies found across the gap (or a new game): they account for it.
            self.clk.across_gap = None;
            return;
        }
        if self.under_way.tentative.is_some() || self.unexplained() {
            // The board is not (yet) the record's position: plies may be found.
            return;
        }
        self.clk.across_gap = None;
        let Some(white) = self.clk.white() else { return };
        let waiting = !game.current().turn();
        let side = if waiting.is_white() { white } else { white.other() };
        if gap.before.running_side() == Some(side) || status.running_side() == Some(side) {
            // That side's clock ran for a move of the record (its press not yet
            // seen before the gap), or runs now: no evidence.
            return;
        }
        let (was, now) = (gap.before.time(side).millis(), status.time(side).millis());
        if was.abs_diff(now) < 1000 {
            return;
        }
        self.note(format!(
            "after the gap in the line, {waiting:?}'s clock shows {} where it showed {} before, with the board on the record's position: moves were played and pieces put back while the line was away; they are not in the record",
            status.time(side),
            gap.before.time(side),
        ));
        let board = self.real_board();
        let side: Side = waiting.into();
        let count = self.violations[side_index(side)];
        self.raise(t, board, IrregularKind::LostTrack, side, Vec::new(), count, None);
        self.resolve(t);
    }
}

/// The most a press can add to a side's time in one report (an increment, a delay
/// given back). A larger rise (a new period's time, a clock set by hand) is
/// taken once the report after it agrees: one report is not enough, since a
/// report corrupted on the line (a byte dropped shifts its fields) can show any
/// time and a lever that seems to have moved.
const MAX_PRESS_GAIN_MS: u64 = 120_000;

/// Whether `new` (at `t`) can follow `prev` (at `at`): each side's time goes
/// down by at most the time between them (plus the display's rounding) while it
/// ran, and up only with a press in between, by at most `MAX_PRESS_GAIN_MS`.
fn plausible(prev: &ClockStatus, at: u64, new: &ClockStatus, t: u64) -> bool {
    let elapsed = t.saturating_sub(at) / 1000;
    let pressed = prev.right_lever_high != new.right_lever_high;
    [ClockSide::Left, ClockSide::Right].into_iter().all(|side| {
        let (p, n) = (
            u64::from(prev.time(side).millis()),
            u64::from(new.time(side).millis()),
        );
        // With a press in between, either side may have run.
        let ran = pressed || prev.running_side() == Some(side) || new.running_side() == Some(side);
        let drop = if ran { elapsed + 1000 } else { 1000 };
        let gain = if pressed { MAX_PRESS_GAIN_MS + 1000 } else { 1000 };
        n + drop >= p && n <= p + gain
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ClockTime;

    fn status(l: u32, r: u32, running: Option<ClockSide>, lever_right: bool) -> ClockStatus {
        ClockStatus::new(
            ClockTime::from_millis(l * 1000),
            ClockTime::from_millis(r * 1000),
            running,
            lever_right,
        )
    }

    #[test]
    fn a_report_must_follow_from_the_one_before() {
        let a = status(300, 300, Some(ClockSide::Left), false);
        let left = Some(ClockSide::Left);
        let right = Some(ClockSide::Right);
        for (new, at_us, follows, why) in [
            (
                status(298, 300, left, false),
                2_000_000,
                true,
                "the running side ran",
            ),
            (
                status(200, 300, left, false),
                2_000_000,
                false,
                "down more than the time allows",
            ),
            (
                status(298, 290, left, false),
                2_000_000,
                false,
                "the stopped side moving",
            ),
            (
                status(330, 300, left, false),
                2_000_000,
                false,
                "up with no press",
            ),
            (
                status(327, 300, right, true),
                3_000_000,
                true,
                "up for the side a press stopped",
            ),
            (
                status(300 + 120, 299, right, true),
                1_000_000,
                true,
                "up by two minutes with a press",
            ),
            (
                status(32_533, 30_241, right, true),
                250_000,
                false,
                "up by hours with what looks like a press (a report whose fields a dropped byte shifted)",
            ),
            (
                status(300 + 30 * 60, 299, right, true),
                1_000_000,
                false,
                "a new period's time needs the report after it",
            ),
        ] {
            assert_eq!(plausible(&a, 0, &new, at_us), follows, "{why}");
        }
    }
}
