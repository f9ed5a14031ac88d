//! The broadcast delay (issue 61): spectators see each game as it stood
//! `delay` ago, the arbiter sees it now.
//!
//! The one seam is the board's publication ([`super::Publication`]): D-Bus
//! (the arbiter's `ctl`, the console's snapshot) is published inline before
//! it, and the sinks that show the game to spectators (the broadcast folder
//! and with it the pushes to lichess, the network's event history behind SSE,
//! MQTT, and each board's public snapshot behind `/api/boards`, the live page
//! and the LiveChess WebSocket) are offered it only through the daemon's
//! `Delayed`, which holds each board's publications in a [`Window`] and hands
//! each on once `delay` has passed since the board's task published it. A
//! publication is the whole state at that moment (the snapshot with its
//! clocks, the game files with their `%clk`), so what is released is the game
//! as it stood then, clocks and all; no surface reads the live state.
//!
//! This module is the pure part (time passed in, no I/O): the settings
//! ([`Delays`]), the words of a duration, and the per-board window.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{LiveMsg, Publication, Published, Snapshot};
use crate::rules::EventKind;

/// The longest delay taken (a day's round is over well before).
pub const MAX_DELAY_MS: u64 = 6 * 3600 * 1000;

/// Publications of one board less than this after the first of an entry
/// are held in it (the latest snapshot and files, every event), released
/// when the latest is due: a window holds at most one entry per 100 ms of
/// the delay (18,000 for 30 minutes) whatever the board sends, nothing is
/// released early, and nothing more than 100 ms after its time.
pub const MERGE: Duration = Duration::from_millis(100);

/// What becomes of a game once it has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finished {
    /// Its last moves, its end and its result are delayed like every move
    /// (the default: a result can tell a player something too).
    #[default]
    Delayed,
    /// The game is published whole at its end: the moves still held and the
    /// result at once (the board's window is emptied when the game ends).
    AtEnd,
}

/// The delay of each round: a default, and rounds set apart; 0 is no delay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delays {
    /// Milliseconds, for every round not in `rounds`.
    pub default_ms: u64,
    /// Milliseconds, by round.
    pub rounds: BTreeMap<u32, u64>,
    pub finished: Finished,
}

impl Delays {
    /// The delay of round `round`, in milliseconds.
    pub fn of(&self, round: u32) -> u64 {
        self.rounds.get(&round).copied().unwrap_or(self.default_ms)
    }

    /// The longest delay of any round.
    pub fn max(&self) -> u64 {
        self.rounds.values().copied().fold(self.default_ms, u64::max)
    }

    /// `ctl delay [ROUND] DURATION`: round `round`'s delay, or, with no round,
    /// every round's (the rounds set apart are forgotten).
    pub fn set(&mut self, round: Option<u32>, ms: u64) {
        match round {
            Some(r) => {
                self.rounds.insert(r, ms);
            }
            None => {
                self.rounds.clear();
                self.default_ms = ms;
            }
        }
    }

    /// In words: `15m`, `off`, `15m (round 3: 30m, round 4: off)`.
    pub fn words(&self) -> String {
        let mut s = words(self.default_ms);
        if !self.rounds.is_empty() {
            let apart: Vec<String> = self
                .rounds
                .iter()
                .map(|(r, ms)| format!("round {r}: {}", words(*ms)))
                .collect();
            s = format!("{s} ({})", apart.join(", "));
        }
        s
    }
}

/// A duration as the configuration and `ctl delay` write it: `15m`, `90s`,
/// `1h30m`, `20` (seconds), `off` or `0` (no delay). Milliseconds.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let bad = || {
        format!(
            "`{}` is not a delay: write it as 15m, 90s, 1h30m or off",
            crate::log::escaped(&crate::log::clip_to(text, 40))
        )
    };
    if t == "off" || t == "none" || t == "0" {
        return Ok(0);
    }
    if t.is_empty() {
        return Err(bad());
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        let s: u64 = t.parse().map_err(|_| bad())?;
        return check(s.saturating_mul(1000), text);
    }
    let mut ms: u64 = 0;
    let mut digits = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            'h' => 3_600_000,
            'm' => 60_000,
            's' => 1000,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        digits.clear();
        ms = ms.saturating_add(n.saturating_mul(unit));
    }
    if !digits.is_empty() {
        return Err(bad());
    }
    check(ms, text)
}

