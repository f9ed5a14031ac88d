//! The arbiters' sessions: in memory only, so a restart of the daemon signs
//! everyone out. A session's id (the cookie's value) begins with the run that
//! made it, so that a cookie from an earlier run is told apart from a session
//! that ended: the page then says the daemon restarted. Pure but for the random
//! bytes: time is passed in.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::arbiters::{hex, random_bytes};

/// Sessions at once (the oldest goes when one more signs in), and per user.
pub const MAX_SESSIONS: usize = 64;
pub const MAX_SESSIONS_PER_USER: usize = 8;
/// A session ends this long after its last request, and at the latest this long
/// after the login (an event's day).
pub const SESSION_IDLE: Duration = Duration::from_secs(4 * 3600);
pub const SESSION_MAX: Duration = Duration::from_secs(14 * 3600);

/// A signed-in arbiter.
#[derive(Debug, Clone)]
pub struct ConsoleSession {
    pub user: String,
    /// Sent back in `X-CSRF-Token` with every change.
    pub csrf: String,
    since: Instant,
    seen: Instant,
}

/// Why a cookie names no session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gone {
    /// No cookie, or not one of ours.
    None,
    /// A session of this run that ended (signed out, expired, pushed out).
    Ended,
    /// A session of an earlier run: the daemon restarted since.
    Restarted,
}

/// The sessions, by their secret id (the cookie's value).
pub struct Sessions {
    /// This run's mark (the daemon's start, ms since the epoch, in hex): the
    /// start of every id it makes.
    run: String,
    map: HashMap<String, ConsoleSession>,
}

impl Sessions {
    /// The sessions of the run started at `run_ms` (ms since the epoch).
    pub fn new(run_ms: u64) -> Sessions {
        Sessions {
            run: format!("{run_ms:x}"),
            map: HashMap::new(),
        }
    }

    /// A new session for `user`: its id. The oldest goes when there are too many.
    pub fn open(&mut self, user: &str, now: Instant) -> String {
        self.expire(now);
        let oldest = |map: &HashMap<String, ConsoleSession>, only: Option<&str>| {
            map.iter()
                .filter(|(_, s)| only.is_none_or(|u| s.user == u))
                .min_by_key(|(_, s)| s.seen)
                .map(|(k, _)| k.clone())
        };
        if self.map.values().filter(|s| s.user == user).count() >= MAX_SESSIONS_PER_USER {
            if let Some(k) = oldest(&self.map, Some(user)) {
                self.map.remove(&k);
            }
        }
        if self.map.len() >= MAX_SESSIONS {
            if let Some(k) = oldest(&self.map, None) {
                self.map.remove(&k);
            }
        }
        let id = format!("{}.{}", self.run, hex(&random_bytes::<32>()));
        self.map.insert(
            id.clone(),
            ConsoleSession {
                user: user.to_string(),
                csrf: hex(&random_bytes::<16>()),
                since: now,
                seen: now,
            },
        );
        id
    }

    /// The session of `id`, if it is one and has not expired (it is then seen now).
    pub fn get(&mut self, id: &str, now: Instant) -> Option<ConsoleSession> {
        self.expire(now);
        let s = self.map.get_mut(id)?;
        s.seen = now;
        Some(s.clone())
    }

    /// Why `id` (a cookie's value, if any) names no session.
    pub fn gone(&self, id: Option<&str>) -> Gone {
        let Some((run, secret)) = id.and_then(|id| id.split_once('.')) else {
            return Gone::None;
        };
        let ours = secret.len() == 64
            && secret.bytes().all(|b| b.is_ascii_hexdigit())
            && !run.is_empty()
            && run.len() <= 16
            && run.bytes().all(|b| b.is_ascii_hexdigit());
        match () {
            _ if !ours => Gone::None,
            _ if run == self.run => Gone::Ended,
            _ => Gone::Restarted,
        }
    }

    pub fn close(&mut self, id: &str) {
        self.map.remove(id);
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn expire(&mut self, now: Instant) {
        self.map.retain(|_, s| {
            now.duration_since(s.seen) < SESSION_IDLE && now.duration_since(s.since) < SESSION_MAX
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_expire_and_are_bounded() {
        let mut s = Sessions::new(1);
        let t0 = Instant::now();
        let id = s.open("alice", t0);
        assert_eq!(s.get(&id, t0).unwrap().user, "alice");
        assert!(s.get(&id, t0 + SESSION_IDLE).is_none());
        for _ in 0..MAX_SESSIONS_PER_USER + 3 {
            s.open("bob", t0);
        }
        assert_eq!(s.len(), MAX_SESSIONS_PER_USER);
        for i in 0..MAX_SESSIONS * 2 {
            s.open(&format!("u{}", i % 30), t0);
        }
        assert!(s.len() <= MAX_SESSIONS);
        let id = s.open("carol", t0);
        s.close(&id);
        assert!(s.get(&id, t0).is_none());
    }

    #[test]
    fn a_cookie_of_an_earlier_run_says_the_daemon_restarted() {
        let t0 = Instant::now();
        let mut before = Sessions::new(1_795_314_868_123);
        let old = before.open("alice", t0);
        let mut now = Sessions::new(1_795_314_999_000);
        assert!(now.get(&old, t0).is_none());
        assert_eq!(now.gone(Some(&old)), Gone::Restarted);
        let id = now.open("alice", t0);
        now.close(&id);
        assert_eq!(now.gone(Some(&id)), Gone::Ended);
        assert_eq!(now.gone(None), Gone::None);
        assert_eq!(now.gone(Some("made-up")), Gone::None);
        assert_eq!(now.gone(Some(&format!("{}.zz", "1a"))), Gone::None);
    }
}
