//! `ctl history` and `ctl undo`: a board's decisions and alerts as an arbiter
//! reads them back (the time of day, who, through which door, what, in words),
//! and the last decision taken back.

use super::client::CtlError;
use super::format::{BoardView, local_date_time};
use crate::api::history::HistoryEntry;

/// The entries as lines: `19:20:03  game 2  decision  white +2:00  (alice, console)`.
pub fn text(board: &BoardView, entries: &[HistoryEntry]) -> String {
    if entries.is_empty() {
        return format!(
            "board {} ({}): nothing decided or raised yet on its recording\n",
            board.number, board.id
        );
    }
    let mut out = format!("board {} ({}):\n", board.number, board.id);
    let mut day = String::new();
    for e in entries {
        let (date, time) = local_date_time(e.time);
        if date != day {
            out.push_str(&format!("{date}\n"));
            day = date;
        }
        let who = match (&e.by, &e.via) {
            (Some(by), Some(via)) => format!("  ({by}, {via})"),
            (Some(by), None) => format!("  ({by})"),
            (None, Some(via)) => format!("  ({via})"),
            (None, None) => String::new(),
        };
        let undone = if e.undone { "  [undone]" } else { "" };
        let kind = match e.kind.as_str() {
            "decision" => "DECISION",
            "alert" => "ALERT",
            _ => "GAME",
        };
        out.push_str(&format!(
            "  {time}  game {:<3} {kind:<8}  {}{who}{undone}\n",
            e.game, e.text
        ));
    }
    out
}

/// A refused undo, with the command that does it anyway when plies would be
/// dropped.
pub fn undo_refused(board: &BoardView, e: CtlError) -> CtlError {
    match e {
        CtlError::Refused(m) if m.contains("with force") => CtlError::Refused(format!(
            "{m}; nothing was changed (run `ctl undo {} --force` to do it)",
            board.number
        )),
        other => other,
    }
}
