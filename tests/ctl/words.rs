//! Issue 57, defects 2, 5 and 6: the published game's clock tags follow the
//! clock, the board numbers are the configuration's from the first line, and
//! the words of `ctl` and `ctl watch` say what was done.

use super::*;

/// A sensor log: the start position, the clock at `left` and `right`
/// (stopped), then white's e2-e4 at `at` seconds of log time, pressed.
fn e4_pressed(left: &str, right: &str, at: f64) -> SensorLog {
    at_the_start(&format!(
        "0 clock left={left} right={right} running=none\n{at} lift e2 P\n{} place e4 P\n{} press left\n",
        at + 0.3,
        at + 0.6
    ))
}

/// The clock times `ctl boards --json` shows for board `n` (white's, black's),
/// as the PGN's clock tags write them.
async fn shown_clocks(address: &str, n: usize) -> (String, String) {
    let json: serde_json::Value = serde_json::from_str(&ok(address, &["boards", "--json"]).await).unwrap();
    let b = &json.as_array().unwrap()[n - 1];
    let ms = |k: &str| b[k].as_i64().unwrap_or(-1);
    (
        eboard_bridge::ctl::format::clock(ms("white_clock_ms")),
        eboard_bridge::ctl::format::clock(ms("black_clock_ms")),
    )
}

