//! `eboard-bridge ctl`, the arbiter's command, end to end: the real binary as the
//! daemon and as `ctl`, a private D-Bus broker (busd, in process), virtual boards
//! on real pseudo-terminals, the broadcast folder and the recordings on disk.
//! Every wait is bounded.

mod ack;
use crate::common;
mod pairings;
mod results;
mod round;
mod stale;
mod undo;
mod watch;
mod words;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::process::{Running, bin, board_property, ctl, run_command, spawn_ctl, tag_in, value_text};
use common::{plies_in, private_bus, wait_for};
use eboard_bridge::bus::BOARD_INTERFACE;
use eboard_bridge::log::SensorLog;
use futures_util::StreamExt;
use shakmaty::Chess;

/// A sensor log of the first `plies` plies of a real game from the start (one
/// of 30 plies at least) played by simulated hands (`seed`), the clock at
/// 1:30:00 both sides.
fn opening(plies: usize, seed: u64) -> SensorLog {
    let moves = common::game_of_at_least("games/immortal-games.pgn", 30).moves;
    common::emulated::hands_log(&Chess::default(), &moves[..plies], seed, 1500)
}

/// A board standing in the start position with its clock at 1:30:00 (stopped),
/// `more` records after.
fn standing(more: &str) -> SensorLog {
    at_the_start(&format!(
        "0 clock left=1:30:00 right=1:30:00 running=none\n{more}"
    ))
}

/// A board in the start position, `more` records after (a clock, if any,
/// among them).
fn at_the_start(more: &str) -> SensorLog {
    eboard_bridge::log::parse_log(
        &format!("# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n{more}"),
        "standing.esl",
    )
    .unwrap()
}

/// An emulated board (serial number `serial`) playing `log`, `link` pointing at it.
fn emulate(log: SensorLog, link: &Path, serial: &str) -> tokio::task::JoinHandle<()> {
    common::emulated::emulate(log, link, 8.0, serial)
}

/// A configuration for boards 1-3 (`dir`/board1..3), white on the clock's left,
/// `more` at the end of the top level.
fn three_boards(dir: &Path, more: &str) -> PathBuf {
    desk_open(dir, more, 3, |n| format!("White {n}"))
}

/// A test's desk in `d`: a private bus (its address) and the configuration of
/// boards 1-3 (`more` added; its path).
async fn desk(d: &Path, more: &str) -> (String, PathBuf) {
    (private_bus(d).await, three_boards(d, more))
}

/// The Desk Open's configuration, written to `dir/config.toml` (its path):
/// round 1, white on the clock's left, `more` at the end of the top level,
/// boards 1 to `boards` (`dir/boardN`), white named by `white`, black `Black N`.
fn desk_open(dir: &Path, more: &str, boards: usize, white: impl Fn(usize) -> String) -> PathBuf {
    let cfg = dir.join("config.toml");
    let mut text = format!(
        "event = \"Desk Open\"\nround = 1\noutput = \"{}\"\nstate = \"{}\"\n{more}\n[clock]\nwhite = \"left\"\n",
        dir.join("live").display(),
        dir.join("state").display()
    );
    for n in 1..=boards {
        text.push_str(&format!(
            "[[board]]\ndevice = \"{}\"\nnumber = {n}\nwhite = \"{}\"\nblack = \"Black {n}\"\n",
            dir.join(format!("board{n}")).display(),
            white(n)
        ));
    }
    std::fs::write(&cfg, text).unwrap();
    cfg
}

/// The real binary on the private bus at `address`, bridging boards 1-3.
fn start(cfg: &Path, dir: &Path, address: &str) -> Running {
    start_boards(cfg, dir, address, 3)
}

/// The same, bridging boards 1 to `boards`.
fn start_boards(cfg: &Path, dir: &Path, address: &str, boards: usize) -> Running {
    let devices: Vec<PathBuf> = (1..=boards).map(|n| dir.join(format!("board{n}"))).collect();
    Running::spawn(&mut run_command(cfg, &devices, Some(address)))
}

