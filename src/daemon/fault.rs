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
//! - `panic:BOARD:PLY[:TIMES]`: the task of the board with id `BOARD` panics
//!   when its game has `PLY` moves or more, after a turn of its loop (after it
//!   published them), `TIMES` times in this process (1 when not given);
//! - `resume:BOARD`: resuming `BOARD` from its journal panics, every time (as a
//!   journal that makes the rules core panic would);
//! - `break:NAME`: a deliberate defect, so that the event campaign
//!   (`tests/event`) can show that each of its invariants catches the defect it
//!   guards against (`docs/RELIABILITY.md`, "Each invariant, broken"). The
//!   names are [`BREAKS`].

/// The environment variable of the fault hook (debug builds only).
pub const FAULT_VAR: &str = "EBOARD_BRIDGE_FAULT";

/// The deliberate defects of `break:NAME`, each with what it breaks:
/// - `resolved`: no `resolved` event is published live (every door: D-Bus,
///   the network, MQTT), though the journal still explains the board again;
/// - `withdraw`: a ply published (each sixth) is withdrawn from the game's
///   moves at the next publication without a move, then shown again;
/// - `players`: resume drops the arbiter's `SetPlayers` (the journal keeps it);
/// - `door`: a new game asked through D-Bus (`NewGame`, `Decide`, and so
///   `ctl`) is taken without confirming; the console and MQTT still refuse it
///   as the rule book says;
/// - `alarm-end`: an alarm standing when its game ends (the arbiter's result
///   over an illegal position) is dropped without a word: the `resolved` the
///   game's end brings is not published live (every door), though the
///   journal, and so `replay`, still has it;
/// - `flag`: no `flag` event is published live (every door);
/// - `flag-ends`: a flag ends the game (loss on time, Art. 6.9), as if the
///   configuration asked it (`[rules] flag = "end"`): a flag judged, not
///   reported.
pub const BREAKS: [&str; 7] = [
    "resolved",
    "withdraw",
    "players",
    "door",
    "alarm-end",
    "flag",
    "flag-ends",
];

#[cfg(debug_assertions)]
mod hook {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[derive(Default)]
    pub struct Faults {
        /// (board, ply, times) of the live panics.
        pub live: Option<(String, u64, u32)>,
        pub resume: Vec<String>,
        pub breaks: Vec<String>,
    }

    static FAULTS: OnceLock<Faults> = OnceLock::new();
    static FIRED: AtomicU32 = AtomicU32::new(0);

    pub fn faults() -> &'static Faults {
        FAULTS.get_or_init(|| {
            let mut f = Faults::default();
            let spec = std::env::var(super::FAULT_VAR).unwrap_or_default();
            for item in spec.split(',').filter(|i| !i.is_empty()) {
                let parts: Vec<&str> = item.split(':').collect();
                match parts.as_slice() {
                    ["panic", board, ply, times @ ..] if times.len() <= 1 => {
                        let times = times.first().map_or(Ok(1), |t| t.parse());
                        match (ply.parse(), times) {
                            (Ok(ply), Ok(times)) => f.live = Some((board.to_string(), ply, times)),
                            _ => tracing::warn!("{}: `{item}`: not a ply and a count", super::FAULT_VAR),
                        }
                    }
                    ["resume", board] => f.resume.push(board.to_string()),
                    ["break", name] if super::BREAKS.contains(name) => f.breaks.push(name.to_string()),
                    _ => tracing::warn!("{}: `{item}` is not a fault", super::FAULT_VAR),
                }
            }
            f
        })
    }

    /// Whether a live panic is still due (`times` in all); counts it.
    pub fn fire(times: u32) -> bool {
        FIRED
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < times).then_some(n + 1)
            })
            .is_ok()
    }
}

/// Called by a board's task after each turn of its loop, with the moves its
/// game shows: panics when the fault hook says so (debug builds only).
#[cfg(debug_assertions)]
pub fn after_turn(board: &str, shown: u64) {
    if let Some((b, ply, times)) = &hook::faults().live {
        if b == board && shown >= *ply && hook::fire(*times) {
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

/// Whether the deliberate defect `name` ([`BREAKS`]) is on (debug builds only).
#[cfg(debug_assertions)]
pub fn broken(name: &str) -> bool {
    hook::faults().breaks.iter().any(|b| b == name)
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn broken(_name: &str) -> bool {
    false
}