/// Waits (at most 20 s) until the clock tags of `pgn` are `white` and `black`.
async fn clock_tags_are(pgn: &Path, white: &str, black: &str) {
    let tags = || (tag_in(pgn, "WhiteClock"), tag_in(pgn, "BlackClock"));
    let until = tokio::time::Instant::now() + Duration::from_secs(20);
    while tags() != (white.to_string(), black.to_string()) {
        assert!(
            tokio::time::Instant::now() < until,
            "{}: the clock tags are {:?}, not ({white:?}, {black:?})",
            pgn.display(),
            tags()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Defect 2: the `WhiteClock` and `BlackClock` tags follow the clock after a
/// decision and a flag, in report mode (board 1: black's 4 seconds run out, then
/// the game is given on time; board 2: `set-clock` and `add-time` while black's
/// clock runs) and in drive mode (board 3: black's time set to 2 seconds runs
/// out); they equal what `ctl boards` shows, and D-Bus's `Pgn` has them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_tags_follow_the_arbiters_times_a_flag_and_a_time_forfeit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg) = desk(d, "").await;
    let logs = [
        e4_pressed("0:05:00", "0:00:04", 1.0),
        e4_pressed("0:05:00", "0:05:00", 1.0),
        // Late enough for the time control to be set before it (20 s).
        e4_pressed("0:05:00", "0:05:00", 160.0),
    ];
    let _boards = three_playing(d, "5720", logs);
    let daemon = start(&cfg, d, &address);
    let round = d.join("live/round-1");
    let pgn = |n: u32| round.join(format!("game-{n}.pgn"));
    property_is(&address, 3, "Status", "playing").await;
    ok(&address, &["time-control", "3", "5+0"]).await;

    // Board 1: black's flag falls; the tags show black's 0:00:00 at once, and
    // still once the arbiter gives the game on time.
    wait_for("board 1's e4 in its PGN", 30, || plies_in(&pgn(1)) == 1).await;
    clock_tags_are(&pgn(1), "0:05:00", "0:00:00").await;
    ok(&address, &["result", "1", "1-0", "--termination", "time forfeit"]).await;
    wait_for("board 1 given on time", 20, || {
        tag_in(&pgn(1), "Termination") == "time forfeit"
    })
    .await;
    clock_tags_are(&pgn(1), "0:05:00", "0:00:00").await;
    let shown = shown_clocks(&address, 1).await;
    assert_eq!(
        shown,
        (tag_in(&pgn(1), "WhiteClock"), tag_in(&pgn(1), "BlackClock")),
        "ctl boards and the PGN"
    );
    let on_bus = value_text(&property(&address, 1, "Pgn").await.unwrap());
    assert!(on_bus.contains("[BlackClock \"0:00:00\"]"), "{on_bus}");

    // Board 2: the arbiter's times while black's clock runs.
    wait_for("board 2's e4 in its PGN", 30, || plies_in(&pgn(2)) == 1).await;
    ok(&address, &["set-clock", "2", "0:10:00", "0:12:00"]).await;
    clock_tags_are(&pgn(2), "0:10:00", "0:12:00").await;
    ok(&address, &["add-time", "2", "white", "+1m"]).await;
    wait_for("white's minute in board 2's clock tags", 20, || {
        tag_in(&pgn(2), "WhiteClock") == "0:11:00"
    })
    .await;
    assert!(
        tag_in(&pgn(2), "BlackClock").starts_with("0:11:"),
        "black's clock ran on from 0:12:00: {}",
        tag_in(&pgn(2), "BlackClock")
    );

    // Board 3, the daemon driving the clock: black's 2 seconds run out.
    wait_for("board 3's e4 in its PGN", 40, || plies_in(&pgn(3)) == 1).await;
    ok(&address, &["set-clock", "3", "0:05:00", "0:00:02"]).await;
    clock_tags_are(&pgn(3), "0:05:00", "0:00:00").await;
    assert_eq!(shown_clocks(&address, 3).await.1, "0:00:00");
    ok(&address, &["result", "3", "1-0", "--termination", "time forfeit"]).await;
    wait_for("board 3 given on time", 20, || tag_in(&pgn(3), "Result") == "1-0").await;
    clock_tags_are(&pgn(3), "0:05:00", "0:00:00").await;
    drop(daemon);
}

/// Defect 5: boards the configuration names by serial number, in the device
/// directory at the start, with `ctl watch` started before the daemon: each
/// board has its configured number from the first: on the bus (the object's
/// `BoardNumber` when it is added, and ever after), in every line `ctl watch`
/// prints, in `ctl boards` and in the broadcast folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boards_known_by_serial_number_have_their_numbers_from_the_first_line() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let address = private_bus(d).await;
    let dev = d.join("dev");
    std::fs::create_dir(&dev).unwrap();
    // Crossed: the first device in the folder is board 2.
    let cfg = d.join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "event = \"Desk Open\"\nround = 1\noutput = \"{}\"\nstate = \"{}\"\ndevice_dir = \"{}\"\n\
             [clock]\nwhite = \"left\"\n\
             [[board]]\nserial = \"57502\"\nnumber = 1\nwhite = \"White 1\"\nblack = \"Black 1\"\n\
             [[board]]\nserial = \"57501\"\nnumber = 2\nwhite = \"White 2\"\nblack = \"Black 2\"\n",
            d.join("live").display(),
            d.join("state").display(),
            dev.display()
        ),
    )
    .unwrap();
    let _a = emulate(standing(""), &dev.join("dgt_a"), "57501");
    let _b = emulate(standing(""), &dev.join("dgt_b"), "57502");
    let number_of = |id: &str| if id == "dgt_a" { 2 } else { 1 };
    let (_client, mut added) = common::listen(
        &address,
        "org.freedesktop.DBus.ObjectManager",
        Some("InterfacesAdded"),
    )
    .await;
    let (_client2, mut changed) = common::listen(
        &address,
        "org.freedesktop.DBus.Properties",
        Some("PropertiesChanged"),
    )
    .await;
    let mut watch = spawn_ctl(&address, &["watch", "--json"], std::process::Stdio::piped());
    let mut out = tokio::io::BufReader::new(watch.stdout.take().unwrap()).lines();
    // Its first words come once it follows the bus.
    let mut err = tokio::io::BufReader::new(watch.stderr.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(10), err.next_line())
        .await
        .expect("ctl watch said nothing in 10 s")
        .unwrap()
        .unwrap_or_default();
    assert!(first.contains("watching for it to start"), "{first}");
    let _daemon = Running::spawn(&mut run_command(&cfg, &[], Some(&address)));

    // Each board's first line on the watch: connected, under its number.
    let mut connected = std::collections::BTreeMap::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    while connected.len() < 2 {
        let line = tokio::time::timeout_at(until, out.next_line())
            .await
            .expect("ctl watch did not say both boards connected in 30 s")
            .unwrap()
            .unwrap_or_default();
        let e: serde_json::Value = serde_json::from_str(&line).unwrap();
        let id = e["id"].as_str().unwrap_or_default().to_string();
        assert_eq!(e["board"], number_of(&id), "{line}");
        if e["type"] == "connected" {
            connected.insert(id, line);
        }
    }
    let json: serde_json::Value = serde_json::from_str(&ok(&address, &["boards", "--json"]).await).unwrap();
    for b in json.as_array().unwrap() {
        let id = b["id"].as_str().unwrap();
        assert_eq!(b["number"], number_of(id), "{b}");
    }
    // The objects came on the bus with their numbers, and kept them.
    let mut seen = Vec::new();
    while let Ok(Some(Ok(m))) = tokio::time::timeout(Duration::from_millis(200), added.next()).await {
        type Added = (
            zbus::zvariant::OwnedObjectPath,
            std::collections::HashMap<String, std::collections::HashMap<String, zbus::zvariant::OwnedValue>>,
        );
        let (path, ifaces): Added = m.body().deserialize().unwrap();
        if let Some(n) = ifaces.get(BOARD_INTERFACE).and_then(|p| p.get("BoardNumber")) {
            seen.push((path.to_string(), value_text(n)));
        }
    }
    while let Ok(Some(Ok(m))) = tokio::time::timeout(Duration::from_millis(200), changed.next()).await {
        type Changed = (
            String,
            std::collections::HashMap<String, zbus::zvariant::OwnedValue>,
            Vec<String>,
        );
        let (_, props, _): Changed = m.body().deserialize().unwrap();
        if let Some(n) = props.get("BoardNumber") {
            let path = m.header().path().map(|p| p.to_string()).unwrap_or_default();
            seen.push((path, value_text(n)));
        }
    }
    assert!(seen.len() >= 2, "{seen:?}");
    for (path, n) in &seen {
        let id = path.rsplit('/').next().unwrap_or_default();
        assert_eq!(n, &number_of(id).to_string(), "{path}: {seen:?}");
    }
    let round = d.join("live/round-1");
    wait_for("both boards' games in the folder", 20, || {
        round.join("game-1.pgn").exists() && round.join("game-2.pgn").exists()
    })
    .await;
    assert!(!round.join("game-3.pgn").exists() && !round.join("game-4.pgn").exists());
}

