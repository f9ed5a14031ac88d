//! End-to-end latency of a move: `cargo bench --bench latency`.
//!
//! An emulated board on a real pty, driven by this harness, plays random legal
//! games (fixed seed) with quick hands until `EB_LATENCY_MOVES` moves (default
//! 1,000) are made. The daemon bridges it with `release_ms = 0` (a move is made on
//! its placement) and publishes on a private D-Bus broker: a real `dbus-daemon`
//! (the broker of the system bus the daemon runs on), or the in-process `busd`
//! the tests use with `EB_LATENCY_BROKER=busd` (or when `dbus-daemon` is not
//! installed); a D-Bus client
//! on a thread and runtime of its own notes when each `MoveMade` arrives. The
//! latency of a move is that arrival minus the instant the emulator wrote the
//! bytes of the placement that made it. The daemon runs with its defaults
//! otherwise (its journal, the broadcast folder); no network server. The
//! machine should be otherwise idle.
//!
//! The daemon is the release binary as it ships (its own process, runtime and
//! allocator; its log, at `info`, to a pipe this harness empties), run as
//! `eboard-bridge run --bus session` with the private bus as its session bus.
//! `EB_LATENCY_DAEMON=in-process` runs it in this process instead, on the
//! harness's runtime (as the tests do).
//!
//! `EB_LATENCY_BIN=PATH` runs that build of the binary instead (another commit's,
//! to compare two builds run alternately in the same hour).
//!
//! `EB_LATENCY_HANDS=human` plays a move's steps at the emulator's own pace
//! (120-500 ms apart) instead of 20-40 ms.
//!
//! `EB_LATENCY_ATTACK=1` also serves the HTTP surface (the daemon binary with
//! `[http] listen` on a free loopback port, every limit at its default) and
//! attacks it throughout from a process of its own (this binary again, in the
//! idle scheduling class), wave after wave, with every attack of
//! `tests/abuse.rs` (floods, unfinished messages, slow and silent connections,
//! feed floods, huge ids, SSE clients that never read): the latency of a move
//! while the spectators' side is under abuse. Run it alternately with a plain run
//! to compare (`docs/RELIABILITY.md`, "The network under abuse").
//!
//! `EB_LATENCY_TIMES=PATH` writes each move's instants (`CLOCK_MONOTONIC`) and
//! latency to PATH, to lay slow moves beside `perf sched record -k
//! CLOCK_MONOTONIC` (`docs/RELIABILITY.md`, "A move's latency under attack").
//!
//! `EB_LATENCY_HOP=1` first times the broker's hop alone: as many signals shaped
//! like `MoveMade`, sent 20 ms apart from a zbus connection to the same listener,
//! the floor under any daemon's figure on this machine.

#[path = "../tests/attacks/mod.rs"]
mod attacks;
mod support;

use std::time::Duration;

use eboard_bridge::board::Orientation;
use eboard_bridge::daemon::{BusChoice, Daemon};
use eboard_bridge::log::{Header, SensorLog};
use eboard_bridge::sim::{Hands, Seeded, Style};
use shakmaty::{Chess, Position};
use tokio::time::Instant;

/// Random legal games of at most 80 plies, one after another on the same board
/// (pieces set up again between games), until `moves` moves are played.
fn games_log(moves: usize) -> SensorLog {
    // Quick hands by default: a move's steps 20-40 ms apart, under the flicker
    // threshold, so a move's touch is known only at its placement and its
    // `PieceTouched` goes out just before its `MoveMade`. `EB_LATENCY_HANDS=human`
    // takes the emulator's own pace for a move's steps (120-500 ms).
    let human = std::env::var("EB_LATENCY_HANDS").is_ok_and(|h| h == "human");
    let style = Style {
        think_ms: (40, 80),
        step_ms: if human { Style::default().step_ms } else { (20, 40) },
        settle_ms: 50,
        retouch: 0,
        clock: false,
        ..Style::default()
    };
    let mut hands = Hands::new(2026, style, Orientation::Normal);
    let mut pick = Seeded::new(13);
    let mut played = 0;
    while played < moves {
        let mut pos = Chess::default();
        hands.board(pos.board());
        hands.wait(500);
        played += hands
            .random_game(&mut pos, &mut pick, 80.min(moves - played))
            .len();
        hands.wait(500);
    }
    SensorLog {
        header: Header::default(),
        records: hands.records,
        lines: Vec::new(),
    }
}

