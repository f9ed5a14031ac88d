//! `[lichess]` in the configuration, checked when it is read (a value that is
//! wrong is named with its line), and the token file, checked when the daemon
//! starts: readable by its owner (and group) only, one line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::api::lichess::RoundId;

/// lichess itself.
pub const DEFAULT_URL: &str = "https://lichess.org";

/// Pushes a second at most, all rounds together. lichess asks API clients to
/// make one request at a time and, in its older guidance, to wait a second
/// between two; it takes each round's pushes one after another.
pub const DEFAULT_MAX_PER_SECOND: f64 = 1.0;

/// The most `max_per_second` may be.
pub const MAX_PER_SECOND: f64 = 10.0;

/// The games (chapters) a lichess broadcast round holds.
pub const DEFAULT_MAX_GAMES: usize = 64;

/// The most `max_games` may be: lichess's largest rounds (its documentation of
/// the push speaks of up to 100 games).
pub const MAX_GAMES: usize = 100;

/// `[lichess]`: off unless present.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LichessConfig {
    /// A file with a lichess API token with the `study:write` scope, on one line.
    pub token_file: PathBuf,
    /// This event's round → the broadcast round's id.
    #[serde(default)]
    pub rounds: Rounds,
    /// The server (`https://lichess.org`; a stand-in's `http://127.0.0.1:PORT`
    /// in tests).
    #[serde(default = "default_url")]
    pub url: LichessServer,
    /// Pushes a second at most, all rounds together.
    #[serde(default = "default_rate", deserialize_with = "rate")]
    pub max_per_second: f64,
    /// The games a broadcast round on the server takes: a round with more
    /// pushes the first (by board) and names the boards left out.
    #[serde(default = "default_max_games", deserialize_with = "max_games")]
    pub max_games: usize,
}

fn default_url() -> LichessServer {
    LichessServer::try_from(DEFAULT_URL.to_string()).expect("the default URL reads")
}

fn default_rate() -> f64 {
    DEFAULT_MAX_PER_SECOND
}

fn default_max_games() -> usize {
    DEFAULT_MAX_GAMES
}

fn rate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if v.is_finite() && v > 0.0 && v <= MAX_PER_SECOND {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!(
            "max_per_second = {v}: more than 0 and at most {MAX_PER_SECOND} (lichess asks for one request at a time)"
        )))
    }
}

fn max_games<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let v = i64::deserialize(d)?;
    usize::try_from(v)
        .ok()
        .filter(|v| (1..=MAX_GAMES).contains(v))
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "max_games = {v}: from 1 to {MAX_GAMES} (a lichess round takes {DEFAULT_MAX_GAMES} games)"
            ))
        })
}

/// Each round of the event and its broadcast rounds' ids: one (`1 =
/// "AbCd1234"`), or several for a round of more boards than a broadcast round
/// takes (`1 = ["AbCd1234", "EfGh5678"]`: boards 1-64 to the first, 65-128 to
/// the second, ...).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(try_from = "BTreeMap<String, serde_json::Value>")]
pub struct Rounds(pub BTreeMap<u32, Vec<RoundId>>);

impl TryFrom<BTreeMap<String, serde_json::Value>> for Rounds {
    type Error = String;
    fn try_from(map: BTreeMap<String, serde_json::Value>) -> Result<Rounds, String> {
        use serde_json::Value;
        let mut rounds = BTreeMap::new();
        for (k, v) in map {
            let round = k.trim().parse::<u32>().ok().filter(|r| *r > 0).ok_or_else(|| {
                format!("rounds: `{k}` is not a round number: write rounds = {{ 1 = \"AbCd1234\", 2 = \"EfGh5678\" }}")
            })?;
            let kind = || {
                format!(
                    "rounds: round {round}: an id, \"AbCd1234\", or a list of them for boards 1-64, 65-128, ...: \
                     [\"AbCd1234\", \"EfGh5678\"]"
                )
            };
            let texts: Vec<&str> = match &v {
                Value::String(id) => vec![id.as_str()],
                Value::Array(ids) => ids
                    .iter()
                    .map(|i| i.as_str().ok_or_else(kind))
                    .collect::<Result<_, _>>()?,
                _ => return Err(kind()),
            };
            let ids =
                crate::api::lichess::parse_ids(texts).map_err(|e| format!("rounds: round {round}: {e}"))?;
            rounds.insert(round, ids);
        }
        Ok(Rounds(rounds))
    }
}

