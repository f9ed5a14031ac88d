//! Helpers of the integration tests: where the test data is, how to read the
//! published move lists, and which system tools a test may skip without.
#![allow(dead_code)]

pub mod browser;
pub mod emulated;
pub mod hall;
mod pgn;
pub mod played;
mod poll;
pub mod process;
pub mod replayed;
mod waits;
pub mod web;
#[allow(unused_imports)]
pub use pgn::{PgnGame, mated_game, pgn_games, pgn_moves, pgn_sections};
#[allow(unused_imports)]
pub use poll::polled;
#[allow(unused_imports)]
pub use waits::wait_until;

use std::path::PathBuf;

/// A file of the test data in `tests/data/` (real captures and games; see the
/// README there).
pub fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
        .join(rel)
}

/// A fixture of this crate.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
        .join(rel)
}

/// The first game of the PGN file `rel` (in `tests/data`) that starts from the
/// standard position and has at least `plies` plies.
pub fn game_of_at_least(rel: &str, plies: usize) -> PgnGame {
    pgn_games(rel)
        .into_iter()
        .find(|g| g.moves.len() >= plies && g.start == shakmaty::Chess::default())
        .unwrap_or_else(|| panic!("no game of {plies} plies from the start in {rel}"))
}

/// Writes `text` to `dir/name` (a fixture of the test) and returns its path.
pub fn write_file(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

/// The files in `dir` whose extension is `ext`, sorted.
pub fn files_with_extension(dir: &std::path::Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    files.sort();
    files
}

/// How many plies a PGN file holds (0 while it does not exist).
pub fn plies_in(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .ok()
        .map(|t| pgn_moves(&t).concat().len())
        .unwrap_or(0)
}

/// The first line of `text` that contains `needle`; the test fails, showing
/// `text`, when none does.
pub fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line contains {needle:?}: {text}"))
}

/// The first lines of a sensor log of a board standing in the start position
/// (more records may follow).
pub const AT_THE_START: &str = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n";

/// The UCI moves of a `captures/N.uci` file (`1. e2e4 e7e5` per line).
pub fn uci_moves(rel: &str) -> Vec<String> {
    let text = std::fs::read_to_string(data(rel)).expect("read uci file");
    text.split_whitespace()
        .filter(|w| !w.ends_with('.') && !matches!(*w, "*" | "1-0" | "0-1" | "1/2-1/2"))
        .map(str::to_string)
        .collect()
}

/// The position after playing `moves` from the standard start.
pub fn play_uci(moves: &[String]) -> shakmaty::Chess {
    use shakmaty::{Chess, Position, uci::UciMove};
    let mut pos = Chess::default();
    for m in moves {
        let uci: UciMove = m.parse().expect("uci syntax");
        let mv = uci.to_move(&pos).unwrap_or_else(|e| panic!("{m}: {e}"));
        pos.play_unchecked(mv);
    }
    pos
}

/// The PGN files of standard chess games in `tests/data/games` (the Chess960 file aside).
pub const STANDARD_GAME_FILES: [&str; 6] = [
    "games/immortal-games.pgn",
    "games/kasparov-deep-blue-1997.pgn",
    "games/anastasian-lewis.pgn",
    "games/molinari-bordais-1979.pgn",
    "games/nepomniachtchi-liren-game1.pgn",
    "games/stockfish-learning.pgn",
];

/// The library's seeded generator, so that generated tests are repeatable.
#[allow(unused_imports)]
pub use eboard_bridge::sim::Seeded as Rng;

/// A private D-Bus broker (busd) in this process, listening in `dir`; its address.
pub async fn private_bus(dir: &std::path::Path) -> String {
    let address = format!("unix:path={}", dir.join("bus.sock").display());
    let mut bus = busd::bus::Bus::for_address(Some(&address))
        .within(10, "the private bus (busd) to listen")
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = bus.run().await;
    });
    address
}

