//! The clock in the rules core: clock reports (checked against the ones before,
//! held while a set is pending), flags (6.8), the host's own clock when the
//! daemon drives the DGT 3000 (`drive`), the commands that set it, and time
//! added by an arbiter or for a penalty (7.5.5). The commands are taken by the
//! caller (`take_clock_commands`): the daemon sends them, `replay` drops them;
//! both get the same record, since acknowledgements come in with the board's
//! bytes.
//!
//! This file holds the clock's state, the time control, the arbiter's times
//! and penalties and the commands that set the clock; `press` the presses and
//! the host's flag, `report` the clock reports and flags.

mod press;
mod report;

use shakmaty::Color;

use super::{Core, EventKind, Profile, Refused, Side, side_index};
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
    /// What the last set-and-run makes the clock show (report mode): once the
    /// clock acknowledges it, its times are what the clock shows, and the
    /// reports after it are judged against them.
    pub set_to: Option<ClockStatus>,
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
    /// The last clock report (real sides).
    pub status: Option<ClockStatus>,
    /// The times and running side last reported as a `clock` event.
    pub said: Option<(u64, u64, Option<Side>)>,
    /// A clock report has been seen (the board has a clock).
    pub seen: bool,
    /// The ply whose mover's time the next clock report gives (after a press).
    pub for_ply: Option<usize>,
    /// A side whose fallen flag one clock report showed, waiting for the next
    /// report to confirm it; and the sides already reported this game.
    pub flag_seen: Option<ClockSide>,
    pub flags_reported: [bool; 2],
    /// The lever (status bit 1) in the report before the last one.
    pub lever_before: Option<bool>,
    /// A press (a lever change) waiting for the clock report it came in, the
    /// next event: whether that report's times can follow the ones before
    /// decides whether the press is judged at once or must first be confirmed.
    pub press_waiting: Option<(ClockSide, u64)>,
    /// A press that would be a completed violation on a line that lost
    /// something lately, waiting to be confirmed.
    pub unconfirmed_press: Option<super::irregular::Unconfirmed>,
    /// Which clock side is white's: fixed by the configuration, else learnt
    /// from the first press or report that tells it ([`Timing::learn_white`]);
    /// once known, it stays from game to game.
    white: Option<ClockSide>,
}

impl Timing {
    /// Which clock side is white's, when known.
    #[inline]
    pub fn white(&self) -> Option<ClockSide> {
        self.white
    }

    /// White's clock side, fixed (the configuration's `[clock] white`).
    pub fn fix_white(&mut self, side: ClockSide) {
        self.white = Some(side);
    }

    /// Clock side `side` is `color`'s, unless which side is white's is known
    /// already.
    pub fn learn_white(&mut self, side: ClockSide, color: Color) {
        self.white
            .get_or_insert(if color.is_white() { side } else { side.other() });
    }

    /// A new game: what the clock said of the game before is forgotten.
    pub fn new_game(&mut self) {
        self.for_ply = None;
        self.unconfirmed_press = None;
        self.flag_seen = None;
        self.flags_reported = [false; 2];
        self.last_press = None;
        self.host_gone();
    }

