//! `org.eboardbridge.Manager1` at the root path: what concerns every board at
//! once (a round's pairings) and the pushes to lichess (the rounds' broadcast
//! ids, their state, what goes wrong).

use std::collections::{BTreeMap, HashMap};

use tokio::sync::{mpsc, oneshot, watch};
use zbus::object_server::SignalEmitter;
use zbus::zvariant::OwnedValue;

use super::{BusError, caller};
use crate::api::lichess::{Call, RoundDecision, RoundId, RoundStatus};
use crate::api::{MAX_PAIRINGS, check_pairing};

/// A board's number and its pairing's tags (`White`, `Black`, ...).
pub type BoardPairing = (u32, BTreeMap<String, String>);

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
    /// `StartRound`: every board's next game is `round`, and a board the call
    /// does not name has no pairing for it (unless `round` is the round that
    /// stands, whose pairings stay).
    pub new_round: bool,
}

/// The `org.eboardbridge.Manager1` object at [`ROOT_PATH`]: what concerns every
/// board at once.
pub struct Manager1 {
    calls: mpsc::Sender<PairingsCall>,
    /// The pushes to lichess, when `[lichess]` is configured: each round's
    /// state, and where `SetLichessRound` goes.
    lichess: Option<(watch::Receiver<Vec<RoundStatus>>, mpsc::Sender<Call>)>,
    /// The arbiters' alerts, once the console is up (`bus::alerts`).
    alerts: crate::api::alerts::DeskSlot,
    /// The broadcast delay (`SetBroadcastDelay`), when the daemon has one.
    delay: Option<std::sync::Arc<dyn crate::api::delay::Control>>,
}

impl Manager1 {
    /// `SetLichessRound` and `SetLichessRounds`: the decision handed to the
    /// pushes, which journal it, then answer.
    async fn lichess_call(&self, round: u32, ids: Vec<RoundId>, by: Option<String>) -> Result<(), BusError> {
        let Some((_, calls)) = &self.lichess else {
            return Err(crate::api::lichess::not_configured().into());
        };
        if round == 0 {
            return Err(BusError::InvalidArgument(
                "round 0: rounds are numbered from 1".into(),
            ));
        }
        let (reply, answer) = oneshot::channel();
        let gone = || BusError::Unavailable("the daemon is stopping".into());
        calls
            .send(Call {
                decision: RoundDecision::SetRound { round, ids },
                by,
                reply,
            })
            .await
            .map_err(|_| gone())?;
        Ok(answer.await.map_err(|_| gone())??)
    }

    pub fn new(calls: mpsc::Sender<PairingsCall>) -> Manager1 {
        Manager1 {
            calls,
            lichess: None,
            alerts: Default::default(),
            delay: None,
        }
    }

    /// Serves the broadcast delay too.
    pub fn with_delay(mut self, delay: std::sync::Arc<dyn crate::api::delay::Control>) -> Manager1 {
        self.delay = Some(delay);
        self
    }

    /// Serves the pushes to lichess too.
    pub fn with_lichess(
        mut self,
        status: watch::Receiver<Vec<RoundStatus>>,
        calls: mpsc::Sender<Call>,
    ) -> Manager1 {
        self.lichess = Some((status, calls));
        self
    }

    /// Serves the arbiters' alerts from `slot` (filled once the console is up).
    pub fn with_alerts(mut self, slot: crate::api::alerts::DeskSlot) -> Manager1 {
        self.alerts = slot;
        self
    }

    /// `SetPairings` and `StartRound` (`new_round`): the pairings checked, then
    /// handed to the daemon, which answers once every board has them.
    async fn pairings_call(
        &self,
        round: u32,
        pairings: Vec<(u32, HashMap<String, String>)>,
        by: Option<String>,
        new_round: bool,
    ) -> Result<(), BusError> {
        let boards = checked(pairings)?;
        let (reply, answer) = oneshot::channel();
        let gone = || BusError::Unavailable("the daemon is stopping".into());
        self.calls
            .send(PairingsCall {
                round,
                boards,
                by,
                reply,
                new_round,
            })
            .await
            .map_err(|_| gone())?;
        Ok(answer.await.map_err(|_| gone())??)
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
        let by = caller(conn, &header).await;
        self.pairings_call(round, pairings, by, false).await
    }

