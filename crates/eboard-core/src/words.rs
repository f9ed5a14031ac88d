//! The words of what the rules core decides, made where they are shown (the
//! JSON and text of events, the console): the core itself makes values, not
//! sentences. Above `rules` in the layers: `rules` does not import it.

use serde::Serialize;
use shakmaty::Position;

use crate::rules::{Decision, EventKind, Game, Penalty, Profile, Side};

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

/// A clock time as the DGT 3000 shows it: `1:30:00`, `5:00`.
pub fn clock_time(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let s = ms.unsigned_abs() / 1000;
    if s >= 3600 {
        format!("{sign}{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{sign}{}:{:02}", s / 60, s % 60)
    }
}

/// Ply `ply` of `game` as a score sheet writes it: `14. Qf3`, `14... Nc6`.
pub fn ply_words(game: &Game, ply: usize) -> Option<String> {
    let m = game.moves.get(ply.checked_sub(1)?)?;
    let before = game.positions.get(ply - 1)?;
    let number = before.fullmoves();
    Some(if before.turn().is_white() {
        format!("{number}. {}", m.san)
    } else {
        format!("{number}... {}", m.san)
    })
}

/// An arbiter's decision in words, for the history of a board (`ctl
/// history`, `ctl watch`, the console): "take back to 14. Qf3 (ply 27)",
/// "white +2:00". `game` is the game as the decision left it, for the moves it
/// names.
pub fn call_words(decision: &Decision, game: Option<&Game>) -> String {
    let shown = |tags: &std::collections::BTreeMap<String, String>| -> String {
        let t: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        t.join(" ")
    };
    match decision {
        Decision::NewGame(None) => "new game".into(),
        Decision::NewGame(Some(f)) => format!("new game from {}", f.as_str()),
        Decision::SetPosition(f) => format!("position {}", f.as_str()),
        Decision::Reinstate(0) => "take back to the start".into(),
        Decision::Reinstate(p) => match game.and_then(|g| ply_words(g, *p as usize)) {
            Some(m) => format!("take back to {m} (ply {p})"),
            None => format!("take back to ply {p}"),
        },
        Decision::SetResult(r, None) => format!("result {r}"),
        Decision::SetResult(r, Some(t)) => format!("result {r} ({})", t.as_str()),
        Decision::SetTimeControl { spec, .. } => format!("time control {}", spec.as_str()),
        Decision::SetClock(w, b) => {
            format!(
                "clocks set: white {}, black {}",
                clock_time(w.ms()),
                clock_time(b.ms())
            )
        }
        Decision::AddTime(side, s) => {
            let s = s.get();
            let sign = if s < 0 { "-" } else { "+" };
            format!("{} {sign}{}", side.name(), clock_time(i64::from(s).abs() * 1000))
        }
        Decision::Undo { force: false } => "undo".into(),
        Decision::Undo { force: true } => "undo, dropping the plies recorded since".into(),
        Decision::SetPlayers(w, b) => format!("players {w} - {b}"),
        Decision::ShowText(text, _) => format!("\"{text}\" shown on the clock"),
        Decision::SetTags(tags) => format!("tags {}", shown(tags)),
        Decision::SetPairing(0, tags) => format!("pairing: {}", shown(tags)),
        Decision::SetPairing(r, tags) => format!("pairing for round {r}: {}", shown(tags)),
        Decision::SetLichessRound(r, id) if id.is_empty() => format!("round {r} no longer pushed to lichess"),
        // Several ids apart by spaces: boards 1-64 to the first, 65-128 to the second, ...
        Decision::SetLichessRound(r, ids) if ids.trim().contains(' ') => format!(
            "round {r} pushed to lichess broadcast rounds {}, 64 boards each",
            ids.split_whitespace().collect::<Vec<_>>().join(", ")
        ),
        Decision::SetLichessRound(r, id) => format!("round {r} pushed to lichess broadcast round {id}"),
        // A newer daemon's call: as its record holds it.
        Decision::Unknown { method, args } => {
            let shown: Vec<String> = args.iter().map(ToString::to_string).collect();
            format!("{method} {}", shown.join(" ")).trim_end().to_string()
        }
    }
}

/// What an event of the rules core says to an arbiter looking back over a
/// board (`ctl history`): `Some((kind, words))` for what needed them or marks
/// the game's course (`alert`: irregularities, touch-move, flags, draws
/// claimable, a clock not answering; `game`: a game's start and end), `None`
/// for the rest (moves, touches, clock reports; decisions are
/// [`call_words`]).
pub fn history_words(kind: &EventKind) -> Option<(&'static str, String)> {
    let squares = |s: &[shakmaty::Square]| {
        let names: Vec<String> = s.iter().map(ToString::to_string).collect();
        if names.is_empty() {
            String::new()
        } else {
            format!(" on {}", names.join(", "))
        }
    };
    Some(match kind {
        EventKind::GameStart { game, .. } => ("game", format!("game {game} starts")),
        EventKind::GameEnd { result, termination } => ("game", format!("game ends {result} ({termination})")),
        EventKind::Irregular {
            kind,
            side,
            squares: sq,
            penalty,
            ..
        } => {
            let what = kind.name().replace('_', " ");
            let base = format!("irregular: {what}, {}{}", side.name(), squares(sq));
            match penalty {
                Some(p) => ("alert", format!("{base}: {p}")),
                None => ("alert", base),
            }
        }
        EventKind::Resolved { .. } => ("alert", "the irregularity is resolved".into()),
        EventKind::TouchMove {
            article,
            side,
            touched,
            played,
        } => (
            "alert",
            format!(
                "touch-move (Art. {}): {} touched{} and played {played}",
                article.number(),
                side.name(),
                squares(touched)
            ),
        ),
        EventKind::Flag { side, ply, .. } => ("alert", format!("{}'s flag fell at ply {ply}", side.name())),
        EventKind::DrawClaimable { reason } => (
            "alert",
            format!("a draw may be claimed: {}", reason.name().replace('_', " ")),
        ),
        EventKind::ClockUnresponsive { .. } => ("alert", "the clock does not answer".into()),
        _ => return None,
    })
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
