//! Playing a sensor log: every decoded record is turned into the bytes a DGT board
//! (with a DGT 3000 on it) would have sent, and every byte, recorded or made, goes
//! through the same [`Decoder`] that reads a real board. A `lift` or `place`
//! while the decoder is between messages is the one short cut: its field update,
//! which its bytes would decode to whole, is handed on and its bytes counted.

use crate::board::{BoardEvent, BoardState};
use crate::clock::ClockModel;
use crate::protocol::{
    BoardMessage, ClockAck, ClockTime, CommandParser, Decoded, Decoder, Field, HostInput, PieceCode, Skipped,
};

use super::read::LogError;
use super::record::{LogTime, Record, RecordKind, SensorLog};

/// What one step of a log amounts to at board level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Played {
    Board(BoardEvent),
    /// Bytes from the board the decoder could not read.
    Skipped(Skipped),
    /// A command the host sent (`tx`).
    Host(HostInput),
    Note(String),
    /// A `gap` record: the line may have lost changes here.
    Gap(String),
    /// An `arbiter` record: the method, its arguments (JSON texts), and who
    /// decided (from a `note decided by NAME` just before it), when known.
    Arbiter(String, Vec<String>, Option<String>),
    /// A `# settings:` line: the settings (JSON) that judge the log from here on.
    Settings(String),
}

/// The text of the `note` that names who made the `arbiter` decision recorded
/// right after it (at the same time): `note decided by NAME`. A reader that does
/// not know it keeps it as a note.
pub const DECIDED_BY: &str = "decided by ";

/// A board-level step with the time and line of the record it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub time: LogTime,
    pub line: Option<usize>,
    pub what: Played,
}

/// A `lift` or `place` record that does not fit the board as decoded so far.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unplayable {
    #[error("lift {0}, but the board has no piece there")]
    NoPiece(shakmaty::Square),
    #[error("lift {square} {want}, but the board has {have} there")]
    OtherPiece {
        square: shakmaty::Square,
        want: char,
        have: char,
    },
    #[error("place {square} {piece}, but that piece already stands there")]
    AlreadyThere { square: shakmaty::Square, piece: char },
}

/// The bytes a board sends for a decoded record, given the board and clock as they
/// stand; `None` for records that are not board output (`tx`, `note`).
///
/// `clock` is advanced for `clock` and `press` records.
pub fn board_bytes(
    kind: &RecordKind,
    board: &BoardState,
    clock: &mut ClockModel,
    now_us: u64,
) -> Result<Option<Vec<u8>>, Unplayable> {
    let mut bytes = Vec::new();
    Ok(board_bytes_into(kind, board, clock, now_us, &mut bytes)?.then_some(bytes))
}

/// [`board_bytes`], appended to `bytes`; false for records that are not board
/// output.
pub fn board_bytes_into(
    kind: &RecordKind,
    board: &BoardState,
    clock: &mut ClockModel,
    now_us: u64,
    bytes: &mut Vec<u8>,
) -> Result<bool, Unplayable> {
    match kind {
        RecordKind::Rx(b) => bytes.extend_from_slice(b),
        RecordKind::Tx(_)
        | RecordKind::Note(_)
        | RecordKind::Gap(_)
        | RecordKind::Arbiter { .. }
        | RecordKind::Settings(_) => {
            return Ok(false);
        }
        RecordKind::Board(p) => BoardMessage::BoardDump(p.clone()).encode_into(bytes),
        RecordKind::Lift { .. } | RecordKind::Place { .. } => match field_update(kind, board)? {
            Some(m) => m.encode_into(bytes),
            None => return Ok(false),
        },
        RecordKind::Clock { left, right, running } => {
            clock.set(*left, *right, running.side(), now_us);
            BoardMessage::Clock(clock.status(now_us)).encode_into(bytes)
        }
        RecordKind::Press(side) => {
            // A press is seen as the lever changing side: a board that has not yet
            // reported its clock first says where the lever stood.
            if board.clock().is_none() {
                BoardMessage::Clock(clock.status(now_us)).encode_into(bytes);
            }
            clock.press(*side, now_us);
            BoardMessage::Clock(clock.status(now_us)).encode_into(bytes)
        }
        RecordKind::Button(b) => BoardMessage::ClockAck(ClockAck::button(*b)).encode_into(bytes),
    }
    Ok(true)
}

