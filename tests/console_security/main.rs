//! The arbiters' console's defences, with a plain HTTP client against the real
//! binary: nothing without a session, no change from another site's page, no
//! session across a logout or a restart, failed logins slowed down per address,
//! nothing of the console on the spectators' side. And in parts: guesses from
//! many addresses at one account (`throttle`), the server's names (`names`),
//! the arbiters' secrets kept out of other users' reach and of the log
//! (`secrets`), HTTPS, HSTS and the redirect from plain HTTP (`tls`); and
//! issue 60's: the arbiter's own lane under a flood and names the throttle
//! does not tell apart (`lanes`), a tossed cookie (`tossed`), a forged log
//! line (`forged`), the headers of every page (`headers`).

use crate::common;
mod doors;
mod forged;
mod headers;
mod lanes;
mod names;
mod secrets;
mod throttle;
mod tls;
mod tossed;

use std::time::{Duration, Instant};

use common::hall::{Hall, PASSWORD, USER, standing};
use serde_json::{Value, json};

/// Every console route but the sign-in page and its two static files.
const GUARDED_GETS: [&str; 8] = [
    "/arbiter/logout",
    "/arbiter/api/decide",
    "/arbiter/console.js",
    "/arbiter/api/state",
    "/arbiter/api/nothing",
    "/arbiter/anything/else",
    "/arbiter/login.js/../api/state",
    "/arbiter/api/ack",
];
const GUARDED_POSTS: [&str; 4] = [
    "/arbiter/api/ack",
    "/arbiter/api/decide",
    "/arbiter/logout",
    "/arbiter/api/state2",
];

fn decide_result(board: &str, result: &str) -> String {
    json!({"board": board, "method": "SetResult", "args": [result]}).to_string()
}

