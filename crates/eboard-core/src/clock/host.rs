//! The host's own clock for a game it drives (`[clock] mode = "drive"` or
//! `SetTimeControl`): each side's time in microseconds, charged as the time
//! control says (Fischer increment, Bronstein delay, US delay, sandclock), with
//! periods added on the move count of the game record. The DGT 3000 is set from
//! it after every completed move; the host, not the clock's display, decides a
//! flag. Pure: the caller passes the time (µs) with every call.

use super::control::{Bonus, TimeControl};

/// White is side 0, black side 1.
pub type SideIx = usize;

#[derive(Debug, Clone, PartialEq)]
pub struct HostClock {
    tc: TimeControl,
    /// Time left (µs) per side; for the running side, as of `since_us`.
    left_us: [i64; 2],
    running: Option<SideIx>,
    /// Since when the running side's time is charged (its turn's start, moved
    /// on when its time is set during the turn).
    since_us: u64,
    /// When the running side's turn began.
    turn_us: u64,
    /// The time each side used on its last turn (µs), for Bronstein.
    used_us: [u64; 2],
    /// Completed moves per side (from the game record).
    moves: [u32; 2],
}

impl HostClock {
    /// Both sides at the first period's base time, stopped.
    pub fn new(tc: TimeControl, now_us: u64) -> HostClock {
        let base = tc.periods[0].base_ms as i64 * 1000;
        HostClock {
            tc,
            left_us: [base, base],
            running: None,
            since_us: now_us,
            turn_us: now_us,
            used_us: [0, 0],
            moves: [0, 0],
        }
    }

    pub fn time_control(&self) -> &TimeControl {
        &self.tc
    }

    pub fn running(&self) -> Option<SideIx> {
        self.running
    }

    /// The bonus of the period `side` plays in now.
    fn bonus(&self, side: SideIx) -> Bonus {
        let (p, _) = self.tc.period_at(self.moves[side]);
        self.tc.periods[p].bonus
    }

    /// What `elapsed_us` on the clock costs `side`.
    fn charge(&self, side: SideIx, elapsed_us: u64) -> i64 {
        match self.bonus(side) {
            Bonus::Delay(d) => elapsed_us.saturating_sub(d * 1000) as i64,
            _ => elapsed_us as i64,
        }
    }

    /// Time left for `side` at `now_us` (µs; below zero once the flag has fallen).
    pub fn left_us(&self, side: SideIx, now_us: u64) -> i64 {
        if self.running == Some(side) {
            self.left_us[side] - self.charge(side, now_us.saturating_sub(self.since_us))
        } else if self.tc.sandclock && self.running == Some(1 - side) {
            self.left_us[side] + now_us.saturating_sub(self.since_us) as i64
        } else {
            self.left_us[side]
        }
    }

    /// Time left, as ms not below zero.
    pub fn left_ms(&self, side: SideIx, now_us: u64) -> u64 {
        (self.left_us(side, now_us).max(0) / 1000) as u64
    }

    /// The running side's turn ends (a press: the lever changed), and `to` runs.
    pub fn switch(&mut self, to: Option<SideIx>, now_us: u64) {
        if let Some(s) = self.running {
            let elapsed = now_us.saturating_sub(self.since_us);
            let other = self.left_us(1 - s, now_us);
            self.left_us[s] -= self.charge(s, elapsed);
            self.left_us[1 - s] = other;
            self.used_us[s] = now_us.saturating_sub(self.turn_us);
        }
        self.running = to;
        self.since_us = now_us;
        self.turn_us = now_us;
    }

    /// `side` completed its move (the game record has `moves` of its moves now),
    /// its turn ended by `switch`: the bonus of the period, and the next period
    /// when the count is met. Returns the time added (µs).
    pub fn completed(&mut self, side: SideIx, moves: u32) -> i64 {
        let bonus = match self.bonus(side) {
            Bonus::Increment(ms) => ms as i64 * 1000,
            Bonus::Bronstein(ms) => self.used_us[side].min(ms * 1000) as i64,
            Bonus::None | Bonus::Delay(_) => 0,
        };
        self.moves[side] = moves;
        let added = bonus + self.tc.period_added_ms(moves) as i64 * 1000;
        self.left_us[side] += added;
        added
    }

    /// The time `side` used on its last turn (ms).
    pub fn used_ms(&self, side: SideIx) -> u64 {
        self.used_us[side] / 1000
    }

    /// The moves a side has completed, as last told.
    pub fn moves(&self, side: SideIx) -> u32 {
        self.moves[side]
    }

    /// Sets the moves made (a game taken back or set up by an arbiter).
    pub fn set_moves(&mut self, moves: [u32; 2]) {
        self.moves = moves;
    }

    /// When the running side's time is exhausted (strictly below zero).
    pub fn flag_due(&self) -> Option<(SideIx, u64)> {
        let s = self.running?;
        let delay = match self.bonus(s) {
            Bonus::Delay(d) => d * 1000,
            _ => 0,
        };
        let left = self.left_us[s].max(0) as u64;
        Some((s, self.since_us + delay + left + 1))
    }

