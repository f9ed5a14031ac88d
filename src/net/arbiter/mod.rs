//! The arbiters' console (`/arbiter`, when `[http] arbiters` names the file of
//! their logins): every board sorted by what needs an arbiter first, alerts
//! acknowledged once for all, and the arbiter's decisions, each the same
//! journaled call as over D-Bus (`api::ask_as`, named with the arbiter's user).
//!
//! - [`auth`]: the logins file (closed to other users) and its passwords;
//! - [`sessions`]: who is signed in, in memory;
//! - [`throttle`]: failed logins slowed down per address and per account;
//! - [`origin`]: the server's names (`Host`), same-origin changes, the
//!   headers every answer carries;
//! - [`store`]: alerts, acknowledgements and decisions, kept on disk;
//! - [`alerts`]: events to alerts, each board's urgency;
//! - `desk`: the alerts for the other doors (D-Bus: `ctl ack`);
//! - [`login`] and [`api`]: the handlers.
//!
//! Sessions live in memory only: a restart signs every arbiter out. Every
//! request needs a `Host` among the server's names; every change a session, its
//! `X-CSRF-Token` and a same-origin request.

pub mod alerts;
mod api;
pub mod auth;
mod desk;
mod login;
pub mod origin;
pub mod sessions;
pub mod store;
pub mod throttle;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use serde_json::Value;
use tokio::sync::{Notify, Semaphore, watch};

use crate::api::BoardRef;
use crate::api::lichess::RoundStatus;
use crate::net::names::ServerNames;
pub use origin::{cookie, guarded, same_origin};
use store::{Decision, Store};

/// The session cookie's name.
pub const COOKIE: &str = "eb_arbiter";

/// How long a board must stay disconnected before it is an alert.
const AWAY: Duration = Duration::from_secs(3);

/// The largest request body the console takes (a FEN, tags, a login).
pub const MAX_BODY: usize = 8 * 1024;

/// Decisions asked for from the console and not yet seen in the events: the
/// events' copy of each is then not added to the history twice.
type Pending = Vec<(String, String, Vec<Value>, String)>;

pub struct Console {
    users: HashMap<String, String>,
    sessions: Mutex<sessions::Sessions>,
    throttle: Mutex<throttle::Throttle>,
    /// Woken when an account's line changes (an attempt takes its turn or
    /// leaves), for the attempts held in it.
    turns: Notify,
    /// Password checks at once (each takes 19 MiB and tens of ms).
    checks: Semaphore,
    store: Store,
    pending: Mutex<Pending>,
    /// Served over HTTPS: the cookie is `Secure` and origins are `https://`.
    secure: bool,
    /// The names it answers to (`[http] server_names`).
    names: ServerNames,
    /// Requests under other names, said once a minute.
    misdirected: Mutex<crate::api::throttle::Throttle>,
    boards: watch::Receiver<Vec<BoardRef>>,
    /// The rounds pushed to lichess, with `[lichess]`.
    lichess: Option<watch::Receiver<Vec<RoundStatus>>>,
}

