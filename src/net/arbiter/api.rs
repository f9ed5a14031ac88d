//! The console's handlers: its pages, the logout, the boards' state for the
//! page, acknowledgements and decisions (the login is `login`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Console;
use super::origin::{guarded, same_origin};
use super::sessions::{ConsoleSession, Gone};
use super::store::Alert;
use crate::api::ask_as;
use crate::net::now_ms;

/// Alerts and decisions the page gets per board.
const ALERTS_SHOWN: usize = 8;
const DECISIONS_SHOWN: usize = 20;

type Shared = State<Arc<Console>>;

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    guarded(r)
}

pub(super) fn answer(status: StatusCode, value: Value) -> Response {
    let mut r = (status, value.to_string()).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    guarded(r)
}

pub(super) fn refused(status: StatusCode, why: &str) -> Response {
    answer(status, json!({ "error": why }))
}

/// 401: no session. `restarted` when the cookie is a session of an earlier
/// run of the daemon (sessions live in its memory only), so that the page can
/// say so.
fn signed_out(c: &Console, headers: &HeaderMap) -> Response {
    let (why, restarted) = match c.gone(headers) {
        Gone::Restarted => (
            "the daemon restarted, which ends every session: please sign in again",
            true,
        ),
        _ => ("not signed in (or the session has ended): sign in again", false),
    };
    answer(
        StatusCode::UNAUTHORIZED,
        json!({ "error": why, "restarted": restarted }),
    )
}

pub async fn page(State(c): Shared, headers: HeaderMap) -> Response {
    if c.session(&headers).is_none() {
        let to = match c.gone(&headers) {
            Gone::Restarted => "/arbiter/login?restarted",
            Gone::Ended => "/arbiter/login?ended",
            Gone::None => "/arbiter/login",
        };
        let mut r = StatusCode::SEE_OTHER.into_response();
        r.headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static(to));
        return guarded(r);
    }
    asset(
        include_str!("../../../assets/arbiter.html"),
        "text/html; charset=utf-8",
    )
}

pub async fn login_page() -> Response {
    asset(
        include_str!("../../../assets/arbiter-login.html"),
        "text/html; charset=utf-8",
    )
}

pub async fn login_script() -> Response {
    asset(
        include_str!("../../../assets/arbiter-login.js"),
        "text/javascript; charset=utf-8",
    )
}

pub async fn style() -> Response {
    asset(
        include_str!("../../../assets/arbiter.css"),
        "text/css; charset=utf-8",
    )
}

pub async fn script(State(c): Shared, headers: HeaderMap) -> Response {
    if c.session(&headers).is_none() {
        return signed_out(&c, &headers);
    }
    asset(
        include_str!("../../../assets/arbiter.js"),
        "text/javascript; charset=utf-8",
    )
}

pub async fn unknown(State(c): Shared, headers: HeaderMap) -> Response {
    if c.session(&headers).is_none() {
        return signed_out(&c, &headers);
    }
    refused(StatusCode::NOT_FOUND, "no such page")
}

/// A change: the session, a same-origin request and the session's CSRF token.
fn change(c: &Console, headers: &HeaderMap) -> Result<(String, ConsoleSession), Box<Response>> {
    let Some((id, s)) = c.session(headers) else {
        return Err(Box::new(signed_out(c, headers)));
    };
    if !same_origin(headers, c.secure, &c.names) {
        return Err(Box::new(refused(
            StatusCode::FORBIDDEN,
            "a change from another site's page is refused",
        )));
    }
    let token = headers.get("x-csrf-token").and_then(|v| v.to_str().ok());
    if token != Some(s.csrf.as_str()) {
        return Err(Box::new(refused(
            StatusCode::FORBIDDEN,
            "the request lacks this session's token: reload the page",
        )));
    }
    Ok((id, s))
}

