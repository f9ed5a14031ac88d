//! The virtual board on a real pseudo-terminal, driven from the host side with
//! `tokio-serial` exactly as the daemon drives hardware.

use crate::common;

use std::time::Duration;

use common::Within;
use eboard_bridge::board::{BoardEvent, BoardState};
use eboard_bridge::device::{Emulator, EmulatorConfig, serial};
use eboard_bridge::log::parse_log;
use eboard_bridge::protocol::{
    AckKind, BoardMessage, ClockCommand, ClockSide, Decoded, Decoder, HostCommand, Placement,
};
use shakmaty::Square;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_serial::SerialStream;

const LOG: &str = "# eboard-sensor-log 1
# serial: 24680
0.000 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR
0.000 clock left=0:05:00 right=0:05:00 running=left
1.200 lift e2 P
1.600 place e4 P
1.900 press left
3.000 lift e7
3.400 place e5 p
3.700 press right
4.000 button 4
";

/// Reads messages until `want` of them satisfy `until`, or the time runs out.
async fn read_until(
    line: &mut SerialStream,
    decoder: &mut Decoder,
    secs: f64,
    mut until: impl FnMut(&BoardMessage) -> bool,
) -> Vec<BoardMessage> {
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
    loop {
        let n = tokio::select! {
            r = line.read(&mut buf) => r.expect("read from the pty"),
            _ = tokio::time::sleep_until(deadline) => panic!("timed out; got {got:?}"),
        };
        for d in decoder.feed(&buf[..n]) {
            match d {
                Decoded::Message(m) => {
                    let done = until(&m);
                    got.push(m);
                    if done {
                        return got;
                    }
                }
                Decoded::Skipped(s) => panic!("the emulator sent bytes that do not decode: {s}"),
            }
        }
    }
}

async fn send(line: &mut SerialStream, cmd: HostCommand) {
    let what = format!("{cmd:?} to be written to the pty");
    async {
        line.write_all(&cmd.encode()).await.unwrap();
        line.flush().await.unwrap();
    }
    .within(5, &what)
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_reads_version_board_and_the_logs_events() {
    let log = parse_log(LOG, "inline.esl").unwrap();
    let emulator = Emulator::open().unwrap();
    let path = emulator.path().to_path_buf();
    let cfg = EmulatorConfig {
        speed: 10.0,
        serial: "24680".into(),
        ..EmulatorConfig::default()
    };
    let task = tokio::spawn(async move { emulator.run(&log, "inline.esl", &cfg).await });

    let mut line = serial::open(&path).unwrap();
    let mut dec = Decoder::new();

    send(&mut line, HostCommand::SendVersion).await;
    let got = read_until(&mut line, &mut dec, 5.0, |m| {
        matches!(m, BoardMessage::Version { .. })
    })
    .await;
    assert_eq!(got, vec![BoardMessage::Version { major: 3, minor: 1 }]);

    send(&mut line, HostCommand::SendBoard).await;
    let got = read_until(&mut line, &mut dec, 5.0, |m| {
        matches!(m, BoardMessage::BoardDump(_))
    })
    .await;
    assert_eq!(
        got,
        vec![BoardMessage::BoardDump(Box::new(Placement::from_board(
            &shakmaty::Board::new()
        )))]
    );

    send(&mut line, HostCommand::SendSerialNumber).await;
    let got = read_until(&mut line, &mut dec, 5.0, |m| {
        matches!(m, BoardMessage::SerialNumber(_))
    })
    .await;
    assert_eq!(got, vec![BoardMessage::SerialNumber("24680".into())]);

    // Clock commands are acknowledged only in update mode; then the log plays.
    send(&mut line, HostCommand::SendUpdatesNice).await;
    send(&mut line, HostCommand::Clock(ClockCommand::Version)).await;
    let mut board = BoardState::new();
    board.apply(&BoardMessage::BoardDump(Box::new(Placement::from_board(
        &shakmaty::Board::new(),
    ))));
    let mut events = Vec::new();
    let got = read_until(
        &mut line,
        &mut dec,
        5.0,
        |m| matches!(m, BoardMessage::ClockAck(a) if matches!(a.kind(), AckKind::Button(_))),
    )
    .await;
    for m in &got {
        events.extend(board.apply(m));
    }
    assert!(got.iter().any(
        |m| matches!(m, BoardMessage::ClockAck(a) if a.kind() == AckKind::Version { major: 2, minor: 2 })
    ));
    let moves: Vec<&BoardEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                BoardEvent::Lift { .. } | BoardEvent::Place { .. } | BoardEvent::Press(_)
            )
        })
        .collect();
    let pawn = |c| eboard_bridge::protocol::PieceCode::Piece(shakmaty::Piece::from_char(c).unwrap());
    let empty = eboard_bridge::protocol::PieceCode::Empty;
    assert_eq!(
        moves,
        vec![
            &BoardEvent::Lift {
                square: Square::E2,
                piece: pawn('P')
            },
            &BoardEvent::Place {
                square: Square::E4,
                piece: pawn('P'),
                replaced: empty
            },
            &BoardEvent::Press(ClockSide::Left),
            &BoardEvent::Lift {
                square: Square::E7,
                piece: pawn('p')
            },
            &BoardEvent::Place {
                square: Square::E5,
                piece: pawn('p'),
                replaced: empty
            },
            &BoardEvent::Press(ClockSide::Right),
        ]
    );
    // The clock kept time in log time: at 4.0 s the left side has run 1.9 + 0.3 s
    // (4:57.8, shown 4:57) and the right side 1.8 s (4:58.2, shown 4:58).
    let clocks: Vec<_> = got
        .iter()
        .filter_map(|m| {
            if let BoardMessage::Clock(c) = m {
                Some(*c)
            } else {
                None
            }
        })
        .collect();
    assert!(clocks.len() >= 3, "{clocks:?}");
    let last = clocks.last().unwrap();
    assert_eq!(
        (last.left.millis(), last.right.millis()),
        (297_000, 298_000),
        "{last:?}"
    );
    assert_eq!(last.running_side(), Some(ClockSide::Left));
    assert!(got.iter().any(|m| matches!(m, BoardMessage::Clock(c) if c.running_side() == Some(ClockSide::Right) && c.right.millis() < 300_000)));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_capture_plays_through_the_pty() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/captures/1.esl");
    let log = eboard_bridge::log::read_log(&path).unwrap();
    let emulator = Emulator::open().unwrap();
    let tty = emulator.path().to_path_buf();
    let cfg = EmulatorConfig {
        speed: 400.0,
        ..EmulatorConfig::default()
    };
    let task = tokio::spawn(async move { emulator.run(&log, "1.esl", &cfg).await });
    let mut line = serial::open(&tty).unwrap();
    serial::start_up(&mut line)
        .within(10, "the start-up commands to be written")
        .await
        .unwrap();
    let mut dec = Decoder::new();
    let mut board = BoardState::new();
    let expected = {
        use shakmaty::Position;
        let text = std::fs::read_to_string(path.with_extension("uci")).unwrap();
        let mut pos = shakmaty::Chess::default();
        for w in text.split_whitespace().filter(|w| !w.ends_with('.') && *w != "*") {
            let m = w
                .parse::<shakmaty::uci::UciMove>()
                .unwrap()
                .to_move(&pos)
                .unwrap();
            pos.play_unchecked(m);
        }
        pos.board().clone()
    };
    read_until(&mut line, &mut dec, 20.0, |m| {
        board.apply(m);
        board.placement().is_some_and(|p| p.to_board() == expected)
    })
    .await;
    task.abort();
}
