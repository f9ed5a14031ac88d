//! Who may use the console: the arbiters' file (`USER:HASH` lines, Argon2id
//! hashes made by `eboard-bridge ctl passwd`), which must not be readable by
//! every user of the machine, and the passwords checked against it. Below both
//! its users: the console (`net::arbiter`, with its sessions and the throttle
//! of failed logins) reads the file, `ctl passwd` writes its lines.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use argon2::password_hash::{PasswordHasher, PasswordVerifier};

/// The longest user name and password taken.
pub const MAX_USER: usize = 32;
pub const MAX_PASSWORD: usize = 256;

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
/// The file must not be open to every user of the machine (`o+r` or `o+w`):
/// the hashes would be theirs to guess at, offline and without a throttle.
pub fn read_users(path: &Path) -> Result<HashMap<String, String>, String> {
    let cannot = |e: std::io::Error| {
        format!(
            "[http] arbiters: {}: {e} (make it with `eboard-bridge ctl passwd USER --file FILE`)",
            path.display()
        )
    };
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let mode = file.metadata().map_err(cannot)?.permissions().mode();
    if let Some(e) = open_to_all(path, mode) {
        return Err(e);
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(cannot)?;
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

/// The mode of an arbiters' file `ctl passwd --file` makes: its owner and
/// group may read it (the service reads it as the group `eboard-bridge`).
pub const FILE_MODE: u32 = 0o640;

/// What `write_line` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The user's line replaced one (else it was added, or the file made).
    pub replaced: bool,
    /// The file was made.
    pub made: bool,
    /// The file's mode now, and before when it was open to every user (taken
    /// away).
    pub mode: u32,
    pub closed_from: Option<u32>,
}

/// Adds `line` (`USER:HASH`, of `passwd_line`) to the arbiters' file at
/// `path`, or replaces the line of its user there (in its place; a second one
/// of the same user goes): the file is written whole to a temporary file in
/// its folder, synced and renamed over it, so a reader sees the old file or
/// the new one, never half of one. A new file is made with mode 0640 whatever
/// the umask; an existing one keeps its owner, group and mode, less what every
/// user may do (`o-rwx`: the daemon refuses a file others may read or
/// change). Comments and blank lines stay. A line that is not a login is not
/// overwritten: refused with where it is, and nothing changes.
pub fn write_line(path: &Path, line: &str) -> Result<Written, String> {
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let Some((user, _)) = line.split_once(':').filter(|(u, _)| valid_user(u)) else {
        return Err("not a line of `ctl passwd`".into());
    };
    let shown = path.display();
    let (target, old) = match std::fs::read_to_string(path) {
        Ok(text) => {
            // The file a link names is the one replaced, not the link.
            let target = std::fs::canonicalize(path).map_err(|e| format!("{shown}: {e}"))?;
            let meta = std::fs::metadata(&target).map_err(|e| format!("{shown}: {e}"))?;
            (target, Some((text, meta)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (path.to_path_buf(), None),
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    let mut lines: Vec<String> = Vec::new();
    let mut replaced = false;
    for (n, l) in old.as_ref().map_or("", |(t, _)| t.as_str()).lines().enumerate() {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            lines.push(l.to_string());
            continue;
        }
        match t.split_once(':') {
            Some((u, _)) if valid_user(u) => {
                if u != user {
                    lines.push(l.to_string());
                } else if !replaced {
                    lines.push(line.to_string());
                    replaced = true;
                }
            }
            _ => {
                return Err(format!(
                    "{shown}:{}: not USER:HASH (a line of `eboard-bridge ctl passwd USER`); \
                     mend or remove it first: nothing was changed",
                    n + 1
                ));
            }
        }
    }
    if !replaced {
        lines.push(line.to_string());
    }
    let mut text = lines.join("\n");
    text.push('\n');
    let was = old.as_ref().map(|(_, m)| m.mode() & 0o7777);
    let mode = was.map_or(FILE_MODE, |m| m & 0o770);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map_or("arbiters".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        if let Some((_, m)) = &old {
            if f.metadata()?.uid() != m.uid() || f.metadata()?.gid() != m.gid() {
                std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()))?;
            }
        }
        // Set on the open file: the umask has no say.
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &target)?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "{}: cannot write it ({e}; in {}); nothing was changed",
            target.display(),
            dir.display()
        ));
    }
    Ok(Written {
        replaced,
        made: old.is_none(),
        mode,
        closed_from: was.filter(|w| w & 0o007 != 0),
    })
}

/// What is wrong with a file of mode `mode` that every user may read or
/// change, and the command that mends it; `None` when it is closed to them.
pub fn open_to_all(path: &Path, mode: u32) -> Option<String> {
    let others = mode & 0o007;
    if others & 0o006 == 0 {
        return None;
    }
    let how = match (others & 0o004 != 0, others & 0o002 != 0) {
        (true, true) => "read and changed",
        (true, false) => "read",
        _ => "changed",
    };
    let file = shell_word(&path.display().to_string());
    Some(format!(
        "[http] arbiters: {} can be {how} by every user of this machine (mode {:04o}); the daemon does not \
         start with the arbiters' password hashes open to all. Run `sudo chmod 640 {file}` (and, for the \
         service, `sudo chown root:eboard-bridge {file}`), then start it again",
        path.display(),
        mode & 0o7777
    ))
}

/// `text` as one word for a shell (quoted when it needs to be).
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Whether `password` is the one `hash` was made from (slow by design: run it
/// off the server's thread).
pub fn verify(hash: &str, password: &str) -> bool {
    argon2::Argon2::default()
        .verify_password(password.as_bytes(), hash)
        .is_ok()
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
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
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
    fn a_line_is_added_or_replaced_in_its_place_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arbiters");
        let w = write_line(&path, "alice:h1").unwrap();
        assert!(w.made && !w.replaced && w.mode == FILE_MODE && w.closed_from.is_none());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, FILE_MODE);
        std::fs::write(&path, "# arbiters\nalice:h1\n\nbob:h2\nalice:h3").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o606)).unwrap();
        let w = write_line(&path, "alice:h4").unwrap();
        assert!(w.replaced && !w.made);
        assert_eq!((w.mode, w.closed_from), (0o600, Some(0o606)));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# arbiters\nalice:h4\n\nbob:h2\n"
        );
        write_line(&path, "carol:h5").unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .ends_with("bob:h2\ncarol:h5\n")
        );
        assert!(write_line(&path, "not a name:h").is_err());
        // Through a link, the file it names is replaced (the link stays).
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        write_line(&link, "dave:h6").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("dave:h6\n"));
    }

    #[test]
    fn a_file_every_user_may_read_is_refused_with_the_chmod_that_mends_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arbiters");
        std::fs::write(&path, passwd_line("bob", "pw").unwrap() + "\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_users(&path).unwrap_err();
        assert!(
            e.contains("can be read by every user") && e.contains("(mode 0644)"),
            "{e}"
        );
        assert!(e.contains(&format!("`sudo chmod 640 {}`", path.display())), "{e}");
        assert!(open_to_all(&path, 0o100602).unwrap().contains("can be changed"));
        for closed in [0o600, 0o640, 0o660, 0o400, 0o100640] {
            assert_eq!(open_to_all(&path, closed), None, "{closed:o}");
        }
        assert_eq!(
            shell_word("/etc/eboard-bridge/arbiters"),
            "/etc/eboard-bridge/arbiters"
        );
        assert_eq!(shell_word("/tmp/it's here"), "'/tmp/it'\\''s here'");
    }
}
