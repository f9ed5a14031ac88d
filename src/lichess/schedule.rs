//! When to push what: a state machine with time as input and no I/O (as
//! `clock::queue`), tested without a runtime.
//!
//! - Each round (a key: a broadcast round of a round of the event, for the
//!   task) keeps the newest body it was given; a body lichess has already
//!   accepted for the round's id is not sent again.
//! - One request at a time, all rounds together (lichess asks for that), and
//!   their starts at least `1 / max_per_second` apart. The round whose change
//!   has waited longest goes first.
//! - No answer, a server error or a 429: every round waits, `Retry-After` when
//!   the server said how long, else a back-off from 1 s doubling to a minute;
//!   the newest body of each round is kept meanwhile, so the first push after
//!   the outage carries the round whole, as it stands then.
//! - A round lichess refuses (the token, the id, a source URL) is not tried
//!   again until its id is set again or the configuration changes.
//! - A new server or token: every round is pushed whole again, and the answer
//!   of a push already out (to the old server, or with the old token) is
//!   passed over.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::api::lichess::RoundId;

/// The first wait after a failure, doubled after each failure since.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait of the back-off.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct Round<B> {
    id: Option<RoundId>,
    /// The newest body the round was given.
    latest: Option<B>,
    /// The body the current id has from us (accepted, or refused as a PGN:
    /// either way not worth sending again).
    done: Option<B>,
    /// Since when `latest` has waited to go.
    since: Option<Instant>,
    blocked: bool,
}

impl<B> Default for Round<B> {
    fn default() -> Self {
        Round {
            id: None,
            latest: None,
            done: None,
            since: None,
            blocked: false,
        }
    }
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum PushDue<K, B> {
    /// Push `body` to round `id` (for `round`, the task's key) now.
    Push { round: K, id: RoundId, body: B },
    /// Nothing may go before this.
    At(Instant),
    /// Nothing waits.
    Idle,
}

#[derive(Debug)]
pub struct Schedule<K, B> {
    interval: Duration,
    last_start: Option<Instant>,
    in_flight: Option<K>,
    /// No request before this (the server failed).
    wait_until: Option<Instant>,
    backoff: Duration,
    rounds: BTreeMap<K, Round<B>>,
    /// The push out was made before [`Schedule::start_over`]: its answer says
    /// nothing of the server or token now.
    stale: bool,
}

impl<K: Ord + Copy, B: Clone + PartialEq> Schedule<K, B> {
    pub fn new(max_per_second: f64) -> Schedule<K, B> {
        let mut s = Schedule {
            interval: Duration::ZERO,
            last_start: None,
            in_flight: None,
            wait_until: None,
            backoff: FIRST_BACKOFF,
            rounds: BTreeMap::new(),
            stale: false,
        };
        s.set_rate(max_per_second);
        s
    }

    /// At most `max_per_second` request starts a second.
    pub fn set_rate(&mut self, max_per_second: f64) {
        let rate = if max_per_second.is_finite() && max_per_second > 0.0 {
            max_per_second
        } else {
            1.0
        };
        self.interval = Duration::from_secs_f64(1.0 / rate);
    }

    fn pending(r: &Round<B>) -> bool {
        r.id.is_some() && !r.blocked && r.latest.is_some() && r.latest != r.done
    }

    /// The round's newest body (the newest wins; an older one waiting goes).
    pub fn offer(&mut self, round: K, body: B, now: Instant) {
        let r = self.rounds.entry(round).or_default();
        let was = Self::pending(r);
        r.latest = Some(body);
        if !was && Self::pending(r) {
            r.since = Some(now);
        }
    }

    /// The round's broadcast id (`None`: not pushed). A new id gets the round
    /// whole, and is tried even when the old one was refused.
    pub fn set_id(&mut self, round: K, id: Option<RoundId>, now: Instant) {
        let r = self.rounds.entry(round).or_default();
        if r.id != id {
            r.done = None;
        }
        r.id = id;
        r.blocked = false;
        if Self::pending(r) {
            r.since.get_or_insert(now);
        }
    }

