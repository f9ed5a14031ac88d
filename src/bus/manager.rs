//! `org.eboardbridge.Manager1` at the root path: what concerns every board at
//! once (a round's pairings).

use std::collections::{BTreeMap, HashMap};

use tokio::sync::{mpsc, oneshot};

use super::{BusError, caller};
use crate::api::{MAX_PAIRINGS, check_pairing};

/// A round's pairings for the boards (`Manager1.SetPairings`), as the daemon's
/// hub takes them: all applied, or none.
#[derive(Debug)]
pub struct PairingsCall {
    /// The round (0: each board's own stays).
    pub round: u32,
    /// Board number and the pairing's tags (`White`, `Black`, ...), each board once.
    pub boards: Vec<(u32, BTreeMap<String, String>)>,
    pub by: Option<String>,
    pub reply: oneshot::Sender<Result<(), crate::api::Error>>,
}

/// The `org.eboardbridge.Manager1` object at [`ROOT_PATH`]: what concerns every
/// board at once.
pub struct Manager1 {
    calls: mpsc::Sender<PairingsCall>,
}

impl Manager1 {
    pub fn new(calls: mpsc::Sender<PairingsCall>) -> Manager1 {
        Manager1 { calls }
    }
}

#[zbus::interface(name = "org.eboardbridge.Manager1")]
impl Manager1 {
    /// A round's pairings: for each board number, `White`, `Black` and the
    /// pairing's tags (`WhiteElo`, ... as `SetTags` takes them). Each board's
    /// next game (or its game not begun) takes its pairing, and `round` (0: the
    /// boards' round stays); a game under way keeps its players. Refused whole
    /// (`NoBoard`, `InvalidArgument`) when a board number is no board's, is given
    /// twice, or a tag is malformed: nothing is applied then.
    async fn set_pairings(
        &self,
        round: u32,
        pairings: Vec<(u32, HashMap<String, String>)>,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        if pairings.len() > MAX_PAIRINGS {
            return Err(BusError::InvalidArgument(format!(
                "{} pairings: at most {MAX_PAIRINGS}",
                pairings.len()
            )));
        }
        let mut boards: Vec<(u32, BTreeMap<String, String>)> = Vec::with_capacity(pairings.len());
        for (board, tags) in pairings {
            if board == 0 {
                return Err(BusError::InvalidArgument(
                    "board 0: boards are numbered from 1".into(),
                ));
            }
            if boards.iter().any(|(b, _)| *b == board) {
                return Err(BusError::InvalidArgument(format!(
                    "board {board} is paired twice"
                )));
            }
            let tags: BTreeMap<String, String> = tags.into_iter().collect();
            check_pairing(&tags).map_err(|e| BusError::InvalidArgument(format!("board {board}: {e}")))?;
            boards.push((board, tags));
        }
        let by = caller(conn, &header).await;
        let (reply, answer) = oneshot::channel();
        let gone = || BusError::Unavailable("the daemon is stopping".into());
        self.calls
            .send(PairingsCall {
                round,
                boards,
                by,
                reply,
            })
            .await
            .map_err(|_| gone())?;
        Ok(answer.await.map_err(|_| gone())??)
    }
}
