//! The HTTP server's thread yields the cores to the boards' threads.

/// How much lower than the daemon's other threads the HTTP thread runs (a nice
/// value added to its own): under a flood of clients a board's thread still gets
/// a core first.
const HTTP_NICE: libc::c_int = 10;

/// Lowers the calling thread's scheduling priority by [`HTTP_NICE`] (Linux sets
/// nice per thread; lowering needs no privilege). A failure leaves the thread
/// as it was, which only costs latency under load: it is logged, not fatal.
pub(super) fn yield_to_boards() {
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
    fn nice() -> libc::c_int {
        // SAFETY: reads the calling thread's nice value.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[test]
    fn the_server_thread_runs_below_the_boards() {
        let (before, after) = std::thread::spawn(|| {
            let before = nice();
            super::yield_to_boards();
            (before, nice())
        })
        .join()
        .unwrap();
        assert_eq!(after, (before + super::HTTP_NICE).min(19), "from {before}");
        // The thread that called it only.
        assert_eq!(nice(), before);
    }
}