/// The broker's hop alone: `moves` signals shaped like `MoveMade`, sent 20 ms
/// apart by a zbus connection on this runtime, timed from their send to their
/// arrival at the same listener.
async fn hop(address: &str, moves: usize) -> Vec<f64> {
    let arrivals = support::listen(address);
    let conn = zbus::connection::Builder::address(address)
        .expect("an address")
        .build()
        .await
        .expect("the bus");
    let fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
    let mut sent = Vec::new();
    for i in 0..moves {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let uci = format!("m{i}");
        let at = Instant::now();
        conn.emit_signal(
            None::<()>,
            "/org/eboardbridge/Board/hop",
            "org.eboardbridge.Board1",
            "MoveMade",
            &(i as u32, "e4", uci.as_str(), fen),
        )
        .await
        .expect("sent");
        sent.push((at, uci));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let arrivals = arrivals.lock().expect("a lock").clone();
    assert_eq!(arrivals.len(), moves, "every signal arrived");
    sent.iter()
        .zip(&arrivals)
        .map(|((s, a), (at, b))| {
            assert_eq!(a, b);
            at.saturating_duration_since(*s).as_secs_f64() * 1e3
        })
        .collect()
}

/// The daemon under measure.
enum Running {
    InProcess(Daemon),
    Binary(std::process::Child),
}

/// The release binary bridging the board at `link`, publishing on the bus at
/// `address` (as its session bus), its folders in `dir`, `release_ms = 0`. Its log
/// is read and dropped by a thread of this harness, as the journal would take it.
fn binary(
    dir: &std::path::Path,
    link: &std::path::Path,
    address: &str,
    http: Option<std::net::SocketAddr>,
) -> std::process::Child {
    let cfg = dir.join("config.toml");
    let mut config = format!(
        "output = \"{}\"\nstate = \"{}\"\n[rules]\nrelease_ms = {}\n",
        dir.join("live").display(),
        dir.join("state").display(),
        support::rules().release_ms
    );
    if let Some(addr) = http {
        config.push_str(&format!("[http]\nlisten = \"{addr}\"\n"));
    }
    std::fs::write(&cfg, config).expect("the configuration written");
    // Another build of the daemon (an older commit's, to compare with in the same
    // hour) when `EB_LATENCY_BIN` names one.
    let bin = std::env::var_os("EB_LATENCY_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_eboard-bridge").into());
    let mut child = std::process::Command::new(bin)
        .args(["run", "--bus", "session", "--config"])
        .arg(&cfg)
        .arg("--device")
        .arg(link)
        .env("DBUS_SESSION_BUS_ADDRESS", address)
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the daemon binary starts");
    let mut log = child.stderr.take().expect("its log");
    std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
    child
}

/// `EB_LATENCY_TIMES=PATH`: each move's instants, a line each, as seconds of
/// `CLOCK_MONOTONIC` (the clock of `perf record -k CLOCK_MONOTONIC`): the
/// placement's bytes written, the `MoveMade` arrived, and the latency in ms;
/// to lay a slow move beside a trace of the scheduler.
fn write_times(path: &std::ffi::OsStr, moves: &[(Instant, Instant)]) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let now = Instant::now();
    // SAFETY: `ts` is a valid timespec the call writes.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let mono_now = ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
    let mono = |t: Instant| mono_now - now.saturating_duration_since(t).as_secs_f64();
    let mut out = String::from("# written_s arrived_s latency_ms\n");
    for &(written, at) in moves {
        let ms = at.saturating_duration_since(written).as_secs_f64() * 1e3;
        out.push_str(&format!("{:.6} {:.6} {ms:.3}\n", mono(written), mono(at)));
    }
    if let Err(e) = std::fs::write(path, out) {
        eprintln!(
            "EB_LATENCY_TIMES: cannot write {}: {e}",
            std::path::Path::new(path).display()
        );
    }
}

