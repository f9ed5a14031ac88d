//! Failed logins slowed down: per address, per user name and per device.
//! Pure: time is passed in; the login handler waits as these say.
//!
//! A login comes by one of two lanes (issue 60, OWASP's "device cookies"):
//!
//! - **A device that signed in before** ([`Devices`]): the login names the
//!   user of a device cookie it holds (`device`): it is slowed by the failures
//!   of that device alone, as an address is (5 checked at once, then 1 s, 2 s,
//!   4 s ... at most a minute after its last failure), never by the guesses of
//!   others. A flood from any number of addresses leaves the arbiter's own
//!   phone or laptop its lane.
//! - **Any other login**, slowed twice over:
//!   - **Per address** ([`Addresses`]): 5 failures are checked at once; then
//!     each further attempt must wait 1 s, 2 s, 4 s ... (at most a minute)
//!     after the address's last failure, and one that comes earlier is
//!     refused unchecked.
//!   - **Per user name** ([`Accounts`]): failures under one name, from every
//!     address together: 10 are checked at once; then the name checks one
//!     attempt at a time, 1 s, 2 s, 4 s, 8 s, then 15 s after its last
//!     failure. An attempt that comes meanwhile is held (at most 30 s, 8 at
//!     once) in the name's line, and the name's next turn goes to the attempt
//!     whose address has tried least in the last 15 minutes, counted when the
//!     turn comes (then to the one held longest). So guesses at one password,
//!     from however many addresses, come at 4 a minute. Every name is
//!     throttled alike, an arbiter's or one made up: the delay never tells
//!     which names are in the file.
//! - User names kept apart: 4,096 at most (a name is forgotten 15 minutes
//!   after its last failure); a name tried when that many are kept shares one
//!   of 64 lanes with the other names beyond them (by a hash keyed at each
//!   start), whether it is an arbiter's or not. Addresses and devices: at most
//!   4,096 each (the one seen longest ago forgotten first); failures are
//!   forgotten 15 minutes after the last.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Failed logins from one address (or device) that are checked at once;
/// after them each attempt waits 1 s, 2 s, 4 s ... up to `MAX_WAIT` after the
/// last failure.
pub const FREE_FAILURES: u32 = 5;
pub const MAX_WAIT: Duration = Duration::from_secs(60);
/// Failed logins under one name (from any address) checked at once; after
/// them one at a time, up to `ACCOUNT_MAX_WAIT` apart.
pub const ACCOUNT_FREE: u32 = 10;
pub const ACCOUNT_MAX_WAIT: Duration = Duration::from_secs(15);
/// Attempts held in one name's line, and for how long at most.
pub const MAX_HELD: usize = 8;
pub const HOLD: Duration = Duration::from_secs(30);
/// Addresses (and devices) remembered (the one seen longest ago forgotten
/// first).
const MAX_ADDRESSES: usize = 4096;
/// User names kept apart, and the lanes the names beyond them share.
pub const MAX_NAMES: usize = 4096;
pub const SHARED_LANES: u64 = 64;
/// Failures and attempts are forgotten this long after the last.
pub const FORGET: Duration = Duration::from_secs(15 * 60);

/// The wait after `count` failures, `free` of them without any, doubling from
/// a second up to `max`.
fn doubling(count: u32, free: u32, max: Duration) -> Duration {
    if count < free {
        return Duration::ZERO;
    }
    Duration::from_secs(1 << (count - free).min(10)).min(max)
}

struct Tries {
    /// Attempts in the last 15 minutes, checked or not.
    attempts: u32,
    failures: u32,
    last_failure: Option<Instant>,
    seen: Instant,
}

/// Login attempts and failures per key (an address, or a device): one lane
/// of the sign-in throttle.
pub struct SignInLane<K> {
    map: HashMap<K, Tries>,
}

impl<K> Default for SignInLane<K> {
    fn default() -> Self {
        SignInLane { map: HashMap::new() }
    }
}

