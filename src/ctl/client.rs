//! The daemon as `ctl` reaches it: the bus, the boards (one `GetManagedObjects`
//! call), a board named by number, id or serial number, the method calls, and
//! what a refusal means in words an arbiter can act on. Every call is bounded.

use crate::api::history::HistoryEntry;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use super::format::{self, BoardView};
use crate::bus::{BOARD_INTERFACE, BOARD_PATH_PREFIX, BUS_NAME, MANAGER_INTERFACE, ROOT_PATH};

mod watch;

/// How long a call may take before `ctl` gives up on the daemon.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a `ctl` command did not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CtlError {
    /// The command line is wrong (exit status 2).
    #[error("{0}")]
    Usage(String),
    /// The daemon refused, or did not answer (exit status 1).
    #[error("{0}")]
    Refused(String),
    /// No daemon on the bus asked (exit status 1): the bus cannot be reached
    /// (`reached` false) or nothing owns the daemon's name on it; `why` says
    /// which. `ctl` then looks on the other bus too ([`nowhere`]).
    #[error("{}", .which.not_running(.why))]
    Absent {
        which: Which,
        reached: bool,
        why: String,
    },
}

/// Which bus the daemon is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    System,
    Session,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::System => "system bus",
            Which::Session => "session bus",
        }
    }

    /// The bus as `ctl --bus` names it.
    fn flag(self) -> &'static str {
        match self {
            Which::System => "system",
            Which::Session => "session",
        }
    }

    fn other(self) -> Which {
        match self {
            Which::System => Which::Session,
            Which::Session => Which::System,
        }
    }

    /// No daemon there (`why`), and what to do, this bus alone considered.
    fn not_running(self, why: &str) -> String {
        match self {
            Which::System => format!(
                "no eboard-bridge on the system bus ({why}): is the service running? systemctl status eboard-bridge"
            ),
            Which::Session => format!(
                "no eboard-bridge on the session bus ({why}): start one (eboard-bridge demo --stay, or eboard-bridge run --bus session)"
            ),
        }
    }

    /// `ctl` found no daemon on this bus (`why`): the bus answers, but nothing
    /// owns the name there.
    fn unowned(self) -> CtlError {
        CtlError::Absent {
            which: self,
            reached: true,
            why: format!("nothing there owns the name {BUS_NAME}"),
        }
    }
}

/// No daemon on the bus `which` (`why`; `reached`: the bus answered), as
/// [`CtlError::Absent`] says it: the other bus is asked too, and the words say
/// what is true of both (issue 59: each bus's message pointed to the other,
/// where there was none either) and how to start one, or where the one found is.
pub async fn nowhere(which: Which, reached: bool, why: &str) -> String {
    let other = which.other();
    let (other_why, other_reached) = match Client::connect(other).await {
        Ok(c) => match c.check_running().await {
            Ok(()) => {
                return format!(
                    "no eboard-bridge on the {} ({why}), but one runs on the {}: ctl --bus {} ...",
                    which.name(),
                    other.name(),
                    other.flag()
                );
            }
            Err(CtlError::Absent { why, .. }) => (why, true),
            Err(e) => (e.to_string(), true),
        },
        Err(CtlError::Absent { why, reached, .. }) => (why, reached),
        Err(e) => (e.to_string(), false),
    };
    let (system, session, session_reached) = match which {
        Which::System => (why, other_why.as_str(), other_reached),
        Which::Session => (other_why.as_str(), why, reached),
    };
    let mut s = format!(
        "no eboard-bridge on either bus (the system bus: {system}; the session bus: {session}).\n\
         Start one on the session bus: eboard-bridge demo --stay (a game on a virtual board) or \
         eboard-bridge run --bus session (the boards plugged in), and reach it with ctl --bus session; \
         the installed service runs on the system bus (systemctl status eboard-bridge)."
    );
    if !session_reached {
        s.push_str(
            "\nThere is no session bus here: dbus-run-session -- $SHELL opens a shell with one; start the daemon and ctl in it.",
        );
    }
    s
}

pub struct Client {
    conn: zbus::Connection,
    which: Which,
}

