//! `replay --format text|jsonl|uci|pgn`: sensor logs through the rules core.

use std::fmt::Write;

use shakmaty::{CastlingMode, Chess, Position};

use crate::log::{LogError, Played, Player, SensorLog};
use crate::rules::{Config, Core, Event, EventKind, Game};

/// The result of replaying logs: the events and the games.
pub struct Replay {
    pub events: Vec<Event>,
    pub core: Core,
}

/// Runs one log through the decoder and the rules core.
pub fn run(
    log: &SensorLog,
    file: &str,
    cfg: Config,
    start: Option<(Chess, CastlingMode)>,
) -> Result<Replay, LogError> {
    let mut core = match start {
        Some((pos, mode)) => Core::with_start(cfg, pos, mode),
        None => Core::new(cfg),
    };
    let mut player = Player::new(file);
    let mut events = Vec::new();
    let feed = |core: &mut Core, steps: Vec<crate::log::Step>| {
        for step in &steps {
            feed_step(core, step);
        }
    };
    for (i, record) in log.records.iter().enumerate() {
        let steps = player.play(record, log.line_of(i))?;
        feed(&mut core, steps);
        events.extend(core.take_events());
    }
    let steps = player.finish();
    feed(&mut core, steps);
    core.finish();
    events.extend(core.take_events());
    Ok(Replay { events, core })
}

/// Hands one played step to the rules core, as the daemon does live: board events
/// as they are, a `gap` record as a gap in the line, and bytes the decoder had to
/// skip as a line fault (the daemon finds them in the same bytes, at the same
/// place).
pub fn feed_step(core: &mut Core, step: &crate::log::Step) {
    let t = step.time.micros();
    match &step.what {
        Played::Board(ev) => core.input(ev, t),
        Played::Gap(_) => core.gap(t),
        Played::Skipped(_) => core.line_fault(t),
        Played::Arbiter(method, args) => {
            // Only accepted calls are recorded; one that does not apply (a log
            // written by hand) changes nothing.
            let Some(values) = arbiter_values(args) else {
                return;
            };
            let applied = match crate::rules::Decision::from_record(method, &values) {
                Ok(Some(d)) => core.arbiter(&d, t).is_ok(),
                Ok(None) => true,
                Err(_) => false,
            };
            if applied {
                core.arbiter_call(method, values, t);
            }
        }
        Played::Host(_) | Played::Note(_) => {}
    }
}

/// An `arbiter` record's arguments as JSON values; `None` when one is not JSON
/// (a hand-written log: the call does not apply).
pub fn arbiter_values(args: &[String]) -> Option<Vec<serde_json::Value>> {
    args.iter().map(|a| serde_json::from_str(a).ok()).collect()
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tags {
    pub event: String,
    pub site: String,
    pub date: String,
    pub round: String,
    pub white: String,
    pub black: String,
}

impl Tags {
    pub fn unknown(date: &str) -> Tags {
        Tags {
            event: "?".into(),
            site: "?".into(),
            date: date.into(),
            round: "?".into(),
            white: "?".into(),
            black: "?".into(),
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

/// One game in PGN with the given tags.
pub fn game_pgn(g: &Game, tags: &Tags) -> String {
    let mut s = String::new();
    {
        let result = g.result.map_or("*", |(r, _)| r);
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
        if g.mode == CastlingMode::Chess960 {
            let _ = writeln!(s, "[Variant \"Chess960\"]");
        }
        let standard_start = g.start_fen == crate::rules::game_fen(&Chess::default());
        if !standard_start {
            let _ = writeln!(s, "[SetUp \"1\"]\n[FEN \"{}\"]", g.start_fen);
        }
        if let Some((_, termination)) = g.result {
            let _ = writeln!(s, "[Termination \"{termination}\"]");
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

/// For a person: what happens, with times.
pub fn text(events: &[Event]) -> String {
    let mut s = String::new();
    for e in events {
        let what = match &e.kind {
            EventKind::GameStart {
                game,
                fen,
                variant,
                orientation,
            } => {
                format!("game {game} starts ({variant}, board {orientation}): {fen}")
            }
            EventKind::Touch {
                side,
                square,
                piece,
                first,
                returned,
            } => format!(
                "{} touches {piece} on {square}{}{}",
                side.name(),
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
                    format!("{n}. {san}{how}")
                } else {
                    format!("{n}... {san}{how}")
                }
            }
            EventKind::MoveAmended {
                ply,
                was,
                san,
                inferred,
                ..
            } => format!(
                "ply {ply} amended: {was} becomes {san}{}",
                if *inferred {
                    " (seen across a gap in the line)"
                } else {
                    ""
                }
            ),
            EventKind::MoveCompleted { ply, side } => format!("{} completes ply {ply}", side.name()),
            EventKind::Takeback { to_ply, fen } => format!("take-back to ply {to_ply}: {fen}"),
            EventKind::TouchMove {
                article,
                side,
                touched,
                played,
            } => format!(
                "touch-move (Art. {article}): {} touched {} and played {played}",
                side.name(),
                touched.join(" ")
            ),
            EventKind::Irregular {
                kind,
                side,
                squares,
                completed,
                count,
                penalty,
                board,
            } => format!(
                "irregular: {} by {}{}{}{}{}",
                kind.name(),
                side.name(),
                if squares.is_empty() {
                    String::new()
                } else {
                    format!(" on {}", squares.join(" "))
                },
                if *completed {
                    format!(", completed (violation {count} of {})", side.name())
                } else {
                    String::new()
                },
                penalty
                    .as_deref()
                    .map(|p| format!("\n        penalty: {p}"))
                    .unwrap_or_default(),
                board
                    .as_deref()
                    .map(|b| format!("\n        board seen: {b}"))
                    .unwrap_or_default()
            ),
            EventKind::Resolved { fen } => format!("resolved: {fen}"),
            EventKind::Clock {
                white_ms,
                black_ms,
                running,
            } => {
                format!(
                    "clock white {} black {} ({running} running)",
                    clk(*white_ms),
                    clk(*black_ms)
                )
            }
            EventKind::DrawClaimable { reason } => format!("draw claimable: {reason}"),
            EventKind::Flag {
                side,
                ply,
                period_moves,
                count_met,
            } => format!(
                "flag: {}'s flag has fallen after ply {ply} ({period_moves} moves made in the period{}); the arbiter decides (Art. 6.8)",
                side.name(),
                if *count_met { ", the move count is met" } else { "" }
            ),
            EventKind::GameEnd { result, termination } => format!("game ends {result} ({termination})"),
            EventKind::ClockButton { button } => format!("clock button: {button}"),
            EventKind::ClockUnresponsive { command } => format!("the clock did not acknowledge {command}"),
            EventKind::Arbiter { method, args } => {
                let args: Vec<String> = args.iter().map(ToString::to_string).collect();
                format!("arbiter: {method} {}", args.join(" "))
            }
        };
        let _ = writeln!(s, "{:>9.3}  {what}", e.t);
    }
    s
}

/// A start position from a FEN (kept here for the callers of `replay`).
pub use crate::rules::parse_start;
