//! The clock in the rules core: clock reports (checked against the ones before,
//! held while a set is pending), flags (6.8), the host's own clock when the
//! daemon drives the DGT 3000 (`drive`), the commands that set it, and time
//! added by an arbiter or for a penalty (7.5.5). The commands are taken by the
//! caller (`take_clock_commands`): the daemon sends them, `replay` drops them;
//! both get the same record, since acknowledgements come in with the board's
//! bytes.

use super::*;
use shakmaty::{Color, Position};

use super::{Core, EventKind, FlagPolicy, Profile, Refused, Side, side_index};
use crate::clock::control::{MAX_SHOWN_MS, TimeControl};
use crate::clock::host::HostClock;
use crate::protocol::{ClockCommand, ClockSide, ClockStatus, ClockTime, Hms, RunFlags, clock_code};

/// A set-and-run not acknowledged after this long is taken as lost (the daemon
/// gives up on a command after 4 tries 2 s apart).
const SET_LOST_AFTER_US: u64 = 10_000_000;

/// The clock's part of the core's state.
#[derive(Debug, Default)]
pub(super) struct Timing {
    /// The time control (from the configuration or `SetTimeControl`).
    pub tc: Option<TimeControl>,
    /// The host keeps the time and sets the clock (drive mode).
    pub drive: bool,
    /// The host's clock for the game under way (drive mode).
    pub host: Option<HostClock>,
    /// Clock commands for the caller to send.
    pub out: Vec<ClockCommand>,
    /// Set-and-run commands not yet acknowledged, and when the last was made.
    pub sets_pending: u32,
    pub set_at: u64,
    /// The last clock report taken (its times believed), and when.
    pub taken: Option<(ClockStatus, u64)>,
    /// A report that contradicted the one before it, waiting for the next.
    pub suspect: Option<(ClockStatus, u64)>,
    /// The last press (lever change), for `%emt`.
    pub last_press: Option<u64>,
    /// After a gap, the host's clock takes the clock's times from the next report
    /// (the clock ran on while the line was away).
    pub resync_host: bool,
    /// `finish()`: no flag is seen after the last input.
    pub finishing: bool,
    pub last_input: u64,
    /// A gap in the line, with the last report taken before it: the clock tells
    /// whether the side not to move pressed while the line was away.
    pub across_gap: Option<AcrossGap>,
}

/// What a gap in the line left to be checked against the clock.
#[derive(Debug, Clone, Copy)]
pub(super) struct AcrossGap {
    /// The last clock report taken before the gap.
    pub before: ClockStatus,
    /// The game and its length in plies when the line went away.
    pub game: u32,
    pub ply: usize,
}

/// The time a completed violation gives the opponent (7.5.5; A.4.2 and B.3).
fn penalty_ms(profile: Profile) -> i64 {
    match profile {
        Profile::Standard => 120_000,
        Profile::Rapid | Profile::Blitz => 60_000,
    }
}

fn ix(c: Color) -> usize {
    side_index(c.into())
}

fn color_of(i: usize) -> Color {
    if i == 0 { Color::White } else { Color::Black }
}

impl Core {
    /// Sets the time control of the game about to start and of the games after
    /// it; `drive`: the host keeps the time and sets the clock (otherwise the
    /// clock runs its own program, and the time control only names the periods).
    /// Refused while a game has moves and is not over (both clocks would be reset:
    /// `SetClock` changes times).
    pub fn set_time_control(
        &mut self,
        tc: Option<TimeControl>,
        drive: bool,
        t_us: u64,
    ) -> Result<(), Refused> {
        self.advance(t_us);
        if let Some(g) = self.game.as_ref().filter(|g| g.ply() > 0 && !g.is_over()) {
            return Err(Refused::GameUnderWay(format!(
                "the game under way has {} plies: a new time control would reset both clocks (SetClock or AddTime change the times)",
                g.ply()
            )));
        }
        self.clk.drive = drive && tc.is_some();
        self.clk.tc = tc;
        self.clk.host = None;
        let text = self.clk.tc.as_ref().map(TimeControl::pgn);
        if let Some(g) = self.game.as_mut().filter(|g| !g.is_over()) {
            g.time_control = text;
            self.start_host(t_us);
        }
        Ok(())
    }

