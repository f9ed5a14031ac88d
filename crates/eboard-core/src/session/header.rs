//! A session for a recording, from its header: the one reading of a header's
//! `settings` and `fen` fields, for resume and `replay` alike.

use shakmaty::{CastlingMode, Chess};

use super::Session;
use crate::log::{Header, Player};
use crate::rules::{Core, Pinned, Refused, SETTINGS_KEY, Settings, SettingsError, parse_start};

/// How a session for a recording starts, besides its header.
#[derive(Debug, Clone, Copy)]
pub struct Start<'a> {
    /// The settings a header that states none is judged by.
    pub defaults: Settings,
    /// Settings that stand over the header's and the `# settings:` lines'.
    pub pinned: Pinned,
    /// A start position that stands over the header's `fen`.
    pub given: Option<&'a (Chess, CastlingMode)>,
    /// The rules core keeps its events (else only its games: `replay --format
    /// uci|pgn`).
    pub events: bool,
    /// Moves are written in SAN as well as UCI.
    pub san: bool,
}

impl Default for Start<'_> {
    fn default() -> Self {
        Start {
            defaults: Settings::default(),
            pinned: Pinned::default(),
            given: None,
            events: true,
            san: true,
        }
    }
}

/// A header field that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("header field `{SETTINGS_KEY}`: {0}")]
    Settings(SettingsError),
    #[error("header field `fen`: {0}")]
    Fen(Refused),
}

/// A session made from a header, and what the header said.
#[derive(Debug)]
pub struct FromHeader {
    pub session: Session,
    /// The settings the header states, when it states them and they read.
    pub stated: Option<Settings>,
    /// The fields that do not read, passed over: the defaults stand for them.
    /// `replay` refuses the log for the first; a board's task resumes and
    /// warns (a damaged journal must not stop a board).
    pub passed_over: Vec<HeaderError>,
}

impl Session {
    /// A session for the records of `file` that follow `header`: judged by the
    /// settings the header states (else `start.defaults`) but for those
    /// pinned, from the start position given (else the header's `fen`, else
    /// the standard one).
    pub fn from_header(header: &Header, file: &str, start: &Start) -> FromHeader {
        let mut passed_over = Vec::new();
        let stated = match header.get(SETTINGS_KEY).map(Settings::from_json) {
            Some(Ok(s)) => Some(s),
            Some(Err(e)) => {
                passed_over.push(HeaderError::Settings(e));
                None
            }
            None => None,
        };
        let position = match (start.given, header.get("fen")) {
            (Some(given), _) => Some(given.clone()),
            (None, Some(fen)) => parse_start(fen)
                .map_err(|e| passed_over.push(HeaderError::Fen(e)))
                .ok(),
            (None, None) => None,
        };
        let mut core = Core::with_settings(&start.pinned.over(stated.unwrap_or(start.defaults)));
        if let Some((pos, mode)) = position {
            core.start_from(pos, mode);
        }
        core.set_events(start.events);
        core.set_san(start.san);
        FromHeader {
            session: Session::from_parts(Player::new(file), super::Judge::new(core, start.pinned)),
            stated,
            passed_over,
        }
    }
}
