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
//! - [`store`]: alerts and acknowledgements, kept on disk (the decisions are
//!   each board's history, `api::history`, shown in the same words as `ctl history`);
//! - [`alerts`]: events to alerts, each board's urgency;
//! - `desk`: the alerts for the other doors (D-Bus: `ctl ack`);
//! - [`login`] and [`api`]: the handlers.
//!
//! Sessions live in memory only: a restart signs every arbiter out. Every
//! request needs a `Host` among the server's names; every change a session, its
//! `X-CSRF-Token` and a same-origin request.

pub mod alerts;
mod api;
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
use store::Store;

/// The session cookie's name.
pub const COOKIE: &str = "eb_arbiter";

/// How long a board must stay disconnected before it is an alert.
const AWAY: Duration = Duration::from_secs(3);

/// The largest request body the console takes (a FEN, tags, a login).
pub const MAX_BODY: usize = 8 * 1024;

pub struct Console {
    users: HashMap<String, String>,
    sessions: Mutex<sessions::Sessions>,
    throttle: Mutex<throttle::LoginThrottle>,
    /// Woken when an account's line changes (an attempt takes its turn or
    /// leaves), for the attempts held in it.
    turns: Notify,
    /// Password checks at once (each takes 19 MiB and tens of ms).
    checks: Semaphore,
    store: Store,
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
        let users = crate::arbiters::read_users(users)?;
        let store = Store::open(&state.join("arbiter")).map_err(|e| format!("arbiter console: {e}"))?;
        Ok(Arc::new(Console {
            throttle: Mutex::new(throttle::LoginThrottle::new(users.keys())),
            users,
            sessions: Mutex::new(sessions::Sessions::new(super::now_ms())),
            turns: Notify::new(),
            checks: Semaphore::new(2),
            store,
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

    fn throttle(&self) -> std::sync::MutexGuard<'_, throttle::LoginThrottle> {
        self.throttle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session the request's cookie names: (its id, the session).
    fn session(&self, headers: &HeaderMap) -> Option<(String, sessions::ConsoleSession)> {
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

    /// Follows every board's events (alerts) and
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

    /// One event: an alert; true if the store changed. (Decisions are the
    /// boards' own history, `api::history`, which the page reads.)
    fn observe(&self, e: &Value) -> bool {
        if e["type"] == "arbiter" {
            return false;
        }
        alerts::observe(&mut self.store.state(), e, super::now_ms())
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
