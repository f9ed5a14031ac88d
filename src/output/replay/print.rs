//! The formats `replay` prints: events as text or JSON lines, games as UCI or
//! PGN.

use std::fmt::Write;

use shakmaty::{CastlingMode, Chess, Position};

use super::{CHUNK, Made, Print};
use crate::rules::{Event, EventKind, Game};

/// Prints what the rules core made: events as lines, or games as PGN or UCI.
pub(super) struct Printer {
    pub(super) print: Print,
    pub(super) date: String,
    /// What is printed so far, in chunks of about [`CHUNK`] bytes (never
    /// copied to grow), then the chunk being filled.
    pub(super) out: Vec<Vec<u8>>,
    pub(super) chunk: Vec<u8>,
    pub(super) line: String,
}

impl Printer {
    /// Prints what was made and sends it back to be freed by the side that
    /// made it (unless that side is done).
    pub(super) fn print(&mut self, made: &Made) {
        match made {
            Made::Events(events) => {
                for e in events {
                    if self.print == Print::Text {
                        self.line.clear();
                        text_line(&mut self.line, e);
                        self.chunk.extend_from_slice(self.line.as_bytes());
                    } else {
                        // Serialising plain data to memory cannot fail.
                        let _ = serde_json::to_writer(&mut self.chunk, e);
                        self.chunk.push(b'\n');
                    }
                }
            }
            Made::Games(games) => {
                let text = match self.print {
                    Print::Uci => uci(games.iter()),
                    _ => pgn(games.iter(), &self.date),
                };
                self.chunk.extend_from_slice(text.as_bytes());
            }
        }
        if self.chunk.len() >= CHUNK {
            let next = Vec::with_capacity(CHUNK + CHUNK / 2);
            self.out.push(std::mem::replace(&mut self.chunk, next));
        }
    }
}

pub fn jsonl(events: &[Event]) -> String {
    let mut s = String::new();
    for e in events {
        // Serialising plain data to a string cannot fail.
        let _ = writeln!(s, "{}", serde_json::to_string(e).unwrap_or_default());
    }
    s
}

pub fn uci<'a>(games: impl Iterator<Item = &'a Game>) -> String {
    let mut s = String::new();
    for g in games {
        let _ = writeln!(s, "# game {}", g.number);
        for m in &g.moves {
            let _ = writeln!(s, "{}", m.uci);
        }
    }
    s
}

/// A clock reading, `H:MM:SS`.
pub fn clk(ms: u64) -> String {
    let secs = ms / 1000;
    format!("{}:{:02}:{:02}", secs / 3600, (secs / 60) % 60, secs % 60)
}

/// The seven tag roster's values for one game (the rest of the tags come from it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Tags {
    pub event: String,
    pub site: String,
    pub date: String,
    pub round: String,
    pub white: String,
    pub black: String,
    /// The tags a broadcast uses besides the seven (`Board`, and the pairing's
    /// `WhiteElo`, `BlackFideId`, ...: [`EXTRA_TAGS`]), written in that order.
    /// Absent from older journals' notes: none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub extra: std::collections::BTreeMap<String, String>,
}

/// The tags besides the seven tag roster that a game's PGN may carry, in the
/// order it writes them: the board number, then the pairing's (what tournament
/// programs export and broadcasts read: lichess takes photos and ratings from the
/// FIDE ids).
pub const EXTRA_TAGS: [&str; 9] = [
    "Board",
    "WhiteTitle",
    "BlackTitle",
    "WhiteElo",
    "BlackElo",
    "WhiteFideId",
    "BlackFideId",
    "WhiteTeam",
    "BlackTeam",
];

impl Tags {
    pub fn unknown(date: &str) -> Tags {
        Tags {
            event: "?".into(),
            site: "?".into(),
            date: date.into(),
            round: "?".into(),
            white: "?".into(),
            black: "?".into(),
            extra: Default::default(),
        }
    }
}

/// A PGN tag value: backslashes and quotes escaped (PGN standard 8.1.1).
fn tag_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Standard PGN: the seven tag roster, `[%clk]` comments when a clock reported.
pub fn pgn<'a>(games: impl Iterator<Item = &'a Game>, date: &str) -> String {
    games.map(|g| game_pgn(g, &Tags::unknown(date))).collect()
}

