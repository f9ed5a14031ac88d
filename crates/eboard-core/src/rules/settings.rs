//! The settings that judge a recording: everything besides the board's bytes and
//! the arbiter's decisions that changes what the rules core decides. A recording
//! states them (`docs/SENSOR-LOG.md`, the `settings` header field and `# settings:`
//! lines), so that `replay` with no options gives the games that were published;
//! options given on its command line still override ([`Pinned`]).

use serde::{Deserialize, Serialize};

use super::{Config, Core, FlagPolicy, MAX_THRESHOLD_MS, Profile};
use crate::protocol::ClockSide;

pub use crate::log::SETTINGS_KEY;

/// Who keeps the time: the clock runs its own program and the daemon reads it
/// (`report`), or the host keeps the time and sets the clock (`drive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockMode {
    #[default]
    Report,
    Drive,
}

impl ClockMode {
    pub fn name(self) -> &'static str {
        match self {
            ClockMode::Report => "report",
            ClockMode::Drive => "drive",
        }
    }
}

/// The rules core's configuration and which clock side is white's when it is
/// fixed (`[clock] white`; none: learnt from the first press). One JSON object,
/// every field named (readers take a missing one as its default and ignore one
/// they do not know).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub release_ms: u64,
    pub flicker_ms: u64,
    pub irregular_ms: u64,
    pub profile: Profile,
    pub flag: FlagPolicy,
    pub apply_penalties: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub white: Option<ClockSide>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings::new(Config::default(), None)
    }
}

impl Settings {
    pub fn new(cfg: Config, white: Option<ClockSide>) -> Settings {
        Settings {
            release_ms: cfg.release_ms,
            flicker_ms: cfg.flicker_ms,
            irregular_ms: cfg.irregular_ms,
            profile: cfg.profile,
            flag: cfg.flag,
            apply_penalties: cfg.apply_penalties,
            white,
        }
    }

    pub fn config(&self) -> Config {
        Config {
            release_ms: self.release_ms,
            flicker_ms: self.flicker_ms,
            irregular_ms: self.irregular_ms,
            profile: self.profile,
            flag: self.flag,
            apply_penalties: self.apply_penalties,
        }
    }

    /// The settings as their one line of JSON.
    pub fn to_json(&self) -> String {
        // Plain data to a string cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads the JSON of a `settings` header field or line. A threshold over an
    /// hour is refused, as the configuration and the command line refuse it.
    pub fn from_json(text: &str) -> Result<Settings, SettingsError> {
        let s: Settings = serde_json::from_str(text)
            .map_err(|e| SettingsError(format!("settings `{}`: {e}", crate::text::clip_to(text, 60))))?;
        for (name, ms) in [
            ("release_ms", s.release_ms),
            ("flicker_ms", s.flicker_ms),
            ("irregular_ms", s.irregular_ms),
        ] {
            if ms > MAX_THRESHOLD_MS {
                return Err(SettingsError(format!(
                    "settings: {name} {ms} is more than an hour"
                )));
            }
        }
        Ok(s)
    }
}

/// Why a `settings` line or header field does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(pub String);

/// Settings given on `replay`'s command line: each one given stands for the
/// whole log, whatever the log states; the others follow the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pinned {
    pub release_ms: Option<u64>,
    pub flicker_ms: Option<u64>,
    pub irregular_ms: Option<u64>,
    pub profile: Option<Profile>,
    pub flag: Option<FlagPolicy>,
    pub apply_penalties: Option<bool>,
}

impl Pinned {
    /// `s` with the settings given here in place of its own.
    pub fn over(&self, mut s: Settings) -> Settings {
        s.release_ms = self.release_ms.unwrap_or(s.release_ms);
        s.flicker_ms = self.flicker_ms.unwrap_or(s.flicker_ms);
        s.irregular_ms = self.irregular_ms.unwrap_or(s.irregular_ms);
        s.profile = self.profile.unwrap_or(s.profile);
        s.flag = self.flag.unwrap_or(s.flag);
        s.apply_penalties = self.apply_penalties.unwrap_or(s.apply_penalties);
        s
    }
}

impl Core {
    /// A core judging by `s`.
    pub fn with_settings(s: &Settings) -> Core {
        let mut core = Core::new(s.config());
        if let Some(side) = s.white {
            core.set_white_side(side);
        }
        core
    }

    /// The first game starts from `pos` when the board first reports (as
    /// [`Core::with_start`]).
    pub fn start_from(&mut self, pos: shakmaty::Chess, mode: shakmaty::CastlingMode) {
        self.games.start_from(pos, mode);
    }

    /// What the core judges by now.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Judges by `s` from now on (a recording's `# settings:` line: the daemon
    /// restarted with another configuration). A clock side learnt stays learnt
    /// when `s` fixes none.
    pub fn set_settings(&mut self, s: &Settings) {
        let mut cfg = s.config();
        for ms in [&mut cfg.release_ms, &mut cfg.flicker_ms, &mut cfg.irregular_ms] {
            *ms = (*ms).min(MAX_THRESHOLD_MS);
        }
        self.cfg = cfg;
        if let Some(side) = s.white {
            self.set_white_side(side);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_missing_fields_are_defaults() {
        let s = Settings {
            release_ms: 75,
            irregular_ms: 500,
            profile: Profile::Blitz,
            flag: FlagPolicy::End,
            apply_penalties: true,
            white: Some(ClockSide::Right),
            ..Settings::default()
        };
        assert_eq!(Settings::from_json(&s.to_json()), Ok(s));
        let json = Settings::default().to_json();
        assert!(!json.contains("white"), "{json}");
        assert_eq!(
            Settings::from_json(r#"{"release_ms":100,"later_setting":1}"#),
            Ok(Settings {
                release_ms: 100,
                ..Settings::default()
            })
        );
        assert!(Settings::from_json(r#"{"profile":"bullet"}"#).is_err());
        assert!(Settings::from_json(r#"{"irregular_ms":3600001}"#).is_err());
        assert!(Settings::from_json("release_ms=3").is_err());
    }

    #[test]
    fn pinned_settings_win_and_the_rest_follow_the_log() {
        let log = Settings {
            release_ms: 75,
            flicker_ms: 40,
            ..Settings::default()
        };
        let pinned = Pinned {
            release_ms: Some(300),
            profile: Some(Profile::Rapid),
            ..Pinned::default()
        };
        let s = pinned.over(log);
        assert_eq!((s.release_ms, s.flicker_ms, s.profile), (300, 40, Profile::Rapid));
        assert_eq!(Pinned::default().over(log), log);
    }
}