    /// A new server, or a new token: what the old one had counts for nothing.
    /// Every round with an id is pushed whole again, refused rounds tried
    /// again, the back-off forgotten; a push out now is answered for the old
    /// one ([`Schedule::stale_answer`]).
    pub fn start_over(&mut self, now: Instant) {
        self.stale = self.in_flight.is_some();
        self.wait_until = None;
        self.backoff = FIRST_BACKOFF;
        for r in self.rounds.values_mut() {
            r.done = None;
            r.blocked = false;
            if Self::pending(r) {
                r.since.get_or_insert(now);
            }
        }
    }

    /// Whether the answer come now is of a push made before
    /// [`Schedule::start_over`]: then the push is over and nothing is learnt
    /// from it (its round is pushed again).
    pub fn stale_answer(&mut self) -> bool {
        if self.stale {
            self.stale = false;
            self.in_flight = None;
            true
        } else {
            false
        }
    }

    /// The round has no body now (its boards have no game): nothing is pushed
    /// until it is given one; its id stays.
    pub fn withdraw(&mut self, round: K) {
        if let Some(r) = self.rounds.get_mut(&round) {
            r.latest = None;
            r.since = None;
        }
    }

    /// The next push, or when to ask again. A push returned is in flight until
    /// its outcome is given.
    pub fn next(&mut self, now: Instant) -> PushDue<K, B> {
        if self.in_flight.is_some() {
            return PushDue::Idle;
        }
        let Some((&round, r)) = self
            .rounds
            .iter()
            .filter(|(_, r)| Self::pending(r))
            .min_by_key(|(n, r)| (r.since, **n))
        else {
            return PushDue::Idle;
        };
        let mut at = now;
        if let Some(w) = self.wait_until {
            at = at.max(w);
        }
        if let Some(l) = self.last_start {
            at = at.max(l + self.interval);
        }
        if at > now {
            return PushDue::At(at);
        }
        let (Some(id), Some(body)) = (r.id.clone(), r.latest.clone()) else {
            return PushDue::Idle;
        };
        self.in_flight = Some(round);
        self.last_start = Some(now);
        PushDue::Push { round, id, body }
    }

    /// The push of `body` to `round` was accepted.
    pub fn accepted(&mut self, round: K, body: &B) {
        self.in_flight = None;
        self.wait_until = None;
        self.backoff = FIRST_BACKOFF;
        self.finish(round, body);
    }

    /// lichess refused `body` as a whole (not the round): it is not sent
    /// again; the round's next change is.
    pub fn rejected(&mut self, round: K, body: &B) {
        self.in_flight = None;
        self.wait_until = None;
        self.backoff = FIRST_BACKOFF;
        self.finish(round, body);
    }

    fn finish(&mut self, round: K, body: &B) {
        if let Some(r) = self.rounds.get_mut(&round) {
            r.done = Some(body.clone());
            r.since = Self::pending(r).then_some(r.since).flatten();
        }
    }

    /// No answer, a server error, too many requests: every round waits, at
    /// least `after` when the server said; the bodies are kept. Returns how
    /// long.
    pub fn failed(&mut self, after: Option<Duration>, now: Instant) -> Duration {
        self.in_flight = None;
        let wait = after.map_or(self.backoff, |a| a.max(FIRST_BACKOFF));
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        self.wait_until = Some(now + wait);
        wait
    }

    /// lichess refuses the round: not tried again until its id is set again or
    /// the configuration changes.
    pub fn blocked(&mut self, round: K) {
        // The server answered: whatever kept it away is over.
        self.in_flight = None;
        self.wait_until = None;
        self.backoff = FIRST_BACKOFF;
        if let Some(r) = self.rounds.get_mut(&round) {
            r.blocked = true;
        }
    }

    /// A push is out.
    pub fn in_flight(&self) -> Option<K> {
        self.in_flight
    }

    /// Whether the round has a change lichess does not have yet.
    pub fn is_pending(&self, round: K) -> bool {
        self.rounds.get(&round).is_some_and(Self::pending)
    }

    /// Whether lichess has the round's newest body (accepted, or refused as a PGN).
    pub fn is_done(&self, round: K) -> bool {
        self.rounds
            .get(&round)
            .is_some_and(|r| r.latest.is_some() && r.latest == r.done)
    }

    /// Whether the round is refused until the configuration changes.
    pub fn is_blocked(&self, round: K) -> bool {
        self.rounds.get(&round).is_some_and(|r| r.blocked)
    }

    /// Until when every round waits after a failure.
    pub fn waiting_until(&self) -> Option<Instant> {
        self.wait_until
    }

