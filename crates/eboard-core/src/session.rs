//! A board's session: the one decision path from an input to the rules core.
//!
//! A [`Session`] holds what a board's inputs go through: the decoder and the board
//! model (inside the log's [`Player`], which turns a record into board-level
//! steps), and the rules [`Core`]. Every input is a sensor-log record: bytes from
//! the board (`rx`), a gap in the line, a note, a `# settings:` line, an
//! arbiter's call. The daemon writes each input to the board's journal as that
//! record and hands the same record to [`Session::step`]; resume and `replay`
//! hand the journal's records to `step` in the same order, so all three run the
//! same code on the same steps. An arbiter's call, which may be refused, goes
//! through [`Session::decide`], which applies it exactly as `step` applies its
//! record; the daemon journals it once it is accepted, before anything is
//! published or answered.
//!
//! The deadlines of the rules core (a release threshold passing with no input)
//! are not inputs: the daemon meets them with [`Core::advance`] as they fall due,
//! and a session fed the journal meets them when the next record's time passes
//! them, with the same decisions (the core decides by the times of its inputs,
//! not by when it is asked).

use serde_json::Value;

use crate::board::BoardState;
use crate::log::{LogError, Played, Player, Record, Step};
use crate::rules::{Core, Decision, Pinned, Refused, Settings};

/// A board's decoder, board model and rules core, taking one input at a time.
#[derive(Debug)]
pub struct Session {
    player: Player,
    core: Core,
    /// Settings given on the command line standing over the recording's own.
    pinned: Pinned,
}

impl Session {
    /// A session for the records of `file` (named in errors), judged by `core`.
    pub fn new(core: Core, file: &str) -> Session {
        Session::pinned(core, file, Pinned::default())
    }

    /// [`Session::new`], with settings that stand over the recording's
    /// `# settings:` lines.
    pub fn pinned(core: Core, file: &str, pinned: Pinned) -> Session {
        Session {
            player: Player::new(file),
            core,
            pinned,
        }
    }

    pub fn core(&self) -> &Core {
        &self.core
    }

    /// The rules core, for what is not an input: its deadlines, its settings
    /// once a recording is resumed, taking its events and clock commands.
    pub fn core_mut(&mut self) -> &mut Core {
        &mut self.core
    }

    pub fn into_core(self) -> Core {
        self.core
    }

    /// The board as the inputs so far left it.
    pub fn board(&self) -> &BoardState {
        self.player.board()
    }

    /// One input, as a record. Each board-level step it makes is shown to
    /// `see` (with the rules core as it stands before the step) and then
    /// applied. A record that does not fit the board (a `lift` where the board
    /// has no piece) changes nothing and is the error.
    pub fn step_with(
        &mut self,
        record: &Record,
        line: Option<usize>,
        mut see: impl FnMut(&Step, &Core),
    ) -> Result<(), LogError> {
        let (core, pinned) = (&mut self.core, &self.pinned);
        self.player.play_with(record, line, |step| {
            see(&step, core);
            apply(core, &step, pinned);
        })
    }

    /// [`Session::step_with`], with nothing to see.
    pub fn step(&mut self, record: &Record, line: Option<usize>) -> Result<(), LogError> {
        self.step_with(record, line, |_, _| {})
    }

    /// The end of the input: bytes left inside an unfinished message are a
    /// line fault; the rules core ends its game as a recording's end does.
    pub fn finish(&mut self) {
        for step in self.player.finish() {
            apply(&mut self.core, &step, &self.pinned);
        }
        self.core.finish();
    }

    /// An arbiter's decision, from any door, applied at `t` exactly as `step`
    /// applies the `arbiter` record the journal writes of it
    /// ([`Decision::method`], [`Decision::args`]). Refused, it changes
    /// nothing: it is not to be journaled.
    pub fn decide(&mut self, decision: &Decision, by: Option<String>, t: u64) -> Result<(), Refused> {
        apply_decision(&mut self.core, decision, by, t)
    }
}