    /// The host's clock is gone (a new game, a time control the clock runs
    /// itself): the figures shown are no longer its. They are the last report
    /// a clock gave, which still stands; with no clock, there are none (a board
    /// without a clock showed the last game's host times, issue 48).
    pub fn host_gone(&mut self) {
        if self.host.take().is_none() && self.taken.is_some() {
            // Report mode with a clock: the figures are already the clock's.
            return;
        }
        let white = self.white.unwrap_or(ClockSide::Left);
        self.said = self.taken.map(|(status, _)| {
            let running = status
                .running_side()
                .map(|r| if r == white { Side::White } else { Side::Black });
            (
                u64::from(status.time(white).millis()),
                u64::from(status.time(white.other()).millis()),
                running,
            )
        });
    }
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
    /// Refused while the game has moves (under way: both clocks would be
    /// reset, `SetClock` changes times; over: a time control is a game's from
    /// its start, and taken for the next game it would drive a game nobody
    /// asked to, issue 57).
    pub fn set_time_control(
        &mut self,
        tc: Option<TimeControl>,
        drive: bool,
        t_us: u64,
    ) -> Result<(), Refused> {
        self.advance(t_us);
        // On a finished game the doors refuse it (`rules::book::refused`); a
        // journal written before they did is applied as it was (the next
        // game's time control).
        if let Some(g) = self.game.as_ref().filter(|g| g.ply() > 0 && !g.is_over()) {
            return Err(Refused::GameUnderWay(format!(
                "the game under way has {} plies: a new time control would reset both clocks (SetClock or AddTime change the times)",
                g.ply()
            )));
        }
        self.clk.drive = drive && tc.is_some();
        self.clk.tc = tc;
        self.clk.host_gone();
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
    pub fn arbiter_add_time(&mut self, side: Side, seconds: i32, t_us: u64) -> Result<(), Refused> {
        self.advance(t_us);
        let (w, b) = self.times_now(t_us).ok_or_else(|| {
            Refused::NoGame("no clock report yet: the times to add to are not known".into())
        })?;
        let delta = i64::from(seconds) * 1000;
        let (w, b) = match side {
            Side::White => (w + delta, b),
            Side::Black => (w, b + delta),
        };
        self.set_times(
            w.clamp(0, MAX_SHOWN_MS as i64),
            b.clamp(0, MAX_SHOWN_MS as i64),
            t_us,
        )
    }

    /// Both sides' times now (ms): the host's clock, or the times set on the
    /// clock while the set is not acknowledged yet (the reports before it are
    /// of the times it replaced: an undo of time added read them, and gave
    /// nothing back), or the last report taken.
    pub(super) fn times_now(&self, t: u64) -> Option<(i64, i64)> {
        if let Some(h) = &self.clk.host {
            return Some((h.left_ms(0, t) as i64, h.left_ms(1, t) as i64));
        }
        // The running side's time brought up to now.
        let pending = self
            .clk
            .set_to
            .filter(|_| self.set_pending(t))
            .map(|set| (set, self.clk.set_at));
        let (status, at) = pending.or(self.clk.taken)?;
        let white = self.clk.white()?;
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

    pub(super) fn set_times(&mut self, white_ms: i64, black_ms: i64, t: u64) -> Result<(), Refused> {
        if self.clk.white().is_none() {
            return Err(Refused::InvalidArgument(
                "which clock side is white's is not known yet: set `[clock] white` or wait for the first press".into(),
            ));
        }
        if let Some(h) = &mut self.clk.host {
            h.set(white_ms * 1000, black_ms * 1000, t);
            self.send_set(t);
        } else {
            let running = self.clk.status.and_then(|c| c.running_side());
            self.push_set(white_ms as u64, black_ms as u64, running, t);
        }
        Ok(())
    }

    /// A completed violation's penalty on the clock, when configured: the
    /// opponent's time, exactly, the running side going on.
    pub(super) fn penalty_to_clock(&mut self, offender: Color, t: u64) -> bool {
        if !self.cfg.apply_penalties || self.clk.white().is_none() {
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
            .clk
            .white()
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
        let running_side = match (running, self.clk.white()) {
            (Some(i), Some(white)) => Some(if i == 0 { white } else { white.other() }),
            _ => None,
        };
        if self.clk.white().is_none() && w != b {
            // Which side shows whose time is not known yet (and both differ).
            return;
        }
        self.push_set(w, b, running_side, t);
        self.emit_clock(w, b, running.map(color_of), t);
        // A finished game keeps the clocks of its end (a set after it, an
        // arbiter's time given and taken back, is the clock's, not the game's).
        if let Some(g) = self.game.as_mut().filter(|g| !g.is_over()) {
            g.clocks = Some((w, b));
        }
    }

    /// A set-and-run: white's and black's times (ms; whole seconds are sent),
    /// `running` the clock side to count down (none: stopped until a press).
    /// A stopped side gets its time rounded down (the clock shows what the model
    /// shows), the running side rounded up (the clock is then never behind the
    /// model, and its display, which rounds down, within a second of it).
    fn push_set(&mut self, white_ms: u64, black_ms: u64, running: Option<ClockSide>, t: u64) {
        let white = self.clk.white().unwrap_or(ClockSide::Left);
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
        let lever = self.clk.status.is_some_and(|s| s.right_lever_high);
        self.clk.set_to = Some(ClockStatus::new(
            left.to_time().unwrap_or_default(),
            right.to_time().unwrap_or_default(),
            running,
            lever,
        ));
    }

    fn emit_clock(&mut self, white: u64, black: u64, running: Option<Color>, t: u64) {
        let running: Option<Side> = running.map(Side::from);
        if self.clk.said != Some((white, black, running)) {
            self.clk.said = Some((white, black, running));
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

    /// A clock command acknowledged (`code`) at `t`. The last set-and-run
    /// acknowledged in report mode (an arbiter's time, a penalty): the clock
    /// shows its times, and the reports after it follow from them. (A report
    /// that came before the acknowledgement was not believed, and a stopped
    /// clock may send no other: the times added to a fallen flag stood at
    /// 0:00:00, issue 48.)
    pub(super) fn clock_acked(&mut self, code: u8, t: u64) {
        if code != clock_code::SET_AND_RUN {
            return;
        }
        self.clk.sets_pending = self.clk.sets_pending.saturating_sub(1);
        if self.clk.sets_pending > 0 || self.clk.host.is_some() {
            return;
        }
        let Some(set) = self.clk.set_to.take() else { return };
        self.clk.taken = Some((set, self.clk.set_at));
        self.clk.suspect = None;
        let white = self.clk.white().unwrap_or(ClockSide::Left);
        let running = set
            .running_side()
            .map(|s| if s == white { Color::White } else { Color::Black });
        self.emit_clock(
            u64::from(set.time(white).millis()),
            u64::from(set.time(white.other()).millis()),
            running,
            t,
        );
        // A finished game keeps the clocks of its end.
        if self.game.as_ref().is_some_and(|g| !g.is_over()) {
            self.clocks_to_game(t);
        }
    }

    /// The game's `WhiteClock` and `BlackClock` follow the clock as it stands
    /// now: the host's times (drive mode), else the times last reported as a
    /// `clock` event, which `ctl boards`, D-Bus and the console show. Called
    /// where the clock changes other than by a completed move: a set the
    /// clock acknowledged (an arbiter's times, a penalty), a flag, the game's
    /// end (issue 57: a game ended `time forfeit` with the tags of the last
    /// move).
    pub(super) fn clocks_to_game(&mut self, t: u64) {
        let times = match &self.clk.host {
            Some(h) => Some((h.left_ms(0, t), h.left_ms(1, t))),
            None => self.clk.said.map(|(w, b, _)| (w, b)),
        };
        if let (Some(times), Some(g)) = (times, self.game.as_mut()) {
            g.clocks = Some(times);
        }
    }

    fn set_pending(&self, t: u64) -> bool {
        self.clk.sets_pending > 0 && t < self.clk.set_at + SET_LOST_AFTER_US
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
}