    /// Whether anything is left to push (on shutdown).
    pub fn anything_pending(&self) -> bool {
        self.in_flight.is_some() || self.rounds.values().any(Self::pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> RoundId {
        RoundId::parse(s).unwrap()
    }

    fn ms(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn the_newest_body_wins_one_at_a_time_at_the_rate() {
        let t0 = Instant::now();
        let mut s: Schedule<u32, &str> = Schedule::new(2.0);
        s.offer(1, "a", t0);
        assert_eq!(s.next(t0), PushDue::Idle, "no id: nothing to push");
        s.set_id(1, Some(id("AbCd1234")), t0);
        let PushDue::Push {
            round: 1, body: "a", ..
        } = s.next(t0)
        else {
            panic!()
        };
        // While it is out, newer bodies replace each other; none goes.
        s.offer(1, "b", ms(t0, 10));
        s.offer(1, "c", ms(t0, 20));
        assert_eq!(s.next(ms(t0, 30)), PushDue::Idle);
        s.accepted(1, &"a");
        // Half a second after the last start at 2 a second.
        assert_eq!(s.next(ms(t0, 100)), PushDue::At(ms(t0, 500)));
        let PushDue::Push { body: "c", .. } = s.next(ms(t0, 500)) else {
            panic!()
        };
        s.accepted(1, &"c");
        assert!(s.is_done(1));
        // The same body again is not pushed again.
        s.offer(1, "c", ms(t0, 2000));
        assert_eq!(s.next(ms(t0, 2000)), PushDue::Idle);
    }

    #[test]
    fn failures_back_off_and_retry_after_is_obeyed_and_nothing_is_lost() {
        let t0 = Instant::now();
        let mut s: Schedule<u32, u32> = Schedule::new(10.0);
        s.set_id(1, Some(id("AbCd1234")), t0);
        s.offer(1, 1, t0);
        let mut now = t0;
        let mut waits = Vec::new();
        for body in 2..=8 {
            let PushDue::Push { body: b, .. } = s.next(now) else {
                panic!("{now:?}")
            };
            assert_eq!(b, body - 1, "the newest body each time");
            waits.push(s.failed(None, now));
            s.offer(1, body, now + Duration::from_millis(10));
            assert_eq!(s.next(now), PushDue::At(now + *waits.last().unwrap()));
            now += *waits.last().unwrap();
        }
        assert_eq!(
            waits.iter().map(Duration::as_secs).collect::<Vec<_>>(),
            [1, 2, 4, 8, 16, 32, 60]
        );
        // A 429 that says 7 s: not before.
        let PushDue::Push { .. } = s.next(now) else {
            panic!()
        };
        assert_eq!(
            s.failed(Some(Duration::from_secs(7)), now),
            Duration::from_secs(7)
        );
        assert_eq!(
            s.next(now + Duration::from_secs(6)),
            PushDue::At(now + Duration::from_secs(7))
        );
        now += Duration::from_secs(7);
        let PushDue::Push { body, .. } = s.next(now) else {
            panic!()
        };
        assert_eq!(body, 8, "the round as it stands after the outage");
        s.accepted(1, &body);
        assert!(s.waiting_until().is_none());
        // The back-off starts again from a second.
        s.offer(1, 9, now);
        let later = now + Duration::from_secs(1);
        let PushDue::Push { .. } = s.next(later) else {
            panic!()
        };
        assert_eq!(s.failed(None, later), FIRST_BACKOFF);
    }

    #[test]
    fn a_refused_round_waits_for_a_new_id_or_configuration_others_go_on() {
        let t0 = Instant::now();
        let mut s: Schedule<u32, u32> = Schedule::new(10.0);
        s.set_id(1, Some(id("Missing1")), t0);
        s.set_id(2, Some(id("Round002")), t0);
        s.offer(1, 10, t0);
        s.offer(2, 20, ms(t0, 1));
        let PushDue::Push { round: 1, .. } = s.next(t0) else {
            panic!()
        };
        s.blocked(1);
        s.offer(1, 11, ms(t0, 50));
        let PushDue::Push { round: 2, .. } = s.next(ms(t0, 100)) else {
            panic!()
        };
        s.accepted(2, &20);
        assert_eq!(s.next(ms(t0, 300)), PushDue::Idle, "round 1 waits");
        assert!(s.is_blocked(1) && !s.is_pending(1));
        // The configuration changed (a token, a server): tried again, and
        // round 2 again too (the new server has none of it).
        s.start_over(ms(t0, 400));
        let PushDue::Push {
            round: 1, body: 11, ..
        } = s.next(ms(t0, 400))
        else {
            panic!()
        };
        s.blocked(1);
        let PushDue::Push {
            round: 2, body: 20, ..
        } = s.next(ms(t0, 500))
        else {
            panic!()
        };
        s.accepted(2, &20);
        // A new id: the round whole again, to the new id.
        s.set_id(1, Some(id("Round001")), ms(t0, 600));
        let PushDue::Push {
            round: 1,
            id: i,
            body: 11,
        } = s.next(ms(t0, 600))
        else {
            panic!()
        };
        assert_eq!(i.as_str(), "Round001");
        s.accepted(1, &11);
        // The same body to another id goes again.
        s.set_id(1, Some(id("Round009")), ms(t0, 800));
        assert!(matches!(s.next(ms(t0, 800)), PushDue::Push { body: 11, .. }));
    }

    /// Issue 60: a new server (or token) gets every round whole, though the
    /// old one had it all; a round it refused is tried; the answer of the push
    /// that was out for the old one is passed over.
    #[test]
    fn a_new_server_gets_every_round_whole_and_an_old_answer_is_passed_over() {
        let t0 = Instant::now();
        let mut s: Schedule<u32, u32> = Schedule::new(10.0);
        s.set_id(1, Some(id("Round001")), t0);
        s.set_id(2, Some(id("Round002")), t0);
        s.set_id(3, Some(id("Round003")), t0);
        s.offer(1, 10, t0);
        s.offer(2, 20, t0);
        s.offer(3, 30, t0);
        for (n, t) in [(1, 0), (2, 100), (3, 200)] {
            let PushDue::Push { round, body, .. } = s.next(ms(t0, t)) else {
                panic!()
            };
            assert_eq!(round, n);
            if n == 3 {
                s.blocked(3);
            } else {
                s.accepted(round, &body);
            }
        }
        assert!(s.is_done(1) && s.is_done(2) && s.is_blocked(3));
        assert_eq!(s.next(ms(t0, 300)), PushDue::Idle);
        // Round 1 changes; its push is out when the server changes.
        s.offer(1, 11, ms(t0, 300));
        let PushDue::Push { round: 1, .. } = s.next(ms(t0, 300)) else {
            panic!()
        };
        s.start_over(ms(t0, 350));
        assert!(!s.is_done(2) && !s.is_blocked(3) && s.is_pending(2) && s.is_pending(3));
        assert_eq!(s.next(ms(t0, 360)), PushDue::Idle, "one request at a time");
        // The old server's answer: passed over, round 1 still to push.
        assert!(s.stale_answer());
        assert!(!s.stale_answer(), "once");
        assert!(s.is_pending(1));
        let mut pushed = Vec::new();
        let mut t = 400;
        while let PushDue::Push { round, body, .. } = s.next(ms(t0, t)) {
            pushed.push((round, body));
            s.accepted(round, &body);
            t += 100;
        }
        pushed.sort_unstable();
        assert_eq!(pushed, [(1, 11), (2, 20), (3, 30)], "every round, whole");
        // No push out: nothing is stale.
        s.start_over(ms(t0, 1000));
        assert!(!s.stale_answer());
    }

    #[test]
    fn the_round_that_waited_longest_goes_first() {
        let t0 = Instant::now();
        let mut s: Schedule<u32, u32> = Schedule::new(10.0);
        s.set_id(1, Some(id("Round001")), t0);
        s.set_id(2, Some(id("Round002")), t0);
        s.offer(2, 20, t0);
        s.offer(1, 10, ms(t0, 5));
        let PushDue::Push { round: 2, .. } = s.next(ms(t0, 10)) else {
            panic!()
        };
        s.accepted(2, &20);
        s.offer(2, 21, ms(t0, 20));
        let PushDue::Push { round: 1, .. } = s.next(ms(t0, 200)) else {
            panic!()
        };
        // A refused PGN is not sent again; the next change is.
        s.rejected(1, &10);
        assert!(s.is_done(1));
        assert!(matches!(
            s.next(ms(t0, 400)),
            PushDue::Push {
                round: 2,
                body: 21,
                ..
            }
        ));
        assert!(s.anything_pending());
    }
}
