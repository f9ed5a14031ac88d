//! What the daemon published live, as it published it, and the invariants
//! judged on it (issue 62: the judge read only the final state and `replay`,
//! so a ply published and then withdrawn, or an alarm never cleared on the
//! air, passed).
//!
//! A listener on the round's bus, from before the first start to the end:
//! every signal of every board (`MoveMade`, `TakeBack`, `MoveAmended`,
//! `GameStarted`, `Irregular`, `Resolved`, `GameEnded`) and every change of its
//! `Moves` (each version of the game's moves as clients saw it). The bus stays
//! up across the daemon's restarts, so the listener hears every process; the
//! round marks each stop and each start in the same timeline.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::Instant;

/// One thing heard of a board (0-based), or said by the round.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    /// The game's moves, as a `PropertiesChanged` showed them.
    Moves(Vec<String>),
    /// A signal: its member and, for `TakeBack`/`MoveAmended`/`MoveMade`, its ply.
    Signal(String, u32),
    /// The daemon stopped (killed or terminated): what it showed stands.
    Stopped,
    /// The daemon serves the board again; its `Irregularity` then.
    Started { irregular: bool },
    /// The round's own decision that sets the record (`NewGame`,
    /// `SetPosition`, `Reinstate`, `Undo`) was accepted.
    Decided(String),
    /// The board's line cut for this many ms.
    Cut(u64),
    /// An `Irregular` signal's kind and violation count (heard with its
    /// `Signal`).
    Alarm(String, u32),
    /// The clocks' times (ms) a `PropertiesChanged` showed (white's, black's;
    /// `None`: not in that change).
    Clock(Option<i64>, Option<i64>),
    /// The players (`White`, `Black`) a `PropertiesChanged` showed (`None`:
    /// not in that change).
    Players(Option<String>, Option<String>),
    /// The players the daemon shows once it serves the board again after a
    /// start (read by the round).
    PlayersAtStart(String, String),
    /// The round named the players of the board's game or next games (a swap
    /// asked, a pairings file read again, a round started).
    Named,
    /// The round set both clocks to seconds (`ctl set-clock`, accepted) on a
    /// game under way: flags must follow.
    ClockSet,
    /// The round is about to change a clock (`ctl add-time`, then `ctl
    /// undo`): a flag not yet fallen may never fall (seed 1119: Black's
    /// display at 0:00:00 with 0.2 s of the clock's time left, then the
    /// undo's set-and-run put it at 0:00:00 stopped).
    ClockChanged,
}

/// How long (real ms) after a start or a cut the daemon may still be finding
/// the board again (its reopen, the dump, a gap's search), with room to spare.
const READ_AGAIN_MS: u64 = 3000;

/// How far (real ms) a hold's time as the hands played it may lie from the
/// time it was heard (the hands' time is laid on the timeline by the moves'
/// signals, each heard a release threshold after its placement).
const HOLD_SLACK_MS: u64 = 400;

/// How long (real ms) after an alarm a move may be published before its
/// resolution (moves found across a gap come with it).
const OVER_MOVES_MS: u64 = 2000;

/// How long (real ms) after a publication's signals its properties may be
/// heard (D-Bus sends the signals first, then the properties they lead to).
const SAME_PUBLICATION_MS: u64 = 100;

/// The timeline heard: (real ms from the listener's start, board, what).
#[derive(Clone, Default)]
pub struct Timeline(Arc<Mutex<Vec<(u64, usize, Heard)>>>);

/// The listener and its timeline.
pub struct Listener {
    pub heard: Timeline,
    pub since: Instant,
    task: tokio::task::JoinHandle<()>,
}

impl Timeline {
    fn push(&self, since: Instant, board: usize, what: Heard) {
        let ms = since.elapsed().as_millis() as u64;
        self.0.lock().unwrap().push((ms, board, what));
    }

    /// Everything heard of board `board`, in order.
    pub fn of(&self, board: usize) -> Vec<(u64, Heard)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, b, _)| *b == board)
            .map(|(t, _, h)| (*t, h.clone()))
            .collect()
    }
}

