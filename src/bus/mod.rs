//! The D-Bus service (`docs/INTERFACES.md`): `org.eboardbridge`, an
//! `ObjectManager` at `/org/eboardbridge`, one `org.eboardbridge.Board1` object per
//! board.
//!
//! A board's object holds only a sender to the board's task and a read-only
//! snapshot (a `watch` channel): the task owns the state, publishes a new snapshot
//! after every change, and emits the signals.
//!
//! A change's signals go out before its snapshot is made (what clients wait for
//! first); a property read in that moment waits for the snapshot, so a client that
//! reads a property after a signal always sees the state the signal led to. The
//! properties that changed go in one `PropertiesChanged` signal.

use std::collections::{BTreeMap, HashMap};

use tokio::sync::{mpsc, oneshot, watch};
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedObjectPath, Value};

use crate::rules::{Event, EventKind};

/// The well-known name.
pub const BUS_NAME: &str = "org.eboardbridge";
/// Where the `ObjectManager` is served.
pub const ROOT_PATH: &str = "/org/eboardbridge";
/// The boards' objects are `BOARD_PATH_PREFIX<id>`.
pub const BOARD_PATH_PREFIX: &str = "/org/eboardbridge/board/";
/// The board interface.
pub const BOARD_INTERFACE: &str = "org.eboardbridge.Board1";
/// The interface at [`ROOT_PATH`] for what concerns every board (a round's
/// pairings).
pub const MANAGER_INTERFACE: &str = "org.eboardbridge.Manager1";
/// Prefix of the typed errors.
pub const ERROR_PREFIX: &str = "org.eboardbridge.Error";
/// The methods that change a game (the policy lets only root and `eboard` call them).
pub const CHANGING_METHODS: [&str; 11] = [
    "SetPlayers",
    "SetTags",
    "SetPairing",
    "SetClock",
    "AddTime",
    "NewGame",
    "SetPosition",
    "Reinstate",
    "SetResult",
    "SetTimeControl",
    "ShowText",
];

/// A board id for an object path: `[A-Za-z0-9_]+`, anything else becomes `_`.
pub fn board_id(name: &str) -> String {
    let id: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if id.is_empty() { "_".into() } else { id }
}

pub fn board_path(id: &str) -> String {
    format!("{BOARD_PATH_PREFIX}{}", board_id(id))
}

/// Typed errors, `org.eboardbridge.Error.*`.
#[derive(Debug, zbus::DBusError)]
#[zbus(prefix = "org.eboardbridge.Error")]
pub enum BusError {
    #[zbus(error)]
    ZBus(zbus::Error),
    /// An argument is malformed (a FEN, a result, a time control).
    InvalidArgument(String),
    /// There is no game to act on, or the ply does not exist.
    NoGame(String),
    /// The board is not connected (clock commands).
    NotConnected(String),
    /// The board's task has stopped (the daemon is shutting down).
    Unavailable(String),
    /// The call would change what a game under way depends on (a time control
    /// while moves are being played).
    GameUnderWay(String),
    /// No board has the number a call names (`SetPairings`).
    NoBoard(String),
}

/// The tags of a pairing besides the players (`SetTags` sets these; `SetPairing`
/// these and `White`, `Black`).
pub const PAIRING_TAGS: [&str; 8] = [
    "WhiteElo",
    "BlackElo",
    "WhiteFideId",
    "BlackFideId",
    "WhiteTitle",
    "BlackTitle",
    "WhiteTeam",
    "BlackTeam",
];

/// The longest tag value (a player's or a team's name), in characters.
pub const MAX_TAG_CHARS: usize = 200;

/// The most boards one `SetPairings` call names.
pub const MAX_PAIRINGS: usize = 1000;

/// Whether `value` may be the value of tag `name` (one of [`PAIRING_TAGS`], or
/// `White`/`Black` when `players`): one line of at most [`MAX_TAG_CHARS`]
/// characters; a rating at most 4 digits, a FIDE id at most 12, a title at most
/// 4 letters. An empty value removes the tag. What is wrong, else.
pub fn check_tag(name: &str, value: &str, players: bool) -> Result<(), String> {
    let player = players && matches!(name, "White" | "Black");
    if !player && !PAIRING_TAGS.contains(&name) {
        return Err(format!(
            "`{}` is not a tag that can be set (these can: {}{})",
            crate::log::clip_to(name, 40),
            if players { "White, Black, " } else { "" },
            PAIRING_TAGS.join(", ")
        ));
    }
    let shown = crate::log::clip_to(value, 40);
    if value.chars().count() > MAX_TAG_CHARS || value.chars().any(char::is_control) {
        return Err(format!(
            "{name} `{shown}`: a tag is one line of at most {MAX_TAG_CHARS} characters"
        ));
    }
    let digits = |max: usize| value.len() <= max && value.bytes().all(|b| b.is_ascii_digit());
    let ok = match name {
        "WhiteElo" | "BlackElo" => digits(4),
        "WhiteFideId" | "BlackFideId" => digits(12),
        "WhiteTitle" | "BlackTitle" => value.len() <= 4 && value.bytes().all(|b| b.is_ascii_alphabetic()),
        "White" | "Black" => !value.trim().is_empty(),
        _ => true,
    };
    if ok {
        return Ok(());
    }
    Err(match name {
        "WhiteElo" | "BlackElo" => format!("{name} `{shown}`: a rating is a number of at most 4 digits"),
        "WhiteFideId" | "BlackFideId" => {
            format!("{name} `{shown}`: a FIDE id is a number of at most 12 digits")
        }
        "White" | "Black" => format!("{name}: a player's name cannot be empty"),
        _ => format!("{name} `{shown}`: a title is at most 4 letters (GM, IM, WFM, ...)"),
    })
}

