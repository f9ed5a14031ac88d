//! The words of what the rules core decides, made where they are shown (the
//! JSON and text of events, the console): the core itself makes values, not
//! sentences. Above `rules` in the layers: `rules` does not import it.

use serde::Serialize;

use crate::rules::{Penalty, Profile, Side};

/// A penalty's words, where it is shown (the JSON and text of events, the
/// console): the rules core decides the penalty, its text is made here.
impl std::fmt::Display for Penalty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let offender = self.offender.name();
        let opponent = match self.offender {
            Side::White => Side::Black,
            Side::Black => Side::White,
        }
        .name();
        let (minutes, article) = match self.profile {
            Profile::Standard => ("2 minutes", "7.5.5"),
            Profile::Rapid => ("1 minute", "A.4.2, 7.5.5"),
            Profile::Blitz => ("1 minute", "B.3, A.4.2, 7.5.5"),
        };
        if self.count <= 1 {
            write!(
                f,
                "first completed violation by {offender}: {minutes} extra time to {opponent} (Art. {article})"
            )?;
        } else {
            write!(
                f,
                "completed violation number {} by {offender}: the game is lost for {offender}, or drawn if {opponent} cannot checkmate by any series of legal moves (Art. {article})",
                self.count
            )?;
        }
        if self.to_clock {
            f.write_str("; added to the clock")?;
        }
        Ok(())
    }
}

/// In JSON, a penalty is its words.
impl Serialize for Penalty {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_penalty_says_what_the_laws_prescribe_for_its_count_and_profile() {
        let p = Penalty {
            profile: Profile::Standard,
            offender: Side::White,
            count: 1,
            to_clock: false,
        };
        assert_eq!(
            p.to_string(),
            "first completed violation by white: 2 minutes extra time to black (Art. 7.5.5)"
        );
        let second = Penalty {
            profile: Profile::Blitz,
            offender: Side::Black,
            count: 2,
            to_clock: true,
        };
        assert_eq!(
            serde_json::to_string(&second).unwrap(),
            "\"completed violation number 2 by black: the game is lost for black, or drawn if white cannot \
             checkmate by any series of legal moves (Art. B.3, A.4.2, 7.5.5); added to the clock\""
        );
    }
}
