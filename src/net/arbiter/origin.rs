//! Who may reach the console, and how its answers are kept to it: the request's
//! `Host` must be one of the server's names (`[http] server_names`), a change
//! must come from a page of the console itself (`Origin`, `Sec-Fetch-Site`),
//! and every answer is never cached, never framed and runs no script but its
//! own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Console;
use crate::net::names::ServerNames;

/// Values of one cookie name looked at in a request, at most.
const MAX_COOKIES: usize = 16;

/// Every value of cookie `name` the request has (of a sane size), in the
/// order sent, at most 16. A page of another port of the same host (or, over
/// plain HTTP, of another site on the network) can set a cookie of the same
/// name with a longer path, which the browser sends first ("cookie
/// tossing"): each is tried, none is trusted for being first.
pub fn cookies(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .filter(|(k, v)| *k == name && !v.is_empty() && v.len() <= 128)
        .map(|(_, v)| v.to_string())
        .take(MAX_COOKIES)
        .collect()
}

/// The first value of cookie `name`, if the request has one.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    cookies(headers, name).into_iter().next()
}

/// Whether the request comes from a page of this server: its `Host` one of
/// `names`; `Sec-Fetch-Site`, when the browser sends it, `same-origin`; and
/// `Origin`, when sent, this server (scheme, and host and port as `Host`).
pub fn same_origin(headers: &HeaderMap, secure: bool, names: &ServerNames) -> bool {
    let text = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("\u{0}"));
    let Some(host) = text("host").filter(|h| names.allowed(h).is_some()) else {
        return false;
    };
    if let Some(site) = text("sec-fetch-site") {
        if site != "same-origin" {
            return false;
        }
    }
    if let Some(origin) = text("origin") {
        let scheme = if secure { "https" } else { "http" };
        return origin.eq_ignore_ascii_case(&format!("{scheme}://{host}"));
    }
    true
}

/// The policy of every page the server serves, the live page's and the
/// console's (one origin): their own scripts, style sheets and requests
/// only (they have no inline script or style, no image, no font), no plugin,
/// no `<base>`, no form posted elsewhere, and never framed by any page.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// Headers every answer of the server carries, the spectators' and the
/// console's (they share an origin, so a hole in one is a hole in the other):
/// the content security policy, no type sniffing, no framing. Those an answer
/// set already stay.
pub async fn page_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        if !h.contains_key(&name) {
            h.insert(name, HeaderValue::from_static(value));
        }
    }
    r
}

/// Headers every console answer carries: never cached, never framed, no
/// script but its own.
pub fn guarded(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    r
}

/// The answer to a request under a name that is not the server's: 421
/// (Misdirected Request), saying which names it answers to and what to add.
pub fn misdirected(names: &ServerNames, host: Option<&str>) -> Response {
    let mut r = (StatusCode::MISDIRECTED_REQUEST, names.refusal(host)).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Every console request: refused (421) unless its `Host` is one of the
/// server's names.
pub async fn host_check(State(c): State<Arc<Console>>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok());
    if host.is_some_and(|h| c.names.allowed(h).is_some()) {
        return next.run(request).await;
    }
    // Said at most once a minute.
    let said = c
        .misdirected
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .allow_at(Instant::now());
    if let Some(quiet) = said {
        tracing::info!(
            "arbiter console: a request under the name {:?} refused: the console answers to {} ([http] server_names){}",
            host.map(|h| crate::log::clip_to(h, 64)).unwrap_or_default(),
            c.names.list(),
            crate::api::throttle::more(quiet)
        );
    }
    guarded(misdirected(&c.names, host))
}

/// How long browsers keep to HTTPS for a name they reached over it
/// (`Strict-Transport-Security`): a year.
pub const HSTS_MAX_AGE: Duration = Duration::from_secs(365 * 24 * 3600);

/// `Strict-Transport-Security` on an answer over HTTPS.
pub async fn strict_transport(mut r: Response) -> Response {
    let value = format!("max-age={}", HSTS_MAX_AGE.as_secs());
    if let Ok(v) = HeaderValue::from_str(&value) {
        r.headers_mut().insert(header::STRICT_TRANSPORT_SECURITY, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(list: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in list {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_this_server_s_pages_under_its_names_are_same_origin() {
        let names = ServerNames::new(&["hall.local".into()], &[]);
        let same = |list: &[(&'static str, &str)], secure| same_origin(&headers(list), secure, &names);
        let host = ("host", "hall.local:1982");
        assert!(same(&[host], false));
        assert!(same(
            &[
                host,
                ("origin", "http://hall.local:1982"),
                ("sec-fetch-site", "same-origin")
            ],
            false
        ));
        assert!(!same(&[host, ("origin", "http://hall.local:1982")], true));
        assert!(!same(&[host, ("origin", "http://evil.example")], false));
        assert!(!same(&[host, ("sec-fetch-site", "cross-site")], false));
        assert!(!same(&[host, ("sec-fetch-site", "same-site")], false));
        assert!(!same(&[("origin", "http://hall.local:1982")], false));
        // The attack of issue 48: Host and Origin both another site's.
        assert!(!same(
            &[
                ("host", "evil.example:1982"),
                ("origin", "http://evil.example:1982")
            ],
            false
        ));
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let h = headers(&[("cookie", "a=1; eb_arbiter=abc; b=2")]);
        assert_eq!(cookie(&h, super::super::COOKIE).as_deref(), Some("abc"));
        assert_eq!(cookie(&headers(&[("cookie", "x=y")]), super::super::COOKIE), None);
    }

    #[test]
    fn every_cookie_of_a_name_is_found_in_order_and_bounded() {
        let h = headers(&[
            ("cookie", "eb_arbiter=junk; eb_arbiter=; x=1; eb_arbiter=real"),
            ("cookie", "eb_arbiter=third"),
        ]);
        assert_eq!(cookies(&h, "eb_arbiter"), ["junk", "real", "third"]);
        let many = (0..100).map(|i| format!("n={i}")).collect::<Vec<_>>().join("; ");
        assert_eq!(cookies(&headers(&[("cookie", &many)]), "n").len(), MAX_COOKIES);
        let long = format!("n={}", "a".repeat(129));
        assert!(cookies(&headers(&[("cookie", &long)]), "n").is_empty());
    }
}
