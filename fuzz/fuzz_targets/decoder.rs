#![no_main]
//! The decoder on any bytes, split anywhere: no panic, every byte accounted for,
//! and the same output as a single feed.

use eboard_core::protocol::{Decoded, Decoder};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(0, |b| usize::from(*b)).min(data.len());
    let run = |chunks: &[&[u8]]| {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.feed(c));
        }
        out.extend(d.finish());
        out
    };
    let whole = run(&[data]);
    let split_out = run(&[&data[..split], &data[split..]]);
    assert_eq!(whole, split_out);
    let n: usize = whole
        .iter()
        .map(|d| match d {
            Decoded::Message(m) => m.encode().len(),
            Decoded::Skipped(s) => s.count,
        })
        .sum();
    assert_eq!(n, data.len());
});
