//! Host-to-board commands and their bytes (what the daemon sends a board);
//! `host_stream` parses them back (what a board reads, the emulator's side).

use super::types::{ClockTime, Field};

/// Single-byte host command codes.
pub mod code {
    pub const RESET: u8 = 0x40;
    pub const SEND_CLOCK: u8 = 0x41;
    pub const SEND_BOARD: u8 = 0x42;
    pub const SEND_UPDATE: u8 = 0x43;
    pub const SEND_UPDATE_BRD: u8 = 0x44;
    pub const RETURN_SERIALNR: u8 = 0x45;
    pub const RETURN_BUSADRES: u8 = 0x46;
    pub const SEND_TRADEMARK: u8 = 0x47;
    pub const SEND_EE_MOVES: u8 = 0x49;
    pub const SEND_BUS_MODE: u8 = 0x4a;
    pub const SEND_UPDATE_NICE: u8 = 0x4b;
    pub const SEND_BATTERY_STATUS: u8 = 0x4c;
    pub const SEND_VERSION: u8 = 0x4d;
    pub const RETURN_LONG_SERIALNR: u8 = 0x55;
    pub const SET_LEDS: u8 = 0x60;
    pub const CLOCK_MESSAGE: u8 = 0x2b;
}

/// Clock sub-command codes (third byte after `2b size 03`).
pub mod clock_code {
    pub const DISPLAY: u8 = 0x01;
    pub const ICONS: u8 = 0x02;
    pub const END: u8 = 0x03;
    pub const BUTTON: u8 = 0x08;
    pub const VERSION: u8 = 0x09;
    pub const SET_AND_RUN: u8 = 0x0a;
    pub const BEEP: u8 = 0x0b;
    pub const ASCII: u8 = 0x0c;
}

/// Flags of a clock set-and-run command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RunFlags {
    pub left_runs: bool,
    pub right_runs: bool,
    pub paused: bool,
    pub switch_on_lever: bool,
}

impl RunFlags {
    pub fn bits(self) -> u8 {
        u8::from(self.left_runs)
            | (u8::from(self.right_runs) << 1)
            | (u8::from(self.paused) << 2)
            | (u8::from(self.switch_on_lever) << 3)
    }

    pub fn from_bits(b: u8) -> RunFlags {
        RunFlags {
            left_runs: b & 1 != 0,
            right_runs: b & 2 != 0,
            paused: b & 4 != 0,
            switch_on_lever: b & 8 != 0,
        }
    }
}

/// A clock time as set-and-run carries it: plain binary hours, minutes, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hms {
    pub h: u8,
    pub m: u8,
    pub s: u8,
}

impl Hms {
    /// Whole seconds of `t` (at most 9:59:59, which is what the clock shows).
    pub fn from_time(t: ClockTime) -> Hms {
        let (h, m, s) = t.min(ClockTime::MAX).hms();
        Hms { h: h as u8, m, s }
    }

    pub fn to_time(self) -> Option<ClockTime> {
        ClockTime::from_hms(self.h, self.m, self.s)
    }
}

/// A command for the DGT 3000 (sent as `2b size 03 cmd ... 00`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClockCommand {
    /// XL-style 7-segment display: segment bytes c b a f e d, icons, beep.
    Display {
        segments: [u8; 6],
        icons: u8,
        beep: u8,
    },
    Icons {
        bytes: [u8; 4],
        special: u8,
    },
    /// Back to showing the times.
    End,
    ButtonQuery,
    Version,
    SetAndRun {
        left: Hms,
        right: Hms,
        flags: RunFlags,
    },
    /// Beep for `units` x 64 ms.
    Beep {
        units: u8,
    },
    /// Eight characters of text (DGT 3000).
    Text {
        text: [u8; 8],
        beep: u8,
    },
}

