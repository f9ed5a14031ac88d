//! The pushes to lichess on the bus: `Manager1.Lichess` made from each
//! round's state, and the task that follows the pushing task (the property
//! changed, a `LichessReport` signal for each report).

use std::collections::HashMap;

use tokio::sync::{broadcast, watch};
use zbus::zvariant::{OwnedValue, Value};

use super::{Manager1, ROOT_PATH};
use crate::api::lichess::{Report, RoundStatus};

/// A value of the property's dictionaries.
fn owned<'a>(v: impl Into<Value<'a>>) -> OwnedValue {
    v.into().try_to_owned().unwrap_or_else(|_| OwnedValue::from(0u32))
}

/// The `Lichess` property: round → its fields by name.
pub fn property(rounds: &[RoundStatus]) -> HashMap<u32, HashMap<String, OwnedValue>> {
    rounds
        .iter()
        .map(|r| {
            let games: Vec<(u32, u32, String, u32, String)> = r
                .games
                .iter()
                .map(|g| (g.board, g.index, g.name.clone(), g.moves, g.error.clone()))
                .collect();
            let fields: HashMap<String, OwnedValue> = [
                ("Id", owned(r.id.clone())),
                ("State", owned(r.state.clone())),
                ("LastPushMs", owned(r.last_push_ms)),
                ("Pushes", owned(r.pushes)),
                ("GamesAccepted", owned(r.games_accepted)),
                ("GamesRefused", owned(r.games_refused)),
                ("Games", owned(games)),
                ("NotPushed", owned(r.not_pushed.clone())),
                ("Error", owned(r.error.clone())),
                ("NextTryMs", owned(r.next_try_ms)),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            (r.round, fields)
        })
        .collect()
}

/// Follows the pushes until their task ends: `PropertiesChanged` for each
/// change of the rounds' state, a `LichessReport` for each report.
pub async fn follow(
    conn: zbus::Connection,
    mut status: watch::Receiver<Vec<RoundStatus>>,
    mut reports: broadcast::Receiver<Report>,
) {
    let iface = match conn.object_server().interface::<_, Manager1>(ROOT_PATH).await {
        Ok(i) => i,
        Err(e) => {
            tracing::warn!("D-Bus: the lichess pushes are not shown: {e}");
            return;
        }
    };
    loop {
        tokio::select! {
            changed = status.changed() => {
                if changed.is_err() {
                    break;
                }
                let m = iface.get().await;
                if let Err(e) = m.lichess_changed(iface.signal_emitter()).await {
                    tracing::debug!("D-Bus: Lichess not sent: {e}");
                }
            }
            r = reports.recv() => match r {
                Ok(r) => {
                    let sent = Manager1::lichess_report(
                        iface.signal_emitter(),
                        r.round,
                        &r.id,
                        &r.kind,
                        &r.game,
                        &r.text,
                        &r.remedy,
                    )
                    .await;
                    if let Err(e) = sent {
                        tracing::debug!("D-Bus: LichessReport not sent: {e}");
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!("D-Bus: {n} lichess report(s) not sent (too many at once)");
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::lichess::GameStatus;

    #[test]
    fn each_round_its_fields_and_never_a_token() {
        let r = RoundStatus {
            round: 3,
            id: "AbCd1234".into(),
            state: "pushed".into(),
            last_push_ms: 1_700_000_000_000,
            pushes: 12,
            games_accepted: 1,
            games_refused: 1,
            games: vec![
                GameStatus {
                    board: 1,
                    index: 1,
                    name: "A - B".into(),
                    moves: 40,
                    error: String::new(),
                },
                GameStatus {
                    board: 2,
                    index: 1,
                    name: "C - D".into(),
                    moves: 0,
                    error: "No move found: Pawn a8".into(),
                },
            ],
            not_pushed: vec![65, 66],
            error: String::new(),
            next_try_ms: 0,
        };
        let p = property(&[r]);
        let f = &p[&3];
        assert_eq!(
            String::try_from(f["Id"].try_clone().unwrap()).unwrap(),
            "AbCd1234"
        );
        assert_eq!(
            i64::try_from(f["LastPushMs"].try_clone().unwrap()).unwrap(),
            1_700_000_000_000
        );
        assert_eq!(
            Vec::<u32>::try_from(f["NotPushed"].try_clone().unwrap()).unwrap(),
            [65, 66]
        );
        let games: Vec<(u32, u32, String, u32, String)> = f["Games"].try_clone().unwrap().try_into().unwrap();
        assert_eq!(games[1].4, "No move found: Pawn a8");
        assert_eq!(f.len(), 10);
        let sig = zbus::zvariant::Signature::from(
            <HashMap<u32, HashMap<String, OwnedValue>> as zbus::zvariant::Type>::SIGNATURE,
        );
        assert_eq!(sig.to_string(), "a{ua{sv}}");
    }
}
