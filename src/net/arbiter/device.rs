//! Device cookies (OWASP's "device cookies", issue 60): a browser that signed
//! in as an arbiter holds a cookie naming that arbiter, signed by the daemon
//! (HMAC-SHA-256), and a login as that arbiter that presents it has a lane of
//! its own in the throttle (`throttle::Devices`): slowed by its own failures
//! only, never by guesses from other addresses. A flood of guesses from any
//! number of addresses cannot keep the arbiter's phone or laptop out.
//!
//! The cookie is `USER:ID:EXPIRES:MAC`: the user it was made for, 12 random
//! bytes (the device's id in the throttle), when it expires (seconds since
//! 1970; 30 days after the sign-in, renewed at each one) and the MAC of the
//! three under the daemon's key. The key (32 random bytes) is made at the first
//! start and kept in `STATE/arbiter/device.key` (mode 0600), so a restart keeps
//! every device's cookie good; a key that cannot be kept is one of this run
//! only (said in the log). The cookie is no session and no password: it only
//! chooses the lane a login waits in, and the password is checked as ever.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;

use crate::arbiters::{hex, random_bytes, valid_user};

/// The device cookie's name over plain HTTP, and over HTTPS (`__Host-`:
/// only a secure page of this very host may set it, for every path).
pub const COOKIE: &str = "eb_device";
pub const COOKIE_TLS: &str = "__Host-eb_device";

/// How long a device's cookie is good after its last sign-in.
pub const MAX_AGE: Duration = Duration::from_secs(30 * 24 * 3600);

/// The key file, under the console's folder of the state directory.
const KEY_FILE: &str = "device.key";

const CONTEXT: &[u8] = b"eboard-bridge device cookie 1\0";

pub struct DeviceKey {
    key: hmac::Key,
}

impl DeviceKey {
    /// The key kept in `dir` (made there at the first start); when it cannot
    /// be read nor kept, one for this run only, and why in the log.
    pub fn open(dir: &Path) -> DeviceKey {
        let path = dir.join(KEY_FILE);
        let bytes = match std::fs::read_to_string(&path) {
            Ok(text) => match from_hex(text.trim()) {
                Some(k) => Some(k),
                None => {
                    tracing::warn!(
                        "arbiter console: {} does not read as a key: a new one is made (devices signed in before sign in once more without their own lane)",
                        path.display()
                    );
                    None
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!(
                    "arbiter console: cannot read {} ({e}): a new key is made",
                    path.display()
                );
                None
            }
        };
        let bytes = bytes.unwrap_or_else(|| {
            let k: [u8; 32] = random_bytes();
            if let Err(e) = keep(&path, &hex(&k)) {
                tracing::warn!(
                    "arbiter console: cannot keep the devices' key in {} ({e}): after a restart, devices that signed in before sign in once more without their own lane",
                    path.display()
                );
            }
            k
        });
        DeviceKey::from_bytes(&bytes)
    }

    pub fn from_bytes(bytes: &[u8; 32]) -> DeviceKey {
        DeviceKey {
            key: hmac::Key::new(hmac::HMAC_SHA256, bytes),
        }
    }

    /// What the MAC is of: the user, the device's id and when it expires.
    fn signed(user: &str, id: &str, expires: u64) -> Vec<u8> {
        let mut m = Vec::with_capacity(96);
        for part in [CONTEXT, user.as_bytes(), b"\0", id.as_bytes(), b"\0"] {
            m.extend_from_slice(part);
        }
        m.extend_from_slice(expires.to_string().as_bytes());
        m
    }

    /// A new device cookie's value for `user`, made at `now` (seconds since
    /// 1970).
    pub fn issue(&self, user: &str, now: u64) -> String {
        let id = hex(&random_bytes::<12>());
        let expires = now + MAX_AGE.as_secs();
        let tag = hmac::sign(&self.key, &Self::signed(user, &id, expires));
        format!("{user}:{id}:{expires}:{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// The device's id when `value` is a cookie this daemon made for `user`
    /// that has not expired at `now`; anything else (another user's, expired,
    /// forged, malformed) is no device.
    pub fn check(&self, value: &str, user: &str, now: u64) -> Option<String> {
        let mut parts = value.split(':');
        let (who, id, expires, mac) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || who != user || !valid_user(who) {
            return None;
        }
        if id.len() != 24 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let expires: u64 = expires.parse().ok().filter(|e| *e > now)?;
        let mac = URL_SAFE_NO_PAD.decode(mac).ok()?;
        hmac::verify(&self.key, &Self::signed(who, id, expires), &mac).ok()?;
        Some(id.to_string())
    }
}

fn from_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Writes the key to `path`, mode 0600, whole or not at all (a temporary
/// file, synced, renamed).
fn keep(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("key.tmp");
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_cookie_names_its_user_only_and_cannot_be_forged_or_stretched() {
        let key = DeviceKey::from_bytes(&[7; 32]);
        let now = 1_800_000_000;
        let v = key.issue("alice", now);
        assert!(v.len() <= 128, "{v}");
        let id = key.check(&v, "alice", now).unwrap();
        assert_eq!(id.len(), 24);
        assert!(v.starts_with(&format!("alice:{id}:")));
        // Another user's, another key's, expired, altered: no device.
        assert_eq!(key.check(&v, "bob", now), None);
        assert_eq!(DeviceKey::from_bytes(&[8; 32]).check(&v, "alice", now), None);
        assert_eq!(key.check(&v, "alice", now + MAX_AGE.as_secs()), None);
        let later = v.replacen(&format!(":{}:", now + MAX_AGE.as_secs()), ":9999999999:", 1);
        assert_ne!(later, v);
        assert_eq!(key.check(&later, "alice", now), None);
        let as_bob = v.replacen("alice:", "bob:", 1);
        assert_eq!(key.check(&as_bob, "bob", now), None);
        for junk in ["", "junk", "alice", "alice:::", &format!("{v}:x"), "alice:zz:1:2"] {
            assert_eq!(key.check(junk, "alice", now), None, "{junk}");
        }
        // Each sign-in, a device of its own.
        assert_ne!(key.check(&key.issue("alice", now), "alice", now), Some(id));
    }

    #[test]
    fn the_key_is_kept_across_restarts_closed_to_others() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let first = DeviceKey::open(dir.path());
        let v = first.issue("alice", 1_800_000_000);
        let path = dir.path().join(KEY_FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = DeviceKey::open(dir.path());
        assert!(again.check(&v, "alice", 1_800_000_000).is_some());
        // A key file that does not read is replaced (old cookies no longer
        // count).
        std::fs::write(&path, "nonsense").unwrap();
        let fresh = DeviceKey::open(dir.path());
        assert!(fresh.check(&v, "alice", 1_800_000_000).is_none());
        assert!(from_hex(std::fs::read_to_string(&path).unwrap().trim()).is_some());
    }
}
