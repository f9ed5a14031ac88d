//! The daemon's configuration: a TOML file (`--config`, default
//! `/etc/eboard-bridge/config.toml`). Unknown keys are rejected with the file, line
//! and key, so that a typo never silently falls back to a default.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::rules::Profile;

/// Where the configuration is read from when `--config` is not given.
pub const DEFAULT_CONFIG: &str = "/etc/eboard-bridge/config.toml";

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// PGN `Event`.
    #[serde(default)]
    pub event: Option<String>,
    /// PGN `Site`.
    #[serde(default)]
    pub site: Option<String>,
    /// The round number: `<output>/round-N/`.
    #[serde(default)]
    pub round: Option<u32>,
    /// How the PGN `Round` tag is written: `"round.board"` (`"3.12"`, the
    /// default) or `"round"` (`"3"`, with the board in the `Board` tag).
    #[serde(default)]
    pub round_format: RoundFormat,
    /// A round's pairings exported by the tournament program (a PGN with headers
    /// only, or a CSV `board,white,black,...`), read at start and on reload; a
    /// relative path is from the configuration's folder. Its players and tags
    /// take precedence over `[[board]]`'s.
    #[serde(default)]
    pub pairings: Option<PathBuf>,
    /// The pairings read from `pairings`.
    #[serde(skip)]
    pub pairing_list: Option<crate::pairings::Pairings>,
    /// The broadcast folder (default: `<state>/live`).
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Recordings (the per-board sensor logs, which are also the journal) (default:
    /// `$STATE_DIRECTORY`, else `$XDG_STATE_HOME/eboard-bridge`).
    #[serde(default)]
    pub state: Option<PathBuf>,
    /// Devices to open, besides those given with `--device`.
    #[serde(default)]
    pub devices: Vec<PathBuf>,
    /// With no devices given or listed: the directory whose boards are bridged,
    /// those there at start and those that appear later (default `/dev/eboard`,
    /// where the udev rules put them).
    #[serde(default)]
    pub device_dir: Option<PathBuf>,
    #[serde(default)]
    pub rules: Rules,
    #[serde(default)]
    pub clock: ClockConfig,
    /// Board numbers and players, by serial number or device.
    #[serde(default, rename = "board")]
    pub boards: Vec<Board>,
    /// The HTTP server (live page, API, live PGN, LiveChess WebSocket): off
    /// unless configured.
    #[serde(default)]
    pub http: Option<crate::net::HttpConfig>,
    /// The MQTT broker every board is published to (off unless configured).
    #[serde(default)]
    pub mqtt: Option<crate::mqtt::MqttConfig>,
    /// The lichess broadcast every round is pushed to (off unless configured).
    #[serde(default)]
    pub lichess: Option<crate::lichess::LichessConfig>,
    /// The broadcast to spectators: its delay (`docs/BROADCAST.md`, "A
    /// delayed broadcast"); no delay unless configured.
    #[serde(default)]
    pub broadcast: Option<crate::daemon::delay::BroadcastConfig>,
    /// How much faster than the wall clock the boards' time runs (`demo --speed`,
    /// whose emulated board and clock play that much faster): the rules core, the
    /// recordings and the timers of the board tasks count game time, so thresholds,
    /// `%emt` and `%clk` are all in the game's own scale. Not read from the file
    /// (default 1).
    #[serde(skip)]
    pub time_scale: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Rules {
    #[serde(deserialize_with = "threshold")]
    pub release_ms: u64,
    #[serde(deserialize_with = "threshold")]
    pub flicker_ms: u64,
    #[serde(deserialize_with = "threshold")]
    pub irregular_ms: u64,
    pub profile: Profile,
    /// A completed violation's time penalty goes on the opponent's clock.
    pub apply_penalties: bool,
}

/// A threshold in ms, at most [`crate::rules::MAX_THRESHOLD_MS`] (an hour).
fn threshold<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let ms = u64::deserialize(d)?;
    let max = crate::rules::MAX_THRESHOLD_MS;
    if ms > max {
        return Err(serde::de::Error::custom(format!(
            "{ms} ms is more than an hour (at most {max})"
        )));
    }
    Ok(ms)
}

