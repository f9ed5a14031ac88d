//! The HTTP server's thread yields the cores to the boards' threads.
//!
//! Under a flood of clients the server thread has work to do all the time. At a
//! lower nice value alone it still shares the core it runs on: the scheduler
//! (EEVDF) lets the running thread reach its fair share before a waking board
//! thread takes the core, which cost up to 2 ms of a move's latency under the
//! attacks of `tests/abuse.rs`. In the idle class (`SCHED_IDLE`, the default) a
//! waking thread mostly takes the core at once (`docs/RELIABILITY.md`, "A move's
//! latency under attack"). Lowering a thread's own priority needs no privilege;
//! Linux sets both per thread.
//!
//! Not always, though: a kernel built without preemption (`PREEMPT_NONE`, as on
//! the machine measured) lets the idle-class thread finish what it is doing in
//! the kernel, the scheduler may still count a waking thread as owing it time,
//! and it places a waking thread on the idle-class thread's core as if that
//! core were free, where it waits while the other core may stand idle. Traced
//! (`perf sched`), that held the bus broker up to 1.6 ms on a move's way out.
//! So the server thread also stands aside of its own accord: for
//! [`STAND_ASIDE`] after any board's bytes arrive ([`board_bytes_arrived`]) it
//! sleeps at its next read, write or accept ([`stand_aside`]), and the move's
//! way out (the board's thread, the bus broker, the bus clients) has the cores.
//! After standing aside it serves at least as long before it stands aside again,
//! so however busy the boards, the spectators keep half of that thread's time.

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::config::Priority;

/// How much lower than the daemon's other threads the HTTP thread runs with
/// `priority = "low"` (a nice value added to its own).
const HTTP_NICE: libc::c_int = 10;

/// How long the server thread stands aside after a board's bytes arrive: a
/// move's way from the line to the bus clients takes 0.6-0.7 ms (median) and
/// 0.98-1.21 ms at its p99 in the latency bench on the reference machine
/// (`docs/RELIABILITY.md`, "A move's latency under attack").
const STAND_ASIDE: Duration = Duration::from_micros(1500);