/// Boards 1 to 3 (`d/boardN`, serial numbers `{serials}1` to `{serials}3`)
/// playing `logs`.
fn three_playing(d: &Path, serials: &str, logs: [SensorLog; 3]) -> Vec<tokio::task::JoinHandle<()>> {
    let link = |n: usize| d.join(format!("board{n}"));
    let boards = logs.into_iter().zip(1..=3);
    boards
        .map(|(log, n)| emulate(log, &link(n), &format!("{serials}{n}")))
        .collect()
}

/// `ctl ARGS` must succeed.
async fn ok(address: &str, args: &[&str]) -> String {
    let o = ctl(address, args).await;
    assert_eq!(o.code, 0, "ctl {args:?}: {}{}", o.out, o.err);
    o.out
}

/// A property of board `n`'s object (`/org/eboardbridge/board/boardN`), read
/// afresh; `None` when it cannot be read within `CALL_SECS`.
async fn property(address: &str, n: u32, name: &str) -> Option<zbus::zvariant::OwnedValue> {
    board_property(address, &format!("board{n}"), name).await
}

/// Waits (at most 20 s) until board `n`'s `name` property, as text, is `want`.
async fn property_is(address: &str, n: u32, name: &str, want: &str) {
    let mut last = String::new();
    for _ in 0..100 {
        if let Some(v) = property(address, n, name).await {
            last = value_text(&v);
            if last == want {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("board {n}: {name} is {last:?}, not {want:?}");
}

/// Edits the configuration file `cfg` (`from` replaced by `to`) and has
/// `daemon` read it again (SIGHUP).
fn edit_and_reload(daemon: &Running, cfg: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(cfg).unwrap();
    assert!(
        text.contains(from),
        "{from:?} is not in the configuration: {text}"
    );
    std::fs::write(cfg, text.replace(from, to)).unwrap();
    common::send_signal(daemon.child.id(), libc::SIGHUP);
}

/// Waits (at most 20 s) until `daemon` has logged `line` once.
async fn logged_once(daemon: &Running, line: &str) {
    wait_for(&format!("the daemon to log {line:?}"), 20, || {
        daemon.logged(line) == 1
    })
    .await;
}

/// The user running the tests, as the daemon names who decided.
fn me() -> String {
    // SAFETY: getuid cannot fail.
    eboard_bridge::bus::user_name(unsafe { libc::getuid() })
}

/// `ctl boards` lists the three boards by number with their players; `players`,
/// `reinstate`, `new-game`, `result`, `add-time` and `time-control` each change
/// what D-Bus and the PGN show, are journaled with who decided, and survive a
/// SIGKILL of the daemon. A board that does not exist, a caller's typo: refused
/// with what to do, exit status 1 and 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_decision_through_ctl_shows_on_dbus_and_in_the_pgn_and_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg) = desk(d, "").await;
    // Board 2's clock runs (white's side): its reports show the time added.
    let clocked = standing("0 clock left=1:30:00 right=1:30:00 running=left\n");
    let _boards = three_playing(d, "1100", [opening(12, 11), clocked, standing("")]);
    let daemon = start(&cfg, d, &address);
    let round = d.join("live/round-1");
    let (first, second) = (round.join("game-1.pgn"), round.join("game-1-2.pgn"));
    wait_for("twelve plies on board 1", 30, || plies_in(&first) == 12).await;
    property_is(&address, 3, "Status", "playing").await;

    // The boards, one line each, by number, with their players.
    let table = ok(&address, &["boards"]).await;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "a header and three boards:\n{table}");
    for (n, line) in lines.iter().enumerate().skip(1) {
        assert!(
            line.trim_start()
                .starts_with(&format!("{n}  1      board{n}  White {n} - Black {n}")),
            "{table}"
        );
    }
    assert!(lines[1].contains("12") && lines[1].contains("6... "), "{table}");
    let json: serde_json::Value = serde_json::from_str(&ok(&address, &["boards", "--json"]).await).unwrap();
    let boards = json.as_array().unwrap();
    assert_eq!(boards.len(), 3);
    assert_eq!(boards[1]["number"], 2);
    assert_eq!(boards[1]["white"], "White 2");
    assert_eq!(boards[1]["serial"], "11002");
    assert_eq!(boards[0]["moves"], 12);
    // One board in detail: where, who, the game, the clocks and the moves.
    let one = ok(&address, &["boards", "1"]).await;
    for says in [
        "board 1 (board1), round 1: connected, serial number 11001\n",
        "\nWhite: White 1\n",
        "\ngame: playing, 12 plies\n",
        "\nclocks: white ",
        "\nmoves: 1. ",
        " 6. ",
    ] {
        assert!(one.contains(says), "{says:?} in {one}");
    }
    assert!(
        table.lines().next().unwrap_or("").starts_with("BOARD  ROUND  ID"),
        "{table}"
    );

    // Refusals say what to do.
    let o = ctl(&address, &["result", "17", "1-0"]).await;
    assert_eq!(
        (o.code, o.err.trim()),
        (1, "eboard-bridge ctl: no board 17: boards are 1-3")
    );
    let o = ctl(&address, &["add-time", "1", "white", "2x"]).await;
    assert_eq!(o.code, 2, "{}", o.err);
    assert!(o.err.contains("is not a time"), "{}", o.err);
    let o = ctl(&address, &["time-control", "1", "90+30"]).await;
    assert_eq!(o.code, 1, "a time control while moves are played: {}", o.err);
    assert!(o.err.contains("refused"), "{}", o.err);

    // Board 1 by number, by id and by serial number.
    ok(
        &address,
        &["players", "1", "Anand, Viswanathan", "Carlsen, Magnus"],
    )
    .await;
    ok(&address, &["reinstate", "board1", "8"]).await;
    // Board 1's game is under way: a new game ends it only with --force.
    let o = ctl(&address, &["new-game", "11001"]).await;
    assert_eq!(o.code, 1, "{}{}", o.out, o.err);
    assert!(
        o.err.contains("board 1's game is under way (8 plies, Anand, Viswanathan - Carlsen, Magnus): a new game ends it `*` (abandoned); nothing was changed (run it again with --force to do it)"),
        "{}",
        o.err
    );
    ok(&address, &["new-game", "11001", "--force"]).await;
    ok(&address, &["result", "1", "1/2"]).await;
    ok(&address, &["add-time", "2", "white", "-30s"]).await;
    // Board 3: the daemon drives its clock, whose times the PGN shows at once.
    ok(&address, &["time-control", "3", "90+30"]).await;
    ok(&address, &["add-time", "3", "black", "+2m"]).await;

    let check = |when: &'static str| {
        let address = address.clone();
        let (first, second) = (first.clone(), second.clone());
        async move {
            wait_for("both games of board 1 on disk", 30, || {
                plies_in(&first) == 8 && tag_in(&second, "Result") == "1/2-1/2"
            })
            .await;
            assert_eq!(tag_in(&first, "White"), "Anand, Viswanathan", "{when}");
            assert_eq!(tag_in(&first, "Termination"), "abandoned", "{when}");
            assert_eq!(tag_in(&second, "Black"), "Carlsen, Magnus", "{when}");
            assert_eq!(tag_in(&second, "Board"), "1", "{when}");
            property_is(&address, 1, "Result", "1/2-1/2").await;
            property_is(&address, 1, "White", "Anand, Viswanathan").await;
            property_is(&address, 3, "TimeControl", "5400+30").await;
            property_is(&address, 3, "BlackClockMs", "5520000").await;
        }
    };
    check("live").await;
    // White's clock on board 2 runs: 30 s less than it showed (at most 2 s ago).
    let white: i64 = property(&address, 2, "WhiteClockMs")
        .await
        .unwrap()
        .try_into()
        .unwrap();
    assert!(
        (5_337_000..=5_370_000).contains(&white),
        "board 2: white {white} ms"
    );
    // Board 3's PGN shows the time control and the time added.
    let pgn3 = round.join("game-3.pgn");
    wait_for("board 3's clocks in its PGN", 10, || {
        tag_in(&pgn3, "TimeControl") == "5400+30" && tag_in(&pgn3, "BlackClock") == "1:32:00"
    })
    .await;

    // Who decided is in the record, and replay reads it back.
    let recording = d.join("state/recordings/board1.esl");
    let text = std::fs::read_to_string(&recording).unwrap();
    assert!(text.contains(&format!(" note decided by {}\n", me())), "{text}");
    let decisions: Vec<serde_json::Value> = common::replayed::replayed_events(&recording)
        .into_iter()
        .filter(|e| e["type"] == "arbiter")
        .collect();
    let methods: Vec<&str> = decisions.iter().filter_map(|e| e["method"].as_str()).collect();
    assert_eq!(methods, ["SetPlayers", "Reinstate", "NewGame", "SetResult"]);
    assert!(decisions.iter().all(|e| e["by"] == me()), "{decisions:?}");

    daemon.kill();
    std::fs::remove_dir_all(&round).unwrap();
    let daemon = start(&cfg, d, &address);
    check("after SIGKILL").await;
    wait_for("board 3's clocks in its PGN again", 20, || {
        tag_in(&pgn3, "TimeControl") == "5400+30" && tag_in(&pgn3, "BlackClock") == "1:32:00"
    })
    .await;
    drop(daemon);
}