impl Default for Rules {
    fn default() -> Self {
        let d = crate::rules::Config::default();
        Rules {
            release_ms: d.release_ms,
            flicker_ms: d.flicker_ms,
            irregular_ms: d.irregular_ms,
            profile: d.profile,
            apply_penalties: d.apply_penalties,
        }
    }
}

impl Rules {
    pub fn core_config(&self) -> crate::rules::Config {
        crate::rules::Config {
            release_ms: self.release_ms,
            flicker_ms: self.flicker_ms,
            irregular_ms: self.irregular_ms,
            profile: self.profile,
            flag: crate::rules::FlagPolicy::Report,
            apply_penalties: self.apply_penalties,
        }
    }
}

/// How the PGN `Round` tag is written.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
pub enum RoundFormat {
    /// `"3"`: the round alone (the board in the `Board` tag).
    #[serde(rename = "round")]
    Round,
    /// `"3.12"`: round and board, as lichess and most broadcasts expect.
    #[default]
    #[serde(rename = "round.board")]
    RoundBoard,
}

impl RoundFormat {
    /// The `Round` tag of board `board` in round `round`.
    pub fn tag(self, round: u32, board: u32) -> String {
        match self {
            RoundFormat::Round => round.to_string(),
            RoundFormat::RoundBoard => format!("{round}.{board}"),
        }
    }
}

/// Which clock side is white's: fixed, or learnt from the first press (`auto`).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum WhiteSide {
    #[default]
    Auto,
    Left,
    Right,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ClockConfig {
    #[serde(default)]
    pub white: WhiteSide,
    /// What a flag fall does: `report` (the default: the arbiter decides) or `end`
    /// (time forfeit, or a draw when the opponent cannot checkmate, 6.9).
    #[serde(default)]
    pub flag: crate::rules::FlagPolicy,
    /// `report` (the default): the clock runs its own program and the daemon
    /// reads it; `drive`: the daemon keeps the time and sets the clock.
    #[serde(default)]
    pub mode: ClockMode,
    /// The time control (`5400+30`, `40/90+30,30+30`, `G/90;d5`, ...): driven in
    /// `drive` mode; in `report` mode it names the periods (`flag` events) and
    /// the `TimeControl` tag.
    #[serde(default)]
    pub time_control: Option<TimeControlSpec>,
    /// Show the last move on the clock after each completed move, and the
    /// irregularity while the board is irregular.
    #[serde(default)]
    pub show_moves: bool,
}

/// Who keeps the time (the same type the journaled time control carries).
pub use crate::rules::ClockMode;

/// A time control as the configuration gives it (checked when read).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(try_from = "String")]
pub struct TimeControlSpec(pub crate::clock::control::TimeControl);

