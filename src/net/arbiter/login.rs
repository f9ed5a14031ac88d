//! Signing in: the user and password checked against the arbiters' file, as
//! the throttle (`throttle`) lets them be: a browser holding a device cookie
//! for the user (`device`) in the device's own lane; any other per address,
//! then in the user name's line. A failed login is logged with the account it
//! tried when that is an arbiter's, and otherwise with a fingerprint of the
//! name only: a password typed into the user field never reaches the log.

use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;

use super::Console;
use super::api::{answer, refused};
use super::origin::same_origin;
use super::sessions::SESSION_MAX;
use super::throttle::{Account, HOLD, Turn};
use crate::arbiters;
use crate::net::guard::Peer;

#[derive(Deserialize)]
struct Login {
    user: String,
    password: String,
}

/// A hash to check unknown users' passwords against, so that a wrong user name
/// takes as long as a wrong password.
fn decoy() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| {
        arbiters::passwd_line("decoy", &arbiters::hex(&arbiters::random_bytes::<16>()))
            .map(|l| l["decoy:".len()..].to_string())
            .unwrap_or_default()
    })
}

/// A name that is not an arbiter's, as the log shows it: 8 hex digits of a
/// keyed hash whose key is drawn at each start. The same name gives the same
/// digits while the daemon runs (so repeated tries can be told apart), and
/// nothing of the name can be read back from them.
pub fn fingerprint(name: &str) -> String {
    static KEY: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    let h = KEY.get_or_init(Default::default).hash_one(name);
    format!("{:08x}", (h >> 32) as u32)
}

/// 429 with `Retry-After` (whole seconds, rounded up).
fn too_many(why: &str, wait: Duration) -> Response {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut r = refused(
        StatusCode::TOO_MANY_REQUESTS,
        &format!("{why}: try again in {secs} s"),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    r
}

/// An attempt in an account's line: it leaves the line however the request
/// ends (the client may go while it waits).
struct InLine<'a> {
    console: &'a Console,
    account: &'a Account,
    ticket: u64,
    left: bool,
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        if !self.left {
            self.console.throttle().accounts.leave(self.account, self.ticket);
            self.console.turns.notify_waiters();
        }
    }
}

/// Waits (at most `HOLD`) for the account's turn for this attempt: `Err` with
/// how long to wait before trying again when it gets none.
async fn take_turn(c: &Console, account: &Account, ip: IpAddr) -> Result<(), Duration> {
    let ticket = c.throttle().join(account, ip, Instant::now())?;
    let mut line = InLine {
        console: c,
        account,
        ticket,
        left: false,
    };
    let deadline = tokio::time::Instant::now() + HOLD;
    loop {
        // Armed before the line is looked at, so that no change is missed.
        let changed = c.turns.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let now = Instant::now();
        let turn = c.throttle().turn(account, ticket, now);
        let until = match turn {
            Turn::Now => {
                line.left = true;
                // The others' next turn moved: they look again.
                c.turns.notify_waiters();
                return Ok(());
            }
            Turn::Gone => {
                line.left = true;
                return Err(c.throttle().accounts.retry_after(account, now));
            }
            Turn::At(at) => deadline.min(tokio::time::Instant::from_std(at)),
            Turn::Behind => deadline,
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(c.throttle().accounts.retry_after(account, now));
        }
        tokio::select! {
            _ = changed => {}
            _ = tokio::time::sleep_until(until) => {}
        }
    }
}

/// The lane a login waits in (`throttle`).
enum Lane {
    /// A browser that signed in before as the user: its device's id.
    Device(String),
    /// Any other: the user name's line (the address throttle passed).
    Name(Account),
}

/// How the log names the account a login tried: an arbiter's name as it is,
/// any other by its fingerprint only.
fn tried(known: bool, user: &str) -> String {
    if known {
        crate::log::escaped(user).to_string()
    } else {
        format!(
            "a user name not in the arbiters' file (fingerprint {})",
            fingerprint(user)
        )
    }
}

