//! What lichess's answer to a push means, and what to do about it: pure, the
//! status, `Retry-After` and body in, an [`Outcome`] out.
//!
//! From lichess's documentation of `POST /api/broadcast/round/{id}/push`: the
//! token needs the `study:write` scope; only a round without a source URL takes
//! pushes; a 200 answers `{"games": [...]}`, each game `{"tags": {...},
//! "moves": N}` or `{"tags": {...}, "error": "..."}`, in the order of the PGN;
//! a 400 `{"error": "..."}` is a PGN it could not read. And from its API
//! guidance: on a 429, wait (a full minute, unless `Retry-After` says).

use std::time::{Duration, SystemTime};

use serde::Deserialize;

/// How long to wait after a 429 that does not say.
pub const TOO_MANY_WAIT: Duration = Duration::from_secs(60);

/// The longest `Retry-After` taken as it is.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// What lichess said of one game, in the order of the PGN pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameAnswer {
    pub white: String,
    pub black: String,
    /// The moves (plies) lichess counted, when it took the game.
    pub moves: Option<u32>,
    /// Why it refused the game.
    pub error: Option<String>,
}

/// Why lichess refuses the round itself: until the configuration changes, no
/// push of it is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 401: the token is wrong, expired or revoked.
    Token,
    /// 403: the token lacks `study:write`, or its account may not write to the
    /// broadcast.
    Forbidden,
    /// 404: no broadcast round with this id.
    NoRound,
    /// The round has a source URL: lichess fetches it and takes no pushes.
    SourceUrl,
}

/// An answer, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Taken: each game's answer (some may be refused).
    Accepted(Vec<GameAnswer>),
    /// The round refused, until the configuration changes.
    Refused(Refusal),
    /// This PGN refused as a whole (a 400, another 4xx): the next change is
    /// pushed again.
    Rejected(String),
    /// Try again later (no answer, a 5xx, a 429): `after` when the server said.
    Retry {
        after: Option<Duration>,
        why: String,
        away: Away,
    },
}

/// Why lichess takes no push for now: what is said differs, since only no
/// answer at all may be the hall's doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Away {
    /// No answer: the hall's connection, its DNS, or lichess unreachable.
    NoAnswer,
    /// A 5xx: lichess's server (or the proxy before it) failed.
    ServerFailed,
    /// A 429: lichess asks for fewer requests.
    Busy,
}

impl Away {
    /// What is said when pushes stop for this reason (`why`: the details),
    /// and what to do.
    pub fn words(self, why: &str) -> (String, String) {
        let text = format!("{why}; retrying: the rounds are kept and pushed when lichess answers");
        let remedy = match self {
            Away::NoAnswer => {
                "check the hall's connection to the internet; under systemd the daemon needs the network \
                 drop-in (/usr/share/doc/eboard-bridge/examples/network.conf, docs/BROADCAST.md)"
            }
            Away::ServerFailed => {
                "nothing to do in the hall: the fault is lichess's, not the hall's connection; the daemon \
                 tries again 1 s, 2 s, 4 s ... up to a minute apart (or as lichess's Retry-After says)"
            }
            Away::Busy => "nothing to do: the daemon waits as long as lichess asks, then pushes",
        };
        (text, remedy.to_string())
    }
}

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    games: Vec<Game>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Game {
    #[serde(default)]
    tags: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    moves: Option<u64>,
    #[serde(default)]
    error: Option<String>,
}

/// Whether an error is lichess's refusal of a round with a source URL.
fn is_source_url(error: &str) -> bool {
    let e = error.to_ascii_lowercase();
    (e.contains("upstream") || e.contains("source url")) && e.contains("push")
}