/// Checks every tag of `tags` ([`check_tag`]).
pub fn check_tags(tags: &BTreeMap<String, String>, players: bool) -> Result<(), String> {
    if tags.len() > PAIRING_TAGS.len() + 2 {
        return Err(format!("{} tags: at most {}", tags.len(), PAIRING_TAGS.len() + 2));
    }
    tags.iter().try_for_each(|(n, v)| check_tag(n, v, players))
}

/// The user name of `uid` (the password database's), or `uid N` when it has none.
pub fn user_name(uid: u32) -> String {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: `passwd` is plain data that getpwuid_r fills in; its strings point
    // into `buf`, which outlives their use here.
    let name = unsafe {
        let mut pw: libc::passwd = std::mem::zeroed();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let r = libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut found);
        (r == 0 && !found.is_null() && !pw.pw_name.is_null()).then(|| {
            std::ffi::CStr::from_ptr(pw.pw_name)
                .to_string_lossy()
                .into_owned()
        })
    };
    match name {
        Some(n) if !n.is_empty() && n.len() <= 64 && n.chars().all(|c| c.is_ascii_graphic()) => n,
        _ => format!("uid {uid}"),
    }
}

/// Who sent a method call: the user name of its sender's uid, as the bus
/// (`GetConnectionUnixUser`) tells it; `None` when the bus does not say within 2 s.
pub async fn caller(conn: &zbus::Connection, header: &zbus::message::Header<'_>) -> Option<String> {
    let sender = header.sender()?.to_owned();
    let ask = async {
        let proxy = zbus::fdo::DBusProxy::new(conn).await.ok()?;
        proxy.get_connection_unix_user(sender.into()).await.ok()
    };
    let uid = tokio::time::timeout(std::time::Duration::from_secs(2), ask)
        .await
        .ok()
        .flatten()?;
    Some(user_name(uid))
}

/// What an arbiter (or a tool) asks of a board.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    NewGame(String),
    SetPosition(String),
    Reinstate(u32),
    SetResult(String),
    SetTimeControl(String),
    ShowText(String, u32),
    SetPlayers(String, String),
    SetClock(i64, i64),
    AddTime(String, i32),
    /// The pairing's tags ([`PAIRING_TAGS`]) of the game under way and the next
    /// games; an empty value removes one.
    SetTags(BTreeMap<String, String>),
    /// A round's pairing for the board's next game (or the one not begun): the
    /// round (0: the board's own), the players and tags.
    SetPairing(u32, BTreeMap<String, String>),
}

impl Command {
    /// The rules core's decision this call stands for (none for the calls the
    /// core does not take: players, tags, a text on the clock). An arbiter's
    /// time control drives the clock.
    pub fn decision(&self) -> Option<crate::rules::Decision> {
        self.split().ok()
    }

    /// The method's name and its arguments as JSON values, as the sensor log's
    /// `arbiter` record holds them (a decision's as [`crate::rules::Decision`]
    /// writes it).
    pub fn record(&self) -> (&'static str, Vec<serde_json::Value>) {
        match self.split() {
            Ok(d) => (d.method(), d.args()),
            Err(record) => record,
        }
    }

    /// The decision, or the record of a call that is not one.
    fn split(&self) -> Result<crate::rules::Decision, (&'static str, Vec<serde_json::Value>)> {
        use crate::rules::Decision;
        use serde_json::Value;
        Ok(match self {
            Command::NewGame(f) => Decision::NewGame(f.clone()),
            Command::SetPosition(f) => Decision::SetPosition(f.clone()),
            Command::Reinstate(p) => Decision::Reinstate(*p),
            Command::SetResult(r) => Decision::SetResult(r.clone()),
            Command::SetTimeControl(s) => Decision::SetTimeControl {
                spec: s.clone(),
                mode: crate::rules::ClockMode::Drive,
            },
            Command::SetClock(w, b) => Decision::SetClock(*w, *b),
            Command::AddTime(side, s) => Decision::AddTime(side.clone(), *s),
            Command::ShowText(t, s) => {
                return Err(("ShowText", vec![Value::from(t.as_str()), Value::from(*s)]));
            }
            Command::SetPlayers(w, b) => {
                return Err((
                    "SetPlayers",
                    vec![Value::from(w.as_str()), Value::from(b.as_str())],
                ));
            }
            Command::SetTags(tags) => return Err(("SetTags", vec![tags_json(tags)])),
            Command::SetPairing(round, tags) => {
                return Err(("SetPairing", vec![Value::from(*round), tags_json(tags)]));
            }
        })
    }

