//! The arbiters' alerts on the bus (`Manager1.Alerts`, `AckAlert`,
//! `AckBoardAlerts`): the console's, through the desk the daemon hands
//! `Manager1` (`api::alerts`), acknowledged with the caller's user name.

use std::sync::Arc;

use super::BusError;
pub use crate::api::alerts::AlertTuple;
use crate::api::alerts::{Alert, Desk, DeskSlot, console_off};

/// The longest board id a call may name.
const MAX_BOARD_ID: usize = 256;

pub fn tuple(a: Alert) -> AlertTuple {
    (
        a.id,
        a.board,
        a.kind,
        a.text,
        a.article,
        a.t_ms,
        a.active,
        a.acked_by.unwrap_or_default(),
        a.acked_ms,
    )
}

/// The desk, or why there is none.
fn desk(slot: &DeskSlot) -> Result<Arc<dyn Desk>, BusError> {
    slot.get().cloned().ok_or_else(|| console_off().into())
}

/// Every alert kept (none while the console is off).
pub fn all(slot: &DeskSlot) -> Vec<AlertTuple> {
    match slot.get() {
        Some(d) => d.alerts().into_iter().map(tuple).collect(),
        None => Vec::new(),
    }
}

/// Runs `f` on the desk off the runtime's threads (it writes a file).
async fn on_desk<T: Send + 'static>(
    slot: &DeskSlot,
    f: impl FnOnce(&dyn Desk) -> Result<T, crate::api::Error> + Send + 'static,
) -> Result<T, BusError> {
    let d = desk(slot)?;
    match tokio::task::spawn_blocking(move || f(&*d)).await {
        Ok(r) => Ok(r?),
        Err(e) => Err(BusError::Unavailable(format!("the acknowledgement failed: {e}"))),
    }
}

/// `AckAlert`: alert `id` acknowledged by `user`.
pub async fn ack(slot: &DeskSlot, id: u64, user: String) -> Result<AlertTuple, BusError> {
    on_desk(slot, move |d| d.ack(id, &user)).await.map(tuple)
}

/// `AckBoardAlerts`: every active alert of board `board` not yet acknowledged.
pub async fn ack_board(slot: &DeskSlot, board: &str, user: String) -> Result<Vec<AlertTuple>, BusError> {
    if board.is_empty() || board.len() > MAX_BOARD_ID {
        return Err(BusError::InvalidArgument(format!(
            "`{}`: a board's id (as its object path ends) is 1 to {MAX_BOARD_ID} characters",
            crate::log::clip_to(board, 40)
        )));
    }
    let board = board.to_string();
    let acked = on_desk(slot, move |d| d.ack_board(&board, &user)).await?;
    Ok(acked.into_iter().map(tuple).collect())
}