pub async fn logout(State(c): Shared, headers: HeaderMap) -> Response {
    let (id, s) = match change(&c, &headers) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    c.sessions().close(&id);
    tracing::info!("arbiter console: {} signed out", crate::log::escaped(&s.user));
    let mut r = answer(StatusCode::OK, json!({ "signed_out": s.user }));
    let gone = c.session_cookie("", std::time::Duration::ZERO);
    if let Ok(v) = HeaderValue::from_str(&gone) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

pub async fn state(State(c): Shared, headers: HeaderMap) -> Response {
    let Some((_, s)) = c.session(&headers) else {
        return signed_out(&c, &headers);
    };
    let boards = c.boards.borrow().clone();
    let st = c.store.state();
    let mut list: Vec<(usize, bool, u32, Value)> = boards
        .iter()
        .map(|b| {
            let snap = b.snapshot.borrow().clone();
            let alerts: Vec<&Alert> = st
                .alerts
                .get(&b.id)
                .map(|l| l.iter().collect())
                .unwrap_or_default();
            let level = super::alerts::level(&snap, &alerts);
            let open = alerts.iter().any(|a| a.active && a.acked_by.is_none());
            let shown: Vec<&Alert> = alerts.iter().rev().take(ALERTS_SHOWN).copied().collect();
            // The board's history, as `ctl history` words it: every door's
            // decisions, newest first, with who, the door, and those undone.
            let history = b.history.borrow().clone();
            let decisions: Vec<Value> = history
                .iter()
                .rev()
                .filter(|e| e.kind == "decision")
                .take(DECISIONS_SHOWN)
                .map(|e| {
                    json!({ "t_ms": e.time * 1000, "text": e.text, "by": e.by, "via": e.via,
                            "undone": e.undone, "game": e.game })
                })
                .collect();
            let v = json!({
                "id": b.id, "number": snap.board_number, "white": snap.white, "black": snap.black,
                "event": snap.event, "round": snap.round, "status": snap.status, "fen": snap.fen,
                "placement": snap.placement, "start_fen": snap.start_fen, "moves": snap.moves,
                "inferred": snap.inferred,
                "last_move": snap.last_move, "white_ms": snap.white_clock_ms, "black_ms": snap.black_clock_ms,
                "running": snap.clock_running, "has_clock": snap.has_clock, "result": snap.result,
                "termination": snap.termination, "irregularity": snap.irregularity,
                "connected": snap.connected, "time_control": snap.time_control, "tags": snap.tags,
                "orientation": snap.orientation,
                "level": level, "urgency": super::alerts::LEVELS[level], "open": open,
                "alerts": shown, "decisions": decisions,
            });
            (level, !open, snap.board_number, v)
        })
        .collect();
    drop(st);
    list.sort_by_key(|a| (a.0, a.1, a.2));
    let boards: Vec<Value> = list.into_iter().map(|(.., v)| v).collect();
    // The rounds pushed to lichess: their state and what is wrong (never the token).
    let lichess = c.lichess.as_ref().map(|l| l.borrow().clone()).unwrap_or_default();
    answer(
        StatusCode::OK,
        json!({ "user": s.user, "csrf": s.csrf, "now_ms": now_ms(), "boards": boards, "lichess": lichess }),
    )
}

#[derive(Deserialize)]
struct Ack {
    id: u64,
}

pub async fn ack(State(c): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let (_, s) = match change(&c, &headers) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let Ok(a) = serde_json::from_slice::<Ack>(&body) else {
        return refused(StatusCode::BAD_REQUEST, "expected {\"id\": N}");
    };
    if !c.store.state().ack(a.id, &s.user, now_ms()) {
        return refused(StatusCode::NOT_FOUND, "no such alert");
    }
    if !c.save().await {
        return refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the acknowledgement could not be kept on disk",
        );
    }
    answer(StatusCode::OK, json!({ "acked": a.id, "by": s.user }))
}

#[derive(Deserialize)]
struct Decide {
    board: String,
    method: String,
    #[serde(default)]
    args: Vec<Value>,
    /// Confirmed after the page was told what the decision changes (a
    /// finished game reopened, a game under way ended): as `ctl --force`.
    #[serde(default)]
    force: bool,
}

pub async fn decide(State(c): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let (_, s) = match change(&c, &headers) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let Ok(d) = serde_json::from_slice::<Decide>(&body) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "expected {\"board\": ID, \"method\": NAME, \"args\": [...]}",
        );
    };
    if !crate::rules::Decision::BOARD_METHODS.contains(&d.method.as_str()) {
        return refused(StatusCode::BAD_REQUEST, "no such decision");
    }
    let cmd =
        match crate::api::decision::from_call(&d.method, &d.args).and_then(crate::api::decision::bounded) {
            Ok(cmd) => cmd,
            Err(e) => return refused(StatusCode::BAD_REQUEST, e.message()),
        };
    let Some(commands) = c
        .boards
        .borrow()
        .iter()
        .find(|b| b.id == d.board)
        .map(|b| b.commands.clone())
    else {
        return refused(StatusCode::NOT_FOUND, "no such board");
    };
    let method = cmd.method().to_string();
    // The board's task journals it with the user and the door, and its
    // history (shown here) says it in words.
    let who = crate::api::Asker {
        by: Some(s.user.clone()),
        door: crate::api::history::Door::Console,
        force: d.force,
    };
    match ask_as(&commands, cmd, who).await {
        Ok(()) => {}
        // What it would change, in the rule book's words (`ctl`'s): the page
        // asks again, and sends it confirmed.
        Err(crate::api::Error::NeedsForce(words)) => {
            return answer(
                StatusCode::CONFLICT,
                json!({ "error": format!("{words}; nothing was changed"), "confirm": words }),
            );
        }
        Err(e) => return refused(StatusCode::CONFLICT, &e.to_string()),
    }
    answer(
        StatusCode::OK,
        json!({ "decided": method, "board": d.board, "by": s.user }),
    )
}