    /// Adds time to a side (negative: takes it), the running side going on.
    pub fn add(&mut self, side: SideIx, us: i64, now_us: u64) {
        self.rebase(now_us);
        self.left_us[side] = self.left_us[side].saturating_add(us);
    }

    /// Sets both sides' times, the running side going on.
    pub fn set(&mut self, white_us: i64, black_us: i64, now_us: u64) {
        self.rebase(now_us);
        self.left_us = [white_us, black_us];
    }

    /// Brings the running side's time up to `now_us`, its turn going on: the
    /// delay already spent is kept spent.
    fn rebase(&mut self, now_us: u64) {
        let Some(s) = self.running else {
            self.since_us = now_us;
            self.turn_us = now_us;
            return;
        };
        let elapsed = now_us.saturating_sub(self.since_us);
        let charged = self.charge(s, elapsed);
        let other = self.left_us(1 - s, now_us);
        self.left_us[s] -= charged;
        self.left_us[1 - s] = other;
        // What is left of the delay still applies: move `since` so that the
        // elapsed part that cost nothing is still counted.
        let uncharged = elapsed - charged as u64;
        self.since_us = now_us - uncharged;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;

    fn clock(spec: &str) -> HostClock {
        HostClock::new(TimeControl::parse(spec).unwrap(), 0)
    }

    /// One move of `side` taking `us`, completed; returns the time left after it.
    fn play(c: &mut HostClock, side: SideIx, from: u64, us: u64) -> i64 {
        c.switch(Some(side), from);
        let now = from + us;
        c.switch(Some(1 - side), now);
        let moves = c.moves(side) + 1;
        c.completed(side, moves);
        c.left_us(side, now)
    }

    #[test]
    fn fischer_keeps_the_fraction() {
        let mut c = clock("90+30");
        assert_eq!(
            play(&mut c, 0, 0, 12_400_000),
            (5400 - 12) * 1_000_000 - 400_000 + 30_000_000
        );
        assert_eq!(c.left_ms(0, 99 * S), 5_417_600);
        // Black runs from 12.4 s.
        assert_eq!(c.left_ms(1, 12_400_000 + 2 * S), 5_398_000);
    }

    #[test]
    fn delays_charge_what_the_rules_say() {
        // Bronstein d10: 7.3 s used, 7.3 s given back; 14.6 s used, 10 s back.
        let mut c = clock("90b10");
        assert_eq!(play(&mut c, 0, 0, 7_300_000), 5400 * 1_000_000);
        assert_eq!(play(&mut c, 0, 20 * S, 14_600_000), 5400 * 1_000_000 - 4_600_000);
        // US delay d5: 7.3 s costs 2.3 s; 14.6 s costs 9.6 s; under 5 s, nothing.
        let mut c = clock("G/90;d5");
        assert_eq!(play(&mut c, 0, 0, 7_300_000), 5400 * 1_000_000 - 2_300_000);
        assert_eq!(play(&mut c, 0, 20 * S, 14_600_000), 5400 * 1_000_000 - 11_900_000);
        assert_eq!(play(&mut c, 0, 40 * S, 3 * S), 5400 * 1_000_000 - 11_900_000);
        // The flag waits for the delay.
        c.set(1_000_000, 1_000_000, 50 * S);
        c.switch(Some(0), 60 * S);
        assert_eq!(c.flag_due(), Some((0, 60 * S + 5 * S + S + 1)));
    }

    #[test]
    fn the_second_period_comes_with_the_fortieth_move() {
        let mut c = clock("40/5400+30:1800+30");
        let mut t = 0;
        for n in 1..=40u32 {
            let before = c.left_us(0, t);
            let after = play(&mut c, 0, t, S);
            let gained = after - before + S as i64;
            match n {
                40 => assert_eq!(gained, 1_830_000_000, "move 40"),
                _ => assert_eq!(gained, 30_000_000, "move {n}"),
            }
            t += 2 * S;
        }
    }

    #[test]
    fn sandclock_gives_the_time_used_to_the_other() {
        let mut c = clock("*180");
        play(&mut c, 0, 0, 10 * S);
        assert_eq!(c.left_ms(0, 10 * S), 170_000);
        assert_eq!(c.left_ms(1, 10 * S), 190_000);
        assert_eq!(c.left_ms(1, 15 * S), 185_000);
        assert_eq!(c.left_ms(0, 15 * S), 175_000);
    }

    #[test]
    fn adding_time_keeps_the_running_side_going() {
        let mut c = clock("90+30");
        c.switch(Some(0), 0);
        c.add(1, 120_000_000, 3 * S);
        assert_eq!(c.left_ms(1, 4 * S), 5_520_000);
        assert_eq!(c.left_ms(0, 4 * S), 5_396_000);
        assert_eq!(c.flag_due(), Some((0, 5400 * S + 1)));
    }
}
