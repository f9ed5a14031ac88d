//! The event campaign: whole rounds through the real daemon binary, composing at
//! random moments what a real event does, then judged against what the hands
//! and the arbiter really did (`judge`).
//!
//! A round: several emulated boards, each behind a relay (`tests/relay`, real
//! pseudo-terminals) and each playing a real game (or a short mate left on the
//! board) with simulated hands at a human or a blitz pace, with illegal moves
//! held in the hand past the threshold and then put right, and pieces knocked
//! over; meanwhile, at random moments: SIGKILL and SIGTERM of the daemon and a
//! start again (mid-move, mid-gap, right after a game's end), cuts of a board's
//! line, SIGHUP with the pairings file changed (a colour swap), and the
//! arbiter's decisions through `ctl` (players swapped, ratings set), new games
//! not confirmed through `ctl` and D-Bus (each must be refused); at the end,
//! the arbiter's result on each game without a forced end (one given over a
//! piece held where no move goes, in the event's last round). Then a restart
//! (SIGKILL or SIGTERM), `ctl round 2 --pairings` (before or after it), the
//! boards set up again and a second round with a timeline of its own, its
//! results, and a last SIGKILL and start. Then every board is judged, round by
//! round (`judge::judge`, and round 1 kept whole: `judge::round_kept`), and
//! what was published live across both (`live::judge`).
//!
//! A failing round prints its seed and its timeline, shrinks it (drops each
//! action in turn while the round still fails, at most `EVENT_SHRINK` reruns,
//! 3 by default) and saves the shortest timeline under
//! `target/event-failures/`; `EVENT_PLAN=FILE` runs a saved timeline again.
//!
//! `cargo test --test suite event::` runs a small campaign (two rounds of three
//! boards, the second short: about 42 s). The full one (`docs/RELIABILITY.md`, "The event campaign"):
//! `EVENT=full cargo test --release --test suite event:: -- --nocapture`
//! (`EVENT_SEEDS=N[,N...]` for given seeds).

mod boards;
use crate::common;
mod judge;
mod live;
use crate::relay;
mod round;

use eboard_bridge::sim::Seeded;
use shakmaty::{Chess, Move, Position};

/// Log time runs this many times faster than real time (the daemon's thresholds
/// are divided by the same factor).
pub const SPEED: f64 = 4.0;

/// The longest cut (real ms). With the line's reopen (0.5 s) a gap spans at
/// most 1.2 s of a quick board's play (a ply each 0.2-0.4 s of real time at
/// `SPEED`): at most the 6 plies a gap's search may bridge. Longer, the honest
/// outcome is `lost_track` for the arbiter to set right (seed 4's 1.7 s cut
/// spanned 8), which this campaign does not play.
const MAX_CUT_MS: u64 = 700;

/// The longest the daemon stays down (real ms) before it starts again. With
/// its start (up to a second, the boards' serial numbers asked) the boards go
/// unread for at most as long as the longest cut and its reopen: a quick
/// board's 6 plies at most. Seeds 1 and 5 stopped it for 2.3-2.5 s, 10-16
/// plies of a quick board: `lost_track`, reported, which this campaign does
/// not play (as for cuts).
const MAX_DOWN_MS: u64 = 700;

/// After a cut ends, how long (real ms) a board's line takes to be read again
/// and its plies found: the daemon's reopen (0.3 s), the board's settling
/// (0.2 s), the dump and the search, with room to spare.
const CUT_RECOVERY_MS: u64 = 3000;

/// The moves of `sans` from `start`.
pub fn moves_of(start: &Chess, sans: &[&str]) -> Vec<Move> {
    let mut pos = start.clone();
    sans.iter()
        .map(|s| {
            let m = s.parse::<shakmaty::san::San>().unwrap().to_move(&pos).unwrap();
            pos.play_unchecked(m);
            m
        })
        .collect()
}

/// After a restart, how long (real ms) until every board's line is read again
/// and its plies found: the start (every board served on the bus, up to 2 s
/// here under load) and then as after a cut.
const RESTART_RECOVERY_MS: u64 = CUT_RECOVERY_MS + 2000;

