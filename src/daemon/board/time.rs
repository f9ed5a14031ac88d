//! A board task's time: log time (microseconds) from the task's start, scaled
//! for `demo --speed`, and the time the rules core was last given, which never
//! goes back.

use std::time::{Duration, Instant};

/// The task's log time and the rules core's.
#[derive(Debug)]
pub(super) struct TaskTime {
    /// Microseconds of log time at `started` (a resumed journal goes on from
    /// its last record).
    offset_us: u64,
    started: Instant,
    /// Game time per wall-clock time (1 but in `demo --speed`).
    scale: f64,
    /// The latest time the rules core was given.
    core_t: u64,
}

impl TaskTime {
    pub(super) fn new(offset_us: u64, scale: f64) -> TaskTime {
        TaskTime {
            offset_us,
            started: Instant::now(),
            scale,
            core_t: offset_us,
        }
    }

    /// Log time now.
    pub(super) fn now_us(&self) -> u64 {
        self.offset_us + self.game_us(self.started.elapsed())
    }

    /// A wall-clock duration in game time (microseconds).
    fn game_us(&self, d: Duration) -> u64 {
        if self.scale == 1.0 {
            d.as_micros() as u64
        } else {
            (d.as_secs_f64() * self.scale * 1e6) as u64
        }
    }

    /// Game time (microseconds) as a wall-clock duration.
    pub(super) fn wall(&self, us: u64) -> Duration {
        if self.scale == 1.0 {
            Duration::from_micros(us)
        } else {
            Duration::from_secs_f64(us as f64 / 1e6 / self.scale)
        }
    }

    /// Now, for the rules core: never before a time it was already given.
    pub(super) fn core_now(&mut self) -> u64 {
        self.given(self.now_us())
    }

    /// The time of bytes read at `at`, for the rules core and the journal: when
    /// they were read, unless the core has already been told of a later time
    /// (a deadline handled while they waited), since its time never goes back.
    pub(super) fn read_time(&mut self, at: Instant) -> u64 {
        self.given(self.offset_us + self.game_us(at.saturating_duration_since(self.started)))
    }

    /// The rules core is given `t`, or the later time it already had: which.
    pub(super) fn given(&mut self, t: u64) -> u64 {
        self.core_t = self.core_t.max(t);
        self.core_t
    }
}
