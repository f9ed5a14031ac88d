//! Issue 48's attack, measured: guesses at one arbiter's password from 600
//! addresses (127.0.x.y on the loopback), with the address throttle alone
//! 3,000 of them were checked in 85 s. The account's own throttle checks 10,
//! then one a turn (1, 2, 4, 8, then 15 s apart), however many addresses
//! guess; and the arbiter, signing in from an address of their own while the
//! guessing goes on, gets the account's next turn (within 15 s).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::Within;
use crate::common::hall::{Hall, PASSWORD, USER, standing};
use crate::common::wait_for;
use crate::common::web::{connect_from, exchange};

/// Guessing addresses, tasks guessing at once, and how long the guessing
/// lasts at least.
const ADDRESSES: usize = 600;
const WORKERS: usize = 32;
const ATTACK: Duration = Duration::from_secs(30);
/// The account's throttle (`src/net/arbiter/throttle.rs`).
const ACCOUNT_FREE: usize = 10;
const TURNS: [u64; 4] = [1, 2, 4, 8];
const LAST_TURN: u64 = 15;

#[derive(Default)]
struct Tally {
    sent: AtomicUsize,
    checked: AtomicUsize,
    refused: AtomicUsize,
}

fn guesser(i: usize) -> IpAddr {
    IpAddr::from([127, 0, 1 + (i / 250) as u8, 1 + (i % 250) as u8])
}

/// The most turns an account has in `secs` after its free failures.
fn turns_in(secs: u64) -> usize {
    let mut t = 0;
    TURNS
        .into_iter()
        .chain(std::iter::repeat(LAST_TURN))
        .take_while(|gap| {
            t += gap;
            t <= secs
        })
        .count()
}

async fn login_from(ip: IpAddr, server: SocketAddr, password: &str) -> crate::common::web::Answer {
    let host = server.to_string();
    let origin = format!("http://{host}");
    let body = json!({"user": USER, "password": password}).to_string();
    exchange(
        connect_from(ip, server).await,
        &host,
        "POST",
        "/arbiter/login",
        &[("Origin", &origin), ("Content-Type", "application/json")],
        body.as_bytes(),
    )
    // A login may be held for its account's turn (at most 30 s).
    .within(60, "the answer to POST /arbiter/login")
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guessing_one_account_from_600_addresses_is_slowed_and_the_arbiter_still_gets_in() {
    let dir = tempfile::tempdir().unwrap();
    // The server's thread in the normal class: the machine running the tests
    // may be busy, and the test times the account's turns.
    let mut hall = Hall::open(dir.path(), vec![standing("")], "priority = \"normal\"").await;
    let server = hall.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (stop, tally, next) = (stop.clone(), tally.clone(), next.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let a = login_from(guesser(n % ADDRESSES), server, &format!("guess {n}")).await;
                    tally.sent.fetch_add(1, Ordering::Relaxed);
                    match a.status {
                        401 => tally.checked.fetch_add(1, Ordering::Relaxed),
                        429 => tally.refused.fetch_add(1, Ordering::Relaxed),
                        s => panic!("a guess answered {s}: {}", a.text()),
                    };
                    // A paced attacker: the machine running the tests is shared.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        })
        .collect();

    // Once the account's turns are 15 s apart (its free failures and the
    // shorter turns spent, guesses turned away) and every address has
    // guessed, the arbiter signs in from an address of their own.
    wait_for("the account's turns to be 15 s apart", 60, || {
        tally.checked.load(Ordering::Relaxed) >= ACCOUNT_FREE + TURNS.len()
            && tally.refused.load(Ordering::Relaxed) > 0
            && tally.sent.load(Ordering::Relaxed) >= ADDRESSES
    })
    .await;
    let arbiter = IpAddr::from([127, 0, 9, 9]);
    let asked = Instant::now();
    let mut tries = 0;
    let a = loop {
        tries += 1;
        let a = login_from(arbiter, server, PASSWORD).await;
        if a.status != 429 {
            break a;
        }
        // Told when to come back: by then the minute must not be over.
        let wait: u64 = a.header("retry-after").and_then(|v| v.parse().ok()).unwrap_or(1);
        assert!(
            asked.elapsed() + Duration::from_secs(wait) < Duration::from_secs(60),
            "the arbiter is still kept out after {} s: {}",
            asked.elapsed().as_secs(),
            a.text()
        );
        tokio::time::sleep(Duration::from_secs(wait)).await;
    };
    let got_in = asked.elapsed();
    assert_eq!(a.status, 200, "{}", a.text());
    assert!(got_in < Duration::from_secs(60));
    let cookie = format!("eb_arbiter={}", a.cookie("eb_arbiter").unwrap());
    assert_eq!(
        hall.get("/arbiter/api/state", &[("Cookie", &cookie)])
            .await
            .status,
        200
    );

    // The guessing goes on for its time, then stops; the daemon's log counts
    // every guess it checked.
    tokio::time::sleep_until((started + ATTACK).into()).await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.abort();
    }
    let lasted = started.elapsed();
    hall.kill();
    let checked = hall
        .log()
        .matches(&format!("failed login as {USER} from 127.0."))
        .count();
    let sent = tally.sent.load(Ordering::Relaxed);
    let refused = tally.refused.load(Ordering::Relaxed);
    let most = ACCOUNT_FREE + turns_in(lasted.as_secs()) + 1;
    eprintln!(
        "console: {sent} guesses at {USER}'s password from {ADDRESSES} addresses in {:.1} s: {checked} checked, {refused} turned away (429); \
         the arbiter, from an address of their own, signed in after {:.1} s ({tries} tries) while the guessing went on",
        lasted.as_secs_f64(),
        got_in.as_secs_f64()
    );
    assert!(
        checked <= most,
        "{checked} guesses checked in {} s: at most {most} may be",
        lasted.as_secs()
    );
    assert!(checked >= ACCOUNT_FREE, "{checked}");
    assert!(sent > 5 * checked, "the guessing was not kept up: {sent} sent");
    assert!(hall.log().contains(&format!(
        "{ACCOUNT_FREE} failed logins for the account {USER} within 15 minutes"
    )));
}