/// One board-level step into the rules core: board events as they are, a `gap`
/// record as a gap in the line, bytes the decoder had to skip as a line fault,
/// an `arbiter` record as the decision it holds (one that does not apply, in a
/// log written by hand, changes nothing), a `# settings:` line as the settings
/// from there on (but for those `pinned`). `replay` on two threads plays the
/// records on one and applies their steps with this on the other.
pub fn apply(core: &mut Core, step: &Step, pinned: &Pinned) {
    let t = step.time.micros();
    match &step.what {
        Played::Board(ev) => core.input(ev, t),
        Played::Gap(_) => core.gap(t),
        Played::Skipped(_) => core.line_fault(t),
        Played::Arbiter(method, args, by) => {
            if let Some(values) = arbiter_values(args) {
                let _ = arbiter_record(core, method, values, by.clone(), t);
            }
        }
        // Checked to be a JSON object when read; settings the rules core cannot
        // take (a threshold over an hour) change nothing.
        Played::Settings(json) => {
            if let Ok(s) = Settings::from_json(json) {
                core.set_settings(&pinned.over(s));
            }
        }
        Played::Host(_) | Played::Note(_) => {}
    }
}

/// An `arbiter` record applied: the decision it holds (if it is one), then the
/// call itself as an `arbiter` event. Calls the rules core does not take (the
/// players, a text on the clock) are events only.
fn arbiter_record(
    core: &mut Core,
    method: &str,
    args: Vec<Value>,
    by: Option<String>,
    t: u64,
) -> Result<(), Refused> {
    match Decision::from_record(method, &args)? {
        Some(d) => apply_decision(core, &d, by, t),
        // A newer daemon's call: the record, as the event it is.
        None => {
            core.arbiter_call(method, args, by, t);
            Ok(())
        }
    }
}

/// A decision applied, then reported as the `arbiter` event its record gives.
fn apply_decision(core: &mut Core, d: &Decision, by: Option<String>, t: u64) -> Result<(), Refused> {
    core.arbiter(d, t)?;
    core.arbiter_call(d.method(), d.args(), by, t);
    Ok(())
}

/// An `arbiter` record's arguments as JSON values; `None` when one is not JSON
/// (a hand-written log: the call does not apply).
pub fn arbiter_values(args: &[String]) -> Option<Vec<Value>> {
    args.iter().map(|a| serde_json::from_str(a).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogTime, RecordKind, parse_log};

    fn record(t: u64, kind: RecordKind) -> Record {
        Record {
            time: LogTime::from_micros(t),
            kind,
        }
    }

    const GAME: &str = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n\
                        1 lift e2 P\n1.2 place e4 P\n3 lift e7 p\n3.2 place e5 p\n5 lift g1 N\n5.3 place f3 N\n";

    /// Records fed one at a time give what the same log gives as a whole, and
    /// the live path's bytes (an `rx` record cut anywhere) give the same moves.
    #[test]
    fn a_log_as_records_and_as_bytes_gives_the_same_moves() {
        let log = parse_log(GAME, "t.esl").unwrap();
        let mut whole = Session::new(Core::new(crate::rules::Config::default()), "t.esl");
        for (i, r) in log.records.iter().enumerate() {
            whole.step(r, log.line_of(i)).unwrap();
        }
        whole.finish();
        let sans = |s: &Session| -> Vec<String> {
            s.core()
                .game()
                .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
                .unwrap_or_default()
        };
        assert_eq!(sans(&whole), ["e4", "e5", "Nf3"]);

        // The same board output as the bytes a board sends, in pieces of 3.
        let mut made = Vec::new();
        let mut player = Player::new("t.esl");
        let mut clock = crate::clock::ClockModel::new(
            crate::protocol::ClockTime::from_millis(0),
            crate::protocol::ClockTime::from_millis(0),
            0,
        );
        for r in &log.records {
            let bytes = crate::log::play::board_bytes(&r.kind, player.board(), &mut clock, r.time.micros())
                .unwrap()
                .unwrap();
            for chunk in bytes.chunks(3) {
                made.push(record(r.time.micros(), RecordKind::Rx(chunk.to_vec())));
            }
            player.play(r, None).unwrap();
        }
        let mut live = Session::new(Core::new(crate::rules::Config::default()), "live");
        let mut seen = 0;
        for r in &made {
            live.step_with(r, None, |_, _| seen += 1).unwrap();
        }
        live.finish();
        assert_eq!(sans(&live), sans(&whole));
        assert_eq!(seen, 7, "a dump and six field updates");
    }

    /// A call refused by `decide` changes nothing; an accepted one is the
    /// event its record gives when stepped.
    #[test]
    fn a_decision_is_applied_as_its_record_is() {
        let log = parse_log(GAME, "t.esl").unwrap();
        let mut live = Session::new(Core::new(crate::rules::Config::default()), "t.esl");
        let mut replayed = Session::new(Core::new(crate::rules::Config::default()), "t.esl");
        for r in &log.records {
            live.step(r, None).unwrap();
            replayed.step(r, None).unwrap();
        }
        let refused = live.decide(&Decision::Reinstate(9), None, 6_000_000);
        assert!(refused.is_err(), "{refused:?}");
        let bad = Decision::from_record("SetClock", &[Value::from("x")]);
        assert!(matches!(bad, Err(Refused::InvalidArgument(_))), "{bad:?}");
        live.decide(&Decision::Reinstate(1), Some("ana".into()), 6_000_000)
            .unwrap();
        replayed
            .step(
                &record(6_000_000, RecordKind::Note("decided by ana".into())),
                None,
            )
            .unwrap();
        replayed
            .step(
                &record(
                    6_000_000,
                    RecordKind::Arbiter {
                        method: "Reinstate".into(),
                        args: vec!["1".into()],
                    },
                ),
                None,
            )
            .unwrap();
        let (a, b) = (live.core_mut().take_events(), replayed.core_mut().take_events());
        assert_eq!(a, b);
        assert!(
            a.iter().any(
                |e| matches!(&e.kind, crate::rules::EventKind::Arbiter { method, by, .. }
                if method == "Reinstate" && by.as_deref() == Some("ana"))
            ),
            "{a:?}"
        );
        assert_eq!(live.core().game().map(|g| g.moves.len()), Some(1));
    }
}

