//! The command line as a user meets it: malformed logs, `replay --format sensors`,
//! `emulate --link`.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::data;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
}

/// The lines `reader` gives, each sent as it comes by a thread of its own (a
/// read has no timeout); the channel closes at its end.
fn lines_of(reader: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Runs the binary to its end (at most a minute) and returns what it said.
fn run(cmd: &mut Command) -> std::process::Output {
    let what = format!("{cmd:?}");
    common::output_within(cmd, 60, &what)
}

#[test]
fn malformed_logs_exit_2_naming_file_line_and_problem() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "verb.esl",
            "# eboard-sensor-log 1\n0 board 8/8/8/8/8/8/8/8\n1 jump e2\n",
            3,
            "unknown verb `jump`",
        ),
        (
            "hex.esl",
            "# eboard-sensor-log 1\n0 rx 8e 0z\n",
            2,
            "bad hex `0z`",
        ),
        (
            "square.esl",
            "# eboard-sensor-log 1\n0 lift k4\n",
            2,
            "bad square `k4`",
        ),
        (
            "time.esl",
            "# eboard-sensor-log 1\n2 note a\n1 note b\n",
            3,
            "time goes back",
        ),
        ("header.esl", "0 lift e2\n", 1, "missing header"),
        (
            "piece.esl",
            "# eboard-sensor-log 1\n0 board 8/8/8/8/8/8/4P3/8\n1 lift e2 Q\n",
            3,
            "the board has P there",
        ),
    ];
    for (name, text, line, problem) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        for format in ["sensors", "uci", "jsonl"] {
            let out = run(bin().args(["replay", "--format", format]).arg(&path));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name} {format}: {stderr}");
            {
                let at = format!("{}:{line}: ", path.display());
                assert!(
                    stderr.contains(&at) && stderr.contains(problem),
                    "{name}: {stderr}"
                );
            }
        }
    }
    let out = run(bin().args(["replay", "--format", "sensors", "/nonexistent/x.esl"]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    // The file as a whole: no line number.
    assert!(
        err.contains("/nonexistent/x.esl: cannot read: No such file or directory"),
        "{err}"
    );
}

#[test]
fn replay_sensors_prints_the_board_level_stream_of_a_capture() {
    let out = run(bin()
        .args(["replay", "--format", "sensors"])
        .arg(data("captures/1.esl")));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert_eq!(first, "0.000 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    assert!(!text.contains("skipped"), "a real capture decodes completely");
    assert!(text.lines().any(|l| l == "1.010 lift e2 P"), "first move's lift");
    assert!(text.lines().any(|l| l == "1.020 place e4 P"));
    assert!(
        text.lines()
            .any(|l| l.starts_with("# ") && l.ends_with("press left (lever)"))
    );
    // The output is itself a sensor log of decoded records: it replays.
    let dir = tempfile::tempdir().unwrap();
    let again = dir.path().join("again.esl");
    std::fs::write(&again, format!("# eboard-sensor-log 1\n{text}")).unwrap();
    let out2 = run(bin().args(["replay", "--format", "sensors"]).arg(&again));
    assert!(out2.status.success(), "{}", String::from_utf8_lossy(&out2.stderr));
    let lifts = |t: &str| {
        t.lines()
            .filter(|l| l.contains(" lift ") || l.contains(" place "))
            .count()
    };
    assert_eq!(lifts(&String::from_utf8(out2.stdout).unwrap()), lifts(&text));
}

#[test]
fn emulate_links_a_pty_that_answers_like_a_board() {
    let dir = tempfile::tempdir().unwrap();
    let moves = format!("{}0.5 lift e2 P\n0.8 place e4 P\n", common::AT_THE_START);
    let log = common::write_file(dir.path(), "game.esl", &moves);
    let link = dir.path().join("board0");
    let mut child = bin()
        .args(["emulate", "--speed", "5", "--log"])
        .arg(&log)
        .arg("--link")
        .arg(&link)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its first line.
    let lines = lines_of(child.stdout.take().unwrap());
    let first = lines.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| {
        let _ = child.kill();
        panic!("timed out after 10 s waiting for `emulate` to print its pty's path")
    });
    assert!(first.trim().starts_with("/dev/pts/"), "{first}");
    assert_eq!(std::fs::read_link(&link).unwrap().to_str().unwrap(), first.trim());

    // A plain blocking open of the link, as any serial tool would.
    let mut tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&link)
        .unwrap();
    tty.write_all(&[0x4d, 0x42, 0x4b]).unwrap();
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 128];
    // version (5) + dump (67) + two field updates (10)
    while got.len() < 82 && std::time::Instant::now() < deadline {
        // A read only once poll(2) says there are bytes: a blocking read could wait
        // for ever.
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut fd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&tty),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: one valid pollfd for the duration of the call.
        if unsafe { libc::poll(&mut fd, 1, ms) } <= 0 {
            continue;
        }
        let n = tty.read(&mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        got.len() >= 82,
        "timed out after 10 s waiting for the board's answer: {got:02x?}"
    );
    assert_eq!(&got[..5], &[0x93, 0x00, 0x05, 3, 1]);
    assert_eq!(&got[5..8], &[0x86, 0x00, 0x43]);
    assert_eq!(&got[72..], &[0x8e, 0x00, 0x05, 52, 0, 0x8e, 0x00, 0x05, 36, 1]);
    drop(tty);
    // Stopped as a service manager stops it: it ends cleanly, its link with it.
    common::send_signal(child.id(), libc::SIGTERM);
    let status = common::wait_exit_blocking(&mut child, 10, "`emulate` after SIGTERM");
    assert!(status.success(), "{status:?}");
    assert_link_removed(&link, "SIGTERM");
}