fn check(ms: u64, text: &str) -> Result<u64, String> {
    if ms > MAX_DELAY_MS {
        return Err(format!(
            "a delay of `{}` is longer than the 6 hours taken at most",
            crate::log::escaped(&crate::log::clip_to(text, 40))
        ));
    }
    Ok(ms)
}

/// A duration in the words [`parse_duration`] reads (`off` for none).
pub fn words(ms: u64) -> String {
    if ms == 0 {
        return "off".into();
    }
    let (h, m, s, rest) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || rest > 0 || out.is_empty() {
        if rest > 0 {
            out.push_str(&format!("{}.{:03}s", s, rest).replace(".000", ""));
        } else {
            out.push_str(&format!("{s}s"));
        }
    }
    out
}

/// One held publication (or several merged, less than [`MERGE`] apart).
#[derive(Debug)]
struct Held {
    /// When the board's task published the first of them.
    first: Instant,
    /// When the board's task published the last of them.
    at: Instant,
    /// The delay that holds it: the longest of its rounds'.
    rounds: Vec<u32>,
    events: Vec<Published>,
    /// The snapshot as it was then. `Light`: its game (`moves`, `pgn`,
    /// `inferred`) left out, being the one released before it.
    snapshot: Option<Held1>,
    /// The games' files as they were then, the latest of each.
    files: Vec<LiveMsg>,
    /// A game ended in it ([`Finished::AtEnd`]).
    ends: bool,
}

#[derive(Debug)]
enum Held1 {
    Whole(Arc<Snapshot>),
    /// Its game left out (the one released before it).
    Light(Box<Snapshot>),
    /// Only its clocks: all else is the snapshot released before it.
    Clocks {
        white_ms: i64,
        black_ms: i64,
        running: String,
    },
}

/// How much of a snapshot is held: the least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Clocks,
    Light,
    Whole,
}

impl Held1 {
    fn of(s: Arc<Snapshot>, kind: Kind) -> Held1 {
        match kind {
            Kind::Whole => Held1::Whole(s),
            Kind::Light => Held1::Light(Box::new(lighten(&s))),
            Kind::Clocks => Held1::Clocks {
                white_ms: s.white_clock_ms,
                black_ms: s.black_clock_ms,
                running: s.clock_running.clone(),
            },
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Held1::Whole(_) => Kind::Whole,
            Held1::Light(_) => Kind::Light,
            Held1::Clocks { .. } => Kind::Clocks,
        }
    }
}

/// Whether `b` is `a` with other clocks.
fn only_clocks_differ(a: &Snapshot, b: &Snapshot) -> bool {
    let mut c = b.clone();
    c.white_clock_ms = a.white_clock_ms;
    c.black_clock_ms = a.black_clock_ms;
    c.clock_running = a.clock_running.clone();
    c == *a
}

/// One board's publications waiting for their time, oldest first.
#[derive(Debug, Default)]
pub struct Window {
    held: VecDeque<Held>,
    /// The last snapshot offered: a snapshot with its game is held light.
    last: Option<Arc<Snapshot>>,
    /// The round of the board's current game (from its snapshots).
    round: u32,
    /// The public snapshot released last (the game a light one takes).
    released: Option<Arc<Snapshot>>,
}

/// What a window hands on: publications, oldest first, each as it was then.
pub type Released = Vec<Publication>;

impl Window {
    /// The rounds `p` is of (the board's as its last snapshot said, for
    /// events alone), the board's round taken from its snapshot.
    fn rounds_of(&mut self, p: &Publication) -> Vec<u32> {
        let mut rounds = Vec::new();
        if let Some(s) = &p.snapshot {
            if let Ok(r) = s.round.parse::<u32>() {
                self.round = r;
                rounds.push(r);
            }
        }
        rounds.extend(p.files.iter().map(|f| f.key().round));
        if rounds.is_empty() {
            rounds.push(self.round);
        }
        rounds.sort_unstable();
        rounds.dedup();
        rounds
    }

    /// Whether `p` goes on at once, as it is (nothing held before it, no
    /// delay for its rounds): then it is the last released.
    pub fn passes(&mut self, p: &Publication, delays: &Delays) -> bool {
        if !self.held.is_empty() {
            return false;
        }
        let round = self.round;
        let rounds = self.rounds_of(p);
        if rounds.iter().any(|r| delays.of(*r) > 0) {
            self.round = round;
            return false;
        }
        if let Some(s) = &p.snapshot {
            self.last = Some(s.clone());
            self.released = Some(s.clone());
        }
        true
    }

