//! Issue 48 (part): `ctl set-clock` refuses a bare number, `ctl result
//! --termination` reaches the PGN's Termination tag (and a journal of old, one
//! argument, still reads), `ctl results` prints the round as text, CSV and PGN.

use super::*;

/// A configuration for boards 1-2 (`dir`/board1..2), white on the clock's left.
pub(super) fn two_boards(dir: &Path) -> PathBuf {
    desk_open(dir, "", 2, |n| format!("White, {n}"))
}

/// The real binary on the private bus at `address`, bridging boards 1-2.
pub(super) fn start_two(cfg: &Path, dir: &Path, address: &str) -> Running {
    start_boards(cfg, dir, address, 2)
}

/// Boards 1-2 (serial numbers `{serials}1`, `{serials}2`) on a private bus in
/// `d`, the daemon bridging them: board 1 plays six plies of a real game (hands
/// seeded `seed`), board 2 stands at the start (both emulators run on their
/// own). Returns once the six plies are on disk: the bus's address, the
/// configuration's path, the daemon and board 1's game in the broadcast folder.
pub(super) async fn six_plies_on_board1(
    d: &Path,
    seed: u64,
    serials: &str,
) -> (String, PathBuf, Running, PathBuf) {
    let (address, cfg) = (private_bus(d).await, two_boards(d));
    // Dropping the handles at the end leaves the emulators running.
    let _board1 = emulate(opening(6, seed), &d.join("board1"), &format!("{serials}1"));
    let _board2 = emulate(standing(""), &d.join("board2"), &format!("{serials}2"));
    let daemon = start_two(&cfg, d, &address);
    let game1 = d.join("live/round-1/game-1.pgn");
    wait_for("six plies on board 1", 30, || plies_in(&game1) == 6).await;
    (address, cfg, daemon, game1)
}

