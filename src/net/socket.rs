//! The LiveChess WebSocket: a connection's loop around its [`LiveSession`], and
//! the allowance that keeps one client from flooding it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::livechess::{self, LiveSession};
use super::{Context, json_response, now_ms, watch_boards};

pub(super) async fn livechess_list(State(ctx): State<Context>) -> Response {
    json_response(&livechess::eboards(&ctx.views(), now_ms()), true)
}

/// The largest LiveChess message or frame taken: a call is tens of bytes, a
/// `setup` with its FEN about a hundred. Anything larger closes the socket
/// before it is held whole.
pub const MAX_MESSAGE: usize = 16 * 1024;

pub(super) async fn livechess_socket(State(ctx): State<Context>, ws: WebSocketUpgrade) -> Response {
    // Any Origin, or none: LiveChess accepts pages from chess.com and lichess.
    ws.max_message_size(MAX_MESSAGE)
        .max_frame_size(MAX_MESSAGE)
        .on_upgrade(move |socket| livechess_connection(socket, ctx))
}

/// A write that takes longer than this ends the connection (a client that does
/// not read).
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

async fn livechess_connection(mut socket: WebSocket, ctx: Context) {
    let mut session = LiveSession::new(ctx.settle_ms);
    let changed = Arc::new(Notify::new());
    let mut watchers: HashMap<String, JoinHandle<()>> = HashMap::new();
    let mut stop = ctx.stop.clone();
    // A ping at a third of the idle time; a client silent (not even a pong) for
    // the whole idle time is gone.
    let idle = Duration::from_millis(ctx.idle_timeout_ms.max(1000));
    let mut ping = tokio::time::interval(idle / 3);
    ping.tick().await;
    let mut heard = tokio::time::Instant::now();
    let mut allowance = Allowance::new(20.0, 40.0);
    'conn: loop {
        let frames = tokio::select! {
            msg = socket.recv() => {
                heard = tokio::time::Instant::now();
                match msg {
                    Some(Ok(Message::Text(text))) => {
                        if !allowance.take() {
                            // A client that floods the server with calls: no
                            // LiveChess client sends more than a few a second.
                            let close = Message::Close(Some(axum::extract::ws::CloseFrame {
                                code: 1008,
                                reason: "too many calls: at most 20 a second".into(),
                            }));
                            let _ = tokio::time::timeout(Duration::from_secs(1), socket.send(close)).await;
                            break;
                        }
                        let frames = session.call(text.as_str(), &ctx.views(), now_ms());
                        watch_boards(&ctx, &session, &mut watchers, &changed);
                        frames
                    }
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    // Pings are answered by the socket; pongs only show the
                    // client is there; binary frames mean nothing here.
                    Some(Ok(_)) => continue,
                }
            },
            _ = ping.tick() => {
                if heard.elapsed() >= idle {
                    break;
                }
                match tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Ping(Default::default()))).await {
                    Ok(Ok(())) => continue,
                    _ => break,
                }
            },
            _ = changed.notified() => session.pushes(|id| ctx.view(id), now_ms()),
            // A last move waiting to settle is looked at again when it has stood
            // long enough.
            _ = settle(session.next_deadline()) => session.pushes(|id| ctx.view(id), now_ms()),
            _ = stop.changed() => {
                // Going away (1001): clients know to reconnect.
                let close = Message::Close(Some(axum::extract::ws::CloseFrame {
                    code: 1001,
                    reason: "eboard-bridge is stopping".into(),
                }));
                let _ = tokio::time::timeout(Duration::from_secs(1), socket.send(close)).await;
                break;
            }
        };
        for f in frames {
            match tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Text(f.into()))).await {
                Ok(Ok(())) => {}
                _ => break 'conn,
            }
        }
    }
    for (_, w) in watchers {
        w.abort();
    }
}

/// A token bucket: `rate` calls a second, `burst` at once.
struct Allowance {
    tokens: f64,
    rate: f64,
    burst: f64,
    last: tokio::time::Instant,
}

impl Allowance {
    fn new(rate: f64, burst: f64) -> Allowance {
        Allowance {
            tokens: burst,
            rate,
            burst,
            last: tokio::time::Instant::now(),
        }
    }

    /// One call, if the allowance has one.
    fn take(&mut self) -> bool {
        let now = tokio::time::Instant::now();
        let elapsed = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Waits until `deadline` (ms since the epoch, as [`now_ms`]), or forever.
async fn settle(deadline: Option<u64>) {
    match deadline {
        Some(at) => tokio::time::sleep(Duration::from_millis(at.saturating_sub(now_ms()))).await,
        None => std::future::pending().await,
    }
}