/// An owned property value as `T`, or `T`'s default.
fn prop<T>(props: &HashMap<String, OwnedValue>, name: &str) -> T
where
    T: TryFrom<OwnedValue> + Default,
{
    props
        .get(name)
        .and_then(|v| v.try_clone().ok())
        .and_then(|v| T::try_from(v).ok())
        .unwrap_or_default()
}

impl Client {
    /// Connects to the bus (within [`CALL_TIMEOUT`]).
    pub async fn connect(which: Which) -> Result<Client, CtlError> {
        let build = async {
            match which {
                Which::System => zbus::connection::Builder::system()?.build().await,
                Which::Session => zbus::connection::Builder::session()?.build().await,
            }
        };
        let conn = match tokio::time::timeout(CALL_TIMEOUT, build).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                let unset = which == Which::Session
                    && std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none_or(|a| a.is_empty());
                return Err(CtlError::Absent {
                    which,
                    reached: false,
                    why: format!(
                        "cannot reach it: {e}{}",
                        if unset {
                            "; DBUS_SESSION_BUS_ADDRESS is not set"
                        } else {
                            ""
                        }
                    ),
                });
            }
            Err(_) => {
                return Err(CtlError::Refused(format!(
                    "the {} did not answer in {} s",
                    which.name(),
                    CALL_TIMEOUT.as_secs()
                )));
            }
        };
        Ok(Client { conn, which })
    }

    /// A refusal or failure of `what`, in words that say what to do.
    fn explain(&self, what: &str, e: zbus::Error) -> CtlError {
        let (name, text) = match &e {
            zbus::Error::MethodError(name, text, _) => (name.to_string(), text.clone().unwrap_or_default()),
            zbus::Error::FDO(f) => {
                use zbus::DBusError;
                (
                    f.name().to_string(),
                    f.description().unwrap_or_default().to_string(),
                )
            }
            other => return CtlError::Refused(format!("{what}: {other}")),
        };
        let short = name.rsplit('.').next().unwrap_or_default();
        CtlError::Refused(match short {
            "AccessDenied" => format!(
                "{what}: not allowed: add yourself to the group eboard (sudo usermod -aG eboard $USER, then log in again)"
            ),
            "ServiceUnknown" | "NameHasNoOwner" => return self.which.unowned(),
            "UnknownMethod" => format!(
                "{what}: the daemon does not know this call: is it older than this command? (eboard-bridge --version; restart the service after an upgrade)"
            ),
            "UnknownObject" => {
                format!("{what}: the board is gone from the daemon (ctl boards lists those there)")
            }
            "NoReply" | "Timeout" | "TimedOut" => {
                format!("{what}: the daemon did not answer: journalctl -u eboard-bridge says why")
            }
            "NotConnected" => format!("{what}: refused: {text}: the board's clock must be connected"),
            "NoBoard" => text,
            _ => format!("{what}: refused: {text}"),
        })
    }

    /// Calls `method` on `path`'s `iface`, within [`CALL_TIMEOUT`].
    async fn call<B>(
        &self,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<zbus::Message, CtlError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        self.call_as(method, path, iface, method, body).await
    }

    /// The same, its refusal said as `what`'s (a decision's method, when the
    /// call is `Decide`).
    async fn call_as<B>(
        &self,
        what: &str,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<zbus::Message, CtlError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        let call = self
            .conn
            .call_method(Some(BUS_NAME), path, Some(iface), method, body);
        match tokio::time::timeout(CALL_TIMEOUT, call).await {
            Ok(Ok(m)) => Ok(m),
            Ok(Err(e)) => Err(self.explain(what, e)),
            Err(_) => Err(CtlError::Refused(format!(
                "{what}: the daemon did not answer in {} s: is it stuck? journalctl -u eboard-bridge",
                CALL_TIMEOUT.as_secs()
            ))),
        }
    }

    /// Whether a daemon owns the name (asked of the bus itself: a broker may not
    /// answer a call to a name nobody owns at once).
    async fn check_running(&self) -> Result<(), CtlError> {
        let ask = self.conn.call_method(
            Some("org.freedesktop.DBus"),
            "/org/freedesktop/DBus",
            Some("org.freedesktop.DBus"),
            "NameHasOwner",
            &(BUS_NAME,),
        );
        let reply = match tokio::time::timeout(CALL_TIMEOUT, ask).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Err(self.explain("NameHasOwner", e)),
            Err(_) => {
                return Err(CtlError::Refused(format!(
                    "the {} did not answer in {} s",
                    self.which.name(),
                    CALL_TIMEOUT.as_secs()
                )));
            }
        };
        match reply.body().deserialize::<bool>() {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.which.unowned()),
            Err(e) => Err(CtlError::Refused(format!(
                "NameHasOwner: an answer that does not read: {e}"
            ))),
        }
    }

    /// Every board, by number.
    pub async fn boards(&self) -> Result<Vec<BoardView>, CtlError> {
        self.check_running().await?;
        type Objects = HashMap<OwnedObjectPath, HashMap<String, HashMap<String, OwnedValue>>>;
        let reply = self
            .call(
                ROOT_PATH,
                "org.freedesktop.DBus.ObjectManager",
                "GetManagedObjects",
                &(),
            )
            .await?;
        let objects: Objects = reply.body().deserialize().map_err(|e| {
            CtlError::Refused(format!("GetManagedObjects: an answer that does not read: {e}"))
        })?;
        let mut boards: Vec<BoardView> = objects
            .into_iter()
            .filter_map(|(path, ifaces)| {
                let p = ifaces.get(BOARD_INTERFACE)?;
                Some(view(path.as_str(), p))
            })
            .collect();
        boards.sort_by(|a, b| (a.number, &a.id).cmp(&(b.number, &b.id)));
        Ok(boards)
    }

    /// The board `name` names: a board number, an id or a serial number.
    pub async fn board(&self, name: &str) -> Result<BoardView, CtlError> {
        let boards = self.boards().await?;
        resolve(&boards, name)
    }

    /// Calls a `Board1` method on `board`.
    pub async fn board_call<B>(&self, board: &BoardView, method: &str, body: &B) -> Result<(), CtlError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        self.call(&board.path, BOARD_INTERFACE, method, body)
            .await
            .map(|_| ())
    }

    /// `Board1.Decide`: the decision, confirmed or not (`--force`), as the
    /// board's task takes it from every door; refused, the daemon's words.
    pub async fn decide(
        &self,
        board: &BoardView,
        d: &crate::api::Decision,
        force: bool,
    ) -> Result<(), CtlError> {
        let args = serde_json::Value::Array(d.args()).to_string();
        let body = (d.method(), args.as_str(), force);
        self.call_as(d.method(), &board.path, BOARD_INTERFACE, "Decide", &body)
            .await
            .map(|_| ())
    }

    /// `Board1.History`: the board's last `limit` entries (0: all it keeps).
    pub async fn history(&self, board: &BoardView, limit: u32) -> Result<Vec<HistoryEntry>, CtlError> {
        let reply = self
            .call(&board.path, BOARD_INTERFACE, "History", &(limit,))
            .await?;
        let json: String = reply
            .body()
            .deserialize()
            .map_err(|e| CtlError::Refused(format!("History: an answer that does not read: {e}")))?;
        serde_json::from_str(&json)
            .map_err(|e| CtlError::Refused(format!("History: an answer that does not read: {e}")))
    }

    /// `Manager1.SetBroadcastDelay`: round 0 for every round.
    pub async fn set_broadcast_delay(&self, round: u32, delay: &str) -> Result<(), CtlError> {
        self.check_running().await?;
        self.call(ROOT_PATH, MANAGER_INTERFACE, "SetBroadcastDelay", &(round, delay))
            .await
            .map(|_| ())
    }

    /// `Manager1.BroadcastDelay`: the delays in words.
    pub async fn broadcast_delay(&self) -> Result<String, CtlError> {
        self.check_running().await?;
        let reply = self
            .call(
                ROOT_PATH,
                "org.freedesktop.DBus.Properties",
                "Get",
                &(MANAGER_INTERFACE, "BroadcastDelay"),
            )
            .await?;
        let value: OwnedValue = reply
            .body()
            .deserialize()
            .map_err(|e| CtlError::Refused(format!("BroadcastDelay: an answer that does not read: {e}")))?;
        String::try_from(value)
            .map_err(|e| CtlError::Refused(format!("BroadcastDelay: an answer that does not read: {e}")))
    }

    /// `Manager1.SetLichessRound`: `id` empty for no longer pushed.
    pub async fn set_lichess_round(&self, round: u32, id: &str) -> Result<(), CtlError> {
        self.check_running().await?;
        self.call(ROOT_PATH, MANAGER_INTERFACE, "SetLichessRound", &(round, id))
            .await
            .map(|_| ())
    }

    /// `Manager1.SetLichessRounds`: a round over several broadcast rounds.
    pub async fn set_lichess_rounds(
        &self,
        round: u32,
        ids: &[crate::api::lichess::RoundId],
    ) -> Result<(), CtlError> {
        self.check_running().await?;
        let ids: Vec<&str> = ids.iter().map(|i| i.as_str()).collect();
        self.call(ROOT_PATH, MANAGER_INTERFACE, "SetLichessRounds", &(round, ids))
            .await
            .map(|_| ())
    }

    /// `Manager1.Lichess`: each round pushed to lichess (none from a daemon
    /// without `[lichess]`, or one older than the property).
    pub async fn lichess(&self) -> Result<Vec<crate::api::lichess::RoundStatus>, CtlError> {
        let reply = self
            .call(
                ROOT_PATH,
                "org.freedesktop.DBus.Properties",
                "Get",
                &(MANAGER_INTERFACE, "Lichess"),
            )
            .await;
        let Ok(reply) = reply else { return Ok(Vec::new()) };
        let value: OwnedValue = reply
            .body()
            .deserialize()
            .map_err(|e| CtlError::Refused(format!("Lichess: an answer that does not read: {e}")))?;
        Ok(super::lichess::statuses(value))
    }

    /// `Manager1.SetPairings`.
    pub async fn set_pairings(
        &self,
        round: u32,
        pairings: &[(u32, HashMap<String, String>)],
    ) -> Result<(), CtlError> {
        self.pairings_call("SetPairings", round, pairings).await
    }

    /// `Manager1.StartRound`.
    pub async fn start_round(
        &self,
        round: u32,
        pairings: &[(u32, HashMap<String, String>)],
    ) -> Result<(), CtlError> {
        self.pairings_call("StartRound", round, pairings).await
    }

    /// A `Manager1` method that takes a round and its pairings.
    async fn pairings_call(
        &self,
        method: &str,
        round: u32,
        pairings: &[(u32, HashMap<String, String>)],
    ) -> Result<(), CtlError> {
        self.check_running().await?;
        self.call(ROOT_PATH, MANAGER_INTERFACE, method, &(round, pairings))
            .await
            .map(|_| ())
    }

    /// A `Manager1` method's answer, as `R`.
    pub async fn manager_call<B, R>(&self, method: &str, body: &B) -> Result<R, CtlError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
        R: for<'d> serde::Deserialize<'d> + zbus::zvariant::Type,
    {
        self.check_running().await?;
        let reply = self.call(ROOT_PATH, MANAGER_INTERFACE, method, body).await?;
        reply
            .body()
            .deserialize()
            .map_err(|e| CtlError::Refused(format!("{method}: an answer that does not read: {e}")))
    }

    /// A `Manager1` property; `None` from a daemon that does not have it.
    pub async fn manager_property(&self, name: &str) -> Option<OwnedValue> {
        let reply = self
            .call(
                ROOT_PATH,
                "org.freedesktop.DBus.Properties",
                "Get",
                &(MANAGER_INTERFACE, name),
            )
            .await
            .ok()?;
        reply.body().deserialize().ok()
    }
}