    /// The command a method name and its arguments (JSON, as `record` gives
    /// them) stand for; what is wrong, else.
    pub fn from_json(method: &str, args: &[serde_json::Value]) -> Result<Command, String> {
        use serde_json::Value;
        let text = |i: usize| match args.get(i) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(format!("{method}: argument {} must be a string, not {v}", i + 1)),
            None => Err(format!("{method}: argument {} is missing", i + 1)),
        };
        let int = |i: usize| match args.get(i) {
            Some(v) => v
                .as_i64()
                .ok_or_else(|| format!("{method}: argument {} must be an integer, not {v}", i + 1)),
            None => Err(format!("{method}: argument {} is missing", i + 1)),
        };
        let map = |i: usize| match args.get(i) {
            Some(Value::Object(o)) => o
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    v => Err(format!("{method}: tag {k} must be a string, not {v}")),
                })
                .collect::<Result<BTreeMap<String, String>, String>>(),
            Some(v) => Err(format!("{method}: argument {} must be an object, not {v}", i + 1)),
            None => Err(format!("{method}: argument {} is missing", i + 1)),
        };
        let arity = match method {
            "NewGame" | "SetPosition" | "Reinstate" | "SetResult" | "SetTimeControl" | "SetTags" => 1,
            "ShowText" | "SetPlayers" | "SetClock" | "AddTime" | "SetPairing" => 2,
            _ => return Err(format!("no method {method}")),
        };
        if args.len() != arity {
            return Err(format!("{method} takes {arity} argument(s), not {}", args.len()));
        }
        let range = |v: i64, what: &str| format!("{method}: {v} is out of range for {what}");
        Ok(match method {
            "NewGame" => Command::NewGame(text(0)?),
            "SetPosition" => Command::SetPosition(text(0)?),
            "Reinstate" => {
                let p = int(0)?;
                Command::Reinstate(u32::try_from(p).map_err(|_| range(p, "a ply"))?)
            }
            "SetResult" => Command::SetResult(text(0)?),
            "SetTimeControl" => Command::SetTimeControl(text(0)?),
            "ShowText" => {
                let s = int(1)?;
                Command::ShowText(text(0)?, u32::try_from(s).map_err(|_| range(s, "seconds"))?)
            }
            "SetPlayers" => Command::SetPlayers(text(0)?, text(1)?),
            "SetClock" => Command::SetClock(int(0)?, int(1)?),
            "SetTags" => Command::SetTags(map(0)?),
            "SetPairing" => {
                let r = int(0)?;
                Command::SetPairing(u32::try_from(r).map_err(|_| range(r, "a round"))?, map(1)?)
            }
            _ => {
                let s = int(1)?;
                Command::AddTime(text(0)?, i32::try_from(s).map_err(|_| range(s, "seconds"))?)
            }
        })
    }
}

/// The longest argument a command takes, in bytes (after trimming): a FEN is
/// under 100, a name in a pairing list well under 100.
const MAX_ARGUMENT: usize = 100;

/// The longest time control (PGN syntax or event form): a few periods.
const MAX_TIME_CONTROL: usize = 64;

impl Command {
    /// The command with its text arguments trimmed, or why it is refused when
    /// one is longer than any real one: what is accepted is journaled, and a
    /// caller must not be able to write a megabyte into the recording, the log
    /// or the PGN.
    pub fn normalized(self) -> Result<Command, BusError> {
        let bounded = |what: &str, text: String, max: usize| {
            let t = text.trim();
            if t.len() > max {
                return Err(BusError::InvalidArgument(format!(
                    "{what} is {} bytes long; at most {max} are taken",
                    t.len()
                )));
            }
            Ok(t.to_string())
        };
        Ok(match self {
            Command::NewGame(f) => Command::NewGame(bounded("the FEN", f, MAX_ARGUMENT)?),
            Command::SetPosition(f) => Command::SetPosition(bounded("the FEN", f, MAX_ARGUMENT)?),
            Command::SetResult(r) => Command::SetResult(bounded("the result", r, 8)?),
            Command::SetTimeControl(t) => {
                Command::SetTimeControl(bounded("the time control", t, MAX_TIME_CONTROL)?)
            }
            Command::ShowText(t, secs) => Command::ShowText(bounded("the text", t, MAX_ARGUMENT)?, secs),
            // A name as a pairing's tag may be (in characters).
            Command::SetPlayers(w, b) => Command::SetPlayers(
                bounded("White's name", w, MAX_TAG_CHARS * 4)?,
                bounded("Black's name", b, MAX_TAG_CHARS * 4)?,
            ),
            Command::AddTime(side, secs) => Command::AddTime(bounded("the side", side, 8)?, secs),
            // Tags are checked, names and values bounded, by `check_tags`.
            other @ (Command::Reinstate(_)
            | Command::SetClock(..)
            | Command::SetTags(_)
            | Command::SetPairing(..)) => other,
        })
    }
}

/// Tags as one JSON object (as the `arbiter` record holds them).
fn tags_json(tags: &BTreeMap<String, String>) -> serde_json::Value {
    serde_json::Value::Object(
        tags.iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
            .collect(),
    )
}

/// A command, who asked for it (a user name, when known) and where its answer goes.
pub type Request = (Command, Option<String>, oneshot::Sender<Result<(), BusError>>);

/// Hands `cmd` to a board's task (as D-Bus and MQTT calls do) and waits for its
/// answer.
pub async fn ask(commands: &mpsc::Sender<Request>, cmd: Command) -> Result<(), BusError> {
    ask_as(commands, cmd, None).await
}

/// The same, for the user `by`, who is then named with the decision in the record.
pub async fn ask_as(
    commands: &mpsc::Sender<Request>,
    cmd: Command,
    by: Option<String>,
) -> Result<(), BusError> {
    let cmd = cmd.normalized()?;
    let (tx, rx) = oneshot::channel();
    let gone = || BusError::Unavailable("the board's task has stopped".into());
    commands.send((cmd, by, tx)).await.map_err(|_| gone())?;
    rx.await.map_err(|_| gone())?
}

