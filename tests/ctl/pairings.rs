//! Pairings from files (`ctl pairings`) and from the configuration.

use super::*;

/// A round's pairings from a PGN (headers only) and then from a CSV, for three
/// boards: the games not begun take the names and every tag at once (D-Bus and
/// PGN), a game under way keeps its players, and the pairings survive a SIGKILL.
/// A file with an unknown board, a board twice or a malformed line is refused
/// whole, with the file and line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairings_from_pgn_and_csv_tag_the_next_games_and_bad_files_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg) = desk(d, "").await;
    let _boards = three_playing(d, "300", [opening(2, 21), standing(""), standing("")]);
    let daemon = start(&cfg, d, &address);
    wait_for("board 1's game under way", 30, || {
        plies_in(&d.join("live/round-1/game-1.pgn")) == 2
    })
    .await;
    property_is(&address, 3, "Status", "playing").await;

    let mut pgn = String::new();
    for n in 1..=3 {
        pgn.push_str(&format!(
            "[Event \"Desk Open\"]\n[Site \"Madrid\"]\n[Date \"2026.03.14\"]\n[Round \"3.{n}\"]\n\
             [White \"Player {n}, White\"]\n[Black \"Player {n}, Black\"]\n[Result \"*\"]\n\
             [WhiteElo \"240{n}\"]\n[BlackElo \"230{n}\"]\n[WhiteTitle \"GM\"]\n[BlackTitle \"IM\"]\n\
             [WhiteFideId \"100{n}\"]\n[BlackFideId \"200{n}\"]\n[WhiteTeam \"North\"]\n[BlackTeam \"South\"]\n\n*\n\n"
        ));
    }
    let pgn_file = d.join("round3.pgn");
    std::fs::write(&pgn_file, &pgn).unwrap();
    let said = ok(&address, &["pairings", pgn_file.to_str().unwrap()]).await;
    assert!(said.starts_with("round 3, 3 board(s) (1-3)"), "{said}");
    let round3 = d.join("live/round-3");
    for n in [2u32, 3] {
        let file = round3.join(format!("game-{n}.pgn"));
        wait_for("the pairing in the not-begun game's PGN", 10, || {
            tag_in(&file, "White") == format!("Player {n}, White")
        })
        .await;
        for (tag, want) in [
            ("Black", format!("Player {n}, Black")),
            ("Round", format!("3.{n}")),
            ("Board", n.to_string()),
            ("WhiteElo", format!("240{n}")),
            ("BlackElo", format!("230{n}")),
            ("WhiteTitle", "GM".into()),
            ("BlackTitle", "IM".into()),
            ("WhiteFideId", format!("100{n}")),
            ("BlackFideId", format!("200{n}")),
            ("WhiteTeam", "North".into()),
            ("BlackTeam", "South".into()),
        ] {
            assert_eq!(tag_in(&file, tag), want, "board {n}: {tag}");
        }
        property_is(&address, n, "Black", &format!("Player {n}, Black")).await;
        property_is(&address, n, "Round", "3").await;
    }
    let tags = property(&address, 2, "Tags").await.unwrap();
    let tags: std::collections::HashMap<String, String> = tags.try_into().unwrap();
    assert_eq!(tags.get("WhiteFideId").map(String::as_str), Some("1002"));
    // Board 1's game is under way: it keeps its players and round.
    property_is(&address, 1, "White", "White 1").await;
    property_is(&address, 1, "Round", "1").await;
    assert!(!round3.join("game-1.pgn").exists());
    // Its next game takes the pairing.
    ok(&address, &["new-game", "1", "--force"]).await;
    let next = round3.join("game-1.pgn");
    wait_for("board 1's next game in round 3", 10, || {
        tag_in(&next, "WhiteFideId") == "1001"
    })
    .await;
    assert_eq!(tag_in(&next, "White"), "Player 1, White");
    assert_eq!(tag_in(&d.join("live/round-1/game-1.pgn"), "White"), "White 1");

    // A CSV for round 4 (quoted names with commas, optional columns).
    let csv = d.join("round4.csv");
    std::fs::write(
        &csv,
        "board,white,black,white_elo,black_elo,white_fide_id,black_fide_id,white_title,black_title,white_team,black_team\n\
         1,\"Carlsen, Magnus\",\"Caruana, Fabiano\",2830,2795,1503014,2020009,GM,GM,Norway,USA\n\
         2,\"Ding, Liren\",\"Gukesh, D\",2780,2790,8603677,46616543,GM,GM,China,India\n\
         3,\"Hou, Yifan\",\"Ju, Wenjun\",2630,2560,8602980,8603006,GM,GM,China,China\n",
    )
    .unwrap();
    ok(&address, &["pairings", csv.to_str().unwrap(), "--round", "4"]).await;
    let round4 = d.join("live/round-4");
    let expect_round4 = |when: &'static str| {
        let (round4, address) = (round4.clone(), address.clone());
        async move {
            let file = round4.join("game-2.pgn");
            wait_for("round 4's pairing in board 2's PGN", 20, || {
                tag_in(&file, "White") == "Ding, Liren"
            })
            .await;
            assert_eq!(tag_in(&file, "Black"), "Gukesh, D", "{when}");
            assert_eq!(tag_in(&file, "BlackFideId"), "46616543", "{when}");
            assert_eq!(tag_in(&file, "WhiteTeam"), "China", "{when}");
            assert_eq!(tag_in(&file, "Round"), "4.2", "{when}");
            let file = round4.join("game-1.pgn");
            wait_for("round 4's pairing in board 1's PGN", 20, || {
                tag_in(&file, "White") == "Carlsen, Magnus"
            })
            .await;
            assert_eq!(tag_in(&file, "WhiteElo"), "2830", "{when}");
            property_is(&address, 3, "White", "Hou, Yifan").await;
        }
    };
    expect_round4("live").await;

    // Bad files are refused whole, with file and line; nothing changes.
    let bad = |name: &str, text: &str| {
        let path = d.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let header = "board,white,black\n";
    let unknown = bad("unknown.csv", &format!("{header}1,A,B\n9,C,D\n2,E,F\n"));
    let twice = bad("twice.csv", &format!("{header}1,A,B\n2,C,D\n1,E,F\n"));
    let malformed = bad("malformed.csv", &format!("{header}1,A,B\n2,\"C,D\n3,E,F\n"));
    let broken_pgn = bad(
        "broken.pgn",
        "[Round \"5.1\"]\n[White \"A\"]\n[Black \"B\"]\n\n[Round \"5.2\"]\n[White \"C\n",
    );
    for (file, code, says) in [
        (
            &unknown,
            1,
            format!("{}:3: no board 9: boards are 1-3", unknown.display()),
        ),
        (
            &twice,
            1,
            format!("{}:4: board 1 is paired twice", twice.display()),
        ),
        (
            &malformed,
            1,
            format!("{}:3: a quoted field", malformed.display()),
        ),
        (&broken_pgn, 1, format!("{}:6: ", broken_pgn.display())),
    ] {
        let o = ctl(&address, &["pairings", file.to_str().unwrap()]).await;
        assert_eq!(o.code, code, "{}: {}", file.display(), o.err);
        assert!(o.err.contains(&says), "{}: {}", file.display(), o.err);
    }
    // Each refusal is answered before anything is applied: the pairing stands.
    for (n, white) in [(1, "Carlsen, Magnus"), (2, "Ding, Liren"), (3, "Hou, Yifan")] {
        property_is(&address, n, "White", white).await;
    }

    // Journaled: after SIGKILL the boards still have round 4's pairing.
    daemon.kill();
    std::fs::remove_dir_all(d.join("live")).unwrap();
    let daemon = start(&cfg, d, &address);
    expect_round4("after SIGKILL").await;
    let text = std::fs::read_to_string(d.join("state/recordings/board2.esl")).unwrap();
    assert!(text.contains(" arbiter SetPairing 4 {"), "no SetPairing record");
    assert_eq!(
        daemon.logged("as before the restart, round 4 and the pairings set by `ctl pairings` stand"),
        1,
        "{}",
        daemon.log()
    );

    // A reload with the file as it was keeps what `ctl` set (it undid it before:
    // board 2's next game went back to round 1), and says so.
    common::send_signal(daemon.child.id(), libc::SIGHUP);
    logged_once(
        &daemon,
        "configuration read again: round 4 and the pairings set by `ctl pairings` stand",
    )
    .await;
    ok(&address, &["new-game", "2"]).await;
    // Answered once the new game is published.
    property_is(&address, 2, "Round", "4").await;
    property_is(&address, 2, "White", "Ding, Liren").await;
    for old in ["game-2.pgn", "game-2-2.pgn"] {
        assert!(
            !d.join("live/round-1").join(old).exists(),
            "board 2 went back to round 1"
        );
    }
    // A file that moved on to round 5 wins, and says what it replaced.
    edit_and_reload(&daemon, &cfg, "round = 1\n", "round = 5\n");
    logged_once(&daemon, "configuration read again: the file's round 5 and its pairings replace round 4 and the pairings set by `ctl pairings`").await;
    ok(&address, &["new-game", "2"]).await;
    property_is(&address, 2, "Round", "5").await;
    let next = d.join("live/round-5/game-2.pgn");
    wait_for("board 2's next game in round 5", 20, || {
        tag_in(&next, "White") == "White 2"
    })
    .await;
    assert_eq!(tag_in(&next, "Round"), "5.2");
    assert!(!d.join("state/ctl-round.json").exists(), "ctl's round still kept");

    // An earlier round's export is loaded, and said (issue 48, item 6).
    let old = d.join("old.pgn");
    std::fs::write(
        &old,
        "[Round \"2.2\"]\n[White \"Old, A\"]\n[Black \"Old, B\"]\n[BlackElo \"-\"]\n",
    )
    .unwrap();
    let o = ctl(&address, &["pairings", old.to_str().unwrap()]).await;
    assert_eq!(o.code, 0, "{}{}", o.out, o.err);
    for says in [
        "the file is round 2's pairings, the boards are on round 5: is it the right export?",
        "no rating or FIDE id given (0, - or ?), so no tag is written: board 2 (BlackElo)",
    ] {
        assert!(o.err.contains(says), "{}", o.err);
    }
}

