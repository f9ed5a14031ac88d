//! What `ctl` reads as people write it (times, results) and what it prints (the
//! boards' table, the results; the events `ctl watch` prints are worded in
//! `client::watch`).

use std::collections::BTreeMap;
use std::fmt::Write;

/// The most time one call adds or takes: 10 hours (a clock shows at most 9:59:59).
pub const MAX_SECONDS: i64 = 36_000;

/// A time to add (or, with `-`, take): `120` (seconds), `+2m`, `-30s`, `1m30s`,
/// `1h`, `+1:30` (minutes and seconds), `0:02:00`. In seconds.
pub fn duration(text: &str) -> Result<i32, String> {
    let bad = || {
        format!(
            "`{}` is not a time: write seconds (`120`), with a unit (`+2m`, `-30s`, `1m30s`) or M:SS / H:MM:SS",
            crate::log::clip_to(text, 30)
        )
    };
    let t = text.trim();
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'+') => (1, &t[1..]),
        Some(b'-') => (-1, &t[1..]),
        _ => (1, t),
    };
    if rest.is_empty() {
        return Err(bad());
    }
    let secs = if rest.contains(':') {
        clock_seconds(rest).ok_or_else(bad)?
    } else if rest.bytes().all(|b| b.is_ascii_digit()) {
        rest.parse::<i64>().map_err(|_| bad())?
    } else {
        // Units: h, m, s, each at most once, in that order.
        let mut total: i64 = 0;
        let mut number = String::new();
        let mut last = 0;
        for c in rest.chars() {
            if c.is_ascii_digit() {
                number.push(c);
                if number.len() > 6 {
                    return Err(bad());
                }
                continue;
            }
            let (rank, unit) = match c {
                'h' => (1, 3600),
                'm' => (2, 60),
                's' => (3, 1),
                _ => return Err(bad()),
            };
            if number.is_empty() || rank <= last {
                return Err(bad());
            }
            last = rank;
            total += number.parse::<i64>().map_err(|_| bad())? * unit;
            number.clear();
        }
        if !number.is_empty() {
            return Err(bad());
        }
        total
    };
    if secs > MAX_SECONDS {
        return Err(format!(
            "`{text}` is more than 10 hours: a clock shows at most 9:59:59"
        ));
    }
    Ok((sign * secs) as i32)
}

/// `H:MM:SS` or `M:SS` in seconds (minutes and seconds under 60 after the first).
fn clock_seconds(text: &str) -> Option<i64> {
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || p.len() > 4 || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let n: Vec<i64> = parts.iter().map(|p| p.parse().ok()).collect::<Option<_>>()?;
    if n.iter().skip(1).any(|v| *v >= 60) || parts.iter().skip(1).any(|p| p.len() != 2) {
        return None;
    }
    Some(n.iter().fold(0, |acc, v| acc * 60 + v))
}

/// A clock time to set, `H:MM:SS` (or `M:SS`), in ms. A bare number is
/// refused: `10` could be seconds, minutes or hours (issue 48: `set-clock 4 10 9`
/// set 0:00:10 and 0:00:09 without a word).
pub fn clock_ms(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let secs = Some(t)
        .filter(|t| t.contains(':'))
        .and_then(clock_seconds)
        .ok_or_else(|| {
            format!(
                "`{}` is not a clock time: write H:MM:SS or M:SS, as 1:30:00 or 5:00",
                crate::log::clip_to(text, 30)
            )
        })?;
    if secs > MAX_SECONDS - 1 {
        return Err(format!("`{text}`: a clock shows at most 9:59:59"));
    }
    Ok(secs * 1000)
}

/// A result as arbiters write it: `1-0`, `0-1`, `1/2` (or `1/2-1/2`, `½`), `*`.
pub fn result(text: &str) -> Result<String, String> {
    Ok(match text.trim() {
        "1-0" => "1-0",
        "0-1" => "0-1",
        "1/2" | "1/2-1/2" | "½" | "½-½" | "=" => "1/2-1/2",
        "*" => "*",
        other => {
            return Err(format!(
                "`{}` is not a result: 1-0, 0-1, 1/2 or * (quoted: '*')",
                crate::log::clip_to(other, 20)
            ));
        }
    }
    .to_string())
}

/// A clock reading, `H:MM:SS`.
pub fn clock(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    format!("{}:{:02}:{:02}", secs / 3600, (secs / 60) % 60, secs % 60)
}

