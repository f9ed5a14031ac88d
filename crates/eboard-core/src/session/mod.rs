//! A board's session: the one decision path from an input to the rules core.
//!
//! A [`Session`] holds what a board's inputs go through: the decoder and the board
//! model (inside the log's [`Player`], which turns a record into board-level
//! steps), and the [`Judge`] (the rules [`Core`] with the settings pinned over
//! the recording's), which takes those steps. Every input is a sensor-log
//! record: bytes from the board (`rx`), a gap in the line, a note, a
//! `# settings:` line, an arbiter's call. The daemon writes each input to the
//! board's journal as that record and hands the same record to
//! [`Session::step`]; resume and `replay` hand the journal's records to `step` in
//! the same order, so all three run the same code on the same steps. An
//! arbiter's call, which may be refused, goes through [`Session::decide`], which
//! applies it exactly as `step` applies its record; the daemon journals it once
//! it is accepted, before anything is published or answered.
//!
//! A session for a recording starts from its header ([`Session::from_header`]),
//! for resume and `replay` alike. `replay` on two threads splits a session
//! ([`Session::into_parts`]): the player on the reading thread, the judge on the
//! other. The player's last steps ([`Player::finish`]) go to the judge, which
//! ends through [`Judge::finish_with`], as [`Session::finish`] does.
//!
//! The deadlines of the rules core (a release threshold passing with no input)
//! are not inputs: the daemon meets them with [`Session::advance`] as they fall
//! due, and a session fed the journal meets them when the next record's time
//! passes them, with the same decisions (the core decides by the times of its
//! inputs, not by when it is asked). What the core makes (events, clock
//! commands, finished games, warnings) is taken with the `take_` methods; the
//! core itself is only lent to be read ([`Session::core`]).

mod header;
mod judge;

pub use header::{FromHeader, HeaderError, Start};
pub use judge::Judge;

use crate::board::BoardState;
use crate::log::{LogError, Player, Record, Step};
use crate::protocol::ClockCommand;
use crate::rules::{Core, Decision, Event, Game, Pinned, Refused, Settings};

/// A board's decoder, board model and rules core, taking one input at a time.
#[derive(Debug)]
pub struct Session {
    player: Player,
    judge: Judge,
}

impl Session {
    /// A session for the records of `file` (named in errors), judged by `core`.
    pub fn new(core: Core, file: &str) -> Session {
        Session::pinned(core, file, Pinned::default())
    }

    /// [`Session::new`], with settings that stand over the recording's
    /// `# settings:` lines.
    pub fn pinned(core: Core, file: &str, pinned: Pinned) -> Session {
        Session::from_parts(Player::new(file), Judge::new(core, pinned))
    }

    /// A session of a player and a judge (see [`Session::into_parts`]).
    pub(crate) fn from_parts(player: Player, judge: Judge) -> Session {
        Session { player, judge }
    }

    /// The player (decoder and board model) and the judge (the rules core),
    /// apart: `replay` on two threads plays records on one and judges the
    /// steps on the other.
    pub fn into_parts(self) -> (Player, Judge) {
        (self.player, self.judge)
    }

    /// The rules core, to read.
    pub fn core(&self) -> &Core {
        self.judge.core()
    }

    pub fn into_core(self) -> Core {
        self.judge.into_core()
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
        let judge = &mut self.judge;
        self.player.play_with(record, line, |step| {
            see(&step, judge.core());
            judge.step(&step);
        })
    }

    /// [`Session::step_with`], with nothing to see.
    pub fn step(&mut self, record: &Record, line: Option<usize>) -> Result<(), LogError> {
        self.step_with(record, line, |_, _| {})
    }

    /// The end of the input: bytes left inside an unfinished message are a
    /// line fault; the rules core ends its game as a recording's end does.
    pub fn finish(&mut self) {
        let rest = self.player.finish();
        self.judge.finish_with(rest);
    }

    /// An arbiter's decision, from any door, applied at `t` exactly as `step`
    /// applies the `arbiter` record the journal writes of it
    /// ([`Decision::record`]). Refused, it changes
    /// nothing: it is not to be journaled.
    pub fn decide(&mut self, decision: &Decision, by: Option<String>, t: u64) -> Result<(), Refused> {
        self.judge.decide(decision, by, t)
    }

    /// The rules core's deadlines up to `now_us` met ([`Core::advance`]).
    pub fn advance(&mut self, now_us: u64) {
        self.judge.advance(now_us);
    }

    /// The settings from here on (but for those pinned), as a `# settings:`
    /// line sets them: a resumed board takes the configuration's.
    pub fn set_settings(&mut self, settings: &Settings) {
        self.judge.set_settings(settings);
    }

    /// The events made since the last call.
    pub fn take_events(&mut self) -> Vec<Event> {
        self.judge.take_events()
    }

    /// The commands for the clock made since the last call.
    pub fn take_clock_commands(&mut self) -> Vec<ClockCommand> {
        self.judge.take_clock_commands()
    }

    /// The rules core's warnings since the last call (the core writes no log).
    pub fn take_notes(&mut self) -> Vec<String> {
        self.judge.take_notes()
    }

    /// The events made since the last call, dropped (a caller that reads
    /// only the games).
    pub fn drop_events(&mut self) {
        self.judge.drop_events();
    }

    /// The games that ended since the last call.
    pub fn take_finished(&mut self) -> Vec<Game> {
        self.judge.take_finished()
    }

    /// The game under way, taken (at the end of a recording).
    pub fn take_game(&mut self) -> Option<Game> {
        self.judge.take_game()
    }
}

#[cfg(test)]
mod tests;