/// A digest of everything [`game_pgn`] reads of `g` and `tags`: equal digests,
/// the same PGN. A board publishes on every clock report and touch; this lets
/// it skip building a PGN that cannot have changed (a few lookups and no
/// allocation instead of formatting the whole game).
pub fn game_pgn_digest(g: &Game, tags: &Tags) -> u64 {
    use std::hash::{Hash, Hasher};
    // FNV: a few hundred bytes of short fields, hashed fast (SipHash, the
    // default, cost more than the rest of the call).
    let mut h = fnv::FnvHasher::default();
    tags.hash(&mut h);
    g.result.hash(&mut h);
    g.termination_words.hash(&mut h);
    matches!(g.mode, CastlingMode::Chess960).hash(&mut h);
    g.start_fen.hash(&mut h);
    g.time_control.hash(&mut h);
    g.clocks.hash(&mut h);
    g.moves.len().hash(&mut h);
    for m in &g.moves {
        m.san.hash(&mut h);
        m.inferred.hash(&mut h);
        m.clk_ms.hash(&mut h);
        m.emt_ms.hash(&mut h);
    }
    h.finish()
}

/// One game in PGN with the given tags.
pub fn game_pgn(g: &Game, tags: &Tags) -> String {
    let mut s = String::new();
    {
        let result = g.result.map_or("*", |(r, _)| r.as_str());
        for (tag, value) in [
            ("Event", tags.event.as_str()),
            ("Site", tags.site.as_str()),
            ("Date", tags.date.as_str()),
            ("Round", tags.round.as_str()),
            ("White", tags.white.as_str()),
            ("Black", tags.black.as_str()),
            ("Result", result),
        ] {
            let _ = writeln!(s, "[{tag} \"{}\"]", tag_value(value));
        }
        for tag in EXTRA_TAGS {
            if let Some(v) = tags.extra.get(tag).filter(|v| !v.is_empty()) {
                let _ = writeln!(s, "[{tag} \"{}\"]", tag_value(v));
            }
        }
        if g.mode == CastlingMode::Chess960 {
            let _ = writeln!(s, "[Variant \"Chess960\"]");
        }
        let standard_start = g.start_fen == crate::rules::game_fen(&Chess::default());
        if !standard_start {
            let _ = writeln!(s, "[SetUp \"1\"]\n[FEN \"{}\"]", g.start_fen);
        }
        if let Some((_, termination)) = g.result {
            match &g.termination_words {
                Some(words) => {
                    let _ = writeln!(s, "[Termination \"{}\"]", tag_value(words));
                }
                None => {
                    let _ = writeln!(s, "[Termination \"{termination}\"]");
                }
            }
        }
        if let Some(tc) = &g.time_control {
            let _ = writeln!(s, "[TimeControl \"{}\"]", tag_value(tc));
        }
        if let Some((w, b)) = g.clocks {
            let _ = writeln!(s, "[WhiteClock \"{}\"]\n[BlackClock \"{}\"]", clk(w), clk(b));
        }
        s.push('\n');
        let mut line = String::new();
        let start = &g.positions[0];
        let first_black = start.turn().is_black();
        let mut number = u32::from(start.fullmoves());
        for (i, m) in g.moves.iter().enumerate() {
            let white_to_move = (i % 2 == 0) != first_black;
            let mut token = String::new();
            if white_to_move {
                let _ = write!(token, "{number}. ");
            } else if i == 0 {
                let _ = write!(token, "{number}... ");
            }
            token.push_str(&m.san);
            if m.inferred {
                token.push_str(" {inferred}");
            }
            match (m.clk_ms, m.emt_ms) {
                (Some(c), Some(e)) => {
                    let _ = write!(token, " {{ [%clk {}] [%emt {}] }}", clk(c), clk(e));
                }
                (Some(c), None) => {
                    let _ = write!(token, " {{ [%clk {}] }}", clk(c));
                }
                _ => {}
            }
            if !white_to_move {
                number += 1;
            }
            if !line.is_empty() && line.len() + token.len() + 1 > 79 {
                let _ = writeln!(s, "{line}");
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&token);
        }
        if !line.is_empty() && line.len() + result.len() + 1 > 79 {
            let _ = writeln!(s, "{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(result);
        let _ = writeln!(s, "{line}\n");
    }
    s
}

pub(super) fn seconds_3(s: &mut String, us: u64) {
    if us >= 1_000_000_000_000 || us % 1000 == 500 {
        // Half a millisecond is rounded as the float's format rounds the
        // seconds (by their binary value), as the output always had it.
        let t = us as f64 / 1e6;
        let _ = write!(s, "{t:>9.3}");
        return;
    }
    // The whole seconds right-aligned in 5, then the point and 3 digits: at
    // least 9 characters, as the float's format gives.
    let ms = (us + 500) / 1000;
    let _ = write!(s, "{:>5}.{:03}", ms / 1000, ms % 1000);
}

/// For a person: what happens, with times.
pub fn text(events: &[Event]) -> String {
    let mut s = String::new();
    for e in events {
        text_line(&mut s, e);
    }
    s
}

/// One event's line of [`text`], appended to `s`.
fn text_line(s: &mut String, e: &Event) {
    seconds_3(s, e.t_us);
    s.push_str("  ");
    let _ = match &e.kind {
        EventKind::GameStart {
            game,
            fen,
            variant,
            orientation,
        } => {
            write!(s, "game {game} starts ({variant}, board {orientation}): {fen}")
        }
        EventKind::Touch {
            side,
            square,
            piece,
            first,
            returned,
        } => write!(
            s,
            "{} touches {} on {square}{}{}",
            side.name(),
            piece.char(),
            if *first { " (first)" } else { "" },
            if *returned { ", puts it back" } else { "" }
        ),
        EventKind::Move {
            ply,
            san,
            side,
            inferred,
            ..
        } => {
            let n = ply.div_ceil(2);
            let how = if *inferred {
                " (inferred across a gap in the line)"
            } else {
                ""
            };
            if side.name() == "white" {
                write!(s, "{n}. {san}{how}")
            } else {
                write!(s, "{n}... {san}{how}")
            }
        }
        EventKind::MoveAmended {
            ply,
            was,
            san,
            inferred,
            ..
        } => write!(
            s,
            "ply {ply} amended: {was} becomes {san}{}",
            if *inferred {
                " (seen across a gap in the line)"
            } else {
                ""
            }
        ),
        EventKind::MoveCompleted { ply, side } => write!(s, "{} completes ply {ply}", side.name()),
        EventKind::Takeback { to_ply, fen } => write!(s, "take-back to ply {to_ply}: {fen}"),
        EventKind::TouchMove {
            article,
            side,
            touched,
            played,
        } => write!(
            s,
            "touch-move (Art. {article}): {} touched {} and played {played}",
            side.name(),
            crate::rules::joined(touched)
        ),
        EventKind::Irregular {
            kind,
            side,
            squares,
            completed,
            count,
            penalty,
            board,
            ply,
        } => {
            let _ = write!(s, "irregular: {} by {}", kind.name(), side.name());
            if let Some(p) = ply {
                let _ = write!(s, " from ply {p}");
            }
            if !squares.is_empty() {
                let _ = write!(s, " on {}", crate::rules::joined(squares));
            }
            if *completed {
                let _ = write!(s, ", completed (violation {count} of {})", side.name());
            }
            if let Some(p) = penalty {
                let _ = write!(s, "\n        penalty: {p}");
            }
            match board {
                Some(b) => write!(s, "\n        board seen: {b}"),
                None => Ok(()),
            }
        }
        EventKind::Resolved { fen } => write!(s, "resolved: {fen}"),
        EventKind::Clock {
            white_ms,
            black_ms,
            running,
        } => {
            write!(
                s,
                "clock white {} black {} ({} running)",
                clk(*white_ms),
                clk(*black_ms),
                crate::rules::running_str(*running)
            )
        }
        EventKind::DrawClaimable { reason } => write!(s, "draw claimable: {reason}"),
        EventKind::Flag {
            side,
            ply,
            period_moves,
            count_met,
        } => write!(
            s,
            "flag: {}'s flag has fallen after ply {ply} ({period_moves} moves made in the period{}); the arbiter decides (Art. 6.8)",
            side.name(),
            if *count_met { ", the move count is met" } else { "" }
        ),
        EventKind::GameEnd { result, termination } => write!(s, "game ends {result} ({termination})"),
        EventKind::ClockButton { button } => write!(s, "clock button: {button}"),
        EventKind::ClockUnresponsive { command } => write!(s, "the clock did not acknowledge {command}"),
        // The decision as its record holds it (`docs/INTERFACES.md`).
        EventKind::Arbiter { decision, by } => {
            let args: Vec<String> = decision.args().iter().map(ToString::to_string).collect();
            let by = by.as_ref().map(|b| format!(" (by {b})")).unwrap_or_default();
            write!(s, "arbiter: {} {}{by}", decision.method(), args.join(" "))
        }
    };
    s.push('\n');
}