/// Something the event does to the round at a moment (real ms from the start).
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// SIGKILL, then a start again after `ms`.
    Kill { ms: u64 },
    /// SIGKILL while a call is in flight (the players of board `board`
    /// swapped through `ctl`, the kill 0-40 ms after it was sent), then a
    /// start again after `ms`: accepted, it stands; refused or unanswered,
    /// the journal after the start says whether it was taken.
    KillInCall { board: usize, ms: u64 },
    /// SIGKILL and a start again after `ms`, that start killed `at` ms after
    /// it began (while it asks the boards their serial numbers and resumes
    /// their journals), then a start again.
    KillStarting { ms: u64, at: u64 },
    /// SIGTERM (a clean stop), then a start again after `ms`.
    Term { ms: u64 },
    /// The line of board `board` (0-based) cut for `ms`.
    Cut { board: usize, ms: u64 },
    /// The pairings file with board `board`'s colours swapped, then SIGHUP.
    Reload { board: usize },
    /// The players of board `board` swapped, through `door` (0: `ctl players
    /// N BLACK WHITE`, 1: the console's API, 2: MQTT, `SetPlayers`).
    Swap { board: usize, door: u8 },
    /// `ctl tags N WhiteElo=.. BlackElo=..`: the players' own ratings stated again.
    Ratings { board: usize },
    /// A new game on board `board`'s game (under way or over) not confirmed,
    /// through `door` (0: `ctl new-game`, 1: D-Bus `NewGame`, 2: D-Bus
    /// `Decide` with `force` false, 3: the console's API without its second
    /// question, 4: MQTT without `force`): every door must refuse it, and nothing changes (issue 57:
    /// raw D-Bus ended games without `--force`).
    Unconfirmed { board: usize, door: u8 },
    /// `ctl add-time N SIDE +1m` for the side not to move, then `ctl undo N`:
    /// the clock shows the minute, then the time before (issue 57: undo in
    /// report mode gave no time back).
    AddTimeUndone { board: usize },
    /// `ctl set-clock N 0:00:05 0:00:05` on a game under way: the side to
    /// move's flag falls within 1.25 s (the campaign's clock runs 4x) unless
    /// a move and its increment come first, and once a clock shows 0 the
    /// daemon must report the flag (`Flag`) without ending the game (Art.
    /// 6.8: a flag is the arbiter's to call; ending games on it is opt-in).
    Flag { board: usize },
}

impl Action {
    fn line(&self) -> String {
        match self {
            Action::Kill { ms } => format!("kill {ms}"),
            Action::KillInCall { board, ms } => format!("kill-in-call {board} {ms}"),
            Action::KillStarting { ms, at } => format!("kill-starting {ms} {at}"),
            Action::Term { ms } => format!("term {ms}"),
            Action::Cut { board, ms } => format!("cut {board} {ms}"),
            Action::Reload { board } => format!("reload {board}"),
            Action::Swap { board, door } => format!("swap {board} {door}"),
            Action::AddTimeUndone { board } => format!("add-time-undone {board}"),
            Action::Ratings { board } => format!("ratings {board}"),
            Action::Unconfirmed { board, door } => format!("unconfirmed {board} {door}"),
            Action::Flag { board } => format!("flag {board}"),
        }
    }

    fn parse(words: &[&str]) -> Option<Action> {
        let n = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
        Some(match *words.first()? {
            "kill" => Action::Kill { ms: n(1)? },
            "kill-starting" => Action::KillStarting { ms: n(1)?, at: n(2)? },
            "kill-in-call" => Action::KillInCall {
                board: n(1)? as usize,
                ms: n(2)?,
            },
            "term" => Action::Term { ms: n(1)? },
            "cut" => Action::Cut {
                board: n(1)? as usize,
                ms: n(2)?,
            },
            "reload" => Action::Reload {
                board: n(1)? as usize,
            },
            "swap" => Action::Swap {
                board: n(1)? as usize,
                door: n(2).unwrap_or(0).min(2) as u8,
            },
            "add-time-undone" => Action::AddTimeUndone {
                board: n(1)? as usize,
            },
            "ratings" => Action::Ratings {
                board: n(1)? as usize,
            },
            "unconfirmed" => Action::Unconfirmed {
                board: n(1)? as usize,
                door: n(2)?.min(4) as u8,
            },
            "flag" => Action::Flag {
                board: n(1)? as usize,
            },
            _ => return None,
        })
    }
}