/// Reads `ctl watch --json` lines from `out` until one of type `kind` (at most
/// 20 s); returns it.
async fn watched_line(
    out: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    kind: &str,
) -> serde_json::Value {
    let until = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let line = tokio::time::timeout_at(until, out.next_line())
            .await
            .unwrap_or_else(|_| panic!("ctl watch said no {kind} in 20 s"))
            .unwrap()
            .unwrap_or_default();
        let e: serde_json::Value = serde_json::from_str(&line).unwrap();
        if e["type"] == kind {
            return e;
        }
    }
}

/// Defect 6, the words: boards set up but not started are `waiting`; `ctl
/// watch` says a game reopened by an undo (with the decision) and a result
/// given in place of another; players and tags given to a finished game say
/// they are for the next one, and a time control for a game with moves is
/// refused saying why; a pairings file's errors are all named (ten at most),
/// exit status 1; `ctl round 1` after round 3 names round 2 as the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_words_say_what_was_done() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg) = desk(d, "").await;
    let _boards = three_playing(d, "5760", [opening(6, 57), standing(""), standing("")]);
    let daemon = start(&cfg, d, &address);
    let game1 = d.join("live/round-1/game-1.pgn");
    wait_for("six plies on board 1", 30, || plies_in(&game1) == 6).await;
    property_is(&address, 2, "Status", "playing").await;

    // Set up, not started: waiting (in the table and in detail).
    let table = ok(&address, &["boards"]).await;
    let line2 = table.lines().find(|l| l.trim_start().starts_with("2  ")).unwrap();
    assert!(
        line2.contains(" waiting ") && !line2.contains("playing"),
        "{table}"
    );
    let line1 = table.lines().find(|l| l.trim_start().starts_with("1  ")).unwrap();
    assert!(line1.contains(" playing "), "{table}");
    assert!(
        ok(&address, &["boards", "2"])
            .await
            .contains("\ngame: waiting, 0 plies\n")
    );

    // An undo that reopens the game, and a result given over another, on the watch.
    let (watch, mut out) = super::watch::watching(&address, true, 3).await;
    ok(&address, &["result", "1", "1-0"]).await;
    let end = watched_line(&mut out, "game_end").await;
    assert_eq!((end["board"].as_u64(), end.get("was")), (Some(1), None), "{end}");
    ok(&address, &["undo", "1"]).await;
    let reopened = watched_line(&mut out, "game_reopened").await;
    assert_eq!(reopened["board"], 1, "{reopened}");
    assert_eq!(reopened["was"], "1-0", "{reopened}");
    let decision = reopened["decision"].as_str().unwrap_or_default();
    assert!(
        decision.starts_with("undo: result 1-0") && decision.contains(&me()),
        "{reopened}"
    );
    ok(&address, &["result", "1", "1-0"]).await;
    watched_line(&mut out, "game_end").await;
    ok(&address, &["result", "1", "0-1", "--force"]).await;
    let replaced = watched_line(&mut out, "game_end").await;
    assert_eq!(
        (replaced["result"].as_str(), replaced["was"].as_str()),
        (Some("0-1"), Some("1-0"))
    );
    drop(watch);

    // A finished game keeps its players and tags: the words say whose they are.
    let said = ok(
        &address,
        &["players", "1", "Anand, Viswanathan", "Carlsen, Magnus"],
    )
    .await;
    assert!(
        said.contains("players Anand, Viswanathan - Carlsen, Magnus from its next game on (its game is over (0-1): its PGN keeps White 1 - Black 1"),
        "{said}"
    );
    let said = ok(&address, &["tags", "1", "WhiteElo=2751"]).await;
    assert!(
        said.contains("tags WhiteElo=2751 from its next game on"),
        "{said}"
    );
    assert_eq!(tag_in(&game1, "White"), "White 1");
    // A time control is a game's from its start: refused on one with moves.
    let o = ctl(&address, &["time-control", "1", "90+30"]).await;
    assert_eq!(o.code, 1, "{}{}", o.out, o.err);
    assert!(
        o.err
            .contains("the game has 6 plies and is over: a time control is set before a game's first move"),
        "{}",
        o.err
    );
    property_is(&address, 1, "TimeControl", "").await;
    // Board 2, set up and not started: its players now.
    let said = ok(&address, &["players", "2", "Ding, Liren", "Gukesh, D"]).await;
    assert!(said.ends_with("players Ding, Liren - Gukesh, D\n"), "{said}");

    // A pairings file: every error named, ten at most; exit status 1.
    let bad = d.join("bad.csv");
    std::fs::write(&bad, "board,white,black\n1,A,B\nx,C,D\n2,E,F\n3,G\n").unwrap();
    let o = ctl(&address, &["pairings", bad.to_str().unwrap()]).await;
    assert_eq!(o.code, 1, "{}", o.err);
    let file = bad.display().to_string();
    for says in [
        format!("{file}:3: board `x` is not a board number"),
        format!("{file}:5: 2 fields, the header row has 3"),
    ] {
        assert!(o.err.contains(&says), "{says:?} in {}", o.err);
    }
    let many = d.join("many.csv");
    let rows: String = (0..15).map(|i| format!("b{i},A,B\n")).collect();
    std::fs::write(&many, format!("board,white,black\n{rows}")).unwrap();
    let o = ctl(&address, &["pairings", many.to_str().unwrap()]).await;
    assert_eq!(o.code, 1, "{}", o.err);
    assert_eq!(o.err.matches("is not a board number").count(), 10, "{}", o.err);
    assert!(o.err.contains("and 5 more error(s)"), "{}", o.err);
    // Boards the daemon does not have: each on its line.
    let unknown = d.join("unknown.csv");
    std::fs::write(&unknown, "board,white,black\n1,A,B\n8,C,D\n9,E,F\n").unwrap();
    let o = ctl(&address, &["pairings", unknown.to_str().unwrap()]).await;
    assert_eq!(o.code, 1, "{}", o.err);
    let file = unknown.display().to_string();
    for says in [
        format!("{file}:3: no board 8: boards are 1-3"),
        format!("{file}:4: no board 9: boards are 1-3; nothing was applied"),
    ] {
        assert!(o.err.contains(&says), "{says:?} in {}", o.err);
    }
    property_is(&address, 2, "White", "Ding, Liren").await;

    // Round 3, then round 1 by mistake: the next round after it is 2.
    ok(&address, &["round", "3"]).await;
    property_is(&address, 2, "Round", "3").await;
    let o = ctl(&address, &["round", "1"]).await;
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(
        o.err.contains("the boards were on round 3: is round 1 the one meant? (done: the boards are on round 1 now; `ctl round 3` goes back, `ctl round 2` starts the one after it)"),
        "{}",
        o.err
    );
    drop(daemon);
}