impl Listener {
    /// Listens on the bus at `address` from now on.
    pub async fn start(address: &str) -> Listener {
        let client = super::common::bus_client(address).await;
        let rule = zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .path_namespace("/org/eboardbridge/board")
            .unwrap()
            .build();
        let mut stream = tokio::time::timeout(
            Duration::from_secs(10),
            zbus::MessageStream::for_match_rule(rule, &client, None),
        )
        .await
        .expect("the bus took no match rule in 10 s")
        .expect("a match rule for the boards' signals");
        let heard = Timeline::default();
        let since = Instant::now();
        let into = heard.clone();
        let task = tokio::spawn(async move {
            let _client = client;
            while let Some(Ok(msg)) = stream.next().await {
                let header = msg.header();
                let Some(board) = header
                    .path()
                    .and_then(|p| p.as_str().rsplit('/').next())
                    .and_then(|id| id.strip_prefix("line"))
                    .and_then(|n| n.parse::<usize>().ok())
                else {
                    continue;
                };
                let member = header.member().map(|m| m.to_string()).unwrap_or_default();
                let body = msg.body();
                let what = match member.as_str() {
                    "PropertiesChanged" => {
                        let Some(changed) = super::common::changed_properties(&body) else {
                            continue;
                        };
                        let ms = |name: &str| {
                            changed
                                .get(name)
                                .and_then(|v| v.try_clone().ok())
                                .and_then(|v| i64::try_from(v).ok())
                        };
                        let (w, b) = (ms("WhiteClockMs"), ms("BlackClockMs"));
                        if w.is_some() || b.is_some() {
                            into.push(since, board, Heard::Clock(w, b));
                        }
                        let text = |name: &str| {
                            changed
                                .get(name)
                                .and_then(|v| v.try_clone().ok())
                                .and_then(|v| String::try_from(v).ok())
                        };
                        let (w, b) = (text("White"), text("Black"));
                        if w.is_some() || b.is_some() {
                            into.push(since, board, Heard::Players(w, b));
                        }
                        let Some(moves) = super::common::changed_texts(&changed, "Moves") else {
                            continue;
                        };
                        Heard::Moves(moves)
                    }
                    "MoveMade" => {
                        let ply = body.deserialize::<(u32, String, String, String)>().map(|b| b.0);
                        Heard::Signal(member, ply.unwrap_or(0))
                    }
                    "TakeBack" => {
                        let ply = body.deserialize::<(u32, String)>().map(|b| b.0);
                        Heard::Signal(member, ply.unwrap_or(0))
                    }
                    "MoveAmended" => {
                        let ply = body
                            .deserialize::<(u32, String, String, String, String)>()
                            .map(|b| b.0);
                        Heard::Signal(member, ply.unwrap_or(0))
                    }
                    "Irregular" => {
                        if let Ok((kind, _, _, _, count)) =
                            body.deserialize::<(String, String, Vec<String>, bool, u32)>()
                        {
                            into.push(since, board, Heard::Alarm(kind, count));
                        }
                        Heard::Signal(member, 0)
                    }
                    "Flag" => {
                        let ply = body.deserialize::<(String, u32, bool)>().map(|b| b.1);
                        Heard::Signal(member, ply.unwrap_or(0))
                    }
                    "GameStarted" | "Resolved" | "GameEnded" => Heard::Signal(member, 0),
                    _ => continue,
                };
                into.push(since, board, what);
            }
        });
        Listener { heard, since, task }
    }

    /// Marks something the round did.
    pub fn mark(&self, board: usize, what: Heard) {
        self.heard.push(self.since, board, what);
    }

    pub fn stop(self) -> Timeline {
        self.task.abort();
        self.heard
    }
}