/// Fails the test when `emulate`'s link is still there after `signal` stopped it.
fn assert_link_removed(link: &std::path::Path, signal: &str) {
    assert!(
        std::fs::symlink_metadata(link).is_err(),
        "the link {} is left after {signal}",
        link.display()
    );
}

/// `emulate --link` interrupted (SIGINT) or terminated (SIGTERM) while it waits
/// for a host exits cleanly and removes its link.
#[test]
fn emulate_removes_its_link_when_stopped_by_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let log = common::write_file(dir.path(), "game.esl", common::AT_THE_START);
    for (name, signal) in [("SIGTERM", libc::SIGTERM), ("SIGINT", libc::SIGINT)] {
        let link = dir.path().join(format!("board-{name}"));
        let mut child = bin()
            .args(["emulate", "--log"])
            .arg(&log)
            .arg("--link")
            .arg(&link)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while std::fs::symlink_metadata(&link).is_err() {
            if std::time::Instant::now() >= until {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "timed out after 10 s waiting for `emulate` to make {}",
                    link.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        common::send_signal(child.id(), signal);
        let status = common::wait_exit_blocking(&mut child, 10, &format!("`emulate` after {name}"));
        assert!(status.success(), "{name}: {status:?}");
        assert_link_removed(&link, name);
    }
}

#[test]
fn run_refuses_a_bad_configuration_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(&cfg, "event = \"Open\"\n[rules]\nrelease = 300\n").unwrap();
    let out = run(bin().args(["run", "--bus", "none", "--config"]).arg(&cfg));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml: line 3: unknown field `release`"), "{err}");
}