/// One board as `ctl boards` shows it (the D-Bus properties that matter).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct BoardView {
    pub number: u32,
    pub id: String,
    pub path: String,
    pub serial: String,
    pub connected: bool,
    pub status: String,
    pub round: String,
    pub white: String,
    pub black: String,
    /// Plies played.
    pub moves: usize,
    /// The last move in SAN with its number (`12...Nf6`), or empty.
    pub last_move: String,
    pub white_clock_ms: i64,
    pub black_clock_ms: i64,
    pub clock_running: String,
    pub result: String,
    pub irregularity: String,
    pub time_control: String,
    pub tags: BTreeMap<String, String>,
    /// What went wrong with the board's task (the `Fault` property), or empty.
    pub fault: String,
    /// What needs the arbiter.
    pub needs: Vec<String>,
    /// The game as PGN (`ctl results --format pgn`; not in `boards --json`).
    #[serde(skip)]
    pub pgn: String,
    /// The moves in SAN (`ctl boards N`; not in `boards --json`).
    #[serde(skip)]
    pub sans: Vec<String>,
    /// The game on lichess, when its round is pushed there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lichess: Option<super::lichess::OnLichess>,
    /// The board's alerts the arbiters' console keeps (none without it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<super::alerts::AlertView>,
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The round's results as `ctl results` prints them: a table, CSV
/// (`board,white,black,result`) or the games' PGN. A game not over is `*`.
pub fn results(boards: &[BoardView], format: super::ResultsFormat) -> String {
    // The `Result` property is empty while the game goes on.
    let result = |b: &BoardView| {
        if !b.result.is_empty() {
            b.result.clone()
        } else {
            "*".to_string()
        }
    };
    let mut s = String::new();
    match format {
        super::ResultsFormat::Csv => {
            s.push_str("board,white,black,result\n");
            for b in boards {
                let _ = writeln!(
                    s,
                    "{},{},{},{}",
                    b.number,
                    csv_field(&b.white),
                    csv_field(&b.black),
                    result(b)
                );
            }
        }
        super::ResultsFormat::Pgn => {
            for b in boards {
                let pgn = b.pgn.trim_end();
                if !pgn.is_empty() {
                    let _ = write!(s, "{pgn}\n\n");
                }
            }
        }
        super::ResultsFormat::Text => {
            let mut rounds: Vec<&str> = boards
                .iter()
                .map(|b| b.round.as_str())
                .filter(|r| !r.is_empty())
                .collect();
            rounds.sort_unstable();
            rounds.dedup();
            if !rounds.is_empty() {
                let _ = writeln!(s, "round {}", rounds.join(", "));
            }
            let rows: Vec<[String; 4]> = boards
                .iter()
                .map(|b| {
                    let r = result(b);
                    let r = if b.result.is_empty() {
                        format!("* ({}, {} plies)", b.status, b.moves)
                    } else {
                        r
                    };
                    [b.number.to_string(), b.white.clone(), b.black.clone(), r]
                })
                .collect();
            let head = ["BOARD", "WHITE", "BLACK", "RESULT"].map(String::from);
            let mut width = head.clone().map(|h| h.chars().count());
            for r in &rows {
                for (w, c) in width.iter_mut().zip(r) {
                    *w = (*w).max(c.chars().count());
                }
            }
            for r in std::iter::once(&head).chain(&rows) {
                let line = format!(
                    "{:>w0$}  {:<w1$}  {:<w2$}  {}",
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    w0 = width[0],
                    w1 = width[1],
                    w2 = width[2]
                );
                let _ = writeln!(s, "{}", line.trim_end());
            }
        }
    }
    s
}

/// The last move of `sans` with its move number (`12. e4`, `12... e5`), from the
/// standard start's numbering (a game from a set position may number otherwise).
pub fn last_move(sans: &[String]) -> String {
    let Some(last) = sans.last() else {
        return String::new();
    };
    let ply = sans.len();
    let number = ply.div_ceil(2);
    if ply % 2 == 1 {
        format!("{number}. {last}")
    } else {
        format!("{number}... {last}")
    }
}

/// What needs the arbiter on a board: its task failed, away, irregular, a flag
/// down.
pub fn needs(b: &BoardView) -> Vec<String> {
    let mut out = Vec::new();
    if !b.fault.is_empty() {
        out.push(format!("fault: {}", b.fault));
    }
    if !b.connected {
        out.push("disconnected: check the board's cable and power".into());
    }
    if !b.irregularity.is_empty() {
        out.push(format!("irregular: {}", b.irregularity));
    }
    if b.status == "playing" && (b.white_clock_ms > 0 || b.black_clock_ms > 0) {
        for (side, ms) in [("white", b.white_clock_ms), ("black", b.black_clock_ms)] {
            if ms <= 0 {
                out.push(format!("flag: {side}'s time is up"));
            }
        }
    }
    out
}

/// A board's status in words: `waiting` for a game set up whose clock has
/// not been started and that has no move yet (D-Bus says `playing`: the game
/// is there), else the `Status` property.
pub fn status_words(b: &BoardView) -> &str {
    let started = b.moves > 0 || matches!(b.clock_running.as_str(), "white" | "black");
    if b.status == "playing" && !started {
        "waiting"
    } else {
        &b.status
    }
}

