//! The HTTP server's thread yields the cores to the boards' threads.
//!
//! Under a flood of clients the server thread has work to do all the time. At a
//! lower nice value alone it still shares the core it runs on: the scheduler
//! (EEVDF) lets the running thread reach its fair share before a waking board
//! thread takes the core, which cost up to 2 ms of a move's latency under the
//! attacks of `tests/abuse.rs`. In the idle class (`SCHED_IDLE`, the default)
//! any other thread that wakes takes the core at once (`docs/RELIABILITY.md`, "A
//! move's latency under attack"). Lowering a thread's own priority needs no
//! privilege; Linux sets both per thread.

use super::config::Priority;

/// How much lower than the daemon's other threads the HTTP thread runs with
/// `priority = "low"` (a nice value added to its own).
const HTTP_NICE: libc::c_int = 10;

/// Sets the calling thread's scheduling as `priority` says. A failure leaves the
/// thread as it was, which only costs latency under load: it is logged, not
/// fatal; from `idle`, `low` is tried next.
pub(super) fn yield_to_boards(priority: Priority) {
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
