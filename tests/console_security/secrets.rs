//! The arbiters' secrets kept theirs: an arbiters' file that every user of the
//! machine may read stops the daemon at start, saying the `chmod` that mends
//! it; a failed login's user name (a password typed into the wrong field,
//! often) never reaches the log, only a fingerprint of it.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::common::hall::{Hall, PASSWORD, USER, passwd, standing};
use crate::common::process::{Running, run_command, run_config};
use crate::common::{wait_exit, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arbiters_file_every_user_may_read_stops_the_start_with_the_chmod_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let arbiters = d.join("arbiters");
    let line = passwd(USER, PASSWORD).await;
    assert!(line.status.success());
    std::fs::write(&arbiters, &line.stdout).unwrap();
    std::fs::set_permissions(&arbiters, std::fs::Permissions::from_mode(0o644)).unwrap();
    let cfg = run_config(
        d,
        &format!(
            "[http]\nlisten = \"127.0.0.1:0\"\narbiters = \"{}\"\n",
            arbiters.display()
        ),
    );
    let board = ["/dev/nonexistent-board".into()];
    let mut daemon = Running::spawn(run_command(&cfg, &board, None).env_remove("RUST_LOG"));
    let status = wait_exit(
        &mut daemon.child,
        30,
        "the daemon with a world-readable arbiters' file",
    )
    .await;
    wait_for("the reason in the daemon's log", 10, || {
        daemon.log().contains("chmod")
    })
    .await;
    let said = daemon.log();
    assert_eq!(status.code(), Some(2), "{said}");
    let chmod = format!("`sudo chmod 640 {}`", arbiters.display());
    assert!(
        said.contains("can be read by every user of this machine (mode 0644)") && said.contains(&chmod),
        "{said}"
    );
    eprintln!(
        "console: {}",
        said.lines().find(|l| l.contains("chmod")).unwrap_or_default()
    );

    // Mended as it says (the group may read: the service's), the daemon serves.
    std::fs::set_permissions(&arbiters, std::fs::Permissions::from_mode(0o640)).unwrap();
    let daemon = Running::spawn(run_command(&cfg, &board, None).env_remove("RUST_LOG"));
    wait_for("the daemon to serve HTTP", 30, || {
        daemon.logged("HTTP: serving on") > 0
    })
    .await;
    assert_eq!(daemon.logged("every user"), 0);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_login_s_user_name_does_not_reach_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut hall = Hall::open(dir.path(), vec![standing("")], "").await;
    // A password typed into the user field, and a wrong password of a real
    // arbiter.
    let typed = "Tr0ub4dor&3-in-the-user-field";
    for (user, password) in [(typed, "x"), (USER, "Tr0ub4dor&3 guessed")] {
        let body = json!({"user": user, "password": password}).to_string();
        let a = hall.post("/arbiter/login", &[], &body).await;
        assert_eq!(a.status, 401, "{}", a.text());
    }
    wait_for("both failed logins in the log", 10, || {
        hall.log().matches("arbiter console: failed login").count() >= 2
    })
    .await;
    let log = hall.log();
    assert!(!log.contains("Tr0ub4dor"), "{log}");
    let line = crate::common::line_with(&log, "not in the arbiters' file");
    assert!(line.contains("(fingerprint "), "{line}");
    // A name of the file is the account tried: that is said.
    assert!(
        log.contains(&format!("failed login as {USER} from 127.0.0.1")),
        "{log}"
    );
    eprintln!("console: {}", line.trim());
    hall.kill();
}

/// `ctl passwd USER --file FILE` under the usual umask (022), the password on
/// standard input: its status and standard error.
async fn passwd_into(file: &std::path::Path, user: &str, password: &str) -> (Option<i32>, String) {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg("umask 022; exec \"$0\" ctl passwd \"$1\" --file \"$2\"")
        .arg(crate::common::hall::bin())
        .arg(user)
        .arg(file)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{password}\n").as_bytes()).await.unwrap();
    drop(stdin);
    let out = crate::common::Within::within(child.wait_with_output(), 30, "ctl passwd --file")
        .await
        .unwrap();
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_passwd_writes_the_arbiters_file_itself_closed_to_other_users() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("arbiters");
    // A new file: made readable by its owner and group only, whatever the
    // umask; the daemon takes it as it is.
    let (status, said) = passwd_into(&file, USER, PASSWORD).await;
    assert_eq!(status, Some(0), "{said}");
    assert_eq!(mode(&file), 0o640, "{said}");
    eprintln!("console: ctl passwd {USER} --file: {}", said.trim());
    let users = eboard_bridge::arbiters::read_users(&file).unwrap();
    assert!(eboard_bridge::arbiters::verify(&users[USER], PASSWORD));
    // Another arbiter is added; the first one's line stays as it was.
    let before = std::fs::read_to_string(&file).unwrap();
    let (status, said) = passwd_into(&file, "bob", "bob's long password").await;
    assert_eq!(status, Some(0), "{said}");
    let users = eboard_bridge::arbiters::read_users(&file).unwrap();
    assert_eq!(users.len(), 2);
    assert!(std::fs::read_to_string(&file).unwrap().starts_with(&before));
    // The first one's password changed: its line replaced, in its place.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (status, said) = passwd_into(&file, USER, "a new password for alice").await;
    assert_eq!(status, Some(0), "{said}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(&format!("{USER}:")), "{text}");
    let users = eboard_bridge::arbiters::read_users(&file).unwrap();
    assert_eq!(users.len(), 2);
    assert!(eboard_bridge::arbiters::verify(
        &users[USER],
        "a new password for alice"
    ));
    assert!(!eboard_bridge::arbiters::verify(&users[USER], PASSWORD));
    // A mode the owner chose that is closed to others is kept.
    assert_eq!(mode(&file), 0o600);
    // One open to every user (made by `>>` under umask 022) is closed, and
    // that is said.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (status, said) = passwd_into(&file, "carol", "carol's long password").await;
    assert_eq!(status, Some(0), "{said}");
    assert_eq!(mode(&file), 0o640, "{said}");
    assert!(said.contains("0644") && said.contains("0640"), "{said}");
    assert_eq!(eboard_bridge::arbiters::read_users(&file).unwrap().len(), 3);
    // Nothing else is left in the folder (the file is replaced by a rename).
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["arbiters"]);
    // A line that is not a login is not overwritten: refused, nothing changed.
    std::fs::write(&file, "not a line of ctl passwd\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (status, said) = passwd_into(&file, "dave", "dave's long password").await;
    assert_ne!(status, Some(0), "{said}");
    assert!(said.contains(":1:"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "not a line of ctl passwd\n"
    );
}
