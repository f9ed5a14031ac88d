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
//!
//! The board's calls, snapshot and errors are [`crate::api`]'s; this module
//! serves them on the bus: [`Board1`] (`board`), [`Manager1`] (`manager`),
//! [`Publisher`] (`publish`: signals and properties), and the pushes to lichess
//! on `Manager1` (`lichess`).

pub mod alerts;
mod board;
pub mod lichess;
mod manager;
mod publish;
#[cfg(test)]
mod tests;

pub use board::Board1;
pub use manager::{Manager1, PairingsCall, say_reloaded};
pub use publish::Publisher;

pub use crate::api::ERROR_PREFIX;

/// The well-known name.
pub const BUS_NAME: &str = "org.eboardbridge";
/// Where the `ObjectManager` is served.
pub const ROOT_PATH: &str = "/org/eboardbridge";
/// The boards' objects are `BOARD_PATH_PREFIX<id>`.
pub const BOARD_PATH_PREFIX: &str = "/org/eboardbridge/board/";
/// The board interface.
pub const BOARD_INTERFACE: &str = "org.eboardbridge.Board1";
/// The interface at [`ROOT_PATH`] for what concerns every board (a round's
/// pairings, the pushes to lichess).
pub const MANAGER_INTERFACE: &str = "org.eboardbridge.Manager1";
/// The methods that change a game (the policy lets only root and `eboard` call them):
/// `Decide`, and one named after each decision a board takes.
pub const CHANGING_METHODS: [&str; 14] = [
    "Decide",
    "SetPlayers",
    "SetTags",
    "SetPairing",
    "SetClock",
    "AddTime",
    "NewGame",
    "SetPosition",
    "Reinstate",
    "SetResult",
    "SetResultWith",
    "SetTimeControl",
    "ShowText",
    "Undo",
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
    /// An undo with nothing it may take back (the message says what to do).
    NotUndone(String),
    /// A decision the arbiter must confirm, not confirmed (`force` false): what
    /// it would change, and how to confirm it.
    NeedsForce(String),
}

impl From<crate::api::Error> for BusError {
    fn from(e: crate::api::Error) -> BusError {
        use crate::api::Error;
        match e {
            Error::InvalidArgument(m) => BusError::InvalidArgument(m),
            Error::NoGame(m) => BusError::NoGame(m),
            Error::NotConnected(m) => BusError::NotConnected(m),
            Error::Unavailable(m) => BusError::Unavailable(m),
            Error::GameUnderWay(m) => BusError::GameUnderWay(m),
            Error::NoBoard(m) => BusError::NoBoard(m),
            Error::NotUndone(m) => BusError::NotUndone(m),
            Error::NeedsForce(what) => BusError::NeedsForce(crate::rules::book::refusal(&what)),
        }
    }
}

/// A decision a typed method's arguments do not make (`Decision::new_game`,
/// ...): refused as the board's task refuses one.
impl From<crate::rules::Refused> for BusError {
    fn from(r: crate::rules::Refused) -> BusError {
        crate::api::Error::from(r).into()
    }
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