/// Per address.
pub type Addresses = SignInLane<IpAddr>;
/// Per device that signed in before (its device cookie's id).
pub type Devices = SignInLane<String>;

impl<K: Hash + Eq + Clone> SignInLane<K> {
    /// An attempt from `key`, counted: how long it must still wait before it
    /// is checked (zero: now).
    pub fn attempt(&mut self, key: &K, now: Instant) -> Duration {
        self.map.retain(|_, t| now.duration_since(t.seen) < FORGET);
        if !self.map.contains_key(key) && self.map.len() >= MAX_ADDRESSES {
            if let Some(k) = self
                .map
                .iter()
                .min_by_key(|(_, t)| t.seen)
                .map(|(k, _)| k.clone())
            {
                self.map.remove(&k);
            }
        }
        let t = self.map.entry(key.clone()).or_insert(Tries {
            attempts: 0,
            failures: 0,
            last_failure: None,
            seen: now,
        });
        t.attempts = t.attempts.saturating_add(1);
        t.seen = now;
        match t.last_failure {
            Some(last) => Self::delay(t.failures).saturating_sub(now.duration_since(last)),
            None => Duration::ZERO,
        }
    }

    /// The attempts `key` made in the last 15 minutes: its rank in a name's
    /// line (fewer go first).
    pub fn attempts(&self, key: &K) -> u32 {
        self.map.get(key).map_or(0, |t| t.attempts)
    }

    /// The wait after `count` failures.
    pub fn delay(count: u32) -> Duration {
        doubling(count, FREE_FAILURES, MAX_WAIT)
    }

    /// Counted as failed until it succeeds: attempts sent together are each
    /// counted before any is checked.
    pub fn failed(&mut self, key: &K, now: Instant) {
        if let Some(t) = self.map.get_mut(key) {
            t.failures = t.failures.saturating_add(1);
            t.last_failure = Some(now);
        }
    }

    /// The failure counted when the attempt came is confirmed now: the wait
    /// runs from the answer, however long the check took.
    pub fn confirmed(&mut self, key: &K, now: Instant) {
        if let Some(t) = self.map.get_mut(key) {
            t.last_failure = Some(now);
        }
    }

    /// The attempt counted as failed was not checked after all (its name had
    /// no turn for it).
    pub fn refund(&mut self, key: &K) {
        if let Some(t) = self.map.get_mut(key) {
            t.failures = t.failures.saturating_sub(1);
        }
    }

    pub fn succeeded(&mut self, key: &K) {
        self.map.remove(key);
    }
}

/// The line an attempt without a device joins: its user name's, whether the
/// arbiters' file has the name or not, or, for a name tried while
/// [`MAX_NAMES`] others are kept, one of the lanes such names share.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Account {
    Name(String),
    Shared(u64),
}

struct Held {
    ticket: u64,
    ip: IpAddr,
    since: Instant,
}

#[derive(Default)]
struct Gate {
    failures: u32,
    last: Option<Instant>,
    held: Vec<Held>,
    /// That it checks one at a time has been said (the log's warning).
    said: bool,
}

impl Gate {
    /// When the name checks its next attempt (`None`: at once).
    fn next_turn(&self) -> Option<Instant> {
        let last = self.last?;
        (self.failures >= ACCOUNT_FREE).then(|| last + Accounts::delay(self.failures))
    }

    /// Nothing held and nothing to remember: its failures are forgotten.
    fn idle(&self, now: Instant) -> bool {
        self.held.is_empty() && self.last.is_none_or(|l| now.duration_since(l) >= FORGET)
    }

    fn forget(&mut self, now: Instant) {
        if self.idle(now) {
            self.failures = 0;
            self.last = None;
            self.said = false;
        }
    }

    /// The held attempts in the order their turns come: the fewest attempts
    /// from their address now, then the longest held.
    fn order(&self, addresses: &Addresses) -> Vec<(u32, Instant, u64)> {
        let mut order: Vec<_> = self
            .held
            .iter()
            .map(|h| (addresses.attempts(&h.ip), h.since, h.ticket))
            .collect();
        order.sort();
        order
    }
}