/// `pairings = "FILE"` in the configuration: read at start (the round from the
/// file), and again when the configuration is read again (SIGHUP), where a file
/// that does not read keeps the running configuration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configurations_pairings_file_is_read_at_start_and_on_reload() {
    use eboard_bridge::daemon::{BusChoice, Daemon, DaemonConfig};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _b = emulate(standing(""), &d.join("board1"), "4001");
    std::fs::write(
        d.join("r2.pgn"),
        "[Round \"2.1\"]\n[White \"Kasparov, Garry\"]\n[Black \"Karpov, Anatoly\"]\n[WhiteElo \"2851\"]\n",
    )
    .unwrap();
    let cfg = three_boards(d, "pairings = \"r2.pgn\"\nround_format = \"round\"");
    // Without `round` the file's round stands.
    let text = std::fs::read_to_string(&cfg).unwrap().replace("round = 1\n", "");
    std::fs::write(&cfg, text).unwrap();
    let config = DaemonConfig::load(Some(&cfg)).unwrap();
    assert_eq!(config.round(), 2);
    let daemon = Daemon::start(vec![d.join("board1")], config, BusChoice::None)
        .await
        .unwrap();
    let snap = daemon.boards()[0].2.clone();
    wait_for("the pairing", 10, || snap.borrow().white == "Kasparov, Garry").await;
    assert_eq!(snap.borrow().round, "2");
    assert_eq!(
        snap.borrow().tags.get("WhiteElo").map(String::as_str),
        Some("2851")
    );
    let pgn = d.join("live/round-2/game-1.pgn");
    wait_for("its PGN", 10, || tag_in(&pgn, "WhiteElo") == "2851").await;
    assert_eq!(tag_in(&pgn, "Round"), "2", "round_format = \"round\"");
    assert_eq!(tag_in(&pgn, "Board"), "1");

    std::fs::write(
        d.join("r2.pgn"),
        "[Round \"2.1\"]\n[White \"Anand, Viswanathan\"]\n[Black \"Karpov, Anatoly\"]\n",
    )
    .unwrap();
    daemon.reload(DaemonConfig::load(Some(&cfg)).unwrap()).await;
    wait_for("the new pairing", 10, || {
        snap.borrow().white == "Anand, Viswanathan"
    })
    .await;
    assert!(!snap.borrow().tags.contains_key("WhiteElo"));
    // A file that does not read: the configuration is refused, with file and line.
    std::fs::write(
        d.join("r2.pgn"),
        "[Round \"2.1\"]\n[White \"A\"]\n[Black \"B\"]\n\n[Round \"2.1\"]\n[White \"C\"]\n[Black \"D\"]\n",
    )
    .unwrap();
    let e = DaemonConfig::load(Some(&cfg)).unwrap_err().to_string();
    assert!(e.contains("r2.pgn:5: board 1 is paired twice"), "{e}");
    daemon.shutdown().await;
}
