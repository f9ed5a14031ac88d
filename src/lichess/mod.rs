//! Every round pushed to a lichess broadcast (`[lichess]`, off by default):
//! `POST {url}/api/broadcast/round/{id}/push`, the bearer token, the round's
//! `games.pgn` as the body (`docs/BROADCAST.md`). A hall behind NAT cannot be
//! polled by lichess; the daemon pushes instead.
//!
//! One task owns the pushes. The broadcast folder hands it each `games.pgn`
//! it writes, the very text (`api::lichess::RoundsOut`), and never waits for
//! it; the task keeps each round's newest and pushes it when the schedule
//! (`schedule`) lets it: one request at a time, at most `max_per_second`,
//! backing off when lichess is away or busy, not again when lichess refuses
//! the round until the configuration changes. Every push is the round whole,
//! so after a restart or an outage of any length lichess ends with what the
//! folder holds; at start the task asks the folder for each round it pushes.
//!
//! - `config`: `[lichess]`, the server, the token file;
//! - `body`: what a push carries (cut after the games a round takes);
//! - `answer`: what lichess's answer means and what to do; `answered`: what
//!   the task does with it (the schedule told, the state kept, the reports);
//! - `http`: the request (hyper over rustls);
//! - `journal`: the rounds' ids across restarts (`ctl lichess ROUND ID`).
//!
//! What the doors show (D-Bus, `ctl`, the console) is a `watch` of each
//! round's [`RoundStatus`] and a broadcast of [`Report`]s; never the token.

mod answer;
mod answered;
mod body;
pub mod config;
mod http;
mod journal;
mod schedule;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;

use crate::api::lichess::{
    Call, GameStatus, Report, RoundDecision, RoundId, RoundPgn, RoundStatus, RoundsIn, boards_words,
    ids_words, part_boards, part_of,
};
use body::Body;
pub use config::LichessConfig;
use config::Token;
use journal::{Ids, Replayed, RoundsJournal};
use schedule::{PushDue, Schedule};

/// On shutdown, how long the last changes may take to reach lichess.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LichessError(String);

/// What the doors hold of the pushes, made before the task (the bus serves
/// them from the start): the rounds' state, the reports, and where calls go.
#[derive(Clone)]
pub struct Doors {
    pub status: watch::Receiver<Vec<RoundStatus>>,
    pub reports: broadcast::Sender<Report>,
    pub calls: mpsc::Sender<Call>,
}

/// The task's side of the [`Doors`].
pub struct Inputs {
    status: watch::Sender<Vec<RoundStatus>>,
    reports: broadcast::Sender<Report>,
    calls: mpsc::Receiver<Call>,
}

/// The doors and the task's side of them.
pub fn doors() -> (Doors, Inputs) {
    let (status_tx, status) = watch::channel(Vec::new());
    let (reports, _) = broadcast::channel(256);
    let (calls_tx, calls) = mpsc::channel(8);
    (
        Doors {
            status,
            reports: reports.clone(),
            calls: calls_tx,
        },
        Inputs {
            status: status_tx,
            reports,
            calls,
        },
    )
}

/// What the task knows of a round besides when to push it.
#[derive(Default)]
struct RoundInfo {
    /// The newest push made of the folder's text.
    latest: Option<Body>,
    last_push_ms: i64,
    pushes: u64,
    /// Each game of the last answer.
    games: Vec<GameStatus>,
    /// The round's trouble and what to do (a refusal, a PGN refused).
    error: String,
    /// The boards said to be left out.
    said_left_out: Vec<u32>,
    /// Each game's error last reported, by (board, index).
    reported: HashMap<(u32, u32), String>,
}

/// One broadcast round of a round of the event: the round, and which of its
/// broadcast rounds (the whole round when it has one; boards 1-64, 65-128, ...
/// when it has several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Part {
    round: u32,
    index: usize,
}

