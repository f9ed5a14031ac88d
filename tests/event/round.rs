//! One round of the event campaign through the real binary: the boards set up,
//! the timeline played, the last decisions and restart, and each board judged.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use eboard_bridge::log::SensorLog;

use super::boards::{BoardGame, board_game, pairings};
use super::common::played::{Touch, pair, scaled_rules, true_result};
use super::common::process::{Running, bin, board_property, run_command, value_text};
use super::common::{Within, private_bus, send_signal, wait_exit};
use super::judge::{Seen, Truth, judge, record_events};
use super::live::{self, Heard, Listener};
use super::relay::{self, LineFaults};
use super::{Action, Plan, SPEED};

/// What a round gave.
pub struct Outcome {
    pub failures: Vec<String>,
    pub games: usize,
    pub plies: usize,
    pub decisions: usize,
}

/// Real milliseconds the hands take for `plies` plies at a human pace.
pub fn real_ms(plies: usize) -> u64 {
    ((8_000 + plies as u64 * 3_300) as f64 / SPEED) as u64
}

/// The first board's serial number (the others follow).
const FIRST_SERIAL: usize = 40000;

/// The round's configuration: boards named by their device, or (`by_serial`,
/// odd seeds) by their serial number, as a hall names boards it moves between
/// ports: the daemon must learn each serial number before it numbers the
/// board, at every start (issue 58: boards 3 and 4 came back as 7 and 8).
fn config(
    dir: &Path,
    boards: usize,
    by_serial: bool,
    console: SocketAddr,
    mqtt: Option<u16>,
    drive: bool,
) -> String {
    let drive = if drive {
        "mode = \"drive\"\ntime_control = \"90+30\"\n"
    } else {
        ""
    };
    let mut text = format!(
        "event = \"Event campaign\"\nround = 1\npairings = \"pairings.csv\"\noutput = \"{}\"\nstate = \"{}\"\n{}[clock]\nwhite = \"left\"\n{drive}[http]\nlisten = \"{console}\"\narbiters = \"{}\"\n",
        dir.join("live").display(),
        dir.join("state").display(),
        scaled_rules(SPEED),
        dir.join("arbiters").display(),
    );
    if let Some(port) = mqtt {
        let creds = dir.join("mqtt-credentials");
        std::fs::write(&creds, format!("eboard-bridge\n{}\n", crate::mqtt::PASSWORD)).unwrap();
        text.push_str(&format!(
            "[mqtt]\nbroker = \"mqtt://127.0.0.1:{port}\"\nprefix = \"eboard/hall-a\"\nclient_id = \"eboard-bridge-hall-a\"\ncredentials_file = \"{}\"\ncommands = true\n",
            creds.display()
        ));
    }
    for i in 0..boards {
        if by_serial {
            text.push_str(&format!(
                "[[board]]\nserial = \"{}\"\nnumber = {}\n",
                FIRST_SERIAL + i,
                i + 1
            ));
        } else {
            text.push_str(&format!(
                "[[board]]\ndevice = \"{}\"\nnumber = {}\n",
                dir.join(format!("line{i}")).display(),
                i + 1
            ));
        }
    }
    text
}

