//! Issue 60's attacks on the sign-in, measured against the real binary.
//!
//! - A flood of wrong passwords for one arbiter, each guess from an address
//!   that never guessed before (127.0.x.y on the loopback), kept the real
//!   arbiter out for the whole attack: every try of theirs was answered 429.
//!   A browser that signed in before holds a device cookie, and its logins
//!   have a lane of their own: the arbiter must be in within a minute.
//! - The throttle's delay must not tell a real arbiter's name from a made-up
//!   one: after failures under made-up names, and after as many failures
//!   under each, both answer alike.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::Within;
use crate::common::hall::{Hall, PASSWORD, USER, standing};
use crate::common::wait_for;
use crate::common::web::{Answer, connect_from, exchange};

/// The account's throttle (`src/net/arbiter/throttle.rs`): failures checked
/// at once before it checks one a turn.
const ACCOUNT_FREE: usize = 10;
/// Guessing tasks at once, and the longest the flood lasts.
const WORKERS: usize = 32;
const FLOOD_MAX: Duration = Duration::from_secs(100);
/// How long the flood goes on before the arbiter tries.
const FLOOD_BEFORE: Duration = Duration::from_secs(20);
/// The arbiter must be in within this, from their first try under the flood.
const IN_WITHIN: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Tally {
    sent: AtomicUsize,
    checked: AtomicUsize,
    refused: AtomicUsize,
}

/// Guess `n`'s address: never the same twice in a test (50,000 of them).
fn fresh(n: usize) -> IpAddr {
    IpAddr::from([127, 0, 10 + (n / 250 % 200) as u8, 1 + (n % 250) as u8])
}

/// A login as `user` from `ip`, with the `Cookie` header `cookies` (empty:
/// none), from the console's own page.
async fn login_from(ip: IpAddr, server: SocketAddr, user: &str, password: &str, cookies: &str) -> Answer {
    let host = server.to_string();
    let origin = format!("http://{host}");
    let body = json!({"user": user, "password": password}).to_string();
    let mut headers = vec![("Origin", origin.as_str()), ("Content-Type", "application/json")];
    if !cookies.is_empty() {
        headers.push(("Cookie", cookies));
    }
    exchange(
        connect_from(ip, server).await,
        &host,
        "POST",
        "/arbiter/login",
        &headers,
        body.as_bytes(),
    )
    // A login may be held for its account's turn (at most 30 s).
    .within(60, "the answer to POST /arbiter/login")
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_arbiter_on_a_device_signed_in_before_gets_in_within_a_minute_under_a_flood_from_new_addresses() {
    let dir = tempfile::tempdir().unwrap();
    // The server's thread in the normal class: the machine running the tests
    // may be busy.
    let mut hall = Hall::open(dir.path(), vec![standing("")], "priority = \"normal\"").await;
    let server = hall.addr;
    // The arbiter's phone signed in yesterday: the cookies it keeps.
    let phone = IpAddr::from([127, 0, 250, 1]);
    let first = login_from(phone, server, USER, PASSWORD, "").await;
    assert_eq!(first.status, 200, "{}", first.text());
    let kept = first.cookies();

    // The flood: wrong passwords for the arbiter, each from a new address.
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (stop, tally, next) = (stop.clone(), tally.clone(), next.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) && started.elapsed() < FLOOD_MAX {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let a = login_from(fresh(n), server, USER, &format!("guess {n}"), "").await;
                    tally.sent.fetch_add(1, Ordering::Relaxed);
                    match a.status {
                        401 => tally.checked.fetch_add(1, Ordering::Relaxed),
                        429 => tally.refused.fetch_add(1, Ordering::Relaxed),
                        s => panic!("a guess answered {s}: {}", a.text()),
                    };
                    // The machine running the tests is shared.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
        })
        .collect();
    // The flood has gone on for a while: the name checks one guess a turn
    // and turns the others away.
    wait_for("the name to turn guesses away, 20 s into the flood", 60, || {
        started.elapsed() >= FLOOD_BEFORE
            && tally.checked.load(Ordering::Relaxed) >= ACCOUNT_FREE
            && tally.refused.load(Ordering::Relaxed) >= 200
    })
    .await;

    // Meanwhile, a browser that never signed in (a new address, no cookie):
    // the flood's lane, measured only.
    let newcomer = tokio::spawn(async move {
        let t = Instant::now();
        let a = login_from(IpAddr::from([127, 0, 250, 2]), server, USER, PASSWORD, "").await;
        (a.status, t.elapsed())
    });
    // The arbiter's phone tries as the page does: again after Retry-After.
    let asked = Instant::now();
    let mut tries = 0;
    let mut last = String::new();
    let got_in = loop {
        tries += 1;
        let a = login_from(phone, server, USER, PASSWORD, &kept).await;
        if a.status == 200 {
            break Some(asked.elapsed());
        }
        assert_eq!(a.status, 429, "{}", a.text());
        last = a.text();
        let wait: u64 = a.header("retry-after").and_then(|v| v.parse().ok()).unwrap_or(1);
        if asked.elapsed() + Duration::from_secs(wait) >= IN_WITHIN {
            break None;
        }
        tokio::time::sleep(Duration::from_secs(wait.max(1))).await;
    };
    let (newcomer_status, newcomer_took) = newcomer.within(60, "the newcomer's login").await.unwrap();
    stop.store(true, Ordering::Relaxed);
    let lasted = started.elapsed();
    for w in workers {
        w.abort();
    }
    let sent = tally.sent.load(Ordering::Relaxed);
    eprintln!(
        "console: {sent} guesses at {USER}'s password in {:.1} s ({:.0} a second), each from a new address: {} checked, {} turned away (429); \
         the arbiter's phone, signed in before, {} ({tries} tries); a browser that never signed in: {newcomer_status} after {:.1} s",
        lasted.as_secs_f64(),
        sent as f64 / lasted.as_secs_f64(),
        tally.checked.load(Ordering::Relaxed),
        tally.refused.load(Ordering::Relaxed),
        match got_in {
            Some(t) => format!("in after {:.2} s", t.as_secs_f64()),
            None => "kept out".to_string(),
        },
        newcomer_took.as_secs_f64()
    );
    let got_in = got_in.unwrap_or_else(|| {
        panic!(
            "the arbiter, on a device that signed in before, was kept out for {} s ({tries} tries): {last}",
            asked.elapsed().as_secs()
        )
    });
    assert!(got_in < IN_WITHIN);
    hall.kill();
}