/// What an attempt in a name's line is to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Be checked now (it left the line, counted as failed until it succeeds).
    Now,
    /// Wait until then: the name's next turn.
    At(Instant),
    /// Wait: another attempt goes first at the next turn.
    Behind,
    /// It was put out of the line by an attempt from an address that tried less.
    Gone,
}

/// The throttles, kept together: a name's line is ordered by what the
/// addresses of its attempts have tried.
#[derive(Default)]
pub struct LoginThrottle {
    pub addresses: Addresses,
    pub accounts: Accounts,
    pub devices: Devices,
}

impl LoginThrottle {
    pub fn new() -> LoginThrottle {
        LoginThrottle::default()
    }

    /// An attempt from `ip` joins the line of `account`.
    pub fn join(&mut self, account: &Account, ip: IpAddr, now: Instant) -> Result<u64, Duration> {
        self.accounts.join(account, ip, &self.addresses, now)
    }

    /// What the attempt of `ticket` is to do now.
    pub fn turn(&mut self, account: &Account, ticket: u64, now: Instant) -> Turn {
        self.accounts.turn(account, ticket, &self.addresses, now)
    }
}

/// Failed logins per user name, and each name's line of held attempts.
#[derive(Default)]
pub struct Accounts {
    names: HashMap<String, Gate>,
    shared: HashMap<u64, Gate>,
    /// The hash that spreads the names beyond `MAX_NAMES` over the shared
    /// lanes, keyed at each start.
    key: std::collections::hash_map::RandomState,
    /// When names with nothing to remember were last let go.
    swept: Option<Instant>,
    next_ticket: u64,
}

impl Accounts {
    /// The line a login as `user` joins: the name's own while fewer than
    /// `MAX_NAMES` are kept (names with nothing to remember are let go, at
    /// most once a second), else a shared one. Whether the arbiters' file has
    /// the name plays no part.
    pub fn of(&mut self, user: &str, now: Instant) -> Account {
        if self.names.contains_key(user) {
            return Account::Name(user.to_string());
        }
        if self.names.len() >= MAX_NAMES
            && self
                .swept
                .is_none_or(|s| now.duration_since(s) >= Duration::from_secs(1))
        {
            self.swept = Some(now);
            self.names.retain(|_, g| !g.idle(now));
        }
        if self.names.len() < MAX_NAMES {
            self.names.insert(user.to_string(), Gate::default());
            return Account::Name(user.to_string());
        }
        Account::Shared(self.key.hash_one(user) % SHARED_LANES)
    }

    /// The wait after `count` failures under one name.
    pub fn delay(count: u32) -> Duration {
        doubling(count, ACCOUNT_FREE, ACCOUNT_MAX_WAIT)
    }

    fn gate(&mut self, account: &Account) -> &mut Gate {
        match account {
            Account::Name(n) => self.names.entry(n.clone()).or_default(),
            Account::Shared(k) => self.shared.entry(*k).or_default(),
        }
    }

    /// How long an attempt turned away should wait before it tries again: to
    /// the name's next turn, at least a second.
    pub fn retry_after(&mut self, account: &Account, now: Instant) -> Duration {
        let next = self.gate(account).next_turn();
        next.map_or(Duration::ZERO, |t| t.saturating_duration_since(now))
            .max(Duration::from_secs(1))
    }

    /// An attempt from `ip` (counted in `addresses`) joins the name's line:
    /// its ticket; or, when the line is full of attempts from addresses that
    /// tried no more, how long to wait before trying again.
    pub fn join(
        &mut self,
        account: &Account,
        ip: IpAddr,
        addresses: &Addresses,
        now: Instant,
    ) -> Result<u64, Duration> {
        let gate = self.gate(account);
        gate.forget(now);
        if gate.held.len() >= MAX_HELD {
            match gate.order(addresses).last() {
                Some(&(tries, _, worst)) if tries > addresses.attempts(&ip) => {
                    gate.held.retain(|h| h.ticket != worst);
                }
                _ => return Err(self.retry_after(account, now)),
            }
        }
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        self.gate(account).held.push(Held {
            ticket,
            ip,
            since: now,
        });
        Ok(ticket)
    }

