//! What a board remembers besides its game, interpreted once for the live task
//! and for resume (which reads it back from the journal): its serial number and
//! battery, as the board told them, and the players, tags and pairings of its
//! games, as the arbiter gave them. Live and resume call these same functions,
//! so a journal's call is taken, or refused, exactly as it was live.

use super::super::roster::{GameTags, Roster};
use crate::api::{Decision, Error, check_pairing, check_tags};
use crate::board::BoardInfo;
use crate::rules::Game;

/// The most characters of a player's name.
pub const MAX_NAME_CHARS: usize = 200;

/// What a board told of itself that the task keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Info {
    Serial(String),
    /// Percent, at most 100.
    Battery(u8),
}

/// What the task keeps of what the board told of itself.
pub fn board_info(info: &BoardInfo) -> Option<Info> {
    match info {
        BoardInfo::SerialNumber(s) => Some(Info::Serial(s.clone())),
        BoardInfo::Battery { percent } => Some(Info::Battery((*percent).min(100))),
        _ => None,
    }
}

/// An arbiter's call about the players, tags or pairing of the board's games,
/// checked and applied to `roster` (`tags_now`: the tags games starting now
/// take, from the roster as it is). `Ok(false)`: not such a call. Refused,
/// nothing changes.
pub fn roster_call(
    roster: &mut Roster,
    current: Option<&Game>,
    cmd: &Decision,
    tags_now: impl Fn(&Roster) -> GameTags,
) -> Result<bool, Error> {
    match cmd {
        Decision::SetPlayers(white, black) => {
            for name in [white, black] {
                if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
                    return Err(Error::InvalidArgument(format!(
                        "`{}`: a player's name is one line of at most {MAX_NAME_CHARS} characters",
                        crate::log::clip_to(name, 40)
                    )));
                }
            }
            let default = tags_now(roster);
            roster.set_players(current, white, black, &default);
        }
        Decision::SetTags(tags) => {
            check_tags(tags, false).map_err(Error::InvalidArgument)?;
            let default = tags_now(roster);
            roster.set_tags(current, tags, &default);
        }
        Decision::SetPairing(round, tags) => {
            check_pairing(tags).map_err(Error::InvalidArgument)?;
            roster.set_pairing(*round, tags);
            let default = tags_now(roster);
            roster.retag_unbegun(current, &default);
        }
        _ => return Ok(false),
    }
    Ok(true)
}
