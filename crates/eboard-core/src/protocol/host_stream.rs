//! The host-to-board stream parsed back into commands: what a board reads (the
//! emulator's side of `command`).

use std::fmt;

use super::command::{ClockCommand, Hms, HostCommand, LedCommand, RunFlags, clock_code, code};

/// Why bytes a host sent to the clock are no clock command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClockCommandError {
    #[error("clock command {cmd:02x} needs {need} bytes, got {got}")]
    Short { cmd: u8, need: usize, got: usize },
    #[error("set and run with impossible times {0}")]
    Times(String),
    #[error("unknown clock command {0:02x}")]
    Unknown(u8),
}

/// What the host-stream parser produced.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostInput {
    Command(HostCommand),
    /// Bytes that are no command, with the reason.
    Invalid {
        bytes: Vec<u8>,
        reason: String,
    },
}

impl fmt::Display for HostInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostInput::Command(c) => write!(f, "{c:?}"),
            HostInput::Invalid { bytes, reason } => {
                write!(f, "invalid host bytes")?;
                for b in bytes {
                    write!(f, " {b:02x}")?;
                }
                write!(f, ": {reason}")
            }
        }
    }
}

/// Sans-IO parser of the host-to-board stream (what a board reads).
#[derive(Debug, Default)]
pub struct CommandParser {
    buf: Vec<u8>,
}

/// The longest multi-byte command (a clock message) the parser accepts.
const MAX_COMMAND: usize = 2 + 0x7f;

impl CommandParser {
    pub fn new() -> CommandParser {
        CommandParser::default()
    }

    /// Feeds bytes from the host and returns the commands they complete.
    pub fn feed(&mut self, input: &[u8]) -> Vec<HostInput> {
        let mut out = Vec::new();
        for &b in input {
            self.buf.push(b);
            if let Some(done) = self.step() {
                out.push(done);
                self.buf.clear();
            }
        }
        out
    }

    fn step(&mut self) -> Option<HostInput> {
        let buf = &self.buf;
        let invalid = |reason: String| {
            Some(HostInput::Invalid {
                bytes: buf.clone(),
                reason,
            })
        };
        match buf[0] {
            code::SET_LEDS => {
                if buf.len() < 2 {
                    return None;
                }
                if buf[1] != 0x04 {
                    return invalid(format!("LED command length {:#04x}, expected 0x04", buf[1]));
                }
                if buf.len() < 6 {
                    return None;
                }
                Some(HostInput::Command(HostCommand::Leds(LedCommand::from_bytes([
                    buf[2], buf[3], buf[4], buf[5],
                ]))))
            }
            code::CLOCK_MESSAGE => {
                if buf.len() < 2 {
                    return None;
                }
                let total = usize::from(buf[1]) + 2;
                if !(5..=MAX_COMMAND).contains(&total) {
                    return invalid(format!("clock message size {}", buf[1]));
                }
                if buf.len() < total {
                    return None;
                }
                if buf[2] != 0x03 {
                    return invalid(format!("clock message without 03 marker ({:02x})", buf[2]));
                }
                match ClockCommand::parse(buf[3], &buf[4..]) {
                    Ok(c) => Some(HostInput::Command(HostCommand::Clock(c))),
                    Err(e) => invalid(e.to_string()),
                }
            }
            b => match HostCommand::single(b) {
                Some(c) => Some(HostInput::Command(c)),
                None => invalid("unknown command".to_string()),
            },
        }
    }
}

impl ClockCommand {
    /// The clock command of a clock message's code and body.
    pub(super) fn parse(cmd: u8, body: &[u8]) -> Result<ClockCommand, ClockCommandError> {
        use clock_code::*;
        let need = |n: usize| -> Result<(), ClockCommandError> {
            if body.len() < n {
                Err(ClockCommandError::Short {
                    cmd,
                    need: n,
                    got: body.len(),
                })
            } else {
                Ok(())
            }
        };
        Ok(match cmd {
            DISPLAY => {
                need(8)?;
                let mut segments = [0; 6];
                segments.copy_from_slice(&body[..6]);
                ClockCommand::Display {
                    segments,
                    icons: body[6],
                    beep: body[7],
                }
            }
            ICONS => {
                need(5)?;
                ClockCommand::Icons {
                    bytes: [body[0], body[1], body[2], body[3]],
                    special: body[4],
                }
            }
            END => ClockCommand::End,
            BUTTON => ClockCommand::ButtonQuery,
            VERSION => ClockCommand::Version,
            SET_AND_RUN => {
                need(7)?;
                let left = Hms {
                    h: body[0],
                    m: body[1],
                    s: body[2],
                };
                let right = Hms {
                    h: body[3],
                    m: body[4],
                    s: body[5],
                };
                if left.to_time().is_none() || right.to_time().is_none() {
                    return Err(ClockCommandError::Times(format!("{left:?} {right:?}")));
                }
                ClockCommand::SetAndRun {
                    left,
                    right,
                    flags: RunFlags::from_bits(body[6]),
                }
            }
            BEEP => {
                need(1)?;
                ClockCommand::Beep { units: body[0] }
            }
            ASCII => {
                need(9)?;
                let mut text = [0; 8];
                text.copy_from_slice(&body[..8]);
                ClockCommand::Text { text, beep: body[8] }
            }
            other => return Err(ClockCommandError::Unknown(other)),
        })
    }
}
