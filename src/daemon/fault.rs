//! A fault hook for the tests of `supervise`: it makes a board's task panic, as
//! a bug in the rules core would, so that the tests can show that the board is
//! restarted (or its journal moved aside) and that the other boards run on.
//!
//! Why an environment variable honoured only in debug builds, and not a cargo
//! feature or a D-Bus call: in a release build (the package, `cargo build
//! --release`) the hook is not compiled at all: its functions are empty, so no
//! outside input (D-Bus, MQTT, HTTP, a board's bytes, a journal's lines) can
//! reach it, and a build cannot ship it by mistake the way a forgotten feature
//! flag could. The integration tests run the debug binary
//! (`CARGO_BIN_EXE_eboard-bridge`), which honours it; a feature would have to be
//! named on every `cargo test` for the binary to carry it. Only whoever starts
//! the process sets its environment.
//!
//! `EBOARD_BRIDGE_FAULT` holds items separated by `,`:
//! - `panic:BOARD:PLY`: the task of the board with id `BOARD` panics once (in
//!   this process) when its game has `PLY` moves shown, after it published them;
//! - `resume:BOARD`: resuming `BOARD` from its journal panics, every time (as a
//!   journal that makes the rules core panic would).

/// The environment variable of the fault hook (debug builds only).
pub const FAULT_VAR: &str = "EBOARD_BRIDGE_FAULT";

#[cfg(debug_assertions)]
mod hook {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Default)]
    pub struct Faults {
        /// (board, ply) of the one live panic.
        pub live: Option<(String, u64)>,
        pub resume: Vec<String>,
    }

    static FAULTS: OnceLock<Faults> = OnceLock::new();
    static FIRED: AtomicBool = AtomicBool::new(false);

    pub fn faults() -> &'static Faults {
        FAULTS.get_or_init(|| {
            let mut f = Faults::default();
            let spec = std::env::var(super::FAULT_VAR).unwrap_or_default();
            for item in spec.split(',').filter(|i| !i.is_empty()) {
                let parts: Vec<&str> = item.split(':').collect();
                match parts.as_slice() {
                    ["panic", board, ply] => match ply.parse() {
                        Ok(ply) => f.live = Some((board.to_string(), ply)),
                        Err(_) => tracing::warn!("{}: `{item}`: not a ply", super::FAULT_VAR),
                    },
                    ["resume", board] => f.resume.push(board.to_string()),
                    _ => tracing::warn!("{}: `{item}` is not a fault", super::FAULT_VAR),
                }
            }
            f
        })
    }

    pub fn fire_once() -> bool {
        !FIRED.swap(true, Ordering::SeqCst)
    }
}

/// Called by a board's task after each turn of its loop, with the moves its
/// game shows: panics when the fault hook says so (debug builds only).
#[cfg(debug_assertions)]
pub fn after_turn(board: &str, shown: u64) {
    if let Some((b, ply)) = &hook::faults().live {
        if b == board && shown >= *ply && hook::fire_once() {
            panic!("fault hook: board {board}'s task panics at ply {shown}");
        }
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn after_turn(_board: &str, _shown: u64) {}

/// Called for each step of a journal being resumed: panics when the fault hook
/// says so (debug builds only).
#[cfg(debug_assertions)]
pub fn on_resume(board: &str) {
    if hook::faults().resume.iter().any(|b| b == board) {
        panic!("fault hook: resuming board {board} makes the rules core panic");
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn on_resume(_board: &str) {}