impl Console {
    /// The console: its users read (what is wrong, else), its store opened.
    pub fn open(
        users: &Path,
        state: &Path,
        secure: bool,
        names: ServerNames,
        boards: watch::Receiver<Vec<BoardRef>>,
        lichess: Option<watch::Receiver<Vec<RoundStatus>>>,
    ) -> Result<Arc<Console>, String> {
        let users = auth::read_users(users)?;
        let store = Store::open(&state.join("arbiter")).map_err(|e| format!("arbiter console: {e}"))?;
        Ok(Arc::new(Console {
            throttle: Mutex::new(throttle::Throttle::new(users.keys())),
            users,
            sessions: Mutex::new(sessions::Sessions::new(super::now_ms())),
            turns: Notify::new(),
            checks: Semaphore::new(2),
            store,
            pending: Mutex::default(),
            secure,
            names,
            misdirected: Mutex::default(),
            boards,
            lichess,
        }))
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, sessions::Sessions> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn throttle(&self) -> std::sync::MutexGuard<'_, throttle::Throttle> {
        self.throttle.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session the request's cookie names: (its id, the session).
    fn session(&self, headers: &HeaderMap) -> Option<(String, sessions::Session)> {
        let id = cookie(headers, COOKIE)?;
        let s = self.sessions().get(&id, Instant::now())?;
        Some((id, s))
    }

    /// Why the request's cookie names no session.
    fn gone(&self, headers: &HeaderMap) -> sessions::Gone {
        self.sessions().gone(cookie(headers, COOKIE).as_deref())
    }

    /// Writes the store off the server's thread; false (logged) if it failed.
    async fn save(self: &Arc<Self>) -> bool {
        let me = self.clone();
        match tokio::task::spawn_blocking(move || me.store.save()).await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                tracing::error!("arbiter console: cannot write its state: {e}");
                false
            }
            Err(_) => false,
        }
    }

    /// Follows every board's events (alerts, decisions made another way) and
    /// connections, keeping the store; until stop.
    /// `changed` changes when an event is appended (the server's relay of
    /// `events`).
    pub async fn follow(
        self: Arc<Self>,
        events: Arc<super::EventLog>,
        mut changed: watch::Receiver<u64>,
        mut stop: watch::Receiver<bool>,
    ) {
        changed.borrow_and_update();
        let mut seen = events.last_id();
        let mut look = tokio::time::interval(Duration::from_millis(500));
        let mut dirty = false;
        // Boards seen disconnected, since when: a board is reported after it
        // stayed so for `AWAY` (not while its line opens at start).
        let mut away: HashMap<String, Instant> = HashMap::new();
        loop {
            tokio::select! {
                _ = changed.changed() => {}
                _ = look.tick() => {}
                _ = stop.changed() => {
                    if dirty {
                        self.save().await;
                    }
                    return;
                }
            }
            changed.borrow_and_update();
            loop {
                let items = match events.after(seen, 256) {
                    super::events::Next::Lost(n) => {
                        seen += n;
                        continue;
                    }
                    super::events::Next::Items(items) => items,
                };
                if items.is_empty() {
                    break;
                }
                for i in items {
                    seen = i.id;
                    let Ok(e) = serde_json::from_str::<Value>(&i.json) else {
                        continue;
                    };
                    dirty |= self.observe(&e);
                }
            }
            let connected: Vec<(String, bool)> = self
                .boards
                .borrow()
                .iter()
                .map(|b| (b.id.clone(), b.snapshot.borrow().connected))
                .collect();
            {
                let mut st = self.store.state();
                let now = Instant::now();
                for (id, c) in connected {
                    if c {
                        away.remove(&id);
                    } else if now.duration_since(*away.entry(id.clone()).or_insert(now)) < AWAY {
                        continue;
                    }
                    dirty |= alerts::connection(&mut st, &id, c, super::now_ms());
                }
            }
            if dirty && self.save().await {
                dirty = false;
            }
        }
    }

    /// One event: an alert, or a decision made another way; true if the store changed.
    fn observe(&self, e: &Value) -> bool {
        if e["type"] != "arbiter" {
            return alerts::observe(&mut self.store.state(), e, super::now_ms());
        }
        let board = e["board"].as_str().unwrap_or_default().to_string();
        let method = e["method"].as_str().unwrap_or_default().to_string();
        let args = e["args"].as_array().cloned().unwrap_or_default();
        let by = e["by"].as_str().map(str::to_string);
        {
            let mut pending = self.pending();
            let mine = pending
                .iter()
                .position(|(b, m, a, u)| *b == board && *m == method && *a == args && Some(u) == by.as_ref());
            if let Some(i) = mine {
                pending.remove(i);
                return false;
            }
        }
        let d = Decision {
            t_ms: super::now_ms(),
            method,
            args,
            by,
            via: "bus".into(),
        };
        self.store.state().decided(&board, d);
        true
    }
}

/// The console's routes (merged into the server's).
pub fn routes(console: Arc<Console>) -> Router {
    Router::new()
        .route("/arbiter", get(api::page))
        .route("/arbiter/", get(api::page))
        .route("/arbiter/login", get(api::login_page).post(login::login))
        .route("/arbiter/login.js", get(api::login_script))
        .route("/arbiter/console.css", get(api::style))
        // Any other method than the route's: 401 without a session, as any path.
        .route("/arbiter/console.js", get(api::script).post(api::unknown))
        .route("/arbiter/logout", post(api::logout).get(api::unknown))
        .route("/arbiter/api/state", get(api::state).post(api::unknown))
        .route("/arbiter/api/ack", post(api::ack).get(api::unknown))
        .route("/arbiter/api/decide", post(api::decide).get(api::unknown))
        .route("/arbiter/{*rest}", get(api::unknown).post(api::unknown))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            origin::host_check,
        ))
        .with_state(console)
}
