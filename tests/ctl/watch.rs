//! Issue 48 (part): `ctl watch` says the consequence of a completed violation
//! (the penalty's words, the article, what the arbiter may do), no empty "on",
//! whose piece a displaced square holds, and "board connected" the first time.

use super::*;
use tokio::io::AsyncBufReadExt;

/// A `ctl watch` (text, or `--json`) on the bus at `address`, its stdout's lines,
/// once it says it watches `boards` boards (within 10 s).
pub async fn watching(
    address: &str,
    json: bool,
    boards: usize,
) -> (
    tokio::process::Child,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) {
    let args: &[&str] = if json { &["watch", "--json"] } else { &["watch"] };
    let mut child = spawn_ctl(address, args, std::process::Stdio::piped());
    let mut err = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let ready = async {
        while let Ok(Some(line)) = err.next_line().await {
            if line.contains("watching") && line.contains("board(s)") {
                return line;
            }
        }
        String::new()
    };
    let line = tokio::time::timeout(Duration::from_secs(10), ready)
        .await
        .expect("ctl watch said nothing in 10 s");
    assert!(line.contains(&format!("watching {boards} board(s)")), "{line}");
    let out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, out)
}

/// Lines of `out` until `done` holds for one (at most `secs`), all of them.
pub async fn lines_until(
    out: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    secs: u64,
    done: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut seen = Vec::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, out.next_line()).await {
            Ok(Ok(Some(line))) => {
                let stop = done(&line);
                seen.push(line);
                if stop {
                    return seen;
                }
            }
            other => panic!(
                "ctl watch: {other:?} before the line awaited; so far:\n{}",
                seen.join("\n")
            ),
        }
    }
}

/// Watching before the daemon starts: each board's first connection is
/// "board connected"; black's queen lifted off d8 with white to move is said as
/// d8 (black queen), white to move; black's presses without a move are
/// completed violations whose lines (text and `--json`) carry the penalty in
/// the words the recording's events give it, the article, and the `ctl`
/// command the arbiter may run, with no empty "on".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_says_the_penalty_whose_piece_and_the_first_connection() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg) = desk(d, "[rules]\nirregular_ms = 300").await;
    let violations = at_the_start(
        "0 clock left=1:30:00 right=1:30:00 running=left\n\
         24 lift d8 q\n28 place d8 q\n\
         32 lift e2 P\n32.4 place e4 P\n32.8 press left\n\
         35 press right\n37 press left\n39 press right\n",
    );
    let _boards = three_playing(d, "481", [standing(""), violations, standing("")]);
    let (_text, mut text) = watching(&address, false, 0).await;
    let (_json, mut json) = watching(&address, true, 0).await;
    let daemon = start(&cfg, d, &address);

    let seen = lines_until(&mut text, 40, |l| l.contains("completed violation number 2")).await;
    let all = seen.join("\n");
    let line = |what: &str| {
        seen.iter()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no line with {what:?}:\n{all}"))
            .clone()
    };
    for n in 1..=3 {
        assert!(
            line(&format!("board {n} (board{n}): board connected")).ends_with("board connected"),
            "{all}"
        );
    }
    assert!(!all.contains("connected again"), "{all}");
    assert!(
        line("IRREGULAR displaced").ends_with("IRREGULAR displaced on d8 (black queen), white to move (7.4)"),
        "{all}"
    );
    assert!(!all.contains(" on ,") && !all.contains(" on  "), "{all}");
    assert!(
        line("first completed violation").ends_with(
            "IRREGULAR clock_without_move, black to move: first completed violation by black: 2 minutes \
             extra time to white (Art. 7.5.5); the arbiter may give white the extra time (ctl add-time 2 white +2m)"
        ),
        "{all}"
    );
    assert!(
        line("completed violation number 2").ends_with(
            "the game is lost for black, or drawn if white cannot checkmate by any series of legal moves \
             (Art. 7.5.5); the arbiter may declare the game lost for black (ctl result 2 1-0 --termination \
             \"rules infraction\"), or drawn if white cannot checkmate (ctl result 2 1/2 --termination \
             \"rules infraction\")"
        ),
        "{all}"
    );

    // The same in JSON, fields added to those of old.
    let seen = lines_until(&mut json, 20, |l| l.contains("completed violation number 2")).await;
    let events: Vec<serde_json::Value> = seen.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let connected: Vec<&serde_json::Value> = events.iter().filter(|e| e["type"] == "connected").collect();
    assert_eq!(connected.len(), 3, "{seen:?}");
    assert!(connected.iter().all(|e| e["again"] == false), "{seen:?}");
    let displaced = events.iter().find(|e| e["kind"] == "displaced").unwrap();
    assert_eq!(displaced["side"], "white");
    assert_eq!(displaced["squares"], serde_json::json!(["d8"]));
    assert_eq!(displaced["pieces"], serde_json::json!({"d8": "black queen"}));
    let completed: Vec<&serde_json::Value> = events.iter().filter(|e| e["completed"] == true).collect();
    assert_eq!(completed.len(), 2, "{seen:?}");
    for (e, count) in completed.iter().zip([1, 2]) {
        assert_eq!(e["kind"], "clock_without_move");
        assert_eq!(e["side"], "black");
        assert_eq!(e["count"], count);
        assert_eq!(e["squares"], serde_json::json!([]));
        assert!(e["action"].as_str().unwrap().contains("ctl "), "{e}");
    }

    // The penalty's words are the recording's events' (`eboard_core::words`).
    drop(daemon);
    let recording = d.join("state/recordings/board2.esl");
    let words: Vec<serde_json::Value> = common::replayed::replayed_events(&recording)
        .into_iter()
        .filter(|e| e["type"] == "irregular" && e["completed"] == true)
        .map(|e| e["penalty"].clone())
        .collect();
    let watched: Vec<serde_json::Value> = completed.iter().map(|e| e["penalty"].clone()).collect();
    assert_eq!(words, watched);
}