    /// The time control, when one is set.
    pub fn time_control(&self) -> Option<&TimeControl> {
        self.clk.tc.as_ref()
    }

    /// Clock commands made since last taken, to send in order.
    pub fn take_clock_commands(&mut self) -> Vec<ClockCommand> {
        std::mem::take(&mut self.clk.out)
    }

    /// A new game in drive mode: the clock is set to the first period's time on
    /// both sides, stopped; the first press starts it.
    pub(super) fn start_host(&mut self, t: u64) {
        if !self.clk.drive {
            return;
        }
        let Some(tc) = self.clk.tc.clone() else { return };
        self.clk.host = Some(HostClock::new(tc, t));
        self.send_set(t);
    }

    /// Arbiter: sets both times (ms), the running side going on.
    pub fn arbiter_set_clock(&mut self, white_ms: i64, black_ms: i64, t_us: u64) -> Result<(), Refused> {
        self.advance(t_us);
        for ms in [white_ms, black_ms] {
            if !(0..=MAX_SHOWN_MS as i64).contains(&ms) {
                return Err(Refused::InvalidArgument(format!(
                    "{ms} ms: the DGT 3000 shows 0 to 9:59:59"
                )));
            }
        }
        self.set_times(white_ms, black_ms, t_us)
    }

    /// Arbiter: adds `seconds` (negative: takes them) to a side.
    pub fn arbiter_add_time(&mut self, side: &str, seconds: i32, t_us: u64) -> Result<(), Refused> {
        self.advance(t_us);
        let color = match side {
            "white" => Color::White,
            "black" => Color::Black,
            other => {
                return Err(Refused::InvalidArgument(format!(
                    "`{}`: the side is `white` or `black`",
                    crate::log::clip_to(other, 20)
                )));
            }
        };
        let (w, b) = self.times_now(t_us).ok_or_else(|| {
            Refused::NoGame("no clock report yet: the times to add to are not known".into())
        })?;
        let delta = i64::from(seconds) * 1000;
        let (w, b) = match color {
            Color::White => (w + delta, b),
            Color::Black => (w, b + delta),
        };
        self.set_times(
            w.clamp(0, MAX_SHOWN_MS as i64),
            b.clamp(0, MAX_SHOWN_MS as i64),
            t_us,
        )
    }

    /// Both sides' times now (ms): the host's clock, or the last report taken.
    fn times_now(&self, t: u64) -> Option<(i64, i64)> {
        if let Some(h) = &self.clk.host {
            return Some((h.left_ms(0, t) as i64, h.left_ms(1, t) as i64));
        }
        // The last report taken, the running side's time brought up to now.
        let (status, at) = self.clk.taken?;
        let white = self.white_side?;
        let now = |side: ClockSide| {
            let shown = i64::from(status.time(side).millis());
            if status.running_side() == Some(side) {
                (shown - (t.saturating_sub(at) / 1000) as i64).max(0)
            } else {
                shown
            }
        };
        Some((now(white), now(white.other())))
    }

    fn set_times(&mut self, white_ms: i64, black_ms: i64, t: u64) -> Result<(), Refused> {
        if self.white_side.is_none() {
            return Err(Refused::InvalidArgument(
                "which clock side is white's is not known yet: set `[clock] white` or wait for the first press".into(),
            ));
        }
        if let Some(h) = &mut self.clk.host {
            h.set(white_ms * 1000, black_ms * 1000, t);
            self.send_set(t);
        } else {
            let running = self.clock.and_then(|c| c.running_side());
            self.push_set(white_ms as u64, black_ms as u64, running, t);
        }
        Ok(())
    }

