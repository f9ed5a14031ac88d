//! The arbiters' console's defences, with a plain HTTP client against the real
//! binary: nothing without a session, no change from another site's page, no
//! session across a logout or a restart, failed logins slowed down per address,
//! nothing of the console on the spectators' side; and signing in over HTTPS.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Within;
use common::hall::{Hall, PASSWORD, USER, standing};
use common::web::exchange;
use serde_json::json;

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
    let ok = hall
        .post(
            "/arbiter/api/decide",
            &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
            &decide_result("board1", "1/2-1/2"),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    // Bounded: a body over 8 KiB is refused before it is read whole.
    let big = format!(
        "{{\"board\":\"board1\",\"method\":\"SetPlayers\",\"args\":[\"{}\",\"x\"]}}",
        "a".repeat(20_000)
    );
    let a = hall
        .post(
            "/arbiter/api/decide",
            &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
            &big,
        )
        .await;
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

/// A client that trusts only `cert`.
fn client_config(cert: &rcgen::Certificate) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbiters_sign_in_over_https_with_a_secure_cookie() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A self-signed certificate for the hall laptop's name and address.
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    std::fs::write(d.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(d.join("key.pem"), key.serialize_pem()).unwrap();
    let http = format!(
        "tls_cert = \"{}\"\ntls_key = \"{}\"",
        d.join("cert.pem").display(),
        d.join("key.pem").display()
    );
    let mut hall = Hall::open(d, vec![standing("")], &http).await;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_config(&cert)));
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let host = format!("localhost:{}", hall.addr.port());
    let origin = format!("https://{host}");
    let tls = || async {
        let tcp = tokio::net::TcpStream::connect(hall.addr).await.unwrap();
        connector
            .connect(name.clone(), tcp)
            .within(10, "the TLS handshake")
            .await
            .unwrap()
    };
    let body = json!({"user": USER, "password": PASSWORD}).to_string();
    let headers = [("Origin", origin.as_str()), ("Content-Type", "application/json")];
    let a = exchange(
        tls().await,
        &host,
        "POST",
        "/arbiter/login",
        &headers,
        body.as_bytes(),
    )
    .within(30, "the login over HTTPS")
    .await;
    assert_eq!(a.status, 200, "{}", a.text());
    let set = a.header("set-cookie").unwrap().to_string();
    assert!(set.contains("Secure") && set.contains("HttpOnly"), "{set}");
    let cookie = format!("eb_arbiter={}", a.cookie("eb_arbiter").unwrap());
    let state = exchange(
        tls().await,
        &host,
        "GET",
        "/arbiter/api/state",
        &[("Cookie", &cookie)],
        b"",
    )
    .within(30, "the state over HTTPS")
    .await;
    assert_eq!(state.status, 200);
    assert_eq!(state.json()["user"], USER);
    // An http:// origin is another origin than the https:// console.
    let plain_origin = format!("http://{host}");
    let a = exchange(
        tls().await,
        &host,
        "POST",
        "/arbiter/login",
        &[("Origin", plain_origin.as_str())],
        body.as_bytes(),
    )
    .within(30, "a login from the http:// origin")
    .await;
    assert_eq!(a.status, 403);
    // Plain HTTP on the HTTPS port gets no HTTP answer.
    let plain = async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut tcp = tokio::net::TcpStream::connect(hall.addr).await.unwrap();
        tcp.write_all(b"GET /api/boards HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let _ = tcp.read_to_end(&mut got).await;
        got
    };
    let got = plain
        .within(15, "the server to close a plain HTTP connection")
        .await;
    assert!(!got.starts_with(b"HTTP/"), "{}", String::from_utf8_lossy(&got));
    hall.kill();
}
