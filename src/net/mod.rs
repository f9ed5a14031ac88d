//! The daemon on the network (`[http]` in the configuration; off unless
//! configured, on in the demo): one HTTP server on the daemon's tokio runtime.
//!
//! | path | what |
//! |---|---|
//! | `/` (`/live.js`, `/live.css`) | the live page: every board, its clocks, moves and flags |
//! | `/api/boards` | every board's state as JSON, by D-Bus property name |
//! | `/api/events` | Server-Sent Events: every board's rules events (jsonl, with `board`), resumable with `Last-Event-ID` |
//! | `/round-N/games.pgn`, `/round-N/game-M.pgn` | the broadcast folder's files, with `ETag` and `Last-Modified` |
//! | `/api/v1.0` | the DGT LiveChess WebSocket API (`livechess`) |
//! | `/api/v1.0/eboards` | the LiveChess board list as plain JSON |
//! | `/arbiter`, `/arbiter/...` | the arbiters' console (`arbiter`), with `[http] arbiters`, under the server's names only (`names`) |
//!
//! Everything served to spectators is read-only: arbiters' calls go over D-Bus,
//! where the policy says who may make them, or through the console after a
//! login. Over HTTPS every answer carries `Strict-Transport-Security`;
//! `redirect_listen` serves plain HTTP that only redirects to it (`redirect`).
//! No client can slow a board: the boards' tasks only
//! append to the event history (`events`) and replace their snapshots (`watch`),
//! and every connection reads them at its own pace. At most `max_connections`
//! connections are served at once; one more is answered `503` and closed.

pub mod arbiter;
mod config;
pub mod events;
mod guard;
pub mod livechess;
pub mod names;
pub mod pgn;
mod priority;
pub use priority::board_bytes_arrived;
mod redirect;
pub mod relay;
mod socket;
mod tls;

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinHandle;

use crate::api::BoardRef;
pub use events::EventLog;
use events::Next;
use livechess::{LiveBoard, LiveSession};

pub use config::{HttpConfig, Listen, Priority};
pub use socket::MAX_MESSAGE;
use socket::{livechess_list, livechess_socket};

#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("[http] listen: `{0}` is not an address (HOST:PORT): {1}")]
    Address(String, std::io::Error),
    #[error("[http] listen: cannot listen on {0}: {1} (is another program on that port?)")]
    Bind(SocketAddr, std::io::Error),
    #[error("[http] listen: no address to listen on")]
    Nothing,
    #[error("HTTP: cannot start the server's thread: {0}")]
    Runtime(std::io::Error),
    #[error("{0}")]
    Tls(String),
    #[error("{0}")]
    Arbiters(String),
    /// Keys that go together (`HttpConfig::check`; the daemon's configuration
    /// checks them when it is read, an embedder's is checked here).
    #[error("[http] {0}")]
    Config(String),
}

/// What the handlers read: the boards, their events, the broadcast folder.
#[derive(Clone)]
pub struct Context {
    pub boards: watch::Receiver<Vec<BoardRef>>,
    /// The spectators' event history (`/api/events`), behind the broadcast
    /// delay.
    pub events: Arc<EventLog>,
    /// The arbiters' console's, live (the same as `events` when there is no
    /// console).
    pub console_events: Arc<EventLog>,
    pub output: PathBuf,
    pub stop: watch::Receiver<bool>,
    /// `[http] settle_ms`.
    pub settle_ms: u64,
    /// `[http] idle_timeout_ms`.
    pub idle_timeout_ms: u64,
    /// The state directory (the console keeps its acknowledgements and
    /// decisions in `arbiter/` there).
    pub state: PathBuf,
    /// The wake-ups of the boards' threads, carried onto the server's.
    pub relays: Arc<relay::Relays>,
    /// The rounds pushed to lichess (the console shows them), with `[lichess]`.
    pub lichess: Option<tokio::sync::watch::Receiver<Vec<crate::api::lichess::RoundStatus>>>,
}

impl Context {
    fn views(&self) -> Vec<LiveBoard> {
        self.boards
            .borrow()
            .iter()
            .map(|b| LiveBoard {
                id: b.id.clone(),
                snapshot: b.public.borrow().clone(),
            })
            .collect()
    }