/// A board's view from its properties.
fn view(path: &str, p: &HashMap<String, OwnedValue>) -> BoardView {
    let moves: Vec<String> = prop(p, "Moves");
    let tags: HashMap<String, String> = prop(p, "Tags");
    let mut b = BoardView {
        number: prop(p, "BoardNumber"),
        id: path.strip_prefix(BOARD_PATH_PREFIX).unwrap_or(path).to_string(),
        path: path.to_string(),
        serial: prop(p, "SerialNumber"),
        connected: prop(p, "Connected"),
        status: prop(p, "Status"),
        round: prop(p, "Round"),
        white: prop(p, "White"),
        black: prop(p, "Black"),
        moves: moves.len(),
        last_move: format::last_move(&moves),
        white_clock_ms: prop(p, "WhiteClockMs"),
        black_clock_ms: prop(p, "BlackClockMs"),
        clock_running: prop(p, "ClockRunning"),
        result: prop(p, "Result"),
        irregularity: prop(p, "Irregularity"),
        time_control: prop(p, "TimeControl"),
        tags: tags.into_iter().collect::<BTreeMap<_, _>>(),
        fault: prop(p, "Fault"),
        needs: Vec::new(),
        pgn: prop(p, "Pgn"),
        lichess: None,
        sans: moves.clone(),
        alerts: Vec::new(),
    };
    b.needs = format::needs(&b);
    b
}