/// A round's timeline: the seed (which gives the boards' games, hands and
/// players) and the actions at their moments.
#[derive(Debug, Clone)]
pub struct Plan {
    pub seed: u64,
    pub boards: usize,
    pub plies: usize,
    pub actions: Vec<(u64, Action)>,
    /// Round 2's plies (0: no round 2) and its actions, at their moments from
    /// the daemon's start between the rounds.
    pub plies2: usize,
    pub actions2: Vec<(u64, Action)>,
}

impl Plan {
    /// A random timeline of two rounds, of `plies` and `plies2` plies.
    fn random(seed: u64, boards: usize, plies: usize, plies2: usize) -> Plan {
        let actions = Plan::actions(seed, boards, round::real_ms(plies));
        let actions2 = if plies2 > 0 {
            Plan::actions(seed ^ 0x2222, boards, round::real_ms(plies2))
        } else {
            Vec::new()
        };
        Plan {
            seed,
            boards,
            plies,
            actions,
            plies2,
            actions2,
        }
    }

    /// A round's random actions over `real_ms` of play.
    fn actions(seed: u64, boards: usize, real_ms: u64) -> Vec<(u64, Action)> {
        let mut rng = Seeded::new(seed ^ 0x5eed_e7e7);
        let mut actions = Vec::new();
        let at = |rng: &mut Seeded| rng.range(500, real_ms.max(1000));
        for _ in 0..rng.range(0, 1) {
            let t = at(&mut rng);
            actions.push((
                t,
                Action::Kill {
                    ms: rng.range(100, MAX_DOWN_MS),
                },
            ));
        }
        let t = at(&mut rng);
        actions.push((
            t,
            Action::KillStarting {
                ms: rng.range(100, MAX_DOWN_MS),
                at: rng.range(0, 300),
            },
        ));
        let t = at(&mut rng);
        actions.push((
            t,
            Action::KillInCall {
                board: rng.range(0, boards as u64 - 1) as usize,
                ms: rng.range(100, MAX_DOWN_MS),
            },
        ));
        let t = at(&mut rng);
        actions.push((
            t,
            Action::Term {
                ms: rng.range(100, MAX_DOWN_MS),
            },
        ));
        for _ in 0..boards {
            let t = at(&mut rng);
            let board = rng.range(0, boards as u64 - 1) as usize;
            actions.push((
                t,
                Action::Cut {
                    board,
                    ms: rng.range(200, MAX_CUT_MS),
                },
            ));
        }
        let t = at(&mut rng);
        actions.push((
            t,
            Action::Reload {
                board: rng.range(0, boards as u64 - 1) as usize,
            },
        ));
        for _ in 0..2 {
            let t = at(&mut rng);
            actions.push((
                t,
                Action::Swap {
                    board: rng.range(0, boards as u64 - 1) as usize,
                    door: rng.range(0, 2) as u8,
                },
            ));
        }
        let t = at(&mut rng);
        actions.push((
            t,
            Action::Ratings {
                board: rng.range(0, boards as u64 - 1) as usize,
            },
        ));
        let t = rng.range(3000, real_ms.max(3001));
        actions.push((
            t,
            Action::AddTimeUndone {
                board: rng.range(0, boards as u64 - 1) as usize,
            },
        ));
        // Not before the games have moves (a new game on a game not begun
        // needs no confirming, and would be a decision the judge did not count).
        for _ in 0..2 {
            let t = rng.range(3000, real_ms.max(3001));
            actions.push((
                t,
                Action::Unconfirmed {
                    board: rng.range(0, boards as u64 - 1) as usize,
                    door: rng.range(0, 4) as u8,
                },
            ));
        }
        // Drawn from a generator of its own, so that every other action of a
        // seed stands where it stood before flags were composed.
        let mut flags = Seeded::new(seed ^ 0xf1a9_f1a9);
        let t = flags.range(4000, (real_ms * 2 / 3).max(4001));
        actions.push((
            t,
            Action::Flag {
                board: flags.range(0, boards as u64 - 1) as usize,
            },
        ));
        actions.sort_by_key(|(t, _)| *t);
        // A cut of a line still coming back from the one before joins it into
        // one gap: at blitz pace longer than a gap may bridge, a lost track
        // (reported, nothing invented) that the judge counts as a game lost.
        // Seed 4's round did that (cuts of 1.7 s and 1.4 s, 0.2 s apart).
        // Likewise a restart while the lines are still coming back from a
        // restart or a cut before it (seed 1's kill of 1.8 s and a stop 0.5 s
        // after the start again: 16 plies of a quick board unseen).
        let mut line_back = vec![0u64; boards];
        actions.retain(|(t, a)| match a {
            Action::Cut { board, ms } => {
                let keep = *t >= line_back[*board];
                if keep {
                    line_back[*board] = t + ms + CUT_RECOVERY_MS;
                }
                keep
            }
            Action::Kill { ms }
            | Action::Term { ms }
            | Action::KillInCall { ms, .. }
            | Action::KillStarting { ms, .. } => {
                let keep = line_back.iter().all(|back| *t >= *back);
                if keep {
                    for back in &mut line_back {
                        *back = t + ms + RESTART_RECOVERY_MS;
                    }
                }
                keep
            }
            _ => true,
        });
        actions
    }