pub async fn login(
    State(c): State<Arc<Console>>,
    ConnectInfo(Peer(peer)): ConnectInfo<Peer>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !same_origin(&headers, c.secure, &c.names) {
        return refused(
            StatusCode::FORBIDDEN,
            "a login from another site's page is refused",
        );
    }
    let Ok(form) = serde_json::from_slice::<Login>(&body) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "expected {\"user\": ..., \"password\": ...}",
        );
    };
    if form.user.len() > arbiters::MAX_USER || form.password.len() > arbiters::MAX_PASSWORD {
        return refused(
            StatusCode::BAD_REQUEST,
            "the user name or the password is too long",
        );
    }
    let ip = peer.ip();
    let lane = match c.device(&headers, &form.user) {
        // A browser that signed in before as this user: slowed by its own
        // failures only.
        Some(id) => {
            let now = Instant::now();
            let wait = c.throttle().devices.attempt(&id, now);
            if !wait.is_zero() {
                return too_many("too many failed logins from this device", wait);
            }
            c.throttle().devices.failed(&id, now);
            Lane::Device(id)
        }
        None => {
            let wait = c.throttle().addresses.attempt(&ip, Instant::now());
            if !wait.is_zero() {
                return too_many("too many failed logins from your address", wait);
            }
            // Counted as failed until it succeeds: attempts sent together are
            // each counted before any is checked.
            let account = {
                let mut t = c.throttle();
                t.addresses.failed(&ip, Instant::now());
                t.accounts.of(&form.user, Instant::now())
            };
            if let Err(wait) = take_turn(&c, &account, ip).await {
                c.throttle().addresses.refund(&ip);
                return too_many(
                    "too many failed logins for this user name from several addresses (someone may be guessing its password); a browser that signed in here before is not held up",
                    wait,
                );
            }
            Lane::Name(account)
        }
    };
    let checks = match lane {
        Lane::Device(_) => &c.device_checks,
        Lane::Name(_) => &c.checks,
    };
    let Ok(_permit) = checks.acquire().await else {
        return refused(StatusCode::SERVICE_UNAVAILABLE, "stopping");
    };
    let hash = c.users.get(&form.user).cloned();
    let known = hash.is_some();
    let password = form.password;
    let ok = tokio::task::spawn_blocking(move || {
        arbiters::verify(hash.as_deref().unwrap_or_else(|| decoy()), &password)
    })
    .await
    .unwrap_or(false);
    if !(ok && known) {
        let now = Instant::now();
        let who = tried(known, &form.user);
        match &lane {
            Lane::Device(id) => {
                c.throttle().devices.confirmed(id, now);
                tracing::info!(
                    "arbiter console: failed login as {who} from {ip}, from a device that signed in before"
                );
            }
            Lane::Name(account) => {
                let one_at_a_time = {
                    let mut t = c.throttle();
                    t.addresses.confirmed(&ip, now);
                    t.accounts.confirmed(account, now)
                };
                match known {
                    true => tracing::info!("arbiter console: failed login as {who} from {ip}"),
                    false => tracing::info!("arbiter console: failed login from {ip} under {who}"),
                }
                if one_at_a_time {
                    let whose = match (account, known) {
                        (Account::Shared(_), _) => {
                            "user names tried beyond those kept apart (a line they share)".to_string()
                        }
                        (Account::Name(_), true) => format!("the account {who}"),
                        (Account::Name(_), false) => who.clone(),
                    };
                    tracing::warn!(
                        "arbiter console: {} failed logins for {whose} within {} minutes: its logins are now checked one at a time, at most one every {} s (someone may be guessing its password); browsers that signed in before are not held up",
                        super::throttle::ACCOUNT_FREE,
                        super::throttle::FORGET.as_secs() / 60,
                        super::throttle::ACCOUNT_MAX_WAIT.as_secs()
                    );
                }
            }
        }
        return refused(StatusCode::UNAUTHORIZED, "wrong user name or password");
    }
    {
        let mut t = c.throttle();
        match &lane {
            Lane::Device(id) => t.devices.succeeded(id),
            Lane::Name(account) => {
                t.addresses.succeeded(&ip);
                t.accounts.succeeded(account);
            }
        }
    }
    let id = c.sessions().open(&form.user, Instant::now());
    tracing::info!(
        "arbiter console: {} signed in from {ip}{}",
        crate::log::escaped(&form.user),
        match lane {
            Lane::Device(_) => ", from a device that signed in before",
            Lane::Name(_) => "",
        }
    );
    let mut r = answer(StatusCode::OK, json!({ "user": form.user }));
    // The session, and the device's cookie renewed (a new id, 30 days on).
    let device = c.devices.issue(&form.user, crate::net::now_ms() / 1000);
    for cookie in [c.session_cookie(&id, SESSION_MAX), c.device_cookie(&device)] {
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_hides_the_name_and_tells_names_apart() {
        let a = fingerprint("correct horse battery");
        assert_eq!(a.len(), 8);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(fingerprint("correct horse battery"), a);
        assert_ne!(fingerprint("correct horse batterx"), a);
        assert!(!a.contains("horse"));
    }
}
