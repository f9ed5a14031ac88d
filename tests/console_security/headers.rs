//! The headers every page and answer carries (issue 60): the live page
//! shares the console's origin, so both have a content security policy that
//! fits what they load (their own script and style sheet, nothing inline),
//! no type sniffing and no framing.

use tokio::io::{AsyncWriteExt, BufReader};

use crate::common::Within;
use crate::common::hall::{Hall, standing};
use crate::common::web::read_head;

/// The headers of the answer to `GET path` with `headers`, read up to the end
/// of the head only (the event stream never ends).
async fn head(
    hall: &Hall,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>) {
    let stream = tokio::net::TcpStream::connect(hall.addr)
        .within(10, "a TCP connection")
        .await
        .unwrap();
    let mut r = BufReader::new(stream);
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: 0\r\n",
        hall.addr
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    r.get_mut().write_all(req.as_bytes()).await.unwrap();
    read_head(&mut r).within(30, &format!("the head of {path}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_and_answer_carries_a_content_security_policy_nosniff_and_no_framing() {
    let dir = tempfile::tempdir().unwrap();
    let mut hall = Hall::open(dir.path(), vec![standing("")], "").await;
    let (cookie, _) = hall.login().await;
    let with = [("Cookie", cookie.as_str())];
    let mut checked = Vec::new();
    for (method, path, headers) in [
        ("GET", "/", &[][..]),
        ("GET", "/live.js", &[]),
        ("GET", "/live.css", &[]),
        ("GET", "/api/boards", &[]),
        ("GET", "/api/events", &[]),
        ("GET", "/api/v1.0/eboards", &[]),
        ("GET", "/round-1/games.pgn", &[]),
        ("GET", "/no/such/page", &[]),
        ("GET", "/arbiter", &[]),
        ("GET", "/arbiter/login", &[]),
        ("GET", "/arbiter/login.js", &[]),
        ("GET", "/arbiter/console.css", &[]),
        ("GET", "/arbiter/api/state", &[]),
        ("POST", "/arbiter/login", &[]),
        ("GET", "/arbiter", &with),
        ("GET", "/arbiter/console.js", &with),
        ("GET", "/arbiter/api/state", &with),
    ] {
        let (status, got) = head(&hall, method, path, headers).await;
        let h = |name: &str| {
            got.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let csp = h("content-security-policy");
        for part in [
            "default-src 'self'",
            "frame-ancestors 'none'",
            "object-src 'none'",
            "base-uri 'none'",
        ] {
            assert!(csp.contains(part), "{method} {path} ({status}): CSP {csp:?}");
        }
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{csp}"
        );
        assert_eq!(
            h("x-content-type-options"),
            "nosniff",
            "{method} {path} ({status})"
        );
        assert_eq!(h("x-frame-options"), "DENY", "{method} {path} ({status})");
        checked.push(format!("{method} {path} {status}"));
    }
    eprintln!(
        "console: CSP, nosniff and DENY on {} answers: {}",
        checked.len(),
        checked.join(", ")
    );
    // The pages load nothing inline that the policy would block: no inline
    // script or style, no handler attribute.
    for path in ["/", "/arbiter/login"] {
        let page = hall.get(path, &[]).await.text();
        assert!(!page.contains("<script>") && !page.contains("<style"), "{path}");
        assert!(!page.contains(" style=") && !page.contains(" onclick="), "{path}");
    }
    hall.kill();
}