/// The boards of `boards` (sorted, each once, a game each) that a round over
/// the broadcast rounds `parts` leaves out, each taking `max_games`.
fn left_out_boards(boards: &[u32], parts: usize, max_games: usize) -> Vec<u32> {
    let mut taken = vec![0usize; parts.max(1)];
    let mut left = Vec::new();
    for &b in boards {
        let part = part_of(b, parts);
        taken[part] += 1;
        if taken[part] > max_games {
            left.push(b);
        }
    }
    left
}

/// What to do about boards `left_out` of round `round` (none: any round)
/// pushed to `ids`: another broadcast round for the boards past the last's
/// range, the way to give it (`ctl lichess`, the configuration's line); or
/// more games a broadcast round, for boards within the ranges.
fn left_out_remedy(round: Option<u32>, ids: &[RoundId], left_out: &[u32], max_games: usize) -> String {
    let parts = ids.len().max(1);
    let mut said = Vec::new();
    if left_out.iter().any(|b| part_of(*b, parts + 1) == parts) {
        let r = round.map_or_else(|| "ROUND".to_string(), |r| r.to_string());
        let (first, _) = part_boards(parts, parts + 1);
        let mut listed: Vec<String> = ids.iter().map(ToString::to_string).collect();
        if listed.is_empty() {
            listed.push("ID".into());
        }
        let quoted: Vec<String> = listed.iter().map(|i| format!("\"{i}\"")).collect();
        said.push(format!(
            "give round {r} another broadcast round on lichess for boards {first} and up: ctl lichess {r} {} <ID>, \
             or in [lichess] rounds = {{ {r} = [{}, \"<ID>\"] }} and reload",
            listed.join(" "),
            quoted.join(", ")
        ));
    }
    if left_out.iter().any(|b| part_of(*b, parts + 1) < parts) {
        said.push(format!(
            "a broadcast round takes max_games = {max_games} games: raise it in [lichess] if lichess gave the \
             broadcast more, and reload"
        ));
    }
    said.join("; or ")
}

struct Service {
    cfg: LichessConfig,
    /// The token; `None` while the token file holds none (the push is off).
    token: Option<Token>,
    /// Why the push is off (the token file), said by every round's state.
    off: Option<config::TokenError>,
    client: Option<http::PushClient>,
    /// A client of a new server, taken up when no push is out.
    replacement: Option<http::PushClient>,
    journal: RoundsJournal,
    replayed: Replayed,
    schedule: Schedule<Part, Body>,
    info: BTreeMap<Part, RoundInfo>,
    /// Each round's newest text, split again when its ids change.
    pgns: BTreeMap<u32, RoundPgn>,
    status: watch::Sender<Vec<RoundStatus>>,
    reports: broadcast::Sender<Report>,
    ask: mpsc::UnboundedSender<u32>,
    /// Since when lichess has not taken a push, and why (said once).
    trouble: Option<(Instant, String)>,
}

/// The running task.
pub struct Lichess {
    task: JoinHandle<()>,
}