/// An error's text: a string as it is, anything else as JSON.
fn words(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Reads lichess's answer: its status, `Retry-After` (when given) and body.
pub fn outcome(status: u16, retry_after: Option<&str>, body: &[u8], now: SystemTime) -> Outcome {
    let parsed: Option<Body> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|b| b.error.as_ref()).map(words);
    let after = retry_after.and_then(|v| retry_after_value(v, now));
    let said = || {
        error.clone().unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body);
            crate::log::clip_to(text.trim(), 120).to_string()
        })
    };
    match status {
        200..=299 => {
            let games: Vec<GameAnswer> = parsed
                .map(|b| b.games)
                .unwrap_or_default()
                .into_iter()
                .map(|g| {
                    let tag = |k: &str| g.tags.get(k).map(words).unwrap_or_default();
                    GameAnswer {
                        white: tag("White"),
                        black: tag("Black"),
                        moves: g.moves.map(|m| u32::try_from(m).unwrap_or(u32::MAX)),
                        error: g.error,
                    }
                })
                .collect();
            // Newer lichess answers a round with a source URL in the games' list:
            // one failure, no tags.
            if let [only] = games.as_slice() {
                if only.white.is_empty() && only.error.as_deref().is_some_and(is_source_url) {
                    return Outcome::Refused(Refusal::SourceUrl);
                }
            }
            Outcome::Accepted(games)
        }
        401 => Outcome::Refused(Refusal::Token),
        403 => Outcome::Refused(Refusal::Forbidden),
        404 => Outcome::Refused(Refusal::NoRound),
        429 => Outcome::Retry {
            after: Some(after.unwrap_or(TOO_MANY_WAIT)),
            why: "lichess says too many requests (429)".into(),
            away: Away::Busy,
        },
        500..=599 => Outcome::Retry {
            after,
            why: match said() {
                s if s.is_empty() => format!("lichess's server failed (it answered {status})"),
                s => format!("lichess's server failed (it answered {status}: {s})"),
            },
            away: Away::ServerFailed,
        },
        _ if error.as_deref().is_some_and(is_source_url) => Outcome::Refused(Refusal::SourceUrl),
        _ => Outcome::Rejected(format!("lichess answered {status}: {}", said())),
    }
}

/// `Retry-After`: seconds, or an HTTP date; capped at [`MAX_RETRY_AFTER`].
pub fn retry_after_value(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    let d = match v.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => httpdate::parse_http_date(v)
            .ok()?
            .duration_since(now)
            .unwrap_or_default(),
    };
    Some(d.min(MAX_RETRY_AFTER))
}