    fn text(&self) -> String {
        let mut s = format!(
            "# eboard-bridge event campaign timeline\nseed {}\nboards {}\nplies {}\nplies2 {}\n",
            self.seed, self.boards, self.plies, self.plies2
        );
        for (t, a) in &self.actions {
            s.push_str(&format!("{t} {}\n", a.line()));
        }
        for (t, a) in &self.actions2 {
            s.push_str(&format!("r2 {t} {}\n", a.line()));
        }
        s
    }

    /// The plan with action `i` of both rounds' (round 1's first) dropped.
    fn without(&self, i: usize) -> Plan {
        let mut fewer = self.clone();
        if i < fewer.actions.len() {
            fewer.actions.remove(i);
        } else {
            fewer.actions2.remove(i - self.actions.len());
        }
        fewer
    }

    fn parse(text: &str) -> Option<Plan> {
        let mut plan = Plan {
            seed: 0,
            boards: 3,
            plies: 20,
            actions: Vec::new(),
            plies2: 0,
            actions2: Vec::new(),
        };
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words[0] {
                "seed" => plan.seed = words.get(1)?.parse().ok()?,
                "boards" => plan.boards = words.get(1)?.parse().ok()?,
                "plies" => plan.plies = words.get(1)?.parse().ok()?,
                "plies2" => plan.plies2 = words.get(1)?.parse().ok()?,
                "r2" => plan
                    .actions2
                    .push((words.get(1)?.parse().ok()?, Action::parse(&words[2..])?)),
                t => plan.actions.push((t.parse().ok()?, Action::parse(&words[1..])?)),
            }
        }
        Some(plan)
    }
}

/// The figures of a campaign, for `docs/RELIABILITY.md`.
#[derive(Debug, Default)]
struct Figures {
    rounds: usize,
    games: usize,
    plies: usize,
    restarts: usize,
    cuts: usize,
    reloads: usize,
    decisions: usize,
    failures: usize,
}

