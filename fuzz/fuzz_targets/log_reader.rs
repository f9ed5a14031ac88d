#![no_main]
//! The sensor log reader and player on any text: errors, never panics.

use eboard_core::log::{Player, parse_log};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let text = format!("# eboard-sensor-log 1\n{text}");
        if let Ok(log) = parse_log(&text, "fuzz.esl") {
            let _ = Player::play_log(&log, "fuzz.esl");
        }
    }
});
