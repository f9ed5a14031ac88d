//! `eboard-bridge demo`, the real binary: the bundled game through the emulator, the
//! pty and the real daemon. With a session bus (busd in process, named by
//! `DBUS_SESSION_BUS_ADDRESS`) the game is published on it; without one the demo says
//! so and plays the game through all the same.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{listen, pgn_games, pgn_moves, private_bus};
use eboard_bridge::bus::BOARD_INTERFACE;
use eboard_bridge::rules::game_fen;
use futures_util::StreamExt;
use shakmaty::san::{San, SanPlus};
use shakmaty::{Chess, Position};

/// The demo's bundled game (the Immortal Game in its usual move order), checked
/// against the PGN of it in `tests/data/games`, which plays 10. Rg1 cxb5 11. g4 Nf6 for 10. g4 Nf6
/// 11. Rg1 cxb5: the same number of moves to the same final position.
fn immortal() -> Vec<String> {
    let published = pgn_games("games/immortal-games.pgn")
        .into_iter()
        .find(|g| g.tag("White") == Some("Anderssen"))
        .expect("Anderssen - Kieseritzky in games/immortal-games.pgn");
    let mut theirs = Chess::default();
    for m in &published.moves {
        theirs.play_unchecked(*m);
    }
    let mut ours = Chess::default();
    let sans: Vec<String> = eboard_bridge::demo::GAME
        .split_whitespace()
        .map(|s| {
            let m = s.parse::<San>().unwrap().to_move(&ours).unwrap();
            SanPlus::from_move_and_play_unchecked(&mut ours, m).to_string()
        })
        .collect();
    assert_eq!(sans.len(), published.moves.len());
    assert_eq!(game_fen(&ours), game_fen(&theirs));
    sans
}

/// The demo binary at 10x speed, its temporary folder in `dir`, its session bus at
/// `bus`.
fn demo(dir: &Path, bus: &str) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
        .args(["demo", "--speed", "10"])
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .env("TMPDIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run eboard-bridge demo")
}

/// Waits for the demo to exit (at most a minute); its status and stdout.
async fn finish(child: tokio::process::Child) -> (std::process::ExitStatus, String, String) {
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the demo ends within a minute")
        .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The demo's broadcast file for board 1.
fn broadcast_pgn(dir: &Path) -> String {
    let work = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("eboard-bridge-demo-"))
        .expect("the demo's folder in TMPDIR")
        .path();
    std::fs::read_to_string(work.join("live/round-1/game-1.pgn")).expect("live/round-1/game-1.pgn")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_publishes_the_game_on_the_session_bus() {
    let dir = tempfile::tempdir().unwrap();
    let expected = immortal();
    let address = private_bus(dir.path()).await;
    let (client, mut signals) = listen(&address, BOARD_INTERFACE, None).await;
    let child = demo(dir.path(), &address);

    // Every Board1 signal until the game ends; the record as the signals tell it.
    let mut record: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    let path = loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), signals.next())
            .await
            .expect("Board1 signals until GameEnded")
            .unwrap()
            .unwrap();
        let header = msg.header();
        let member = header.member().map(|m| m.to_string()).unwrap_or_default();
        match member.as_str() {
            "MoveMade" => {
                let (ply, san, _uci, _fen): (u32, String, String, String) = msg.body().deserialize().unwrap();
                assert_eq!(
                    ply as usize,
                    record.len() + 1,
                    "MoveMade {ply} {san} after {record:?}"
                );
                record.push(san);
            }
            "TakeBack" => {
                let (to_ply, _fen): (u32, String) = msg.body().deserialize().unwrap();
                record.truncate(to_ply as usize);
                seen.push(format!("TakeBack {to_ply}"));
            }
            "Irregular" => {
                let (kind, side, squares, completed, _count): (String, String, Vec<String>, bool, u32) =
                    msg.body().deserialize().unwrap();
                seen.push(format!(
                    "Irregular {kind} {side} {} {completed}",
                    squares.join(" ")
                ));
            }
            "Resolved" => seen.push("Resolved".into()),
            "TouchMove" => seen.push("TouchMove".into()),
            "GameEnded" => {
                let (result, termination): (String, String) = msg.body().deserialize().unwrap();
                seen.push(format!("GameEnded {result} {termination}"));
                break header.path().expect("a signal has a path").to_string();
            }
            _ => {}
        }
    };
    assert_eq!(record, expected);
    assert_eq!(
        seen,
        [
            "TakeBack 4",
            "Irregular illegal_move white d1 d4 false",
            "Resolved",
            "GameEnded 1-0 checkmate"
        ]
    );

    // The finished game's properties, read while the demo shows its last position.
    assert_eq!(path, "/org/eboardbridge/board/dgt_demo");
    let proxy = common::board_proxy(&client, &path).await;
    let moves: Vec<String> = proxy.get_property("Moves").await.unwrap();
    assert_eq!(moves, expected);
    let status: String = proxy.get_property("Status").await.unwrap();
    assert_eq!(status, "finished");

    let (status, stdout, stderr) = finish(child).await;
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stdout.contains(
            "D-Bus: published on the session bus as org.eboardbridge at /org/eboardbridge/board/dgt_demo"
        ),
        "{stdout}"
    );
    assert_eq!(pgn_moves(&broadcast_pgn(dir.path())), vec![expected]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_without_a_session_bus_says_so_and_plays_the_game_through() {
    let dir = tempfile::tempdir().unwrap();
    let expected = immortal();
    let nowhere = format!("unix:path={}", dir.path().join("no-bus-here").display());
    let (status, stdout, stderr) = finish(demo(dir.path(), &nowhere)).await;
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stdout.contains("D-Bus: not published, no session bus to publish on"),
        "{stdout}"
    );
    // Not a terminal: one line an event, the flags among them, then the PGN.
    assert!(!stdout.contains("--bus"), "the demo takes no --bus: {stdout}");
    for line in [
        "take-back to ply 4",
        "irregular: illegal_move by white on d1 d4",
        "resolved: ",
        "23. Be7#",
        "game ends 1-0 (checkmate)",
        "[White \"Anderssen, Adolf\"]",
    ] {
        assert!(stdout.contains(line), "`{line}` missing from:\n{stdout}");
    }
    let pgn = broadcast_pgn(dir.path());
    assert_eq!(pgn_moves(&pgn), vec![expected]);
    times_in_the_game_s_scale(&pgn);
    // The demo's own clock looks sound (issue 59: its first reports were taken for
    // faults), and the live lines give the times the PGN gives.
    assert!(!stderr.contains("WARN"), "the demo warns:\n{stderr}");
    live_clocks_are_the_pgn_s(&stdout, &pgn);
    the_replay_command_works_here(&stdout).await;
}

