//! Who may use the console: the arbiters' file (`USER:HASH` lines, Argon2id
//! hashes made by `eboard-bridge ctl passwd`), the sessions (in memory only: a
//! restart signs everyone out), and the throttle that slows failed logins down
//! per address. Pure but for the random bytes: time is passed in.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use argon2::password_hash::{PasswordHasher, PasswordVerifier};

/// The longest user name and password taken.
pub const MAX_USER: usize = 32;
pub const MAX_PASSWORD: usize = 256;
/// Sessions at once (the oldest goes when one more signs in), and per user.
pub const MAX_SESSIONS: usize = 64;
pub const MAX_SESSIONS_PER_USER: usize = 8;
/// A session ends this long after its last request, and at the latest this long
/// after the login (an event's day).
pub const SESSION_IDLE: Duration = Duration::from_secs(4 * 3600);
pub const SESSION_MAX: Duration = Duration::from_secs(14 * 3600);
/// Failed logins from one address that are answered at once; after them, each
/// further attempt must wait 1 s, 2 s, 4 s ... (at most a minute) after the last
/// failure, and one that comes earlier is refused (429) without being checked.
pub const FREE_FAILURES: u32 = 5;
pub const MAX_WAIT: Duration = Duration::from_secs(60);
/// Addresses the throttle remembers (the oldest forgotten first).
const MAX_ADDRESSES: usize = 4096;
/// Failures are forgotten this long after the last one.
const FORGET: Duration = Duration::from_secs(15 * 60);

/// A user name as the file and the journal take it: letters, digits, `.`, `_`, `-`.
pub fn valid_user(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_USER
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// `n` random bytes from the kernel.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    let mut filled = 0;
    while filled < N {
        // SAFETY: the pointer and length are those of the rest of `buf`.
        let r = unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), N - filled, 0) };
        if r > 0 {
            filled += r as usize;
        } else if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // getrandom(2) does not fail once the kernel's pool is ready; a
            // session id must never be guessable, so this is fatal.
            panic!("getrandom failed: {}", std::io::Error::last_os_error());
        }
    }
    buf
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The line `ctl passwd` prints: `USER:$argon2id$...`.
pub fn passwd_line(user: &str, password: &str) -> Result<String, String> {
    if !valid_user(user) {
        return Err(format!(
            "`{}` is not a user name: 1 to {MAX_USER} letters, digits, `.`, `_` or `-`",
            crate::log::clip_to(user, 40)
        ));
    }
    if password.is_empty() || password.len() > MAX_PASSWORD {
        return Err(format!("the password must have 1 to {MAX_PASSWORD} bytes"));
    }
    let salt: [u8; 16] = random_bytes();
    let hash = argon2::Argon2::default()
        .hash_password_with_salt(password.as_bytes(), &salt)
        .map_err(|e| format!("cannot hash the password: {e}"))?;
    Ok(format!("{user}:{hash}"))
}

/// The arbiters' file: user → PHC hash. Blank lines and `#` comments are skipped;
/// anything else wrong is said with the file and line.
pub fn read_users(path: &Path) -> Result<HashMap<String, String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "[http] arbiters: {}: {e} (make it with `eboard-bridge ctl passwd USER >> FILE`)",
            path.display()
        )
    })?;
    let mut users = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = format!("{}:{}", path.display(), n + 1);
        let Some((user, hash)) = line.split_once(':') else {
            return Err(format!(
                "{at}: not USER:HASH (a line of `eboard-bridge ctl passwd USER`)"
            ));
        };
        if !valid_user(user) {
            return Err(format!(
                "{at}: `{}` is not a user name",
                crate::log::clip_to(user, 40)
            ));
        }
        let parsed = argon2::password_hash::phc::PasswordHash::new(hash).map_err(|e| {
            format!("{at}: the hash does not read ({e}); make it with `eboard-bridge ctl passwd {user}`")
        })?;
        if !parsed.algorithm.as_str().starts_with("argon2") {
            return Err(format!(
                "{at}: not an Argon2 hash; make it with `eboard-bridge ctl passwd {user}`"
            ));
        }
        if users.insert(user.to_string(), hash.to_string()).is_some() {
            return Err(format!("{at}: {user} is in the file twice"));
        }
    }
    if users.is_empty() {
        return Err(format!(
            "[http] arbiters: {}: no arbiter in it (add lines of `eboard-bridge ctl passwd USER`)",
            path.display()
        ));
    }
    Ok(users)
}

/// Whether `password` is the one `hash` was made from (slow by design: run it
/// off the server's thread).
pub fn verify(hash: &str, password: &str) -> bool {
    argon2::Argon2::default()
        .verify_password(password.as_bytes(), hash)
        .is_ok()
}

/// A signed-in arbiter.
#[derive(Debug, Clone)]
pub struct Session {
    pub user: String,
    /// Sent back in `X-CSRF-Token` with every change.
    pub csrf: String,
    since: Instant,
    seen: Instant,
}