/// A wrong login as `user` from `ip`: its status and how long it took.
async fn timed(server: SocketAddr, ip: IpAddr, user: &str) -> (u16, Duration) {
    let t = Instant::now();
    let a = login_from(ip, server, user, "not the password", "").await;
    (a.status, t.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_arbiter_s_name_and_a_made_up_name_get_the_same_delays() {
    let dir = tempfile::tempdir().unwrap();
    let mut hall = Hall::open(dir.path(), vec![standing("")], "priority = \"normal\"").await;
    let server = hall.addr;
    let mut n = 0;
    let mut from = || {
        n += 1;
        IpAddr::from([127, 0, 20 + n / 250, 1 + n % 250])
    };
    // 15 failed logins under made-up names (each from an address of its own).
    for i in 0..15 {
        let (status, _) = timed(server, from(), &format!("nobody{i}")).await;
        assert_eq!(status, 401);
    }
    // Then a real arbiter's name and another made-up one: alike.
    let real = timed(server, from(), USER).await;
    let made_up = timed(server, from(), "someone").await;
    eprintln!(
        "console: after 15 failed logins under made-up names, {USER} answered {} in {:.2} s, a made-up name {} in {:.2} s",
        real.0,
        real.1.as_secs_f64(),
        made_up.0,
        made_up.1.as_secs_f64()
    );
    assert_eq!(real.0, made_up.0);
    assert!(
        real.1.abs_diff(made_up.1) < Duration::from_secs(1),
        "{USER}: {real:?}, a made-up name: {made_up:?}"
    );

    // As many failures under the real name and under the made-up one (12:
    // past the 10 checked at once), side by side: the next attempt under each
    // waits alike.
    for _ in 0..11 {
        let (a, b) = tokio::join!(timed(server, from(), USER), timed(server, from(), "someone"));
        assert_eq!((a.0, b.0), (401, 401));
    }
    let (real, made_up) = tokio::join!(timed(server, from(), USER), timed(server, from(), "someone"));
    eprintln!(
        "console: after 12 failures under each, {USER} answered {} in {:.2} s, the made-up name {} in {:.2} s",
        real.0,
        real.1.as_secs_f64(),
        made_up.0,
        made_up.1.as_secs_f64()
    );
    assert_eq!(real.0, made_up.0);
    assert!(
        real.1.abs_diff(made_up.1) < Duration::from_secs(1),
        "{USER}: {real:?}, a made-up name: {made_up:?}"
    );
    hall.kill();
}