/// The console's answer to the decision `body`, posted by the session of
/// `cookie` with its CSRF token `csrf`.
async fn post_decision(hall: &Hall, cookie: &str, csrf: &str, body: &str) -> common::web::Answer {
    hall.post(
        "/arbiter/api/decide",
        &[("Cookie", cookie), ("X-CSRF-Token", csrf)],
        body,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_refuses_what_it_must_and_slows_failed_logins() {
    let dir = tempfile::tempdir().unwrap();
    let mut hall = Hall::open(dir.path(), vec![standing("")], "").await;
    // `ctl passwd` refuses a short password and a user name the file cannot hold.
    for (user, password) in [("bob", "short"), ("bob smith", "long enough password")] {
        let out = common::hall::passwd(user, password).await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{user}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(out.stdout.is_empty());
    }

    // Without a session: the page sends to the sign-in, everything else is 401.
    let page = hall.get("/arbiter", &[]).await;
    assert_eq!(page.status, 303);
    assert_eq!(page.header("location"), Some("/arbiter/login"));
    for path in GUARDED_GETS {
        let a = hall.get(path, &[]).await;
        assert!(
            a.status == 401 || (a.status == 405 && path == "/arbiter/api/ack"),
            "GET {path}: {}",
            a.status
        );
    }
    for path in GUARDED_POSTS {
        let a = hall.post(path, &[], "{}").await;
        assert_eq!(a.status, 401, "POST {path}: {}", a.text());
    }
    // A made-up cookie is no session.
    let fake = "eb_arbiter=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    assert_eq!(
        hall.get("/arbiter/api/state", &[("Cookie", fake)]).await.status,
        401
    );
    let login = hall.get("/arbiter/login", &[]).await;
    assert_eq!(login.status, 200);
    assert!(login.text().contains("Arbiters' console"));

    // Signed in: the cookie's attributes (no Secure over plain HTTP).
    let body = json!({"user": USER, "password": PASSWORD}).to_string();
    let a = hall.post("/arbiter/login", &[], &body).await;
    assert_eq!(a.status, 200, "{}", a.text());
    let set = a.header("set-cookie").unwrap().to_string();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/arbiter"] {
        assert!(set.contains(attr), "{set}");
    }
    assert!(!set.contains("Secure"), "{set}");
    let (cookie, csrf) = hall.login().await;
    let state = hall.get("/arbiter/api/state", &[("Cookie", &cookie)]).await;
    assert_eq!(state.json()["boards"][0]["id"], "board1");
    assert_eq!(state.header("cache-control"), Some("no-store"));
    assert!(state.header("access-control-allow-origin").is_none());
    // No HSTS over plain HTTP (it means something only over HTTPS).
    assert!(state.header("strict-transport-security").is_none());

    // A cross-site POST with the valid cookie (and even the token) is refused,
    // and so is one without the token; the board is unchanged.
    let evil = hall.addr.to_string().replace("127.0.0.1", "evil.example");
    let evil_origin = format!("http://{evil}");
    let cross = [
        vec![
            ("Cookie", cookie.as_str()),
            ("X-CSRF-Token", csrf.as_str()),
            ("Origin", evil_origin.as_str()),
        ],
        vec![
            ("Cookie", cookie.as_str()),
            ("X-CSRF-Token", csrf.as_str()),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        vec![("Cookie", cookie.as_str())],
    ];
    for headers in &cross {
        let a = common::web::request(
            hall.addr,
            "POST",
            "/arbiter/api/decide",
            headers,
            decide_result("board1", "1-0").as_bytes(),
        )
        .await;
        assert_eq!(a.status, 403, "{headers:?}: {}", a.text());
    }
    let cross_login = common::web::request(
        hall.addr,
        "POST",
        "/arbiter/login",
        &[("Origin", evil_origin.as_str())],
        body.as_bytes(),
    )
    .await;
    assert_eq!(cross_login.status, 403);
    assert_eq!(hall.board(1).await["Result"], "");
    // The same from the console's own origin is done.
    let ok = post_decision(&hall, &cookie, &csrf, &decide_result("board1", "1/2-1/2")).await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    // A result over that result is asked again, in `ctl --force`'s words, and
    // changes nothing until confirmed (issue 48).
    let mut board1 = hall.board(1).await;
    let until = Instant::now() + Duration::from_secs(20);
    while board1["Result"] != "1/2-1/2" {
        assert!(Instant::now() < until, "board 1's result: {board1}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        board1 = hall.board(1).await;
    }
    let again = post_decision(&hall, &cookie, &csrf, &decide_result("board1", "1-0")).await;
    assert_eq!(again.status, 409, "{}", again.text());
    let words = again.json()["confirm"].as_str().unwrap_or_default().to_string();
    assert!(
        words.starts_with("board 1's game is over already, 1/2-1/2")
            && words.ends_with("this changes its result to 1-0"),
        "{words}"
    );
    assert_eq!(hall.board(1).await["Result"], "1/2-1/2");
    let mut forced: Value = serde_json::from_str(&decide_result("board1", "1-0")).unwrap();
    forced["force"] = Value::Bool(true);
    let done = post_decision(&hall, &cookie, &csrf, &forced.to_string()).await;
    assert_eq!(done.status, 200, "{}", done.text());
    // The console's decisions are the board's history, in words, with the door.
    let state = hall
        .get("/arbiter/api/state", &[("Cookie", &cookie)])
        .await
        .json();
    let boards = state["boards"].as_array().cloned().unwrap_or_default();
    let board1 = boards
        .iter()
        .find(|b| b["id"] == "board1")
        .expect("board 1 in the state");
    let decisions = &board1["decisions"];
    assert_eq!(decisions[0]["text"], "result 1-0", "{decisions}");
    assert_eq!(decisions[0]["via"], "console", "{decisions}");
    assert_eq!(decisions[0]["by"], USER, "{decisions}");
    assert_eq!(decisions[1]["text"], "result 1/2-1/2", "{decisions}");
    // Bounded: a body over 8 KiB is refused before it is read whole.
    let big = format!(
        "{{\"board\":\"board1\",\"method\":\"SetPlayers\",\"args\":[\"{}\",\"x\"]}}",
        "a".repeat(20_000)
    );
    let a = post_decision(&hall, &cookie, &csrf, &big).await;
    assert_eq!(a.status, 413, "{}", a.text());

    // The spectators' side shows nothing of the console.
    for path in ["/", "/live.js", "/live.css", "/api/boards", "/api/v1.0/eboards"] {
        let text = hall.get(path, &[]).await.text().to_lowercase();
        for secret in ["/arbiter", "csrf", "acked", USER, "eb_arbiter"] {
            assert!(!text.contains(secret), "{path} mentions {secret}");
        }
    }

    // Logged out: the cookie is refused.
    let out = hall
        .post(
            "/arbiter/logout",
            &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
            "{}",
        )
        .await;
    assert_eq!(out.status, 200, "{}", out.text());
    assert_eq!(
        hall.get("/arbiter/api/state", &[("Cookie", &cookie)])
            .await
            .status,
        401
    );

    // 20 wrong logins in a row from one address: 5 are checked, the others are
    // refused at once (429, Retry-After) until the wait has passed.
    let wrong = json!({"user": USER, "password": "guess"}).to_string();
    let t0 = Instant::now();
    let mut checked = 0;
    let mut throttled = 0;
    let mut retry_after = String::new();
    for _ in 0..20 {
        let a = hall.post("/arbiter/login", &[], &wrong).await;
        match a.status {
            401 => checked += 1,
            429 => {
                throttled += 1;
                retry_after = a.header("retry-after").unwrap_or_default().to_string();
            }
            s => panic!("a wrong login answered {s}: {}", a.text()),
        }
    }
    let burst = t0.elapsed();
    eprintln!(
        "console: 20 wrong logins in {} ms: {checked} checked (401), {throttled} refused (429, Retry-After {retry_after} s)",
        burst.as_millis()
    );
    assert_eq!((checked, throttled), (5, 15));
    assert_eq!(retry_after, "1");
    // Even the right password waits its turn.
    let early = hall.post("/arbiter/login", &[], &body).await;
    assert_eq!(early.status, 429);
    // Paced as Retry-After says, 20 attempts take more than a minute (1+2+4+...
    // s); the test takes the first steps: after 1 s one attempt, then 2 s.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(hall.post("/arbiter/login", &[], &wrong).await.status, 401);
    let a = hall.post("/arbiter/login", &[], &wrong).await;
    assert_eq!((a.status, a.header("retry-after")), (429, Some("2")));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (cookie, _) = hall.login().await;

    // A session from before a restart is refused after it.
    assert_eq!(
        hall.get("/arbiter/api/state", &[("Cookie", &cookie)])
            .await
            .status,
        200
    );
    hall.kill();
    hall.start().await;
    assert_eq!(
        hall.get("/arbiter/api/state", &[("Cookie", &cookie)])
            .await
            .status,
        401
    );
    assert_eq!(hall.get("/arbiter", &[("Cookie", &cookie)]).await.status, 303);
}
