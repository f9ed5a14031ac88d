//! A model of a DGT 3000 keeping time: counting down the running side, lever
//! presses, flag fall. Pure: the caller passes the time (microseconds on any
//! monotonic scale) with every call.

pub mod control;
pub mod host;
pub mod queue;

use crate::protocol::{ClockCommand, ClockSide, ClockStatus, ClockTime};

/// A text for a DGT XL, which has six 7-segment characters ("1A:BC 1D:EF")
/// where the DGT 3000 has eight of text: the first six characters, each drawn
/// as well as seven segments can (segment bits: 0x01 top, 0x02 upper right, 0x04
/// lower right, 0x08 bottom, 0x10 lower left, 0x20 upper left, 0x40 middle).
pub fn segments(text: &str, beep: bool) -> ClockCommand {
    fn glyph(c: char) -> u8 {
        match c.to_ascii_uppercase() {
            '0' | 'O' => 0x3f,
            '1' => 0x06,
            '2' | 'Z' => 0x5b,
            '3' => 0x4f,
            '4' => 0x66,
            '5' | 'S' => 0x6d,
            '6' => 0x7d,
            '7' => 0x07,
            '8' => 0x7f,
            '9' => 0x6f,
            'A' => 0x77,
            'B' => 0x7c,
            'C' => 0x39,
            'D' => 0x5e,
            'E' => 0x79,
            'F' => 0x71,
            'G' => 0x3d,
            'H' | 'K' | 'X' => 0x76,
            'I' => 0x30,
            'J' => 0x1e,
            'L' => 0x38,
            'M' | 'N' => 0x54,
            'P' => 0x73,
            'Q' => 0x67,
            'R' => 0x50,
            'T' => 0x78,
            'U' | 'W' => 0x3e,
            'V' => 0x1c,
            'Y' => 0x6e,
            '-' | '+' => 0x40,
            '=' => 0x48,
            '#' => 0x49,
            '?' => 0x53,
            _ => 0,
        }
    }
    let mut g = [0u8; 6];
    for (slot, c) in g.iter_mut().zip(text.chars()) {
        *slot = glyph(c);
    }
    // The command carries the positions in the order C B A F E D.
    ClockCommand::Display {
        segments: [g[2], g[1], g[0], g[5], g[4], g[3]],
        icons: 0,
        beep: if beep { 0x03 } else { 0x01 },
    }
}

/// A chess clock as the DGT 3000 behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockModel {
    left: ClockTime,
    right: ClockTime,
    running: Option<ClockSide>,
    right_lever_high: bool,
    /// A side whose time ran out while it was running (the flag fell).
    fallen: Option<ClockSide>,
    /// When `left`/`right` were last brought up to date.
    at_us: u64,
}

impl ClockModel {
    /// A stopped clock showing the given times.
    pub fn new(left: ClockTime, right: ClockTime, at_us: u64) -> ClockModel {
        ClockModel {
            left,
            right,
            running: None,
            right_lever_high: false,
            fallen: None,
            at_us,
        }
    }

    /// Takes a status as reported (or as a log's `clock` record sets it).
    pub fn from_status(status: &ClockStatus, at_us: u64) -> ClockModel {
        ClockModel {
            left: status.left,
            right: status.right,
            running: status.running_side(),
            right_lever_high: status.right_lever_high,
            fallen: if status.left_flags.fallen {
                Some(ClockSide::Left)
            } else if status.right_flags.fallen {
                Some(ClockSide::Right)
            } else {
                None
            },
            at_us,
        }
    }

    /// Brings the running side's time up to `now_us` (times never go below zero).
    pub fn advance(&mut self, now_us: u64) {
        let elapsed_us = now_us.saturating_sub(self.at_us);
        let Some(side) = self.running else {
            self.at_us = self.at_us.max(now_us);
            return;
        };
        // Whole milliseconds only; the remainder stays for the next call so that many
        // small steps lose nothing.
        let elapsed_ms = elapsed_us / 1000;
        let time = match side {
            ClockSide::Left => &mut self.left,
            ClockSide::Right => &mut self.right,
        };
        let before = *time;
        *time = time.saturating_sub_millis(elapsed_ms);
        // The flag falls when a running time reaches zero (a clock never set, showing
        // 0:00:00, has no flag to fall).
        if before.millis() > 0 && time.millis() == 0 && self.fallen.is_none() {
            self.fallen = Some(side);
        }
        self.at_us += elapsed_ms * 1000;
    }

    /// The player on `side` presses the lever: their time stops, the other side's runs.
    /// A press on a lever that is already down changes nothing.
    pub fn press(&mut self, side: ClockSide, now_us: u64) {
        self.advance(now_us);
        let lever_down_on = if self.right_lever_high {
            ClockSide::Left
        } else {
            ClockSide::Right
        };
        if lever_down_on == side && self.running.is_some() {
            return;
        }
        self.running = Some(side.other());
        self.right_lever_high = side == ClockSide::Left;
    }

