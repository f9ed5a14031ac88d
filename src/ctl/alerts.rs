//! The arbiters' alerts as `ctl` shows and acknowledges them: `ctl ack
//! ALERT|BOARD` (an alert by its number as `ctl boards N` shows it, `A12`, or
//! every alert standing on a board), and a board's alerts in `ctl boards N`.
//! The alerts are the console's (`Manager1.Alerts`): without it there are none.

use std::fmt::Write;

use serde::Serialize;

use super::client::{Client, CtlError};
use super::format::{self, BoardView};

use crate::api::alerts::AlertTuple;

/// How many of a board's alerts `ctl boards N` shows (the newest).
const SHOWN: usize = 8;

/// One alert, as `ctl` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AlertView {
    /// `A12`: how `ctl ack` names it.
    pub alert: String,
    pub id: u64,
    /// The board's id.
    pub board: String,
    pub kind: String,
    pub text: String,
    pub article: String,
    /// When it was raised, ms since the epoch.
    pub t_ms: u64,
    /// It still stands (not resolved, the board not connected again...).
    pub active: bool,
    /// Who acknowledged it (none: nobody yet).
    pub acked_by: Option<String>,
    pub acked_ms: u64,
}

impl From<AlertTuple> for AlertView {
    fn from(t: AlertTuple) -> AlertView {
        let (id, board, kind, text, article, t_ms, active, acked_by, acked_ms) = t;
        AlertView {
            alert: format!("A{id}"),
            id,
            board,
            kind,
            text,
            article,
            t_ms,
            active,
            acked_by: (!acked_by.is_empty()).then_some(acked_by),
            acked_ms,
        }
    }
}

/// An alert's number in `word` (`A12`, `a12`), if it names one.
pub fn alert_number(word: &str) -> Option<u64> {
    let digits = word.trim().strip_prefix(['A', 'a'])?;
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn clock_of(ms: u64) -> String {
    format::local_time_of(ms / 1000)
}

/// One alert in a line: `A12 14:05:40 touch move (Art. 4.3.1): ...;
/// acknowledged by alice at 14:06:02`.
pub fn line(a: &AlertView) -> String {
    let article = if a.article.is_empty() {
        String::new()
    } else {
        format!(" (Art. {})", a.article)
    };
    let mut s = format!(
        "{} {} {}{article}: {}",
        a.alert,
        clock_of(a.t_ms),
        a.kind.replace('_', " "),
        a.text
    );
    match &a.acked_by {
        Some(by) => {
            let _ = write!(s, "; acknowledged by {by} at {}", clock_of(a.acked_ms));
        }
        None if a.active => s.push_str("; not acknowledged"),
        None => {}
    }
    if !a.active {
        s.push_str(" (no longer stands)");
    }
    s
}

/// The lines of a board's alerts for `ctl boards N` (none: no line).
pub fn lines(alerts: &[AlertView], board: u32) -> String {
    let mut s = String::new();
    if alerts.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "alerts (the console's; `ctl ack A<N>` acknowledges one, `ctl ack {board}` all standing):"
    );
    let from = alerts.len().saturating_sub(SHOWN);
    for a in &alerts[from..] {
        let _ = writeln!(s, "  {}", line(a));
    }
    s
}

/// Every alert kept (none without the console, or from a daemon without them).
async fn all(client: &Client) -> Vec<AlertView> {
    let Some(value) = client.manager_property("Alerts").await else {
        return Vec::new();
    };
    Vec::<AlertTuple>::try_from(value)
        .map(|l| l.into_iter().map(AlertView::from).collect())
        .unwrap_or_default()
}

/// Each board's alerts, for `ctl boards`.
pub async fn attach(client: &Client, boards: &mut [BoardView]) {
    let alerts = all(client).await;
    if alerts.is_empty() {
        return;
    }
    for b in boards {
        b.alerts = alerts.iter().filter(|a| a.board == b.id).cloned().collect();
    }
}

/// `ctl ack ALERT|BOARD`.
pub async fn ack(client: &Client, target: &str) -> Result<(), CtlError> {
    if let Some(id) = alert_number(target) {
        let boards = client.boards().await?;
        let a: AlertView = client
            .manager_call::<_, AlertTuple>("AckAlert", &(id,))
            .await
            .map_err(|e| match e {
                CtlError::Refused(m) if m.contains(&format!("no alert {id}")) => CtlError::Refused(format!(
                    "no alert A{id}: the console keeps each board's last 40 alerts (`ctl boards BOARD` lists a board's)"
                )),
                other => other,
            })?
            .into();
        let on = match boards.iter().find(|b| b.id == a.board) {
            Some(b) => format!("board {} ({})", b.number, b.id),
            None => format!("board {}", a.board),
        };
        println!("{on}: {}", line(&a));
        return Ok(());
    }
    let b = client.board(target).await?;
    let acked: Vec<AlertTuple> = client.manager_call("AckBoardAlerts", &(b.id.as_str(),)).await?;
    if acked.is_empty() {
        println!(
            "board {} ({}): nothing to acknowledge: no alert stands unacknowledged (`ctl boards {}` lists its alerts)",
            b.number, b.id, b.number
        );
        return Ok(());
    }
    println!(
        "board {} ({}): {} alert(s) acknowledged:",
        b.number,
        b.id,
        acked.len()
    );
    for a in acked {
        println!("  {}", line(&a.into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alert_by_its_number_and_in_a_line() {
        assert_eq!(alert_number("A12"), Some(12));
        assert_eq!(alert_number("a7"), Some(7));
        for not in ["12", "A", "A1x", "board1", "A99999999999999999999"] {
            assert_eq!(alert_number(not), None, "{not}");
        }
        let mut a = AlertView::from((
            12,
            "board2".to_string(),
            "touch_move".to_string(),
            "white touched g1 and played Bc4".to_string(),
            "4.3.1".to_string(),
            0,
            true,
            String::new(),
            0,
        ));
        let l = line(&a);
        assert!(l.starts_with("A12 "), "{l}");
        assert!(
            l.ends_with(" touch move (Art. 4.3.1): white touched g1 and played Bc4; not acknowledged"),
            "{l}"
        );
        a.acked_by = Some("alice".into());
        a.active = false;
        let l = line(&a);
        assert!(l.contains("; acknowledged by alice at "), "{l}");
        assert!(l.ends_with(" (no longer stands)"), "{l}");
        let shown = lines(&[a], 2);
        assert!(
            shown.starts_with(
                "alerts (the console's; `ctl ack A<N>` acknowledges one, `ctl ack 2` all standing):\n  A12 "
            ),
            "{shown}"
        );
        assert!(lines(&[], 2).is_empty());
    }
}