/// Until when (nanoseconds after [`epoch`]) the boards have the cores; 0: never.
static BOARDS_BUSY_UNTIL: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread stands aside for the boards (set on the server's thread).
    static STANDS_ASIDE: Cell<bool> = const { Cell::new(false) };
    /// Until when this thread serves without standing aside again.
    static SERVES_UNTIL: Cell<u64> = const { Cell::new(0) };
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ns() -> u64 {
    u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A board's bytes have arrived: the server thread stands aside for
/// [`STAND_ASIDE`] from now. One atomic operation; called by every board's line.
pub fn board_bytes_arrived() {
    let until = now_ns().saturating_add(STAND_ASIDE.as_nanos() as u64);
    BOARDS_BUSY_UNTIL.fetch_max(until, Ordering::Relaxed);
}

/// How long to stand aside at `now`, with the boards busy until `busy_until`
/// and the thread serving its share until `serves_until` (all nanoseconds after
/// [`epoch`]): the rest of the boards' time, at most [`STAND_ASIDE`].
fn how_long(now: u64, busy_until: u64, serves_until: u64) -> Option<Duration> {
    if now >= busy_until || now < serves_until {
        return None;
    }
    Some(Duration::from_nanos(busy_until - now).min(STAND_ASIDE))
}

/// On a thread that stands aside for the boards: sleeps while a board's bytes
/// are on their way out, unless it stood aside within the last [`STAND_ASIDE`].
/// Returns how long it slept. Called before the server's reads, writes and
/// accepts; a no-op (one thread-local read) on any other thread.
pub(super) fn stand_aside() -> Duration {
    if !STANDS_ASIDE.with(Cell::get) {
        return Duration::ZERO;
    }
    let now = now_ns();
    let Some(wait) = how_long(
        now,
        BOARDS_BUSY_UNTIL.load(Ordering::Relaxed),
        SERVES_UNTIL.with(Cell::get),
    ) else {
        return Duration::ZERO;
    };
    std::thread::sleep(wait);
    let after = now_ns();
    SERVES_UNTIL.with(|s| s.set(after.saturating_add(STAND_ASIDE.as_nanos() as u64)));
    Duration::from_nanos(after.saturating_sub(now))
}

/// Sets the calling thread's scheduling as `priority` says; with `idle` and
/// `low` it also stands aside while a board's bytes are on their way out. A
/// failure leaves the thread as it was, which only costs latency under load: it
/// is logged, not fatal; from `idle`, `low` is tried next.
pub(super) fn yield_to_boards(priority: Priority) {
    STANDS_ASIDE.with(|s| s.set(priority != Priority::Normal));
    if priority == Priority::Idle {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: changes the calling thread's policy only (pid 0); `param` is
        // a valid struct that outlives the call.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0 {
            return;
        }
        tracing::debug!(
            "HTTP: could not put the server thread in the idle class: {}",
            std::io::Error::last_os_error()
        );
    }
    if priority == Priority::Normal {
        return;
    }
    // SAFETY: getpriority/setpriority only read and change the calling thread's
    // nice value (`gettid`); no memory is passed.
    let tid = unsafe { libc::gettid() } as libc::id_t;
    let now = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) };
    let target = (now + HTTP_NICE).min(19);
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, target) } != 0 {
        tracing::debug!(
            "HTTP: could not lower the server thread's priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::Priority;

    fn nice() -> libc::c_int {
        // SAFETY: reads the calling thread's nice value.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    fn policy() -> libc::c_int {
        // SAFETY: reads the calling thread's policy.
        unsafe { libc::sched_getscheduler(0) }
    }

    /// (policy, nice) before and after, on a thread of its own.
    fn on_a_thread(p: Priority) -> ((libc::c_int, libc::c_int), (libc::c_int, libc::c_int)) {
        std::thread::spawn(move || {
            let before = (policy(), nice());
            super::yield_to_boards(p);
            (before, (policy(), nice()))
        })
        .join()
        .unwrap()
    }

    #[test]
    fn the_server_thread_runs_below_the_boards() {
        let main = (policy(), nice());
        let (before, after) = on_a_thread(Priority::Idle);
        assert_eq!(before.0, libc::SCHED_OTHER);
        assert_eq!(after.0, libc::SCHED_IDLE, "the idle class");
        let (before, after) = on_a_thread(Priority::Low);
        assert_eq!(after, (before.0, (before.1 + super::HTTP_NICE).min(19)));
        let (before, after) = on_a_thread(Priority::Normal);
        assert_eq!(after, before);
        // The thread that called it only.
        assert_eq!((policy(), nice()), main);
    }

    #[test]
    fn it_stands_aside_for_the_rest_of_the_boards_time_then_serves_its_share() {
        use super::{STAND_ASIDE, how_long};
        use std::time::Duration;
        let ms = |m: u64| m * 1_000_000;
        let aside = STAND_ASIDE.as_nanos() as u64;
        // The boards' bytes came 0.5 ms ago: the rest of their 1.5 ms.
        assert_eq!(how_long(ms(10), ms(11), 0), Some(Duration::from_millis(1)));
        // Never longer than one window, whatever the deadline says.
        assert_eq!(how_long(ms(10), ms(50), 0), Some(STAND_ASIDE));
        // The boards' time is over, or nothing has arrived yet.
        assert_eq!(how_long(ms(11), ms(11), 0), None);
        assert_eq!(how_long(ms(10), 0, 0), None);
        // Just stood aside: it serves a window before it does again.
        let stood = ms(10);
        assert_eq!(how_long(stood + 1, stood + aside, stood + aside), None);
        assert_eq!(
            how_long(stood + aside, stood + 2 * aside, stood + aside),
            Some(STAND_ASIDE)
        );
    }

    #[test]
    fn only_the_server_thread_stands_aside() {
        use super::{board_bytes_arrived, stand_aside};
        use std::time::{Duration, Instant};
        // On the server's thread it sleeps for the boards (the bytes arrive
        // until it has: however late this thread runs, one attempt in many
        // lands within the window).
        let slept = std::thread::spawn(|| {
            super::yield_to_boards(Priority::Low);
            let t = Instant::now();
            loop {
                board_bytes_arrived();
                let slept = stand_aside();
                if slept > Duration::ZERO || t.elapsed() > Duration::from_secs(5) {
                    return slept;
                }
            }
        })
        .join()
        .unwrap();
        assert!(slept > Duration::ZERO, "never stood aside in 5 s");
        // With `normal`, and on any other thread, it never does.
        let normal = std::thread::spawn(|| {
            super::yield_to_boards(Priority::Normal);
            board_bytes_arrived();
            stand_aside()
        })
        .join()
        .unwrap();
        assert_eq!(normal, Duration::ZERO);
        board_bytes_arrived();
        assert_eq!(std::thread::spawn(stand_aside).join().unwrap(), Duration::ZERO);
    }

    #[test]
    fn the_setting_is_read_by_name() {
        #[derive(serde::Deserialize)]
        struct T {
            priority: Priority,
        }
        for (text, p) in [
            ("idle", Priority::Idle),
            ("low", Priority::Low),
            ("normal", Priority::Normal),
        ] {
            let t: T = toml::from_str(&format!("priority = \"{text}\"")).unwrap();
            assert_eq!(t.priority, p);
        }
        let e = toml::from_str::<T>("priority = \"high\"")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("idle") && e.contains("normal"), "{e}");
    }
}
