//! The server's names: a request to the console under another `Host` is
//! refused (421) whatever it carries, a page of another origin is refused
//! under the right `Host` (403), and `server_names` replaces the defaults.
//! The spectators' side answers under any name.

use serde_json::json;

use crate::common::Within;
use crate::common::hall::{Hall, PASSWORD, USER, standing};
use crate::common::web::{Answer, exchange};

/// A request to the hall's server with `host` as the `Host` header.
async fn under(
    hall: &Hall,
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let stream = tokio::net::TcpStream::connect(hall.addr)
        .within(10, "a TCP connection")
        .await
        .unwrap();
    exchange(stream, host, method, path, headers, body.as_bytes())
        .within(30, &format!("the answer to {method} {path}"))
        .await
}

/// A login as the test's arbiter, under `host`, from a page of `origin`.
async fn login_under(hall: &Hall, host: &str, origin: &str) -> Answer {
    let login = json!({"user": USER, "password": PASSWORD}).to_string();
    let headers = [("Origin", origin), ("Content-Type", "application/json")];
    under(hall, host, "POST", "/arbiter/login", &headers, &login).await
}

/// A decision on board 1 (`SetResult 1-0`) with a real session and its token,
/// under `host`, from a page of `origin`.
async fn decide_under(hall: &Hall, host: &str, origin: &str, (cookie, csrf): (&str, &str)) -> Answer {
    let decide = json!({"board": "board1", "method": "SetResult", "args": ["1-0"]}).to_string();
    let headers = [
        ("Origin", origin),
        ("Cookie", cookie),
        ("X-CSRF-Token", csrf),
        ("Content-Type", "application/json"),
    ];
    under(hall, host, "POST", "/arbiter/api/decide", &headers, &decide).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_is_refused_and_so_is_a_foreign_origin_under_the_right_host() {
    let dir = tempfile::tempdir().unwrap();
    let mut hall = Hall::open(dir.path(), vec![standing("")], "").await;
    let port = hall.addr.port();
    let (cookie, csrf) = hall.login().await;
    let session = (cookie.as_str(), csrf.as_str());
    let evil = format!("evil.example:{port}");
    let evil_origin = format!("http://{evil}");

    // Issue 48's attack: Host and Origin both evil.example. The login and the
    // decision (with a real session and its token) are refused, as is every
    // page of the console; nothing changed and no cookie was set.
    let a = login_under(&hall, &evil, &evil_origin).await;
    assert_eq!(a.status, 421, "{}", a.text());
    assert!(a.header("set-cookie").is_none());
    assert!(
        a.text().contains("It answers to localhost, 127.0.0.1, ::1") && a.text().contains("server_names"),
        "{}",
        a.text()
    );
    assert_eq!(a.header("cache-control"), Some("no-store"));
    let a = decide_under(&hall, &evil, &evil_origin, session).await;
    assert_eq!(a.status, 421, "{}", a.text());
    for path in [
        "/arbiter",
        "/arbiter/login",
        "/arbiter/login.js",
        "/arbiter/console.css",
        "/arbiter/api/state",
    ] {
        let a = under(&hall, &evil, "GET", path, &[("Cookie", &cookie)], "").await;
        assert_eq!(a.status, 421, "GET {path}");
    }
    assert_eq!(hall.board(1).await["Result"], "");

    // Under the server's own name, a page of another origin is refused (403).
    let own = hall.addr.to_string();
    let a = login_under(&hall, &own, &evil_origin).await;
    assert_eq!(a.status, 403, "{}", a.text());
    let a = decide_under(&hall, &own, &evil_origin, session).await;
    assert_eq!(a.status, 403, "{}", a.text());
    assert_eq!(hall.board(1).await["Result"], "");

    // Without server_names the machine's own names serve: localhost too.
    let local = format!("localhost:{port}");
    let a = login_under(&hall, &local, &format!("http://{local}")).await;
    assert_eq!(a.status, 200, "{}", a.text());
    // The spectators' side answers under any name (a display on another site).
    assert_eq!(
        under(&hall, &evil, "GET", "/api/boards", &[], "").await.status,
        200
    );
    assert_eq!(under(&hall, &evil, "GET", "/", &[], "").await.status, 200);
    assert!(
        hall.log().contains("under the name \"evil.example:"),
        "{}",
        hall.log()
    );

    // With server_names, those names and no others.
    hall.kill();
    let config = std::fs::read_to_string(&hall.config).unwrap();
    let config = config.replacen(
        "[http]\n",
        "[http]\nserver_names = [\"hall.example\", \"192.0.2.1\"]\n",
        1,
    );
    std::fs::write(&hall.config, config).unwrap();
    hall.start().await;
    let named = format!("hall.example:{port}");
    let a = login_under(&hall, &named, &format!("http://{named}")).await;
    assert_eq!(a.status, 200, "{}", a.text());
    for refused in [own.as_str(), local.as_str(), evil.as_str()] {
        let a = under(&hall, refused, "GET", "/arbiter/login", &[], "").await;
        assert_eq!(a.status, 421, "{refused}");
        assert!(
            a.text()
                .contains("It answers to hall.example, 192.0.2.1 ([http] server_names)"),
            "{}",
            a.text()
        );
    }
    hall.kill();
}