/// A decision through the arbiters' console (`POST /arbiter/api/decide`,
/// signed in first): its HTTP status (0: the console did not answer).
async fn console_decide(console: SocketAddr, n: usize, method: &str, args: serde_json::Value) -> u16 {
    use crate::common::hall::{PASSWORD, USER};
    use crate::common::web::{Answer, exchange};
    let origin = format!("http://{console}");
    let send = |method: &'static str, path: &'static str, headers: Vec<(String, String)>, body: String| {
        let origin = origin.clone();
        async move {
            let mut all: Vec<(&str, &str)> = vec![("Origin", &origin), ("Content-Type", "application/json")];
            all.extend(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let exchanged = async {
                let stream = tokio::net::TcpStream::connect(console).await.ok()?;
                Some(exchange(stream, &console.to_string(), method, path, &all, body.as_bytes()).await)
            };
            let a: Answer = tokio::time::timeout(Duration::from_secs(20), exchanged)
                .await
                .ok()??;
            Some(a)
        }
    };
    let login = serde_json::json!({"user": USER, "password": PASSWORD}).to_string();
    let Some(a) = send("POST", "/arbiter/login", Vec::new(), login).await else {
        return 0;
    };
    let Some(cookie) = a.cookie("eb_arbiter").map(|c| format!("eb_arbiter={c}")) else {
        return a.status;
    };
    let Some(state) = send(
        "GET",
        "/arbiter/api/state",
        vec![("Cookie".into(), cookie.clone())],
        String::new(),
    )
    .await
    else {
        return 0;
    };
    let csrf = state.json()["csrf"].as_str().unwrap_or_default().to_string();
    let body =
        serde_json::json!({"board": format!("line{}", n - 1), "method": method, "args": args}).to_string();
    send(
        "POST",
        "/arbiter/api/decide",
        vec![("Cookie".into(), cookie), ("X-CSRF-Token".into(), csrf)],
        body,
    )
    .await
    .map_or(0, |a| a.status)
}

/// A decision through the hall's MQTT broker, as its arbiter: whether the
/// daemon's reply says it was taken.
async fn mqtt_decide(port: u16, n: usize, method: &str, args: serde_json::Value) -> bool {
    let board = format!("line{}", n - 1);
    match crate::mqtt::calls::try_call(port, "arbiter", &board, method, args).await {
        Ok((_, Some(reply))) => reply.get("ok") == Some(&serde_json::Value::Bool(true)),
        Ok((_, None)) => false,
        Err(e) => {
            println!("MQTT {method} on board {n}: {e}");
            false
        }
    }
}

/// `ctl --bus session ARGS`: whether it was accepted (exit 0), within 20 s.
async fn ctl(address: &str, args: &[&str]) -> bool {
    crate::common::process::ctl(address, args).await.code == 0
}

/// A call of `method` on board `n`'s object: refused (or unanswered) is `Err`.
async fn bus_call<B>(address: &str, n: usize, method: &str, body: &B) -> Result<(), (String, String)>
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
{
    crate::common::process::board_call(address, &format!("line{}", n - 1), method, body).await
}

/// Board `n`'s D-Bus property as text (`None`: the daemon did not answer).
async fn property(address: &str, n: usize, name: &str) -> Option<String> {
    board_property(address, &format!("line{}", n - 1), name)
        .await
        .map(|v| value_text(&v))
}

/// Board `n`'s White and Black on D-Bus.
async fn players(address: &str, n: usize) -> Option<(String, String)> {
    Some((
        property(address, n, "White").await?,
        property(address, n, "Black").await?,
    ))
}

/// How many moves board `n`'s game has on D-Bus.
async fn plies(address: &str, n: usize) -> Option<usize> {
    let v = board_property(address, &format!("line{}", n - 1), "Moves").await?;
    Vec::<String>::try_from(v).ok().map(|m| m.len())
}

/// Which lifts and placements of each ply reached the daemon while it knew the
/// board, across restarts: as `played::seen_per_ply`, but with the recording's
/// clock aligned again after each gap (a restarted daemon's journal goes on a
/// second after its last record, however long it was down).
fn seen_across_restarts(g: &BoardGame, recording: &SensorLog) -> Vec<(usize, usize)> {
    use eboard_bridge::board::BoardEvent;
    use eboard_bridge::log::{Played, Player};
    let sent = &g.touches;
    // Segments of touches read while the board was known, each from a gap on.
    let mut segments: Vec<Vec<(u64, Touch)>> = vec![Vec::new()];
    let mut known = true;
    for s in Player::play_log(recording, "recording").unwrap_or_default() {
        match s.what {
            Played::Gap(_) => {
                known = false;
                segments.push(Vec::new());
            }
            Played::Skipped(_) => known = false,
            Played::Board(BoardEvent::Dump(_)) => known = true,
            Played::Board(BoardEvent::Lift { square, piece }) if known => {
                segments
                    .last_mut()
                    .unwrap()
                    .push((s.time.micros(), (false, square, piece.piece())));
            }
            Played::Board(BoardEvent::Place { square, piece, .. }) if known => {
                if let Some(p) = piece.piece() {
                    segments
                        .last_mut()
                        .unwrap()
                        .push((s.time.micros(), (true, square, Some(p))));
                }
            }
            _ => {}
        }
    }
    // Each touch read, at the log time it stands for: each segment is laid on
    // the touches sent with the offset that pairs most of its touches (tried
    // from its first touches, each against the first touches sent after the
    // last segment that match it: a first touch may be a stale one, read from
    // the line's buffer after a restart).
    let window = 3.0e6 * SPEED;
    // The recording's µs (the daemon's time runs as real time) in log µs.
    let scaled = |r: u64| (r as f64 * SPEED) as i64;
    let mut got: Vec<(u64, Touch)> = Vec::new();
    let mut from = 0usize;
    for seg in segments {
        let fits = |offset: i64| {
            seg.iter()
                .filter(|(r, t)| {
                    let at = scaled(*r) + offset;
                    sent[from..]
                        .iter()
                        .any(|s| s.2 == *t && ((s.1 as i64 - at).abs() as f64) < window)
                })
                .count()
        };
        let mut best: Option<(usize, i64, usize)> = None;
        for &(r, t) in seg.iter().take(8) {
            for (k, s) in sent
                .iter()
                .enumerate()
                .skip(from)
                .filter(|(_, s)| s.2 == t)
                .take(3)
            {
                let offset = s.1 as i64 - scaled(r);
                let n = fits(offset);
                if best.is_none_or(|(b, _, _)| n > b) {
                    best = Some((n, offset, k));
                }
            }
        }
        let Some((_, offset, k)) = best else { continue };
        from = k;
        got.extend(seg.iter().map(|(r, t)| ((scaled(*r) + offset).max(0) as u64, *t)));
    }
    let same = |s: &(Option<usize>, u64, Touch), g: &(u64, Touch)| {
        s.2 == g.1 && (s.1 as f64 - g.0 as f64).abs() < window
    };
    // Per ply: its touches paired, of all its touches.
    let mut out: Vec<(usize, usize)> = vec![(0, 0); g.moves.len()];
    for (p, _, _) in sent {
        if let Some(p) = p {
            out[*p].1 += 1;
        }
    }
    for i in pair(sent, &got, same) {
        if let Some(p) = sent[i].0 {
            out[p].0 += 1;
        }
    }
    out
}

/// The daemon, started and waited for until it serves every board on the bus.
async fn start(cfg: &Path, devices: &[PathBuf], address: &str, by_serial: bool) -> Running {
    // The boards are the configuration's (by device), as at an event; named
    // by serial number, the devices are given (`--device`) and each board is
    // asked its serial number.
    let given: &[PathBuf] = if by_serial { devices } else { &[] };
    let daemon = Running::spawn(&mut run_command(cfg, given, Some(address)));
    for n in 1..=devices.len() {
        let until = tokio::time::Instant::now() + Duration::from_secs(30);
        while property(address, n, "Fen").await.is_none_or(|f| f.is_empty()) {
            assert!(
                tokio::time::Instant::now() < until,
                "the daemon did not serve board {n} in 30 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    daemon
}

/// Marks on the live timeline that the daemon serves every board again, with
/// the alarm each shows then.
async fn mark_started(listener: &Listener, address: &str, boards: usize) {
    for n in 1..=boards {
        let irregular = property(address, n, "Irregularity")
            .await
            .is_some_and(|i| !i.is_empty());
        listener.mark(n - 1, Heard::Started { irregular });
    }
}

/// Marks on the live timeline that the daemon stops.
fn mark_stopped(listener: &Listener, boards: usize) {
    for b in 0..boards {
        listener.mark(b, Heard::Stopped);
    }
}

/// A change of who plays which colour on a board, at a moment of the live
/// timeline: the pairings file read again (its colours swapped or not), or
/// the arbiter's players swapped (accepted).
enum Colours {
    Reloaded { swapped: bool },
    Swapped,
}

/// Who plays White and Black on board `g` after `changes`, as the daemon must
/// show it: a reload names the players of a game not begun (and clears the
/// arbiter's players named before it), not of one under way; the arbiter's
/// players are those of the game under way (of the next games once it is
/// over). `None` when a change came so near the game's first move (`first`,
/// heard) or its end (`ended`) that which game it named is unsure.
fn colours_of(
    g: &BoardGame,
    changes: &[(u64, Colours)],
    first: Option<u64>,
    ended: Option<u64>,
) -> Option<(String, String)> {
    const NEAR_MS: u64 = 1500;
    let mut swapped = false;
    for (t, c) in changes {
        // A reload that leaves this board's colours as they are changes nothing.
        if matches!(c, Colours::Reloaded { swapped: s } if *s == swapped) {
            continue;
        }
        let near = |at: Option<u64>| at.is_some_and(|a| t.abs_diff(a) < NEAR_MS);
        if first.is_none() || near(first) || near(ended) {
            return None;
        }
        let begun = first.is_some_and(|f| *t > f);
        let over = ended.is_some_and(|e| *t > e);
        match c {
            Colours::Reloaded { swapped: s } if !begun => swapped = *s,
            Colours::Swapped if !over => swapped = !swapped,
            _ => {}
        }
    }
    let (w, b) = if swapped {
        (&g.black, &g.white)
    } else {
        (&g.white, &g.black)
    };
    Some((w.name.clone(), b.name.clone()))
}

/// Lays the hands' time on the live timeline for board `b`: the offset (ms)
/// from a log ms (as the emulated board plays it) to a real ms heard, the
/// median over the plies heard made (each heard a release threshold after its
/// last placement).
fn hands_offset(g: &BoardGame, heard: &[(u64, Heard)]) -> Option<i64> {
    let mut offsets: Vec<i64> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (t, h) in heard {
        if let Heard::Signal(m, ply) = h
            && m == "MoveMade"
            && *ply >= 1
            && seen.insert(*ply)
        {
            let placed = g
                .touches
                .iter()
                .filter(|(p, _, touch)| *p == Some(*ply as usize - 1) && touch.0)
                .map(|(_, at, _)| *at)
                .next_back()?;
            offsets.push(*t as i64 - (placed as f64 / 1000.0 / SPEED) as i64);
        }
    }
    offsets.sort();
    offsets.get(offsets.len() / 2).copied()
}

/// The kinds of alarm `replay` of a recording raises, and its highest
/// violation count.
fn replay_alarms(recording: &Path) -> (std::collections::BTreeSet<String>, u32) {
    let out = std::process::Command::new(bin())
        .args(["replay", "--format", "jsonl"])
        .arg(recording)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut kinds = std::collections::BTreeSet::new();
    let mut most = 0;
    for e in out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    {
        if e["type"] == "irregular" {
            if let Some(k) = e["kind"].as_str() {
                kinds.insert(k.to_string());
            }
            most = most.max(e["count"].as_u64().unwrap_or(0) as u32);
        }
    }
    (kinds, most)
}

/// Plays `plan` and judges every board.
pub async fn play(plan: &Plan) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let address = private_bus(d).await;
    let listener = Listener::start(&address).await;
    let mut colours: Vec<Vec<(u64, Colours)>> = (0..plan.boards).map(|_| Vec::new()).collect();
    let now = |l: &Listener| l.since.elapsed().as_millis() as u64;
    let games: Vec<BoardGame> = (0..plan.boards).map(|b| board_game(plan, b)).collect();
    let mut swapped = vec![false; plan.boards];
    std::fs::write(d.join("pairings.csv"), pairings(&games, &swapped)).unwrap();
    let cfg = d.join("config.toml");
    let by_serial = plan.seed % 2 == 1;
    let console: SocketAddr = format!("127.0.0.1:{}", crate::common::web::free_port())
        .parse()
        .unwrap();
    let arbiters = d.join("arbiters");
    let line = crate::common::hall::passwd(crate::common::hall::USER, crate::common::hall::PASSWORD).await;
    std::fs::write(&arbiters, &line.stdout).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&arbiters, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    // The hall's MQTT broker (its arbiters call the boards through it), when
    // Mosquitto is installed (under CI it must be).
    let broker = if crate::common::need(&[crate::common::Need::Tool("mosquitto", "mosquitto")]) {
        let port = crate::common::web::free_port();
        // Bridged to a central broker that is not there: the hall's own calls
        // do not need it.
        let central = crate::common::web::free_port();
        Some((crate::mqtt::hall_broker(d, "hall-a", port, central).await, port))
    } else {
        println!("the MQTT door is left out: no mosquitto");
        None
    };
    let mqtt = broker.as_ref().map(|(_, port)| *port);
    // Every third seed the daemon drives the clocks (a time control of its
    // own, 90+30); the others report what the clocks show (issue 57: decisions
    // that meet a clock mode).
    let drive = plan.seed % 3 == 2;
    if drive {
        println!("the daemon drives the clocks (90+30)");
    }
    std::fs::write(&cfg, config(d, plan.boards, by_serial, console, mqtt, drive)).unwrap();
    let logs = games.iter().map(|g| g.log.clone()).collect();
    let (emulators, relays, devices) =
        relay::relayed_boards(logs, SPEED, FIRST_SERIAL, d, |_| LineFaults::CLEAN);
    let mut round_failures: Vec<String> = Vec::new();
    let mut daemon = Some(start(&cfg, &devices, &address, by_serial).await);
    mark_started(&listener, &address, plan.boards).await;
    let started = tokio::time::Instant::now();
    let mut decisions: Vec<BTreeMap<String, usize>> = vec![BTreeMap::new(); plan.boards];
    let mut accept = |b: usize, method: &str, ok: bool| {
        if ok {
            *decisions[b].entry(method.to_string()).or_default() += 1;
        }
    };
    for (at, action) in &plan.actions {
        tokio::time::sleep_until(started + Duration::from_millis(*at)).await;
        match action {
            Action::KillInCall { board, ms } => {
                let n = board + 1;
                let Some((w, b)) = players(&address, n).await else {
                    continue;
                };
                let asked = now(&listener);
                let call = {
                    let (address, n, w, b) = (address.clone(), n.to_string(), w.clone(), b.clone());
                    tokio::spawn(async move { ctl(&address, &["players", &n, &b, &w]).await })
                };
                let delay = (plan.seed.wrapping_mul(31) + *ms) % 41;
                tokio::time::sleep(Duration::from_millis(delay)).await;
                mark_stopped(&listener, plan.boards);
                if let Some(running) = daemon.take() {
                    running.kill();
                }
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                daemon = Some(start(&cfg, &devices, &address, by_serial).await);
                mark_started(&listener, &address, plan.boards).await;
                let ok = call.await.unwrap_or(false);
                // Refused or unanswered: the arbiter looks whether it was taken.
                let taken = ok || property(&address, n, "White").await.as_deref() == Some(b.as_str());
                accept(*board, "SetPlayers", ok);
                if taken {
                    colours[*board].push((asked, Colours::Swapped));
                }
                println!("call in flight at the kill: `ctl players {n}` answered {ok}, taken {taken}");
            }
            Action::KillStarting { ms, at } => {
                mark_stopped(&listener, plan.boards);
                if let Some(running) = daemon.take() {
                    running.kill();
                }
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                let given: &[PathBuf] = if by_serial { &devices } else { &[] };
                let starting = Running::spawn(&mut run_command(&cfg, given, Some(&address)));
                tokio::time::sleep(Duration::from_millis(*at)).await;
                starting.kill();
                daemon = Some(start(&cfg, &devices, &address, by_serial).await);
                mark_started(&listener, &address, plan.boards).await;
            }
            Action::Kill { ms } | Action::Term { ms } => {
                mark_stopped(&listener, plan.boards);
                if let Some(mut running) = daemon.take() {
                    if matches!(action, Action::Kill { .. }) {
                        running.kill();
                    } else {
                        send_signal(running.child.id(), libc::SIGTERM);
                        wait_exit(&mut running.child, 30, "the daemon after SIGTERM").await;
                    }
                }
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                daemon = Some(start(&cfg, &devices, &address, by_serial).await);
                mark_started(&listener, &address, plan.boards).await;
            }
            Action::Cut { board, ms } => {
                listener.mark(*board, Heard::Cut(*ms));
                let _ = relays[*board].0.send(Duration::from_millis(*ms)).await;
            }
            Action::Reload { board } => {
                swapped[*board] = !swapped[*board];
                std::fs::write(d.join("pairings.csv"), pairings(&games, &swapped)).unwrap();
                if let Some(running) = &daemon {
                    send_signal(running.child.id(), libc::SIGHUP);
                }
                // Every board's pairing is read again; only this one's changed.
                for (b, c) in colours.iter_mut().enumerate() {
                    c.push((now(&listener), Colours::Reloaded { swapped: swapped[b] }));
                }
            }
            Action::Unconfirmed { board, door } => {
                let n = board + 1;
                // A game with moves (under way or over): the rule book asks
                // for confirming at every door, so the call is refused and
                // nothing is journaled (the judge counts every record, and a
                // new game's second file).
                if plies(&address, n).await.unwrap_or(0) == 0 {
                    continue;
                }
                let refused = match door {
                    0 => !ctl(&address, &["new-game", &n.to_string()]).await,
                    1 => bus_call(&address, n, "NewGame", &("",)).await.is_err(),
                    2 => bus_call(&address, n, "Decide", &("NewGame", "[\"\"]", false))
                        .await
                        .is_err(),
                    3 => console_decide(console, n, "NewGame", serde_json::json!([""])).await != 200,
                    _ => match mqtt {
                        Some(port) => !mqtt_decide(port, n, "NewGame", serde_json::json!([""])).await,
                        None => continue,
                    },
                };
                if !refused {
                    // Counted as what it did: the judge then fails on the
                    // game it ended.
                    accept(*board, "NewGame", true);
                    listener.mark(*board, Heard::Decided("NewGame".into()));
                }
            }
            Action::AddTimeUndone { board } => {
                let n = board + 1;
                let Some(ply) = plies(&address, n).await else {
                    continue;
                };
                // The side not to move: its clock stands.
                let (side, prop) = if ply % 2 == 0 {
                    ("black", "BlackClockMs")
                } else {
                    ("white", "WhiteClockMs")
                };
                let ms = |v: Option<String>| v.and_then(|v| v.parse::<i64>().ok());
                let Some(before) = ms(property(&address, n, prop).await) else {
                    continue;
                };
                if !ctl(&address, &["add-time", &n.to_string(), side, "+1m"]).await {
                    continue;
                }
                accept(*board, "AddTime", true);
                // The side's clock may have started meanwhile (a move made):
                // 2 s of real time is 8 s of the clock's.
                let near =
                    |v: Option<i64>, want: i64| v.is_some_and(|v| v <= want + 1000 && v >= want - 9000);
                // The clock's time as D-Bus shows it once it is `want`, or
                // what it shows after 2 s.
                let shown = |want: i64| {
                    let address = address.clone();
                    async move {
                        let until = tokio::time::Instant::now() + Duration::from_secs(2);
                        loop {
                            let v = ms(property(&address, n, prop).await);
                            if near(v, want) || tokio::time::Instant::now() >= until {
                                return v;
                            }
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                };
                let added = shown(before + 60_000).await;
                let undone_ok = ctl(&address, &["undo", &n.to_string()]).await;
                accept(*board, "Undo", undone_ok);
                let undone = shown(before).await;
                if !near(added, before + 60_000) {
                    round_failures.push(format!(
                        "board {n}: {side}'s clock {added:?} ms after add-time +1m, {before} ms before"
                    ));
                }
                if !undone_ok || !near(undone, before) {
                    round_failures.push(format!(
                        "board {n}: {side}'s clock {undone:?} ms after add-time +1m undone (accepted: {undone_ok}), {before} ms before: undo did not restore it"
                    ));
                }
            }
            Action::Swap { board, .. } | Action::Ratings { board } => {
                let n = board + 1;
                let Some((w, b)) = players(&address, n).await else {
                    continue;
                };
                let g = &games[*board];
                if let Action::Swap { door, .. } = action {
                    let asked = now(&listener);
                    let ok = match (door, mqtt) {
                        (1, _) => {
                            console_decide(console, n, "SetPlayers", serde_json::json!([b, w])).await == 200
                        }
                        (0, _) | (_, None) => ctl(&address, &["players", &n.to_string(), &b, &w]).await,
                        (_, Some(port)) => {
                            mqtt_decide(port, n, "SetPlayers", serde_json::json!([b, w])).await
                        }
                    };
                    accept(*board, "SetPlayers", ok);
                    if ok {
                        colours[*board].push((asked, Colours::Swapped));
                    }
                } else {
                    let elo = |name: &str| {
                        [&g.white, &g.black]
                            .into_iter()
                            .find(|p| p.name == name)
                            .map(|p| p.elo.clone())
                    };
                    let (Some(we), Some(be)) = (elo(&w), elo(&b)) else {
                        continue;
                    };
                    let ok = ctl(
                        &address,
                        &[
                            "tags",
                            &n.to_string(),
                            &format!("WhiteElo={we}"),
                            &format!("BlackElo={be}"),
                        ],
                    )
                    .await;
                    accept(*board, "SetTags", ok);
                }
            }
        }
    }
    // Every game played out, the boards given time to settle.
    let longest = games
        .iter()
        .map(|g| g.log.records.last().map_or(0, |r| r.time.micros()))
        .max()
        .unwrap_or(0);
    tokio::time::sleep_until(started + Duration::from_secs_f64(longest as f64 / 1e6 / SPEED + 1.0)).await;
    for (i, g) in games.iter().enumerate() {
        let until = tokio::time::Instant::now() + Duration::from_secs(15);
        while plies(&address, i + 1).await != Some(g.moves.len()) && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    // The arbiter's result on every game without a forced end; then a last
    // SIGKILL and start: everything decided is still there.
    let mut results = Vec::new();
    for (i, g) in games.iter().enumerate() {
        let forced = true_result(&g.start, &g.moves);
        if forced == "*" {
            let ok = ctl(&address, &["result", &(i + 1).to_string(), "1/2"]).await;
            accept(i, "SetResult", ok);
            results.push(if ok { "1/2-1/2" } else { "*" }.to_string());
        } else {
            results.push(forced.to_string());
        }
    }
    mark_stopped(&listener, plan.boards);
    if let Some(running) = daemon.take() {
        running.kill();
    }
    let daemon = start(&cfg, &devices, &address, by_serial).await;
    mark_started(&listener, &address, plan.boards).await;
    for (i, want) in results.iter().enumerate() {
        let until = tokio::time::Instant::now() + Duration::from_secs(15);
        while property(&address, i + 1, "Result").await.as_deref() != Some(want.as_str())
            && tokio::time::Instant::now() < until
        {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    // The round's results table, as the arbiter hands it to the tournament
    // program: each board's last field.
    let table = crate::common::process::ctl(&address, &["results", "--format", "csv"]).await;
    let in_table = |n: usize| -> String {
        table
            .out
            .lines()
            .skip(1)
            .find(|l| l.split(',').next() == Some(n.to_string().as_str()))
            .and_then(|l| l.rsplit(',').next())
            .unwrap_or("(no line)")
            .to_string()
    };
    let mut bus = Vec::new();
    for n in 1..=plan.boards {
        let mut props = BTreeMap::new();
        for name in ["Status", "White", "Black", "Result"] {
            props.insert(name, property(&address, n, name).await.unwrap_or_default());
        }
        props.insert("ResultsTable", in_table(n));
        bus.push(props);
    }
    daemon.stop().within(40, "the daemon to stop").await;
    for e in emulators {
        e.abort();
    }
    drop(relays);
    let heard = listener.stop();
    let mut outcome = judge_all(plan, &games, &results, &decisions, bus, d, |i| {
        let of = heard.of(i);
        let first = of
            .iter()
            .find(|(_, h)| matches!(h, Heard::Signal(m, 1) if m == "MoveMade"))
            .map(|(t, _)| *t);
        let ended = of
            .iter()
            .find(|(_, h)| matches!(h, Heard::Signal(m, _) if m == "GameEnded"))
            .map(|(t, _)| *t);
        colours_of(&games[i], &colours[i], first, ended)
    });
    for f in round_failures {
        outcome.failures.push(format!("seed {}: {f}", plan.seed));
    }
    // What was published live, board by board.
    for (i, g) in games.iter().enumerate() {
        let of = heard.of(i);
        let holds: Vec<(u64, u64)> = match hands_offset(g, &of) {
            Some(offset) => g
                .holds
                .iter()
                .map(|(a, z)| {
                    let real = |us: u64| (offset + (us as f64 / 1000.0 / SPEED) as i64).max(0) as u64;
                    (real(*a), real(*z))
                })
                .collect(),
            None => Vec::new(),
        };
        println!("board {}:", i + 1);
        let (kinds, most) = replay_alarms(&d.join(format!("state/recordings/line{i}.esl")));
        for f in live::judge_alarms(&of, &kinds, most) {
            outcome.failures.push(format!(
                "seed {} ({}): board {} live: {f}",
                plan.seed,
                g.name,
                i + 1
            ));
        }
        // The clock tags say the clocks as they stood at the game's end
        // (issue 57: `WhiteClock "0:19:04"` beside a flag at 0:00:00).
        if let Some((w, b)) = live::clocks_at_end(&of) {
            println!("  clock tags judged against the clocks at the game's end ({w} ms, {b} ms)");
            let file = d.join(format!("live/round-1/game-{}.pgn", i + 1));
            let pgn = std::fs::read_to_string(&file).unwrap_or_default();
            // Who made the last move: its clock stops at the press that
            // completes it, after the end (a few seconds of its time at most);
            // the other side's keeps the end's time.
            let white_moved = of
                .iter()
                .take_while(|(_, h)| !matches!(h, Heard::Signal(m, _) if m == "GameEnded"))
                .filter_map(|(_, h)| match h {
                    Heard::Moves(m) => Some(m.len() % 2 == 1),
                    _ => None,
                })
                .last();
            for (name, heard_ms, moved) in [
                ("WhiteClock", w, white_moved == Some(true)),
                ("BlackClock", b, white_moved == Some(false)),
            ] {
                let tag = super::judge::tag(&pgn, name);
                let lower = if moved { 6000 } else { 1500 };
                match tag.as_deref().and_then(live::tag_ms) {
                    Some(ms) if ms <= heard_ms + 1500 && ms >= heard_ms - lower => {}
                    _ => outcome.failures.push(format!(
                        "seed {} ({}): board {}: {name} {tag:?} at the game's end, the clock showed {} ms",
                        plan.seed,
                        g.name,
                        i + 1,
                        heard_ms
                    )),
                }
            }
        }
        for f in live::judge(&of, &holds) {
            outcome.failures.push(format!(
                "seed {} ({}): board {} live: {f}",
                plan.seed,
                g.name,
                i + 1
            ));
        }
    }
    if std::env::var_os("EVENT_KEEP").is_some() {
        println!("round folder kept: {}", dir.keep().display());
    }
    outcome
}

fn judge_all(
    plan: &Plan,
    games: &[BoardGame],
    results: &[String],
    decisions: &[BTreeMap<String, usize>],
    bus: Vec<BTreeMap<&'static str, String>>,
    d: &Path,
    colours: impl Fn(usize) -> Option<(String, String)>,
) -> Outcome {
    let mut failures = Vec::new();
    let round = d.join("live/round-1");
    for (i, (g, bus)) in games.iter().zip(bus).enumerate() {
        let n = i + 1;
        let mut files: Vec<(String, String)> = std::fs::read_dir(&round)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| f.starts_with(&format!("game-{n}.")) || f.starts_with(&format!("game-{n}-")))
            .map(|f| {
                let text = std::fs::read_to_string(round.join(&f)).unwrap_or_default();
                (f, text)
            })
            .collect();
        files.sort();
        let recording = d.join(format!("state/recordings/line{i}.esl"));
        let text = std::fs::read_to_string(&recording).unwrap_or_default();
        let mut journaled = BTreeMap::new();
        for line in text.lines() {
            let mut w = line.split(' ');
            if w.nth(1) == Some("arbiter") {
                if let Some(m) = w.next() {
                    *journaled.entry(m.to_string()).or_default() += 1;
                }
            }
        }
        let replay = |format: &str| {
            let out = std::process::Command::new(bin())
                .args(["replay", "--format", format])
                .arg(&recording)
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let events = replay("jsonl");
        let record = record_events(&events);
        let alarms = events
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|e| {
                let kind = e["type"].as_str()?;
                // A move found across a gap is part of finding the game again
                // (the way out of `lost_track`), not a move made over an alarm.
                Some(
                    if kind == "move" && e["inferred"] == true {
                        "inferred_move"
                    } else {
                        kind
                    }
                    .to_string(),
                )
            })
            .filter(|t| ["irregular", "resolved", "move", "game_end", "game_start"].contains(&t.as_str()))
            .collect();
        let touches = eboard_bridge::log::read_log(&recording)
            .map(|log| seen_across_restarts(g, &log))
            .unwrap_or_default();
        let mut players = BTreeMap::new();
        for p in [&g.white, &g.black] {
            players.insert(
                p.name.clone(),
                [("Elo", p.elo.clone()), ("FideId", p.fide.clone())].into(),
            );
        }
        let truth = Truth {
            board: n as u32,
            start: g.start.clone(),
            moves: g.moves.clone(),
            result: results[i].clone(),
            players,
            decisions: decisions[i].clone(),
            colours: colours(i),
        };
        if truth.colours.is_none() {
            println!("board {n}: who plays which colour not judged (a change near the first move)");
        }
        let seen = Seen {
            files,
            touches,
            journaled,
            bus,
            replayed: replay("pgn"),
            alarms,
            record,
        };
        for f in judge(&truth, &seen) {
            failures.push(format!("seed {} ({}): {f}", plan.seed, g.name));
        }
    }
    Outcome {
        failures,
        games: games.len(),
        plies: games.iter().map(|g| g.moves.len()).sum(),
        decisions: decisions.iter().flat_map(|m| m.values()).sum(),
    }
}