/// Milliseconds since the epoch.
fn epoch_ms(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Lichess {
    /// Checks `[lichess]` (the token file above all: refused when others may
    /// read or change it) and starts the task. A token file that holds no
    /// token (missing, empty) does not stop the daemon: the push is off, said
    /// in the log and in each round's state, until a reload reads a token. `boards`: the event's board numbers known
    /// at start (a round with more than a lichess round takes is said now).
    /// It ends once the folder's side of `link` is gone, after a last try of
    /// what waits.
    pub fn start(
        cfg: LichessConfig,
        state_dir: &Path,
        link: RoundsIn,
        inputs: Inputs,
        reload: mpsc::Receiver<LichessConfig>,
        boards: &[u32],
    ) -> Result<Lichess, LichessError> {
        let (token, off) = match config::read_token(&cfg.token_file) {
            Ok(t) => (Some(t), None),
            Err(e) if e.exposed => return Err(LichessError(e.to_string())),
            Err(e) => {
                tracing::error!("lichess: the push is off: {e}; every board is bridged all the same");
                (None, Some(e))
            }
        };
        let client = http::PushClient::new(cfg.url.clone()).map_err(LichessError)?;
        let (journal, ids) = RoundsJournal::open(&state_dir.join("lichess"), &cfg.rounds.0)
            .map_err(|e| LichessError(format!("[lichess] the rounds' journal: {e}")))?;
        if !cfg.url.tls && !cfg.url.is_loopback() {
            tracing::warn!(
                "lichess: {} is not https: the token crosses the network in the clear",
                cfg.url
            );
        }
        let mut sorted = boards.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let rounds: Vec<(Option<u32>, &[RoundId])> = if ids.is_empty() {
            vec![(None, &[])]
        } else {
            ids.iter().map(|(r, i)| (Some(*r), i.as_slice())).collect()
        };
        for (round, round_ids) in rounds {
            let left = left_out_boards(&sorted, round_ids.len(), cfg.max_games);
            if !left.is_empty() {
                tracing::warn!(
                    "lichess: {} boards, and a lichess round takes {} games: boards {} are not pushed; {}",
                    sorted.len(),
                    cfg.max_games,
                    crate::api::board_numbers(&left),
                    left_out_remedy(round, round_ids, &left, cfg.max_games)
                );
            }
        }
        let now = Instant::now();
        let mut schedule = Schedule::new(cfg.max_per_second);
        for (round, round_ids) in &ids {
            for (index, id) in round_ids.iter().enumerate() {
                schedule.set_id(Part { round: *round, index }, Some(id.clone()), now);
            }
            let _ = link.ask.send(*round);
        }
        let said: Vec<String> = ids
            .iter()
            .map(|(r, i)| format!("round {r} to {}", ids_words(i)))
            .collect();
        tracing::info!(
            "lichess: pushing to {} at most {}/s{}",
            cfg.url,
            cfg.max_per_second,
            if said.is_empty() {
                " (no round has a broadcast id yet: ctl lichess ROUND ID)".to_string()
            } else {
                format!(": {}", said.join(", "))
            }
        );
        let svc = Service {
            token,
            off,
            client: Some(client),
            replacement: None,
            journal,
            replayed: Replayed {
                ids,
                configured: cfg.rounds.0.clone(),
            },
            schedule,
            info: BTreeMap::new(),
            pgns: BTreeMap::new(),
            status: inputs.status,
            reports: inputs.reports,
            ask: link.ask,
            trouble: None,
            cfg,
        };
        Ok(Lichess {
            task: tokio::spawn(svc.run(link.pgn, inputs.calls, reload)),
        })
    }

    /// Waits for the task to end.
    pub async fn stopped(self) {
        let _ = self.task.await;
    }
}

/// A push out on the runtime: it gives the client back with the answer.
type Job = JoinHandle<(http::PushClient, Part, Body, Result<http::Answer, String>)>;

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

impl Service {
    /// The broadcast round's id (empty when it has none).
    fn id_of(&self, part: Part) -> String {
        self.replayed
            .ids
            .get(&part.round)
            .and_then(|ids| ids.get(part.index))
            .map(|i| i.to_string())
            .unwrap_or_default()
    }

    /// The broadcast round as the log names it: `round 3`, or `round 3 (boards
    /// 65 and up)` when the round has several.
    fn label(&self, part: Part) -> String {
        let parts = self.replayed.ids.get(&part.round).map_or(1, Vec::len);
        match part_boards(part.index, parts) {
            (1, 0) => format!("round {}", part.round),
            (first, last) => format!("round {} ({})", part.round, boards_words(first, last)),
        }
    }

    fn report(&self, part: Part, kind: &str, game: String, text: String, remedy: String) {
        let _ = self.reports.send(Report {
            round: part.round,
            id: self.id_of(part),
            kind: kind.into(),
            game,
            text,
            remedy,
        });
    }

    /// A `games.pgn` the folder wrote.
    fn offer(&mut self, pgn: RoundPgn) {
        let round = pgn.round;
        self.pgns.insert(round, pgn);
        self.split(round);
    }

    /// The round's newest text split over its broadcast rounds (the whole
    /// round to one), each part offered to the schedule.
    fn split(&mut self, round: u32) {
        let Some(pgn) = self.pgns.get(&round) else {
            return;
        };
        let ids = self.replayed.ids.get(&round).cloned().unwrap_or_default();
        let bodies = Body::parts(pgn, self.cfg.max_games, ids.len().max(1));
        let now = Instant::now();
        for (index, body) in bodies.into_iter().enumerate() {
            let part = Part { round, index };
            if index > 0 && body.games.is_empty() {
                // No game of its boards yet: nothing to push to it.
                self.schedule.withdraw(part);
                if let Some(info) = self.info.get_mut(&part) {
                    info.latest = None;
                }
                continue;
            }
            if ids.get(index).is_some() {
                self.say_left_out(part, &ids, &body);
            }
            self.info.entry(part).or_default().latest = Some(body.clone());
            self.schedule.offer(part, body, now);
        }
    }

    /// The boards a broadcast round leaves out, said when they change.
    fn say_left_out(&mut self, part: Part, ids: &[RoundId], body: &Body) {
        let info = self.info.entry(part).or_default();
        if body.left_out == info.said_left_out {
            return;
        }
        info.said_left_out = body.left_out.clone();
        if body.left_out.is_empty() {
            return;
        }
        let text = format!(
            "a lichess round takes {} games: boards {} are not pushed",
            self.cfg.max_games,
            crate::api::board_numbers(&body.left_out)
        );
        let remedy = left_out_remedy(Some(part.round), ids, &body.left_out, self.cfg.max_games);
        tracing::warn!("lichess: {}: {text}: {remedy}", self.label(part));
        self.report(part, "not_pushed", String::new(), text, remedy);
    }

    /// A decision from a door: journaled, then applied.
    fn call(&mut self, call: Call) {
        let Call { decision, by, reply } = call;
        let RoundDecision::SetRound { round, ids } = &decision;
        let before = self.replayed.ids.get(round).cloned().unwrap_or_default();
        self.journal.decided(&decision, by.as_deref());
        self.replayed.decide(&decision);
        let by = by.map(|b| format!(" (by {b})")).unwrap_or_default();
        if ids.is_empty() {
            tracing::info!("lichess: round {round} is no longer pushed{by}");
        } else {
            tracing::info!(
                "lichess: round {round} is pushed to {} from now on{by}",
                ids_words(ids)
            );
        }
        self.set_ids(*round, &before);
        let _ = reply.send(Ok(()));
    }

    /// A round's ids set or changed (from `before`): each broadcast round
    /// whose id changed, or whose boards' text did, is pushed whole to it.
    fn set_ids(&mut self, round: u32, before: &[RoundId]) {
        let after = self.replayed.ids.get(&round).cloned().unwrap_or_default();
        let now = Instant::now();
        for index in 0..before.len().max(after.len()).max(1) {
            let part = Part { round, index };
            let id = after.get(index).cloned();
            // What lichess said of the old id is not the new one's (a
            // broadcast round whose boards changed is told by its next push).
            if before.get(index) != id.as_ref() {
                if let Some(info) = self.info.get_mut(&part) {
                    *info = RoundInfo {
                        latest: info.latest.take(),
                        ..RoundInfo::default()
                    };
                }
            }
            if index >= after.len().max(1) {
                self.info.remove(&part);
                self.schedule.withdraw(part);
            }
            self.schedule.set_id(part, id, now);
        }
        self.split(round);
        if !after.is_empty() {
            let _ = self.ask.send(round);
        }
    }

    /// `[lichess]` read again: a change of the token or the server pushes
    /// every round whole again (the new server has none of it; refused rounds
    /// are tried again); a change of a round's ids pushes those broadcast
    /// rounds whole.
    fn reload(&mut self, mut cfg: LichessConfig) {
        let mut changed = false;
        match config::read_token(&cfg.token_file) {
            Ok(t) if self.token.as_ref() != Some(&t) => {
                if self.token.is_none() {
                    tracing::info!("lichess: a token was read: the pushes start");
                } else {
                    tracing::info!("lichess: a new token was read");
                }
                self.token = Some(t);
                self.off = None;
                changed = true;
            }
            Ok(_) => {}
            Err(e) if self.token.is_some() => tracing::error!("lichess: {e}; the token read before stays"),
            Err(e) => {
                tracing::error!("lichess: the push is still off: {e}");
                self.off = Some(e);
            }
        }
        if cfg.url != self.cfg.url {
            match http::PushClient::new(cfg.url.clone()) {
                Ok(c) => {
                    tracing::info!("lichess: pushing to {} from now on", cfg.url);
                    self.replacement = Some(c);
                    changed = true;
                }
                Err(e) => {
                    tracing::error!("lichess: {e}; still pushing to {}", self.cfg.url);
                    cfg.url = self.cfg.url.clone();
                }
            }
        }
        self.schedule.set_rate(cfg.max_per_second);
        let resplit = cfg.max_games != self.cfg.max_games;
        let before: Ids = self.replayed.ids.clone();
        self.journal.configure(&cfg.rounds.0, &mut self.replayed);
        let after = self.replayed.ids.clone();
        self.cfg = cfg;
        let rounds: BTreeSet<u32> = before.keys().chain(after.keys()).copied().collect();
        for r in rounds {
            if before.get(&r) != after.get(&r) {
                self.set_ids(r, before.get(&r).map_or(&[], Vec::as_slice));
            }
        }
        if resplit {
            let rounds: Vec<u32> = self.pgns.keys().copied().collect();
            for r in rounds {
                self.split(r);
            }
        }
        if changed {
            self.schedule.start_over(Instant::now());
            // What the old server or token was told is not the new one's.
            for info in self.info.values_mut() {
                *info = RoundInfo {
                    latest: info.latest.take(),
                    ..RoundInfo::default()
                };
            }
            for r in self.replayed.ids.keys() {
                let _ = self.ask.send(*r);
            }
        }
    }

    /// Each broadcast round of each round with an id, as the doors show it.
    fn status(&self) -> Vec<RoundStatus> {
        let now = Instant::now();
        let retrying = self.schedule.waiting_until().filter(|w| *w > now);
        let mut out = Vec::new();
        for (&round, ids) in &self.replayed.ids {
            for (index, id) in ids.iter().enumerate() {
                let part = Part { round, index };
                let info = self.info.get(&part);
                let state = if self.off.is_some() {
                    "off"
                } else if self.schedule.is_blocked(part) {
                    "refused"
                } else if self.schedule.is_pending(part) || self.schedule.in_flight() == Some(part) {
                    if retrying.is_some() { "retrying" } else { "pushing" }
                } else if self.schedule.is_done(part) {
                    "pushed"
                } else {
                    "waiting"
                };
                let games = info.map(|i| i.games.clone()).unwrap_or_default();
                let refused = games.iter().filter(|g| !g.error.is_empty()).count() as u32;
                let (first_board, last_board) = part_boards(index, ids.len());
                out.push(RoundStatus {
                    round,
                    id: id.to_string(),
                    first_board,
                    last_board,
                    state: state.into(),
                    last_push_ms: info.map_or(0, |i| i.last_push_ms),
                    pushes: info.map_or(0, |i| i.pushes),
                    games_accepted: games.len() as u32 - refused,
                    games_refused: refused,
                    not_pushed: info
                        .and_then(|i| i.latest.as_ref())
                        .map(|b| b.left_out.clone())
                        .unwrap_or_default(),
                    error: match &self.off {
                        Some(e) => format!("the push is off: {e}"),
                        None => info.map(|i| i.error.clone()).unwrap_or_default(),
                    },
                    next_try_ms: match (state, retrying) {
                        ("retrying", Some(w)) => epoch_ms(SystemTime::now() + (w - now)),
                        _ => 0,
                    },
                    games,
                });
            }
        }
        out
    }

    async fn run(
        mut self,
        mut pgn: mpsc::UnboundedReceiver<RoundPgn>,
        calls: mpsc::Receiver<Call>,
        reload: mpsc::Receiver<LichessConfig>,
    ) {
        let mut calls = Some(calls);
        let mut reload = Some(reload);
        let mut job: Option<Job> = None;
        let mut closing: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let mut wake = None;
            if job.is_none() {
                if let Some(c) = self.replacement.take() {
                    self.client = Some(c);
                }
            }
            if let (None, Some(token)) = (&job, &self.token) {
                match self.schedule.next(now) {
                    PushDue::Push { round, id, body } => {
                        let mut client = self
                            .client
                            .take()
                            .expect("the client is home while no push is out");
                        let token = token.clone();
                        job = Some(tokio::spawn(async move {
                            let r = client.push(&id, &token, body.bytes.clone()).await;
                            (client, round, body, r)
                        }));
                    }
                    PushDue::At(t) => wake = Some(t),
                    PushDue::Idle => {}
                }
            }
            let status = self.status();
            self.status.send_if_modified(|s| {
                let changed = *s != status;
                if changed {
                    *s = status;
                }
                changed
            });
            if closing.is_some() && job.is_none() && wake.is_none() {
                break;
            }
            tokio::select! {
                p = pgn.recv(), if closing.is_none() => match p {
                    Some(p) => self.offer(p),
                    None => closing = Some(now + CLOSE_GRACE),
                },
                c = async { match calls.as_mut() { Some(c) => c.recv().await, None => std::future::pending().await } } => match c {
                    Some(c) => self.call(c),
                    None => calls = None,
                },
                c = async { match reload.as_mut() { Some(r) => r.recv().await, None => std::future::pending().await } } => match c {
                    Some(c) => self.reload(c),
                    None => reload = None,
                },
                done = async { match job.as_mut() { Some(j) => j.await, None => std::future::pending().await } } => {
                    job = None;
                    match done {
                        Ok((client, round, body, r)) => {
                            self.client = Some(client);
                            if self.schedule.stale_answer() {
                                tracing::debug!(
                                    "lichess: {}: an answer from before the reload, passed over",
                                    self.label(round)
                                );
                            } else {
                                self.answered(round, body, r);
                            }
                        }
                        Err(e) => {
                            tracing::error!("lichess: the push failed: {e}");
                            return;
                        }
                    }
                },
                _ = sleep_until(wake) => {},
                _ = sleep_until(closing) => {
                    if self.schedule.anything_pending() {
                        tracing::warn!("lichess: stopping with changes lichess does not have yet; they are pushed after the next start");
                    }
                    break;
                }
            }
        }
        if let Some(j) = job {
            j.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<RoundId> {
        crate::api::lichess::parse_ids(list.iter().copied()).unwrap()
    }

    /// Issue 60: the boards a round's broadcast rounds leave out, and what to
    /// do: another broadcast round (the ctl command and the configuration's
    /// line, with the ids it has), or more games a broadcast round.
    #[test]
    fn boards_left_out_and_how_to_give_them_a_broadcast_round() {
        let boards: Vec<u32> = (1..=130).collect();
        assert_eq!(left_out_boards(&boards, 1, 64), (65..=130).collect::<Vec<_>>());
        assert_eq!(left_out_boards(&boards, 2, 64), [129, 130]);
        assert!(left_out_boards(&boards, 3, 64).is_empty());
        assert_eq!(
            left_out_boards(&boards, 3, 60),
            [61, 62, 63, 64, 125, 126, 127, 128]
        );
        let two = ids(&["AbCd1234", "EfGh5678"]);
        assert_eq!(
            left_out_remedy(Some(2), &two, &[129, 130], 64),
            "give round 2 another broadcast round on lichess for boards 129 and up: ctl lichess 2 AbCd1234 EfGh5678 <ID>, \
             or in [lichess] rounds = { 2 = [\"AbCd1234\", \"EfGh5678\", \"<ID>\"] } and reload"
        );
        let within = left_out_remedy(Some(2), &two, &[61, 62], 60);
        assert!(
            within.starts_with("a broadcast round takes max_games = 60 games"),
            "{within}"
        );
        let both = left_out_remedy(Some(2), &two, &[61, 129], 60);
        assert!(
            both.contains("for boards 129 and up") && both.contains("; or a broadcast round takes"),
            "{both}"
        );
        let none = left_out_remedy(None, &[], &[65], 64);
        assert!(none.contains("ctl lichess ROUND ID <ID>"), "{none}");
    }
}