/// The board `name` names among `boards`: a board number first, then an id, then
/// a serial number (serial numbers are digits too).
pub fn resolve(boards: &[BoardView], name: &str) -> Result<BoardView, CtlError> {
    let name = name.trim();
    let pick = |found: Vec<&BoardView>, what: &str| -> Option<Result<BoardView, CtlError>> {
        match found.as_slice() {
            [] => None,
            [one] => Some(Ok((*one).clone())),
            many => {
                let ids: Vec<&str> = many.iter().map(|b| b.id.as_str()).collect();
                Some(Err(CtlError::Refused(format!(
                    "{what} {name} is more than one board ({}): name one by its id",
                    ids.join(", ")
                ))))
            }
        }
    };
    if let Ok(n) = name.parse::<u32>() {
        if let Some(r) = pick(boards.iter().filter(|b| b.number == n).collect(), "board") {
            return r;
        }
    }
    let id = name.strip_prefix(BOARD_PATH_PREFIX).unwrap_or(name);
    if let Some(r) = pick(boards.iter().filter(|b| b.id == id).collect(), "id") {
        return r;
    }
    if let Some(r) = pick(
        boards
            .iter()
            .filter(|b| !b.serial.is_empty() && b.serial == name)
            .collect(),
        "serial number",
    ) {
        return r;
    }
    let mut numbers: Vec<u32> = boards.iter().map(|b| b.number).collect();
    numbers.sort_unstable();
    numbers.dedup();
    let all = if boards.is_empty() {
        "the daemon has no boards (ctl boards)".to_string()
    } else {
        format!("boards are {}", crate::api::board_numbers(&numbers))
    };
    Err(CtlError::Refused(if name.parse::<u32>().is_ok() {
        format!("no board {name}: {all}")
    } else {
        format!(
            "no board with the id or serial number `{}`: {all}",
            crate::log::clip_to(name, 40)
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(number: u32, id: &str, serial: &str) -> BoardView {
        BoardView {
            number,
            id: id.into(),
            serial: serial.into(),
            ..BoardView::default()
        }
    }

    #[test]
    fn a_board_by_number_id_or_serial_and_what_to_do_when_none() {
        let boards = [
            board(1, "dgt_100", "100"),
            board(2, "dgt_200", "2"),
            board(3, "dgt_300", "300"),
        ];
        assert_eq!(resolve(&boards, "2").unwrap().id, "dgt_200");
        assert_eq!(resolve(&boards, "dgt_300").unwrap().number, 3);
        assert_eq!(resolve(&boards, "100").unwrap().number, 1);
        let e = resolve(&boards, "17").unwrap_err();
        assert_eq!(e, CtlError::Refused("no board 17: boards are 1-3".into()));
        assert!(
            resolve(&boards, "dgt_9")
                .unwrap_err()
                .to_string()
                .contains("boards are 1-3")
        );
        let twice = [board(4, "a", ""), board(4, "b", "")];
        assert!(resolve(&twice, "4").unwrap_err().to_string().contains("(a, b)"));
    }
}
