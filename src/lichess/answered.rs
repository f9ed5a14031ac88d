//! What the task does with lichess's answer to a push: the schedule told
//! (accepted, refused, try again), each round's state kept for the doors, and
//! the reports made (a game refused, a round refused, lichess away and back),
//! each once.

use std::time::{Duration, Instant, SystemTime};

use super::answer::{self, Away, Outcome, Refusal};
use super::body::{Body, game_words};
use super::{Part, Service, epoch_ms, http};
use crate::api::lichess::GameStatus;
use crate::log::escaped;

impl Service {
    /// Lichess is away, failing or busy: every round waits.
    fn retry(&mut self, part: Part, after: Option<Duration>, why: String, away: Away) {
        let wait = self.schedule.failed(after, Instant::now());
        if self.trouble.is_none() {
            let (text, remedy) = away.words(&why);
            // The words may hold lichess's own (an answer's body): escaped,
            // so that no answer can forge a line of the log.
            tracing::warn!(
                "lichess: {}: {} (next try in {} s){}",
                self.label(part),
                escaped(&text),
                wait.as_secs_f64().ceil(),
                if remedy.is_empty() {
                    String::new()
                } else {
                    format!(": {}", escaped(&remedy))
                }
            );
            self.report(part, "unreachable", String::new(), text, remedy);
            self.trouble = Some((Instant::now(), why));
        } else {
            tracing::debug!(
                "lichess: {}; next try in {:.1} s",
                escaped(&why),
                wait.as_secs_f64()
            );
        }
    }

    /// Lichess answered a push (or did not).
    pub(super) fn answered(&mut self, part: Part, body: Body, result: Result<http::Answer, String>) {
        let answer = match result {
            Ok(a) => a,
            Err(why) => return self.retry(part, None, why, Away::NoAnswer),
        };
        match answer::outcome(
            answer.status,
            answer.retry_after.as_deref(),
            &answer.body,
            SystemTime::now(),
        ) {
            Outcome::Accepted(games) => self.accepted(part, &body, games),
            Outcome::Retry { after, why, away } => self.retry(part, after, why, away),
            Outcome::Refused(r) => self.refused(part, r),
            Outcome::Rejected(text) => {
                self.schedule.rejected(part, &body);
                self.back(part);
                let info = self.info.entry(part).or_default();
                if info.error != text {
                    info.error = text.clone();
                    tracing::warn!(
                        "lichess: {}: {}; the round's next change is pushed again",
                        self.label(part),
                        escaped(&text)
                    );
                    let remedy = "the next change of the round is pushed again".to_string();
                    self.report(part, "rejected", String::new(), text, remedy);
                }
            }
        }
    }

    /// A push went through after lichess was away.
    fn back(&mut self, part: Part) {
        if let Some((since, why)) = self.trouble.take() {
            let text = format!(
                "lichess takes the pushes again, after {} s ({why})",
                since.elapsed().as_secs()
            );
            tracing::info!("lichess: {}: {}", self.label(part), escaped(&text));
            self.report(part, "back", String::new(), text, String::new());
        }
    }

    fn refused(&mut self, part: Part, r: Refusal) {
        self.schedule.blocked(part);
        // lichess answers again (its answer is the round's trouble now).
        self.trouble = None;
        let id = self.id_of(part);
        let (what, remedy) = r.words(
            &id,
            &self.cfg.url.to_string(),
            &self.cfg.token_file.display().to_string(),
        );
        tracing::error!(
            "lichess: {}: {}: {}",
            self.label(part),
            escaped(&what),
            escaped(&remedy)
        );
        self.info.entry(part).or_default().error = format!("{what}: {remedy}");
        self.report(part, "refused", String::new(), what, remedy);
    }

    fn accepted(&mut self, part: Part, body: &Body, games: Vec<answer::GameAnswer>) {
        self.schedule.accepted(part, body);
        self.back(part);
        let first = self.info.get(&part).is_none_or(|i| i.pushes == 0);
        let label = self.label(part);
        let mut reports = Vec::new();
        let info = self.info.entry(part).or_default();
        info.pushes += 1;
        info.last_push_ms = epoch_ms(SystemTime::now());
        info.error.clear();
        info.games = body
            .games
            .iter()
            .enumerate()
            .map(|(i, (span, name))| {
                let a = games.get(i);
                GameStatus {
                    board: span.board,
                    index: span.index,
                    name: name.clone(),
                    moves: a.and_then(|a| a.moves).unwrap_or(0),
                    error: a.and_then(|a| a.error.clone()).unwrap_or_default(),
                }
            })
            .collect();
        for ((span, name), g) in body.games.iter().zip(&info.games) {
            let key = (span.board, span.index);
            let before = info.reported.get(&key).cloned().unwrap_or_default();
            if g.error != before {
                if g.error.is_empty() {
                    info.reported.remove(&key);
                    tracing::info!("lichess: {label}: {}: accepted now", game_words(span, name));
                } else {
                    info.reported.insert(key, g.error.clone());
                    reports.push((game_words(span, name), g.error.clone()));
                }
            }
        }
        let (accepted, moves) = info
            .games
            .iter()
            .filter(|g| g.error.is_empty())
            .fold((0, 0u64), |(n, m), g| (n + 1, m + u64::from(g.moves)));
        let refused = info.games.len() - accepted;
        if first {
            tracing::info!(
                "lichess: {label}: pushed to {}: {accepted} game(s), {moves} move(s){}",
                self.id_of(part),
                if refused > 0 {
                    format!(", {refused} refused")
                } else {
                    String::new()
                }
            );
        } else {
            tracing::debug!("lichess: {label}: pushed: {accepted} game(s), {moves} move(s)");
        }
        for (game, error) in reports {
            tracing::warn!("lichess: {label}: {game}: refused: {error}; the other games go on");
            let remedy = "the game stays in the broadcast folder; correct it (ctl position, ctl reinstate) or enter it on lichess by hand".to_string();
            self.report(part, "game_refused", game, error, remedy);
        }
    }
}