#[test]
fn replay_takes_thresholds_and_the_fen_header() {
    let illegal = common::fixture("scenarios/illegal_move.esl");
    let replay = |args: &[&str]| {
        let out = run(bin().arg("replay").args(args).arg(&illegal));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    // The wrong pawn stands 2.6 s: irregular with the default 2 s threshold, not with 3 s.
    assert!(replay(&["--format", "jsonl"]).contains(r#""kind":"illegal_move""#));
    let patient = replay(&["--format", "jsonl", "--irregular-ms", "3000"]);
    assert!(!patient.contains(r#""type":"irregular""#), "{patient}");
    assert!(patient.contains(r#""uci":"e2e4""#));
    // A log that states the settings it was judged by is judged by them; an
    // option given stands over them.
    let dir = tempfile::tempdir().unwrap();
    let stated = dir.path().join("stated.esl");
    let text = std::fs::read_to_string(&illegal).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    std::fs::write(
        &stated,
        format!("{first}\n# settings: {{\"irregular_ms\":3000}}\n{rest}"),
    )
    .unwrap();
    let run_stated = |args: &[&str]| {
        let out = run(bin().arg("replay").args(args).arg(&stated));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(run_stated(&["--format", "jsonl"]), patient);
    let strict = run_stated(&["--format", "jsonl", "--irregular-ms", "2000"]);
    assert!(strict.contains(r#""kind":"illegal_move""#), "{strict}");
    // A log's `# fen:` header is its start position.
    let out = run(bin()
        .args(["replay", "--format", "uci"])
        .arg(common::fixture("scenarios/touch_4_4_4.esl")));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "# game 1\nb7b8n\ne8f7\n");
    // A bad profile is refused by the command line.
    let out = run(bin().args(["replay", "--profile", "bullet"]).arg(&illegal));
    assert_eq!(out.status.code(), Some(2));
    // So is a threshold over an hour (its deadlines would overflow the clock).
    for option in ["--release-ms", "--flicker-ms", "--irregular-ms"] {
        let out = run(bin()
            .args(["replay", option, "18446744073709551615"])
            .arg(&illegal));
        assert_eq!(out.status.code(), Some(2), "{option}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(option) && err.contains("more than an hour"), "{err}");
    }
}

/// A configuration with its folders in `dir`.
fn folders(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let text = format!(
        "output = \"{}\"\nstate = \"{}\"\n{extra}",
        dir.join("live").display(),
        dir.join("state").display()
    );
    common::write_file(dir, "c.toml", &text)
}

/// Runs `eboard-bridge run ARGS`, waits until its stderr holds `wanted` (or 10 s),
/// stops it and returns what it said.
fn run_says(args: &[&str], cfg: &std::path::Path, wanted: &str) -> String {
    let mut child = bin()
        .arg("run")
        .args(args)
        .arg("--config")
        .arg(cfg)
        .env_remove("RUST_LOG")
        .env_remove("JOURNAL_STREAM")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = lines_of(child.stderr.take().unwrap());
    let mut said = String::new();
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !said.contains(wanted) {
        let left = until.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => said += &(l + "\n"),
            Err(_) => break,
        }
    }
    child.kill().unwrap();
    common::wait_exit_blocking(&mut child, 10, "`run` after SIGKILL");
    said
}

/// Run without RUST_LOG, the daemon says what it waits for and why, in plain text
/// when its stderr is not a terminal.
#[test]
fn run_says_which_board_it_waits_for_and_why_without_colours() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = folders(dir.path(), "");
    let said = run_says(
        &["--bus", "none", "--device", "/dev/nonexistent-board"],
        &cfg,
        "waiting for it",
    );
    // A warning (not information a newcomer's eye passes over), with what to check.
    let line = common::line_with(&said, "/dev/nonexistent-board: no board there");
    assert!(line.contains("WARN"), "{line}");
    assert!(
        line.contains("waiting for it to appear (is it plugged in? is the path right?)"),
        "{line}"
    );
    assert!(!said.contains('\u{1b}'), "colour codes in piped logs: {said:?}");
}

/// `run` says where it writes at its start: the recordings and the broadcast
/// folder, as absolute paths (issue 59).
#[test]
fn run_says_where_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = folders(dir.path(), "");
    let said = run_says(
        &["--bus", "none", "--device", "/dev/nonexistent-board"],
        &cfg,
        "broadcast folder",
    );
    let line = common::line_with(&said, "writing the recordings");
    assert!(line.contains("INFO"), "{line}");
    assert!(
        line.contains(&format!(
            "writing the recordings (each board's journal) in {}, the broadcast folder in {}",
            dir.path().join("state/recordings").display(),
            dir.path().join("live").display()
        )),
        "{said}"
    );
}

/// A board named only in a `[[board]]` entry by its device is bridged.
#[test]
fn a_board_entry_with_a_device_alone_is_bridged() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = folders(
        dir.path(),
        "[[board]]\ndevice = \"/dev/nonexistent-entry\"\nnumber = 4\n",
    );
    let said = run_says(&["--bus", "none"], &cfg, "waiting for it");
    assert!(said.contains("/dev/nonexistent-entry: no board there"), "{said}");
}

/// A bus that cannot be reached is named, with the way out.
#[test]
fn a_bus_that_is_not_there_is_named_with_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = folders(dir.path(), "");
    let address = format!("unix:path={}", dir.path().join("no-bus").display());
    let nowhere = [std::path::PathBuf::from("/dev/nonexistent-board")];
    let out = run(&mut common::process::run_command(&cfg, &nowhere, Some(&address)));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("session bus at {address}")), "{err}");
    assert!(err.contains("--bus none"), "{err}");
}

/// Every option of every command says what it is for.
#[test]
fn every_option_has_help_text() {
    for cmd in ["run", "replay", "record", "emulate", "demo"] {
        let out = run(bin().args([cmd, "-h"]));
        let help = String::from_utf8_lossy(&out.stdout);
        for line in help.lines().filter(|l| l.trim_start().starts_with("--")) {
            let text = line.trim_start();
            // `--name <VALUE>  what it is for`: two spaces and words after the option.
            assert!(
                text.split_once("  ").is_some_and(|(_, h)| !h.trim().is_empty()),
                "{cmd}: `{text}` has no help text"
            );
        }
    }
}