/// Undo through the session, as the daemon, resume and `replay` apply it
/// (`rules::undo`).
#[cfg(test)]
mod undo_tests {
    use serde_json::Value;

    use crate::log::{Record, RecordKind, parse_log};
    use crate::rules::{Config, Core, EventKind, GameResult, Refused};
    use crate::session::Session;

    const GAME: &str = "# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n\
                        1 lift e2 P\n1.2 place e4 P\n3 lift e7 p\n3.2 place e5 p\n5 lift g1 N\n5.3 place f3 N\n";

    fn played() -> Session {
        let log = parse_log(GAME, "t.esl").unwrap();
        let mut s = Session::new(Core::new(Config::default()), "t.esl");
        for r in &log.records {
            s.step(r, None).unwrap();
        }
        s.core_mut().take_events();
        s
    }

    /// A call as a door makes it: its method and JSON arguments read into a
    /// decision (refused there when they do not fit), then decided.
    fn call(s: &mut Session, method: &str, args: Vec<Value>, t_s: u64) -> Result<(), Refused> {
        let d = crate::rules::Decision::from_record(method, &args)?
            .ok_or_else(|| Refused::InvalidArgument(format!("no method {method}")))?;
        s.decide(&d, None, t_s * 1_000_000)
    }

    fn state(s: &Session) -> (usize, Option<GameResult>) {
        let g = s.core().game().unwrap();
        (g.moves.len(), g.result.map(|(r, _)| r))
    }

