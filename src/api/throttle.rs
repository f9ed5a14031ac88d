//! Repeated errors, said once a minute: a disk that stays full or a folder that
//! cannot be written must not flood the journal with the same line hundreds of
//! times a minute, but must not go quiet either.

use std::time::{Duration, Instant};

/// How often the same error is said again.
pub const EVERY: Duration = Duration::from_secs(60);

#[derive(Debug, Default)]
pub struct Throttle {
    last: Option<Instant>,
    quiet: u64,
}

impl Throttle {
    /// `Some(n)` when the error is to be said now, `n` being how many times it was
    /// kept quiet since it was last said; `None` to keep quiet.
    pub fn allow(&mut self) -> Option<u64> {
        self.allow_at(Instant::now())
    }

    pub fn allow_at(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(l) if now.duration_since(l) < EVERY => {
                self.quiet += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.quiet))
            }
        }
    }

    /// The error is over: the next one is said at once.
    pub fn reset(&mut self) {
        self.last = None;
        self.quiet = 0;
    }
}

/// ` (and N more times)` for a message, when some were kept quiet.
pub fn more(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" (and {n} more times in the last minute)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn said_once_a_minute_with_the_count_kept_quiet() {
        let mut t = Throttle::default();
        let t0 = Instant::now();
        assert_eq!(t.allow_at(t0), Some(0));
        for s in 1..=30 {
            assert_eq!(t.allow_at(t0 + Duration::from_secs(s)), None);
        }
        assert_eq!(t.allow_at(t0 + Duration::from_secs(61)), Some(30));
        t.reset();
        assert_eq!(t.allow_at(t0 + Duration::from_secs(62)), Some(0));
    }
}
