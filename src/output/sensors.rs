//! `replay --format sensors`: the board-level stream of a log, for a person to read.
//!
//! Each step is printed as a decoded sensor-log record where one exists (`board`,
//! `lift`, `place`, `clock`, `button`), so the output is itself a sensor log that
//! replays to the same board; everything else (presses seen as lever changes, board
//! facts, host commands, skipped bytes) is a comment.

use std::fmt::Write;

use crate::board::{BoardEvent, BoardInfo};
use crate::log::{LogTime, Played, Record, RecordKind, Running, Step};
use crate::protocol::PieceCode;

/// The line for one step (with a comment line after it when there is more to say:
/// the sensor log has no comments at the end of a record).
pub fn format_step(step: &Step) -> String {
    let t = step.time;
    let record = |kind| Record { time: t, kind }.to_string();
    match &step.what {
        Played::Board(ev) => match ev {
            BoardEvent::Dump(p) => {
                let mut line = record(RecordKind::Board(p.clone()));
                if p.has_special() {
                    let _ = write!(line, "\n# {t} the board also holds special (non-chess) pieces");
                }
                line
            }
            BoardEvent::Lift { square, piece } => record(RecordKind::Lift {
                square: *square,
                piece: piece.piece(),
            }),
            BoardEvent::Place {
                square,
                piece: PieceCode::Piece(p),
                replaced,
            } => {
                let mut line = record(RecordKind::Place {
                    square: *square,
                    piece: *p,
                });
                if let PieceCode::Piece(r) = replaced {
                    let _ = write!(line, "\n# {t} {} replaced {} directly", p.char(), r.char());
                }
                line
            }
            BoardEvent::Place { square, piece, .. } => comment(t, &format!("place {square} {piece}")),
            BoardEvent::Clock(c) => {
                let mut line = record(RecordKind::Clock {
                    left: c.left,
                    right: c.right,
                    running: Running::from_side(c.running_side()),
                });
                let flags: Vec<&str> = [
                    (c.left_flags.fallen, "left flag fallen"),
                    (c.right_flags.fallen, "right flag fallen"),
                    (c.battery_low, "battery low"),
                    (c.no_clock, "no clock"),
                ]
                .into_iter()
                .filter_map(|(on, s)| on.then_some(s))
                .collect();
                if !flags.is_empty() {
                    let _ = write!(line, "\n# {t} {}", flags.join(", "));
                }
                line
            }
            BoardEvent::Press(side) => comment(t, &format!("press {side} (lever)")),
            BoardEvent::Button(b) => record(RecordKind::Button(*b)),
            BoardEvent::ClockAck(k) => comment(t, &format!("clock ack {k:?}")),
            BoardEvent::Info(info) => comment(
                t,
                &match info {
                    BoardInfo::SerialNumber(s) => format!("serial number {s}"),
                    BoardInfo::LongSerialNumber(s) => format!("long serial number {s}"),
                    BoardInfo::Version { major, minor } => format!("board version {major}.{minor}"),
                    BoardInfo::BusAddress(a) => format!("bus address {a}"),
                    BoardInfo::Trademark(s) => format!("trademark {}", s.replace(['\r', '\n'], " ")),
                    BoardInfo::Battery { percent } => format!("battery {percent}%"),
                    BoardInfo::EepromMoves(n) => format!("EEPROM moves, {n} bytes"),
                },
            ),
        },
        Played::Skipped(s) => comment(t, &s.to_string()),
        Played::Host(h) => comment(t, &format!("host: {h}")),
        Played::Note(n) => record(RecordKind::Note(n.clone())),
        Played::Gap(g) => record(RecordKind::Gap(g.clone())),
        Played::Arbiter(method, args, _) => record(RecordKind::Arbiter {
            method: method.clone(),
            args: args.clone(),
        }),
        Played::Settings(json) => record(RecordKind::Settings(json.clone())),
    }
}

fn comment(t: LogTime, text: &str) -> String {
    format!("# {t} {text}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Player, parse_log};

    #[test]
    fn output_is_a_log_that_replays_to_the_same_board() {
        let text = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n1 clock left=0:05:00 right=0:05:00 running=left\n1.2 lift e2 P\n1.6 place e4 P\n1.9 press left\n2.5 rx 8e 00 05 34\n3 tx 42\n";
        let log = parse_log(text, "t.esl").unwrap();
        let steps = Player::play_log(&log, "t.esl").unwrap();
        let lines: Vec<String> = steps.iter().map(format_step).collect();
        assert_eq!(
            lines[0],
            "0.000 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR"
        );
        assert_eq!(lines[1], "1.000 clock left=0:05:00 right=0:05:00 running=left");
        assert_eq!(lines[2], "1.200 lift e2 P");
        assert_eq!(lines[3], "1.600 place e4 P");
        assert_eq!(lines[4], "# 1.900 press left (lever)");
        assert_eq!(lines[5], "1.900 clock left=0:04:59 right=0:05:00 running=right");
        assert_eq!(lines[6], "# 3.000 host: SendBoard");
        assert!(
            lines[7].starts_with("# 3.000 skipped 4 byte(s) at offset"),
            "{}",
            lines[7]
        );
        let final_board = |text: &str| {
            let log = parse_log(text, "x.esl").unwrap();
            let mut player = Player::new("x.esl");
            for r in &log.records {
                player.play(r, None).unwrap();
            }
            player.board().placement().cloned()
        };
        let again = format!("# eboard-sensor-log 1\n{}\n", lines.join("\n"));
        assert_eq!(final_board(&again), final_board(text));
        assert!(final_board(&again).is_some());
    }
}