impl Refusal {
    /// What is wrong and what to do, for round `id` on `server` with the token
    /// in `token_file`.
    pub fn words(self, id: &str, server: &str, token_file: &str) -> (String, String) {
        match self {
            Refusal::Token => (
                format!("{server} refused the token (401): it is wrong, expired or revoked"),
                format!(
                    "make a token with the study:write scope ({server}/account/oauth/token/create?scopes[]=study:write), \
                     put it in {token_file} and reload the daemon (systemctl reload eboard-bridge)"
                ),
            ),
            Refusal::Forbidden => (
                format!("{server} refused the push to round {id} (403): the token may not write to it"),
                format!(
                    "give the token the study:write scope, from the account that made the broadcast or one of its \
                     contributors; put it in {token_file} and reload the daemon (systemctl reload eboard-bridge)"
                ),
            ),
            Refusal::NoRound => (
                format!("{server} has no broadcast round {id} (404)"),
                "check the round's id, the 8 characters at the end of its address on lichess, and set it with \
                 ctl lichess ROUND ID (or [lichess] rounds, then reload)"
                    .into(),
            ),
            Refusal::SourceUrl => (
                format!("round {id} on lichess has a source URL: pushes are refused"),
                format!(
                    "on {server}, edit the round and choose to push its games (no source URL), then set the id again \
                     (ctl lichess ROUND {id})"
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(status: u16, body: &str) -> Outcome {
        outcome(status, None, body.as_bytes(), SystemTime::UNIX_EPOCH)
    }

    #[test]
    fn an_answer_from_the_documentation() {
        let body = r#"{"games":[
            {"tags":{"White":"Rasmus Svane","Black":"Rajat Makkar","Result":"1-0"},"moves":2},
            {"tags":{"White":"Joseph Girel","Black":"Matthias Bluebaum","Result":"0-1"},"error":"No move found: Pawn a8"}]}"#;
        let Outcome::Accepted(games) = at(200, body) else {
            panic!()
        };
        assert_eq!(games.len(), 2);
        assert_eq!(
            (games[0].white.as_str(), games[0].moves, &games[0].error),
            ("Rasmus Svane", Some(2), &None)
        );
        assert_eq!(games[1].moves, None);
        assert_eq!(games[1].error.as_deref(), Some("No move found: Pawn a8"));
    }

    #[test]
    fn refusals_retries_and_rejections() {
        assert_eq!(at(401, ""), Outcome::Refused(Refusal::Token));
        assert_eq!(
            at(403, r#"{"error":"Missing scope"}"#),
            Outcome::Refused(Refusal::Forbidden)
        );
        assert_eq!(
            at(404, r#"{"error":"Not found"}"#),
            Outcome::Refused(Refusal::NoRound)
        );
        let upstream = "The relay has an upstream URL, and cannot be pushed to.";
        // As newer lichess answers it, and as older answered it.
        assert_eq!(
            at(
                200,
                &format!(r#"{{"games":[{{"tags":{{}},"error":"{upstream}"}}]}}"#)
            ),
            Outcome::Refused(Refusal::SourceUrl)
        );
        assert_eq!(
            at(400, &format!(r#"{{"error":"{upstream}"}}"#)),
            Outcome::Refused(Refusal::SourceUrl)
        );
        assert_eq!(
            at(400, r#"{"error":"Cannot parse moves"}"#),
            Outcome::Rejected("lichess answered 400: Cannot parse moves".into())
        );
        assert_eq!(
            at(429, ""),
            Outcome::Retry {
                after: Some(TOO_MANY_WAIT),
                why: "lichess says too many requests (429)".into(),
                away: Away::Busy,
            }
        );
        let r = outcome(429, Some("7"), b"", SystemTime::UNIX_EPOCH);
        assert!(matches!(r, Outcome::Retry { after: Some(d), .. } if d == Duration::from_secs(7)));
        let r = at(502, "<html>Bad Gateway</html>");
        assert!(
            matches!(&r, Outcome::Retry { after: None, why, away: Away::ServerFailed }
                if why == "lichess's server failed (it answered 502: <html>Bad Gateway</html>)"),
            "{r:?}"
        );
        assert_eq!(
            at(500, r#"{"error":"Internal server error"}"#),
            Outcome::Retry {
                after: None,
                why: "lichess's server failed (it answered 500: Internal server error)".into(),
                away: Away::ServerFailed,
            }
        );
        assert!(
            matches!(at(503, ""), Outcome::Retry { why, .. } if why == "lichess's server failed (it answered 503)")
        );
        // A 200 whose body does not read: taken, nothing known of its games.
        assert_eq!(at(200, "ok"), Outcome::Accepted(Vec::new()));
    }

    /// Issue 60: a 5xx is lichess's fault, said so; only no answer at all
    /// sends the organiser to the hall's connection.
    #[test]
    fn a_server_error_is_not_the_halls_connection() {
        let (text, remedy) = Away::ServerFailed.words("lichess's server failed (it answered 500)");
        assert_eq!(
            text,
            "lichess's server failed (it answered 500); retrying: the rounds are kept and pushed when lichess answers"
        );
        assert!(
            remedy
                .starts_with("nothing to do in the hall: the fault is lichess's, not the hall's connection"),
            "{remedy}"
        );
        assert!(!remedy.contains("check the hall's connection"), "{remedy}");
        let (_, remedy) = Away::NoAnswer.words("connection refused");
        assert!(
            remedy.starts_with("check the hall's connection to the internet"),
            "{remedy}"
        );
        let (_, remedy) = Away::Busy.words("lichess says too many requests (429)");
        assert!(!remedy.contains("connection"), "{remedy}");
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(retry_after_value("120", now), Some(Duration::from_secs(120)));
        assert_eq!(retry_after_value("99999", now), Some(MAX_RETRY_AFTER));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(retry_after_value(&later, now), Some(Duration::from_secs(30)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(retry_after_value(&earlier, now), Some(Duration::ZERO));
        assert_eq!(retry_after_value("soon", now), None);
    }

    #[test]
    fn each_refusal_says_what_to_do() {
        for r in [
            Refusal::Token,
            Refusal::Forbidden,
            Refusal::NoRound,
            Refusal::SourceUrl,
        ] {
            let (what, remedy) = r.words(
                "AbCd1234",
                "https://lichess.org",
                "/etc/eboard-bridge/lichess-token",
            );
            assert!(!what.is_empty() && !remedy.is_empty(), "{r:?}");
        }
        let (_, remedy) = Refusal::Token.words("x", "https://lichess.org", "/t");
        assert!(
            remedy.contains("study:write") && remedy.contains("/t"),
            "{remedy}"
        );
        let (what, _) = Refusal::SourceUrl.words("AbCd1234", "https://lichess.org", "/t");
        assert!(what.contains("has a source URL: pushes are refused"), "{what}");
    }
}
