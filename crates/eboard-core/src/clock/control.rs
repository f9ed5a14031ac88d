//! Time controls: what `SetTimeControl` and `[clock] time_control` accept, and the
//! PGN `TimeControl` tag they become.
//!
//! Accepted forms:
//! - the PGN `TimeControl` syntax, in seconds: `5400+30`, `40/5400+30:1800+30`,
//!   `300+2`, `180`, `*180` (sandclock); periods separated by `:`;
//! - the forms of event regulations, in minutes: `90+30`, `3+2`,
//!   `40/90+30,30+30` (periods separated by `,`), `G/90` (game in 90 minutes);
//! - `H:MM:SS` (one period, no bonus);
//! - a delay instead of an increment: `dN` (US or simple delay, as in US Chess's
//!   `G/90;d5`) or `bN` (Bronstein delay), N seconds, with or without a `;` before.
//!
//! A single period without `,`, `:` or `G/` is in minutes when its base is under
//! 180 (no one plays a 90-second game with a 30-second increment), otherwise in
//! seconds; the PGN form shown back (`TimeControl`) says how it was read.

use std::fmt;

/// The most a DGT 3000 shows (9:59:59), in ms.
pub const MAX_SHOWN_MS: u64 = 35_999_000;

/// What a side gets for each move, besides its base time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bonus {
    None,
    /// Fischer: this much added after each completed move.
    Increment(u64),
    /// Bronstein: the time used, up to this much, given back after each move.
    Bronstein(u64),
    /// US (simple) delay: the clock waits this long before counting down.
    Delay(u64),
}

/// One period: `moves` moves (none: the rest of the game) in `base_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub moves: Option<u32>,
    pub base_ms: u64,
    pub bonus: Bonus,
}

/// The forms a time control takes, for an error to show.
pub const FORMS: &str = "write it as 90+30 (minutes + seconds a move), 5400+30 (seconds), \
40/90+30:30+30 (periods: moves/time, then the rest), 90d5 (US delay), 90b5 (Bronstein), \
*300 (sandclock) or 1:30:00";

/// A time control: periods, or a sandclock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeControl {
    pub periods: Vec<Period>,
    /// Sandclock (PGN `*N`): the time one side uses goes to the other.
    pub sandclock: bool,
}

/// Why a time control does not read: what is wrong, and the forms it takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TimeControlError(pub String);