/// The sessions, by their secret id (the cookie's value).
#[derive(Default)]
pub struct Sessions {
    map: HashMap<String, Session>,
}

impl Sessions {
    /// A new session for `user`: its id. The oldest goes when there are too many.
    pub fn open(&mut self, user: &str, now: Instant) -> String {
        self.expire(now);
        let oldest = |map: &HashMap<String, Session>, only: Option<&str>| {
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
        let id = hex(&random_bytes::<32>());
        self.map.insert(
            id.clone(),
            Session {
                user: user.to_string(),
                csrf: hex(&random_bytes::<16>()),
                since: now,
                seen: now,
            },
        );
        id
    }

    /// The session of `id`, if it is one and has not expired (it is then seen now).
    pub fn get(&mut self, id: &str, now: Instant) -> Option<Session> {
        self.expire(now);
        let s = self.map.get_mut(id)?;
        s.seen = now;
        Some(s.clone())
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

struct Failures {
    count: u32,
    last: Instant,
}

/// Failed logins per address.
#[derive(Default)]
pub struct Throttle {
    map: HashMap<IpAddr, Failures>,
}

impl Throttle {
    /// How long `ip` must still wait before its next attempt is checked (zero: now).
    pub fn wait(&mut self, ip: IpAddr, now: Instant) -> Duration {
        self.map.retain(|_, f| now.duration_since(f.last) < FORGET);
        let Some(f) = self.map.get(&ip) else {
            return Duration::ZERO;
        };
        let wait = Self::delay(f.count);
        wait.saturating_sub(now.duration_since(f.last))
    }

    /// The wait after `count` failures.
    pub fn delay(count: u32) -> Duration {
        if count < FREE_FAILURES {
            return Duration::ZERO;
        }
        let doubling = (count - FREE_FAILURES).min(10);
        Duration::from_secs(1 << doubling).min(MAX_WAIT)
    }

    pub fn failed(&mut self, ip: IpAddr, now: Instant) {
        if !self.map.contains_key(&ip) && self.map.len() >= MAX_ADDRESSES {
            if let Some(k) = self.map.iter().min_by_key(|(_, f)| f.last).map(|(k, _)| *k) {
                self.map.remove(&k);
            }
        }
        let f = self.map.entry(ip).or_insert(Failures { count: 0, last: now });
        f.count = f.count.saturating_add(1);
        f.last = now;
    }

    /// The failure counted when the attempt came is confirmed now: the wait
    /// runs from the answer, however long the check took.
    pub fn confirmed(&mut self, ip: IpAddr, now: Instant) {
        if let Some(f) = self.map.get_mut(&ip) {
            f.last = now;
        }
    }

    pub fn succeeded(&mut self, ip: IpAddr) {
        self.map.remove(&ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passwd_line_verifies_its_password_only() {
        let line = passwd_line("alice", "correct horse").unwrap();
        let (user, hash) = line.split_once(':').unwrap();
        assert_eq!(user, "alice");
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(verify(hash, "correct horse"));
        assert!(!verify(hash, "correct hors"));
        // Salted: the same password hashes differently each time.
        assert_ne!(passwd_line("alice", "correct horse").unwrap(), line);
        assert!(passwd_line("al ice", "x").is_err());
        assert!(passwd_line("alice", "").is_err());
    }

    #[test]
    fn the_users_file_says_what_is_wrong_and_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arbiters");
        let line = passwd_line("bob", "pw").unwrap();
        std::fs::write(&path, format!("# arbiters\n\n{line}\n")).unwrap();
        assert_eq!(read_users(&path).unwrap().len(), 1);
        std::fs::write(&path, format!("{line}\n{line}\n")).unwrap();
        assert!(
            read_users(&path)
                .unwrap_err()
                .ends_with(":2: bob is in the file twice")
        );
        std::fs::write(&path, "bob:plain\n").unwrap();
        assert!(
            read_users(&path)
                .unwrap_err()
                .contains(":1: the hash does not read")
        );
        std::fs::write(&path, "# nobody\n").unwrap();
        assert!(read_users(&path).unwrap_err().contains("no arbiter"));
    }

    #[test]
    fn failures_past_the_free_ones_wait_longer_each_time() {
        let mut t = Throttle::default();
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..FREE_FAILURES {
            assert_eq!(t.wait(ip, t0), Duration::ZERO);
            t.failed(ip, t0);
        }
        assert_eq!(t.wait(ip, t0), Duration::from_secs(1));
        assert_eq!(t.wait(other, t0), Duration::ZERO);
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(t.wait(ip, t1), Duration::ZERO);
        t.failed(ip, t1);
        assert_eq!(t.wait(ip, t1), Duration::from_secs(2));
        assert_eq!(Throttle::delay(40), MAX_WAIT);
        t.succeeded(ip);
        assert_eq!(t.wait(ip, t1), Duration::ZERO);
    }

    #[test]
    fn sessions_expire_and_are_bounded() {
        let mut s = Sessions::default();
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
}
