//! Helpers shared by the integration tests: where the shared material is, and how to
//! read the published move lists.
#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared` beside the checkout (it is there in CI too).
pub fn shared(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("shared")
        .join(rel)
}

/// A fixture of this crate.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
        .join(rel)
}

/// The UCI moves of a `captures/N.uci` file (`1. e2e4 e7e5` per line).
pub fn uci_moves(rel: &str) -> Vec<String> {
    let text = std::fs::read_to_string(shared(rel)).expect("read uci file");
    text.split_whitespace()
        .filter(|w| !w.ends_with('.') && !matches!(*w, "*" | "1-0" | "0-1" | "1/2-1/2"))
        .map(str::to_string)
        .collect()
}

/// The position after playing `moves` from the standard start.
pub fn play_uci(moves: &[String]) -> shakmaty::Chess {
    use shakmaty::{Chess, Position, uci::UciMove};
    let mut pos = Chess::default();
    for m in moves {
        let uci: UciMove = m.parse().expect("uci syntax");
        let mv = uci.to_move(&pos).unwrap_or_else(|e| panic!("{m}: {e}"));
        pos.play_unchecked(mv);
    }
    pos
}

/// A small seeded generator (SplitMix64) so that generated tests are repeatable.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}