    #[test]
    fn an_undone_take_back_gives_the_moves_and_the_result_back_and_an_undo_undone_redoes_it() {
        let mut s = played();
        call(&mut s, "SetResult", vec!["1-0".into()], 6).unwrap();
        call(&mut s, "Reinstate", vec![1.into()], 7).unwrap();
        assert_eq!(state(&s), (1, None));
        s.core_mut().take_events();
        call(&mut s, "Undo", vec![], 8).unwrap();
        assert_eq!(state(&s), (3, Some(GameResult::WhiteWins)));
        let events: Vec<EventKind> = s.core_mut().take_events().into_iter().map(|e| e.kind).collect();
        let moves: Vec<(u32, &str)> = events
            .iter()
            .filter_map(|e| match e {
                EventKind::Move { ply, san, .. } => Some((*ply, san.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(moves, [(2, "e5"), (3, "Nf3")], "{events:?}");
        assert!(
            events.iter().any(|e| matches!(e, EventKind::GameEnd { .. })),
            "{events:?}"
        );
        // Undone again: the take-back stands again.
        call(&mut s, "Undo", vec![], 9).unwrap();
        assert_eq!(state(&s), (1, None));
        let events: Vec<EventKind> = s.core_mut().take_events().into_iter().map(|e| e.kind).collect();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventKind::Takeback { to_ply: 1, .. })),
            "{events:?}"
        );
    }

    #[test]
    fn a_result_undone_leaves_the_game_going_on() {
        let mut s = played();
        call(
            &mut s,
            "SetResult",
            vec!["1/2-1/2".into(), "adjudication".into()],
            6,
        )
        .unwrap();
        call(&mut s, "Undo", vec![], 7).unwrap();
        assert_eq!(state(&s), (3, None));
        assert_eq!(s.core().game().unwrap().termination_words, None);
    }

    #[test]
    fn plies_recorded_since_the_decision_are_dropped_only_with_force() {
        let log = parse_log(GAME, "t.esl").unwrap();
        let mut s = Session::new(Core::new(Config::default()), "t.esl");
        // e4 e5 played, then the arbiter takes the game back to e4; e5 is
        // played again, then Nf3.
        for r in &log.records[..5] {
            s.step(r, None).unwrap();
        }
        call(&mut s, "Reinstate", vec![1.into()], 4).unwrap();
        let again = "# eboard-sensor-log 1\n4.5 lift e5 p\n4.6 place e7 p\n4.8 lift e7 p\n4.9 place e5 p\n5 lift g1 N\n5.3 place f3 N\n";
        let more = parse_log(again, "t.esl").unwrap();
        for r in &more.records {
            s.step(r, None).unwrap();
        }
        s.core_mut().advance(6_000_000);
        assert_eq!(state(&s), (3, None));
        match call(&mut s, "Undo", vec![], 7) {
            Err(Refused::GameUnderWay(m)) => assert!(m.contains("ply 3 was") && m.contains("force"), "{m}"),
            other => panic!("not refused: {other:?}"),
        }
        assert_eq!(state(&s), (3, None), "a refused undo changes nothing");
        call(&mut s, "Undo", vec![true.into()], 8).unwrap();
        assert_eq!(state(&s), (2, None));
    }

    #[test]
    fn what_is_not_taken_back_says_what_to_do_instead() {
        let mut s = played();
        match call(&mut s, "Undo", vec![], 6) {
            Err(Refused::NotUndone(m)) => assert!(m.contains("no decision"), "{m}"),
            other => panic!("{other:?}"),
        }
        call(&mut s, "NewGame", vec!["".into()], 7).unwrap();
        match call(&mut s, "Undo", vec![], 8) {
            Err(Refused::NotUndone(m)) => assert!(m.contains("ctl position"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(call(&mut s, "Undo", vec!["yes".into()], 9).is_err());
    }

    /// Resume and `replay` keep the same point to go back to: the journal's
    /// records give the state the calls gave.
    #[test]
    fn an_undo_journaled_is_applied_as_it_was_live() {
        let mut live = played();
        let mut replayed = played();
        let calls: [(&str, Vec<Value>); 3] = [
            ("SetResult", vec!["0-1".into()]),
            ("Reinstate", vec![2.into()]),
            ("Undo", vec![]),
        ];
        for (i, (method, args)) in calls.into_iter().enumerate() {
            let t = (6 + i as u64) * 1_000_000;
            let d = crate::rules::Decision::from_record(method, &args)
                .unwrap()
                .unwrap();
            live.decide(&d, None, t).unwrap();
            let record = Record {
                time: crate::log::LogTime::from_micros(t),
                kind: RecordKind::Arbiter {
                    method: method.into(),
                    args: args.iter().map(ToString::to_string).collect(),
                },
            };
            replayed.step(&record, None).unwrap();
        }
        assert_eq!(live.core_mut().take_events(), replayed.core_mut().take_events());
        assert_eq!(state(&live), (3, Some(GameResult::BlackWins)));
        assert_eq!(state(&replayed), state(&live));
    }
}

/// The clock's figures a session shows, as the rules core keeps them
/// (`rules::clock`): issue 48's stale ones.
#[cfg(test)]
mod clock_figures {
    /// The decision a method and its JSON arguments hold.
    fn rec(method: &str, args: Vec<serde_json::Value>) -> crate::rules::Decision {
        crate::rules::Decision::from_record(method, &args)
            .unwrap()
            .unwrap()
    }

    use serde_json::Value;

    use crate::log::{LogTime, Record, RecordKind, parse_log};
    use crate::protocol::{BoardMessage, ClockAck, ClockSide, clock_code};
    use crate::rules::{Config, Core};
    use crate::session::Session;

    /// A session of the standard start, then `more` (sensor-log lines), white on
    /// the clock's left.
    fn board(more: &str) -> Session {
        let text =
            format!("# eboard-sensor-log 1\n0 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\n{more}");
        let log = parse_log(&text, "t.esl").unwrap();
        let mut s = Session::new(Core::new(Config::default()), "t.esl");
        s.core_mut().set_white_side(ClockSide::Left);
        for r in &log.records {
            s.step(r, None).unwrap();
        }
        s
    }

    fn step(s: &mut Session, t_us: u64, kind: RecordKind) {
        let r = Record {
            time: LogTime::from_micros(t_us),
            kind,
        };
        s.step(&r, None).unwrap();
    }

    /// A board without a clock whose first game's clock the daemon drove (an
    /// arbiter's time control), then a time control the clock runs itself:
    /// neither that game nor the next shows the host's times any more.
    #[test]
    fn a_new_game_on_a_board_without_a_clock_shows_no_clock() {
        let mut s = board("");
        assert_eq!(s.core().clock(), None);
        s.decide(
            &rec("SetTimeControl", vec![Value::from("300+0")]),
            None,
            1_000_000,
        )
        .unwrap();
        assert_eq!(s.core().clock(), Some((300_000, 300_000, None)));
        s.decide(
            &rec("AddTime", vec!["white".into(), Value::from(60)]),
            None,
            2_000_000,
        )
        .unwrap();
        assert_eq!(s.core().clock(), Some((360_000, 300_000, None)));
        s.decide(&rec("NewGame", vec!["".into()]), None, 3_000_000)
            .unwrap();
        assert_eq!(
            s.core().clock(),
            Some((300_000, 300_000, None)),
            "a new game, driven"
        );
        s.decide(
            &rec("SetTimeControl", vec!["600+0".into(), "report".into()]),
            None,
            4_000_000,
        )
        .unwrap();
        assert_eq!(
            s.core().clock(),
            None,
            "the clock runs its own program: there is none"
        );
        s.decide(&rec("NewGame", vec!["".into()]), None, 5_000_000)
            .unwrap();
        assert_eq!(s.core().clock(), None, "the last game's clocks on a new game");
    }

    /// A stopped clock at 0:00:00 on white's side: time added by the arbiter
    /// is what it shows once it acknowledges the set, and the report after it
    /// is believed (it was held as one that contradicts the one before, and a
    /// stopped clock sends no other: the flag stood).
    #[test]
    fn time_added_to_a_stopped_clock_is_shown_once_acknowledged() {
        let mut s = board("0 clock left=0:00:00 right=0:05:00 running=none\n");
        assert_eq!(s.core().clock(), Some((0, 300_000, None)));
        s.decide(
            &rec("AddTime", vec!["white".into(), Value::from(120)]),
            None,
            2_000_000,
        )
        .unwrap();
        assert_eq!(s.core_mut().take_clock_commands().len(), 1);
        let ack = BoardMessage::ClockAck(ClockAck::ok(clock_code::SET_AND_RUN)).encode();
        step(&mut s, 2_100_000, RecordKind::Rx(ack));
        assert_eq!(s.core().clock(), Some((120_000, 300_000, None)));
        let report = parse_log(
            "# eboard-sensor-log 1\n2.2 clock left=0:02:00 right=0:05:00 running=none\n",
            "t.esl",
        )
        .unwrap();
        s.step(&report.records[0], None).unwrap();
        assert_eq!(s.core().clock(), Some((120_000, 300_000, None)));
        // Running again on white's side, the reports that follow are taken.
        s.decide(
            &rec("SetClock", vec![Value::from(100_000), Value::from(300_000)]),
            None,
            3_000_000,
        )
        .unwrap();
        let ack = BoardMessage::ClockAck(ClockAck::ok(clock_code::SET_AND_RUN)).encode();
        step(&mut s, 3_100_000, RecordKind::Rx(ack));
        assert_eq!(s.core().clock(), Some((100_000, 300_000, None)));
    }
}