/// Where the server is: `https://HOST[:PORT][/PATH]` (or `http://` for a
/// stand-in or a relay on the same machine).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct LichessServer {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// A path the API is under (empty for lichess), without a trailing `/`.
    pub base: String,
}

impl TryFrom<String> for LichessServer {
    type Error = String;
    fn try_from(url: String) -> Result<LichessServer, String> {
        let bad = |why: &str| format!("url = \"{url}\": {why} (write https://lichess.org)");
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad("the address starts with https://"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.contains('@') || path.contains(['?', '#']) {
            return Err(bad("no user, query or fragment"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| bad("an IPv6 address needs its `]`"))?;
            (h.to_string(), after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("no host name"));
        }
        let port = match port {
            None => {
                if tls {
                    443
                } else {
                    80
                }
            }
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad(&format!("`{p}` is not a port")))?,
        };
        Ok(LichessServer {
            tls,
            host,
            port,
            base: path.trim_end_matches('/').to_string(),
        })
    }
}

impl LichessServer {
    /// Whether the host is this machine (a token sent without TLS stays on it).
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|a| a.is_loopback())
    }

    /// The `Host` header: the name, and the port when it is not the scheme's.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = if self.tls { 443 } else { 80 };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// The path of a round's push.
    pub fn push_path(&self, id: &RoundId) -> String {
        format!("{}/api/broadcast/round/{id}/push", self.base)
    }
}

impl std::fmt::Display for LichessServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.authority(), self.base)
    }
}

/// A lichess API token. It is sent in the `Authorization` header and nowhere
/// else: not in the log, not on D-Bus, not in the console (it has no
/// `Display`, and its `Debug` hides it).
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(hidden)")
    }
}

impl Token {
    #[cfg(test)]
    pub fn for_tests(token: &str) -> Token {
        Token(token.into())
    }

    /// The `Authorization` header's value.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

/// Why the token file gives no token: what is wrong, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenError {
    /// What is wrong (`[lichess] token_file PATH is empty`).
    pub what: String,
    /// What to do about it.
    pub remedy: String,
    /// Others may read or change the file: the daemon does not start with it
    /// (the token would be theirs to use, or to replace).
    pub exposed: bool,
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.remedy)
    }
}

/// What to do for a token file that holds no token (missing, empty, not one).
fn put_a_token(shown: &std::path::Display<'_>) -> String {
    format!(
        "put a lichess token with the study:write scope on its first line (docs/BROADCAST.md, section 1), \
         chmod 600 {shown}, then reload the daemon (systemctl reload eboard-bridge)"
    )
}

