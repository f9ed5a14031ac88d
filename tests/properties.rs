//! Properties over random input: the decoder and the log reader never panic, the
//! decoder accounts for every byte whatever the chunking, and logs round-trip.

use eboard_bridge::log::{Header, LogTime, Record, RecordKind, Running, parse_log, to_string};
use eboard_bridge::protocol::{ClockButton, ClockSide, ClockTime, Decoded, Decoder, Placement};
use proptest::prelude::*;
use shakmaty::{Piece, Square};

fn decode_all(chunks: &[&[u8]]) -> Vec<Decoded> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for c in chunks {
        out.extend(d.feed(c));
    }
    out.extend(d.finish());
    out
}

/// Bytes that look like board traffic: mostly real headers and 7-bit data.
fn wire_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => 0u8..0x80,
        2 => prop::sample::select(vec![0x86u8, 0x8d, 0x8e, 0x8f, 0x90, 0x91, 0x92, 0x93, 0xa0, 0xa2]),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..600)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn decoder_accounts_for_every_byte(bytes in wire_bytes(), cut in any::<prop::sample::Index>()) {
        let out = decode_all(&[&bytes]);
        let mut accounted = 0;
        for d in &out {
            accounted += match d {
                Decoded::Message(m) => m.encode().len(),
                Decoded::Skipped(s) => {
                    prop_assert!(s.sample.len() <= 16);
                    s.count
                }
            };
        }
        prop_assert_eq!(accounted, bytes.len());
        // Any split gives the same outputs (skip offsets included).
        let at = if bytes.is_empty() { 0 } else { cut.index(bytes.len()) };
        prop_assert_eq!(decode_all(&[&bytes[..at], &bytes[at..]]), out.clone());
        let single: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(decode_all(&single), out);
    }

    #[test]
    fn decoder_survives_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let out = decode_all(&[&bytes]);
        let n: usize = out.iter().map(|d| match d { Decoded::Message(m) => m.encode().len(), Decoded::Skipped(s) => s.count }).sum();
        prop_assert_eq!(n, bytes.len());
    }
}

fn square() -> impl Strategy<Value = Square> {
    (0u32..64).prop_map(Square::new)
}

fn piece() -> impl Strategy<Value = Piece> {
    prop::sample::select("PNBRQKpnbrqk".chars().collect::<Vec<_>>())
        .prop_map(|c| Piece::from_char(c).unwrap())
}

fn clock_time() -> impl Strategy<Value = ClockTime> {
    (0u32..36_000_000).prop_map(|ms| ClockTime::from_millis(ms / 100 * 100))
}

fn kind() -> impl Strategy<Value = RecordKind> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 1..40).prop_map(RecordKind::Rx),
        prop::collection::vec(any::<u8>(), 1..10).prop_map(RecordKind::Tx),
        prop::collection::vec(prop::option::of(piece()), 64).prop_map(|cells| {
            let mut b = shakmaty::Board::empty();
            for (i, p) in cells.into_iter().enumerate() {
                if let Some(p) = p {
                    b.set_piece_at(Square::new(i as u32), p);
                }
            }
            RecordKind::Board(Box::new(Placement::from_board(&b)))
        }),
        (square(), prop::option::of(piece())).prop_map(|(square, piece)| RecordKind::Lift { square, piece }),
        (square(), piece()).prop_map(|(square, piece)| RecordKind::Place { square, piece }),
        (
            clock_time(),
            clock_time(),
            prop::sample::select(vec![Running::Left, Running::Right, Running::None])
        )
            .prop_map(|(left, right, running)| RecordKind::Clock { left, right, running }),
        prop::bool::ANY.prop_map(|l| RecordKind::Press(if l { ClockSide::Left } else { ClockSide::Right })),
        (0u8..5).prop_map(|n| RecordKind::Button(ClockButton::from_number(n).unwrap())),
        "[a-zA-Z0-9 ,.:#]{0,30}".prop_map(|s| RecordKind::Note(s.trim().to_string())),
    ]
}

fn records() -> impl Strategy<Value = Vec<Record>> {
    prop::collection::vec((0u64..5_000_000, kind()), 0..60).prop_map(|steps| {
        let mut t = 0;
        steps
            .into_iter()
            .map(|(dt, kind)| {
                t += dt;
                Record {
                    time: LogTime::from_micros(t),
                    kind,
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn logs_round_trip(records in records(), serial in "[0-9]{5}") {
        let mut header = Header::default();
        header.set("serial", &serial);
        header.set("started", "2026-11-21T10:00:00Z");
        let text = to_string(&header, &records).unwrap();
        let log = parse_log(&text, "rt.esl").unwrap();
        prop_assert_eq!(log.header, header);
        prop_assert_eq!(log.records, records);
    }

    #[test]
    fn log_reader_never_panics(body in prop::collection::vec(
        prop_oneof![
            "[0-9.]{1,9} (rx|tx|board|lift|place|clock|press|button|note|bogus)( [a-zA-Z0-9:=/.]{0,12}){0,4}",
            ".{0,40}",
        ], 0..30)) {
        let text = format!("# eboard-sensor-log 1\n{}\n", body.join("\n"));
        match parse_log(&text, "f.esl") {
            Ok(log) => {
                // A log that reads can be played: errors, never panics.
                let _ = eboard_bridge::log::Player::play_log(&log, "f.esl");
            }
            Err(e) => prop_assert!(e.line >= 2 && !e.problem.is_empty()),
        }
    }
}