/// The field update a `lift` or `place` record is, checked against the board
/// as decoded so far; `None` for the other records.
fn field_update(kind: &RecordKind, board: &BoardState) -> Result<Option<BoardMessage>, Unplayable> {
    Ok(Some(match kind {
        RecordKind::Lift { square, piece } => {
            let there = board.piece_at(*square);
            match (there, piece) {
                (PieceCode::Empty, _) => {
                    return Err(Unplayable::NoPiece(*square));
                }
                (PieceCode::Piece(have), Some(want)) if have != *want => {
                    return Err(Unplayable::OtherPiece {
                        square: *square,
                        want: want.char(),
                        have: have.char(),
                    });
                }
                _ => {}
            }
            BoardMessage::FieldUpdate {
                field: Field::from_square(*square),
                piece: PieceCode::Empty,
            }
        }
        RecordKind::Place { square, piece } => {
            if board.piece_at(*square) == PieceCode::Piece(*piece) {
                return Err(Unplayable::AlreadyThere {
                    square: *square,
                    piece: piece.char(),
                });
            }
            BoardMessage::FieldUpdate {
                field: Field::from_square(*square),
                piece: PieceCode::Piece(*piece),
            }
        }
        _ => return Ok(None),
    }))
}

/// Plays records one at a time into board-level steps.
#[derive(Debug)]
pub struct Player {
    file: String,
    decoder: Decoder,
    host: CommandParser,
    board: BoardState,
    clock: ClockModel,
    last_time: LogTime,
    /// The name of a `note decided by NAME` that the next record may take.
    decided_by: Option<String>,
    /// The bytes of the record being played (kept for the next one).
    bytes: Vec<u8>,
}

impl Player {
    /// A player for records of `file` (named in errors).
    pub fn new(file: &str) -> Player {
        let zero = ClockTime::from_millis(0);
        Player {
            file: file.to_string(),
            decoder: Decoder::new(),
            host: CommandParser::new(),
            board: BoardState::new(),
            clock: ClockModel::new(zero, zero, 0),
            last_time: LogTime::default(),
            decided_by: None,
            bytes: Vec::new(),
        }
    }

    /// The board as the steps so far left it.
    pub fn board(&self) -> &BoardState {
        &self.board
    }

    /// Plays one record. `line` is its line in the file, for errors and steps.
    pub fn play(&mut self, record: &Record, line: Option<usize>) -> Result<Vec<Step>, LogError> {
        let mut steps = Vec::new();
        self.play_into(record, line, &mut steps)?;
        Ok(steps)
    }

    /// Plays one record, appending its steps to `steps`.
    pub fn play_into(
        &mut self,
        record: &Record,
        line: Option<usize>,
        steps: &mut Vec<Step>,
    ) -> Result<(), LogError> {
        self.play_with(record, line, |s| steps.push(s))
    }

    /// Plays one record, handing each step to `sink` as it is made (a record
    /// with a problem makes none).
    pub fn play_with(
        &mut self,
        record: &Record,
        line: Option<usize>,
        mut sink: impl FnMut(Step),
    ) -> Result<(), LogError> {
        let now = record.time.micros();
        self.last_time = record.time;
        let step = |what| Step {
            time: record.time,
            line,
            what,
        };
        // Who decided is said by the note just before the decision.
        let decided_by = self.decided_by.take();
        match &record.kind {
            RecordKind::Tx(bytes) => {
                self.host
                    .feed(bytes)
                    .into_iter()
                    .for_each(|h| sink(step(Played::Host(h))));
            }
            RecordKind::Note(text) => {
                self.decided_by = text.strip_prefix(DECIDED_BY).map(|n| n.trim().to_string());
                sink(step(Played::Note(text.clone())))
            }
            RecordKind::Gap(text) => sink(step(Played::Gap(text.clone()))),
            RecordKind::Settings(json) => sink(step(Played::Settings(json.clone()))),
            RecordKind::Arbiter { method, args } => {
                sink(step(Played::Arbiter(method.clone(), args.clone(), decided_by)))
            }
            // A lift or a placement between messages: its field update, whose 5
            // bytes the decoder would decode whole to the same message, is
            // handed on as it is and its bytes counted (the same steps, with
            // neither the bytes made nor read).
            kind @ (RecordKind::Lift { .. } | RecordKind::Place { .. }) if self.decoder.is_idle() => {
                let m = field_update(kind, &self.board).map_err(|problem| LogError {
                    file: self.file.clone(),
                    line: line.unwrap_or(0),
                    problem: problem.to_string(),
                })?;
                if let Some(m) = m {
                    self.decoder.pass_field_update();
                    let d = Decoded::Message(m);
                    decoded(&mut self.board, &mut self.clock, d, now, |p| sink(step(p)));
                }
            }
            kind => {
                let mut bytes = std::mem::take(&mut self.bytes);
                bytes.clear();
                let made = board_bytes_into(kind, &self.board, &mut self.clock, now, &mut bytes);
                if let Err(problem) = made {
                    self.bytes = bytes;
                    return Err(LogError {
                        file: self.file.clone(),
                        line: line.unwrap_or(0),
                        problem: problem.to_string(),
                    });
                }
                let (board, clock) = (&mut self.board, &mut self.clock);
                self.decoder
                    .feed_with(&bytes, |d| decoded(board, clock, d, now, |p| sink(step(p))));
                self.bytes = bytes;
            }
        }
        Ok(())
    }

