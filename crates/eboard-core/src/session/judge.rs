//! The judging half of a session: the rules core, taking board-level steps.

use crate::log::{Played, Step};
use crate::protocol::ClockCommand;
use crate::rules::{Core, Decision, Event, Game, Pinned, Refused, Settings};

/// The rules core with the settings pinned over a recording's `# settings:`
/// lines: what takes the steps a session's player makes of its records.
#[derive(Debug)]
pub struct Judge {
    core: Core,
    /// Settings given on the command line standing over the recording's own.
    pinned: Pinned,
}

impl Judge {
    pub fn new(core: Core, pinned: Pinned) -> Judge {
        Judge { core, pinned }
    }

    /// The rules core, to read.
    pub fn core(&self) -> &Core {
        &self.core
    }

    pub fn into_core(self) -> Core {
        self.core
    }

    /// One board-level step into the rules core: board events as they are, a
    /// `gap` record as a gap in the line, bytes the decoder had to skip as a
    /// line fault, an `arbiter` record as the decision it holds
    /// ([`Decision::from_record_texts`]; one that does not read or apply, in a
    /// log written by hand, changes nothing), a `# settings:`
    /// line as the settings from there on (but for those pinned).
    pub fn step(&mut self, step: &Step) {
        let t = step.time.micros();
        match &step.what {
            Played::Board(ev) => self.core.input(ev, t),
            Played::Gap(_) => self.core.gap(t),
            Played::Skipped(_) => self.core.line_fault(t),
            Played::Arbiter(method, args, by) => {
                if let Ok(d) = Decision::from_record_texts(method, args) {
                    let _ = self.decide(&d, by.clone(), t);
                }
            }
            // Checked to be a JSON object when read; settings the rules core
            // cannot take (a threshold over an hour) change nothing.
            Played::Settings(json) => {
                if let Ok(s) = Settings::from_json(json) {
                    self.set_settings(&s);
                }
            }
            Played::Host(_) | Played::Note(_) => {}
        }
    }

    /// The end of the input: the player's last steps (bytes left inside an
    /// unfinished message, a line fault), then the rules core ends its game as
    /// a recording's end does. [`super::Session::finish`] and `replay` on two
    /// threads both end here.
    pub fn finish_with(&mut self, rest: impl IntoIterator<Item = Step>) {
        for step in rest {
            self.step(&step);
        }
        self.core.finish();
    }

    /// An arbiter's decision applied at `t`, then reported as the `arbiter`
    /// event, the decision itself. Refused, it changes nothing. Calls the
    /// rules core does not take (the players, a text on the clock, a newer
    /// daemon's) are events only.
    pub fn decide(&mut self, d: &Decision, by: Option<String>, t: u64) -> Result<(), Refused> {
        self.core.arbiter(d, t)?;
        self.core.arbiter_call(d, by, t);
        Ok(())
    }

    /// The rules core's deadlines up to `now_us` met ([`Core::advance`]).
    pub fn advance(&mut self, now_us: u64) {
        self.core.advance(now_us);
    }

    /// The settings from here on, but for those pinned.
    pub fn set_settings(&mut self, settings: &Settings) {
        self.core.set_settings(&self.pinned.over(*settings));
    }

    /// The events made since the last call.
    pub fn take_events(&mut self) -> Vec<Event> {
        self.core.take_events()
    }

    /// The events made since the last call, dropped.
    pub fn drop_events(&mut self) {
        drop(self.core.drain_events());
    }

    /// The commands for the clock made since the last call.
    pub fn take_clock_commands(&mut self) -> Vec<ClockCommand> {
        self.core.take_clock_commands()
    }

    /// The rules core's warnings since the last call.
    pub fn take_notes(&mut self) -> Vec<String> {
        self.core.take_notes()
    }

    /// The games that ended since the last call.
    pub fn take_finished(&mut self) -> Vec<Game> {
        self.core.take_finished()
    }

    /// The game under way, taken (at the end of a recording).
    pub fn take_game(&mut self) -> Option<Game> {
        self.core.take_game()
    }
}