/// Runs `plan`; on failure, shrinks it and saves the shortest failing timeline.
async fn run_and_shrink(plan: Plan, figures: &mut Figures) -> Vec<String> {
    println!("round of seed {}:\n{}", plan.seed, plan.text());
    let outcome = round::play(&plan).await;
    figures.rounds += 1 + usize::from(plan.plies2 > 0);
    figures.games += outcome.games;
    figures.plies += outcome.plies;
    figures.decisions += outcome.decisions;
    for (_, a) in plan.actions.iter().chain(&plan.actions2) {
        match a {
            Action::Kill { .. } | Action::Term { .. } | Action::KillInCall { .. } => figures.restarts += 1,
            Action::KillStarting { .. } => figures.restarts += 2,
            Action::Cut { .. } => figures.cuts += 1,
            Action::Reload { .. } => figures.reloads += 1,
            _ => {}
        }
    }
    // The last SIGKILL and start, and the restart between the rounds.
    figures.restarts += 1 + usize::from(plan.plies2 > 0);
    if outcome.failures.is_empty() {
        return Vec::new();
    }
    figures.failures += 1;
    println!(
        "round of seed {} failed:\n{}\ntimeline:\n{}",
        plan.seed,
        outcome.failures.join("\n"),
        plan.text()
    );
    let tries: usize = std::env::var("EVENT_SHRINK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut shortest = plan.clone();
    let mut i = 0;
    let mut reruns = 0;
    while i < shortest.actions.len() + shortest.actions2.len() && reruns < tries {
        let fewer = shortest.without(i);
        reruns += 1;
        if round::play(&fewer).await.failures.is_empty() {
            i += 1;
        } else {
            shortest = fewer;
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/event-failures");
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join(format!("seed-{}.timeline", plan.seed));
    let _ = std::fs::write(&file, shortest.text());
    println!(
        "shortest failing timeline ({} of {} actions, {reruns} reruns), saved as {}; run it again with EVENT_PLAN={}",
        shortest.actions.len() + shortest.actions2.len(),
        plan.actions.len() + plan.actions2.len(),
        file.display(),
        file.display()
    );
    outcome.failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_with_restarts_cuts_reloads_and_decisions_keep_every_guarantee() {
    let full = std::env::var("EVENT").is_ok_and(|v| v == "full");
    let plans: Vec<Plan> = if let Ok(file) = std::env::var("EVENT_PLAN") {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        vec![Plan::parse(&text).unwrap_or_else(|| panic!("{file}: not a timeline"))]
    } else {
        let seeds: Vec<u64> = match std::env::var("EVENT_SEEDS") {
            Ok(s) => s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
            Err(_) if full => (1..=12).collect(),
            Err(_) => vec![7],
        };
        // Two rounds with a restart between them; in `cargo test` a short
        // second round (its set-up, a few plies, a result).
        let (boards, plies, plies2) = if full { (4, 40, 40) } else { (3, 16, 4) };
        seeds
            .into_iter()
            .map(|s| Plan::random(s, boards, plies, plies2))
            .collect()
    };
    let mut figures = Figures::default();
    let mut failures = Vec::new();
    for plan in plans {
        failures.extend(run_and_shrink(plan, &mut figures).await);
    }
    println!("event campaign: {figures:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A timeline written and read back is the same timeline.
#[test]
fn a_timeline_reads_back_as_written() {
    let plan = Plan::random(3, 3, 16, 8);
    let back = Plan::parse(&plan.text()).unwrap();
    assert_eq!(back.actions, plan.actions);
    assert!(!plan.actions2.is_empty());
    assert_eq!(back.actions2, plan.actions2);
    assert_eq!((back.seed, back.boards, back.plies, back.plies2), (3, 3, 16, 8));
}

/// No timeline cuts a board's line or restarts the daemon again before the
/// line is back from the cut or restart before (seed 4's two cuts, 0.2 s
/// apart, made one gap no search may bridge; seed 1's two restarts did too).
#[test]
fn a_line_is_cut_again_only_once_it_is_back() {
    let mut cuts = 0;
    for seed in 0..300 {
        let plan = Plan::random(seed, 4, 40, 0);
        let mut back = [0u64; 4];
        for (t, a) in &plan.actions {
            let lines: Vec<usize> = match a {
                Action::Cut { board, .. } => vec![*board],
                Action::Kill { .. }
                | Action::Term { .. }
                | Action::KillInCall { .. }
                | Action::KillStarting { .. } => (0..4).collect(),
                _ => continue,
            };
            for b in &lines {
                assert!(
                    *t >= back[*b],
                    "seed {seed}: board {b}'s line cut or the daemon stopped at {t} ms, back only at {} ms",
                    back[*b]
                );
            }
            let (Action::Cut { ms, .. }
            | Action::Kill { ms }
            | Action::Term { ms }
            | Action::KillInCall { ms, .. }) = a
            else {
                continue;
            };
            let recovery = if matches!(a, Action::Cut { .. }) {
                CUT_RECOVERY_MS
            } else {
                RESTART_RECOVERY_MS
            };
            for b in lines {
                back[b] = t + ms + recovery;
            }
            if matches!(a, Action::Cut { .. }) {
                cuts += 1;
            }
        }
    }
    // Most cuts stay: the rule drops only those that would join another cut
    // or a restart (845 of 1,200 stay).
    assert!(cuts > 300 * 4 * 3 / 5, "only {cuts} cuts in 300 timelines of 4");
}