/// Everything the `Board1` properties show, and what the network's clients need
/// besides. Serialized (`/api/boards`, MQTT) with the D-Bus property names.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Snapshot {
    pub connected: bool,
    pub device: String,
    pub serial_number: String,
    pub orientation: String,
    pub status: String,
    pub fen: String,
    pub moves: Vec<String>,
    pub pgn: String,
    pub last_move: String,
    pub white_clock_ms: i64,
    pub black_clock_ms: i64,
    pub clock_running: String,
    pub result: String,
    pub termination: String,
    pub irregularity: String,
    /// The current game's (else the board's) PGN `Event`, round, board number and
    /// players.
    pub event: String,
    pub round: String,
    pub board_number: u32,
    pub white: String,
    pub black: String,
    /// The time control last set, PGN syntax (seconds), or empty.
    pub time_control: String,
    /// The current game's (else the board's) tags besides the seven tag roster:
    /// `Board` and the pairing's ([`crate::output::replay::EXTRA_TAGS`]).
    pub tags: BTreeMap<String, String>,
    /// Not a D-Bus property: the pieces on the board as its sensors show them,
    /// in real orientation (FEN placement), whatever the record says; empty before
    /// the board's first dump. LiveChess clients draw it.
    pub placement: String,
    /// Not a D-Bus property: the current game's start position (FEN).
    pub start_fen: String,
    /// Not a D-Bus property: whether a clock has reported.
    pub has_clock: bool,
    /// Not a D-Bus property: the charge a Bluetooth board reported (percent);
    /// `None` for a wired board.
    pub battery: Option<u8>,
    /// Not a D-Bus property: the plies of `moves` that are settled (completed,
    /// or followed by another move); LiveChess clients are sent only those.
    pub settled: usize,
    /// What went wrong with the board's task (it panicked and was restarted,
    /// its journal was moved aside, it was stopped), for the operator; empty
    /// while nothing has (`docs/RELIABILITY.md`, "A board that fails").
    pub fault: String,
}

/// The `org.eboardbridge.Board1` object of one board.
pub struct Board1 {
    snapshot: watch::Receiver<Snapshot>,
    /// True while signals are out ahead of the snapshot they lead to.
    publishing: watch::Receiver<bool>,
    commands: mpsc::Sender<Request>,
}

impl Board1 {
    pub fn new(
        snapshot: watch::Receiver<Snapshot>,
        publishing: watch::Receiver<bool>,
        commands: mpsc::Sender<Request>,
    ) -> Board1 {
        Board1 {
            snapshot,
            publishing,
            commands,
        }
    }

    async fn ask(&self, cmd: Command, by: Option<String>) -> Result<(), BusError> {
        ask_as(&self.commands, cmd, by).await
    }

    /// The snapshot, once the one the signals sent last lead to is in.
    async fn snap(&self) -> watch::Ref<'_, Snapshot> {
        // Closed: the board's task has stopped; what it published last stands.
        let _ = self.publishing.clone().wait_for(|p| !*p).await;
        self.snapshot.borrow()
    }
}

#[zbus::interface(name = "org.eboardbridge.Board1")]
impl Board1 {
    #[zbus(property)]
    async fn connected(&self) -> bool {
        self.snap().await.connected
    }
    #[zbus(property)]
    async fn device(&self) -> String {
        self.snap().await.device.clone()
    }
    #[zbus(property)]
    async fn serial_number(&self) -> String {
        self.snap().await.serial_number.clone()
    }
    #[zbus(property)]
    async fn orientation(&self) -> String {
        self.snap().await.orientation.clone()
    }
    #[zbus(property)]
    async fn status(&self) -> String {
        self.snap().await.status.clone()
    }
    #[zbus(property)]
    async fn fen(&self) -> String {
        self.snap().await.fen.clone()
    }
    #[zbus(property)]
    async fn moves(&self) -> Vec<String> {
        self.snap().await.moves.clone()
    }
    #[zbus(property)]
    async fn pgn(&self) -> String {
        self.snap().await.pgn.clone()
    }
    #[zbus(property)]
    async fn last_move(&self) -> String {
        self.snap().await.last_move.clone()
    }
    #[zbus(property)]
    async fn white_clock_ms(&self) -> i64 {
        self.snap().await.white_clock_ms
    }
    #[zbus(property)]
    async fn black_clock_ms(&self) -> i64 {
        self.snap().await.black_clock_ms
    }
    #[zbus(property)]
    async fn clock_running(&self) -> String {
        self.snap().await.clock_running.clone()
    }
    #[zbus(property)]
    async fn result(&self) -> String {
        self.snap().await.result.clone()
    }
    #[zbus(property)]
    async fn termination(&self) -> String {
        self.snap().await.termination.clone()
    }
    #[zbus(property)]
    async fn irregularity(&self) -> String {
        self.snap().await.irregularity.clone()
    }
    #[zbus(property)]
    async fn event(&self) -> String {
        self.snap().await.event.clone()
    }
    #[zbus(property)]
    async fn round(&self) -> String {
        self.snap().await.round.clone()
    }
    #[zbus(property)]
    async fn board_number(&self) -> u32 {
        self.snap().await.board_number
    }
    #[zbus(property)]
    async fn white(&self) -> String {
        self.snap().await.white.clone()
    }
    #[zbus(property)]
    async fn black(&self) -> String {
        self.snap().await.black.clone()
    }
    #[zbus(property)]
    async fn time_control(&self) -> String {
        self.snap().await.time_control.clone()
    }
    #[zbus(property)]
    async fn tags(&self) -> HashMap<String, String> {
        self.snap().await.tags.clone().into_iter().collect()
    }
    /// What went wrong with the board's task, or empty.
    #[zbus(property)]
    async fn fault(&self) -> String {
        self.snap().await.fault.clone()
    }