/// A client of the bus at `address` (see `bus_client`) and the stream of the
/// signals of `interface` (only `member`, when given), listening from now on.
pub async fn listen(
    address: &str,
    interface: &str,
    member: Option<&str>,
) -> (zbus::Connection, zbus::MessageStream) {
    let client = bus_client(address).await;
    let mut rule = zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .interface(interface.to_string())
        .unwrap();
    if let Some(m) = member {
        rule = rule.member(m.to_string()).unwrap();
    }
    let stream = zbus::MessageStream::for_match_rule(rule.build(), &client, None)
        .within(10, &format!("the bus to take a match rule for {interface}"))
        .await
        .unwrap();
    (client, stream)
}

/// What a `PropertiesChanged` signal's body says changed, by name (`None`
/// when the body is no such signal's).
pub fn changed_properties(
    body: &zbus::message::Body,
) -> Option<std::collections::HashMap<String, zbus::zvariant::OwnedValue>> {
    body.deserialize::<(
        String,
        std::collections::HashMap<String, zbus::zvariant::OwnedValue>,
        Vec<String>,
    )>()
    .ok()
    .map(|(_, changed, _)| changed)
}

/// A list of texts among the properties changed (`Moves`), when it is there.
pub fn changed_texts(
    changed: &std::collections::HashMap<String, zbus::zvariant::OwnedValue>,
    name: &str,
) -> Option<Vec<String>> {
    changed
        .get(name)
        .and_then(|v| v.try_clone().ok())
        .and_then(|v| Vec::<String>::try_from(v).ok())
}

/// The sensor log of `moves` from `start` played by `hands` (already set up: the
/// board, the clock), ending with `rest_ms` of the board standing.
pub fn played_log(
    mut hands: eboard_bridge::sim::Hands,
    start: &shakmaty::Chess,
    moves: &[shakmaty::Move],
    rest_ms: u64,
) -> eboard_bridge::log::SensorLog {
    use shakmaty::Position;
    let mut pos = start.clone();
    for mv in moves {
        hands.play(&pos, mv);
        pos.play_unchecked(*mv);
    }
    hands.wait(rest_ms);
    hands.flush();
    eboard_bridge::log::SensorLog {
        header: eboard_bridge::log::Header::default(),
        records: hands.records,
        lines: Vec::new(),
    }
}

/// The game files (`game-*.pgn`) in a round's folder, sorted (none when it does
/// not exist).
pub fn pgn_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("game-"))
        })
        .collect();
    files.sort();
    files
}

/// `plies` legal moves picked by a seeded generator (the longest real game in
/// `tests/data/games` has 154 plies; these need 160), from a seed whose game lasts.
pub fn random_game(plies: usize, mut seed: u64) -> Vec<shakmaty::Move> {
    use shakmaty::Position;
    loop {
        let mut pos = shakmaty::Chess::default();
        let mut moves = Vec::new();
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        while moves.len() < plies {
            let legal = pos.legal_moves();
            if legal.is_empty() || pos.is_insufficient_material() {
                break;
            }
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = legal[((x >> 33) as usize) % legal.len()];
            pos.play_unchecked(m);
            moves.push(m);
        }
        if moves.len() == plies {
            return moves;
        }
        seed += 1;
    }
}

/// Steady hands: they think and step within these ranges (ms), and never touch a
/// piece twice nor slide one.
pub fn steady_hands(think_ms: (u64, u64), step_ms: (u64, u64)) -> eboard_bridge::sim::Style {
    eboard_bridge::sim::Style {
        think_ms,
        step_ms,
        retouch: 0,
        slide: 0,
        ..eboard_bridge::sim::Style::default()
    }
}

/// Quick hands: a game is played in a few seconds of log time.
pub fn quick() -> eboard_bridge::sim::Style {
    eboard_bridge::sim::Style {
        think_ms: (150, 300),
        step_ms: (60, 120),
        retouch: 0,
        ..eboard_bridge::sim::Style::default()
    }
}

/// The SAN (with check and mate signs) of `moves` from `start`.
pub fn sans(start: &shakmaty::Chess, moves: &[shakmaty::Move]) -> Vec<String> {
    let mut pos = start.clone();
    moves
        .iter()
        .map(|m| shakmaty::san::SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string())
        .collect()
}