    /// Ends the log: reports bytes left inside an unfinished message.
    pub fn finish(&mut self) -> Vec<Step> {
        let now = self.last_time.micros();
        let time = self.last_time;
        let mut steps = Vec::new();
        for d in self.decoder.finish() {
            steps.extend(self.decoded(d, now).into_iter().map(|what| Step {
                time,
                line: None,
                what,
            }));
        }
        steps
    }

    /// Plays a whole log.
    pub fn play_log(log: &SensorLog, file: &str) -> Result<Vec<Step>, LogError> {
        let mut player = Player::new(file);
        let mut steps = Vec::new();
        for (i, record) in log.records.iter().enumerate() {
            steps.extend(player.play(record, log.line_of(i))?);
        }
        steps.extend(player.finish());
        Ok(steps)
    }

    fn decoded(&mut self, d: Decoded, now: u64) -> Vec<Played> {
        let mut out = Vec::new();
        decoded(&mut self.board, &mut self.clock, d, now, |p| out.push(p));
        out
    }
}

/// What one decoded message or skipped run means at board level, given to
/// `sink`; `board` and `clock` follow it.
fn decoded(
    board: &mut BoardState,
    clock: &mut ClockModel,
    d: Decoded,
    now: u64,
    mut sink: impl FnMut(Played),
) {
    match d {
        Decoded::Skipped(s) => sink(Played::Skipped(s)),
        Decoded::Message(m) => {
            // A report the clock model agrees with changes nothing: the model
            // keeps the fractions of a second that reports (whole seconds)
            // lose, so that presses charge exactly the time between them.
            if let BoardMessage::Clock(status) = &m {
                if !clock.shows(status, now) {
                    *clock = ClockModel::from_status(status, now);
                }
            }
            board.apply_with(&m, |e| sink(Played::Board(e)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::parse_log;
    use crate::protocol::ClockSide;
    use shakmaty::Square;

    #[test]
    fn decoded_records_go_through_the_decoder() {
        let text = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n0 clock left=0:05:00 right=0:05:00 running=none\n1 press right\n1.2 lift e2 P\n1.6 place e4 P\n3.5 press left\n4 button 4\n";
        let log = parse_log(text, "t.esl").unwrap();
        let steps = Player::play_log(&log, "t.esl").unwrap();
        let events: Vec<&Played> = steps.iter().map(|s| &s.what).collect();
        assert!(matches!(events[0], Played::Board(BoardEvent::Dump(_))));
        assert!(matches!(events[1], Played::Board(BoardEvent::Clock(c)) if !c.running));
        // press right on a stopped clock starts the left side (the lever was already
        // low on the right, so no lever change is seen).
        assert!(
            matches!(events[2], Played::Board(BoardEvent::Clock(c)) if c.running_side() == Some(ClockSide::Left))
        );
        assert!(matches!(
            events[3],
            Played::Board(BoardEvent::Lift {
                square: Square::E2,
                ..
            })
        ));
        assert!(matches!(
            events[4],
            Played::Board(BoardEvent::Place {
                square: Square::E4,
                ..
            })
        ));
        assert_eq!(events[5], &Played::Board(BoardEvent::Press(ClockSide::Left)));
        let Played::Board(BoardEvent::Clock(c)) = events[6] else {
            panic!("{:?}", events[6])
        };
        // 2.5 s ran off the left side; the wire carries whole seconds.
        assert_eq!((c.left.millis(), c.right.millis()), (297_000, 300_000));
        assert_eq!(c.running_side(), Some(ClockSide::Right));
        assert!(matches!(events[7], Played::Board(BoardEvent::Button(_))));
        assert_eq!(steps[4].line, Some(6));
    }

    /// The board-level steps of a log with every record's bytes fed to the
    /// decoder, as the player did before it handed lifts and placements on as
    /// their messages.
    fn by_bytes(log: &SensorLog) -> Vec<Played> {
        let zero = ClockTime::from_millis(0);
        let (mut decoder, mut board) = (Decoder::new(), BoardState::new());
        let mut clock = ClockModel::new(zero, zero, 0);
        let mut out = Vec::new();
        let mut now = 0;
        for r in &log.records {
            now = r.time.micros();
            let mut bytes = Vec::new();
            if board_bytes_into(&r.kind, &board, &mut clock, now, &mut bytes).expect("a playable log") {
                for d in decoder.feed(&bytes) {
                    decoded(&mut board, &mut clock, d, now, |p| out.push(p));
                }
            }
        }
        for d in decoder.finish() {
            decoded(&mut board, &mut clock, d, now, |p| out.push(p));
        }
        out
    }

    /// Lifts and placements handed on as messages give the steps their bytes
    /// give, between messages and inside one (`rx` bytes cut short, garbage):
    /// a hand-made log and every scenario of the repository.
    #[test]
    fn lifts_and_placements_as_messages_are_their_bytes() {
        let made = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n\
                    1 lift e2 P\n1.1 rx 8e 00\n1.2 place e4 P\n1.3 rx 01 02\n1.4 lift e7\n\
                    1.5 rx 8e 00 05 0c\n1.6 place e5 p\n1.7 rx 8e 00 05 0c 07\n1.8 lift g1 N\n\
                    1.9 press left\n2 place f3 N\n2.1 rx 8e 00 05\n";
        let mut logs = vec![("made.esl".to_string(), made.to_string())];
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/scenarios");
        for entry in std::fs::read_dir(&dir).expect("the scenarios") {
            let path = entry.expect("an entry").path();
            if path.extension().is_some_and(|e| e == "esl") {
                let text = std::fs::read_to_string(&path).expect("a scenario");
                logs.push((path.display().to_string(), text));
            }
        }
        assert!(logs.len() > 50, "{} logs", logs.len());
        let mut steps = 0;
        for (file, text) in &logs {
            let log = parse_log(text, file).expect("a log");
            let played: Vec<Played> = Player::play_log(&log, file)
                .expect("a playable log")
                .into_iter()
                .map(|s| s.what)
                .filter(|p| matches!(p, Played::Board(_) | Played::Skipped(_)))
                .collect();
            assert_eq!(played, by_bytes(&log), "{file}");
            steps += played.len();
        }
        assert!(steps > 800, "{steps} steps");
    }

    #[test]
    fn lifts_must_match_the_board() {
        let text = "# eboard-sensor-log 1\n0 board 8/8/8/8/8/8/4P3/8\n1 lift e2 p\n";
        let e = Player::play_log(&parse_log(text, "t.esl").unwrap(), "t.esl").unwrap_err();
        assert_eq!(e.to_string(), "t.esl:3: lift e2 p, but the board has P there");
        let text = "# eboard-sensor-log 1\n0 board 8/8/8/8/8/8/4P3/8\n1 lift e3\n";
        let e = Player::play_log(&parse_log(text, "t.esl").unwrap(), "t.esl").unwrap_err();
        assert_eq!(e.line, 3);
    }

    /// Who decided comes from the note just before the decision, and only from it.
    #[test]
    fn a_decided_by_note_names_the_next_decision_only() {
        let text = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n\
                    1 note decided by alice\n1 arbiter SetResult \"1-0\"\n\
                    2 note decided by bob\n2 note something else\n2 arbiter NewGame \"\"\n\
                    3 arbiter SetResult \"*\"\n";
        let log = parse_log(text, "t.esl").unwrap();
        let steps = Player::play_log(&log, "t.esl").unwrap();
        let by: Vec<Option<&str>> = steps
            .iter()
            .filter_map(|s| match &s.what {
                Played::Arbiter(_, _, by) => Some(by.as_deref()),
                _ => None,
            })
            .collect();
        assert_eq!(by, [Some("alice"), None, None]);
    }
}