    /// A completed violation's penalty on the clock, when configured: the
    /// opponent's time, exactly, the running side going on.
    pub(super) fn penalty_to_clock(&mut self, offender: Color, t: u64) -> bool {
        if !self.cfg.apply_penalties || self.white_side.is_none() {
            return false;
        }
        let add = penalty_ms(self.cfg.profile);
        let opponent = !offender;
        if let Some(h) = &mut self.clk.host {
            h.add(ix(opponent), add * 1000, t);
            self.send_set(t);
            return true;
        }
        let Some((w, b)) = self.times_now(t) else {
            return false;
        };
        let (w, b) = match opponent {
            Color::White => (w + add, b),
            Color::Black => (w, b + add),
        };
        // The violation was completed by the offender's press: the opponent's
        // clock runs, and goes on running.
        let running = self
            .white_side
            .map(|w| if opponent.is_white() { w } else { w.other() });
        self.push_set(
            w.min(MAX_SHOWN_MS as i64) as u64,
            b.min(MAX_SHOWN_MS as i64) as u64,
            running,
            t,
        );
        true
    }

    /// Sets the clock from the host's clock: both times, the host's running side.
    fn send_set(&mut self, t: u64) {
        let Some(h) = &self.clk.host else { return };
        let (w, b) = (h.left_ms(0, t), h.left_ms(1, t));
        let running = h.running();
        let running_side = match (running, self.white_side) {
            (Some(i), Some(white)) => Some(if i == 0 { white } else { white.other() }),
            _ => None,
        };
        if self.white_side.is_none() && w != b {
            // Which side shows whose time is not known yet (and both differ).
            return;
        }
        self.push_set(w, b, running_side, t);
        self.emit_clock(w, b, running.map(color_of), t);
        if let Some(g) = &mut self.game {
            g.clocks = Some((w, b));
        }
    }

    /// A set-and-run: white's and black's times (ms; whole seconds are sent),
    /// `running` the clock side to count down (none: stopped until a press).
    /// A stopped side gets its time rounded down (the clock shows what the model
    /// shows), the running side rounded up (the clock is then never behind the
    /// model, and its display, which rounds down, within a second of it).
    fn push_set(&mut self, white_ms: u64, black_ms: u64, running: Option<ClockSide>, t: u64) {
        let white = self.white_side.unwrap_or(ClockSide::Left);
        let hms = |ms: u64, side: ClockSide| {
            let ms = if running == Some(side) {
                ms.div_ceil(1000) * 1000
            } else {
                ms
            };
            Hms::from_time(ClockTime::from_millis(ms.min(MAX_SHOWN_MS) as u32))
        };
        let (left, right) = match white {
            ClockSide::Left => (hms(white_ms, ClockSide::Left), hms(black_ms, ClockSide::Right)),
            ClockSide::Right => (hms(black_ms, ClockSide::Left), hms(white_ms, ClockSide::Right)),
        };
        let flags = RunFlags {
            left_runs: running == Some(ClockSide::Left),
            right_runs: running == Some(ClockSide::Right),
            paused: false,
            switch_on_lever: true,
        };
        self.clk.out.push(ClockCommand::SetAndRun { left, right, flags });
        self.clk.sets_pending += 1;
        self.clk.set_at = t;
    }

    fn emit_clock(&mut self, white: u64, black: u64, running: Option<Color>, t: u64) {
        let running = match running {
            None => "none",
            Some(Color::White) => "white",
            Some(Color::Black) => "black",
        };
        if self.clock_said != Some((white, black, running)) {
            self.clock_said = Some((white, black, running));
            self.emit(
                t,
                EventKind::Clock {
                    white_ms: white,
                    black_ms: black,
                    running,
                },
            );
        }
    }

    /// The line was away (a gap): the next report is not judged against the last
    /// one taken (any number of presses may have come between).
    pub(super) fn clock_line_lost(&mut self) {
        self.clk.taken = None;
        self.clk.suspect = None;
    }

    /// A clock command acknowledged (`code`).
    pub(super) fn clock_acked(&mut self, code: u8) {
        if code == clock_code::SET_AND_RUN {
            self.clk.sets_pending = self.clk.sets_pending.saturating_sub(1);
        }
    }

    fn set_pending(&self, t: u64) -> bool {
        self.clk.sets_pending > 0 && t < self.clk.set_at + SET_LOST_AFTER_US
    }

