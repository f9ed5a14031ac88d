//! The demo's terminal view: the board, the clocks, the moves and what the
//! rules core said, drawn from the daemon's events and the board's snapshot.

use std::collections::VecDeque;

use crate::api::Snapshot;
use crate::output::replay::{self, clk};
use crate::rules::{Event, EventKind};

/// What the terminal shows besides the board's snapshot: the flags raised and the
/// latest events.
#[derive(Debug, Default)]
pub struct View {
    pub title: String,
    pub bus: String,
    /// Touch-move flags, irregularities and their resolutions, take-backs: all kept.
    pub flags: Vec<String>,
    /// The latest event lines.
    pub recent: VecDeque<String>,
    /// The latest clock reading: white's and black's time (ms).
    pub clock: Option<(u64, u64)>,
    /// A move completed, its line waiting for the clock report of the press that
    /// completed it (the rules core reports the press, then the times it came
    /// with: the move's `%clk`).
    pub(super) pending: Option<Event>,
}

const RECENT: usize = 8;

impl View {
    /// Takes one rules event; returns its lines, unless it is a touch or a clock
    /// reading (shown through the board and the clocks instead). A completed
    /// move's line shows the times of the clock report that came with the press
    /// (those of its `%clk`): it is held until the next event, which is that
    /// report's when it changed the times, and comes out with it.
    pub fn event(&mut self, e: &Event) -> Option<String> {
        if let EventKind::Clock {
            white_ms, black_ms, ..
        } = e.kind
        {
            self.clock = Some((white_ms, black_ms));
        }
        let held = self.flush();
        let line = match e.kind {
            EventKind::Touch { .. } | EventKind::Clock { .. } => None,
            EventKind::MoveCompleted { .. } => {
                self.pending = Some(e.clone());
                None
            }
            _ => Some(self.line(e)),
        };
        match (held, line) {
            (Some(h), Some(l)) => Some(format!("{h}\n{l}")),
            (h, l) => h.or(l),
        }
    }

    /// The line of a completed move still held, with the latest times (the
    /// demo's end, or no report after the press).
    pub fn flush(&mut self) -> Option<String> {
        let e = self.pending.take()?;
        Some(self.line(&e))
    }

    /// One event's line, kept among the latest (and the flags).
    fn line(&mut self, e: &Event) -> String {
        let mut line = replay::text(std::slice::from_ref(e)).trim_end().to_string();
        if let (EventKind::MoveCompleted { .. }, Some((w, b))) = (&e.kind, self.clock) {
            line.push_str(&format!(" (clock: white {}, black {})", clk(w), clk(b)));
        }
        if matches!(
            e.kind,
            EventKind::TouchMove { .. }
                | EventKind::Irregular { .. }
                | EventKind::Resolved { .. }
                | EventKind::Takeback { .. }
                | EventKind::MoveAmended { .. }
        ) {
            self.flags.push(line.trim_start().replace("\n", " "));
        }
        self.push(line.clone());
        line
    }

    pub(super) fn push(&mut self, line: String) {
        for l in line.lines() {
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back(l.to_string());
        }
    }

