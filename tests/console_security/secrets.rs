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