/// `ctl watch` prints an irregular move made on an emulated board within a
/// second of the daemon's signal, with the board number; `--json` one object a
/// line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_an_irregular_move_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (address, cfg) = desk(d, "[rules]\nirregular_ms = 300").await;
    // Board 2: e2 to e5 (no move) after 24 s of log time, 3 s at speed 8.
    let no_move = standing("24 lift e2 P\n24.8 place e5 P\n");
    let _boards = three_playing(d, "200", [standing(""), no_move, standing("")]);
    let _daemon = start(&cfg, d, &address);
    let (_client, mut signals) = common::listen(&address, BOARD_INTERFACE, Some("Irregular")).await;
    property_is(&address, 2, "Status", "playing").await;

    let (_watch, mut out) = watch::watching(&address, true, 3).await;

    let signal = tokio::time::timeout(Duration::from_secs(20), signals.next())
        .await
        .expect("no Irregular signal in 20 s");
    assert!(signal.is_some());
    let seen = tokio::time::Instant::now();
    let line = tokio::time::timeout(Duration::from_secs(1), out.next_line())
        .await
        .expect("ctl watch did not print the irregular move within a second")
        .unwrap()
        .unwrap_or_default();
    let e: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(e["type"], "irregular", "{line}");
    assert_eq!(e["board"], 2, "{line}");
    assert_eq!(e["id"], "board2", "{line}");
    assert_eq!(e["kind"], "illegal_move", "{line}");
    assert_eq!(e["side"], "white", "{line}");
    assert!(seen.elapsed() < Duration::from_secs(1));
}