    /// Holds `p`, published at `at`.
    pub fn hold(&mut self, p: &Publication, at: Instant, finished: Finished) {
        let rounds = self.rounds_of(p);
        let ends = finished == Finished::AtEnd
            && p.events
                .iter()
                .any(|e| matches!(e.event.kind, EventKind::GameEnd { .. }));
        let snapshot = p.snapshot.as_ref().map(|s| {
            let kind = match &self.last {
                Some(l) if only_clocks_differ(l, s) => Kind::Clocks,
                Some(l) if l.moves == s.moves && l.pgn == s.pgn && l.inferred == s.inferred => Kind::Light,
                _ => Kind::Whole,
            };
            self.last = Some(s.clone());
            (s.clone(), kind)
        });
        if let Some(tail) = self.held.back_mut() {
            if at.saturating_duration_since(tail.first) < MERGE && at >= tail.first && !tail.ends {
                tail.at = tail.at.max(at);
                tail.events.extend(p.events.iter().cloned());
                for r in rounds {
                    if !tail.rounds.contains(&r) {
                        tail.rounds.push(r);
                    }
                }
                if let Some((s, kind)) = snapshot {
                    // What the entry leaves out is the snapshot released
                    // before it: never more than its first publication did.
                    let before = tail.snapshot.as_ref().map_or(Kind::Clocks, Held1::kind);
                    tail.snapshot = Some(Held1::of(s, kind.max(before)));
                }
                for f in &p.files {
                    tail.files.retain(|g| g.key() != f.key());
                    tail.files.push(f.clone());
                }
                tail.ends |= ends;
                return;
            }
        }
        self.held.push_back(Held {
            first: at,
            at,
            rounds,
            events: p.events.clone(),
            snapshot: snapshot.map(|(s, kind)| Held1::of(s, kind)),
            files: p.files.clone(),
            ends,
        });
    }

