#![no_main]
//! A board's session (`eboard_core::drive`) on arbitrary input: board events
//! (field updates, dumps, clock reports, presses, garbled bytes, gaps) in any
//! order and timing, with arbiter calls between them (every decision, in
//! range and out of it, and malformed ones). No panic; deadlines always move
//! forward; events in time order; a refused call changes nothing and a
//! malformed one is refused; an undo right after a take-back or a result
//! gives the game back exactly; the journal, read back and replayed through a
//! second session, gives the live events, clock commands and games; only
//! legal moves recorded.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = eboard_core::drive::drive(data) {
        panic!("{e}");
    }
});
