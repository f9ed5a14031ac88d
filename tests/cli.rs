//! The command line as a user meets it: malformed logs, `replay --format sensors`,
//! `emulate --link`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::shared;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
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
            let out = bin()
                .args(["replay", "--format", format])
                .arg(&path)
                .output()
                .unwrap();
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
    let out = bin()
        .args(["replay", "--format", "sensors", "/nonexistent/x.esl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.esl"));
}

#[test]
fn replay_sensors_prints_the_board_level_stream_of_a_capture() {
    let out = bin()
        .args(["replay", "--format", "sensors"])
        .arg(shared("captures/1.esl"))
        .output()
        .unwrap();
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
    let out2 = bin()
        .args(["replay", "--format", "sensors"])
        .arg(&again)
        .output()
        .unwrap();
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
    let log = dir.path().join("game.esl");
    std::fs::write(&log, "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n0.5 lift e2 P\n0.8 place e4 P\n").unwrap();
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
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
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
        let n = tty.read(&mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(&got[..5], &[0x93, 0x00, 0x05, 3, 1]);
    assert_eq!(&got[5..8], &[0x86, 0x00, 0x43]);
    assert_eq!(&got[72..], &[0x8e, 0x00, 0x05, 52, 0, 0x8e, 0x00, 0x05, 36, 1]);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn run_refuses_a_bad_configuration_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(&cfg, "event = \"Open\"\n[rules]\nrelease = 300\n").unwrap();
    let out = bin()
        .args(["run", "--bus", "none", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml: line 3: unknown field `release`"), "{err}");
}

#[test]
fn replay_takes_thresholds_and_the_fen_header() {
    let illegal = common::fixture("scenarios/illegal_move.esl");
    let run = |args: &[&str]| {
        let out = bin().arg("replay").args(args).arg(&illegal).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    // The wrong pawn stands 2.6 s: irregular with the default 2 s threshold, not with 3 s.
    assert!(run(&["--format", "jsonl"]).contains(r#""kind":"illegal_move""#));
    let patient = run(&["--format", "jsonl", "--irregular-ms", "3000"]);
    assert!(!patient.contains(r#""type":"irregular""#), "{patient}");
    assert!(patient.contains(r#""uci":"e2e4""#));
    // A log's `# fen:` header is its start position.
    let out = bin()
        .args(["replay", "--format", "uci"])
        .arg(common::fixture("scenarios/touch_4_4_4.esl"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "# game 1\nb7b8n\ne8f7\n");
    // A bad profile is refused by the command line.
    let out = bin()
        .args(["replay", "--profile", "bullet"])
        .arg(&illegal)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
