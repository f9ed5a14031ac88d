//! The console over HTTPS: signing in with a `Secure` cookie, every answer with
//! `Strict-Transport-Security`, and `redirect_listen`, plain HTTP that answers
//! every request with a redirect to the same path over HTTPS and serves
//! nothing else.

use std::sync::Arc;

use serde_json::json;

use crate::common::Within;
use crate::common::hall::{Hall, PASSWORD, USER, standing};
use crate::common::web::{exchange, free_port, request};

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

/// A free port of 127.0.0.1.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbiters_sign_in_over_https_with_a_secure_cookie_hsts_and_a_redirect_from_http() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A self-signed certificate for the hall laptop's name and address.
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    std::fs::write(d.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(d.join("key.pem"), key.serialize_pem()).unwrap();
    let redirect: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let http = format!(
        "tls_cert = \"{}\"\ntls_key = \"{}\"\nredirect_listen = \"{redirect}\"",
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
    // A `__Host-` cookie: Secure, Path=/, no Domain, so that no other
    // host (nor plain HTTP) can set one of its name.
    let set = a
        .set_cookie("__Host-eb_arbiter")
        .unwrap_or_else(|| panic!("no __Host-eb_arbiter cookie: {:?}", a.headers))
        .to_string();
    let attributes: Vec<&str> = set.split(';').map(str::trim).collect();
    for attr in ["Secure", "HttpOnly", "Path=/", "SameSite=Strict"] {
        assert!(attributes.contains(&attr), "{set}");
    }
    assert!(!set.to_ascii_lowercase().contains("domain"), "{set}");
    let value = a.cookie("__Host-eb_arbiter").unwrap();
    // A cookie of the old name tossed before it, and one of the same name:
    // each is tried.
    for cookie in [
        format!("__Host-eb_arbiter={value}"),
        format!("eb_arbiter=junk; __Host-eb_arbiter={value}"),
        format!("__Host-eb_arbiter=junk; __Host-eb_arbiter={value}"),
    ] {
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
        assert_eq!(state.status, 200, "{cookie}");
        assert_eq!(state.json()["user"], USER);
    }
    // Over HTTPS every answer says to keep to HTTPS, the console's and the
    // spectators'.
    for path in ["/arbiter/login", "/api/boards", "/"] {
        let a = exchange(tls().await, &host, "GET", path, &[], b"")
            .within(30, "a page over HTTPS")
            .await;
        assert_eq!(a.status, 200, "{path}");
        assert_eq!(
            a.header("strict-transport-security"),
            Some("max-age=31536000"),
            "{path}"
        );
    }
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

    // The redirect listener: every method and path to the same over HTTPS,
    // under the name asked for, and nothing served.
    let https = hall.addr.port();
    for (method, path, status) in [
        ("GET", "/arbiter", 301),
        ("GET", "/arbiter/login?restarted", 301),
        ("GET", "/round-1/games.pgn?x=1", 301),
        ("GET", "/api/boards", 301),
        ("GET", "/", 301),
        ("POST", "/arbiter/login", 308),
        ("POST", "/arbiter/api/decide", 308),
    ] {
        for name in ["localhost", "127.0.0.1"] {
            let to = format!("{name}:{}", redirect.port());
            let stream = tokio::net::TcpStream::connect(redirect)
                .within(10, "a TCP connection")
                .await
                .unwrap();
            let a = exchange(stream, &to, method, path, &[], body.as_bytes())
                .within(30, "the redirect")
                .await;
            assert_eq!(a.status, status, "{method} {path}: {}", a.text());
            assert_eq!(
                a.header("location"),
                Some(format!("https://{name}:{https}{path}").as_str()),
                "{method} {path}"
            );
            assert!(a.header("strict-transport-security").is_none());
            assert!(a.header("set-cookie").is_none());
            let text = a.text();
            assert!(
                !text.contains('<') && !text.contains('{') && !text.contains("[Event"),
                "{method} {path} served {text}"
            );
        }
    }
    // A WebSocket upgrade is redirected as well, and a name not the server's
    // is refused with the names it answers to.
    let a = request(
        redirect,
        "GET",
        "/api/v1.0",
        &[("Upgrade", "websocket"), ("Connection", "Upgrade")],
        b"",
    )
    .await;
    assert_eq!(a.status, 301);
    let stream = tokio::net::TcpStream::connect(redirect).await.unwrap();
    let a = exchange(stream, "evil.example", "GET", "/arbiter", &[], b"")
        .within(30, "a redirect for another name")
        .await;
    assert_eq!(a.status, 421, "{}", a.text());
    assert!(a.header("location").is_none());
    assert!(a.text().contains("server_names"), "{}", a.text());
    eprintln!(
        "console: over HTTPS, Strict-Transport-Security: max-age=31536000; http://{redirect}/… answered 301 (GET) and 308 (POST) to https://…:{https}/… with the same path"
    );
    hall.kill();
}