/// The demo's last line, `replay it: COMMAND`, run by a shell where the demo
/// ran (the same working directory and `PATH`, on which the test's binary is
/// not): it replays the game (issue 59: it said `eboard-bridge replay ...`,
/// which no newcomer has on the `PATH` after `cargo run`).
async fn the_replay_command_works_here(stdout: &str) {
    let command = stdout
        .lines()
        .find_map(|l| l.strip_prefix("  replay it: "))
        .unwrap_or_else(|| panic!("no `replay it:` line in:\n{stdout}"));
    let run = tokio::process::Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the replay command ends within 30 s")
        .unwrap();
    let replayed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "`{command}`: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for line in ["23. Be7#", "game ends 1-0 (checkmate)"] {
        assert!(
            replayed.contains(line),
            "`{command}` gave no `{line}`:\n{replayed}"
        );
    }
}

/// Each `completes ply N (clock: white W, black B)` line gives the mover's `%clk`
/// of ply N in the PGN (the last such line for a ply taken back and played again).
fn live_clocks_are_the_pgn_s(stdout: &str, pgn: &str) {
    let clk: Vec<&str> = pgn
        .split("[%clk ")
        .skip(1)
        .map(|r| &r[..r.find(']').unwrap()])
        .collect();
    let mut live = std::collections::BTreeMap::new();
    for line in stdout.lines() {
        let Some((_, rest)) = line.split_once(" completes ply ") else {
            continue;
        };
        let (ply, times) = rest
            .split_once(" (clock: white ")
            .expect("a completed ply with its clock");
        let (white, black) = times
            .trim_end_matches(')')
            .split_once(", black ")
            .expect("both times");
        let ply: usize = ply.parse().unwrap();
        live.insert(ply, if ply % 2 == 1 { white } else { black }.to_string());
    }
    assert!(live.len() > 40, "completed plies in:\n{stdout}");
    for (ply, shown) in live {
        assert_eq!(
            Some(&shown.as_str()),
            clk.get(ply - 1),
            "ply {ply}: the live line's clock and the PGN's %clk\n{stdout}\n{pgn}"
        );
    }
}

/// At 10x speed the PGN's times are the game's, as if played at real speed: each
/// side's `%emt` add up to the time its `%clk` lost (each is cut to the second, so
/// up to a second a move less), not to a tenth of it.
fn times_in_the_game_s_scale(pgn: &str) {
    let secs = |hms: &str| -> i64 {
        hms.split(':')
            .fold(0, |acc, p| acc * 60 + p.parse::<i64>().expect("H:MM:SS"))
    };
    let tag = |key: &str| -> Vec<i64> {
        pgn.split(&format!("[%{key} "))
            .skip(1)
            .map(|r| secs(&r[..r.find(']').unwrap()]))
            .collect()
    };
    let (clk, emt) = (tag("clk"), tag("emt"));
    assert_eq!(clk.len(), emt.len(), "a %emt with every %clk: {pgn}");
    for side in 0..2 {
        let mine: Vec<i64> = clk.iter().skip(side).step_by(2).copied().collect();
        let moves = mine.len() as i64;
        let used = 300 - mine[mine.len() - 1];
        let thought: i64 = emt.iter().skip(side).step_by(2).sum();
        assert!(
            thought <= used + 2 && thought >= used - moves - 2,
            "side {side}: %emt add up to {thought} s, %clk lost {used} s in {moves} moves:\n{pgn}"
        );
    }
}