impl ClockCommand {
    /// Text for the DGT 3000 display: up to 8 ASCII characters (others shown as `?`),
    /// padded with spaces.
    pub fn text(s: &str, beep: bool) -> ClockCommand {
        let mut text = [b' '; 8];
        for (slot, c) in text.iter_mut().zip(s.chars()) {
            *slot = if c.is_ascii() && !c.is_ascii_control() {
                c as u8
            } else {
                b'?'
            };
        }
        ClockCommand::Text {
            text,
            beep: if beep { 0x03 } else { 0 },
        }
    }

    pub fn code(&self) -> u8 {
        use clock_code::*;
        match self {
            ClockCommand::Display { .. } => DISPLAY,
            ClockCommand::Icons { .. } => ICONS,
            ClockCommand::End => END,
            ClockCommand::ButtonQuery => BUTTON,
            ClockCommand::Version => VERSION,
            ClockCommand::SetAndRun { .. } => SET_AND_RUN,
            ClockCommand::Beep { .. } => BEEP,
            ClockCommand::Text { .. } => ASCII,
        }
    }

    /// The bytes after `2b size 03 cmd`, including the trailing 00 padding.
    fn body(&self) -> Vec<u8> {
        match self {
            ClockCommand::Display {
                segments,
                icons,
                beep,
            } => {
                let mut v = segments.to_vec();
                v.extend([*icons, *beep, 0]);
                v
            }
            ClockCommand::Icons { bytes, special } => {
                let mut v = bytes.to_vec();
                v.extend([*special, 0, 0, 0, 0]);
                v
            }
            ClockCommand::End | ClockCommand::ButtonQuery | ClockCommand::Version => vec![0],
            ClockCommand::SetAndRun { left, right, flags } => {
                vec![left.h, left.m, left.s, right.h, right.m, right.s, flags.bits(), 0]
            }
            ClockCommand::Beep { units } => vec![*units, 0],
            ClockCommand::Text { text, beep } => {
                let mut v = text.to_vec();
                v.extend([*beep, 0]);
                v
            }
        }
    }
}

/// A Revelation II LED command (`60 04 pattern from to 00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LedCommand {
    /// Light the squares from `from` to `to`.
    On { from: Field, to: Field },
    /// All LEDs off.
    Off,
    /// Firmware > 3.21: stop the board turning its own numbering round.
    KeepNumbering,
    /// Another pattern, kept as sent.
    Raw([u8; 4]),
}

impl LedCommand {
    fn bytes(self) -> [u8; 4] {
        match self {
            LedCommand::On { from, to } => [0x01, from.index(), to.index(), 0],
            LedCommand::Off => [0x00, 0x40, 0x40, 0],
            LedCommand::KeepNumbering => [0x02, 0x02, 0, 0],
            LedCommand::Raw(b) => b,
        }
    }

    pub(super) fn from_bytes(b: [u8; 4]) -> LedCommand {
        match b {
            [0x00, 0x40, 0x40, 0] => LedCommand::Off,
            [0x02, 0x02, 0, 0] => LedCommand::KeepNumbering,
            [0x01, f, t, 0] => match (Field::new(f), Field::new(t)) {
                (Some(from), Some(to)) => LedCommand::On { from, to },
                _ => LedCommand::Raw(b),
            },
            _ => LedCommand::Raw(b),
        }
    }
}

/// A command from the host to the board.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostCommand {
    Reset,
    SendClock,
    SendBoard,
    /// Field updates and clock at least once a second.
    SendUpdates,
    /// Field updates only.
    SendUpdatesBoard,
    SendSerialNumber,
    SendBusAddress,
    SendTrademark,
    SendEepromMoves,
    ToBusMode,
    /// Field updates, and the clock when its time changes.
    SendUpdatesNice,
    SendBattery,
    SendVersion,
    SendLongSerialNumber,
    Leds(LedCommand),
    Clock(ClockCommand),
}

