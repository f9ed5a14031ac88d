//! The process's memory allocator: mimalloc, set as the global allocator by the
//! binary (`src/main.rs`).
//!
//! Why: `replay` runs the rules core on one thread while another reads the log and
//! prints the events; every event is made on one thread and freed on the other.
//! glibc's allocator frees another thread's memory under that thread's arena
//! lock, and the two threads then wait on each other (`replay --format text` of
//! the bench's log took 0.12 s with glibc, 0.07 s with mimalloc; figures in
//! `docs/PERFORMANCE.md`).
//!
//! mimalloc by default keeps freed memory for a second before it returns it to
//! the system, and commits its arenas' memory eagerly (on Linux, where memory is
//! overcommitted). Under the daemon's pattern (256 boards, small allocations from
//! tokio's worker and blocking threads) that held its peak RSS at 53 MB instead of
//! glibc's 32 MB; without the delay, 45 MB; without both, 32 MB.
//! [`return_freed_memory_at_once`] turns both off; `replay` stays as fast (its
//! output is kept in chunks, never copied to grow).

use libmimalloc_sys::{mi_option_set, mi_option_t};

/// Options of mimalloc 3's `mi_option_e` (`include/mimalloc.h`) the Rust
/// bindings do not name: `mi_option_arena_eager_commit` (0 never, 1 always, 2 on
/// an OS that overcommits) and `mi_option_purge_delay` (milliseconds freed memory
/// is kept). The test below checks both still have the defaults `src/options.c`
/// gives them (2 and 1000, the only option with that default).
const MI_OPTION_ARENA_EAGER_COMMIT: mi_option_t = 4;
const MI_OPTION_PURGE_DELAY: mi_option_t = 15;

/// Freed memory goes back to the system at once, not a second later, and arena
/// memory is committed as it is used. The `MIMALLOC_PURGE_DELAY` and
/// `MIMALLOC_ARENA_EAGER_COMMIT` environment variables still override.
///
/// mimalloc reserves its first arena at the first allocation, with the options
/// then in force: the binary calls this from a constructor (`.init_array`), before
/// Rust's runtime allocates anything. Called from `main`, the arena option came
/// too late (peak RSS with 256 boards: 44.7 MB, against 31.8 MB). So this
/// allocates nothing: the environment is read with `getenv`.
pub fn return_freed_memory_at_once() {
    for (option, env) in [
        (MI_OPTION_PURGE_DELAY, c"MIMALLOC_PURGE_DELAY"),
        (MI_OPTION_ARENA_EAGER_COMMIT, c"MIMALLOC_ARENA_EAGER_COMMIT"),
    ] {
        // SAFETY: `getenv` with a NUL-terminated name, before any thread that
        // could change the environment exists; mimalloc's option calls take any
        // option number and value and touch only its option table.
        unsafe {
            if libc::getenv(env.as_ptr()).is_null() {
                mi_option_set(option, 0);
            }
        }
    }
}

/// Freed memory is kept for reuse as mimalloc does by default (a second), for a
/// one-shot command that frees and allocates all the time (`replay` of many
/// logs: returned at once, every free of a page cost a `madvise`). The
/// `MIMALLOC_PURGE_DELAY` environment variable still overrides.
pub fn keep_freed_memory() {
    // SAFETY: as above.
    unsafe {
        if libc::getenv(c"MIMALLOC_PURGE_DELAY".as_ptr()).is_null() {
            mi_option_set(MI_OPTION_PURGE_DELAY, 1000);
        }
    }
}

/// An option's value in force.
#[cfg(test)]
fn option(option: mi_option_t) -> std::ffi::c_long {
    // SAFETY: as above; reading an option has no other effect.
    unsafe { libmimalloc_sys::mi_option_get(option) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_set_are_the_ones_meant() {
        // Before it is set: mimalloc's default for `mi_option_purge_delay`. A
        // renumbered option would show another option's default here (0, 1,
        // 32, 100, 400, ...), not 1000.
        let unset = |env| std::env::var_os(env).is_none();
        if unset("MIMALLOC_PURGE_DELAY") && unset("MIMALLOC_ARENA_EAGER_COMMIT") {
            assert_eq!(option(MI_OPTION_PURGE_DELAY), 1000);
            assert_eq!(option(MI_OPTION_ARENA_EAGER_COMMIT), 2);
            return_freed_memory_at_once();
            assert_eq!(option(MI_OPTION_PURGE_DELAY), 0);
            assert_eq!(option(MI_OPTION_ARENA_EAGER_COMMIT), 0);
        }
    }
}