/// Reads the token file: refused when others may read or change it (with the
/// `chmod` that mends it), when it is missing, empty or its line is not a
/// token (with what to put in it).
pub fn read_token(path: &Path) -> Result<Token, TokenError> {
    use std::os::unix::fs::PermissionsExt;
    let shown = path.display();
    let missing = |e: std::io::Error| TokenError {
        what: format!("[lichess] token_file {shown}: {e}"),
        remedy: if e.kind() == std::io::ErrorKind::PermissionDenied {
            format!(
                "let the daemon's user read it (chmod 640 {shown}, the file's group the daemon's: \
                 chgrp eboard-bridge {shown}), then reload the daemon (systemctl reload eboard-bridge)"
            )
        } else {
            put_a_token(&shown)
        },
        exposed: false,
    };
    let meta = std::fs::metadata(path).map_err(missing)?;
    let mode = meta.permissions().mode() & 0o777;
    // Others' bits: read (4), write (2), execute (1). Each is refused, and
    // named as what it is.
    let (read, write) = (mode & 0o004 != 0, mode & 0o002 != 0);
    if mode & 0o007 != 0 {
        let (who, why) = match (read, write) {
            (true, true) => (
                "may be read and changed by others",
                "the token writes to your broadcasts",
            ),
            (true, false) => ("may be read by others", "the token writes to your broadcasts"),
            (false, true) => (
                "may be changed by others",
                "anyone could put a token of theirs in it",
            ),
            (false, false) => ("gives others a right to it", "the token is the daemon's alone"),
        };
        return Err(TokenError {
            what: format!("[lichess] token_file {shown} {who} (mode {mode:03o})"),
            remedy: format!(
                "{why}: run chmod 600 {shown} (or chmod 640 with the file's group the daemon's), then start or \
                 reload the daemon"
            ),
            exposed: true,
        });
    }
    let text = std::fs::read_to_string(path).map_err(missing)?;
    let line = text.lines().next().unwrap_or_default().trim();
    if line.is_empty() {
        return Err(TokenError {
            what: format!("[lichess] token_file {shown} is empty"),
            remedy: put_a_token(&shown),
            exposed: false,
        });
    }
    if !line.bytes().all(|b| b.is_ascii_graphic()) || line.len() > 200 {
        return Err(TokenError {
            what: format!(
                "[lichess] token_file {shown}: its first line is not a token (letters, digits and _ only, as lichess gives it)"
            ),
            remedy: put_a_token(&shown),
            exposed: false,
        });
    }
    Ok(Token(line.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct File {
        lichess: LichessConfig,
    }

    fn parse(text: &str) -> Result<LichessConfig, String> {
        toml::from_str::<File>(text)
            .map(|f| f.lichess)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_section_and_its_defaults() {
        let c = parse(
            "[lichess]\ntoken_file = \"/etc/eboard-bridge/lichess-token\"\nrounds = { 1 = \"AbCd1234\", 2 = \"EfGh5678\" }\n",
        )
        .unwrap();
        assert_eq!(c.rounds.0.len(), 2);
        assert_eq!(c.rounds.0[&2][0].as_str(), "EfGh5678");
        // Issue 60: a round over several broadcast rounds.
        let c = parse(
            "[lichess]\ntoken_file = \"t\"\nrounds = { 1 = [\"AbCd1234\", \"EfGh5678\"], 2 = \"IjKl9012\", 3 = [\"MnOp3456\"] }\n",
        )
        .unwrap();
        let ids = |r: u32| c.rounds.0[&r].iter().map(|i| i.to_string()).collect::<Vec<_>>();
        assert_eq!(ids(1), ["AbCd1234", "EfGh5678"]);
        assert_eq!(ids(2), ["IjKl9012"]);
        assert_eq!(ids(3), ["MnOp3456"]);
        assert_eq!(c.url.to_string(), "https://lichess.org");
        assert_eq!((c.url.port, c.url.tls), (443, true));
        assert_eq!(c.max_per_second, DEFAULT_MAX_PER_SECOND);
        assert_eq!(c.max_games, 64);
        let c = parse(
            "[lichess]\ntoken_file = \"t\"\nurl = \"http://127.0.0.1:8123\"\nmax_per_second = 4\nmax_games = 100\n",
        )
        .unwrap();
        assert_eq!(c.url.authority(), "127.0.0.1:8123");
        assert!(c.url.is_loopback() && !c.url.tls);
        assert_eq!(
            c.url.push_path(&RoundId::parse("AbCd1234").unwrap()),
            "/api/broadcast/round/AbCd1234/push"
        );
        assert_eq!(c.max_per_second, 4.0);
    }

    #[test]
    fn what_is_wrong_is_named() {
        let e = parse("[lichess]\ntoken_file = \"t\"\nrounds = { one = \"AbCd1234\" }\n").unwrap_err();
        assert!(e.contains("`one` is not a round number"), "{e}");
        let e = parse("[lichess]\ntoken_file = \"t\"\nrounds = { 1 = \"AbCd\" }\n").unwrap_err();
        assert!(e.contains("round 1") && e.contains("8 letters and digits"), "{e}");
        for (bad, said) in [
            ("[]", "no broadcast round's id"),
            ("[\"AbCd1234\", \"AbCd1234\"]", "given twice"),
            ("[\"AbCd1234\", 3]", "a list of them"),
            ("3", "a list of them"),
            ("[\"AbCd1234\", \"AbCd\"]", "8 letters and digits"),
        ] {
            let e = parse(&format!(
                "[lichess]\ntoken_file = \"t\"\nrounds = {{ 1 = {bad} }}\n"
            ))
            .unwrap_err();
            assert!(e.contains("round 1") && e.contains(said), "{bad}: {e}");
        }
        let e = parse("[lichess]\ntoken_file = \"t\"\nurl = \"lichess.org\"\n").unwrap_err();
        assert!(e.contains("https://"), "{e}");
        let e = parse("[lichess]\ntoken_file = \"t\"\nmax_per_second = 0\n").unwrap_err();
        assert!(e.contains("max_per_second"), "{e}");
        let e = parse("[lichess]\ntoken_file = \"t\"\nmax_per_second = 50\n").unwrap_err();
        assert!(e.contains("at most 10"), "{e}");
        let e = parse("[lichess]\ntoken_file = \"t\"\nmax_games = 0\n").unwrap_err();
        assert!(e.contains("max_games"), "{e}");
        let e = parse("[lichess]\ntoken = \"secret\"\n").unwrap_err();
        assert!(e.contains("unknown field `token`"), "{e}");
        assert!(
            parse("[lichess]\nrounds = {}\n")
                .unwrap_err()
                .contains("token_file")
        );
    }

    #[test]
    fn server_addresses() {
        let s = |u: &str| LichessServer::try_from(u.to_string());
        let l = s("https://lichess.dev:8443/base/").unwrap();
        assert_eq!(
            (l.host.as_str(), l.port, l.base.as_str()),
            ("lichess.dev", 8443, "/base")
        );
        assert_eq!(l.to_string(), "https://lichess.dev:8443/base");
        let v6 = s("http://[::1]:9000").unwrap();
        assert_eq!(v6.authority(), "[::1]:9000");
        assert!(v6.is_loopback());
        for bad in [
            "ftp://x",
            "https://",
            "https://x:0",
            "https://u@x",
            "https://x/a?b=1",
            "http://x:port",
        ] {
            assert!(s(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_token_file_is_for_its_owner_and_holds_one_token() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("token");
        std::fs::write(&p, "lip_abcDEF123\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_token(&p).unwrap_err();
        assert!(e.exposed);
        let e = e.to_string();
        assert!(e.contains("may be read by others (mode 644)"), "{e}");
        assert!(e.contains(&format!("chmod 600 {}", p.display())), "{e}");
        assert!(!e.contains("lip_abc"), "the token is never said: {e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let t = read_token(&p).unwrap();
        assert_eq!(t.bearer(), "Bearer lip_abcDEF123");
        assert_eq!(format!("{t:?}"), "Token(hidden)");
        std::fs::write(&p, "\n").unwrap();
        let e = read_token(&p).unwrap_err();
        assert!(!e.exposed && e.what.ends_with("is empty"), "{e}");
        assert!(
            e.remedy.contains("study:write") && e.remedy.contains("chmod 600"),
            "{e}"
        );
        std::fs::write(&p, "two words\n").unwrap();
        assert!(read_token(&p).unwrap_err().what.contains("not a token"));
        let e = read_token(&dir.path().join("none")).unwrap_err();
        assert!(!e.exposed && e.remedy.contains("put a lichess token"), "{e}");
    }

    /// Issue 60: each of others' bits named as what it is; a file others may
    /// only change (602) is not called readable; the remedy is `chmod 600`.
    #[test]
    fn others_bits_are_named_as_what_they_are() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("token");
        std::fs::write(&p, "lip_abcDEF123\n").unwrap();
        for (mode, said) in [
            (0o602, "may be changed by others (mode 602)"),
            (0o622, "may be changed by others (mode 622)"),
            (0o604, "may be read by others (mode 604)"),
            (0o606, "may be read and changed by others (mode 606)"),
            (0o601, "gives others a right to it (mode 601)"),
        ] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = read_token(&p).unwrap_err();
            let text = e.to_string();
            assert!(e.exposed && text.contains(said), "{mode:o}: {text}");
            assert!(text.contains(&format!("run chmod 600 {}", p.display())), "{text}");
            if mode & 0o004 == 0 {
                assert!(!text.contains("read"), "{mode:o}: {text}");
            }
        }
        for mode in [0o600, 0o640, 0o660, 0o400] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            assert!(read_token(&p).is_ok(), "{mode:o}");
        }
    }
}