/// The boards as a table, one line a board.
pub fn table(boards: &[BoardView]) -> String {
    let rows: Vec<[String; 8]> = boards
        .iter()
        .map(|b| {
            let status = if b.result.is_empty() || b.status != "finished" {
                status_words(b).to_string()
            } else {
                format!("{} {}", b.status, b.result)
            };
            let clocks = if b.white_clock_ms == 0 && b.black_clock_ms == 0 && b.clock_running == "none" {
                "-".to_string()
            } else {
                let run = match b.clock_running.as_str() {
                    "white" => " <",
                    "black" => " >",
                    _ => "",
                };
                format!("{} {}{run}", clock(b.white_clock_ms), clock(b.black_clock_ms))
            };
            [
                b.number.to_string(),
                if b.round.is_empty() {
                    "-".into()
                } else {
                    b.round.clone()
                },
                b.id.clone(),
                format!("{} - {}", b.white, b.black),
                status,
                b.moves.to_string(),
                if b.last_move.is_empty() {
                    "-".into()
                } else {
                    b.last_move.clone()
                },
                clocks,
            ]
        })
        .collect();
    let head = [
        "BOARD", "ROUND", "ID", "PLAYERS", "STATUS", "PLIES", "LAST", "CLOCKS",
    ];
    let mut width = head.map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut s = String::new();
    let line = |s: &mut String, cells: &[String], needs: &str| {
        for (i, (c, w)) in cells.iter().zip(width).enumerate() {
            if i == 0 {
                let _ = write!(s, "{c:>w$}");
            } else {
                let _ = write!(s, "  {c:<w$}");
            }
        }
        let _ = writeln!(s, "  {needs}");
    };
    line(&mut s, &head.map(String::from), "NEEDS THE ARBITER");
    for (r, b) in rows.iter().zip(boards) {
        line(&mut s, r, &b.needs.join("; "));
    }
    // No padding after the last column.
    s.lines().map(|l| l.trim_end().to_string() + "\n").collect()
}

/// The local time of day, `HH:MM:SS`.
pub fn local_time() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    local_time_of(now)
}

/// The local time of day of `secs` since the epoch, `HH:MM:SS`.
pub fn local_time_of(secs: u64) -> String {
    local_date_time(secs).1
}

/// The local date and time of day of `secs` since the epoch (the machine's
/// time zone, as the arbiter's watch): (`2026-11-27`, `19:20:03`); UTC when the
/// time zone cannot be had.
pub fn local_date_time(secs: u64) -> (String, String) {
    let now = libc::time_t::try_from(secs).unwrap_or(0);
    // SAFETY: localtime_r writes only into `tm`.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            None
        } else {
            Some(tm)
        }
    };
    match tm {
        Some(tm) => (
            format!("{:04}-{:02}-{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday),
            format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec),
        ),
        None => {
            let s = now.rem_euclid(86_400);
            (
                "?".into(),
                format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_people_write_them() {
        assert_eq!(duration("120"), Ok(120));
        assert_eq!(duration("+2m"), Ok(120));
        assert_eq!(duration("-30s"), Ok(-30));
        assert_eq!(duration("1m30s"), Ok(90));
        assert_eq!(duration("1h"), Ok(3600));
        assert_eq!(duration("+1:30"), Ok(90));
        assert_eq!(duration("-0:02:00"), Ok(-120));
        for bad in [
            "", "+", "2x", "m", "30s2m", "1:75", "1:2", "99999999", "11h", "--2",
        ] {
            assert!(duration(bad).is_err(), "{bad}");
        }
        assert_eq!(clock_ms("1:30:00"), Ok(5_400_000));
        assert_eq!(clock_ms("5:00"), Ok(300_000));
        assert!(clock_ms("1:60:00").is_err());
        assert!(clock_ms("10:00:00").is_err());
        assert!(clock_ms("abc").is_err());
        assert_eq!(clock_ms("0:09"), Ok(9_000));
        for bare in ["10", "9", "90", " 5400 "] {
            let e = clock_ms(bare).unwrap_err();
            assert!(
                e.contains("write H:MM:SS or M:SS, as 1:30:00 or 5:00"),
                "{bare}: {e}"
            );
        }
    }

    #[test]
    fn results_as_arbiters_write_them() {
        assert_eq!(result("1/2").unwrap(), "1/2-1/2");
        assert_eq!(result("1-0").unwrap(), "1-0");
        assert_eq!(result("*").unwrap(), "*");
        assert!(result("1-1").is_err());
    }

    #[test]
    fn the_table_lines_up_and_says_what_needs_the_arbiter() {
        let mut b = BoardView {
            number: 12,
            id: "dgt_12345".into(),
            connected: true,
            status: "playing".into(),
            white: "Carlsen, Magnus".into(),
            black: "Ding, Liren".into(),
            moves: 3,
            last_move: last_move(&["e4".into(), "e5".into(), "Nf3".into()]),
            white_clock_ms: 0,
            black_clock_ms: 5_000_000,
            clock_running: "white".into(),
            irregularity: "displaced".into(),
            round: "3".into(),
            ..BoardView::default()
        };
        b.needs = needs(&b);
        let t = table(&[b]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[1].starts_with("   12  3      dgt_12345  Carlsen, Magnus - Ding, Liren  playing"),
            "{t}"
        );
        assert!(lines[1].contains("2. Nf3"), "{t}");
        assert!(lines[1].contains("0:00:00 1:23:20 <"), "{t}");
        assert!(
            lines[1].ends_with("irregular: displaced; flag: white's time is up"),
            "{t}"
        );
    }
}