    fn view(&self, id: &str) -> Option<LiveBoard> {
        self.boards
            .borrow()
            .iter()
            .find(|b| b.id == id)
            .map(|b| LiveBoard {
                id: b.id.clone(),
                snapshot: b.public.borrow().clone(),
            })
    }
}

/// The running server: its listening addresses, and the thread that serves them.
pub struct Server {
    pub addresses: Vec<SocketAddr>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The arbiters' console, with `[http] arbiters`.
    console: Option<Arc<arbiter::Console>>,
}

/// The queue of connections the kernel holds for the server before it takes
/// them: std's 128 overflows when hundreds of clients connect at once (a hall's
/// screens after a network blip, or an attack), and a connection left out waits
/// for the kernel's retries, seconds on end.
const BACKLOG: u32 = 1024;

/// A listening socket on `addr`, non-blocking, for the server's own runtime.
fn listen(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    let listener = socket.listen(BACKLOG)?.into_std()?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

impl Server {
    /// Binds every configured address (all before serving any: a port taken is
    /// an error at start, not a surprise later) and serves them.
    pub async fn start(config: &HttpConfig, ctx: Context) -> Result<Server, NetError> {
        config.check().map_err(NetError::Config)?;
        let listeners = bind(&config.listen.addresses()).await?;
        if listeners.is_empty() {
            return Err(NetError::Nothing);
        }
        let redirecting = match &config.redirect_listen {
            Some(l) => bind(&l.addresses()).await?,
            None => Vec::new(),
        };
        let tls = match (&config.tls_cert, &config.tls_key) {
            (Some(cert), Some(key)) => Some(tls::acceptor(cert, key).map_err(NetError::Tls)?),
            _ => None,
        };
        let names = config.names();
        let console = match &config.arbiters {
            Some(file) => Some(
                arbiter::Console::open(
                    file,
                    &ctx.state,
                    tls.is_some(),
                    names.clone(),
                    ctx.boards.clone(),
                    ctx.lichess.clone(),
                )
                .map_err(NetError::Arbiters)?,
            ),
            None => None,
        };
        if console.is_some() && !names.is_configured() {
            tracing::info!(
                "HTTP: the arbiters' console answers to {} only; set [http] server_names to the names and addresses the arbiters reach it by",
                names.list()
            );
        }
        let scheme = if tls.is_some() { "https" } else { "http" };
        let slots = Arc::new(Semaphore::new(config.max_connections.max(1)));
        let priority = config.priority;
        let limits = guard::Limits {
            per_address: config.max_per_address.max(1),
            header_timeout: Duration::from_millis(config.header_timeout_ms.max(100)),
            idle_timeout: Duration::from_millis(config.idle_timeout_ms.max(1000)),
        };
        let counts = Arc::default();
        let addresses: Vec<SocketAddr> = listeners.iter().filter_map(|l| l.local_addr().ok()).collect();
        let redirect_addresses: Vec<SocketAddr> =
            redirecting.iter().filter_map(|l| l.local_addr().ok()).collect();
        let target = Arc::new(redirect::Target {
            names,
            port: addresses.first().map_or(443, SocketAddr::port),
        });
        let secure = tls.is_some();
        // A runtime of its own, on a thread of its own: however many clients
        // there are, their tasks never queue before a board's.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(NetError::Runtime)?;
        let kept = console.clone();
        let serve = async move {
            let mut tasks = Vec::new();
            if let Some(c) = &console {
                tasks.push(tokio::spawn(c.clone().follow(
                    ctx.console_events.clone(),
                    ctx.relays.events(&ctx.console_events),
                    ctx.stop.clone(),
                )));
            }
            let served = listeners
                .into_iter()
                .map(|l| (l, router(ctx.clone(), console.clone(), secure), tls.clone()))
                .chain(
                    redirecting
                        .into_iter()
                        .map(|l| (l, redirect::router(target.clone()), None)),
                );
            for (listener, app, tls) in served {
                let listener = match TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!("HTTP: cannot serve a listening socket: {e}");
                        continue;
                    }
                };
                let mut stop = ctx.stop.clone();
                let limited = guard::Limited {
                    listener,
                    slots: slots.clone(),
                    limits,
                    counts: Arc::clone(&counts),
                    tls,
                };
                tasks.push(tokio::spawn(async move {
                    let shutdown = async move {
                        let _ = stop.wait_for(|s| *s).await;
                    };
                    if let Err(e) =
                        axum::serve(limited, app.into_make_service_with_connect_info::<guard::Peer>())
                            .with_graceful_shutdown(shutdown)
                            .await
                    {
                        tracing::error!("HTTP: the server stopped: {e}");
                    }
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
        };
        let thread = std::thread::Builder::new()
            .name("eboard-http".into())
            .spawn(move || {
                priority::yield_to_boards(priority);
                runtime.block_on(serve)
            })
            .map_err(NetError::Runtime)?;
        tracing::info!(
            "HTTP: serving on {}",
            addresses
                .iter()
                .map(|a| format!("{scheme}://{a}/"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if !redirect_addresses.is_empty() {
            tracing::info!(
                "HTTP: redirecting plain HTTP on {} to HTTPS",
                redirect_addresses
                    .iter()
                    .map(SocketAddr::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        Ok(Server {
            addresses,
            thread: Some(thread),
            console: kept,
        })
    }

    /// The arbiters' alerts, for the other doors (none without the console).
    pub fn alerts(&self) -> Option<Arc<dyn crate::api::alerts::Desk>> {
        self.console
            .clone()
            .map(|c| c as Arc<dyn crate::api::alerts::Desk>)
    }

    /// Waits (2 s at most) for the server to close its connections after stop;
    /// a connection still open then ends with the process.
    pub async fn stopped(mut self) {
        let Some(thread) = self.thread.take() else { return };
        let until = tokio::time::Instant::now() + Duration::from_secs(2);
        while !thread.is_finished() && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
}

/// Every listening socket of `addresses` (a name listens on each of its
/// addresses), all bound before any is served: a port taken is an error at
/// start, not a surprise later.
async fn bind(addresses: &[String]) -> Result<Vec<std::net::TcpListener>, NetError> {
    let mut listeners = Vec::new();
    for text in addresses {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host(text.as_str())
            .await
            .map_err(|e| NetError::Address(text.clone(), e))?
            .collect();
        let named = text.parse::<SocketAddr>().is_err();
        for addr in addrs {
            match listen(addr) {
                Ok(l) => listeners.push(l),
                // A name may have an address family this machine lacks
                // (`localhost` and ::1 without IPv6): the others serve.
                Err(e) if named && e.kind() == std::io::ErrorKind::AddrNotAvailable => {
                    tracing::info!("HTTP: {text}: {addr} not available here: {e}")
                }
                Err(e) => return Err(NetError::Bind(addr, e)),
            }
        }
    }
    Ok(listeners)
}

/// The server's routes; every answer with the pages' headers (a content
/// security policy, no sniffing, no framing: `arbiter::origin::page_headers`),
/// and over HTTPS saying to keep to HTTPS (`Strict-Transport-Security`).
fn router(ctx: Context, console: Option<Arc<arbiter::Console>>, secure: bool) -> Router {
    let app = Router::new()
        .route("/", get(page))
        .route("/live.js", get(script))
        .route("/live.css", get(style))
        .route("/api/boards", get(api_boards))
        .route("/api/events", get(api_events))
        .route("/api/v1.0", get(livechess_socket))
        .route("/api/v1.0/eboards", get(livechess_list))
        .route("/{round}/{file}", get(pgn_file))
        .with_state(ctx);
    let app = match console {
        Some(c) => app.merge(arbiter::routes(c)),
        None => app,
    }
    .layer(axum::middleware::map_response(arbiter::origin::page_headers));
    if secure {
        app.layer(axum::middleware::map_response(arbiter::origin::strict_transport))
    } else {
        app
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Read-only data any page may read (a display on another origin).
fn open(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    r
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

async fn page() -> Response {
    asset(include_str!("../../assets/live.html"), "text/html; charset=utf-8")
}

async fn script() -> Response {
    asset(
        include_str!("../../assets/live.js"),
        "text/javascript; charset=utf-8",
    )
}

async fn style() -> Response {
    asset(include_str!("../../assets/live.css"), "text/css; charset=utf-8")
}

fn json_response(value: &serde_json::Value, pretty: bool) -> Response {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .unwrap_or_default();
    let mut r = text.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    open(r)
}

/// Every board: its id, D-Bus object path and properties, as spectators
/// see them (the broadcast delay ago).
pub fn boards_json(boards: &[BoardRef]) -> serde_json::Value {
    serde_json::Value::Array(
        boards
            .iter()
            .map(|b| {
                let mut v = serde_json::to_value(&*b.public.borrow()).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("Id".into(), b.id.clone().into());
                    o.insert("ObjectPath".into(), b.object_path.clone().into());
                }
                v
            })
            .collect(),
    )
}

async fn api_boards(State(ctx): State<Context>) -> Response {
    let list = ctx.boards.borrow().clone();
    json_response(&boards_json(&list), false)
}

struct Stream {
    log: Arc<EventLog>,
    seen: u64,
    pending: VecDeque<SseEvent>,
    changed: watch::Receiver<u64>,
    stop: watch::Receiver<bool>,
}

/// Server-Sent Events. Without `Last-Event-ID`, from now on; with one of this
/// run's ids, every event after it; with one of an earlier run's (the daemon
/// restarted), a `reset` event and every event kept. A client behind the history
/// gets a `lost` event with how many it missed.
async fn api_events(State(ctx): State<Context>, headers: HeaderMap) -> Response {
    let log = ctx.events.clone();
    let mut pending = VecDeque::new();
    let seen = match headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
        None => log.last_id(),
        Some(text) => match log.parse_sse_id(text) {
            Some(id) => id.min(log.last_id()),
            None => {
                pending.push_back(
                    SseEvent::default()
                        .event("reset")
                        .data(r#"{"reason":"the event ids are from an earlier run of the daemon"}"#),
                );
                log.before_oldest()
            }
        },
    };
    let state = Stream {
        changed: ctx.relays.events(&log),
        log,
        seen,
        pending,
        stop: ctx.stop.clone(),
    };
    let stream = futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(e) = s.pending.pop_front() {
                return Some((Ok::<_, Infallible>(e), s));
            }
            if *s.stop.borrow() {
                return None;
            }
            // Marked seen before reading, so that an event appended meanwhile
            // wakes the wait below.
            s.changed.borrow_and_update();
            match s.log.after(s.seen, 256) {
                Next::Lost(n) => {
                    s.seen += n;
                    s.pending.push_back(
                        SseEvent::default()
                            .event("lost")
                            .data(format!("{{\"missed\":{n}}}")),
                    );
                }
                Next::Items(items) if !items.is_empty() => {
                    for i in items {
                        s.seen = i.id;
                        s.pending.push_back(
                            SseEvent::default()
                                .id(s.log.sse_id(i.id))
                                .data(events::for_spectators(&i.json)),
                        );
                    }
                }
                Next::Items(_) => {
                    tokio::select! {
                        r = s.changed.changed() => if r.is_err() { return None },
                        _ = s.stop.changed() => return None,
                    }
                }
            }
        }
    });
    open(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}

/// One task per board the connection has feeds on, waking it when the board's
/// snapshot changes (changes that come faster than the client reads fold into one).
fn watch_boards(
    ctx: &Context,
    session: &LiveSession,
    watchers: &mut HashMap<String, JoinHandle<()>>,
    changed: &Arc<Notify>,
) {
    let wanted = session.boards();
    watchers.retain(|id, w| {
        let keep = wanted.contains(id);
        if !keep {
            w.abort();
        }
        keep
    });
    for id in wanted {
        if watchers.contains_key(&id) {
            continue;
        }
        let Some(source) = ctx
            .boards
            .borrow()
            .iter()
            .find(|b| b.id == id)
            .map(|b| b.public.clone())
        else {
            continue;
        };
        // Woken by the board's relay, on this thread (`relay`).
        let mut rx = ctx.relays.board(&id, &source);
        let changed = changed.clone();
        watchers.insert(
            id,
            tokio::spawn(async move {
                rx.borrow_and_update();
                while rx.changed().await.is_ok() {
                    changed.notify_one();
                }
            }),
        );
    }
}

async fn pgn_file(
    State(ctx): State<Context>,
    UrlPath((round, file)): UrlPath<(String, String)>,
    headers: HeaderMap,
) -> Response {
    match pgn::file_for(&ctx.output, &round, &file) {
        Some(path) => open(pgn::serve(path, &headers).await),
        None => (axum::http::StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}