/// Waits until `check` holds, polling every 50 ms; fails the test after `secs`.
pub async fn wait_for(what: &str, secs: u64, mut check: impl FnMut() -> bool) {
    let until = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !check() {
        assert!(
            tokio::time::Instant::now() < until,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------------------
// Bounded waits: no test may hang. Every wait on something outside the test's
// own code (a bus, a child process, a socket, a pty) goes through one of these
// and fails the test, naming what it waited for, when it takes too long.

/// `.within(secs, what)` on any future: its output, or the test fails after `secs`
/// seconds with "timed out after N s waiting for WHAT".
pub trait Within: std::future::IntoFuture + Sized {
    fn within(self, secs: u64, what: &str) -> impl std::future::Future<Output = Self::Output> {
        let what = what.to_string();
        async move {
            match tokio::time::timeout(std::time::Duration::from_secs(secs), self).await {
                Ok(out) => out,
                Err(_) => panic!("timed out after {secs} s waiting for {what}"),
            }
        }
    }
}

impl<F: std::future::IntoFuture> Within for F {}

/// How long a D-Bus method call of a test (a property read included) may take
/// before it fails with a timeout error.
pub const CALL_SECS: u64 = 10;

/// A client of the bus at `address`, connected within 10 s; every method call on it
/// fails with a timeout error after `CALL_SECS` (zbus has no default timeout).
pub async fn bus_client(address: &str) -> zbus::Connection {
    zbus::connection::Builder::address(address)
        .unwrap_or_else(|e| panic!("bus address {address}: {e}"))
        .method_timeout(std::time::Duration::from_secs(CALL_SECS))
        .build()
        .within(10, &format!("a connection to the bus at {address}"))
        .await
        .unwrap_or_else(|e| panic!("cannot connect to the bus at {address}: {e}"))
}

/// A proxy on `client` of the board object at `path` (`BOARD_INTERFACE` of the
/// daemon's name), made within 10 s.
pub async fn board_proxy(client: &zbus::Connection, path: &str) -> zbus::Proxy<'static> {
    use eboard_bridge::bus::{BOARD_INTERFACE, BUS_NAME};
    zbus::Proxy::new(client, BUS_NAME, path.to_string(), BOARD_INTERFACE)
        .within(10, &format!("a proxy of {path}"))
        .await
        .unwrap_or_else(|e| panic!("a proxy of {path}: {e}"))
}

/// A proxy on `client` of the daemon's object `path` with `interface`, which reads
/// its properties afresh (a caching proxy waits on the signals of a daemon that
/// may have been replaced); made within 10 s.
pub async fn uncached_proxy(client: &zbus::Connection, path: &str, interface: &str) -> zbus::Proxy<'static> {
    zbus::proxy::Builder::new(client)
        .destination(eboard_bridge::bus::BUS_NAME)
        .unwrap()
        .path(path.to_string())
        .unwrap()
        .interface(interface.to_string())
        .unwrap()
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .within(10, &format!("a proxy of {interface} at {path}"))
        .await
        .unwrap_or_else(|e| panic!("a proxy of {interface} at {path}: {e}"))
}

/// Waits for a child process to end, at most `secs`, without blocking the test's
/// runtime (an in-process broker may have to serve the child on its way out); if it
/// has not ended, kills it and fails naming `what`.
pub async fn wait_exit(child: &mut std::process::Child, secs: u64, what: &str) -> std::process::ExitStatus {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(status) = exited_by(child, until, secs, what) {
            return status;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// One look at `child` for the two above: its status if it has ended; past
/// `until`, it is killed and the test fails.
fn exited_by(
    child: &mut std::process::Child,
    until: std::time::Instant,
    secs: u64,
    what: &str,
) -> Option<std::process::ExitStatus> {
    if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{what}: {e}")) {
        return Some(status);
    }
    if std::time::Instant::now() >= until {
        let _ = child.kill();
        let _ = child.wait();
        panic!("timed out after {secs} s waiting for {what} to exit (killed)");
    }
    None
}

/// The same for tests without a runtime.
pub fn wait_exit_blocking(
    child: &mut std::process::Child,
    secs: u64,
    what: &str,
) -> std::process::ExitStatus {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(status) = exited_by(child, until, secs, what) {
            return status;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Sends `signal` (`libc::SIGTERM`, ...) to process `pid` (no `kill` tool needed).
pub fn send_signal(pid: u32, signal: i32) {
    let pid = i32::try_from(pid).expect("a process id");
    // SAFETY: kill(2) takes plain integers and touches no memory of this process.
    let r = unsafe { libc::kill(pid, signal) };
    assert_eq!(r, 0, "kill({pid}, {signal}): {}", std::io::Error::last_os_error());
}

/// Runs `cmd` to its end, at most `secs`, and returns its output (stdout and
/// stderr read by threads of their own, so a full pipe never stops it). When it
/// runs longer it is killed and the test fails naming `what` and what it said.
pub fn output_within(cmd: &mut std::process::Command, secs: u64, what: &str) -> std::process::Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out = reader(Box::new(child.stdout.take().unwrap()));
    let err = reader(Box::new(child.stderr.take().unwrap()));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{what}: {e}")) {
            break status;
        }
        if std::time::Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            let said = err.join().unwrap_or_default();
            panic!(
                "timed out after {secs} s waiting for {what} (killed); its stderr: {}",
                String::from_utf8_lossy(&said)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    // The pipes close when the process ends (a grandchild that keeps them open is
    // not waited for beyond a few seconds).
    let join = |h: std::thread::JoinHandle<Vec<u8>>, stream: &str| {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !h.is_finished() {
            assert!(
                std::time::Instant::now() < until,
                "{what}: its {stream} stayed open after it exited"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        h.join().unwrap_or_default()
    };
    std::process::Output {
        status,
        stdout: join(out, "stdout"),
        stderr: join(err, "stderr"),
    }
}

// ---------------------------------------------------------------------------
// System tools and root. `cargo test` passes on a machine without them: a test
// that needs one says in one line what it skips and how to install it, and
// returns. With `CI=true` (as `.ci/run` sets) a missing tool fails the test
// instead, so CI runs everything.

/// What a test needs from the machine.
#[derive(Clone, Copy)]
pub enum Need<'a> {
    /// A program (looked for on PATH and in the sbin folders) and the Debian
    /// package that installs it.
    Tool(&'a str, &'a str),
    /// Any of these programs, and the package that installs the first.
    AnyTool(&'a [&'a str], &'a str),
    /// Root (user and group changes, callers run as other users).
    Root,
}

/// The path of program `name`: on PATH, or in the sbin folders a user's PATH may
/// lack (Debian puts `mosquitto` and `useradd` there).
pub fn find_tool(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// Whether the machine has everything in `needs`. When it lacks something, prints
/// one line, `skipped TEST: WHAT (HOW)`, on the terminal (not captured by the test
/// harness) and returns false; under `CI=true` the test fails instead.
pub fn need(needs: &[Need]) -> bool {
    let mut missing = Vec::new();
    let mut packages = Vec::new();
    let mut root = false;
    for n in needs {
        match n {
            Need::Tool(name, package) => {
                if find_tool(name).is_none() {
                    missing.push(name.to_string());
                    packages.push(*package);
                }
            }
            Need::AnyTool(names, package) => {
                if names.iter().all(|n| find_tool(n).is_none()) {
                    missing.push(names.join(" or "));
                    packages.push(*package);
                }
            }
            Need::Root => root = !is_root(),
        }
    }
    if missing.is_empty() && !root {
        return true;
    }
    let mut why = Vec::new();
    if root {
        why.push("needs root (`sudo bash .ci/run` runs every test)".to_string());
    }
    if !missing.is_empty() {
        packages.dedup();
        why.push(format!(
            "{} not found (apt-get install {})",
            missing.join(", "),
            packages.join(" ")
        ));
    }
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("a test")
        .rsplit("::")
        .next()
        .unwrap_or_default()
        .to_string();
    let line = format!("skipped {test}: {}", why.join("; "));
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true, so nothing is skipped: {line}");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
    false
}