    /// A window whose view starts from `snapshot`, released already (a view
    /// rebuilt at start).
    pub fn start_from(&mut self, snapshot: Option<Arc<Snapshot>>) {
        self.last = snapshot.clone();
        self.released = snapshot;
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// How many entries are held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// The publications due at `now` under `delays`, in order: each held one
    /// whose delay has passed, and every one before a game's end under
    /// [`Finished::AtEnd`]. A later one never overtakes an earlier.
    pub fn due(&mut self, board: &Arc<str>, now: Instant, delays: &Delays) -> Released {
        let last_end = self.held.iter().rposition(|h| h.ends);
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(h) = self.held.front() {
            let wait = h.rounds.iter().map(|r| delays.of(*r)).max().unwrap_or(0);
            let forced = last_end.is_some_and(|e| i <= e);
            if !forced && h.at + Duration::from_millis(wait) > now {
                break;
            }
            let h = self.held.pop_front().expect("looked at above");
            i += 1;
            let snapshot = h.snapshot.map(|s| match s {
                Held1::Whole(s) => s,
                Held1::Light(mut s) => {
                    if let Some(r) = &self.released {
                        s.moves = r.moves.clone();
                        s.pgn = r.pgn.clone();
                        s.inferred = r.inferred.clone();
                    }
                    Arc::new(*s)
                }
                Held1::Clocks {
                    white_ms,
                    black_ms,
                    running,
                } => {
                    let mut s = self.released.as_deref().cloned().unwrap_or_default();
                    s.white_clock_ms = white_ms;
                    s.black_clock_ms = black_ms;
                    s.clock_running = running;
                    Arc::new(s)
                }
            });
            if let Some(s) = &snapshot {
                self.released = Some(s.clone());
            }
            out.push(Publication {
                board: board.clone(),
                events: h.events,
                snapshot,
                files: h.files,
            });
        }
        out
    }

    /// When the next held publication is due under `delays` (none held: `None`).
    pub fn next_due(&self, delays: &Delays) -> Option<Instant> {
        let h = self.held.front()?;
        if self.held.iter().any(|h| h.ends) {
            return Some(h.at);
        }
        let wait = h.rounds.iter().map(|r| delays.of(*r)).max().unwrap_or(0);
        Some(h.at + Duration::from_millis(wait))
    }

    /// The snapshot released last.
    pub fn released(&self) -> Option<&Arc<Snapshot>> {
        self.released.as_ref()
    }

    /// Bytes held, near enough (strings and lists by their length; the
    /// figure of `docs/PERFORMANCE.md`).
    pub fn bytes(&self) -> usize {
        let snap = |s: &Snapshot| {
            std::mem::size_of::<Snapshot>()
                + s.pgn.len()
                + s.fen.len()
                + s.placement.len()
                + s.moves.iter().map(|m| m.len() + 24).sum::<usize>()
                + s.tags.iter().map(|(k, v)| k.len() + v.len() + 48).sum::<usize>()
                + s.white.len()
                + s.black.len()
                + s.event.len()
                + s.device.len()
                + s.start_fen.len()
        };
        self.held
            .iter()
            .map(|h| {
                std::mem::size_of::<Held>()
                    + h.events
                        .iter()
                        .map(|e| std::mem::size_of::<Published>() + e.json().len())
                        .sum::<usize>()
                    + match &h.snapshot {
                        Some(Held1::Whole(s)) => snap(s),
                        Some(Held1::Light(s)) => snap(s),
                        Some(Held1::Clocks { running, .. }) => running.len(),
                        None => 0,
                    }
                    + h.files
                        .iter()
                        .map(|f| match f {
                            LiveMsg::Game { pgn, .. } => pgn.len() + 64,
                            LiveMsg::Withdraw(_) => 32,
                        })
                        .sum::<usize>()
            })
            .sum()
    }
}

/// A snapshot without its game (the one released before it stands in).
fn lighten(s: &Snapshot) -> Snapshot {
    Snapshot {
        moves: Vec::new(),
        pgn: String::new(),
        inferred: Vec::new(),
        ..s.clone()
    }
}

/// A board's delayed view rebuilt from its journal at the daemon's start:
/// the state it stood in when the window began (released at once), and each
/// publication since, at the time the board showed it.
#[derive(Debug)]
pub struct Seed {
    pub base: Publication,
    pub since: Vec<(Instant, Publication)>,
}

/// What a board's task asks of the delay when it starts (through
/// [`super::Sink::delay`]).
pub trait Rebuild: Send + Sync {
    /// How far back the board's delayed view is to be rebuilt from its
    /// journal: `None` when it needs none (no delay, or the board's window is
    /// already held: its task restarted within this run of the daemon).
    fn window(&self, board: &str) -> Option<Duration>;
    /// The view rebuilt, before the task's first publication.
    fn seed(&self, board: &str, seed: Seed);
}

/// What D-Bus (`Manager1.SetBroadcastDelay`) asks of the delay.
pub trait Control: Send + Sync {
    /// Sets round `round`'s delay (every round's with none): journaled, then
    /// applied; what is due under it is released at once.
    fn set(&self, round: Option<u32>, ms: u64, by: Option<String>) -> Result<(), super::Error>;
    /// The delays in effect.
    fn delays(&self) -> Delays;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::GameKey;
    use crate::rules::{Event, Side};