    /// Sets times and which side runs (set-and-run).
    pub fn set(&mut self, left: ClockTime, right: ClockTime, running: Option<ClockSide>, now_us: u64) {
        self.left = left;
        self.right = right;
        self.running = running;
        self.fallen = None;
        if let Some(side) = running {
            self.right_lever_high = side == ClockSide::Right;
        }
        self.at_us = now_us;
    }

    /// A set-and-run command: times and the side to count down (none: stopped
    /// until a press). The lever is where the players left it: a set moves no
    /// lever, so it never looks like a press.
    pub fn set_and_run(
        &mut self,
        left: ClockTime,
        right: ClockTime,
        running: Option<ClockSide>,
        now_us: u64,
    ) {
        let lever = self.right_lever_high;
        self.set(left, right, running, now_us);
        self.right_lever_high = lever;
    }

    /// Whether a report shows what this clock shows at `now_us` (whole seconds,
    /// the running side and the lever): a report that does is no news, and the
    /// fractions of seconds the model keeps stand.
    pub fn shows(&self, status: &ClockStatus, now_us: u64) -> bool {
        let mine = self.status(now_us);
        let secs = |t: ClockTime| t.millis() / 1000;
        secs(mine.left) == secs(status.left)
            && secs(mine.right) == secs(status.right)
            && mine.running_side() == status.running_side()
            && mine.right_lever_high == status.right_lever_high
            && mine.left_flags.fallen == status.left_flags.fallen
            && mine.right_flags.fallen == status.right_flags.fallen
    }

    /// Stops the clock, keeping the times.
    pub fn stop(&mut self, now_us: u64) {
        self.advance(now_us);
        self.running = None;
    }

    pub fn running(&self) -> Option<ClockSide> {
        self.running
    }

    /// The status the clock would report at `now_us`.
    pub fn status(&self, now_us: u64) -> ClockStatus {
        let mut c = *self;
        c.advance(now_us);
        let mut s = ClockStatus::new(c.left, c.right, c.running, c.right_lever_high);
        s.left_flags.fallen = c.fallen == Some(ClockSide::Left);
        s.right_flags.fallen = c.fallen == Some(ClockSide::Right);
        s
    }

    /// When the displayed (whole-second) time next changes, if the clock runs.
    pub fn next_change_us(&self, now_us: u64) -> Option<u64> {
        let side = self.running?;
        let mut c = *self;
        c.advance(now_us);
        let t = match side {
            ClockSide::Left => c.left,
            ClockSide::Right => c.right,
        };
        if t.millis() == 0 {
            return None;
        }
        // The display shows whole seconds rounded down (5:00 becomes 4:59 as soon as
        // the clock starts), so it changes one millisecond after the time reaches a
        // whole second.
        let to_next = t.millis() % 1000 + 1;
        Some(c.at_us + u64::from(to_next) * 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u32) -> ClockTime {
        ClockTime::from_millis(s * 1000)
    }

    #[test]
    fn counts_down_the_running_side_and_presses_switch() {
        let mut c = ClockModel::new(t(300), t(300), 0);
        c.press(ClockSide::Right, 0); // black presses: left (white) runs
        assert_eq!(c.running(), Some(ClockSide::Left));
        let s = c.status(2_500_000);
        assert_eq!((s.left.millis(), s.right.millis()), (297_500, 300_000));
        assert!(!s.right_lever_high);
        c.press(ClockSide::Left, 2_500_000);
        let s = c.status(4_000_000);
        assert_eq!((s.left.millis(), s.right.millis()), (297_500, 298_500));
        assert!(s.right_lever_high);
        assert_eq!(s.running_side(), Some(ClockSide::Right));
        // Pressing the lever that is already down does nothing.
        c.press(ClockSide::Left, 4_000_000);
        assert_eq!(c.running(), Some(ClockSide::Right));
    }

    #[test]
    fn an_xl_gets_six_segment_characters_in_its_order() {
        let ClockCommand::Display { segments, beep, .. } = segments("Nf3", false) else {
            panic!("not a display command")
        };
        // N f 3 in positions A B C; D E F blank.
        assert_eq!(segments, [0x4f, 0x71, 0x54, 0, 0, 0]);
        assert_eq!(beep, 0x01);
    }

    #[test]
    fn a_clock_never_set_has_no_flag_to_fall() {
        let mut c = ClockModel::new(t(0), t(0), 0);
        c.press(ClockSide::Left, 0);
        let s = c.status(5_000_000);
        assert!(!s.left_flags.fallen && !s.right_flags.fallen);
    }

    #[test]
    fn flag_falls_at_zero_and_ticks_on_seconds() {
        let mut c = ClockModel::new(t(2), t(2), 0);
        c.press(ClockSide::Right, 0);
        // 0:00:02 shows 0:00:01 after one millisecond, then 0:00:00 after 1.001 s.
        assert_eq!(c.next_change_us(0), Some(1_000));
        assert_eq!(c.next_change_us(400_000), Some(1_001_000));
        let s = c.status(5_000_000);
        assert_eq!(s.left.millis(), 0);
        assert!(s.left_flags.fallen && !s.right_flags.fallen);
        c.advance(5_000_000);
        assert_eq!(c.next_change_us(5_000_000), None);
    }
}