/// `eboard-bridge ctl --bus BUS ARGS` with the system bus at `system` and the
/// session bus at `session` (none: `DBUS_SESSION_BUS_ADDRESS` unset); the test
/// fails if it has not finished in 20 s.
async fn ctl_between(
    bus: &str,
    system: &str,
    session: Option<&str>,
    args: &[&str],
) -> common::process::CtlOut {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.args(["ctl", "--bus", bus])
        .args(args)
        .env("DBUS_SYSTEM_BUS_ADDRESS", system)
        .kill_on_drop(true);
    match session {
        Some(a) => cmd.env("DBUS_SESSION_BUS_ADDRESS", a),
        None => cmd.env_remove("DBUS_SESSION_BUS_ADDRESS"),
    };
    let out = tokio::time::timeout(Duration::from_secs(20), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("ctl {args:?} did not finish in 20 s"))
        .unwrap();
    common::process::CtlOut {
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// No daemon on the bus: `ctl` looks on the other bus too, says that neither has
/// one (what each answered), and how to start one (exit status 1). Issue 59:
/// `ctl boards` pointed to `--bus session`, and `ctl --bus session boards` back
/// to `--bus system`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_daemon_ctl_says_how_to_start_one() {
    let dir = tempfile::tempdir().unwrap();
    let address = private_bus(dir.path()).await;
    let nowhere = format!("unix:path={}", dir.path().join("no-bus").display());
    let start = "Start one on the session bus: eboard-bridge demo --stay (a game on a virtual board) or eboard-bridge run --bus session";
    // A session bus without the daemon, no system bus.
    for (bus, args) in [
        ("session", &["boards"][..]),
        ("session", &["result", "1", "1-0"][..]),
        ("system", &["boards"][..]),
    ] {
        let o = ctl_between(bus, &nowhere, Some(&address), args).await;
        assert_eq!(o.code, 1, "{bus} {args:?}: {}", o.err);
        for words in [
            "no eboard-bridge on either bus (the system bus: cannot reach it: ",
            "; the session bus: nothing there owns the name org.eboardbridge)",
            start,
        ] {
            assert!(
                o.err.contains(words),
                "{bus} {args:?}: `{words}` not in: {}",
                o.err
            );
        }
        assert!(!o.err.contains("no session bus here"), "{}", o.err);
    }
    // No bus at all: the same from either, and how to get a session bus.
    for bus in ["system", "session"] {
        let o = ctl_between(bus, &nowhere, None, &["boards"]).await;
        assert_eq!(o.code, 1, "{bus}: {}", o.err);
        for words in [
            "no eboard-bridge on either bus (the system bus: cannot reach it: ",
            "; the session bus: cannot reach it: ",
            "DBUS_SESSION_BUS_ADDRESS is not set",
            start,
            "There is no session bus here: dbus-run-session -- $SHELL opens a shell with one",
        ] {
            assert!(o.err.contains(words), "{bus}: `{words}` not in: {}", o.err);
        }
        assert!(!o.err.contains("use --bus"), "{bus}: {}", o.err);
    }
}

/// A daemon on the other bus: `ctl` says where it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_on_the_other_bus_is_pointed_to() {
    let dir = tempfile::tempdir().unwrap();
    let address = private_bus(dir.path()).await;
    let nowhere = format!("unix:path={}", dir.path().join("no-bus").display());
    // The daemon's name taken on the session bus (as `demo` takes it).
    let daemon = common::bus_client(&address).await;
    daemon
        .request_name(eboard_bridge::bus::BUS_NAME)
        .await
        .expect("the name on the private bus");
    let o = ctl_between("system", &nowhere, Some(&address), &["boards"]).await;
    assert_eq!(o.code, 1, "{}", o.err);
    assert!(
        o.err
            .contains("no eboard-bridge on the system bus (cannot reach it: ")
            && o.err
                .contains("), but one runs on the session bus: ctl --bus session ..."),
        "{}",
        o.err
    );
    // The system bus is the private one now, the session bus none.
    let o = ctl_between("session", &address, Some(&nowhere), &["boards"]).await;
    assert_eq!(o.code, 1, "{}", o.err);
    assert!(
        o.err
            .contains("no eboard-bridge on the session bus (cannot reach it: ")
            && o.err
                .contains("), but one runs on the system bus: ctl --bus system ..."),
        "{}",
        o.err
    );
}
