//! `[http]`: where the server listens and what it allows.

use std::path::PathBuf;

use super::names::ServerNames;
use super::{events, livechess};
use serde::Deserialize;

/// `[http]` in the configuration.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Where to listen: `"127.0.0.1:1982"`, or a list; a name (`localhost:1982`)
    /// listens on every address it has (LiveChess clients reach `localhost`,
    /// which may be 127.0.0.1 or ::1).
    pub listen: Listen,
    /// Connections served at once; one more is answered 503 and closed.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Events kept for clients that reconnect (`Last-Event-ID`).
    #[serde(default = "default_history")]
    pub event_history: usize,
    /// LiveChess clients: how long (ms) a last move that neither a clock press
    /// nor the next move completed must stand before it is sent in `san`; at
    /// most a minute.
    #[serde(default = "default_settle_ms", deserialize_with = "settle_ms")]
    pub settle_ms: u64,
    /// Connections from one address at once (a hall's screens share the rest).
    #[serde(default = "default_per_address")]
    pub max_per_address: usize,
    /// Time (ms) a client has from connecting to the end of its request's headers.
    #[serde(default = "default_header_timeout")]
    pub header_timeout_ms: u64,
    /// A connection with nothing read or written for this long (ms) is closed;
    /// WebSocket clients are pinged at a third of it.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_ms: u64,
    /// The arbiters' console (`/arbiter`): a file of `USER:HASH` lines, each
    /// made by `eboard-bridge ctl passwd USER`. Without it there is no console.
    #[serde(default)]
    pub arbiters: Option<PathBuf>,
    /// HTTPS on every listening address: the certificate chain (PEM) and its
    /// private key (PEM); both or neither.
    #[serde(default)]
    pub tls_cert: Option<PathBuf>,
    #[serde(default)]
    pub tls_key: Option<PathBuf>,
    /// The names and addresses the console is reached by (`hall.example`,
    /// `192.168.1.10`): any other `Host` is refused on `/arbiter`, and changes
    /// must come from a page of one of them. Empty (not given): `localhost`,
    /// `127.0.0.1`, `::1` and the hosts of `listen` that are not wildcards.
    #[serde(default, deserialize_with = "super::names::deserialize")]
    pub server_names: Vec<String>,
    /// Plain HTTP on these addresses (`"0.0.0.0:80"`, or a list), answered
    /// only with a redirect to the same path over HTTPS; needs `tls_cert`.
    #[serde(default)]
    pub redirect_listen: Option<Listen>,
    /// How the server's thread shares the cores with the boards' threads.
    #[serde(default)]
    pub priority: Priority,
}

/// `[http] priority`: the server thread's scheduling against the boards'.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// The idle scheduling class: a board's thread that wakes takes the core at
    /// once; the spectators get what the boards and the machine's other
    /// programs leave.
    #[default]
    Idle,
    /// 10 nice levels below the daemon's other threads.
    Low,
    /// The same as the boards'.
    Normal,
}

fn default_per_address() -> usize {
    32
}

fn default_header_timeout() -> u64 {
    10_000
}

fn default_idle_timeout() -> u64 {
    60_000
}

fn default_settle_ms() -> u64 {
    livechess::SETTLE_MS
}

/// `settle_ms`: at most a minute (a move held longer is no live feed).
fn settle_ms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let ms = u64::deserialize(d)?;
    if ms > 60_000 {
        return Err(serde::de::Error::custom(format!(
            "{ms} ms is more than a minute (at most 60000)"
        )));
    }
    Ok(ms)
}

fn default_max_connections() -> usize {
    256
}

fn default_history() -> usize {
    events::DEFAULT_HISTORY
}

/// One address or several.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Listen {
    One(String),
    Many(Vec<String>),
}

impl Listen {
    pub fn addresses(&self) -> Vec<String> {
        match self {
            Listen::One(a) => vec![a.clone()],
            Listen::Many(v) => v.clone(),
        }
    }
}

impl HttpConfig {
    /// Listening on `addr`, with the defaults.
    pub fn on(addr: &str) -> HttpConfig {
        HttpConfig {
            listen: Listen::One(addr.into()),
            max_connections: default_max_connections(),
            event_history: default_history(),
            settle_ms: default_settle_ms(),
            max_per_address: default_per_address(),
            header_timeout_ms: default_header_timeout(),
            idle_timeout_ms: default_idle_timeout(),
            arbiters: None,
            tls_cert: None,
            tls_key: None,
            server_names: Vec::new(),
            redirect_listen: None,
            priority: Priority::default(),
        }
    }

    /// The names the console answers to (`server_names`, or the defaults).
    pub fn names(&self) -> ServerNames {
        ServerNames::new(&self.server_names, &self.listen.addresses())
    }

    /// What the parser alone cannot see: keys that go together.
    pub fn check(&self) -> Result<(), String> {
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err("tls_cert and tls_key go together: give both (or neither)".into());
        }
        if self.redirect_listen.is_some() && self.tls_cert.is_none() {
            return Err(
                "redirect_listen sends plain HTTP to HTTPS, which needs tls_cert and tls_key: give them, or leave redirect_listen out"
                    .into(),
            );
        }
        Ok(())
    }
}