/// Waves of every attack on `addr`, one after another, until `done`; what they
/// came to, as a line.
async fn attack_waves(
    addr: std::net::SocketAddr,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> String {
    // The server is up once it answers.
    let up = Instant::now() + Duration::from_secs(30);
    while attacks::boards(addr).await.is_none() && Instant::now() < up {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut waves = 0;
    let mut good = (0, 0);
    let mut taken = 0;
    let mut ended = (0, 0, 0);
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        let wave = attacks::launch(addr).await;
        // A well-behaved client meanwhile, from its own address.
        for _ in 0..20 {
            good.0 += 1;
            if attacks::boards(addr).await.is_some() {
                good.1 += 1;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let outcome = wave.finish(60).await;
        taken = taken.max(outcome.taken);
        ended.0 += outcome.unfinished_closed;
        ended.1 += outcome.slow_done;
        ended.2 += outcome.feeds_closed;
        drop(outcome.sse);
        waves += 1;
    }
    format!(
        "attacks: {waves} waves of every attack of tests/abuse.rs; a flood took at most {} kB; \
         unfinished messages closed {}/{}, slow and silent connections ended {}/{}, feed floods closed {}/{}; \
         the well-behaved client served {} of {} times",
        taken / 1024,
        ended.0,
        40 * waves,
        ended.1,
        600 * waves,
        ended.2,
        100 * waves,
        good.1,
        good.0
    )
}

/// The attackers' own process (`EB_LATENCY_ATTACKER_OF=ADDR`, started by this
/// bench): waves of attacks on ADDR until its standard input closes, then what
/// they came to on its standard output.
fn attacker_process(addr: &str) {
    let Ok(addr) = addr.parse::<std::net::SocketAddr>() else {
        eprintln!("EB_LATENCY_ATTACKER_OF: not an address: {addr}");
        std::process::exit(2);
    };
    // In the idle scheduling class (`EB_LATENCY_ATTACKER_NICE=1`: at nice 19
    // instead), set before any other thread starts so that all inherit it.
    if std::env::var_os("EB_LATENCY_ATTACKER_NICE").is_some() {
        // SAFETY: changes only this process's nice value.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
    } else {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; `param` outlives the call.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    }
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let line = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the attackers' runtime")
        .block_on(attack_waves(addr, done));
    println!("{line}");
}

fn main() {
    if let Ok(addr) = std::env::var("EB_LATENCY_ATTACKER_OF") {
        return attacker_process(&addr);
    }
    let moves = std::env::var("EB_LATENCY_MOVES")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(1000);
    let log = games_log(moves);
    let making = support::making_records(&log);
    let secs = log.records.last().map_or(0.0, |r| r.time.seconds());
    eprintln!(
        "{} moves in {} games, {secs:.0} s of play at real speed",
        making.len(),
        log.records
            .iter()
            .filter(|r| matches!(r.kind, eboard_bridge::log::RecordKind::Board(_)))
            .count()
    );
    let in_process = std::env::var("EB_LATENCY_DAEMON").is_ok_and(|d| d == "in-process");
    let attack = std::env::var("EB_LATENCY_ATTACK").is_ok_and(|a| a == "1");
    assert!(
        !(attack && in_process),
        "EB_LATENCY_ATTACK=1 needs the daemon binary (its own process)"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let mut latencies = rt.block_on(async move {
        let dir = tempfile::tempdir().expect("a folder");
        let busd = std::env::var("EB_LATENCY_BROKER").is_ok_and(|b| b == "busd");
        let dbus_daemon = if busd {
            None
        } else {
            support::dbus_daemon(dir.path())
        };
        let (_broker, address) = match dbus_daemon {
            Some((b, a)) => (Some(b), a),
            None => {
                let address = format!("unix:path={}", dir.path().join("busd.sock").display());
                support::broker(&address).await;
                (None, address)
            }
        };
        let broker = if _broker.is_some() { "dbus-daemon" } else { "busd" };
        if std::env::var("EB_LATENCY_HOP").is_ok() {
            let mut l = hop(&address, making.len()).await;
            let what = "signals, zbus send -> zbus arrival (the broker's hop alone)";
            println!("{}", support::summary_of(broker, what, &mut l));
        }
        let arrivals = support::listen(&address);
        let link = dir.path().join("board0");
        let (emulated, trace) = support::board(&log, &link);
        let http = attack.then(|| {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            std::net::SocketAddr::from(([127, 0, 0, 1], port))
        });
        let daemon = if in_process {
            let config = support::daemon_config(dir.path());
            let d = Daemon::start(vec![link], config, BusChoice::Address(address))
                .await
                .expect("the daemon starts");
            Running::InProcess(d)
        } else {
            Running::Binary(binary(dir.path(), &link, &address, http))
        };
        // The attackers in a process of their own (this bench's binary again)
        // in the idle scheduling class (`EB_LATENCY_ATTACKER_NICE=1`: at nice 19
        // instead): in a hall they are other machines, and here they must not
        // take the cores from the emulated board, or share a process (its
        // memory map, its allocator) with the harness timing the moves. What is
        // measured is the daemon's own work for them, and the kernel's for their
        // sockets. A thread at nice 19 still keeps a core for the rest of its
        // slice when a board's thread wakes; one in the idle class is preempted
        // at once.
        let waves = http.map(|addr| {
            std::process::Command::new(std::env::current_exe().expect("this bench's binary"))
                .env("EB_LATENCY_ATTACKER_OF", addr.to_string())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("the attackers' process starts")
        });
        let until = Instant::now() + Duration::from_secs_f64(secs + 60.0);
        while arrivals.lock().expect("a lock").len() < making.len() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if let Some(mut child) = waves {
            // Its standard input closed: the last wave ends.
            drop(child.stdin.take());
            let until = Instant::now() + Duration::from_secs(90);
            while !matches!(child.try_wait(), Ok(Some(_))) && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let ended = matches!(child.try_wait(), Ok(Some(_)));
            if !ended {
                let _ = child.kill();
                let _ = child.wait();
            }
            assert!(ended, "the last wave of attacks ends within 90 s");
            let mut line = String::new();
            if let Some(mut out) = child.stdout.take() {
                use std::io::Read;
                let _ = out.read_to_string(&mut line);
            }
            eprintln!("{}", line.trim_end());
        }
        match daemon {
            Running::InProcess(d) => d.shutdown().await,
            Running::Binary(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        emulated.abort();
        let arrivals = arrivals.lock().expect("a lock").clone();
        let trace = trace.lock().expect("a lock").clone();
        if let Some(path) = std::env::var_os("EB_LATENCY_TIMES") {
            write_times(&path, &support::instants(&making, &trace, &arrivals));
        }
        (broker, support::latencies(&making, &trace, &arrivals))
    });
    let daemon = if in_process {
        "daemon in process"
    } else {
        "daemon binary"
    };
    let machine = if attack {
        "its HTTP surface under attack from this harness"
    } else {
        "idle machine"
    };
    let name = format!("release_ms = 0, {} broker, {daemon}, {machine}", latencies.0);
    println!("{}", support::summary(&name, &mut latencies.1));
}