/// What the live timeline of one board shows against the invariants:
/// - no ply published is withdrawn without a word: each version of the moves
///   keeps the plies of the one before, unless a `TakeBack` (to the ply kept),
///   a `MoveAmended`, a new game (`GameStarted`) or the round's own decision
///   setting the record came between; across a restart too (the first version
///   the new process shows keeps what the old one showed last);
/// - every alarm raised on the air is cleared on the air: each `Irregular` is
///   followed by a `Resolved` (a game's end or a new game is not a word)
///   before the daemon stops, unless it stops before any move is published
///   over the alarm (the new process shows its own alarm, read when it serves
///   the board again, which must be cleared the same way); an alarm standing
///   when its game ended is cleared with a word or stays reported (the new
///   process shows it again), never dropped across a restart;
/// - each piece the hands held where no move goes longer than the threshold
///   (`holds`: real ms from the listener's start, placed to lifted) while the
///   daemon read the board throughout (no stop, start or cut near it) is
///   raised: an `Irregular` in its time, or one standing then.
pub fn judge(heard: &[(u64, Heard)], holds: &[(u64, u64)]) -> Vec<String> {
    let mut failures = Vec::new();
    // Withdrawals.
    let mut last: Vec<String> = Vec::new();
    let mut word: Option<usize> = None; // the ply a word allows the record to go back to
    for (t, h) in heard {
        match h {
            Heard::Signal(m, ply) if m == "TakeBack" => {
                word = Some(word.map_or(*ply as usize, |w| w.min(*ply as usize)));
            }
            Heard::Signal(m, ply) if m == "MoveAmended" => {
                let back = (*ply as usize).saturating_sub(1);
                word = Some(word.map_or(back, |w| w.min(back)));
            }
            Heard::Signal(m, _) if m == "GameStarted" => word = Some(0),
            Heard::Decided(_) => word = Some(0),
            Heard::Moves(moves) => {
                let kept = last.iter().zip(moves).take_while(|(a, b)| a == b).count();
                if kept < last.len() && word.is_none_or(|w| kept < w) {
                    failures.push(format!(
                        "at {:.1} s the moves went from {} plies ({}) to {} ({}) without a word: plies {}-{} withdrawn",
                        *t as f64 / 1000.0,
                        last.len(),
                        last.last().map_or("", String::as_str),
                        moves.len(),
                        moves.last().map_or("", String::as_str),
                        kept + 1,
                        last.len()
                    ));
                }
                last = moves.clone();
                word = None;
            }
            _ => {}
        }
    }
    // The players shown: across a restart, the new process shows those the
    // old one showed last, unless the round named others meanwhile (a swap
    // asked, a pairings file read again, a round started) or a new game
    // began (issue 62: a `SetPlayers` lost on resume).
    let mut shown: (Option<String>, Option<String>) = (None, None);
    let mut named = false;
    let mut stopped: Option<u64> = None;
    for (t, h) in heard {
        match h {
            Heard::Players(w, b) => {
                shown = (w.clone().or(shown.0), b.clone().or(shown.1));
                named = false;
            }
            Heard::Named => named = true,
            Heard::Signal(m, _) if m == "GameStarted" => named = true,
            Heard::Stopped => {
                stopped.get_or_insert(*t);
            }
            Heard::PlayersAtStart(w, b) => {
                if let (Some(at), (Some(was_w), Some(was_b)), false) = (stopped, &shown, named) {
                    if (was_w, was_b) != (w, b) {
                        failures.push(format!(
                            "across the restart at {:.1} s the players went from {was_w} - {was_b} to {w} - {b} without a word (no decision, reload, round or new game)",
                            at as f64 / 1000.0
                        ));
                    }
                }
                shown = (Some(w.clone()), Some(b.clone()));
                named = false;
                stopped = None;
            }
            _ => {}
        }
    }
    // Alarms: when each stood (from, to). One the process stopped under may
    // still have stood (its new process shows its own); but not over moves
    // published after it (moves found across a gap come with the resolution,
    // in the same publication).
    // An alarm standing when its game ended must be cleared with a word
    // (`Resolved`) or stay reported: one the process stopped under (the
    // game's end, then no word) and the new process does not show again
    // was dropped without a word.
    let mut raised: Option<u64> = None;
    let mut stood: Vec<(u64, u64)> = Vec::new();
    let mut over_moves = false;
    let mut ended_under: Option<u64> = None;
    let mut dropped_at_end: Option<(u64, u64)> = None;
    for (t, h) in heard {
        match h {
            Heard::Signal(m, _) if m == "Irregular" => {
                raised.get_or_insert(*t);
            }
            Heard::Signal(m, _) if m == "GameEnded" && raised.is_some() => {
                ended_under.get_or_insert(*t);
            }
            Heard::Signal(m, _)
                if m == "MoveMade" && raised.is_some_and(|from| *t > from + OVER_MOVES_MS) =>
            {
                over_moves = true;
            }
            Heard::Signal(m, _) if m == "Resolved" => {
                if let Some(from) = raised.take() {
                    stood.push((from, *t));
                }
                over_moves = false;
                ended_under = None;
            }
            Heard::Stopped => {
                if let Some(from) = raised.take() {
                    stood.push((from, *t));
                    if over_moves {
                        failures.push(format!(
                            "the alarm raised at {:.1} s stood on the air over the moves that followed, never cleared (no Resolved)",
                            from as f64 / 1000.0
                        ));
                    }
                    // Its word may have been on its way (the signals of one
                    // publication follow each other).
                    dropped_at_end = ended_under
                        .filter(|end| *t > end + SAME_PUBLICATION_MS)
                        .map(|end| (from, end));
                }
                over_moves = false;
                ended_under = None;
            }
            Heard::Started { irregular } => {
                if let Some((from, end)) = dropped_at_end.take() {
                    if !*irregular {
                        failures.push(format!(
                            "the alarm raised at {:.1} s stood when its game ended at {:.1} s and was dropped without a word (no Resolved, not shown again)",
                            from as f64 / 1000.0,
                            end as f64 / 1000.0
                        ));
                    }
                }
                if *irregular {
                    raised.get_or_insert(*t);
                }
            }
            _ => {}
        }
    }
    if let Some(t) = raised {
        failures.push(format!(
            "the alarm raised at {:.1} s was never cleared on the air (no Resolved)",
            t as f64 / 1000.0
        ));
        stood.push((t, u64::MAX));
    }
    // Each hold the daemon could see whole: none while it was down or its line
    // cut, or still finding the board again after either.
    let mut blind: Vec<(u64, u64)> = Vec::new();
    let mut down: Option<u64> = None;
    for (t, h) in heard {
        match h {
            Heard::Stopped => {
                down.get_or_insert(*t);
            }
            Heard::Started { .. } => blind.push((down.take().unwrap_or(*t), *t + READ_AGAIN_MS)),
            Heard::Cut(ms) => blind.push((*t, *t + ms + READ_AGAIN_MS)),
            _ => {}
        }
    }
    if let Some(t) = down {
        blind.push((t, u64::MAX));
    }
    let unseen = |from: u64, to: u64| blind.iter().any(|(a, z)| *a <= to && *z >= from);
    let mut judged = 0;
    for &(from, to) in holds {
        let (from, to) = (from.saturating_sub(HOLD_SLACK_MS), to + HOLD_SLACK_MS);
        if unseen(from, to) {
            continue;
        }
        judged += 1;
        let shown = stood.iter().any(|(a, z)| *a <= to && *z >= from);
        if !shown {
            failures.push(format!(
                "a piece held where no move goes from {:.1} s to {:.1} s was never raised as irregular",
                from as f64 / 1000.0,
                to as f64 / 1000.0
            ));
        }
    }
    let count = |what: &str| {
        heard
            .iter()
            .filter(|(_, h)| matches!(h, Heard::Signal(m, _) if m == what))
            .count()
    };
    println!(
        "  heard live: {} versions of the moves, {} MoveMade, {} TakeBack, {} Irregular, {} Resolved; holds judged {judged} of {}",
        heard.iter().filter(|(_, h)| matches!(h, Heard::Moves(_))).count(),
        count("MoveMade"),
        count("TakeBack"),
        count("Irregular"),
        count("Resolved"),
        holds.len()
    );
    failures
}