impl TimeControl {
    /// Parses a time control in any accepted form.
    pub fn parse(spec: &str) -> Result<TimeControl, TimeControlError> {
        let spec = spec.trim();
        let shown = crate::text::clip_to(spec, 40);
        let bad = |why: &str| TimeControlError(format!("`{shown}` is not a time control ({why}); {FORMS}"));
        if spec.is_empty() {
            return Err(bad("it is empty"));
        }
        if !spec.is_ascii() {
            return Err(bad("unexpected characters"));
        }
        let tc = if let Some(s) = spec.strip_prefix('*') {
            let secs = number(s).ok_or_else(|| bad("`*` is followed by the sandclock's seconds"))?;
            TimeControl {
                periods: vec![Period {
                    moves: None,
                    base_ms: secs * 1000,
                    bonus: Bonus::None,
                }],
                sandclock: true,
            }
        } else if let Some(ms) = hms(spec) {
            TimeControl {
                periods: vec![Period {
                    moves: None,
                    base_ms: ms,
                    bonus: Bonus::None,
                }],
                sandclock: false,
            }
        } else {
            let (parts, minutes): (Vec<&str>, Option<bool>) = if spec.contains(',') {
                (spec.split(',').collect(), Some(true))
            } else if spec.contains(':') {
                (spec.split(':').collect(), Some(false))
            } else {
                (vec![spec], None)
            };
            let mut periods = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                let p = period(part.trim(), minutes).map_err(|why| bad(&why.0))?;
                if p.moves.is_none() && i + 1 < parts.len() {
                    return Err(bad("only the last period may be without a move count"));
                }
                periods.push(p);
            }
            TimeControl {
                periods,
                sandclock: false,
            }
        };
        let total: u64 = tc.periods.iter().map(|p| p.base_ms).sum();
        if tc.periods.iter().any(|p| p.base_ms == 0) {
            return Err(TimeControlError(format!("`{shown}`: a period of no time")));
        }
        if total > MAX_SHOWN_MS {
            return Err(TimeControlError(format!(
                "`{shown}`: {} in all, and the DGT 3000 shows at most 9:59:59",
                hms_text(total)
            )));
        }
        Ok(tc)
    }

    /// The PGN `TimeControl` tag (seconds); a delay, which PGN has no syntax for,
    /// as `dN` (US) or `bN` (Bronstein) after the base.
    pub fn pgn(&self) -> String {
        if self.sandclock {
            return format!("*{}", self.periods[0].base_ms / 1000);
        }
        let periods: Vec<String> = self
            .periods
            .iter()
            .map(|p| {
                let mut s = String::new();
                if let Some(m) = p.moves {
                    s.push_str(&format!("{m}/"));
                }
                s.push_str(&secs_text(p.base_ms));
                match p.bonus {
                    Bonus::None => {}
                    Bonus::Increment(ms) => s.push_str(&format!("+{}", secs_text(ms))),
                    Bonus::Delay(ms) => s.push_str(&format!("d{}", secs_text(ms))),
                    Bonus::Bronstein(ms) => s.push_str(&format!("b{}", secs_text(ms))),
                }
                s
            })
            .collect();
        periods.join(":")
    }

    /// The period a side plays in after `moves` completed moves, and the moves
    /// made in it. A last period with a move count repeats (PGN `40/9000:40/9000`
    /// style controls).
    pub fn period_at(&self, moves: u32) -> (usize, u32) {
        let mut start = 0u32;
        for (i, p) in self.periods.iter().enumerate() {
            match p.moves {
                Some(n) if moves >= start + n => {
                    if i + 1 == self.periods.len() {
                        // The last period repeats.
                        let into = (moves - start) % n.max(1);
                        return (i, into);
                    }
                    start += n;
                }
                _ => return (i, moves - start),
            }
        }
        (self.periods.len() - 1, 0)
    }

    /// The time a side receives on completing its `moves`-th move because a new
    /// period starts (0 when none does).
    pub fn period_added_ms(&self, moves: u32) -> u64 {
        if moves == 0 {
            return 0;
        }
        let (before, _) = self.period_at(moves - 1);
        let (now, into) = self.period_at(moves);
        if into == 0 && (now != before || self.periods[now].moves.is_some()) {
            self.periods[now].base_ms
        } else {
            0
        }
    }
}

impl fmt::Display for TimeControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pgn())
    }
}