    #[test]
    fn durations_read_and_written() {
        assert_eq!(parse_duration("15m"), Ok(900_000));
        assert_eq!(parse_duration("90s"), Ok(90_000));
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000));
        assert_eq!(parse_duration(" 20 "), Ok(20_000));
        assert_eq!(parse_duration("off"), Ok(0));
        assert_eq!(parse_duration("0"), Ok(0));
        assert!(parse_duration("15 minutes").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("7h").unwrap_err().contains("6 hours"));
        assert!(parse_duration("").is_err());
        assert_eq!(words(900_000), "15m");
        assert_eq!(words(5_400_000), "1h30m");
        assert_eq!(words(2_500), "2.500s");
        assert_eq!(words(0), "off");
        for w in ["15m", "1h30m", "3s", "off"] {
            assert_eq!(words(parse_duration(w).unwrap()), w);
        }
    }

    fn snap(moves: usize, white_ms: i64, round: u32) -> Arc<Snapshot> {
        let moves: Vec<String> = (0..moves).map(|i| format!("m{i}")).collect();
        Arc::new(Snapshot {
            pgn: moves.join(" "),
            moves,
            white_clock_ms: white_ms,
            round: round.to_string(),
            ..Snapshot::default()
        })
    }

    fn publication(s: Arc<Snapshot>, events: Vec<Event>) -> Publication {
        let key = GameKey {
            round: s.round.parse().unwrap(),
            board: 1,
            index: 1,
        };
        let files = vec![LiveMsg::Game {
            key,
            plies: s.moves.len(),
            pgn: s.pgn.clone(),
        }];
        Publication::new("b".into(), events, Some(s), files)
    }

    fn delays(ms: u64) -> Delays {
        Delays {
            default_ms: ms,
            ..Delays::default()
        }
    }

    #[test]
    fn each_publication_comes_out_after_the_delay_as_it_was() {
        let t0 = Instant::now();
        let board: Arc<str> = "b".into();
        let mut w = Window::default();
        let d = delays(10_000);
        for i in 0..5u64 {
            let s = snap(i as usize, 1000 * i as i64, 1);
            w.hold(
                &publication(s, Vec::new()),
                t0 + Duration::from_secs(i),
                Finished::Delayed,
            );
        }
        assert_eq!(w.len(), 5);
        assert!(w.due(&board, t0 + Duration::from_millis(9_999), &d).is_empty());
        let out = w.due(&board, t0 + Duration::from_millis(12_000), &d);
        assert_eq!(out.len(), 3);
        // The state as it stood then: its moves, its clock.
        let last = out[2].snapshot.as_ref().unwrap();
        assert_eq!(last.moves.len(), 2);
        assert_eq!(last.white_clock_ms, 2000);
        assert_eq!(w.next_due(&d), Some(t0 + Duration::from_secs(13)));
        // Off: everything at once.
        assert_eq!(
            w.due(&board, t0 + Duration::from_millis(12_000), &delays(0))
                .len(),
            2
        );
        assert!(w.is_empty());
    }

    #[test]
    fn a_clock_change_is_held_light_and_released_whole() {
        let t0 = Instant::now();
        let board: Arc<str> = "b".into();
        let mut w = Window::default();
        w.hold(&publication(snap(40, 0, 1), Vec::new()), t0, Finished::Delayed);
        for i in 1..=100u64 {
            let p = Publication::new("b".into(), Vec::new(), Some(snap(40, i as i64, 1)), Vec::new());
            w.hold(&p, t0 + Duration::from_secs(i), Finished::Delayed);
        }
        let light: usize = w
            .held
            .iter()
            .filter(|h| matches!(h.snapshot, Some(Held1::Clocks { .. })))
            .count();
        assert_eq!(light, 100);
        let out = w.due(&board, t0 + Duration::from_secs(1000), &delays(1));
        assert_eq!(out.len(), 101);
        for (i, p) in out.iter().enumerate() {
            let s = p.snapshot.as_ref().unwrap();
            assert_eq!(s.moves.len(), 40, "{i}");
            assert_eq!(s.white_clock_ms, i as i64);
        }
    }

    #[test]
    fn close_publications_merge_and_wait_for_the_later() {
        let t0 = Instant::now();
        let board: Arc<str> = "b".into();
        let mut w = Window::default();
        let ev = |t| Event {
            t_us: t,
            kind: EventKind::MoveCompleted {
                ply: 1,
                side: Side::White,
            },
        };
        w.hold(&publication(snap(1, 0, 1), vec![ev(1)]), t0, Finished::Delayed);
        w.hold(
            &publication(snap(2, 0, 1), vec![ev(2)]),
            t0 + Duration::from_millis(50),
            Finished::Delayed,
        );
        assert_eq!(w.len(), 1);
        let d = delays(1000);
        // Not before the later one's time plus the delay.
        assert!(w.due(&board, t0 + Duration::from_millis(1040), &d).is_empty());
        let out = w.due(&board, t0 + Duration::from_millis(1050), &d);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].events.len(), 2);
        assert_eq!(out[0].files.len(), 1);
        assert_eq!(out[0].snapshot.as_ref().unwrap().moves.len(), 2);
    }

    #[test]
    fn a_round_set_apart_and_a_game_published_whole_at_its_end() {
        let t0 = Instant::now();
        let board: Arc<str> = "b".into();
        let mut d = delays(60_000);
        d.set(Some(2), 0);
        assert_eq!(d.words(), "1m (round 2: off)");
        let mut w = Window::default();
        w.hold(&publication(snap(1, 0, 2), Vec::new()), t0, Finished::Delayed);
        assert_eq!(w.due(&board, t0, &d).len(), 1);
        // Round 1, published whole at its end.
        w.hold(&publication(snap(1, 0, 1), Vec::new()), t0, Finished::AtEnd);
        w.hold(
            &publication(snap(2, 0, 1), Vec::new()),
            t0 + Duration::from_secs(1),
            Finished::AtEnd,
        );
        assert!(w.due(&board, t0 + Duration::from_secs(2), &d).is_empty());
        let end = Event {
            t_us: 3,
            kind: EventKind::GameEnd {
                result: crate::rules::GameResult::WhiteWins,
                termination: crate::rules::Termination::Arbiter,
            },
        };
        w.hold(
            &publication(snap(3, 0, 1), vec![end]),
            t0 + Duration::from_secs(3),
            Finished::AtEnd,
        );
        assert_eq!(w.next_due(&d), Some(t0));
        assert_eq!(w.due(&board, t0 + Duration::from_secs(3), &d).len(), 3);
        // No delay for a board that was never delayed: the clear of `ctl delay off`.
        d.set(None, 0);
        assert_eq!(d, Delays::default());
    }

    #[test]
    fn a_stream_of_publications_is_held_in_entries_of_at_most_100_ms() {
        let t0 = Instant::now();
        let board: Arc<str> = "b".into();
        let mut w = Window::default();
        // Every 20 ms for 2 s: one entry per 100 ms, the first due 80 ms
        // after its first publication's delay, never a moving target.
        for i in 0..100u64 {
            let p = Publication::new("b".into(), Vec::new(), Some(snap(1, i as i64, 1)), Vec::new());
            w.hold(&p, t0 + Duration::from_millis(20 * i), Finished::Delayed);
        }
        assert_eq!(w.len(), 20);
        let d = delays(1000);
        assert_eq!(w.next_due(&d), Some(t0 + Duration::from_millis(1080)));
        let out = w.due(&board, t0 + Duration::from_millis(1080), &d);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].snapshot.as_ref().unwrap().white_clock_ms, 4);
    }

    /// The figure of `docs/PERFORMANCE.md`: a 30-minute window of a board in
    /// a long game (80 plies played, a move every 20 s with its lift and
    /// placement, a clock report every second), and the most it can hold.
    #[test]
    fn a_thirty_minute_window_holds_what_a_board_sends_in_30_minutes() {
        let t0 = Instant::now();
        let mut w = Window::default();
        let mut plies = 80usize;
        let game = |plies: usize, white_ms: i64| {
            let moves: Vec<String> = (0..plies).map(|i| format!("N{}f{}+", i % 8, i % 7)).collect();
            let pgn = format!(
                "[Event \"Delay Open\"]\n[Site \"Hall\"]\n[Date \"2026.11.29\"]\n[Round \"1.1\"]\n[White \"Kasparov, Garry\"]\n[Black \"Deep Blue\"]\n[Result \"*\"]\n\n{} *\n",
                moves
                    .iter()
                    .enumerate()
                    .map(|(i, m)| format!("{}. {m} {{[%clk 1:23:45]}}", i / 2 + 1))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            Arc::new(Snapshot {
                moves,
                pgn,
                fen: "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4".into(),
                placement: "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R".into(),
                white_clock_ms: white_ms,
                round: "1".into(),
                white: "Kasparov, Garry".into(),
                black: "Deep Blue".into(),
                event: "Delay Open".into(),
                device: "/dev/eboard/dgt-12345".into(),
                ..Snapshot::default()
            })
        };
        let clock = |t: u64| Event {
            t_us: t,
            kind: EventKind::Clock {
                white_ms: 5_000_000 - t / 1000,
                black_ms: 4_000_000,
                running: Some(Side::White),
            },
        };
        for s in 0..1800u64 {
            let at = t0 + Duration::from_secs(s);
            let p = if s % 20 == 0 {
                plies += 1;
                let g = game(plies, s as i64);
                let key = GameKey {
                    round: 1,
                    board: 1,
                    index: 1,
                };
                let file = LiveMsg::Game {
                    key,
                    plies,
                    pgn: g.pgn.clone(),
                };
                let mv = Event {
                    t_us: s * 1_000_000,
                    kind: EventKind::MoveCompleted {
                        ply: plies as u32,
                        side: Side::White,
                    },
                };
                Publication::new("b".into(), vec![mv, clock(s * 1_000_000)], Some(g), vec![file])
            } else {
                Publication::new(
                    "b".into(),
                    vec![clock(s * 1_000_000)],
                    Some(game(plies, s as i64)),
                    Vec::new(),
                )
            };
            w.hold(&p, at, Finished::Delayed);
        }
        let bytes = w.bytes();
        eprintln!(
            "measured: a 30-minute window of one board: {} entries, {} KB (game of {plies} plies)",
            w.len(),
            bytes / 1024
        );
        assert_eq!(w.len(), 1800);
        assert!(bytes < 2 << 20, "{bytes} bytes");
    }
}
