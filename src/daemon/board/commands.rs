//! Arbiter calls: checked, applied, journaled as `arbiter` records.

use super::BoardTask;
use crate::api::{Asker, Decision, Error};
use crate::log::{RecordKind, clip_to, escaped};
use crate::rules::Refused;

impl BoardTask {
    /// An arbiter's call. Accepted, it is part of the record: an `arbiter` record
    /// in the recording, which resume and `replay` apply as it was live (the
    /// session applies the call exactly as it applies that record). Refused, it
    /// is logged briefly, changes nothing and is not journaled.
    pub(super) async fn command(&mut self, cmd: Decision, who: Asker) -> Result<(), Error> {
        // The decision is journaled at the time it was applied: resume and
        // `replay` apply it at that time too.
        let t = self.time.core_now();
        let by = who.by.clone();
        let r = match self.by_the_book(&cmd) {
            (Some(why), _) => Err(Error::GameUnderWay(why)),
            (None, Some(what)) if !who.force && !unconfirmed_door(&cmd, &who) => Err(Error::NeedsForce(what)),
            _ => self.apply(&cmd, t, Some(&who)).await,
        };
        match &r {
            Ok(()) => {
                let by = by.map(|b| format!(" (by {b})")).unwrap_or_default();
                tracing::info!(
                    board = %self.setup.id,
                    "arbiter: {}{}",
                    escaped(&clip_to(&cmd_text(&cmd), 200)),
                    escaped(&by)
                );
            }
            Err(e) => {
                let method = cmd.method();
                tracing::warn!(
                    board = %self.setup.id,
                    "{method} refused: {}",
                    escaped(&clip_to(&e.to_string(), 200))
                );
            }
        }
        r
    }

    /// What the rule book (`rules::book`) says of `cmd` on the game as
    /// published now: why it is refused, and what it would change that the
    /// arbiter must confirm.
    fn by_the_book(&self, cmd: &Decision) -> (Option<String>, Option<String>) {
        let snap = self.snapshot();
        let next = self.new_game_tags().round.to_string();
        let game = crate::api::force::at_hand(&snap, next == snap.round);
        (
            crate::api::force::refused(cmd, &game),
            crate::api::force::needs_force(cmd, &game),
        )
    }

    /// A decision through the session at `t`, as its `arbiter` record is
    /// applied by resume and `replay`; accepted, it is journaled: `note` first
    /// when given, the door and time of day when asked through one (`decided
    /// via D-Bus at ...`), who decided (when known) in a note, then the record
    /// (`Decision::record`, the one writer of it). Refused, nothing changes
    /// and nothing is journaled.
    pub(super) fn decide(
        &mut self,
        t: u64,
        d: &Decision,
        who: Option<&Asker>,
        note: Option<String>,
    ) -> Result<(), Refused> {
        let record = d.record();
        let by = who.and_then(|w| w.by.clone());
        self.session.decide(d, by.clone(), t)?;
        if let Some(note) = note {
            self.record(t, RecordKind::Note(note));
        }
        if let Some(w) = who {
            let now = crate::daemon::unix_ms_now();
            self.history.decided(w.door, now, t);
            let via = format!(
                "{}{} at {}",
                super::history::DECIDED_VIA,
                w.door.name(),
                crate::daemon::rfc3339_now()
            );
            self.record(t, RecordKind::Note(via));
        }
        if let Some(by) = &by {
            self.record(t, RecordKind::Note(format!("{}{by}", crate::log::DECIDED_BY)));
        }
        self.record(t, record);
        Ok(())
    }

    pub(super) async fn apply(&mut self, cmd: &Decision, t: u64, who: Option<&Asker>) -> Result<(), Error> {
        if cmd.is_rules() {
            if cmd.is_clock() {
                self.connected_or()?;
            }
            return self.decide(t, cmd, who, None).map_err(Error::from);
        }
        self.apply_call(cmd).await?;
        // A call the rules core does not take (a text on the clock) may have
        // written to the board meanwhile: it is journaled after that.
        let t = self.time.core_now();
        self.decide(t, cmd, who, None).map_err(Error::from)
    }

    /// What a call the rules core does not take does: the players and tags of
    /// the games, a text on the clock.
    async fn apply_call(&mut self, cmd: &Decision) -> Result<(), Error> {
        match cmd.clone() {
            // Decisions: applied by the session.
            Decision::NewGame(_)
            | Decision::SetPosition(_)
            | Decision::Reinstate(_)
            | Decision::SetResult(..)
            | Decision::SetTimeControl { .. }
            | Decision::SetClock(..)
            | Decision::AddTime(..)
            | Decision::Undo { .. } => Ok(()),
            call @ (Decision::SetPlayers(..) | Decision::SetTags(_) | Decision::SetPairing(..)) => {
                let (setup, format) = (&self.setup, self.setup.round_format);
                super::remember::roster_call(&mut self.roster, self.session.core().game(), &call, |r| {
                    r.for_new_games(super::board_tags(setup), format)
                })?;
                if let Decision::SetPairing(..) = call {
                    let default = self.new_game_tags();
                    tracing::info!(
                        "{}: games that start from now on are round {}, board {} ({} - {})",
                        self.setup.id,
                        default.round,
                        default.board,
                        escaped(&default.tags.white),
                        escaped(&default.tags.black)
                    );
                }
                Ok(())
            }
            Decision::ShowText(text, seconds) => {
                if !text.is_ascii() || text.len() > 8 {
                    return Err(Error::InvalidArgument(format!(
                        "`{}`: the clock shows up to 8 ASCII characters",
                        crate::log::clip_to(&text, 20)
                    )));
                }
                self.connected_or()?;
                self.show_text(&text, Some(seconds)).await;
                Ok(())
            }
            Decision::SetLichessRound(..) => Err(Error::InvalidArgument(crate::rules::NOT_A_BOARDS.into())),
            // No door makes one (`Decision::from_call`).
            Decision::Unknown { method, .. } => Err(Error::InvalidArgument(format!(
                "no method {}",
                clip_to(&method, 40)
            ))),
        }
    }

    pub(super) fn connected_or(&self) -> Result<(), Error> {
        if self.connected {
            Ok(())
        } else {
            Err(Error::NotConnected(format!(
                "{} is not connected",
                self.setup.device.display()
            )))
        }
    }
}

/// A call as the log shows it: `Method arg arg` (its record's words).
fn cmd_text(cmd: &Decision) -> String {
    let args: Vec<String> = cmd.args().iter().map(ToString::to_string).collect();
    format!("{} {}", cmd.method(), args.join(" "))
}

/// The deliberate defect `break:door` (debug builds' fault hook): a new game
/// through D-Bus is taken unconfirmed; the console and MQTT still refuse it.
fn unconfirmed_door(cmd: &Decision, who: &crate::api::Asker) -> bool {
    crate::daemon::fault::broken("door")
        && matches!(who.door, crate::api::history::Door::Bus)
        && matches!(cmd, Decision::NewGame(..))
}
