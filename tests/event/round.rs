//! One round of the event campaign through the real binary: the boards set up,
//! the timeline played, the last decisions and restart, and each board judged.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use eboard_bridge::log::SensorLog;

use super::boards::{BoardGame, board_game, pairings, round_one_players, round_two_players};
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

/// Whether board `n` still shows a game of a round before `round` (its game
/// of that round over, its next game not begun).
async fn shows_earlier_round(address: &str, n: usize, round: u32) -> bool {
    shown_round(address, n).await.is_some_and(|r| r < round)
}

/// The round of the game board `n` shows (its `Round` property's `R` of
/// `R.B`).
async fn shown_round(address: &str, n: usize) -> Option<u32> {
    property(address, n, "Round")
        .await
        .and_then(|r| r.split('.').next()?.trim().parse::<u32>().ok())
}

/// Whether board `n` shows a game of a round after `round` (its next game
/// begun).
async fn shows_later_round(address: &str, n: usize, round: u32) -> bool {
    shown_round(address, n).await.is_some_and(|r| r > round)
}

/// The mark, among a board's properties read back, that the board had begun
/// its next round's game by then (its properties were that game's).
pub const MOVED_ON: &str = "MovedOn";

/// How many of the arbiter's decisions `method` the journal `path` holds.
fn journaled(path: &Path, method: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            let mut w = l.split(' ');
            w.nth(1) == Some("arbiter") && w.next() == Some(method)
        })
        .count()
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
/// board (in the records after `after` µs: the round's), across restarts: as `played::seen_per_ply`, but with the recording's
/// clock aligned again after each gap (a restarted daemon's journal goes on a
/// second after its last record, however long it was down).
fn seen_across_restarts(g: &BoardGame, recording: &SensorLog, after: u64) -> Vec<(usize, usize)> {
    use eboard_bridge::board::BoardEvent;
    use eboard_bridge::log::{Played, Player};
    let sent = &g.touches;
    // Segments of touches read while the board was known, each from a gap on.
    let mut segments: Vec<Vec<(u64, Touch)>> = vec![Vec::new()];
    let mut known = true;
    for s in Player::play_log(recording, "recording").unwrap_or_default() {
        // The records of an earlier round are not this game's.
        if s.time.micros() <= after {
            continue;
        }
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
    // the touches sent with the offset that pairs most of its touches, and of
    // those the nearest in time (tried from its first touches, each against
    // the first touches sent after the last segment that match it: a first
    // touch may be a stale one, read from the line's buffer after a restart;
    // or one a later touch matches alike, as a slip's placement after a
    // move's on the same square).
    let window = 3.0e6 * SPEED;
    // The recording's µs (the daemon's time runs as real time) in log µs.
    let scaled = |r: u64| (r as f64 * SPEED) as i64;
    let mut got: Vec<(u64, Touch)> = Vec::new();
    let mut from = 0usize;
    for seg in segments {
        // (touches that fit, their total distance to the nearest sent).
        let fits = |offset: i64| {
            seg.iter()
                .filter_map(|(r, t)| {
                    let at = scaled(*r) + offset;
                    sent[from..]
                        .iter()
                        .filter(|s| s.2 == *t)
                        .map(|s| (s.1 as i64 - at).unsigned_abs())
                        .filter(|&d| (d as f64) < window)
                        .min()
                })
                .fold((0usize, 0u64), |(n, e), d| (n + 1, e.saturating_add(d)))
        };
        let mut best: Option<((usize, u64), i64, usize)> = None;
        for &(r, t) in seg.iter().take(8) {
            for (k, s) in sent
                .iter()
                .enumerate()
                .skip(from)
                .filter(|(_, s)| s.2 == t)
                .take(3)
            {
                let offset = s.1 as i64 - scaled(r);
                let (n, e) = fits(offset);
                if best.is_none_or(|((b, be), _, _)| n > b || (n == b && e < be)) {
                    best = Some(((n, e), offset, k));
                }
            }
        }
        let Some((_, offset, k)) = best else { continue };
        from = k;
        got.extend(seg.iter().map(|(r, t)| ((scaled(*r) + offset).max(0) as u64, *t)));
    }
    let near = |s: &(Option<usize>, u64, Touch), g: &(u64, Touch)| {
        let d = (s.1 as f64 - g.0 as f64).abs();
        (s.2 == g.1 && d < window).then_some(d as u64)
    };
    // Per ply: its touches paired, of all its touches.
    let mut out: Vec<(usize, usize)> = vec![(0, 0); g.moves.len()];
    for (p, _, _) in sent {
        if let Some(p) = p {
            out[*p].1 += 1;
        }
    }
    for i in pair(sent, &got, near) {
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
/// the alarm and the players each shows then.
async fn mark_started(listener: &Listener, address: &str, boards: usize) {
    for n in 1..=boards {
        let irregular = property(address, n, "Irregularity")
            .await
            .is_some_and(|i| !i.is_empty());
        listener.mark(n - 1, Heard::Started { irregular });
        if let Some((w, b)) = players(address, n).await {
            listener.mark(n - 1, Heard::PlayersAtStart(w, b));
        }
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
    // Each ply's last `MoveMade` (a move made and taken back was heard at
    // its ply first).
    let mut made = BTreeMap::new();
    for (t, h) in heard {
        if let Heard::Signal(m, ply) = h
            && m == "MoveMade"
            && *ply >= 1
        {
            made.insert(*ply, *t);
        }
    }
    for (ply, t) in &made {
        let placed = g
            .touches
            .iter()
            .filter(|(p, _, touch)| *p == Some(*ply as usize - 1) && touch.0)
            .map(|(_, at, _)| *at)
            .next_back()?;
        offsets.push(*t as i64 - (placed as f64 / 1000.0 / SPEED) as i64);
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

/// The hall: the daemon on the round's bus, its boards behind their relays,
/// and the doors the arbiter decides through.
struct Hall {
    dir: PathBuf,
    address: String,
    listener: Listener,
    cfg: PathBuf,
    by_serial: bool,
    console: SocketAddr,
    mqtt: Option<u16>,
    daemon: Option<Running>,
    devices: Vec<PathBuf>,
    emulators: Vec<tokio::task::JoinHandle<()>>,
    relays: Vec<relay::Relay>,
    /// When the boards began to play their logs (the last `boards_play`).
    playing_since: tokio::time::Instant,
    /// What the round saw fail as it went (a clock not given back, ...).
    failures: Vec<String>,
}

/// One round in the hall: its games, and what the arbiter did and was told.
struct RoundPlay {
    number: u32,
    games: Vec<BoardGame>,
    /// Each board's colours as the round's pairings file has them.
    swapped: Vec<bool>,
    colours: Vec<Vec<(u64, Colours)>>,
    decisions: Vec<BTreeMap<String, usize>>,
    /// The result each game must end with.
    results: Vec<String>,
    /// Each board's `Status`, `White`, `Black`, `Result` on D-Bus and its
    /// line of the results table, after the restart that followed the results.
    bus: Vec<BTreeMap<&'static str, String>>,
    /// When the boards began to play the round's logs.
    started: tokio::time::Instant,
}

impl RoundPlay {
    /// The players of board `b`'s game of this round not yet begun, as its
    /// pairing and the changes of colours accepted so far name them.
    fn named_next(&self, b: usize) -> (String, String) {
        // The round's pairings file as it began (reloads are changes).
        let mut swapped = false;
        for (_, c) in &self.colours[b] {
            match c {
                Colours::Reloaded { swapped: s } => swapped = *s,
                Colours::Swapped => swapped = !swapped,
            }
        }
        let g = &self.games[b];
        let (w, k) = if swapped {
            (&g.black, &g.white)
        } else {
            (&g.white, &g.black)
        };
        (w.name.clone(), k.name.clone())
    }

    fn new(number: u32, games: Vec<BoardGame>) -> RoundPlay {
        let boards = games.len();
        RoundPlay {
            number,
            games,
            swapped: vec![false; boards],
            colours: (0..boards).map(|_| Vec::new()).collect(),
            decisions: vec![BTreeMap::new(); boards],
            results: Vec::new(),
            bus: Vec::new(),
            started: tokio::time::Instant::now(),
        }
    }

    fn accept(&mut self, b: usize, method: &str, ok: bool) {
        if ok {
            *self.decisions[b].entry(method.to_string()).or_default() += 1;
        }
    }

    /// The pairings file of the round (round 1's is the configuration's).
    fn pairings_file(&self) -> &'static str {
        if self.number == 1 {
            "pairings.csv"
        } else {
            "round-2.csv"
        }
    }
}

impl Hall {
    fn now(&self) -> u64 {
        self.listener.since.elapsed().as_millis() as u64
    }

    fn boards(&self) -> usize {
        self.devices.len()
    }

    async fn start(&mut self) {
        self.daemon = Some(start(&self.cfg, &self.devices, &self.address, self.by_serial).await);
        mark_started(&self.listener, &self.address, self.boards()).await;
    }

    /// SIGKILL (`kill`) or SIGTERM, the daemon's end awaited.
    async fn stop(&mut self, kill: bool) {
        mark_stopped(&self.listener, self.boards());
        if let Some(mut running) = self.daemon.take() {
            if kill {
                running.kill();
            } else {
                send_signal(running.child.id(), libc::SIGTERM);
                wait_exit(&mut running.child, 30, "the daemon after SIGTERM").await;
            }
        }
    }

    /// The boards play `logs` from now on (new emulators behind new relays
    /// on the same lines), while the daemon is down.
    fn boards_play(&mut self, logs: Vec<SensorLog>) {
        for e in self.emulators.drain(..) {
            e.abort();
        }
        self.relays.clear();
        let (emulators, relays, devices) =
            relay::relayed_boards(logs, SPEED, FIRST_SERIAL, &self.dir, |_| LineFaults::CLEAN);
        assert_eq!(devices, self.devices, "the lines moved");
        self.emulators = emulators;
        self.relays = relays;
        self.playing_since = tokio::time::Instant::now();
    }

    /// `ctl round 2 --pairings round-2.csv`: round 2 is each board's next game.
    async fn next_round(&mut self, r: &RoundPlay) {
        for b in 0..self.boards() {
            self.listener.mark(b, Heard::Named);
        }
        let file = self.dir.join(r.pairings_file());
        let out = crate::common::process::ctl(
            &self.address,
            &[
                "round",
                &r.number.to_string(),
                "--pairings",
                &file.to_string_lossy(),
            ],
        )
        .await;
        println!(
            "ctl round {}: exit {}\n{}{}",
            r.number, out.code, out.out, out.err
        );
        if out.code != 0 {
            self.failures
                .push(format!("ctl round {} refused: {}{}", r.number, out.out, out.err));
        }
    }

    /// Does `action` to round `r`.
    async fn act(&mut self, r: &mut RoundPlay, seed: u64, action: &Action) {
        let address = self.address.clone();
        let (console, mqtt) = (self.console, self.mqtt);
        match action {
            Action::KillInCall { board, ms } => {
                let n = board + 1;
                let Some((mut w, mut b)) = players(&address, n).await else {
                    return;
                };
                // As for a swap: a board still showing its game of the round
                // before names the round's players (seed 410).
                if shows_earlier_round(&address, n, r.number).await {
                    (w, b) = r.named_next(*board);
                }
                let journal = self.dir.join(format!("state/recordings/line{board}.esl"));
                let before = journaled(&journal, "SetPlayers");
                let asked = self.now();
                self.listener.mark(*board, Heard::Named);
                let call = {
                    let (address, n, w, b) = (address.clone(), n.to_string(), w.clone(), b.clone());
                    tokio::spawn(async move { ctl(&address, &["players", &n, &b, &w]).await })
                };
                let delay = (seed.wrapping_mul(31) + *ms) % 41;
                tokio::time::sleep(Duration::from_millis(delay)).await;
                self.stop(true).await;
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                self.start().await;
                let ok = call.await.unwrap_or(false);
                // Refused or unanswered: the arbiter looks whether it was taken,
                // in the journal (a board still showing a finished game shows
                // not the players its next game takes).
                let taken = ok || journaled(&journal, "SetPlayers") > before;
                r.accept(*board, "SetPlayers", ok);
                if taken {
                    r.colours[*board].push((asked, Colours::Swapped));
                }
                println!("call in flight at the kill: `ctl players {n}` answered {ok}, taken {taken}");
            }
            Action::KillStarting { ms, at } => {
                self.stop(true).await;
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                let given: &[PathBuf] = if self.by_serial { &self.devices } else { &[] };
                let starting = Running::spawn(&mut run_command(&self.cfg, given, Some(&address)));
                tokio::time::sleep(Duration::from_millis(*at)).await;
                starting.kill();
                self.start().await;
            }
            Action::Kill { ms } | Action::Term { ms } => {
                self.stop(matches!(action, Action::Kill { .. })).await;
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                self.start().await;
            }
            Action::Cut { board, ms } => {
                self.listener.mark(*board, Heard::Cut(*ms));
                let _ = self.relays[*board].0.send(Duration::from_millis(*ms)).await;
            }
            Action::Reload { board } => {
                for b in 0..self.boards() {
                    self.listener.mark(b, Heard::Named);
                }
                r.swapped[*board] = !r.swapped[*board];
                std::fs::write(self.dir.join(r.pairings_file()), pairings(&r.games, &r.swapped)).unwrap();
                if r.number == 1 {
                    // The configuration's pairings file, read again.
                    if let Some(running) = &self.daemon {
                        send_signal(running.child.id(), libc::SIGHUP);
                    }
                } else {
                    // Round 2's pairings are `ctl round`'s: loaded again by
                    // `ctl pairings` (the configuration's file is round 1's).
                    let file = self.dir.join(r.pairings_file());
                    let round = r.number.to_string();
                    if !ctl(
                        &address,
                        &["pairings", &file.to_string_lossy(), "--round", &round],
                    )
                    .await
                    {
                        r.swapped[*board] = !r.swapped[*board];
                        return;
                    }
                }
                // Every board's pairing is read again; only this one's changed.
                let now = self.now();
                for (b, c) in r.colours.iter_mut().enumerate() {
                    c.push((
                        now,
                        Colours::Reloaded {
                            swapped: r.swapped[b],
                        },
                    ));
                }
            }
            Action::Unconfirmed { board, door } => {
                let n = board + 1;
                // A game of this round with moves (under way or over): the
                // rule book asks for confirming at every door, so the call is
                // refused and nothing is journaled (the judge counts every
                // record, and a new game's second file). Round 1's game over,
                // before round 2's begins, is no such game: once `ctl round`
                // has started round 2, a new game on it needs no confirming.
                let this_round = r.number.to_string();
                if plies(&address, n).await.unwrap_or(0) == 0
                    || property(&address, n, "Round")
                        .await
                        .is_none_or(|round| round.split('.').next() != Some(this_round.as_str()))
                {
                    return;
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
                        None => return,
                    },
                };
                if !refused {
                    // Counted as what it did: the judge then fails on the
                    // game it ended.
                    r.accept(*board, "NewGame", true);
                    self.listener.mark(*board, Heard::Decided("NewGame".into()));
                }
            }
            Action::Flag { board } => {
                let n = board + 1;
                // A game of this round under way, with moves: its flags are
                // the ones to report.
                let this_round = r.number.to_string();
                if plies(&address, n).await.unwrap_or(0) < 2
                    || property(&address, n, "Status").await.as_deref() != Some("playing")
                    || property(&address, n, "Round")
                        .await
                        .is_none_or(|round| round.split('.').next() != Some(this_round.as_str()))
                {
                    return;
                }
                let ok = ctl(&address, &["set-clock", &n.to_string(), "0:00:05", "0:00:05"]).await;
                r.accept(*board, "SetClock", ok);
                if ok {
                    self.listener.mark(*board, Heard::ClockSet);
                }
            }
            Action::AddTimeUndone { board } => {
                let n = board + 1;
                let Some(ply) = plies(&address, n).await else {
                    return;
                };
                // The side not to move: its clock stands.
                let (side, prop) = if ply % 2 == 0 {
                    ("black", "BlackClockMs")
                } else {
                    ("white", "WhiteClockMs")
                };
                let ms = |v: Option<String>| v.and_then(|v| v.parse::<i64>().ok());
                let Some(before) = ms(property(&address, n, prop).await) else {
                    return;
                };
                self.listener.mark(*board, Heard::ClockChanged);
                if !ctl(&address, &["add-time", &n.to_string(), side, "+1m"]).await {
                    return;
                }
                r.accept(*board, "AddTime", true);
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
                r.accept(*board, "Undo", undone_ok);
                let undone = shown(before).await;
                // A move made meanwhile (the player to move pressed: the
                // side's increment came, or its clock started) moves the
                // time the check starts from: then only the minute given and
                // taken back is judged (seed 353: a press between the reads
                // gave White its 30 s first).
                if plies(&address, n).await != Some(ply) {
                    let back = added.zip(undone).map(|(a, u)| a - u);
                    if !undone_ok || !back.is_some_and(|d| (55_000..=65_000).contains(&d)) {
                        self.failures.push(format!(
                            "board {n}: {side}'s clock {added:?} ms after add-time +1m, {undone:?} after its undo (accepted: {undone_ok}), a move made meanwhile: the undo did not take the minute back"
                        ));
                    }
                    return;
                }
                if !near(added, before + 60_000) {
                    self.failures.push(format!(
                        "board {n}: {side}'s clock {added:?} ms after add-time +1m, {before} ms before"
                    ));
                }
                if !undone_ok || !near(undone, before) {
                    self.failures.push(format!(
                        "board {n}: {side}'s clock {undone:?} ms after add-time +1m undone (accepted: {undone_ok}), {before} ms before: undo did not restore it"
                    ));
                }
            }
            Action::Swap { board, .. } | Action::Ratings { board } => {
                let n = board + 1;
                let Some((mut w, mut b)) = players(&address, n).await else {
                    return;
                };
                // Before its first move of the round, a board still shows its
                // game of the round before (over): the players an arbiter swaps
                // are then the round's pairing for its next game, as every change
                // of this round so far left them (issue 62, seed 413: the shown
                // players of round 1 were named for round 2's game).
                if shows_earlier_round(&address, n, r.number).await {
                    (w, b) = r.named_next(*board);
                }
                if let Action::Swap { door, .. } = action {
                    let asked = self.now();
                    self.listener.mark(*board, Heard::Named);
                    let ok = match (door, mqtt) {
                        (1, _) => {
                            console_decide(console, n, "SetPlayers", serde_json::json!([b, w])).await == 200
                        }
                        (0, _) | (_, None) => ctl(&address, &["players", &n.to_string(), &b, &w]).await,
                        (_, Some(port)) => {
                            mqtt_decide(port, n, "SetPlayers", serde_json::json!([b, w])).await
                        }
                    };
                    r.accept(*board, "SetPlayers", ok);
                    if ok {
                        r.colours[*board].push((asked, Colours::Swapped));
                    }
                } else {
                    let g = &r.games[*board];
                    let elo = |name: &str| {
                        [&g.white, &g.black]
                            .into_iter()
                            .find(|p| p.name == name)
                            .map(|p| p.elo.clone())
                    };
                    let (Some(we), Some(be)) = (elo(&w), elo(&b)) else {
                        return;
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
                    r.accept(*board, "SetTags", ok);
                }
            }
        }
    }

    /// Once every game of round `r` is played out: the arbiter's result on
    /// every game without a forced end (first over a piece held where no move goes, while
    /// the board shows it irregular: an alarm standing at the game's end).
    /// Then, on one board by the seed whose result the arbiter gave, the
    /// result taken back as given by mistake: the game reinstated at its last
    /// ply (`ctl reinstate N PLY --force`: the finished game open again, its
    /// moves kept), and the result given again.
    async fn decide(&mut self, r: &mut RoundPlay, seed: u64) {
        let address = self.address.clone();
        let real = |us: u64| Duration::from_secs_f64(us as f64 / 1e6 / SPEED);
        // A result the hands gave by kings stands as the board's own.
        r.results = r
            .games
            .iter()
            .map(|g| match g.kings {
                Some(result) => result.to_string(),
                None => true_result(&g.start, &g.moves).to_string(),
            })
            .collect();
        for (i, g) in r.games.iter().enumerate() {
            if let Some(result) = g.kings {
                println!("board {}: the hands give the result by kings ({result})", i + 1);
            }
        }
        // The board with a piece held where no move goes first, while it stands.
        for i in 0..r.games.len() {
            let Some((from, to)) = r.games[i].held_at_end.filter(|_| r.results[i] == "*") else {
                continue;
            };
            // The alarm, once the piece has stood past the threshold.
            let until = r.started + real(to);
            tokio::time::sleep_until(r.started + real(from)).await;
            while property(&address, i + 1, "Irregularity")
                .await
                .is_none_or(|a| a.is_empty())
                && tokio::time::Instant::now() < until
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let standing = tokio::time::Instant::now() < until;
            println!(
                "board {}: a piece held where no move goes at the game's end; the result given {}",
                i + 1,
                if standing {
                    "while the alarm stands"
                } else {
                    "after it (no alarm seen while it stood)"
                }
            );
            let ok = ctl(&address, &["result", &(i + 1).to_string(), "1/2"]).await;
            r.accept(i, "SetResult", ok);
            if ok {
                r.results[i] = "1/2-1/2".into();
            }
        }
        let played = r.games.iter().map(|g| g.played).max().unwrap_or(0);
        tokio::time::sleep_until(r.started + real(played) + Duration::from_secs(1)).await;
        for (i, g) in r.games.iter().enumerate() {
            let until = tokio::time::Instant::now() + Duration::from_secs(15);
            while plies(&address, i + 1).await != Some(g.moves.len()) && tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        let mut given = Vec::new();
        for i in 0..r.games.len() {
            if r.results[i] != "*" || r.games[i].held_at_end.is_some() {
                continue;
            }
            let ok = ctl(&address, &["result", &(i + 1).to_string(), "1/2"]).await;
            r.accept(i, "SetResult", ok);
            if ok {
                r.results[i] = "1/2-1/2".into();
                given.push(i);
            }
        }
        if let Some(&i) = given.get((seed as usize + r.number as usize) % given.len().max(1)) {
            let n = (i + 1).to_string();
            let ply = r.games[i].moves.len().to_string();
            let ok = ctl(&address, &["reinstate", &n, &ply, "--force"]).await;
            r.accept(i, "Reinstate", ok);
            println!(
                "board {n}: the result given by mistake: the game reinstated at ply {ply} (accepted: {ok}), the result given again"
            );
            if ok {
                self.listener.mark(i, Heard::Decided("Reinstate".into()));
                r.results[i] = "*".into();
                // A game under way shows no result (`""`).
                if property(&address, i + 1, "Result")
                    .await
                    .is_none_or(|result| !result.is_empty() && result != "*")
                {
                    self.failures.push(format!(
                        "board {n}: reinstated at its last ply, its game still shows a result (`Result` {:?})",
                        property(&address, i + 1, "Result").await
                    ));
                }
                let again = ctl(&address, &["result", &n, "1/2"]).await;
                r.accept(i, "SetResult", again);
                if again {
                    r.results[i] = "1/2-1/2".into();
                }
            }
        }
        // The boards' logs played to their end (a piece held at the end put back).
        let longest = r
            .games
            .iter()
            .map(|g| g.log.records.last().map_or(0, |rec| rec.time.micros()))
            .max()
            .unwrap_or(0);
        tokio::time::sleep_until(r.started + real(longest) + Duration::from_millis(500)).await;
    }

    /// After the restart that followed the results: each result standing on
    /// D-Bus, the results table and each board's properties (`r.bus`).
    async fn read_back(&mut self, r: &mut RoundPlay) {
        let address = self.address.clone();
        for (i, want) in r.results.iter().enumerate() {
            let until = tokio::time::Instant::now() + Duration::from_secs(15);
            while property(&address, i + 1, "Result").await.as_deref() != Some(want.as_str())
                && tokio::time::Instant::now() < until
                && !shows_later_round(&address, i + 1, r.number).await
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        // The next round's boards are set up this long after they began to
        // play (they first stand as this round left them).
        let set_up = self.playing_since
            + Duration::from_secs_f64(super::boards::SET_UP_AFTER_MS as f64 / 1000.0 / SPEED);
        // The round's results table, as the arbiter hands it to the tournament
        // program: each board's last field.
        let round = r.number.to_string();
        let table =
            crate::common::process::ctl(&address, &["results", "--round", &round, "--format", "csv"]).await;
        r.bus.clear();
        for n in 1..=self.boards() {
            let mut props = BTreeMap::new();
            // A board's properties are its game's: once it is set up for the
            // next round (its round over, a slow start read late), they are
            // that game's, and this round's stand only in its files and table.
            let before = shows_later_round(&address, n, r.number).await;
            for name in ["Status", "White", "Black", "Result"] {
                props.insert(name, property(&address, n, name).await.unwrap_or_default());
            }
            if before || shows_later_round(&address, n, r.number).await {
                // Only a board set up again may show its next game: one that
                // shows it while it still stands as this round left it was
                // moved on by the daemon itself.
                if tokio::time::Instant::now() < set_up {
                    self.failures.push(format!(
                        "board {n}: showed round {}'s game while it still stood as round {} left it",
                        r.number + 1,
                        r.number
                    ));
                }
                println!(
                    "board {n}: set up for round {} before round {}'s properties were read back: its D-Bus properties not compared",
                    r.number + 1,
                    r.number
                );
                props.clear();
                props.insert(MOVED_ON, String::new());
            }
            props.insert("ResultsTable", table_result(&table.out, n));
            r.bus.push(props);
        }
    }
}

/// Board `n`'s result in a results table (`ctl results --format csv`).
fn table_result(table: &str, n: usize) -> String {
    table
        .lines()
        .skip(1)
        .find(|l| l.split(',').next() == Some(n.to_string().as_str()))
        .and_then(|l| l.rsplit(',').next())
        .unwrap_or("(no line)")
        .to_string()
}

/// Every file of a round's folder, by name, with its text.
fn folder(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            (name, text)
        })
        .collect()
}

/// Round `r`'s folder once it shows the round's results and stays as it is
/// for a second (the broadcast folder is written after D-Bus, and a restart's
/// new process writes each board's files again once it serves the board): at
/// most 15 s.
async fn settled(dir: &Path, r: &RoundPlay) -> BTreeMap<String, String> {
    let until = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut last = folder(dir);
    let mut since = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = folder(dir);
        if now != last {
            last = now;
            since = tokio::time::Instant::now();
            continue;
        }
        let filed = super::judge::results_by_board(last.get("games.pgn").map_or("", String::as_str));
        let shown = r
            .results
            .iter()
            .enumerate()
            .all(|(i, want)| filed.get(&(i + 1).to_string()) == Some(want));
        if (shown && since.elapsed() >= Duration::from_secs(1)) || tokio::time::Instant::now() >= until {
            return last;
        }
    }
}

/// Each board's recording as round 1 left it (while the daemon is down
/// between the rounds), kept beside it, and the time of its last record (µs).
fn keep_round_one(d: &Path, boards: usize) -> Vec<(PathBuf, u64)> {
    (0..boards)
        .map(|i| {
            let text =
                std::fs::read_to_string(d.join(format!("state/recordings/line{i}.esl"))).unwrap_or_default();
            // A line torn by a SIGKILL is cut by the next start.
            let whole = &text[..text.rfind('\n').map_or(0, |k| k + 1)];
            let kept = d.join(format!("round-1-line{i}.esl"));
            std::fs::write(&kept, whole).unwrap();
            let last = eboard_bridge::log::read_log(&kept)
                .ok()
                .and_then(|log| log.records.last().map(|r| r.time.micros()))
                .unwrap_or(0);
            (kept, last)
        })
        .collect()
}

/// Plays `plan` and judges every board.
pub async fn play(plan: &Plan) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let address = private_bus(d).await;
    let listener = Listener::start(&address).await;
    let players1: Vec<_> = (0..plan.boards).map(round_one_players).collect();
    let games: Vec<BoardGame> = players1
        .into_iter()
        .enumerate()
        .map(|(b, (w, k))| board_game(plan, b, None, w, k))
        .collect();
    let mut one = RoundPlay::new(1, games);
    std::fs::write(d.join("pairings.csv"), pairings(&one.games, &one.swapped)).unwrap();
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
    let logs = one.games.iter().map(|g| g.log.clone()).collect();
    let (emulators, relays, devices) =
        relay::relayed_boards(logs, SPEED, FIRST_SERIAL, d, |_| LineFaults::CLEAN);
    let mut hall = Hall {
        dir: d.to_path_buf(),
        address: address.clone(),
        listener,
        cfg,
        by_serial,
        console,
        mqtt,
        daemon: None,
        devices,
        emulators,
        relays,
        playing_since: tokio::time::Instant::now(),
        failures: Vec::new(),
    };
    hall.start().await;
    one.started = tokio::time::Instant::now();
    for (at, action) in &plan.actions {
        tokio::time::sleep_until(one.started + Duration::from_millis(*at)).await;
        hall.act(&mut one, plan.seed, action).await;
    }
    hall.decide(&mut one, plan.seed).await;
    // Between the rounds (or after the only one): a restart, SIGKILL or
    // SIGTERM by the seed; round 2 started by `ctl round` before it or after
    // it, by the seed; then everything round 1 decided is still there.
    let mut two = (plan.plies2 > 0).then(|| {
        let games = (0..plan.boards)
            .map(|b| {
                let (w, k) = round_two_players(&one.games, b);
                board_game(plan, b, Some(&one.games[b]), w, k)
            })
            .collect();
        RoundPlay::new(2, games)
    });
    let round_before_restart = plan.seed % 2 == 0;
    let kill = two.is_none() || (plan.seed / 2) % 2 == 0;
    if let Some(two) = &two {
        std::fs::write(d.join(two.pairings_file()), pairings(&two.games, &two.swapped)).unwrap();
        if round_before_restart {
            hall.next_round(two).await;
        }
    }
    hall.stop(kill).await;
    let split_ms = hall.now();
    let mut kept = Vec::new();
    if let Some(two) = &two {
        println!(
            "between the rounds: {}, ctl round 2 {} the restart",
            if kill { "SIGKILL" } else { "SIGTERM" },
            if round_before_restart { "before" } else { "after" }
        );
        kept = keep_round_one(d, plan.boards);
        hall.boards_play(two.games.iter().map(|g| g.log.clone()).collect());
    }
    hall.start().await;
    if let Some(two) = &mut two {
        two.started = tokio::time::Instant::now();
        if !round_before_restart {
            hall.next_round(two).await;
        }
    }
    hall.read_back(&mut one).await;
    let round_one = settled(&d.join("live/round-1"), &one).await;
    if let Some(two) = &mut two {
        // Round 2's play, from its boards set up again.
        let from =
            two.started + Duration::from_secs_f64(super::boards::SET_UP_AFTER_MS as f64 / 1000.0 / SPEED);
        for (at, action) in &plan.actions2 {
            tokio::time::sleep_until(from + Duration::from_millis(*at)).await;
            hall.act(two, plan.seed, action).await;
        }
        hall.decide(two, plan.seed).await;
        hall.stop(true).await;
        hall.start().await;
        hall.read_back(two).await;
        // Round 1 as it was when round 2 began.
        let table =
            crate::common::process::ctl(&address, &["results", "--round", "1", "--format", "csv"]).await;
        let table = (table.code == 0).then_some(table.out).ok_or(table.err);
        for f in super::judge::round_kept(1, &round_one, &folder(&d.join("live/round-1")), &one.bus, &table) {
            hall.failures.push(f);
        }
    }
    if let Some(running) = hall.daemon.take() {
        running.stop().within(40, "the daemon to stop").await;
    }
    for e in hall.emulators.drain(..) {
        e.abort();
    }
    hall.relays.clear();
    let Hall {
        listener,
        failures: round_failures,
        ..
    } = hall;
    let heard = listener.stop();
    let rounds: Vec<&RoundPlay> = std::iter::once(&one).chain(two.as_ref()).collect();
    let mut outcome = Outcome {
        failures: Vec::new(),
        games: 0,
        plies: 0,
        decisions: 0,
    };
    // Every decision of the event, for the journal's count.
    let mut all_decisions: Vec<BTreeMap<String, usize>> = vec![BTreeMap::new(); plan.boards];
    for r in &rounds {
        for (b, m) in r.decisions.iter().enumerate() {
            for (k, n) in m {
                *all_decisions[b].entry(k.clone()).or_default() += n;
            }
        }
    }
    for r in &rounds {
        // Round r's part of the live timeline, and of each recording.
        let part = |of: Vec<(u64, Heard)>| -> Vec<(u64, Heard)> {
            of.into_iter()
                .filter(|(t, _)| (r.number == 1) == (*t < split_ms) || two.is_none())
                .collect()
        };
        let recordings: Vec<(PathBuf, u64)> = (0..plan.boards)
            .map(|i| match (r.number, kept.get(i)) {
                (1, Some((path, _))) => (path.clone(), 0),
                (_, Some((_, last))) => (d.join(format!("state/recordings/line{i}.esl")), *last),
                _ => (d.join(format!("state/recordings/line{i}.esl")), 0),
            })
            .collect();
        let decisions = if r.number == 1 && two.is_some() {
            &r.decisions
        } else {
            &all_decisions
        };
        let judged = judge_all(plan, d, r, decisions, &recordings, |i| {
            let of = part(heard.of(i));
            let first = of
                .iter()
                .find(|(_, h)| matches!(h, Heard::Signal(m, 1) if m == "MoveMade"))
                .map(|(t, _)| *t);
            let ended = of
                .iter()
                .find(|(_, h)| matches!(h, Heard::Signal(m, _) if m == "GameEnded"))
                .map(|(t, _)| *t);
            colours_of(&r.games[i], &r.colours[i], first, ended)
        });
        outcome.failures.extend(judged.failures);
        outcome.games += judged.games;
        outcome.plies += judged.plies;
        outcome.decisions += judged.decisions;
        // The clock tags say the clocks as they stood at the game's end
        // (issue 57: `WhiteClock "0:19:04"` beside a flag at 0:00:00).
        for (i, g) in r.games.iter().enumerate() {
            let of = part(heard.of(i));
            let Some((w, b)) = live::clocks_at_end(&of) else {
                continue;
            };
            println!(
                "round {} board {}: clock tags judged against the clocks at the game's end ({w} ms, {b} ms)",
                r.number,
                i + 1
            );
            let file = d.join(format!("live/round-{}/game-{}.pgn", r.number, i + 1));
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
            // An end found across a gap (its last ply inferred): D-Bus heard
            // the clocks only once the line was back, and the press that
            // completed the last move may have started the other side's
            // clock meanwhile (seed 537: Black's clock ran 2 s after 4. Qxf7#
            // during a cut); the tags keep the end's, which may be above.
            let end_inferred = super::common::played::inferred_marks(&pgn).last() == Some(&true);
            // Likewise an end while the line was cut (an arbiter's result):
            // the tags keep the last report before the cut (seed 936).
            let upper = if end_inferred || live::cut_at_end(&of) {
                10_000
            } else {
                1500
            };
            for (name, heard_ms, moved) in [
                ("WhiteClock", w, white_moved == Some(true)),
                ("BlackClock", b, white_moved == Some(false)),
            ] {
                let tag = super::judge::tag(&pgn, name);
                let lower = if moved { 6000 } else { 1500 };
                match tag.as_deref().and_then(live::tag_ms) {
                    Some(ms) if ms <= heard_ms + upper && ms >= heard_ms - lower => {}
                    _ => outcome.failures.push(format!(
                        "seed {} ({}): round {} board {}: {name} {tag:?} at the game's end, the clock showed {} ms",
                        plan.seed,
                        g.name,
                        r.number,
                        i + 1,
                        heard_ms
                    )),
                }
            }
        }
    }
    for f in round_failures {
        outcome.failures.push(format!("seed {}: {f}", plan.seed));
    }
    // What was published live, board by board, across the rounds and the
    // restart between them.
    for i in 0..plan.boards {
        let of = heard.of(i);
        let mut holds: Vec<(u64, u64)> = Vec::new();
        for r in &rounds {
            let g = &r.games[i];
            let part: Vec<(u64, Heard)> = of
                .iter()
                .filter(|(t, _)| (r.number == 1) == (*t < split_ms) || two.is_none())
                .cloned()
                .collect();
            if let Some(offset) = hands_offset(g, &part) {
                let real = |us: u64| (offset + (us as f64 / 1000.0 / SPEED) as i64).max(0) as u64;
                holds.extend(g.holds.iter().map(|(a, z)| (real(*a), real(*z))));
            }
        }
        println!("board {}:", i + 1);
        let (kinds, most) = replay_alarms(&d.join(format!("state/recordings/line{i}.esl")));
        let name = rounds
            .iter()
            .map(|r| r.games[i].name.as_str())
            .collect::<Vec<_>>()
            .join(", then ");
        for f in live::judge_alarms(&of, &kinds, most) {
            outcome
                .failures
                .push(format!("seed {} ({name}): board {} live: {f}", plan.seed, i + 1));
        }
        for f in live::judge_flags(&of) {
            outcome
                .failures
                .push(format!("seed {} ({name}): board {} live: {f}", plan.seed, i + 1));
        }
        for f in live::judge(&of, &holds) {
            outcome
                .failures
                .push(format!("seed {} ({name}): board {} live: {f}", plan.seed, i + 1));
        }
    }
    // A failing board's journal kept as a sensor-log scenario, with the
    // command that plays it again.
    let kept_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/event-failures");
    for i in 0..plan.boards {
        let n = i + 1;
        let failed = outcome
            .failures
            .iter()
            .any(|f| f.contains(&format!("board {n}:")) || f.contains(&format!("board {n} live")));
        if !failed {
            continue;
        }
        let _ = std::fs::create_dir_all(&kept_dir);
        let keep = kept_dir.join(format!("seed-{}-board-{n}.esl", plan.seed));
        match std::fs::copy(d.join(format!("state/recordings/line{i}.esl")), &keep) {
            Ok(_) => outcome.failures.push(format!(
                "seed {}: board {n}'s journal kept as a sensor log: {}; replay it with `cargo run -- replay --format jsonl {}`",
                plan.seed,
                keep.display(),
                keep.display()
            )),
            Err(e) => println!("board {n}'s journal not kept: {e}"),
        }
    }
    if std::env::var_os("EVENT_KEEP").is_some() {
        println!("round folder kept: {}", dir.keep().display());
    }
    outcome
}

/// Judges round `r`'s boards: board `i`'s recording is `recordings[i]`, of
/// which the records after the µs given are the round's.
fn judge_all(
    plan: &Plan,
    d: &Path,
    r: &RoundPlay,
    decisions: &[BTreeMap<String, usize>],
    recordings: &[(PathBuf, u64)],
    colours: impl Fn(usize) -> Option<(String, String)>,
) -> Outcome {
    let mut failures = Vec::new();
    let round = d.join(format!("live/round-{}", r.number));
    for (i, (g, bus)) in r.games.iter().zip(&r.bus).enumerate() {
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
        let (recording, after) = &recordings[i];
        let text = std::fs::read_to_string(recording).unwrap_or_default();
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
                .arg(recording)
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        // The round's events: those after the records of the round before.
        let events: String = replay("jsonl")
            .lines()
            .filter(|l| {
                serde_json::from_str::<serde_json::Value>(l)
                    .ok()
                    .and_then(|e| e["t"].as_f64())
                    .is_some_and(|t| t * 1e6 > *after as f64)
            })
            .map(|l| format!("{l}\n"))
            .collect();
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
        let touches = eboard_bridge::log::read_log(recording)
            .map(|log| seen_across_restarts(g, &log, *after))
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
            result: r.results[i].clone(),
            players,
            decisions: decisions[i].clone(),
            colours: colours(i),
            touched: g.touched.clone(),
        };
        if truth.colours.is_none() {
            println!(
                "round {} board {n}: who plays which colour not judged (a change near the first move)",
                r.number
            );
        }
        let seen = Seen {
            files,
            touches,
            journaled,
            bus: bus.clone(),
            replayed: replay("pgn"),
            alarms,
            record,
            lost_track: events.contains("\"kind\":\"lost_track\""),
            touch_moves: super::judge::touch_move_events(&events),
        };
        for f in judge(&truth, &seen) {
            failures.push(format!(
                "seed {} ({}): round {}: {f}",
                plan.seed, g.name, r.number
            ));
        }
    }
    Outcome {
        failures,
        games: r.games.len(),
        plies: r.games.iter().map(|g| g.moves.len()).sum(),
        decisions: r.decisions.iter().flat_map(|m| m.values()).sum(),
    }
}
