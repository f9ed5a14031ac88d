//! The round and pairings `ctl pairings` set over the configuration's, and which
//! of the two stands when the configuration is read again.
//!
//! The latest word wins. What `ctl` set stands until the configuration file's
//! own round or pairings change: a reload (SIGHUP) that leaves them as they were
//! when `ctl` spoke keeps `ctl`'s, and one that changes them replaces `ctl`'s;
//! the log says which, in words. It is kept in `<state>/ctl-round.json`, so that
//! a restart does not bring the file's round back either.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::DaemonConfig;

/// Tags by board number.
pub type BoardPairings = BTreeMap<u32, BTreeMap<String, String>>;

/// The configuration's pairings by board number.
pub fn pairings_of(config: &DaemonConfig) -> BoardPairings {
    config
        .pairing_list
        .iter()
        .flat_map(|p| &p.boards)
        .map(|p| (p.board, p.tags.clone()))
        .collect()
}

/// What `ctl pairings` set, and what the file said when it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetByCtl {
    /// The round `ctl` gave; `None` when its calls kept the file's.
    pub round: Option<u32>,
    /// Every board's pairing after `ctl`'s calls (the file's, with the boards
    /// `ctl` named replaced).
    pub pairings: BoardPairings,
    /// The file's round when `ctl` first spoke.
    pub file_round: u32,
    /// The file's pairings then.
    pub file_pairings: BoardPairings,
    /// The command that spoke last (`ctl pairings`, `ctl round`), for the words.
    #[serde(default = "pairings_command")]
    pub via: String,
}

fn pairings_command() -> String {
    "ctl pairings".into()
}

/// What a reload does with what `ctl` set: kept or replaced, and the words for
/// the log.
#[derive(Debug, Clone, PartialEq)]
pub enum AtReload {
    Kept(String),
    Replaced(String),
}

impl AtReload {
    /// Its kind as `Manager1.Reloaded` names it.
    pub fn kind(&self) -> &'static str {
        match self {
            AtReload::Kept(_) => "kept",
            AtReload::Replaced(_) => "replaced",
        }
    }
}

impl SetByCtl {
    /// A first `ctl` call over `config`.
    pub fn over(config: &DaemonConfig, pairings: BoardPairings) -> SetByCtl {
        SetByCtl {
            round: None,
            pairings,
            file_round: config.round(),
            file_pairings: pairings_of(config),
            via: pairings_command(),
        }
    }

    /// The round that stands: `ctl`'s, else the file's.
    pub fn round_or(&self, config: &DaemonConfig) -> u32 {
        self.round.unwrap_or_else(|| config.round())
    }

    /// What a reload to `config` does with it.
    pub fn at_reload(&self, config: &DaemonConfig) -> AtReload {
        let round = self.round.map_or_else(String::new, |r| format!("round {r} and "));
        if config.round() == self.file_round && pairings_of(config) == self.file_pairings {
            AtReload::Kept(format!(
                "{round}the pairings set by `{}` stand: the file's round ({}) and pairings are as they were when they were set (change them in the file to follow it again)",
                self.via, self.file_round
            ))
        } else {
            AtReload::Replaced(format!(
                "the file's round {} and its pairings replace {round}the pairings set by `{}` (the file changed since)",
                config.round(),
                self.via
            ))
        }
    }

    fn path(state: &Path) -> PathBuf {
        state.join("ctl-round.json")
    }

    /// What was kept in `state`, if anything; a file that does not read is
    /// said in the log and left (the file's round stands).
    pub fn load(state: &Path) -> Option<SetByCtl> {
        let path = Self::path(state);
        let text = std::fs::read_to_string(&path).ok()?;
        match serde_json::from_str(&text) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(
                    "{}: not what `ctl pairings` keeps ({}): the configuration's round and pairings stand",
                    path.display(),
                    crate::log::escaped(&e.to_string())
                );
                None
            }
        }
    }

    /// Kept in `state` (written whole, then renamed over the last).
    pub fn save(&self, state: &Path) -> std::io::Result<()> {
        let path = Self::path(state);
        let part = path.with_extension("json.part");
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&part, text)?;
        std::fs::rename(&part, &path)
    }

    /// No longer kept (the file's round took over).
    pub fn forget(state: &Path) {
        let _ = std::fs::remove_file(Self::path(state));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(round: u32) -> DaemonConfig {
        DaemonConfig::parse(&format!("round = {round}\n"), "t.toml").unwrap()
    }

    fn pairing(white: &str) -> BoardPairings {
        [(2, [("White".to_string(), white.to_string())].into())].into()
    }

    #[test]
    fn a_reload_keeps_what_ctl_set_until_the_file_changes() {
        let mut set = SetByCtl::over(&config(1), pairing("Ann"));
        set.round = Some(2);
        assert_eq!(set.round_or(&config(1)), 2);
        let AtReload::Kept(words) = set.at_reload(&config(1)) else {
            panic!("the file unchanged replaced ctl's round")
        };
        assert!(
            words.starts_with("round 2 and the pairings set by `ctl pairings` stand"),
            "{words}"
        );
        set.via = "ctl round".into();
        let AtReload::Kept(words) = set.at_reload(&config(1)) else {
            panic!("the file unchanged replaced ctl's round")
        };
        assert!(
            words.starts_with("round 2 and the pairings set by `ctl round` stand"),
            "{words}"
        );
        let AtReload::Replaced(words) = set.at_reload(&config(3)) else {
            panic!("a new round in the file did not replace ctl's")
        };
        assert!(
            words.starts_with(
                "the file's round 3 and its pairings replace round 2 and the pairings set by `ctl round`"
            ),
            "{words}"
        );
        // A file kept by a daemon before `via`: `ctl pairings` spoke.
        let old = r#"{"round":2,"pairings":{},"file_round":1,"file_pairings":{}}"#;
        let old: SetByCtl = serde_json::from_str(old).unwrap();
        assert_eq!(old.via, "ctl pairings");
    }

    #[test]
    fn what_ctl_set_outlives_a_restart_and_a_bad_file_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let mut set = SetByCtl::over(&config(1), pairing("Ann"));
        set.round = Some(4);
        set.save(dir.path()).unwrap();
        assert_eq!(SetByCtl::load(dir.path()), Some(set));
        std::fs::write(dir.path().join("ctl-round.json"), "{").unwrap();
        assert_eq!(SetByCtl::load(dir.path()), None);
        SetByCtl::forget(dir.path());
        assert_eq!(SetByCtl::load(dir.path()), None);
    }
}