    /// A press (the lever changed side): the host's clock switches, and the time
    /// since the last press is the move's time if the press completes one.
    pub(super) fn clock_pressed(&mut self, side: ClockSide, t: u64) -> Option<u64> {
        let emt = self.clk.last_press.replace(t).map(|p| t.saturating_sub(p) / 1000);
        if self.clk.host.is_some() {
            // Before the first move, a press starts the clock of the side to move:
            // the presser sits on the other side.
            if self.white_side.is_none() {
                if let Some(g) = self.game.as_ref().filter(|g| g.ply() == 0) {
                    let to_move = g.current().turn();
                    self.white_side = Some(if to_move.is_white() { side.other() } else { side });
                }
            }
            if let (Some(white), Some(h)) = (self.white_side, self.clk.host.as_mut()) {
                let runs = if side.other() == white { 0 } else { 1 };
                h.switch(Some(runs), t);
            }
        }
        emt
    }

    /// Ply `ply` was completed by a press at `t` (`emt`: the time it took): its
    /// `%clk` and `%emt`; in drive mode the mover's bonus and next period, and
    /// the clock set from the host's clock.
    pub(super) fn clock_completed(&mut self, ply: usize, emt: Option<u64>, t: u64) {
        let Some(game) = self.game.as_mut() else { return };
        if ply == 0 || ply > game.ply() {
            return;
        }
        game.moves[ply - 1].emt_ms = emt;
        let mover = game.positions[ply - 1].turn();
        let first = game.positions[0].turn();
        let moves = if first == mover { ply.div_ceil(2) } else { ply / 2 } as u32;
        let Some(h) = &mut self.clk.host else {
            // The next report gives the mover's time.
            self.clk_for = Some(ply);
            return;
        };
        h.completed(ix(mover), moves);
        game.moves[ply - 1].clk_ms = Some(h.left_ms(ix(mover), t));
        game.moves[ply - 1].emt_ms = Some(h.used_ms(ix(mover)));
        self.clk_for = None;
        self.send_set(t);
    }

    /// When the host's clock sees the running side's time exhausted (drive mode).
    pub(super) fn host_flag_at(&self) -> Option<u64> {
        let h = self.clk.host.as_ref()?;
        let game = self.game.as_ref()?;
        if game.is_over() {
            return None;
        }
        let (side, at) = h.flag_due()?;
        if self.flags_reported[side] || (self.clk.finishing && at > self.clk.last_input) {
            return None;
        }
        Some(at)
    }

    /// The host's clock: a flag has fallen at `t`.
    pub(super) fn host_flag(&mut self, t: u64) {
        let Some((side, _)) = self.clk.host.as_ref().and_then(HostClock::flag_due) else {
            return;
        };
        self.flag_fell(color_of(side), t);
    }