impl HostCommand {
    /// The bytes sent to the board.
    ///
    /// ```
    /// use eboard_core::protocol::{ClockCommand, HostCommand};
    /// assert_eq!(HostCommand::SendUpdatesNice.encode(), vec![0x4b]);
    /// assert_eq!(HostCommand::Clock(ClockCommand::Version).encode(), vec![0x2b, 0x03, 0x03, 0x09, 0x00]);
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        use code::*;
        let single = match self {
            HostCommand::Reset => RESET,
            HostCommand::SendClock => SEND_CLOCK,
            HostCommand::SendBoard => SEND_BOARD,
            HostCommand::SendUpdates => SEND_UPDATE,
            HostCommand::SendUpdatesBoard => SEND_UPDATE_BRD,
            HostCommand::SendSerialNumber => RETURN_SERIALNR,
            HostCommand::SendBusAddress => RETURN_BUSADRES,
            HostCommand::SendTrademark => SEND_TRADEMARK,
            HostCommand::SendEepromMoves => SEND_EE_MOVES,
            HostCommand::ToBusMode => SEND_BUS_MODE,
            HostCommand::SendUpdatesNice => SEND_UPDATE_NICE,
            HostCommand::SendBattery => SEND_BATTERY_STATUS,
            HostCommand::SendVersion => SEND_VERSION,
            HostCommand::SendLongSerialNumber => RETURN_LONG_SERIALNR,
            HostCommand::Leds(l) => {
                let mut v = vec![SET_LEDS, 0x04];
                v.extend(l.bytes());
                return v;
            }
            HostCommand::Clock(c) => {
                let body = c.body();
                // size = total bytes - 2 = (03, cmd, body...)
                let mut v = vec![CLOCK_MESSAGE, (body.len() + 2) as u8, 0x03, c.code()];
                v.extend(body);
                return v;
            }
        };
        vec![single]
    }

    pub(super) fn single(b: u8) -> Option<HostCommand> {
        use code::*;
        Some(match b {
            RESET => HostCommand::Reset,
            SEND_CLOCK => HostCommand::SendClock,
            SEND_BOARD => HostCommand::SendBoard,
            SEND_UPDATE => HostCommand::SendUpdates,
            SEND_UPDATE_BRD => HostCommand::SendUpdatesBoard,
            RETURN_SERIALNR => HostCommand::SendSerialNumber,
            RETURN_BUSADRES => HostCommand::SendBusAddress,
            SEND_TRADEMARK => HostCommand::SendTrademark,
            SEND_EE_MOVES => HostCommand::SendEepromMoves,
            SEND_BUS_MODE => HostCommand::ToBusMode,
            SEND_UPDATE_NICE => HostCommand::SendUpdatesNice,
            SEND_BATTERY_STATUS => HostCommand::SendBattery,
            SEND_VERSION => HostCommand::SendVersion,
            RETURN_LONG_SERIALNR => HostCommand::SendLongSerialNumber,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // The bytes are read back as a board reads them (`host_stream`).
    use crate::protocol::{CommandParser, HostInput};

    fn all_commands() -> Vec<HostCommand> {
        let t = |h, m, s| Hms { h, m, s };
        vec![
            HostCommand::Reset,
            HostCommand::SendClock,
            HostCommand::SendBoard,
            HostCommand::SendUpdates,
            HostCommand::SendUpdatesBoard,
            HostCommand::SendSerialNumber,
            HostCommand::SendBusAddress,
            HostCommand::SendTrademark,
            HostCommand::SendEepromMoves,
            HostCommand::ToBusMode,
            HostCommand::SendUpdatesNice,
            HostCommand::SendBattery,
            HostCommand::SendVersion,
            HostCommand::SendLongSerialNumber,
            HostCommand::Leds(LedCommand::On {
                from: Field::new(12).unwrap(),
                to: Field::new(28).unwrap(),
            }),
            HostCommand::Leds(LedCommand::Off),
            HostCommand::Leds(LedCommand::KeepNumbering),
            HostCommand::Clock(ClockCommand::Display {
                segments: [1, 2, 3, 4, 5, 6],
                icons: 7,
                beep: 1,
            }),
            HostCommand::Clock(ClockCommand::Icons {
                bytes: [1, 2, 3, 4],
                special: 5,
            }),
            HostCommand::Clock(ClockCommand::End),
            HostCommand::Clock(ClockCommand::ButtonQuery),
            HostCommand::Clock(ClockCommand::Version),
            HostCommand::Clock(ClockCommand::SetAndRun {
                left: t(0, 5, 0),
                right: t(1, 30, 0),
                flags: RunFlags {
                    left_runs: true,
                    switch_on_lever: true,
                    ..RunFlags::default()
                },
            }),
            HostCommand::Clock(ClockCommand::Beep { units: 4 }),
            HostCommand::Clock(ClockCommand::text("e2e4", true)),
        ]
    }

    #[test]
    fn documented_byte_layouts() {
        assert_eq!(
            HostCommand::Leds(LedCommand::Off).encode(),
            [0x60, 0x04, 0x00, 0x40, 0x40, 0x00]
        );
        assert_eq!(
            HostCommand::Leds(LedCommand::KeepNumbering).encode(),
            [0x60, 0x04, 0x02, 0x02, 0x00, 0x00]
        );
        assert_eq!(
            HostCommand::Clock(ClockCommand::End).encode(),
            [0x2b, 0x03, 0x03, 0x03, 0x00]
        );
        assert_eq!(
            HostCommand::Clock(ClockCommand::Beep { units: 2 }).encode(),
            [0x2b, 0x04, 0x03, 0x0b, 0x02, 0x00]
        );
        let set = HostCommand::Clock(ClockCommand::SetAndRun {
            left: Hms { h: 0, m: 3, s: 0 },
            right: Hms { h: 0, m: 3, s: 0 },
            flags: RunFlags {
                left_runs: true,
                ..RunFlags::default()
            },
        });
        assert_eq!(
            set.encode(),
            [0x2b, 0x0a, 0x03, 0x0a, 0, 3, 0, 0, 3, 0, 0x01, 0x00]
        );
        let text = HostCommand::Clock(ClockCommand::text("hello", false)).encode();
        assert_eq!(text.len(), 14);
        assert_eq!(&text[..4], &[0x2b, 0x0c, 0x03, 0x0c]);
        let display = HostCommand::Clock(ClockCommand::Display {
            segments: [0; 6],
            icons: 0,
            beep: 0,
        })
        .encode();
        assert_eq!(&display[..4], &[0x2b, 0x0b, 0x03, 0x01]);
        assert_eq!(display.len(), 13);
        let icons = HostCommand::Clock(ClockCommand::Icons {
            bytes: [0; 4],
            special: 0,
        })
        .encode();
        assert_eq!(&icons[..4], &[0x2b, 0x0b, 0x03, 0x02]);
        assert_eq!(icons.len(), 13);
    }

    #[test]
    fn every_command_parses_back_in_any_chunking() {
        let cmds = all_commands();
        let bytes: Vec<u8> = cmds.iter().flat_map(|c| c.encode()).collect();
        let expect: Vec<HostInput> = cmds.into_iter().map(HostInput::Command).collect();
        assert_eq!(CommandParser::new().feed(&bytes), expect);
        let mut p = CommandParser::new();
        let one_by_one: Vec<HostInput> = bytes.iter().flat_map(|b| p.feed(&[*b])).collect();
        assert_eq!(one_by_one, expect);
    }

    #[test]
    fn invalid_host_bytes_are_reported() {
        let out = CommandParser::new().feed(&[0x99, 0x2b, 0x01, 0x42, 0x2b, 0x03, 0x03, 0x7e, 0x00]);
        assert_eq!(out.len(), 4, "{out:?}");
        assert!(matches!(&out[0], HostInput::Invalid { .. }));
        assert!(matches!(&out[1], HostInput::Invalid { .. }));
        assert_eq!(out[2], HostInput::Command(HostCommand::SendBoard));
        assert!(matches!(&out[3], HostInput::Invalid { reason, .. } if reason.contains("7e")));
    }
}