    /// Starts round `round` on every board: each board's next game (or its
    /// game not begun) is round `round`, with its pairing from `pairings` (as
    /// `SetPairings` takes them); a game under way keeps its round to its end.
    /// A board `pairings` does not name keeps its pairing when `round` is the
    /// round that stands, and otherwise has none for the new round (its players
    /// are the configuration's `[[board]]` names, else `?`). Kept like
    /// `SetPairings` (`<state>/ctl-round.json`, each board's journal).
    async fn start_round(
        &self,
        round: u32,
        pairings: Vec<(u32, HashMap<String, String>)>,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        if round == 0 {
            return Err(BusError::InvalidArgument(
                "round 0: rounds are numbered from 1".into(),
            ));
        }
        let by = caller(conn, &header).await;
        self.pairings_call(round, pairings, by, true).await
    }

    /// Acknowledges alert `id` as the caller (as the console's button does);
    /// an alert acknowledged before stays as it was. The alert, as `Alerts`
    /// gives it. `Unavailable` while the console is off.
    async fn ack_alert(
        &self,
        id: u64,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<super::alerts::AlertTuple, BusError> {
        let by = caller(conn, &header)
            .await
            .unwrap_or_else(|| "someone over D-Bus".into());
        super::alerts::ack(&self.alerts, id, by).await
    }

    /// Acknowledges every active alert of the board `board` (its id) not yet
    /// acknowledged, as the caller; those acknowledged (none: nothing stood).
    async fn ack_board_alerts(
        &self,
        board: &str,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<Vec<super::alerts::AlertTuple>, BusError> {
        let by = caller(conn, &header)
            .await
            .unwrap_or_else(|| "someone over D-Bus".into());
        super::alerts::ack_board(&self.alerts, board, by).await
    }

    /// The alerts the arbiters' console keeps (each board's last 40), oldest
    /// first: id, board, kind, text, article, raised (ms), active,
    /// acknowledged by (empty: not yet), when (ms). Empty while the console is
    /// off. Read afresh: not announced.
    #[zbus(property(emits_changed_signal = "false"))]
    async fn alerts(&self) -> Vec<super::alerts::AlertTuple> {
        super::alerts::all(&self.alerts)
    }

    /// Spectators see round `round`'s games `delay` late from now on (`15m`,
    /// `90s`, `1h30m`; `off` or `0`: at once); round 0: every round (the rounds
    /// set apart before are forgotten). The arbiter's doors (D-Bus, `ctl`, the
    /// console) stay live. Journaled by the daemon (it survives restarts);
    /// what the new delay makes due is published at once (`off`: every move
    /// held). `InvalidArgument` for a delay that does not read or is longer
    /// than 6 hours.
    async fn set_broadcast_delay(
        &self,
        round: u32,
        delay: &str,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        let Some(d) = &self.delay else {
            return Err(BusError::Unavailable(
                "this daemon has no broadcast delay (an embedded daemon without its sinks)".into(),
            ));
        };
        let ms = crate::api::delay::parse_duration(delay).map_err(BusError::InvalidArgument)?;
        let round = (round != 0).then_some(round);
        Ok(d.set(round, ms, caller(conn, &header).await)?)
    }

    /// The broadcast delay in words: `off`, `15m`, `15m (round 3: 30m)`.
    #[zbus(property(emits_changed_signal = "false"))]
    async fn broadcast_delay(&self) -> String {
        self.delay
            .as_ref()
            .map_or_else(|| "off".to_string(), |d| d.delays().words())
    }

    /// Round `round` of the event is pushed to the lichess broadcast round
    /// `id` from now on (its 8 characters, or its address); empty: no longer
    /// pushed. Journaled by the daemon (it survives restarts); the round is
    /// pushed whole to the new id at once. `Unavailable` without `[lichess]`.
    async fn set_lichess_round(
        &self,
        round: u32,
        id: &str,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        let ids = match id.trim() {
            "" => Vec::new(),
            t => vec![RoundId::parse(t).map_err(BusError::InvalidArgument)?],
        };
        self.lichess_call(round, ids, caller(conn, &header).await).await
    }

    /// Round `round` of the event is pushed to the lichess broadcast rounds
    /// `ids` from now on, by board ranges: boards 1-64 to the first, 65-128 to
    /// the second, ... (the last takes the boards past its range too); each
    /// an id or its address, at most 16, none twice; none: no longer pushed.
    /// Journaled as `SetLichessRound` is; each broadcast round whose id or
    /// boards changed is pushed whole at once. `Unavailable` without
    /// `[lichess]`.
    async fn set_lichess_rounds(
        &self,
        round: u32,
        ids: Vec<String>,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        if ids.len() > crate::api::lichess::MAX_IDS {
            return Err(BusError::InvalidArgument(format!(
                "{} ids: at most {} broadcast rounds for a round",
                ids.len(),
                crate::api::lichess::MAX_IDS
            )));
        }
        let ids = if ids.iter().all(|i| i.trim().is_empty()) {
            Vec::new()
        } else {
            crate::api::lichess::parse_ids(ids.iter().map(String::as_str))
                .map_err(BusError::InvalidArgument)?
        };
        self.lichess_call(round, ids, caller(conn, &header).await).await
    }

    /// Each round pushed to lichess, by round: `Id` (s), `State` (s:
    /// `waiting`, `pushing`, `pushed`, `retrying`, `refused`, `off`), `LastPushMs`
    /// (x, 0: never), `Pushes` (t), `GamesAccepted` (u), `GamesRefused` (u),
    /// `Games` (a(uusus): board, game of the board, `White - Black`, moves,
    /// error), `NotPushed` (au: boards past the games a round takes), `Error`
    /// (s: what is wrong and what to do), `NextTryMs` (x); `Ids` (as: the
    /// round's broadcast rounds, boards 1-64 to the first, ...) and `Parts`
    /// (aa{sv}: each broadcast round with the fields above and `FirstBoard`
    /// (u), `LastBoard` (u, 0: and up)); for a round over several, the fields
    /// above are theirs as one (the first id, the most telling state, the
    /// sums). Never the token.
    #[zbus(property)]
    async fn lichess(&self) -> HashMap<u32, HashMap<String, OwnedValue>> {
        match &self.lichess {
            Some((status, _)) => super::lichess::property(&status.borrow()),
            None => HashMap::new(),
        }
    }

    /// Something about the pushes to lichess that an arbiter or organiser must
    /// know: `kind` `game_refused` (with the game), `refused` (the token, the
    /// id, a round with a source URL: not tried again until the configuration
    /// changes), `rejected`, `unreachable`, `back`, `not_pushed`; what
    /// happened, and what to do.
    #[zbus(signal)]
    pub async fn lichess_report(
        e: &SignalEmitter<'_>,
        round: u32,
        id: &str,
        kind: &str,
        game: &str,
        text: &str,
        remedy: &str,
    ) -> zbus::Result<()>;

    /// The configuration was read again (SIGHUP), or could not be: `round` the
    /// round that stands (0 when it was not read), `kind` `kept` (the round
    /// and pairings `ctl` set stand: the file's are as they were), `replaced`
    /// (the file's changed and replace `ctl`'s), `file` (the file's, `ctl` had
    /// set none) or `failed` (not read: the one running stays), and the words
    /// the log has.
    #[zbus(signal)]
    pub async fn reloaded(e: &SignalEmitter<'_>, round: u32, kind: &str, words: &str) -> zbus::Result<()>;
}

/// A round's pairings as a call gives them, checked: at most
/// [`MAX_PAIRINGS`], each board once and numbered from 1, each pairing's tags
/// well formed.
fn checked(pairings: Vec<(u32, HashMap<String, String>)>) -> Result<Vec<BoardPairing>, BusError> {
    if pairings.len() > MAX_PAIRINGS {
        return Err(BusError::InvalidArgument(format!(
            "{} pairings: at most {MAX_PAIRINGS}",
            pairings.len()
        )));
    }
    let mut boards: Vec<BoardPairing> = Vec::with_capacity(pairings.len());
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
    Ok(boards)
}

/// Says on the bus that the configuration was read again (or not): the
/// `Reloaded` signal of [`Manager1`] (`ctl watch` prints it).
pub async fn say_reloaded(conn: &zbus::Connection, round: u32, kind: &str, words: &str) {
    let sent = match zbus::object_server::SignalEmitter::new(conn, super::ROOT_PATH) {
        Ok(e) => Manager1::reloaded(&e, round, kind, words).await,
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        tracing::warn!("D-Bus: the reload is not said on the bus: {e}");
    }
}