    /// A new game from `fen` (empty: the standard start).
    async fn new_game(
        &self,
        fen: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Command::NewGame(fen), caller(conn, &header).await).await
    }
    /// The arbiter sets the position: the game goes on from `fen`.
    async fn set_position(
        &self,
        fen: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Command::SetPosition(fen), caller(conn, &header).await)
            .await
    }
    /// Back to ply `ply` of the game (7.5.1).
    async fn reinstate(
        &self,
        ply: u32,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Command::Reinstate(ply), caller(conn, &header).await)
            .await
    }
    /// The result (`1-0`, `0-1`, `1/2-1/2`, `*`).
    async fn set_result(
        &self,
        result: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Command::SetResult(result), caller(conn, &header).await)
            .await
    }
    /// Sets and starts the clock: `MINUTES[+INCREMENT]`, for example `90+30`.
    async fn set_time_control(
        &self,
        spec: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Command::SetTimeControl(spec), caller(conn, &header).await)
            .await
    }
    /// The players of the game under way (with none under way, of the next game).
    async fn set_players(
        &self,
        white: String,
        black: String,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Command::SetPlayers(white, black), caller(conn, &header).await)
            .await
    }
    /// The arbiter sets both times (milliseconds; the clock shows whole seconds);
    /// the running side goes on running.
    async fn set_clock(
        &self,
        white_ms: i64,
        black_ms: i64,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Command::SetClock(white_ms, black_ms), caller(conn, &header).await)
            .await
    }
    /// The arbiter adds `seconds` (negative: takes them) to `side`'s time
    /// (`white` or `black`), from the clock's last report.
    async fn add_time(
        &self,
        side: String,
        seconds: i32,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Command::AddTime(side, seconds), caller(conn, &header).await)
            .await
    }
    /// The pairing's tags (`WhiteElo`, `BlackElo`, `WhiteFideId`, `BlackFideId`,
    /// `WhiteTitle`, `BlackTitle`, `WhiteTeam`, `BlackTeam`) of the game under way
    /// (if not over) and of the next games; an empty value removes the tag.
    async fn set_tags(
        &self,
        tags: HashMap<String, String>,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        let tags: BTreeMap<String, String> = tags.into_iter().collect();
        check_tags(&tags, false).map_err(BusError::InvalidArgument)?;
        self.ask(Command::SetTags(tags), caller(conn, &header).await)
            .await
    }
    /// A round's pairing for the board's next game (or the game not begun, no
    /// move and no result): `round` (0: the board's round stays), `White`,
    /// `Black` and the pairing's tags. A game under way keeps its own.
    async fn set_pairing(
        &self,
        round: u32,
        tags: HashMap<String, String>,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        let tags: BTreeMap<String, String> = tags.into_iter().collect();
        check_pairing(&tags).map_err(BusError::InvalidArgument)?;
        self.ask(Command::SetPairing(round, tags), caller(conn, &header).await)
            .await
    }
    /// Shows `text` (up to 8 characters) on the clock for `seconds`.
    async fn show_text(
        &self,
        text: String,
        seconds: u32,
        #[zbus(header)] header: zbus::message::Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> Result<(), BusError> {
        self.ask(Command::ShowText(text, seconds), caller(conn, &header).await)
            .await
    }

    #[zbus(signal)]
    async fn game_started(e: &SignalEmitter<'_>, fen: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn piece_touched(
        e: &SignalEmitter<'_>,
        side: &str,
        square: &str,
        piece: &str,
        first: bool,
    ) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn move_made(e: &SignalEmitter<'_>, ply: u32, san: &str, uci: &str, fen: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn move_amended(
        e: &SignalEmitter<'_>,
        ply: u32,
        was: &str,
        san: &str,
        uci: &str,
        fen: &str,
    ) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn move_completed(e: &SignalEmitter<'_>, ply: u32) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn take_back(e: &SignalEmitter<'_>, to_ply: u32, fen: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn touch_move(
        e: &SignalEmitter<'_>,
        article: &str,
        side: &str,
        touched: Vec<String>,
        played: &str,
    ) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn irregular(
        e: &SignalEmitter<'_>,
        kind: &str,
        side: &str,
        squares: Vec<String>,
        completed: bool,
        count: u32,
    ) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn resolved(e: &SignalEmitter<'_>, fen: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn draw_claimable(e: &SignalEmitter<'_>, reason: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn game_ended(e: &SignalEmitter<'_>, result: &str, termination: &str) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn flag(e: &SignalEmitter<'_>, side: &str, ply: u32, count_met: bool) -> zbus::Result<()>;
    #[zbus(signal)]
    async fn clock_button(e: &SignalEmitter<'_>, button: &str) -> zbus::Result<()>;
    /// The clock did not acknowledge a command, sent and sent again (its bytes
    /// in hex): it may be off, or its cable loose.
    #[zbus(signal)]
    async fn clock_unresponsive(e: &SignalEmitter<'_>, command: &str) -> zbus::Result<()>;
}

/// A pairing's tags: `White` and `Black` named, the rest [`check_tag`].
pub fn check_pairing(tags: &BTreeMap<String, String>) -> Result<(), String> {
    check_tags(tags, true)?;
    for side in ["White", "Black"] {
        if !tags.contains_key(side) {
            return Err(format!("a pairing names both players: {side} is missing"));
        }
    }
    Ok(())
}

/// A round's pairings for the boards (`Manager1.SetPairings`), as the daemon's
/// hub takes them: all applied, or none.
#[derive(Debug)]
pub struct PairingsCall {
    /// The round (0: each board's own stays).
    pub round: u32,
    /// Board number and the pairing's tags (`White`, `Black`, ...), each board once.
    pub boards: Vec<(u32, BTreeMap<String, String>)>,
    pub by: Option<String>,
    pub reply: oneshot::Sender<Result<(), BusError>>,
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
        answer.await.map_err(|_| gone())?
    }
}

/// The board task's side: publishes snapshots, property changes and signals.
pub struct Publisher {
    snapshot: watch::Sender<Snapshot>,
    /// True from a change's signals until its snapshot is in: property reads wait.
    publishing: watch::Sender<bool>,
    bus: Option<(zbus::Connection, OwnedObjectPath)>,
    /// The board's interface on the object server, looked up once.
    iface: tokio::sync::OnceCell<zbus::object_server::InterfaceRef<Board1>>,
}

impl Publisher {
    /// `publishing` is what `Board1::new` was given the other end of.
    pub fn new(
        snapshot: watch::Sender<Snapshot>,
        publishing: watch::Sender<bool>,
        bus: Option<(zbus::Connection, OwnedObjectPath)>,
    ) -> Publisher {
        Publisher {
            snapshot,
            publishing,
            bus,
            iface: tokio::sync::OnceCell::new(),
        }
    }

    /// The snapshot published last.
    pub fn last(&self) -> Snapshot {
        self.snapshot.borrow().clone()
    }

    /// `snap` differs from the snapshot published last.
    pub fn differs(&self, snap: &Snapshot) -> bool {
        *self.snapshot.borrow() != *snap
    }

    /// The board's interface, once it is on the object server; `None` without a bus.
    async fn iface(&self) -> Option<&zbus::object_server::InterfaceRef<Board1>> {
        let (conn, path) = self.bus.as_ref()?;
        let found = self
            .iface
            .get_or_try_init(|| conn.object_server().interface::<_, Board1>(path.as_ref()))
            .await;
        match found {
            Ok(iface) => Some(iface),
            Err(e) => {
                tracing::warn!("D-Bus: cannot publish on {}: {e}", path.as_str());
                None
            }
        }
    }

    /// Sends the signals of a change's `events` at once, before the snapshot they
    /// lead to is made: they are what clients wait for. Property reads wait from
    /// now until `publish` puts that snapshot in, so none sees the state before
    /// a signal it has had. Then the thread gives way: the broker, woken by the
    /// signals, is often put on this very CPU (Unix sockets wake their reader as
    /// if the writer were about to sleep), and would otherwise wait for all the
    /// work that follows. `publish` must follow.
    pub async fn signal(&self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        let Some(iface) = self.iface().await else { return };
        self.publishing.send_replace(true);
        if let Err(e) = emit(iface.signal_emitter(), events).await {
            tracing::warn!(
                "D-Bus: cannot send the signals of {}: {e}",
                iface.signal_emitter().path()
            );
        }
        std::thread::yield_now();
    }

    /// Publishes a new snapshot (after `signal`, the one its events led to), lets
    /// property reads go on, and sends one `PropertiesChanged` with what changed.
    /// Bus errors are logged: a listener going away must not stop the board.
    pub async fn publish(&self, snap: Snapshot) {
        let changed = changed_properties(&self.snapshot.borrow(), &snap);
        self.snapshot.send_replace(snap);
        self.publishing.send_if_modified(|p| std::mem::replace(p, false));
        if changed.is_empty() {
            return;
        }
        let Some(iface) = self.iface().await else { return };
        let e = iface.signal_emitter();
        let name = zbus::names::InterfaceName::from_static_str_unchecked(BOARD_INTERFACE);
        if let Err(err) = zbus::fdo::Properties::properties_changed(e, name, changed, (&[]).into()).await {
            tracing::warn!("D-Bus: cannot publish on {}: {err}", e.path());
        }
    }
}

/// A change's signals, in order.
async fn emit(e: &SignalEmitter<'_>, events: &[Event]) -> zbus::Result<()> {
    for ev in events {
        match &ev.kind {
            EventKind::GameStart { fen, .. } => Board1::game_started(e, fen).await?,
            EventKind::Touch {
                side,
                square,
                piece,
                first,
                ..
            } => Board1::piece_touched(e, side.name(), square, piece, *first).await?,
            EventKind::Move {
                ply, san, uci, fen, ..
            } => Board1::move_made(e, *ply, san, uci, fen).await?,
            EventKind::MoveAmended {
                ply,
                was,
                san,
                uci,
                fen,
                ..
            } => Board1::move_amended(e, *ply, was, san, uci, fen).await?,
            EventKind::MoveCompleted { ply, .. } => Board1::move_completed(e, *ply).await?,
            EventKind::Takeback { to_ply, fen } => Board1::take_back(e, *to_ply, fen).await?,
            EventKind::TouchMove {
                article,
                side,
                touched,
                played,
            } => Board1::touch_move(e, article, side.name(), touched.clone(), played).await?,
            EventKind::Irregular {
                kind,
                side,
                squares,
                completed,
                count,
                ..
            } => Board1::irregular(e, kind.name(), side.name(), squares.clone(), *completed, *count).await?,
            EventKind::Resolved { fen } => Board1::resolved(e, fen).await?,
            EventKind::DrawClaimable { reason } => Board1::draw_claimable(e, reason).await?,
            EventKind::GameEnd { result, termination } => Board1::game_ended(e, result, termination).await?,
            EventKind::Flag {
                side, ply, count_met, ..
            } => Board1::flag(e, side.name(), *ply, *count_met).await?,
            EventKind::ClockButton { button } => Board1::clock_button(e, button).await?,
            EventKind::ClockUnresponsive { command } => Board1::clock_unresponsive(e, command).await?,
            // Their effects show in the properties.
            EventKind::Clock { .. } | EventKind::Arbiter { .. } => {}
        }
    }
    Ok(())
}

/// The properties (D-Bus names) whose values differ from `old` to `new`, with
/// their new values.
fn changed_properties(old: &Snapshot, new: &Snapshot) -> HashMap<&'static str, Value<'static>> {
    let mut changed = HashMap::new();
    macro_rules! changed {
        ($($field:ident => $name:literal),* $(,)?) => {
            $(if old.$field != new.$field {
                changed.insert($name, Value::from(new.$field.clone()));
            })*
        };
    }
    changed!(
        connected => "Connected",
        device => "Device",
        serial_number => "SerialNumber",
        orientation => "Orientation",
        status => "Status",
        fen => "Fen",
        moves => "Moves",
        pgn => "Pgn",
        last_move => "LastMove",
        white_clock_ms => "WhiteClockMs",
        black_clock_ms => "BlackClockMs",
        clock_running => "ClockRunning",
        result => "Result",
        termination => "Termination",
        irregularity => "Irregularity",
        event => "Event",
        round => "Round",
        board_number => "BoardNumber",
        white => "White",
        black => "Black",
        time_control => "TimeControl",
        fault => "Fault",
    );
    if old.tags != new.tags {
        let tags: HashMap<String, String> = new.tags.clone().into_iter().collect();
        changed.insert("Tags", Value::from(tags));
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A client that reads a property on a signal sees the state the signal led
    /// to: between `signal` and `publish` the read waits; it is answered with the
    /// new snapshot. The properties changed come in one `PropertiesChanged`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_property_read_between_signal_and_snapshot_waits_for_the_snapshot() {
        use futures_util::StreamExt;
        use std::time::Duration;
        let dir = tempfile::tempdir().unwrap();
        let address = format!("unix:path={}", dir.path().join("bus.sock").display());
        let mut bus = busd::bus::Bus::for_address(Some(&address)).await.unwrap();
        tokio::spawn(async move {
            let _ = bus.run().await;
        });
        let connect = || async {
            zbus::connection::Builder::address(address.as_str())
                .unwrap()
                .build()
                .await
                .unwrap()
        };
        let (server, client) = (connect().await, connect().await);
        let (snap_tx, snap_rx) = watch::channel(Snapshot::default());
        let (publishing_tx, publishing_rx) = watch::channel(false);
        let (commands, _requests) = mpsc::channel(1);
        let path = board_path("b1");
        server
            .object_server()
            .at(path.as_str(), Board1::new(snap_rx, publishing_rx, commands))
            .await
            .unwrap();
        let object = OwnedObjectPath::try_from(path.clone()).unwrap();
        let publisher = Publisher::new(snap_tx, publishing_tx, Some((server.clone(), object)));

        let signals = |member: &'static str, iface: &'static str| {
            let client = client.clone();
            async move {
                let rule = zbus::MatchRule::builder()
                    .msg_type(zbus::message::Type::Signal)
                    .interface(iface)
                    .unwrap()
                    .member(member)
                    .unwrap()
                    .build();
                zbus::MessageStream::for_match_rule(rule, &client, None)
                    .await
                    .unwrap()
            }
        };
        let mut made = signals("MoveMade", BOARD_INTERFACE).await;
        let mut changed = signals("PropertiesChanged", "org.freedesktop.DBus.Properties").await;
        let proxy = zbus::proxy::Builder::<zbus::Proxy>::new(&client)
            .destination(server.unique_name().unwrap().to_owned())
            .unwrap()
            .path(path.clone())
            .unwrap()
            .interface(BOARD_INTERFACE)
            .unwrap()
            .cache_properties(zbus::proxy::CacheProperties::No)
            .build()
            .await
            .unwrap();

        let fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
        let e4 = Event {
            t: 1.0,
            kind: EventKind::Move {
                ply: 1,
                san: "e4".into(),
                uci: "e2e4".into(),
                fen: fen.into(),
                side: crate::rules::Side::White,
                inferred: false,
            },
        };
        publisher.signal(std::slice::from_ref(&e4)).await;
        let signal = tokio::time::timeout(Duration::from_secs(5), made.next())
            .await
            .unwrap();
        assert!(signal.is_some());
        let read = tokio::spawn(async move { proxy.get_property::<String>("LastMove").await.unwrap() });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !read.is_finished(),
            "a property was read before the snapshot of the signal sent"
        );
        publisher
            .publish(Snapshot {
                last_move: "e2e4".into(),
                fen: fen.into(),
                moves: vec!["e4".into()],
                ..Snapshot::default()
            })
            .await;
        let last = tokio::time::timeout(Duration::from_secs(5), read)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(last, "e2e4");

        // The next PropertiesChanged: (interface, changed properties).
        type Changed = (String, HashMap<String, zbus::zvariant::OwnedValue>, Vec<String>);
        async fn next_change(
            changed: &mut zbus::MessageStream,
        ) -> (String, HashMap<String, zbus::zvariant::OwnedValue>) {
            let msg = tokio::time::timeout(Duration::from_secs(5), changed.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            let (iface, props, _): Changed = msg.body().deserialize().unwrap();
            (iface, props)
        }
        let (iface, props) = next_change(&mut changed).await;
        assert_eq!(iface, BOARD_INTERFACE);
        let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(names, ["Fen", "LastMove", "Moves"]);

        // The names and types written out in `changed_properties` are the
        // interface's own: a snapshot that differs in every property gives a
        // PropertiesChanged equal to what GetAll answers.
        let all = Snapshot {
            connected: true,
            device: "/dev/eboard/b1".into(),
            serial_number: "12345".into(),
            orientation: "normal".into(),
            status: "playing".into(),
            fen: "8/8/8/8/8/8/8/K6k w - - 0 1".into(),
            moves: vec!["e4".into(), "e5".into()],
            pgn: "1. e4 e5 *".into(),
            last_move: "e7e5".into(),
            white_clock_ms: 5_400_000,
            black_clock_ms: 5_399_000,
            clock_running: "white".into(),
            result: "1-0".into(),
            termination: "checkmate".into(),
            irregularity: "displaced".into(),
            event: "Open".into(),
            round: "4".into(),
            board_number: 7,
            white: "A".into(),
            black: "B".into(),
            time_control: "5400+30".into(),
            tags: [("Board".to_string(), "7".to_string())].into(),
            fault: "restarted".into(),
            ..Snapshot::default()
        };
        publisher.publish(all).await;
        let (_, props) = next_change(&mut changed).await;
        let properties = zbus::fdo::PropertiesProxy::builder(&client)
            .destination(server.unique_name().unwrap().to_owned())
            .unwrap()
            .path(path.clone())
            .unwrap()
            .build()
            .await
            .unwrap();
        let name = zbus::names::InterfaceName::from_static_str_unchecked(BOARD_INTERFACE);
        let got = properties.get_all(name).await.unwrap();
        assert_eq!(got.len(), 23);
        assert_eq!(props, got);
    }

    #[test]
    fn commands_from_json_are_what_record_gives() {
        let all = [
            Command::NewGame(String::new()),
            Command::SetPosition("8/8/8/8/8/8/8/K6k w - - 0 1".into()),
            Command::Reinstate(12),
            Command::SetResult("1-0".into()),
            Command::SetTimeControl("40/5400+30:1800+30".into()),
            Command::ShowText("ARBITER".into(), 5),
            Command::SetPlayers("Carlsen, Magnus".into(), "Caruana, Fabiano".into()),
            Command::SetClock(60_000, -1),
            Command::AddTime("black".into(), 120),
            Command::SetTags([("WhiteElo".to_string(), "2830".to_string())].into()),
            Command::SetPairing(3, [("White".to_string(), "Carlsen, Magnus".to_string())].into()),
        ];
        assert_eq!(all.len(), CHANGING_METHODS.len());
        for c in all {
            let (method, args) = c.record();
            assert_eq!(Command::from_json(method, &args).unwrap(), c);
        }
    }

    #[test]
    fn malformed_arguments_say_what_is_wrong() {
        let e = |m: &str, a: serde_json::Value| Command::from_json(m, a.as_array().unwrap()).unwrap_err();
        assert!(e("Resign", json!([])).contains("no method Resign"));
        assert!(e("SetPlayers", json!(["A"])).contains("takes 2"));
        assert!(e("SetPlayers", json!(["A", 3])).contains("argument 2 must be a string"));
        assert!(e("Reinstate", json!([-1])).contains("out of range"));
        assert!(e("SetClock", json!([1.5, 2])).contains("integer"));
        assert!(e("AddTime", json!(["white", 1u64 << 40])).contains("out of range"));
    }

    #[test]
    fn arguments_are_trimmed_and_bounded_before_they_are_accepted() {
        let padded = format!("  8/8/8/8/8/8/8/K6k w - - 0 1{}", " ".repeat(1 << 20));
        assert_eq!(
            Command::NewGame(padded).normalized().unwrap(),
            Command::NewGame("8/8/8/8/8/8/8/K6k w - - 0 1".into())
        );
        let long = |n: usize| "x".repeat(n);
        for c in [
            Command::SetPosition(long(101)),
            Command::SetPlayers(long(801), "B".into()),
            Command::SetPlayers("A".into(), long(801)),
            Command::ShowText(long(101), 5),
            Command::SetResult(long(9)),
            Command::AddTime(long(9), 1),
            Command::SetTimeControl("40/5400+30:".repeat(3000)),
        ] {
            match c.clone().normalized() {
                Err(BusError::InvalidArgument(m)) => assert!(m.contains("at most"), "{c:?}: {m}"),
                other => panic!("{c:?} was not refused: {other:?}"),
            }
        }
        assert_eq!(
            Command::SetPlayers(" Carlsen, Magnus ".into(), long(100))
                .normalized()
                .unwrap(),
            Command::SetPlayers("Carlsen, Magnus".into(), long(100))
        );
    }
}