/// `[moves/]base[+inc|dN|bN]` (or `G/base...`), in minutes or seconds.
fn period(s: &str, minutes: Option<bool>) -> Result<Period, TimeControlError> {
    let (s, game) = match s.strip_prefix("G/").or_else(|| s.strip_prefix("g/")) {
        Some(rest) => (rest, true),
        None => (s, false),
    };
    let (moves, rest) = match s.split_once('/') {
        Some(_) if game => {
            return Err(TimeControlError(
                "`G/` is a game's last period, without a move count".into(),
            ));
        }
        Some((m, rest)) => {
            let n = number(m).ok_or_else(|| TimeControlError(format!("`{m}` is not a move count")))?;
            if n == 0 || n > 1000 {
                return Err(TimeControlError(format!("{n} moves in a period")));
            }
            (Some(n as u32), rest)
        }
        None => (None, s),
    };
    let rest = rest.replace(';', "");
    let split = rest.find(['+', 'd', 'b']);
    let (base, bonus) = match split {
        Some(i) => (&rest[..i], Some((&rest[i..i + 1], &rest[i + 1..]))),
        None => (&rest[..], None),
    };
    let base_n = number(base).ok_or_else(|| {
        TimeControlError(if base.is_empty() {
            "no base time".to_string()
        } else {
            format!("`{base}` is not a base time")
        })
    })?;
    let minutes = minutes.unwrap_or(game || base_n < 180);
    let base_ms = base_n * if minutes { 60_000 } else { 1000 };
    let bonus = match bonus {
        None => Bonus::None,
        Some((kind, n)) => {
            let secs =
                number(n).ok_or_else(|| TimeControlError(format!("`{n}` is not a number of seconds")))?;
            if secs > 600 {
                return Err(TimeControlError(format!("{secs} s a move")));
            }
            let ms = secs * 1000;
            match kind {
                "+" => Bonus::Increment(ms),
                "d" => Bonus::Delay(ms),
                _ => Bonus::Bronstein(ms),
            }
        }
    };
    Ok(Period {
        moves,
        base_ms,
        bonus,
    })
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 6 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `H:MM:SS` (one or two digits of hours).
fn hms(s: &str) -> Option<u64> {
    let (h, rest) = s.split_once(':')?;
    let b = rest.as_bytes();
    if h.len() > 2 || b.len() != 5 || b[2] != b':' {
        return None;
    }
    let h = number(h)?;
    let m = number(&rest[..2])?;
    let sec = number(&rest[3..])?;
    (m < 60 && sec < 60).then_some(((h * 60 + m) * 60 + sec) * 1000)
}

fn secs_text(ms: u64) -> String {
    if ms % 1000 == 0 {
        (ms / 1000).to_string()
    } else {
        format!("{:.1}", ms as f64 / 1000.0)
    }
}

/// `H:MM:SS`.
pub fn hms_text(ms: u64) -> String {
    let s = ms / 1000;
    format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pgn(s: &str) -> String {
        TimeControl::parse(s).unwrap().pgn()
    }

    #[test]
    fn pgn_and_event_forms() {
        assert_eq!(pgn("5400+30"), "5400+30");
        assert_eq!(pgn("90+30"), "5400+30");
        assert_eq!(pgn("3+2"), "180+2");
        assert_eq!(pgn("300+2"), "300+2");
        assert_eq!(pgn("600"), "600");
        assert_eq!(pgn("90"), "5400");
        assert_eq!(pgn("40/5400+30:1800+30"), "40/5400+30:1800+30");
        assert_eq!(pgn("40/90+30,30+30"), "40/5400+30:1800+30");
        assert_eq!(pgn("G/90;d5"), "5400d5");
        assert_eq!(pgn("90 b10".replace(' ', "").as_str()), "5400b10");
        assert_eq!(pgn("*180"), "*180");
        assert_eq!(pgn("0:05:30"), "330");
        assert_eq!(pgn("40/7200:20/3600:1800"), "40/7200:20/3600:1800");
    }

    #[test]
    fn refuses_what_the_clock_cannot_show() {
        for (spec, says) in [
            ("10:00:00", "9:59:59"),
            ("600+0:40/36000", "only the last"),
            ("40/300,300", "9:59:59"),
            ("36000", "9:59:59"),
            ("0", "no time"),
            ("", "empty"),
            ("soon", "base time"),
            ("90+x", "seconds"),
            ("0/90", "moves"),
            ("90+3600", "s a move"),
            ("G/40/90", "G/"),
            ("9:59:59", ""),
        ] {
            match TimeControl::parse(spec) {
                Ok(_) => assert!(says.is_empty(), "{spec} accepted"),
                Err(e) => assert!(e.0.contains(says), "{spec}: {e}"),
            }
        }
    }

    #[test]
    fn periods_follow_the_move_count() {
        let tc = TimeControl::parse("40/5400+30:1800+30").unwrap();
        assert_eq!(tc.period_at(0), (0, 0));
        assert_eq!(tc.period_at(39), (0, 39));
        assert_eq!(tc.period_at(40), (1, 0));
        assert_eq!(tc.period_at(55), (1, 15));
        assert_eq!(tc.period_added_ms(39), 0);
        assert_eq!(tc.period_added_ms(40), 1_800_000);
        assert_eq!(tc.period_added_ms(41), 0);
        let repeating = TimeControl::parse("40/7200:20/3600").unwrap();
        assert_eq!(repeating.period_added_ms(40), 3_600_000);
        assert_eq!(repeating.period_added_ms(60), 3_600_000);
        assert_eq!(repeating.period_added_ms(80), 3_600_000);
        assert_eq!(repeating.period_at(70), (1, 10));
        assert_eq!(TimeControl::parse("300+2").unwrap().period_added_ms(40), 0);
    }
}