/// No alarm raised live that the journal does not show (issue 58: after a
/// SIGKILL, a `clock_without_move` was raised and counted as violation 1,
/// which `replay` of the journal never raised): every kind heard live is a
/// kind `replay` raises, and no violation count heard is above its highest.
pub fn judge_alarms(heard: &[(u64, Heard)], replayed: &BTreeSet<String>, replayed_count: u32) -> Vec<String> {
    let mut failures = Vec::new();
    for (t, h) in heard {
        if let Heard::Alarm(kind, count) = h {
            if !replayed.contains(kind) {
                failures.push(format!(
                    "at {:.1} s an alarm `{kind}` was raised live that replay of the journal never raises",
                    *t as f64 / 1000.0
                ));
            }
            if *count > replayed_count {
                failures.push(format!(
                    "at {:.1} s violation {count} was counted live, replay of the journal counts {replayed_count}",
                    *t as f64 / 1000.0
                ));
            }
        }
    }
    failures
}

/// How long (real ms) after a clock was published at 0 the flag must be
/// reported: the daemon reports it with the clock report that shows it, or at
/// its own model's next tick; with room to spare.
pub const FLAG_WITHIN_MS: u64 = 5_000;

/// Each time the round set both clocks to seconds on a game under way
/// (`ClockSet`) and a clock was then published at 0 (with an increment a quick
/// mover may keep its clock alive: no flag is owed then), a flag is reported
/// (`Flag`) by [`FLAG_WITHIN_MS`] after it, plus the time the daemon was down
/// or its line cut meanwhile and read again -- unless the game ended, a new
/// one began or the round changed a clock first (a display at 0:00:00 still
/// has up to a second of the clock's time: the flag falls then). And no flag ends the game: nothing ends it between a flag
/// and the next move (the campaign's daemon reports flags, it does not judge
/// them).
pub fn judge_flags(heard: &[(u64, Heard)]) -> Vec<String> {
    let mut failures = Vec::new();
    for (k, (set_at, h)) in heard.iter().enumerate() {
        if !matches!(h, Heard::ClockSet) {
            continue;
        }
        let mut until: Option<u64> = None;
        let mut zero_at = 0;
        let mut flagged = false;
        let mut over = false;
        for (t, h) in &heard[k + 1..] {
            if until.is_some_and(|u| *t > u) {
                break;
            }
            match h {
                Heard::Signal(m, _) if m == "Flag" => {
                    flagged = true;
                    break;
                }
                Heard::ClockSet => break,
                Heard::Signal(m, _) if (m == "GameEnded" || m == "GameStarted") && until.is_none() => {
                    over = true;
                    break;
                }
                Heard::Decided(_) | Heard::ClockChanged => {
                    over = true;
                    break;
                }
                Heard::Clock(w, b) if until.is_none() && (*w == Some(0) || *b == Some(0)) => {
                    zero_at = *t;
                    until = Some(t + FLAG_WITHIN_MS);
                }
                Heard::Stopped => until = until.map(|u| u + 2 * FLAG_WITHIN_MS),
                Heard::Started { .. } => until = until.map(|u| u.max(t + READ_AGAIN_MS + FLAG_WITHIN_MS)),
                Heard::Cut(ms) => until = until.map(|u| u.max(t + ms + READ_AGAIN_MS + FLAG_WITHIN_MS)),
                _ => {}
            }
        }
        let Some(until) = until else { continue };
        // Not judged when the round's timeline ended first.
        let watched = heard.last().is_some_and(|(t, _)| *t > until);
        if !flagged && !over && watched {
            failures.push(format!(
                "at {:.1} s both clocks were set to seconds on a game under way; a clock was published at 0 at {:.1} s, and no flag was reported by {:.1} s",
                *set_at as f64 / 1000.0,
                zero_at as f64 / 1000.0,
                until as f64 / 1000.0
            ));
        }
    }
    // A flag reported, then the game ended by the daemon with no move, no
    // decision and no result by kings between: a flag judged, not reported.
    let mut flag_at: Option<u64> = None;
    for (t, h) in heard {
        match h {
            Heard::Signal(m, _) if m == "Flag" => flag_at = Some(*t),
            Heard::Signal(m, _) if m == "MoveMade" => flag_at = None,
            Heard::Decided(_) | Heard::Stopped => flag_at = None,
            Heard::Signal(m, _) if m == "GameEnded" => {
                if let Some(f) = flag_at.filter(|f| t.saturating_sub(*f) < SAME_PUBLICATION_MS) {
                    failures.push(format!(
                        "at {:.1} s the game ended {} ms after a flag with no move between: a flag is reported, not judged",
                        *t as f64 / 1000.0,
                        t - f
                    ));
                }
                flag_at = None;
            }
            _ => {}
        }
    }
    failures
}