    /// What the attempt of `ticket` is to do now.
    pub fn turn(&mut self, account: &Account, ticket: u64, addresses: &Addresses, now: Instant) -> Turn {
        let gate = self.gate(account);
        let Some(i) = gate.held.iter().position(|h| h.ticket == ticket) else {
            return Turn::Gone;
        };
        if let Some(at) = gate.next_turn() {
            if now < at {
                return Turn::At(at);
            }
            if gate.order(addresses).first().map(|o| o.2) != Some(ticket) {
                return Turn::Behind;
            }
        }
        gate.held.remove(i);
        gate.failures = gate.failures.saturating_add(1);
        gate.last = Some(now);
        Turn::Now
    }

    /// The attempt of `ticket` gave up (held too long, or its client went).
    pub fn leave(&mut self, account: &Account, ticket: u64) {
        self.gate(account).held.retain(|h| h.ticket != ticket);
    }

    /// The attempt checked failed: the name's wait runs from now. True when
    /// this failure is the one that makes the name check one at a time.
    pub fn confirmed(&mut self, account: &Account, now: Instant) -> bool {
        let gate = self.gate(account);
        gate.last = Some(now);
        let say = gate.failures >= ACCOUNT_FREE && !gate.said;
        gate.said |= say;
        say
    }

    /// The attempt checked succeeded: it is not counted. The failures of the
    /// others stay (a success says nothing of the guesses from elsewhere).
    pub fn succeeded(&mut self, account: &Account) {
        let gate = self.gate(account);
        gate.failures = gate.failures.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, n])
    }

    #[test]
    fn an_address_past_its_free_failures_waits_longer_each_time() {
        let mut a = Addresses::default();
        let t0 = Instant::now();
        for _ in 0..FREE_FAILURES {
            assert_eq!(a.attempt(&ip(7), t0), Duration::ZERO);
            a.failed(&ip(7), t0);
        }
        assert_eq!(a.attempt(&ip(7), t0), Duration::from_secs(1));
        assert_eq!(a.attempt(&ip(8), t0), Duration::ZERO);
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(a.attempt(&ip(7), t1), Duration::ZERO);
        assert_eq!(a.attempts(&ip(7)), FREE_FAILURES + 2);
        a.failed(&ip(7), t1);
        assert_eq!(a.attempt(&ip(7), t1), Duration::from_secs(2));
        // An attempt its account turned away is no failure.
        a.failed(&ip(7), t1);
        a.refund(&ip(7));
        assert_eq!(a.attempt(&ip(7), t1), Duration::from_secs(2));
        assert_eq!(Addresses::delay(40), MAX_WAIT);
        a.succeeded(&ip(7));
        assert_eq!(a.attempts(&ip(7)), 0);
        assert_eq!(a.attempt(&ip(7), t1), Duration::ZERO);
        // Forgotten a quarter of an hour after the last attempt.
        a.attempt(&ip(8), t1 + FORGET);
        assert_eq!(a.attempts(&ip(7)), 0);
        assert_eq!(a.attempts(&ip(8)), 1);
    }

    #[test]
    fn addresses_remembered_are_bounded() {
        let mut a = Addresses::default();
        let t0 = Instant::now();
        for n in 0..(MAX_ADDRESSES as u32 + 100) {
            a.attempt(
                &IpAddr::from(n.to_be_bytes()),
                t0 + Duration::from_millis(n.into()),
            );
        }
        assert_eq!(a.map.len(), MAX_ADDRESSES);
    }

    /// `n` failures on `account`, each from an address of its own.
    fn fail(t: &mut LoginThrottle, account: &Account, n: u8, now: Instant) {
        for i in 0..n {
            t.addresses.attempt(&ip(100 + i), now);
            let ticket = t.join(account, ip(100 + i), now).unwrap();
            assert_eq!(t.turn(account, ticket, now), Turn::Now);
            t.accounts.confirmed(account, now);
        }
    }

    /// `n` failures more on `account`, the last at `now`.
    fn failures(t: &mut LoginThrottle, account: &Account, n: u32, now: Instant) {
        let gate = t.accounts.gate(account);
        gate.failures += n;
        gate.last = Some(now);
    }

    /// One guess from each of many addresses: ten checked at once, then one a
    /// turn, the turns 1, 2, 4, 8, 15, 15 ... s apart.
    #[test]
    fn an_account_guessed_from_many_addresses_checks_one_attempt_a_turn() {
        let mut t = LoginThrottle::new();
        let alice = t.accounts.of("alice", Instant::now());
        let t0 = Instant::now();
        for i in 0..ACCOUNT_FREE as u8 {
            t.addresses.attempt(&ip(i), t0);
            let ticket = t.join(&alice, ip(i), t0).unwrap();
            assert_eq!(t.turn(&alice, ticket, t0), Turn::Now);
            // Said once, when it starts checking one at a time.
            assert_eq!(t.accounts.confirmed(&alice, t0), u32::from(i) + 1 == ACCOUNT_FREE);
        }
        assert!(!t.accounts.confirmed(&alice, t0));
        let mut now = t0;
        let mut gaps = Vec::new();
        for i in 0..7 {
            let ticket = t.join(&alice, ip(50 + i), now).unwrap();
            let Turn::At(at) = t.turn(&alice, ticket, now) else {
                panic!("no wait")
            };
            gaps.push((at - now).as_secs());
            now = at;
            assert_eq!(t.turn(&alice, ticket, now), Turn::Now);
            t.accounts.confirmed(&alice, now);
        }
        assert_eq!(gaps, [1, 2, 4, 8, 15, 15, 15]);
        assert_eq!(t.accounts.retry_after(&alice, now), ACCOUNT_MAX_WAIT);
        // A quarter of an hour later it is forgotten.
        let later = now + FORGET;
        let ticket = t.join(&alice, ip(9), later).unwrap();
        assert_eq!(t.turn(&alice, ticket, later), Turn::Now);
    }

    /// The arbiter's address, which has not been guessing, goes before every
    /// held guess (however early it came, its address has guessed since), and
    /// puts the worst out of a full line.
    #[test]
    fn the_turn_goes_to_the_address_that_tried_least_when_it_comes() {
        let mut t = LoginThrottle::new();
        let alice = t.accounts.of("alice", Instant::now());
        let t0 = Instant::now();
        fail(&mut t, &alice, ACCOUNT_FREE as u8, t0);
        let guesses: Vec<u64> = (0..MAX_HELD as u8)
            .map(|i| {
                for _ in 0..=i {
                    t.addresses.attempt(&ip(i), t0);
                }
                t.join(&alice, ip(i), t0).unwrap()
            })
            .collect();
        // A full line: one that tried as much as the worst is turned away
        // until the next turn.
        for _ in 0..MAX_HELD {
            t.addresses.attempt(&ip(99), t0);
        }
        assert_eq!(t.join(&alice, ip(99), t0), Err(Duration::from_secs(1)));
        // The first guess came before the arbiter, but its address has gone
        // on guessing.
        for _ in 0..3 {
            t.addresses.attempt(&ip(0), t0);
        }
        let arbiter = ip(200);
        t.addresses.attempt(&arbiter, t0);
        let ticket = t.join(&alice, arbiter, t0 + Duration::from_millis(500)).unwrap();
        let worst = *guesses.last().unwrap();
        assert_eq!(t.turn(&alice, worst, t0), Turn::Gone);
        let at = t0 + Duration::from_secs(1);
        assert_eq!(t.turn(&alice, guesses[0], at), Turn::Behind);
        assert_eq!(t.turn(&alice, guesses[1], at), Turn::Behind);
        assert_eq!(t.turn(&alice, ticket, at), Turn::Now);
        t.accounts.succeeded(&alice);
        assert_eq!(t.accounts.gate(&alice).failures, ACCOUNT_FREE);
        // The guesses wait for the next turn; one that gives up leaves the line.
        assert!(matches!(t.turn(&alice, guesses[1], at), Turn::At(_)));
        t.accounts.leave(&alice, guesses[1]);
        assert_eq!(t.turn(&alice, guesses[1], at), Turn::Gone);
    }

    /// Each name has its line, whether the file has it or not: failures under
    /// made-up names slow no other name, and a name answers as any other with
    /// as many failures (issue 60: a made-up name waited 15 s where an
    /// arbiter's answered at once, which told the arbiters' names).
    #[test]
    fn every_name_has_a_line_of_its_own_whether_it_is_an_arbiter_s_or_not() {
        let mut t = LoginThrottle::new();
        let t0 = Instant::now();
        for i in 0..15u8 {
            let nobody = t.accounts.of(&format!("nobody{i}"), t0);
            fail(&mut t, &nobody, 1, t0);
        }
        for name in ["alice", "someone"] {
            let a = t.accounts.of(name, t0);
            assert_eq!(a, Account::Name(name.into()));
            t.addresses.attempt(&ip(1), t0);
            let ticket = t.join(&a, ip(1), t0).unwrap();
            assert_eq!(t.turn(&a, ticket, t0), Turn::Now, "{name}");
            t.accounts.confirmed(&a, t0);
        }
        // As many failures under each: the same wait.
        let (alice, someone) = (t.accounts.of("alice", t0), t.accounts.of("someone", t0));
        failures(&mut t, &alice, 11, t0);
        failures(&mut t, &someone, 11, t0);
        assert_eq!(
            t.accounts.retry_after(&alice, t0),
            t.accounts.retry_after(&someone, t0)
        );
        assert_eq!(t.accounts.retry_after(&alice, t0), Accounts::delay(12));
    }

    /// Names kept apart are bounded: beyond them, names (an arbiter's as well
    /// as any) share the lanes; those with nothing to remember are let go.
    #[test]
    fn names_kept_apart_are_bounded_and_the_others_share_lanes() {
        let mut acc = Accounts::default();
        let t0 = Instant::now();
        for i in 0..MAX_NAMES {
            let a = acc.of(&format!("n{i}"), t0);
            acc.gate(&a).failures = 1;
            acc.gate(&a).last = Some(t0);
        }
        assert!(matches!(acc.of("alice", t0), Account::Shared(k) if k < SHARED_LANES));
        assert_eq!(acc.of("n7", t0), Account::Name("n7".into()));
        assert_eq!(acc.names.len(), MAX_NAMES);
        // A quarter of an hour on, the names are let go.
        assert_eq!(acc.of("alice", t0 + FORGET), Account::Name("alice".into()));
        assert_eq!(acc.names.len(), 1);
    }

    /// A device is slowed by its own failures only.
    #[test]
    fn a_device_waits_after_its_own_failures_only() {
        let mut t = LoginThrottle::new();
        let t0 = Instant::now();
        let phone = "3f2a".to_string();
        // A flood on the name and from many addresses.
        let alice = t.accounts.of("alice", t0);
        failures(&mut t, &alice, 60, t0);
        assert_eq!(t.devices.attempt(&phone, t0), Duration::ZERO);
        for _ in 0..FREE_FAILURES {
            t.devices.failed(&phone, t0);
        }
        assert_eq!(t.devices.attempt(&phone, t0), Duration::from_secs(1));
        assert_eq!(t.devices.attempt(&"other".to_string(), t0), Duration::ZERO);
        t.devices.succeeded(&phone);
        assert_eq!(t.devices.attempt(&phone, t0), Duration::ZERO);
    }
}