/// Two boards, one result given with its termination: `set-clock 1 10 9` is
/// refused with the forms it takes and changes nothing; `result --termination`
/// is journaled (`SetResult` with two arguments) and is the PGN's Termination
/// tag, also after a SIGKILL; `results` says the round in text, CSV and PGN, and
/// a round no board plays is refused with where its games are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_with_its_termination_and_the_rounds_results_in_text_csv_and_pgn() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg, daemon, game1) = six_plies_on_board1(d, 41, "480").await;
    property_is(&address, 2, "Status", "playing").await;

    // A bare number is no clock time: refused (usage), nothing changed.
    let before = value_text(&property(&address, 2, "WhiteClockMs").await.unwrap());
    let o = ctl(&address, &["set-clock", "2", "10", "9"]).await;
    assert_eq!(o.code, 2, "{}{}", o.out, o.err);
    assert!(
        o.err
            .contains("`10` is not a clock time: write H:MM:SS or M:SS, as 1:30:00 or 5:00"),
        "{}",
        o.err
    );
    let o = ctl(&address, &["set-clock", "2", "1:30:00", "9"]).await;
    assert_eq!(o.code, 2, "{}", o.err);
    assert!(o.err.contains("`9` is not a clock time"), "{}", o.err);
    assert_eq!(
        value_text(&property(&address, 2, "WhiteClockMs").await.unwrap()),
        before
    );
    // The forms it takes (the journal has the decision; none of the refused).
    ok(&address, &["set-clock", "2", "1:30:00", "5:00"]).await;
    let journal = std::fs::read_to_string(d.join("state/recordings/board2.esl")).unwrap();
    assert!(
        journal.contains(" arbiter SetClock 5400000 300000\n"),
        "{journal}"
    );
    assert_eq!(journal.matches(" arbiter SetClock ").count(), 1, "{journal}");

    // A termination that is no line is a usage error.
    let o = ctl(&address, &["result", "1", "1-0", "--termination", " "]).await;
    assert_eq!(o.code, 2, "{}", o.err);
    let said = ok(&address, &["result", "1", "1-0", "--termination", "time forfeit"]).await;
    assert!(said.contains("result 1-0 (time forfeit)"), "{said}");
    property_is(&address, 1, "Result", "1-0").await;
    wait_for("board 1's PGN ends 1-0 on time", 20, || {
        tag_in(&game1, "Result") == "1-0" && tag_in(&game1, "Termination") == "time forfeit"
    })
    .await;
    let recording = d.join("state/recordings/board1.esl");
    let text = std::fs::read_to_string(&recording).unwrap();
    assert!(
        text.contains(" arbiter SetResult \"1-0\" \"time forfeit\"\n"),
        "{text}"
    );

    // The round's results.
    let table = ok(&address, &["results"]).await;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "round 1", "{table}");
    assert!(lines[1].starts_with("BOARD  WHITE"), "{table}");
    assert!(lines[2].starts_with("    1  White, 1  Black 1  1-0"), "{table}");
    assert!(
        lines[3].starts_with("    2  White, 2  Black 2  * (playing, 0 plies)"),
        "{table}"
    );
    assert_eq!(lines.len(), 4, "{table}");
    let csv = ok(&address, &["results", "--round", "1", "--format", "csv"]).await;
    assert_eq!(
        csv,
        "board,white,black,result\n1,\"White, 1\",Black 1,1-0\n2,\"White, 2\",Black 2,*\n"
    );
    let pgn = ok(&address, &["results", "--format", "pgn"]).await;
    let games: Vec<&str> = pgn.split("[Event ").filter(|g| !g.trim().is_empty()).collect();
    assert_eq!(games.len(), 2, "{pgn}");
    assert!(
        games[0].contains("[Board \"1\"]") || games[0].contains("[White \"White, 1\"]"),
        "{pgn}"
    );
    assert!(games[0].contains("[Termination \"time forfeit\"]"), "{pgn}");
    assert!(games[0].contains("[Result \"1-0\"]"), "{pgn}");
    assert!(games[1].contains("[White \"White, 2\"]"), "{pgn}");
    assert!(games[1].contains("[Result \"*\"]"), "{pgn}");
    let o = ctl(&address, &["results", "--round", "2"]).await;
    assert_eq!(o.code, 1, "{}{}", o.out, o.err);
    assert!(
        o.err
            .contains("no board plays round 2 now (the boards are on round 1)")
            && o.err.contains("round-2/"),
        "{}",
        o.err
    );
    let o = ctl(&address, &["results", "--format", "xml"]).await;
    assert_eq!(o.code, 2, "{}", o.err);

    // The journal's two arguments are read back after a SIGKILL.
    daemon.kill();
    std::fs::remove_dir_all(d.join("live/round-1")).unwrap();
    let _daemon = start_two(&cfg, d, &address);
    wait_for("board 1's PGN again, ended on time", 30, || {
        tag_in(&game1, "Result") == "1-0" && tag_in(&game1, "Termination") == "time forfeit"
    })
    .await;
    property_is(&address, 1, "Result", "1-0").await;
    let csv = ok(&address, &["results", "--format", "csv"]).await;
    let boards = ok(&address, &["boards"]).await;
    assert!(csv.contains("\n1,\"White, 1\",Black 1,1-0\n"), "{csv}{boards}");

    // A finished game is changed only with --force: without it nothing is
    // called, and the refusal says what would change (issue 48, item 2).
    for (args, says) in [
        (
            &["reinstate", "1", "2"][..],
            "board 1's game is over, 1-0 (6 plies, White, 1 - Black 1): taking it back to ply 2 clears its result and drops plies 3-6; nothing was changed (run it again with --force to do it)",
        ),
        (
            &["result", "1", "0-1"][..],
            "board 1's game is over already, 1-0 (6 plies, White, 1 - Black 1): this changes its result to 0-1",
        ),
        (
            &[
                "position",
                "1",
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR",
                "w",
                "KQkq",
                "-",
                "0",
                "1",
            ][..],
            "a position of that game reopens it there and clears its result",
        ),
    ] {
        let o = ctl(&address, args).await;
        assert_eq!(o.code, 1, "{args:?}: {}{}", o.out, o.err);
        assert!(o.err.contains(says), "{args:?}: {}", o.err);
    }
    property_is(&address, 1, "Result", "1-0").await;
    let journal = std::fs::read_to_string(&recording).unwrap();
    assert!(
        !journal.contains(" arbiter Reinstate "),
        "a refused call was made"
    );
    // With --force (after the words, as arbiters type it) it is done.
    let said = ok(&address, &["reinstate", "1", "2", "--force"]).await;
    assert!(said.contains("back to ply 2"), "{said}");
    property_is(&address, 1, "Result", "").await;
    property_is(&address, 1, "Status", "playing").await;
}

/// A journal of old (`arbiter SetResult "1-0"`, one argument) still reads
/// (Termination `arbiter`), and the new form's words are the Termination tag:
/// `replay`, the real binary, on both.
#[test]
fn a_journal_with_one_or_two_arguments_to_set_result_reads() {
    let dir = tempfile::tempdir().unwrap();
    let log = |arbiter: &str| {
        format!(
            "# eboard-sensor-log 1\n0.000 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n\
             1.000 lift e2 P\n1.400 place e4 P\n5.000 {arbiter}\n"
        )
    };
    for (record, tag) in [
        ("arbiter SetResult \"1-0\"", "arbiter"),
        ("arbiter SetResult \"0-1\" \"time forfeit\"", "time forfeit"),
    ] {
        let (code, pgn, err) = replay_pgn(&dir.path().join("old.esl"), &log(record));
        assert_eq!(code, Some(0), "{record}: {err}");
        assert!(
            pgn.contains(&format!("[Termination \"{tag}\"]")),
            "{record}:\n{pgn}"
        );
    }
    // A second argument that is not text: the decision does not read and is
    // not applied (as any malformed `arbiter` record), nothing panics.
    let (code, pgn, err) = replay_pgn(&dir.path().join("bad.esl"), &log("arbiter SetResult \"1-0\" 3"));
    assert_eq!(code, Some(0), "{err}");
    assert!(pgn.contains("[Result \"*\"]"), "{pgn}");
}

/// `replay --format pgn` of a log written to `path` with `text`: its exit
/// status, standard output and standard error.
fn replay_pgn(path: &Path, text: &str) -> (Option<i32>, String, String) {
    std::fs::write(path, text).unwrap();
    let out = std::process::Command::new(bin())
        .args(["replay", "--format", "pgn"])
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
