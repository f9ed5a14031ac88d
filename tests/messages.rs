//! What a newcomer reads when something is off: each message says what is wrong
//! and what to do, checked on the real binary's output (issue 49).

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary as a command to run.
fn bin() -> Command {
    Command::new(common::process::bin())
}

/// A command run to its end (at most 60 s): exit code, stdout, stderr.
fn run(cmd: &mut Command) -> (i32, String, String) {
    let what = format!("{cmd:?}");
    let out = common::output_within(cmd, 60, &what);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What a long-running command wrote (stdout and stderr, merged by line) until a
/// line containing `until` (or `secs` seconds, or its end); it is then killed.
fn output_until(cmd: &mut Command, until: &str, secs: u64) -> String {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let readers: Vec<_> = [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ]
    .into_iter()
    .map(|r| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(r).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        })
    })
    .collect();
    drop(tx);
    let end = Instant::now() + Duration::from_secs(secs);
    let mut text = String::new();
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => {
                text.push_str(&line);
                text.push('\n');
                if line.contains(until) {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let _ = child.kill();
    common::wait_exit_blocking(&mut child, 10, "the command after SIGKILL");
    for r in readers {
        let _ = r.join();
    }
    text
}

/// `ctl resutl`: clap says which command was meant.
#[test]
fn a_mistyped_ctl_command_is_answered_with_the_one_meant() {
    let (code, _, err) = run(bin().args(["ctl", "resutl", "1", "1-0"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("similar") && err.contains("'result'"), "{err}");
}

/// `ctl time-control 1 bogus`: what is wrong (no empty backticks) and the forms.
#[test]
fn a_bad_time_control_lists_the_forms() {
    let (code, _, err) = run(bin().args(["ctl", "time-control", "1", "bogus"]));
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("``"), "{err}");
    assert!(err.contains("`bogus` is not a time control"), "{err}");
    assert!(err.contains("90+30") && err.contains("*300"), "{err}");
}

/// `ctl add-time 1 White +2m`: the side in any case (the call then goes to the
/// bus, which is not there: refused for that, exit 1, not a usage error).
#[test]
fn add_time_takes_the_side_in_any_case() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = format!("unix:path={}", dir.path().join("no-bus").display());
    for side in ["White", "BLACK", "white"] {
        let (code, _, err) = run(bin()
            .args(["ctl", "add-time", "1", side, "+2m"])
            .env("DBUS_SYSTEM_BUS_ADDRESS", &nowhere));
        assert_eq!(code, 1, "{side}: {err}");
        assert!(!err.contains("invalid value"), "{side}: {err}");
    }
}

/// `ctl boards` with no system bus: says that a daemon started by hand (as the
/// demo runs it) is reached with `--bus session` (`tests/ctl`: both buses).
#[test]
fn no_system_bus_points_to_the_session_bus() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = format!("unix:path={}", dir.path().join("no-bus").display());
    let (code, _, err) = run(bin()
        .args(["ctl", "boards"])
        .env("DBUS_SYSTEM_BUS_ADDRESS", &nowhere));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--bus session"), "{err}");
}

/// A configuration with two unknown keys names both, each with its line.
#[test]
fn every_unknown_key_of_a_configuration_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::write_file(
        dir.path(),
        "old.toml",
        "event = \"Open\"\nvenue = \"Hall\"\n[rules]\nrelease = 300\nirregular_ms = 2000\nflikker_ms = 100\n",
    );
    let (code, _, err) = run(bin().args(["run", "--bus", "none", "--config"]).arg(&cfg));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 2: unknown field `venue`"), "{err}");
    assert!(err.contains("line 4: unknown field `release`"), "{err}");
    assert!(err.contains("line 6: unknown field `flikker_ms`"), "{err}");
}

/// The demo with no session bus says so in one short line, and how to get one.
#[test]
fn the_demo_without_a_session_bus_says_so_in_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = output_until(
        bin()
            .args(["demo", "--speed", "10", "--http", "none"])
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env("XDG_RUNTIME_DIR", dir.path())
            .env("TMPDIR", dir.path()),
        "D-Bus: not published",
        30,
    );
    let line = text
        .lines()
        .find(|l| l.contains("D-Bus: not published"))
        .unwrap_or_else(|| panic!("no D-Bus line:\n{text}"));
    assert!(line.contains("dbus-run-session"), "{line}");
    assert!(!line.contains("I/O error") && line.len() < 200, "{line}");
}
