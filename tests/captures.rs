//! The real DGT captures in `tests/data/captures` decode completely, in any chunking,
//! and their field updates rebuild the games' final positions.

use crate::common;

use common::{Rng, data, play_uci, uci_moves};
use eboard_bridge::board::{BoardState, Orientation};
use eboard_bridge::log::{RecordKind, read_log};
use eboard_bridge::protocol::{BoardMessage, Decoded, Decoder};
use shakmaty::Position;

/// All `rx` bytes of a capture, and the reads as they were recorded.
fn rx_reads(name: &str) -> Vec<Vec<u8>> {
    let log = read_log(&data(&format!("captures/{name}.esl"))).expect("capture reads");
    log.records
        .into_iter()
        .filter_map(|r| match r.kind {
            RecordKind::Rx(b) => Some(b),
            _ => None,
        })
        .collect()
}

fn messages(chunks: impl Iterator<Item = Vec<u8>>) -> Vec<BoardMessage> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        for decoded in d.feed(&chunk) {
            match decoded {
                Decoded::Message(m) => out.push(m),
                Decoded::Skipped(s) => panic!("byte skipped in a real capture: {s}"),
            }
        }
    }
    assert!(d.finish().is_empty(), "capture ends inside a message");
    out
}

#[test]
fn captures_decode_with_no_byte_skipped() {
    for name in ["1", "2"] {
        let reads = rx_reads(name);
        let total: usize = reads.iter().map(Vec::len).sum();
        let msgs = messages(reads.into_iter());
        let framed: usize = msgs.iter().map(|m| m.encode().len()).sum();
        assert_eq!(framed, total, "capture {name}: every byte belongs to a message");
        assert!(
            matches!(msgs[0], BoardMessage::BoardDump(_)),
            "capture {name} starts with a dump"
        );
        assert!(
            msgs.iter()
                .filter(|m| matches!(m, BoardMessage::FieldUpdate { .. }))
                .count()
                > 50
        );
        assert!(
            msgs.iter()
                .filter(|m| matches!(m, BoardMessage::Clock(_)))
                .count()
                > 50
        );
    }
}

#[test]
fn chunking_never_changes_the_message_stream() {
    for name in ["1", "2"] {
        let reads = rx_reads(name);
        let all: Vec<u8> = reads.concat();
        let as_read = messages(reads.into_iter());
        let whole = messages(std::iter::once(all.clone()));
        let bytewise = messages(all.iter().map(|b| vec![*b]));
        assert_eq!(whole, as_read);
        assert_eq!(bytewise, as_read);
        for seed in 0..20 {
            let mut rng = Rng::new(seed);
            let mut chunks = Vec::new();
            let mut rest = &all[..];
            while !rest.is_empty() {
                let n = rng.range(1, rest.len().min(80) as u64) as usize;
                chunks.push(rest[..n].to_vec());
                rest = &rest[n..];
            }
            assert_eq!(
                messages(chunks.into_iter()),
                as_read,
                "capture {name}, seed {seed}"
            );
        }
    }
}

#[test]
fn field_updates_rebuild_the_final_positions() {
    for (name, orientation) in [("1", Orientation::Normal), ("2", Orientation::Rotated)] {
        let mut board = BoardState::new();
        for m in messages(rx_reads(name).into_iter()) {
            board.apply(&m);
        }
        let seen = orientation.real_board(&board.placement().expect("a dump arrived").to_board());
        let expected = play_uci(&uci_moves(&format!("captures/{name}.uci")));
        assert_eq!(
            seen.to_string(),
            expected.board().to_string(),
            "capture {name}: the board ends on the game's final position"
        );
    }
}

/// The committed sensor logs are what the project's converter makes of the committed
/// captures (`cargo run --example inbytes -- tests/data/captures/N.inbytes`), byte
/// for byte: one `rx` record a read, the same bytes, the times rebuilt from the clock.
#[test]
fn the_committed_logs_are_the_conversion_of_the_committed_captures() {
    use eboard_bridge::log::{self, import};
    for name in ["1", "2"] {
        let inbytes = format!("{name}.inbytes");
        let text = std::fs::read_to_string(data(&format!("captures/{inbytes}"))).expect("read capture");
        let converted = import::from_inbytes(&text, &inbytes).expect("the capture converts");
        let reads = text.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(
            converted.records.len(),
            reads,
            "capture {name}: one record a read"
        );
        let made = log::to_string(&converted.header, &converted.records).unwrap();
        let committed = std::fs::read_to_string(data(&format!("captures/{name}.esl"))).expect("read log");
        assert!(
            made == committed,
            "tests/data/captures/{name}.esl is not the conversion of {inbytes}; remake it with \
             `cargo run --example inbytes -- tests/data/captures/{inbytes} > tests/data/captures/{name}.esl`"
        );
        // The times go up a second at a time with the clock, as the game did: the
        // last record is within the game's length (3+2 blitz, under 10 minutes).
        let last = converted.records.last().unwrap().time.seconds();
        assert!((60.0..600.0).contains(&last), "capture {name} lasts {last} s");
    }
}