impl TryFrom<String> for TimeControlSpec {
    type Error = crate::clock::control::TimeControlError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        crate::clock::control::TimeControl::parse(&s).map(TimeControlSpec)
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Board {
    /// The board's serial number (as it reports it).
    #[serde(default)]
    pub serial: Option<String>,
    /// Or the device path.
    #[serde(default)]
    pub device: Option<PathBuf>,
    /// The board number in the round (`game-M.pgn`, `Round "N.M"`).
    pub number: u32,
    #[serde(default)]
    pub white: Option<String>,
    #[serde(default)]
    pub black: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: cannot read: {source}")]
    Read { file: String, source: std::io::Error },
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
}

impl DaemonConfig {
    /// Parses `text` (from `file`, for messages).
    pub fn parse(text: &str, file: &str) -> Result<DaemonConfig, ConfigError> {
        let config: DaemonConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            file: file.to_string(),
            message: every_unknown_key(text, e),
        })?;
        if let Some(h) = &config.http {
            h.check().map_err(|e| ConfigError::Parse {
                file: file.to_string(),
                message: format!("[http] {e}"),
            })?;
        }
        if let Some(b) = &config.broadcast {
            b.delays().map_err(|message| ConfigError::Parse {
                file: file.to_string(),
                message,
            })?;
        }
        if let Some(m) = &config.mqtt {
            m.check().map_err(|e| ConfigError::Parse {
                file: file.to_string(),
                message: format!("[mqtt] {e}"),
            })?;
        }
        Ok(config)
    }

    /// Reads the file given, or the default file when it exists (else defaults).
    pub fn load(path: Option<&Path>) -> Result<DaemonConfig, ConfigError> {
        let (path, required) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (PathBuf::from(DEFAULT_CONFIG), false),
        };
        let file = path.display().to_string();
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => DaemonConfig::parse(&text, &file)?,
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(DaemonConfig::default());
            }
            Err(source) => return Err(ConfigError::Read { file, source }),
        };
        config.read_pairings(path.parent())?;
        Ok(config)
    }

    /// Reads the `pairings` file (a relative path from `dir`, the configuration's
    /// folder). Its round is the configuration's when `round` is not given; with
    /// `round`, the file's pairings of that round are taken.
    pub fn read_pairings(&mut self, dir: Option<&Path>) -> Result<(), ConfigError> {
        let Some(given) = &self.pairings else {
            return Ok(());
        };
        let path = match dir {
            Some(d) if given.is_relative() => d.join(given),
            _ => given.clone(),
        };
        let p = crate::pairings::read(&path, self.round).map_err(|e| ConfigError::Parse {
            file: format!("pairings = {:?}", given.display().to_string()),
            message: e.to_string(),
        })?;
        if self.round.is_none() {
            self.round = p.round;
        }
        for note in &p.notes {
            tracing::warn!(
                "pairings = {:?}: {}",
                given.display().to_string(),
                crate::log::escaped(note)
            );
        }
        self.pairing_list = Some(p);
        Ok(())
    }

    /// The pairing of board `number` in the `pairings` file: its tags (`White`,
    /// `Black`, `WhiteElo`, ...).
    pub fn pairing(&self, number: u32) -> Option<&std::collections::BTreeMap<String, String>> {
        self.pairing_list
            .as_ref()?
            .boards
            .iter()
            .find(|p| p.board == number)
            .map(|p| &p.tags)
    }

    /// The entry for a board, by serial number first, then by device.
    pub fn board(&self, serial: Option<&str>, device: &Path) -> Option<&Board> {
        serial
            .and_then(|s| self.boards.iter().find(|b| b.serial.as_deref() == Some(s)))
            .or_else(|| self.boards.iter().find(|b| b.device.as_deref() == Some(device)))
    }

    pub fn device_dir(&self) -> PathBuf {
        self.device_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(super::DEVICE_DIR))
    }

    pub fn state_dir(&self) -> PathBuf {
        if let Some(s) = &self.state {
            return s.clone();
        }
        if let Some(s) = std::env::var_os("STATE_DIRECTORY") {
            // systemd may give several, separated by colons: the first is ours.
            let s = s
                .to_string_lossy()
                .split(':')
                .next()
                .unwrap_or_default()
                .to_string();
            return PathBuf::from(s);
        }
        let base = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
            .unwrap_or_else(|| PathBuf::from("."));
        base.join("eboard-bridge")
    }

    pub fn output_dir(&self) -> PathBuf {
        self.output
            .clone()
            .unwrap_or_else(|| self.state_dir().join("live"))
    }

    pub fn round(&self) -> u32 {
        self.round.unwrap_or(1)
    }

    /// The rules core's configuration: the `[rules]` thresholds and profile, and
    /// the `[clock]` flag policy.
    /// The time control, and who keeps the time.
    pub fn time_control(&self) -> Option<(crate::clock::control::TimeControl, ClockMode)> {
        let tc = self.clock.time_control.clone()?.0;
        Some((tc, self.clock.mode))
    }

    pub fn core_config(&self) -> crate::rules::Config {
        crate::rules::Config {
            flag: self.clock.flag,
            ..self.rules.core_config()
        }
    }
}