    /// One screenful: the board with the clocks and status beside it, the moves,
    /// the flags, the latest events. Given the terminal's size (columns, rows), it
    /// fits in it: the header (title, D-Bus and HTTP lines, whose advice must be
    /// read whole) is wrapped at the terminal's width, the moves too, other lines
    /// are cut, and only the latest moves, flags and events are shown.
    pub fn frame(&self, s: &Snapshot, size: Option<(usize, usize)>) -> String {
        let board = s
            .fen
            .parse::<shakmaty::fen::Fen>()
            .ok()
            .map(|f| diagram(&f.into_setup().board))
            .unwrap_or_else(|| "  (no game yet: waiting for the start position)".into());
        let running = |side: &str| {
            if s.clock_running == side {
                "  <- running"
            } else {
                ""
            }
        };
        let side = [
            format!(
                "White  {:>9}{}",
                clk(s.white_clock_ms.max(0) as u64),
                running("white")
            ),
            format!(
                "Black  {:>9}{}",
                clk(s.black_clock_ms.max(0) as u64),
                running("black")
            ),
            String::new(),
            format!("status       {}", s.status),
            format!(
                "irregular    {}",
                if s.irregularity.is_empty() {
                    "-"
                } else {
                    &s.irregularity
                }
            ),
            format!(
                "last move    {}",
                if s.last_move.is_empty() { "-" } else { &s.last_move }
            ),
            format!(
                "board        {} ({})",
                if s.connected { "connected" } else { "disconnected" },
                s.serial_number
            ),
            if s.result.is_empty() {
                String::new()
            } else {
                format!("result       {} ({})", s.result, s.termination)
            },
        ];
        let cols = size.map(|(c, _)| c);
        let mut head: Vec<String> = format!("{}\n{}", self.title, self.bus)
            .lines()
            .flat_map(|l| fold(l, cols))
            .collect();
        head.push(String::new());
        for (i, line) in board.lines().enumerate() {
            head.push(format!("{line:<24}{}", side.get(i).map_or("", String::as_str)));
        }
        let moves: Vec<String> = wrap(&numbered(&s.moves), cols.map_or(78, |c| c.clamp(10, 78)), "  ")
            .lines()
            .map(String::from)
            .collect();
        let flags: Vec<String> = if self.flags.is_empty() {
            vec!["  none".into()]
        } else {
            self.flags.iter().map(|l| format!("  {l}")).collect()
        };
        let recent: Vec<String> = self.recent.iter().cloned().collect();
        // On a small terminal: the latest moves, flags and events that fit, so that
        // the frame never scrolls (the last row stays free for the cursor).
        let (moves, flags, recent) = match size {
            None => (&moves[..], &flags[..], &recent[..]),
            Some((_, rows)) => {
                let fixed = head.len() + 6;
                let mut budget = rows.saturating_sub(fixed + 1);
                let m = moves.len().min(budget.clamp(1, 4));
                budget = budget.saturating_sub(m);
                let g = flags.len().min(budget.max(1));
                budget = budget.saturating_sub(g);
                let r = recent.len().min(budget);
                (
                    &moves[moves.len() - m..],
                    &flags[flags.len() - g..],
                    &recent[recent.len() - r..],
                )
            }
        };
        let mut lines = head;
        lines.push(String::new());
        lines.push("moves".into());
        lines.extend(moves.iter().cloned());
        lines.push(String::new());
        lines.push("flags (touch-move, irregular, take-back)".into());
        lines.extend(flags.iter().cloned());
        lines.push(String::new());
        lines.push("latest".into());
        lines.extend(recent.iter().cloned());
        let mut f = String::new();
        for l in lines {
            match size {
                Some((cols, _)) => f.extend(l.chars().take(cols)),
                None => f.push_str(&l),
            }
            f.push('\n');
        }
        f
    }
}

/// `line` in lines of at most `cols` characters (all of it when there is no
/// limit): broken at spaces where it can be, inside a word longer than a line
/// where it must; the lines after the first indented by two spaces more than it.
pub(super) fn fold(line: &str, cols: Option<usize>) -> Vec<String> {
    let Some(cols) = cols.filter(|&c| c > 4 && line.chars().count() > c) else {
        return vec![line.to_string()];
    };
    let lead = line.len() - line.trim_start().len();
    let indent = " ".repeat((lead + 2).min(cols / 2));
    let mut out: Vec<String> = Vec::new();
    let mut current = line[..lead].to_string();
    for word in line[lead..].split(' ').filter(|w| !w.is_empty()) {
        let used = current.chars().count();
        let fresh = current.trim().is_empty();
        if !fresh && used + 1 + word.chars().count() > cols {
            out.push(std::mem::replace(&mut current, indent.clone()));
        } else if !fresh {
            current.push(' ');
        }
        for c in word.chars() {
            if current.chars().count() == cols {
                out.push(std::mem::replace(&mut current, indent.clone()));
            }
            current.push(c);
        }
    }
    out.push(current);
    out
}

/// `1. e4 e5 2. f4 ...`
fn numbered(moves: &[String]) -> String {
    let mut s = String::new();
    for (i, m) in moves.iter().enumerate() {
        if i % 2 == 0 {
            s.push_str(&format!("{}. ", i / 2 + 1));
        }
        s.push_str(m);
        s.push(' ');
    }
    s.trim_end().to_string()
}

/// Words into lines of at most `width` characters, each indented.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            out.push_str(&format!("{indent}{line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if line.is_empty() && out.is_empty() {
        return format!("{indent}-\n");
    }
    if !line.is_empty() {
        out.push_str(&format!("{indent}{line}\n"));
    }
    out
}

/// A text diagram, rank 8 at the top.
pub fn diagram(board: &shakmaty::Board) -> String {
    let mut s = String::new();
    for rank in (0..8).rev() {
        s.push_str(&format!("  {} ", rank + 1));
        for file in 0..8 {
            let sq = shakmaty::Square::from_coords(shakmaty::File::new(file), shakmaty::Rank::new(rank));
            s.push(board.piece_at(sq).map_or('.', |p| p.char()));
            s.push(' ');
        }
        s.push('\n');
    }
    s.push_str("    a b c d e f g h");
    s
}
