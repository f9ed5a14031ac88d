//! The sensor log (`docs/SENSOR-LOG.md`). Its pure parts (records, reading a
//! log's text, writing, playing a log through the decoder) are
//! `eboard_core::log`, re-exported here under the same names; the files are
//! here, where I/O belongs: the journal the daemon writes ([`journal`]) and a
//! log read from disk ([`files`]).

pub use eboard_core::log::*;

pub mod files;
pub mod journal;

pub use files::{read_log, read_text, read_text_into};
pub use journal::{Flushed, Journal};

/// A value that came from outside (a player's name, a user name, a tag, a
/// topic, a decision's refusal quoting them) as the log shows it: on one
/// line, with nothing a terminal takes as a command. Newline, carriage return
/// and tab are written `\n`, `\r`, `\t`; every other control character (C0,
/// DEL, C1), the Unicode line and paragraph separators and the bidirectional
/// overrides `\u{..}`; a backslash `\\`, so that what is escaped reads back
/// unambiguously. Every log call with such a value goes through it (issue 60:
/// a name with a newline wrote a line of its own into the log).
#[derive(Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

/// [`Escaped`]: `tracing::info!("... {}", escaped(&name))`.
pub fn escaped(text: &str) -> Escaped<'_> {
    Escaped(text)
}

impl std::fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut plain = 0;
        for (i, c) in self.0.char_indices() {
            let escape = match c {
                '\\' => Some("\\\\"),
                '\n' => Some("\\n"),
                '\r' => Some("\\r"),
                '\t' => Some("\\t"),
                _ => None,
            };
            let other = escape.is_none()
                && (c.is_control()
                    || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'));
            if escape.is_none() && !other {
                continue;
            }
            f.write_str(&self.0[plain..i])?;
            match escape {
                Some(e) => f.write_str(e)?,
                None => write!(f, "\\u{{{:x}}}", c as u32)?,
            }
            plain = i + c.len_utf8();
        }
        f.write_str(&self.0[plain..])
    }
}

#[cfg(test)]
mod escaped_tests {
    use super::escaped;

    #[test]
    fn outside_values_stay_on_one_line_with_no_control_character() {
        let forged = "Line1\nINFO eboard_bridge: FAKE LOG LINE";
        assert_eq!(
            escaped(forged).to_string(),
            "Line1\\nINFO eboard_bridge: FAKE LOG LINE"
        );
        assert_eq!(
            escaped("a\r\tb\u{1b}[31mc\u{7f}d\u{85}e\u{9b}f\u{2028}g\u{202e}h").to_string(),
            "a\\r\\tb\\u{1b}[31mc\\u{7f}d\\u{85}e\\u{9b}f\\u{2028}g\\u{202e}h"
        );
        assert_eq!(escaped("C:\\n").to_string(), "C:\\\\n");
        // Names in any script are left as they are.
        for name in ["Carlsen, Magnus", "Непомнящий, Ян", "丁立人", "Ding Liren 🏆", ""] {
            assert_eq!(escaped(name).to_string(), name);
        }
        let shown = escaped("x\u{0}y\u{1f}z").to_string();
        assert!(!shown.chars().any(char::is_control), "{shown}");
    }
}
