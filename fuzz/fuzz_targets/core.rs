#![no_main]
//! The rules core on arbitrary board events (field updates, dumps, clock reports,
//! presses, gaps, line faults) in any order and timing: no panic, deadlines always
//! move forward, events in time order, only legal moves recorded
//! (`eboard_core::rules::drive`).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = eboard_core::rules::drive::drive(data) {
        panic!("{e}");
    }
});