    /// A clock report. Its times are believed unless a set is pending (the
    /// clock may not have taken it yet) or they contradict the report before by
    /// more than the time between them allows, which one report may do by a
    /// glitch on the line: it is then kept aside and taken only if the next
    /// report agrees with it. In drive mode the host's clock has the times; a
    /// report only shows them ticking.
    pub(super) fn clock_report(&mut self, status: &ClockStatus, t: u64) {
        self.clock_seen = true;
        self.lever_before = self.clock.map(|c| c.right_lever_high);
        self.clock = Some(*status);
        self.clock_times(status, t);
        if let Some(u) = &mut self.unconfirmed_press {
            if status.right_lever_high != u.right_lever_high {
                // The lever is back: one report with a flipped bit, not a press.
                self.unconfirmed_press = None;
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
                    if self.white_side.is_none() && g.ply() == 0 {
                        self.white_side = Some(if to_move.is_white() { s } else { s.other() });
                    }
                    if let (Some(white), Some(h)) = (self.white_side, self.clk.host.as_mut()) {
                        h.switch(Some(if s == white { 0 } else { 1 }), t);
                    }
                }
            }
        }
        if self.set_pending(t) {
            return;
        }
        if let Some((prev, _)) = self.clk.taken.filter(|_| self.report_contradicts(status, t)) {
            tracing::warn!(
                "clock report at {:.3} s ({} / {}) contradicts the one before ({} / {}): ignored unless the next agrees",
                t as f64 / 1e6,
                status.left,
                status.right,
                prev.left,
                prev.right
            );
            self.clk.suspect = Some((*status, t));
            return;
        }
        self.clk.suspect = None;
        self.clk.taken = Some((*status, t));
        self.clock_across_gap(status, t);
        let white_side = self.white_side.unwrap_or(ClockSide::Left);
        let running = status.running_side().map(|s| {
            if s == white_side {
                Color::White
            } else {
                Color::Black
            }
        });
        if let Some(h) = &mut self.clk.host {
            // After a gap the clock ran on without the host: its times stand.
            if std::mem::take(&mut self.clk.resync_host) && self.white_side.is_some() {
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
        if let (Some(ply), Some(game)) = (self.clk_for.take(), self.game.as_mut()) {
            if ply <= game.ply() {
                let mover = game.positions[ply - 1].turn();
                game.moves[ply - 1].clk_ms = Some(if mover.is_white() { white } else { black });
                game.clocks = Some((white, black));
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
        let seen = std::mem::replace(&mut self.flag_seen, fallen);
        let (Some(side), Some(white)) = (fallen, self.white_side) else {
            return;
        };
        if seen != Some(side) {
            return;
        }
        if self.game.as_ref().is_none_or(|g| g.ply() == 0) {
            return;
        }
        self.flag_seen = None;
        self.flag_fell(if side == white { Color::White } else { Color::Black }, t);
    }

    /// A flag has fallen: reported once a game per side, with the moves made in
    /// the period; the game goes on being recorded unless configured to end.
    fn flag_fell(&mut self, color: Color, t: u64) {
        let Some(game) = &self.game else { return };
        if game.is_over() {
            return;
        }
        let idx = side_index(color.into());
        if self.flags_reported[idx] {
            return;
        }
        self.flags_reported[idx] = true;
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
        if self.cfg.flag == FlagPolicy::End {
            // 6.9: lost, unless the opponent cannot checkmate by any series of
            // legal moves (then drawn).
            let result = match (opponent_mates, color) {
                (false, _) => "1/2-1/2",
                (true, Color::White) => "0-1",
                (true, Color::Black) => "1-0",
            };
            self.settle_end(t);
            self.end_game(t, result, "time_forfeit");
        }
    }

    /// The game is over: in drive mode the clock is stopped where it stands.
    pub(super) fn stop_host(&mut self, t: u64) {
        if let Some(h) = &mut self.clk.host {
            if h.running().is_some() {
                h.switch(None, t);
                self.send_set(t);
            }
        }
    }

    /// A clock report whose times cannot follow the report taken before it (nor
    /// the one kept aside as suspect): it is kept aside in turn.
    pub(super) fn report_contradicts(&self, status: &ClockStatus, t: u64) -> bool {
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
    pub(super) fn clock_before_gap(&mut self) {
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
        if self.resync.as_ref().is_some_and(|r| r.gated) {
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
        if self.tentative.is_some() || self.unexplained() {
            // The board is not (yet) the record's position: plies may be found.
            return;
        }
        self.clk.across_gap = None;
        let Some(white) = self.white_side else { return };
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
        tracing::warn!(
            "after the gap in the line, {waiting:?}'s clock shows {} where it showed {} before, with the board on the record's position: moves were played and pieces put back while the line was away; they are not in the record",
            status.time(side),
            gap.before.time(side),
        );
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

impl Core {
    /// A press on `side` at `t`; `report_suspect`: the clock report it came in
    /// contradicts the reports before it (a report whose fields a dropped byte
    /// shifted), so a violation it would complete must first be confirmed.
    pub(super) fn press(&mut self, side: ClockSide, t: u64, report_suspect: bool) {
        self.clock_seen = true;
        let Some(game) = &self.game else { return };
        if game.is_over() {
            return;
        }
        // A king step onto the centre held since the other king was lifted (it
        // might still have become a result by kings): its mover's press makes it.
        if self.tentative.is_none() {
            if let Some(h) = self.held.filter(|h| h.base == game.ply()) {
                let mover = game.positions[h.base].turn();
                if self.white_side.is_none_or(|w| (w == side) == mover.is_white()) {
                    self.tentative = Some(h);
                }
            }
        }
        let Some(game) = &self.game else { return };
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
        // violation: what was played in the gap is not known. It may complete
        // the last of the plies not found yet (a mate among them): kept for them.
        if let Some(r) = &mut self.resync {
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
        if report_suspect || self.noisy_until.is_some_and(|until| t < until) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
