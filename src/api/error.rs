//! A board's answer to a call that it refuses: the errors D-Bus names
//! `org.eboardbridge.Error.*` (`docs/INTERFACES.md`). The sinks answer with
//! them (MQTT, the console); `bus` turns them into its D-Bus error type.

/// Prefix of the errors' D-Bus names.
pub const ERROR_PREFIX: &str = "org.eboardbridge.Error";

/// Why a board (or the daemon) refused a call. Shown as D-Bus shows an error:
/// its name, a colon and the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An argument is malformed (a FEN, a result, a time control).
    #[error("org.eboardbridge.Error.InvalidArgument: {0}")]
    InvalidArgument(String),
    /// There is no game to act on, or the ply does not exist.
    #[error("org.eboardbridge.Error.NoGame: {0}")]
    NoGame(String),
    /// The board is not connected (clock commands).
    #[error("org.eboardbridge.Error.NotConnected: {0}")]
    NotConnected(String),
    /// The board's task has stopped (the daemon is shutting down).
    #[error("org.eboardbridge.Error.Unavailable: {0}")]
    Unavailable(String),
    /// The call would change what a game under way depends on (a time control
    /// while moves are being played).
    #[error("org.eboardbridge.Error.GameUnderWay: {0}")]
    GameUnderWay(String),
    /// No board has the number a call names (`SetPairings`).
    #[error("org.eboardbridge.Error.NoBoard: {0}")]
    NoBoard(String),
    /// An undo with nothing it may take back (the message says what to do).
    #[error("org.eboardbridge.Error.NotUndone: {0}")]
    NotUndone(String),
    /// A decision the rule book says the arbiter must confirm, not confirmed:
    /// what it would change (`rules::book`), and how to confirm it.
    #[error("org.eboardbridge.Error.NeedsForce: {}", crate::rules::book::refusal(.0))]
    NeedsForce(String),
}

/// A decision the rules core refused, as the doors answer it.
impl From<crate::rules::Refused> for Error {
    fn from(r: crate::rules::Refused) -> Error {
        use crate::rules::Refused;
        match r {
            Refused::InvalidArgument(m) => Error::InvalidArgument(m),
            Refused::NoGame(m) => Error::NoGame(m),
            Refused::GameUnderWay(m) => Error::GameUnderWay(m),
            Refused::NotUndone(m) => Error::NotUndone(m),
        }
    }
}

impl Error {
    /// The error's name without [`ERROR_PREFIX`] (`InvalidArgument`, ...).
    pub fn short_name(&self) -> &'static str {
        match self {
            Error::InvalidArgument(_) => "InvalidArgument",
            Error::NoGame(_) => "NoGame",
            Error::NotConnected(_) => "NotConnected",
            Error::Unavailable(_) => "Unavailable",
            Error::GameUnderWay(_) => "GameUnderWay",
            Error::NoBoard(_) => "NoBoard",
            Error::NotUndone(_) => "NotUndone",
            Error::NeedsForce(_) => "NeedsForce",
        }
    }

    /// The error's D-Bus name (`org.eboardbridge.Error.InvalidArgument`, ...).
    pub fn name(&self) -> String {
        format!("{ERROR_PREFIX}.{}", self.short_name())
    }

    /// What went wrong, in words.
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArgument(m)
            | Error::NoGame(m)
            | Error::NotConnected(m)
            | Error::Unavailable(m)
            | Error::GameUnderWay(m)
            | Error::NoBoard(m)
            | Error::NotUndone(m)
            | Error::NeedsForce(m) => m,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_as_its_name_and_message() {
        let e = Error::NoGame("no ply 9".into());
        assert_eq!(e.name(), "org.eboardbridge.Error.NoGame");
        assert_eq!(e.message(), "no ply 9");
        assert_eq!(e.to_string(), format!("{}: {}", e.name(), e.message()));
    }
}