/// The clocks (white's, black's ms) as published last when the game ended
/// (its first `GameEnded`), if it ended and the process that ended it
/// published them.
pub fn clocks_at_end(heard: &[(u64, Heard)]) -> Option<(i64, i64)> {
    let end = heard
        .iter()
        .position(|(_, h)| matches!(h, Heard::Signal(m, _) if m == "GameEnded"))?;
    // Only what the process that ended it published: a new process shows its
    // clocks only as they change (seeds 106 and 109: a mate found after a
    // restart, before the new process's first clock change, was judged
    // against the old process's clocks).
    let (mut w, mut b) = (None, None);
    // The properties of the publication that ended it come after its signals.
    let ended_at = heard[end].0;
    for (t, h) in &heard[end + 1..] {
        match h {
            Heard::Clock(cw, cb) if *t <= ended_at + SAME_PUBLICATION_MS => {
                w = w.or(*cw);
                b = b.or(*cb);
            }
            Heard::Clock(..) | Heard::Started { .. } | Heard::Stopped => break,
            _ => {}
        }
    }
    for (_, h) in heard[..end].iter().rev() {
        match h {
            Heard::Clock(cw, cb) => {
                w = w.or(*cw);
                b = b.or(*cb);
            }
            Heard::Started { .. } | Heard::Stopped => break,
            _ => {}
        }
    }
    Some((w?, b?))
}