/// The most unknown keys one error names.
const MAX_UNKNOWN_KEYS: usize = 20;

/// What is wrong with a configuration, with its line. A key the daemon does not
/// know is seldom alone (an old file, another version's options): every one is
/// named, each with its line, not only the first the reader met. The file is
/// read again with each unknown key's line left out, for as long as what stops
/// the reading is another unknown key.
fn every_unknown_key(text: &str, first: toml::de::Error) -> String {
    let at = |text: &str, e: &toml::de::Error| {
        e.span()
            .map(|s| text.get(..s.start).unwrap_or(text).matches('\n').count() + 1)
    };
    let unknown = |e: &toml::de::Error| e.message().starts_with("unknown field");
    let mut said = vec![(at(text, &first).unwrap_or(0), first.message().to_string())];
    let mut lines: Vec<&str> = text.split('\n').collect();
    let mut e = first;
    while unknown(&e) && said.len() < MAX_UNKNOWN_KEYS {
        let Some(line) = at(&lines.join("\n"), &e) else {
            break;
        };
        // Only a key whose value is on its own line can be left out whole.
        let Some(l) = lines.get_mut(line - 1).filter(|l| l.contains('=')) else {
            break;
        };
        *l = "";
        match toml::from_str::<DaemonConfig>(&lines.join("\n")) {
            Err(next) if unknown(&next) => {
                if let Some(n) = at(&lines.join("\n"), &next) {
                    said.push((n, next.message().to_string()));
                }
                e = next;
            }
            _ => break,
        }
    }
    said.sort();
    let said: Vec<String> = said
        .into_iter()
        .map(|(line, m)| if line == 0 { m } else { format!("line {line}: {m}") })
        .collect();
    said.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let c = DaemonConfig::parse(
            r#"
event = "Club Championship"
round = 3
output = "/srv/live"
[rules]
irregular_ms = 3000
profile = "rapid"
[clock]
white = "left"
flag = "end"
[[board]]
serial = "12345"
number = 2
white = "Carlsen, Magnus"
black = "Nepomniachtchi, Ian"
"#,
            "c.toml",
        )
        .unwrap();
        assert_eq!(c.round(), 3);
        assert_eq!(c.rules.irregular_ms, 3000);
        assert_eq!(c.rules.release_ms, 300);
        assert_eq!(c.rules.profile, Profile::Rapid);
        assert_eq!(c.clock.white, WhiteSide::Left);
        assert_eq!(c.core_config().flag, crate::rules::FlagPolicy::End);
        assert!(DaemonConfig::parse("[clock]\nflag = \"claim\"\n", "c.toml").is_err());
        assert_eq!(c.board(Some("12345"), Path::new("/dev/x")).unwrap().number, 2);
        assert_eq!(c.http, None);
    }

    #[test]
    fn http_listens_on_one_address_or_several() {
        let c = DaemonConfig::parse("[http]\nlisten = \"127.0.0.1:1982\"\n", "c.toml").unwrap();
        let h = c.http.unwrap();
        assert_eq!(h.listen.addresses(), ["127.0.0.1:1982"]);
        assert_eq!(h.max_connections, 256);
        let c = DaemonConfig::parse(
            "[http]\nlisten = [\"127.0.0.1:1982\", \"[::1]:1982\"]\nmax_connections = 8\nevent_history = 100\n",
            "c.toml",
        )
        .unwrap();
        let h = c.http.unwrap();
        assert_eq!(h.listen.addresses().len(), 2);
        assert_eq!((h.max_connections, h.event_history), (8, 100));
        let e = DaemonConfig::parse("[http]\nlisten = \"x\"\nport = 3\n", "c.toml").unwrap_err();
        assert!(
            e.to_string().contains("line 1") || e.to_string().contains("line 3"),
            "{e}"
        );
        assert!(DaemonConfig::parse("[http]\nmax_connections = 3\n", "c.toml").is_err());
    }

    #[test]
    fn the_console_s_names_and_the_redirect_are_checked_with_their_line() {
        let http = "[http]\nlisten = \"0.0.0.0:1982\"\n";
        let c = DaemonConfig::parse(
            &format!("{http}server_names = [\"hall.example\", \"192.168.1.10\"]\n"),
            "c.toml",
        )
        .unwrap();
        assert_eq!(c.http.unwrap().names().list(), "hall.example, 192.168.1.10");
        let e = DaemonConfig::parse(
            &format!("{http}\nserver_names = [\"hall.example:1982\"]\n"),
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("c.toml: line 4: ") && e.contains("without the port (`hall.example`)"),
            "{e}"
        );
        let e = DaemonConfig::parse(&format!("{http}server_names = []\n"), "c.toml").unwrap_err();
        assert!(e.to_string().contains("server_names is empty"), "{e}");
        let e = DaemonConfig::parse(&format!("{http}redirect_listen = \"0.0.0.0:80\"\n"), "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[http] redirect_listen") && e.contains("tls_cert"),
            "{e}"
        );
        let e = DaemonConfig::parse(&format!("{http}server_name = [\"x\"]\n"), "c.toml").unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
    }

    #[test]
    fn unknown_keys_are_rejected_with_file_and_line() {
        let e = DaemonConfig::parse("event = \"x\"\n[rules]\nrelease = 300\n", "c.toml").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("c.toml: line 3: "), "{msg}");
        assert!(msg.contains("unknown field `release`"), "{msg}");
        let e = DaemonConfig::parse("[rules]\nprofile = \"bullet\"\n", "c.toml").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn a_threshold_over_an_hour_is_refused() {
        let c = DaemonConfig::parse("[rules]\nirregular_ms = 3600000\n", "c.toml").unwrap();
        assert_eq!(c.rules.irregular_ms, 3_600_000);
        for key in ["release_ms", "flicker_ms", "irregular_ms"] {
            let text = format!("[rules]\n{key} = 9223372036854775807\n");
            let msg = DaemonConfig::parse(&text, "c.toml").unwrap_err().to_string();
            assert!(msg.starts_with("c.toml: line 2: "), "{msg}");
            assert!(msg.contains("more than an hour"), "{msg}");
        }
    }

    #[test]
    fn lichess_is_off_unless_given_and_its_mistakes_have_their_line() {
        assert_eq!(
            DaemonConfig::parse("round = 2\n", "c.toml").unwrap().lichess,
            None
        );
        let c = DaemonConfig::parse(
            "[lichess]\ntoken_file = \"/etc/eboard-bridge/lichess-token\"\nrounds = { 1 = \"AbCd1234\", 2 = \"EfGh5678\" }\n",
            "c.toml",
        )
        .unwrap();
        let l = c.lichess.unwrap();
        assert_eq!(l.rounds.0.len(), 2);
        assert_eq!(l.url.to_string(), "https://lichess.org");
        let e = DaemonConfig::parse(
            "[lichess]\ntoken_file = \"t\"\nround = 3\nmax_rate = 2\n",
            "c.toml",
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("line 3: unknown field `round`"), "{msg}");
        assert!(msg.contains("line 4: unknown field `max_rate`"), "{msg}");
        let e = DaemonConfig::parse(
            "[lichess]\ntoken_file = \"t\"\nrounds = { 1 = \"short\" }\n",
            "c.toml",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("c.toml: line 3: "), "{e}");
    }
}
