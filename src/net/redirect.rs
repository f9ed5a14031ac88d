//! `[http] redirect_listen`: plain HTTP that serves nothing but a redirect to
//! the same path over HTTPS, so that `http://hall-laptop.local/arbiter`, typed
//! by an arbiter, leads to the console without sending a password in the
//! clear. Every method and path is answered the same way: 301 (`GET`, `HEAD`)
//! or 308 (any other method, which keeps it) to `https://NAME:PORT/PATH?QUERY`,
//! `NAME` the request's `Host` when it is one of the server's names; any other
//! `Host` gets 421 and the names. No `Strict-Transport-Security` here: it means
//! something only over HTTPS.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use super::arbiter::origin::misdirected;
use super::names::ServerNames;

/// Where redirects go: the server's names and its HTTPS port.
pub struct Target {
    pub names: ServerNames,
    pub port: u16,
}

impl Target {
    /// The HTTPS address of `path` under the name of `host` (a `Host` header),
    /// if it is one of the server's.
    pub fn location(&self, host: &str, path: &str) -> Option<String> {
        let name = self.names.allowed(host)?;
        let port = if self.port == 443 {
            String::new()
        } else {
            format!(":{}", self.port)
        };
        Some(format!("https://{}{port}{path}", name.url_host()))
    }
}

/// The redirecting server's one route: every request.
pub fn router(target: Arc<Target>) -> Router {
    Router::new()
        .fallback(redirect)
        .with_state(target)
        .layer(axum::middleware::map_response(
            super::arbiter::origin::page_headers,
        ))
}

async fn redirect(State(t): State<Arc<Target>>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let Some(location) = host.and_then(|h| t.location(h, path)) else {
        return misdirected(&t.names, host);
    };
    let status = if method == Method::GET || method == Method::HEAD {
        StatusCode::MOVED_PERMANENTLY
    } else {
        StatusCode::PERMANENT_REDIRECT
    };
    let Ok(value) = HeaderValue::from_str(&location) else {
        return (StatusCode::BAD_REQUEST, "bad request\n").into_response();
    };
    let mut r = (status, format!("{location}\n")).into_response();
    r.headers_mut().insert(header::LOCATION, value);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_keeps_the_path_and_query_under_the_server_s_own_name() {
        let t = Target {
            names: ServerNames::new(&["hall.local".into(), "::1".into()], &[]),
            port: 1982,
        };
        assert_eq!(
            t.location("hall.local:8080", "/round-1/games.pgn?x=1").as_deref(),
            Some("https://hall.local:1982/round-1/games.pgn?x=1")
        );
        assert_eq!(
            t.location("[::1]", "/arbiter").as_deref(),
            Some("https://[::1]:1982/arbiter")
        );
        assert_eq!(t.location("evil.example", "/"), None);
        let t = Target { port: 443, ..t };
        assert_eq!(
            t.location("HALL.local", "/").as_deref(),
            Some("https://hall.local/")
        );
    }
}
