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

/// A broadcast round's fields by name.
fn fields(r: &RoundStatus) -> HashMap<String, OwnedValue> {
    let games: Vec<(u32, u32, String, u32, String)> = r
        .games
        .iter()
        .map(|g| (g.board, g.index, g.name.clone(), g.moves, g.error.clone()))
        .collect();
    [
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
    .collect()
}

/// How much a state says that something is to be done or under way: a
/// round's state is its broadcast rounds' most telling.
fn weight(state: &str) -> u8 {
    match state {
        "off" => 6,
        "refused" => 5,
        "retrying" => 4,
        "pushing" => 3,
        "pushed" => 2,
        "waiting" => 1,
        _ => 0,
    }
}

/// A round over several broadcast rounds as one (its first id, its most
/// telling state, the sums), for the property's fields of old.
fn whole(parts: &[&RoundStatus]) -> RoundStatus {
    let Some(first) = parts.first() else {
        return RoundStatus::default();
    };
    if let [one] = parts {
        return (*one).clone();
    }
    let mut not_pushed: Vec<u32> = parts.iter().flat_map(|p| p.not_pushed.iter().copied()).collect();
    not_pushed.sort_unstable();
    not_pushed.dedup();
    let errors: Vec<String> = parts
        .iter()
        .filter(|p| !p.error.is_empty())
        .map(|p| format!("{}: {}", p.id, p.error))
        .collect();
    RoundStatus {
        round: first.round,
        id: first.id.clone(),
        first_board: 1,
        last_board: 0,
        state: parts
            .iter()
            .map(|p| p.state.as_str())
            .max_by_key(|s| weight(s))
            .unwrap_or_default()
            .to_string(),
        last_push_ms: parts.iter().map(|p| p.last_push_ms).max().unwrap_or(0),
        pushes: parts.iter().map(|p| p.pushes).sum(),
        games_accepted: parts.iter().map(|p| p.games_accepted).sum(),
        games_refused: parts.iter().map(|p| p.games_refused).sum(),
        games: parts.iter().flat_map(|p| p.games.iter().cloned()).collect(),
        not_pushed,
        error: errors.join("; "),
        next_try_ms: parts.iter().map(|p| p.next_try_ms).max().unwrap_or(0),
    }
}

/// The `Lichess` property: round → its fields by name. A round over several
/// broadcast rounds has them as one in the fields of old (its first id, its
/// most telling state, the sums), each in `Parts` (with `FirstBoard` and
/// `LastBoard`), and their ids in `Ids`.
pub fn property(rounds: &[RoundStatus]) -> HashMap<u32, HashMap<String, OwnedValue>> {
    let mut by_round: std::collections::BTreeMap<u32, Vec<&RoundStatus>> = Default::default();
    for r in rounds {
        by_round.entry(r.round).or_default().push(r);
    }
    by_round
        .into_iter()
        .map(|(round, parts)| {
            let mut f = fields(&whole(&parts));
            let each: Vec<HashMap<String, OwnedValue>> = parts
                .iter()
                .map(|p| {
                    let mut f = fields(p);
                    f.insert("FirstBoard".into(), owned(p.first_board));
                    f.insert("LastBoard".into(), owned(p.last_board));
                    f
                })
                .collect();
            let ids: Vec<String> = parts.iter().map(|p| p.id.clone()).collect();
            f.insert("Ids".into(), owned(ids));
            f.insert("Parts".into(), owned(each));
            (round, f)
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
            first_board: 1,
            last_board: 0,
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
        assert_eq!(f.len(), 12);
        assert_eq!(
            Vec::<String>::try_from(f["Ids"].try_clone().unwrap()).unwrap(),
            ["AbCd1234"]
        );
        let sig = zbus::zvariant::Signature::from(
            <HashMap<u32, HashMap<String, OwnedValue>> as zbus::zvariant::Type>::SIGNATURE,
        );
        assert_eq!(sig.to_string(), "a{ua{sv}}");
    }

    /// Issue 60: a round over two broadcast rounds is one entry: the fields of
    /// old as one (the first id, the most telling state, the sums), each in
    /// `Parts`.
    #[test]
    fn a_round_over_two_broadcast_rounds_is_one_entry_with_its_parts() {
        let part = |id: &str, first, last, state: &str, accepted, error: &str| RoundStatus {
            round: 1,
            id: id.into(),
            first_board: first,
            last_board: last,
            state: state.into(),
            last_push_ms: 1_700_000_000_000 + i64::from(first),
            pushes: 2,
            games_accepted: accepted,
            error: error.into(),
            ..RoundStatus::default()
        };
        let p = property(&[
            part("AbCd1234", 1, 64, "pushed", 64, ""),
            part(
                "EfGh5678",
                65,
                0,
                "refused",
                0,
                "has no broadcast round EfGh5678 (404)",
            ),
        ]);
        assert_eq!(p.len(), 1);
        let f = &p[&1];
        let text = |k: &str| String::try_from(f[k].try_clone().unwrap()).unwrap();
        assert_eq!(text("Id"), "AbCd1234");
        assert_eq!(text("State"), "refused");
        assert_eq!(text("Error"), "EfGh5678: has no broadcast round EfGh5678 (404)");
        assert_eq!(
            u32::try_from(f["GamesAccepted"].try_clone().unwrap()).unwrap(),
            64
        );
        assert_eq!(
            Vec::<String>::try_from(f["Ids"].try_clone().unwrap()).unwrap(),
            ["AbCd1234", "EfGh5678"]
        );
        let parts: Vec<HashMap<String, OwnedValue>> = f["Parts"].try_clone().unwrap().try_into().unwrap();
        assert_eq!(parts.len(), 2);
        let board = |i: usize, k: &str| u32::try_from(parts[i][k].try_clone().unwrap()).unwrap();
        assert_eq!((board(0, "FirstBoard"), board(0, "LastBoard")), (1, 64));
        assert_eq!((board(1, "FirstBoard"), board(1, "LastBoard")), (65, 0));
    }
}