/// Whether the board's line was cut, or being read again after a cut, when
/// its game ended (its first `GameEnded`): the clocks the daemon knew then
/// were the last report before the cut (seed 936: the arbiter's 1/2-1/2
/// came as a 0.6 s cut ended, the last report 0.85 s of log old).
pub fn cut_at_end(heard: &[(u64, Heard)]) -> bool {
    let Some(end) = heard
        .iter()
        .find(|(_, h)| matches!(h, Heard::Signal(m, _) if m == "GameEnded"))
        .map(|(t, _)| *t)
    else {
        return false;
    };
    heard
        .iter()
        .any(|(t, h)| matches!(h, Heard::Cut(ms) if *t <= end && end <= t + ms + READ_AGAIN_MS))
}

/// A PGN clock tag's time (`H:MM:SS`) in ms.
pub fn tag_ms(tag: &str) -> Option<i64> {
    let mut parts = tag.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    Some(((h * 60 + m) * 60 + s) * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moves(sans: &[&str]) -> Heard {
        Heard::Moves(sans.iter().map(|s| s.to_string()).collect())
    }

    fn signal(m: &str, ply: u32) -> Heard {
        Heard::Signal(m.into(), ply)
    }

    /// A round as published: plies added, a take-back said, an alarm raised
    /// and cleared, a restart: no failure.
    fn good() -> Vec<(u64, Heard)> {
        vec![
            (100, moves(&["e4"])),
            (200, moves(&["e4", "e5"])),
            (300, signal("Irregular", 0)),
            (400, signal("Resolved", 0)),
            (500, signal("TakeBack", 1)),
            (510, moves(&["e4"])),
            (600, moves(&["e4", "c5"])),
            (5_000, Heard::Stopped),
            (5_100, Heard::Started { irregular: false }),
            (5_200, moves(&["e4", "c5", "Nf3"])),
        ]
    }

    /// Clocks set to seconds and one published at 0: a flag reported in time
    /// passes; none, or one that ends the game at once, fails; a clock never
    /// at 0 (increments kept it alive), a game that ended first, or a
    /// timeline that ended first is not judged; a restart meanwhile gives the
    /// new process its time to read the clock again.
    #[test]
    fn a_clock_at_zero_must_bring_a_flag_reported_not_judged() {
        let zero = |t| (t, Heard::Clock(Some(0), None));
        let mut h = vec![
            (1_000, Heard::ClockSet),
            (2_000, signal("Flag", 12)),
            zero(2_000),
            (30_000, signal("MoveMade", 13)),
        ];
        assert!(judge_flags(&h).is_empty(), "{:?}", judge_flags(&h));
        h.remove(1);
        let f = judge_flags(&h);
        assert!(
            f.len() == 1 && f[0].contains("published at 0 at 2.0 s, and no flag was reported by 7.0 s"),
            "{f:?}"
        );
        // The game ended first: not judged.
        h.insert(1, (1_500, signal("GameEnded", 0)));
        assert!(judge_flags(&h).is_empty());
        // The round changed a clock before the flag fell: not judged.
        let h = vec![
            (1_000, Heard::ClockSet),
            zero(2_000),
            (2_200, Heard::ClockChanged),
            (30_000, signal("MoveMade", 13)),
        ];
        assert!(judge_flags(&h).is_empty());
        // No clock at 0: not judged.
        let h = vec![
            (1_000, Heard::ClockSet),
            (2_000, Heard::Clock(Some(30_000), None)),
            (30_000, signal("MoveMade", 13)),
        ];
        assert!(judge_flags(&h).is_empty());
        // A restart: more time, and the flag after it passes.
        let h = vec![
            (1_000, Heard::ClockSet),
            zero(2_000),
            (2_500, Heard::Stopped),
            (2_800, Heard::Started { irregular: false }),
            (12_000, signal("Flag", 12)),
            (40_000, signal("MoveMade", 13)),
        ];
        assert!(judge_flags(&h).is_empty(), "{:?}", judge_flags(&h));
        // The timeline ended before the watch did: not judged.
        assert!(
            judge_flags(&[
                (1_000, Heard::ClockSet),
                zero(2_000),
                (5_000, signal("MoveMade", 13))
            ])
            .is_empty()
        );
        // A flag that ends the game in its own publication: judged, not reported.
        let h = vec![
            (1_000, Heard::ClockSet),
            (2_000, signal("Flag", 12)),
            (2_000, signal("GameEnded", 0)),
            zero(2_000),
            (30_000, signal("MoveMade", 13)),
        ];
        let f = judge_flags(&h);
        assert!(
            f.len() == 1 && f[0].contains("a flag is reported, not judged"),
            "{f:?}"
        );
    }

    #[test]
    fn a_round_as_published_passes() {
        assert_eq!(judge(&good(), &[(250, 350)]), Vec::<String>::new());
    }

    #[test]
    fn a_ply_withdrawn_without_a_word_fails() {
        let mut h = good();
        h.remove(4); // the TakeBack
        let f = judge(&h, &[]);
        assert!(f.len() == 1 && f[0].contains("plies 2-2 withdrawn"), "{f:?}");
    }

    #[test]
    fn plies_lost_across_a_restart_fail() {
        let mut h = good();
        h[9] = (5_200, moves(&["e4"]));
        let f = judge(&h, &[]);
        assert!(f.len() == 1 && f[0].contains("without a word"), "{f:?}");
    }

    #[test]
    fn an_alarm_never_cleared_on_the_air_fails() {
        let mut h = good();
        h.remove(3); // the Resolved
        h.truncate(6); // and no restart after it
        let f = judge(&h, &[]);
        assert!(f.len() == 1 && f[0].contains("never cleared"), "{f:?}");
        // A game's end is not a word.
        h.push((650, signal("GameEnded", 0)));
        assert_eq!(judge(&h, &[]).len(), 1);
        // Nor is a restart, after moves published over the alarm.
        let mut h = good();
        h.remove(3); // the Resolved
        h.insert(6, (2_500, moves(&["e4", "c5", "Nf3"])));
        h.insert(6, (2_500, signal("MoveMade", 3)));
        let f = judge(&h, &[]);
        assert!(f.len() == 1 && f[0].contains("over the moves"), "{f:?}");
        // A new process's own alarm must be cleared too.
        let mut h = good();
        h[8] = (5_100, Heard::Started { irregular: true });
        assert_eq!(judge(&h, &[]).len(), 1);
    }

    /// An alarm standing when its game ended (the arbiter's result over an
    /// illegal position), dropped without a word: no `Resolved`, and the
    /// process after the restart shows no alarm.
    #[test]
    fn an_alarm_dropped_at_a_games_end_fails() {
        let ended = |word: bool, shown_again: bool| {
            let mut h = vec![
                (100, moves(&["e4"])),
                (300, signal("Irregular", 0)),
                (1_000, signal("GameEnded", 0)),
            ];
            if word {
                h.push((1_001, signal("Resolved", 0)));
            }
            h.push((3_000, Heard::Stopped));
            h.push((
                3_500,
                Heard::Started {
                    irregular: shown_again,
                },
            ));
            if shown_again {
                h.push((4_000, signal("Resolved", 0)));
            }
            judge(&h, &[])
        };
        let f = ended(false, false);
        assert!(
            f.len() == 1
                && f[0].contains("stood when its game ended at 1.0 s and was dropped without a word"),
            "{f:?}"
        );
        // Cleared with a word, or still reported after the restart: no failure.
        assert_eq!(ended(true, false), Vec::<String>::new());
        assert_eq!(ended(false, true), Vec::<String>::new());
        // An alarm the process stopped under with no game's end may go
        // unsaid (the board put right while the daemon was down).
        let h = vec![
            (300, signal("Irregular", 0)),
            (3_000, Heard::Stopped),
            (3_500, Heard::Started { irregular: false }),
        ];
        assert_eq!(judge(&h, &[]), Vec::<String>::new());
    }

    /// Players the arbiter set, lost by a restart (the break `players`):
    /// the new process shows the pairing's again, with no word between.
    #[test]
    fn players_lost_across_a_restart_fail() {
        let players = |w: &str, b: &str| Heard::Players(Some(w.into()), Some(b.into()));
        let at_start = |w: &str, b: &str| Heard::PlayersAtStart(w.into(), b.into());
        let mut h = vec![
            (0, at_start("A", "B")),
            (100, moves(&["e4"])),
            (200, Heard::Named),
            (210, players("B", "A")),
            (3_000, Heard::Stopped),
            (3_500, Heard::Started { irregular: false }),
            (3_510, at_start("A", "B")),
        ];
        let f = judge(&h, &[]);
        assert!(
            f.len() == 1 && f[0].contains("the players went from B - A to A - B without a word"),
            "{f:?}"
        );
        // Kept across the restart: no failure.
        h[6] = (3_510, at_start("B", "A"));
        assert_eq!(judge(&h, &[]), Vec::<String>::new());
        // A swap asked just before the kill, taken and journaled but not
        // heard before it: a word, so no failure.
        h.insert(4, (2_990, Heard::Named));
        h[7] = (3_510, at_start("A", "C"));
        assert_eq!(judge(&h, &[]), Vec::<String>::new());
    }

    #[test]
    fn an_end_during_a_cut_or_its_reading_again_is_one_the_line_did_not_see() {
        let ended = |at: u64| (at, Heard::Signal("GameEnded".into(), 0));
        let mut h = vec![(1_000, Heard::Cut(600)), ended(1_500)];
        assert!(cut_at_end(&h), "during the cut");
        h[1] = ended(1_000 + 600 + READ_AGAIN_MS);
        assert!(cut_at_end(&h), "while the line is read again");
        h[1] = ended(1_000 + 600 + READ_AGAIN_MS + 1);
        assert!(!cut_at_end(&h), "after it");
        h[1] = ended(900);
        assert!(!cut_at_end(&h), "before it");
        assert!(!cut_at_end(&h[..1]), "no end");
    }

    #[test]
    fn an_alarm_that_should_stand_and_is_not_shown_fails() {
        // Late in a round, far from its restart: a hold with no alarm.
        let mut h = good();
        h.push((20_000, moves(&["e4", "c5", "Nf3", "d6"])));
        let f = judge(&h, &[(10_000, 10_750)]);
        assert!(f.len() == 1 && f[0].contains("never raised"), "{f:?}");
        // The same hold near a cut is not judged (the line was not read).
        h.push((8_000, Heard::Cut(500)));
        h.sort_by_key(|(t, _)| *t);
        assert_eq!(judge(&h, &[(10_000, 10_750)]), Vec::<String>::new());
    }

    /// The clocks judged are those published last before the game's end, not
    /// after it; a clock tag reads back as ms.
    #[test]
    fn the_clocks_at_the_end_are_those_before_it() {
        let h = vec![
            (100, Heard::Clock(Some(60_000), Some(60_000))),
            (200, Heard::Clock(Some(55_000), None)),
            (300, signal("GameEnded", 0)),
            (500, Heard::Clock(Some(1_000), Some(2_000))),
        ];
        assert_eq!(clocks_at_end(&h), Some((55_000, 60_000)));
        assert_eq!(clocks_at_end(&h[..2]), None);
        // The clocks of the publication that ended it, sent after its signals.
        let mut after = h.clone();
        after.insert(3, (340, Heard::Clock(None, Some(58_000))));
        assert_eq!(clocks_at_end(&after), Some((55_000, 58_000)));
        // Not across a restart.
        let mut restarted = h.clone();
        restarted.insert(2, (250, Heard::Started { irregular: false }));
        assert_eq!(clocks_at_end(&restarted), None);
        assert_eq!(tag_ms("1:02:03"), Some(3_723_000));
        assert_eq!(tag_ms("0:19"), None);
    }

    /// An alarm heard live that replay never raises, or a violation counted
    /// beyond replay's, fails.
    #[test]
    fn an_alarm_the_journal_does_not_show_fails() {
        let h = vec![
            (100, Heard::Alarm("illegal_move".into(), 0)),
            (200, Heard::Alarm("clock_without_move".into(), 1)),
        ];
        let kinds: BTreeSet<String> = ["illegal_move".to_string()].into();
        let f = judge_alarms(&h, &kinds, 0);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(
            f[0].contains("`clock_without_move`") && f[1].contains("violation 1"),
            "{f:?}"
        );
        let kinds: BTreeSet<String> = ["illegal_move".to_string(), "clock_without_move".to_string()].into();
        assert!(judge_alarms(&h, &kinds, 1).is_empty());
    }
}
