//! The arbiters' console (`/arbiter`, when `[http] arbiters` names the file of
//! their logins): every board sorted by what needs an arbiter first, alerts
//! acknowledged once for all, and the arbiter's decisions, each the same
//! journaled call as over D-Bus (`api::ask_as`, named with the arbiter's user).
//!
//! - [`auth`]: the logins file (closed to other users) and its passwords;
//! - [`sessions`]: who is signed in, in memory;
//! - [`throttle`]: failed logins slowed down per address and per user name,
//!   or, for a browser that signed in before, per device ([`device`]: its
//!   signed cookie);
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
pub mod device;
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
pub use origin::{cookie, cookies, guarded, same_origin};
use store::Store;

/// The session cookie's name over plain HTTP, and over HTTPS: `__Host-`, so
/// that the browser takes it only from a secure page of this very host, for
/// every path (`Path=/`, no `Domain`), and no page of another host, nor of
/// plain HTTP, can set one that stands before it.
pub const COOKIE: &str = "eb_arbiter";
pub const COOKIE_TLS: &str = "__Host-eb_arbiter";

/// How long a board must stay disconnected before it is an alert.
const AWAY: Duration = Duration::from_secs(3);

/// The largest request body the console takes (a FEN, tags, a login).
pub const MAX_BODY: usize = 8 * 1024;

pub struct Console {
    users: HashMap<String, String>,
    sessions: Mutex<sessions::Sessions>,
    throttle: Mutex<throttle::LoginThrottle>,
    /// What signs the device cookies.
    devices: device::DeviceKey,
    /// Woken when an account's line changes (an attempt takes its turn or
    /// leaves), for the attempts held in it.
    turns: Notify,
    /// Password checks at once (each takes 19 MiB and tens of ms).
    checks: Semaphore,
    /// The same for devices that signed in before: a flood's checks never
    /// queue ahead of theirs.
    device_checks: Semaphore,
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
        let dir = state.join("arbiter");
        let store = Store::open(&dir).map_err(|e| format!("arbiter console: {e}"))?;
        Ok(Arc::new(Console {
            throttle: Mutex::new(throttle::LoginThrottle::new()),
            devices: device::DeviceKey::open(&dir),
            users,
            sessions: Mutex::new(sessions::Sessions::new(super::now_ms())),
            turns: Notify::new(),
            checks: Semaphore::new(2),
            device_checks: Semaphore::new(1),
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

    /// The session cookie's name: `__Host-eb_arbiter` over HTTPS.
    fn cookie_name(&self) -> &'static str {
        if self.secure { COOKIE_TLS } else { COOKIE }
    }

    /// The `Set-Cookie` value of a session cookie `value` that lasts
    /// `max_age` (0: gone).
    fn session_cookie(&self, value: &str, max_age: Duration) -> String {
        let (name, path, secure) = if self.secure {
            (COOKIE_TLS, "/", "; Secure")
        } else {
            (COOKIE, "/arbiter", "")
        };
        format!(
            "{name}={value}; Path={path}; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            max_age.as_secs()
        )
    }

    /// The `Set-Cookie` value of a device cookie `value` (sent with logins
    /// only, over plain HTTP).
    fn device_cookie(&self, value: &str) -> String {
        let (name, path, secure) = if self.secure {
            (device::COOKIE_TLS, "/", "; Secure")
        } else {
            (device::COOKIE, "/arbiter/login", "")
        };
        format!(
            "{name}={value}; Path={path}; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            device::MAX_AGE.as_secs()
        )
    }

    /// The device of a login as `user`: the id of the first of the request's
    /// device cookies that this daemon made for `user` and that has not
    /// expired (a junk cookie tossed before it does not hide it).
    fn device(&self, headers: &HeaderMap, user: &str) -> Option<String> {
        let name = if self.secure {
            device::COOKIE_TLS
        } else {
            device::COOKIE
        };
        let now = super::now_ms() / 1000;
        cookies(headers, name)
            .iter()
            .find_map(|v| self.devices.check(v, user, now))
    }

    /// The session the request's cookie names: (its id, the session). Every
    /// cookie of the name is tried, in order: one tossed before the session's
    /// by another page does not hide it.
    fn session(&self, headers: &HeaderMap) -> Option<(String, sessions::ConsoleSession)> {
        let now = Instant::now();
        let mut s = self.sessions();
        cookies(headers, self.cookie_name())
            .into_iter()
            .find_map(|id| s.get(&id, now).map(|session| (id, session)))
    }

    /// Why the request's cookies name no session (one of an earlier run said
    /// first, then one that ended).
    fn gone(&self, headers: &HeaderMap) -> sessions::Gone {
        let s = self.sessions();
        let rank = |g: &sessions::Gone| match g {
            sessions::Gone::Restarted => 2,
            sessions::Gone::Ended => 1,
            sessions::Gone::None => 0,
        };
        cookies(headers, self.cookie_name())
            .iter()
            .map(|id| s.gone(Some(id)))
            .max_by_key(rank)
            .unwrap_or(sessions::Gone::None)
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
