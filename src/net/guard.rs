//! Connections held to their share: how many at once, how many from one
//! address, how long a client may take to send its request's headers, and how
//! long a connection may stand with nothing read or written.
//!
//! Each accepted socket is wrapped in a [`Guarded`] stream that holds a slot of
//! the server and one of its address until it closes, and fails its reads and
//! writes once a deadline passes: the first request's headers must be complete
//! within `header_timeout` of the accept (a client trickling them a byte at a
//! time holds a slot no longer), and after that a connection with no byte read
//! or written for `idle_timeout` is closed (an idle keep-alive, a client that
//! never reads what it is sent). The WebSocket and SSE streams keep a healthy
//! connection busy (pings, keep-alive comments), so only a silent one ends.
//!
//! When every slot is taken, a newcomer from an address holding fewer
//! connections than the greediest address (by two or more) ends that address's
//! oldest connection and takes its slot: however many addresses an attacker
//! uses, each holds at most its share of a full server, and a hall's screens
//! are still served.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// The limits a listener enforces (`[http]` settings).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub per_address: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
}

/// The connections open per address, oldest first.
pub type Counts = Arc<Mutex<HashMap<IpAddr, Vec<Arc<Evict>>>>>;

/// A connection's slot of the server, and its mark, set when a newcomer from a
/// less greedy address takes the slot: the connection then fails its next read
/// or write (it is woken for it).
#[derive(Default)]
pub struct Evict {
    set: std::sync::atomic::AtomicBool,
    waker: futures_util::task::AtomicWaker,
    slot: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Evict {
    /// Marks the connection ended and hands its slot over.
    fn evict(&self) -> Option<OwnedSemaphorePermit> {
        self.set.store(true, std::sync::atomic::Ordering::Relaxed);
        let slot = self.slot.lock().ok().and_then(|mut s| s.take());
        self.waker.wake();
        slot
    }

    fn is_set(&self, cx: &mut TaskContext<'_>) -> bool {
        self.waker.register(cx.waker());
        self.set.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A TCP listener that serves at most as many connections as it has slots, and
/// at most `per_address` from one address.
pub struct Limited {
    pub listener: TcpListener,
    pub slots: Arc<Semaphore>,
    pub limits: Limits,
    pub counts: Counts,
    /// HTTPS: each connection's handshake runs in its first reads and writes.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

/// The client's address, for handlers that need it (the console's login throttle).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, Limited>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, Limited>) -> Peer {
        Peer(*stream.remote_addr())
    }
}

/// One address's connection: given back when it closes.
struct AddressSlot {
    ip: IpAddr,
    counts: Counts,
    evict: Arc<Evict>,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        if let Ok(mut c) = self.counts.lock() {
            if let Some(open) = c.get_mut(&self.ip) {
                open.retain(|e| !Arc::ptr_eq(e, &self.evict));
                if open.is_empty() {
                    c.remove(&self.ip);
                }
            }
        }
    }
}

/// A connection holding its slots until it closes, with its deadlines.
pub struct Guarded {
    stream: super::tls::Conn,
    /// Its address's count, and its slot of the server (in `evict`).
    address: AddressSlot,
    limits: Limits,
    /// The first request's headers are complete (`\r\n\r\n` seen).
    headers_done: bool,
    /// Bytes of the terminator matched so far (it may be split between reads).
    matched: usize,
    deadline: Pin<Box<Sleep>>,
}

impl Limited {
    /// A slot of this address, unless it has its share.
    fn address_slot(&self, ip: IpAddr) -> Option<AddressSlot> {
        let mut c = self.counts.lock().ok()?;
        let open = c.entry(ip).or_default();
        if open.len() >= self.limits.per_address {
            return None;
        }
        let evict = Arc::new(Evict::default());
        open.push(evict.clone());
        Some(AddressSlot {
            ip,
            counts: self.counts.clone(),
            evict,
        })
    }

    /// The server is full: ends the oldest connection (not yet ended) of the
    /// address holding the most, when it holds at least two more than `ip`, and
    /// hands over its slot.
    fn evict_for(&self, ip: IpAddr) -> Option<OwnedSemaphorePermit> {
        let c = self.counts.lock().ok()?;
        let live = |open: &Vec<Arc<Evict>>| {
            open.iter()
                .filter(|e| !e.set.load(std::sync::atomic::Ordering::Relaxed))
                .count()
        };
        // The newcomer's own slot is already counted.
        let mine = c.get(&ip).map_or(0, live).saturating_sub(1);
        let (_, open) = c
            .iter()
            .filter(|(a, _)| **a != ip)
            .max_by_key(|(_, open)| live(open))?;
        if live(open) < mine + 2 {
            return None;
        }
        open.iter()
            .find(|e| !e.set.load(std::sync::atomic::Ordering::Relaxed))?
            .evict()
    }
}

impl axum::serve::Listener for Limited {
    type Io = Guarded;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Guarded, SocketAddr) {
        loop {
            super::priority::stand_aside();
            let (stream, addr) = match self.listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors and the like: try again shortly.
                    tracing::warn!("HTTP: cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let Some(address) = self.address_slot(addr.ip()) else {
                tracing::debug!("HTTP: {addr}: too many connections from this address, refused");
                tokio::spawn(refuse(stream, "too many connections from your address"));
                continue;
            };
            let slot = match self.slots.clone().try_acquire_owned() {
                Ok(slot) => Some(slot),
                Err(_) => self.evict_for(addr.ip()),
            };
            match slot {
                Some(slot) => {
                    if let Ok(mut s) = address.evict.slot.lock() {
                        *s = Some(slot);
                    }
                    let _ = stream.set_nodelay(true);
                    let deadline = Box::pin(tokio::time::sleep(self.limits.header_timeout));
                    let guarded = Guarded {
                        stream: super::tls::Conn::new(stream, self.tls.as_ref()),
                        address,
                        limits: self.limits,
                        headers_done: false,
                        matched: 0,
                        deadline,
                    };
                    return (guarded, addr);
                }
                None => {
                    tracing::debug!("HTTP: {addr}: too many connections, refused");
                    tokio::spawn(refuse(stream, "too many connections to this eboard-bridge"));
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// Answers a connection over a limit and closes it.
async fn refuse(mut stream: TcpStream, why: &str) {
    let body = format!("{why}; try again later\n");
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nRetry-After: 5\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nContent-Security-Policy: {}\r\nConnection: close\r\n\r\n{body}",
        body.len(),
        super::arbiter::origin::CONTENT_SECURITY_POLICY
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

impl Guarded {
    /// Bytes moved: once the headers are in, the idle deadline starts again.
    fn progress(&mut self, read: Option<&[u8]>) {
        if !self.headers_done {
            let Some(bytes) = read else { return };
            for &b in bytes {
                self.matched = match b {
                    _ if b == b"\r\n\r\n"[self.matched] => self.matched + 1,
                    b'\r' => 1,
                    _ => 0,
                };
                if self.matched == 4 {
                    self.headers_done = true;
                    break;
                }
            }
            if !self.headers_done {
                return;
            }
        }
        let at = Instant::now() + self.limits.idle_timeout;
        self.deadline.as_mut().reset(at);
    }

    /// Ended for a newcomer from a less greedy address (checked before every
    /// read and write).
    fn evicted(&self, cx: &mut TaskContext<'_>) -> Option<std::io::Error> {
        self.address.evict.is_set(cx).then(|| {
            std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "the server is full and this address holds more than its share",
            )
        })
    }

    /// A pending read or write: an error once the deadline has passed.
    fn expired(&mut self, cx: &mut TaskContext<'_>) -> Option<std::io::Error> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            let what = if self.headers_done {
                "idle for too long"
            } else {
                "the request's headers took too long"
            };
            return Some(std::io::Error::new(std::io::ErrorKind::TimedOut, what));
        }
        None
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if let Some(e) = self.evicted(cx) {
            return Poll::Ready(Err(e));
        }
        super::priority::stand_aside();
        let before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let read = &buf.filled()[before..];
                if !read.is_empty() {
                    self.progress(Some(read));
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => match self.expired(cx) {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
            other => other,
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if let Some(e) = self.evicted(cx) {
            return Poll::Ready(Err(e));
        }
        super::priority::stand_aside();
        match Pin::new(&mut self.stream).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.progress(None);
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending => match self.expired(cx) {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
            other => other,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn from(ip: [u8; 4], to: SocketAddr) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from((ip, 0))).unwrap();
        socket.connect(to).await.unwrap()
    }

    /// What the server answers a GET, within 5 s (empty when it closes first).
    async fn answer(mut s: TcpStream) -> String {
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut got)).await;
        String::from_utf8_lossy(&got).into_owned()
    }

    /// A server of 4 slots, 4 an address: one address that fills it cannot keep
    /// another from being served; four addresses holding one each can (none
    /// holds two more than the newcomer).
    #[tokio::test]
    async fn a_full_server_ends_the_greediest_address_s_oldest_connection_for_a_newcomer() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limited = Limited {
            listener,
            slots: Arc::new(Semaphore::new(4)),
            limits: Limits {
                per_address: 4,
                header_timeout: Duration::from_secs(30),
                idle_timeout: Duration::from_secs(30),
            },
            counts: Arc::default(),
            tls: None,
        };
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "served" }));
        let server = tokio::spawn(async move { axum::serve(limited, app).await });

        // 127.0.0.3 takes every slot and sends nothing.
        let mut greedy = Vec::new();
        for _ in 0..4 {
            greedy.push(from([127, 0, 0, 3], addr).await);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let reply = answer(from([127, 0, 0, 2], addr).await).await;
        assert!(reply.ends_with("served"), "{reply:?}");
        // The oldest of the greedy connections was ended; the others stand.
        let mut byte = [0u8; 1];
        let first = tokio::time::timeout(Duration::from_secs(2), greedy[0].read(&mut byte)).await;
        assert!(matches!(first, Ok(Ok(0) | Err(_))), "{first:?}");
        let second = tokio::time::timeout(Duration::from_millis(300), greedy[1].read(&mut byte)).await;
        assert!(second.is_err(), "the second greedy connection stands: {second:?}");
        drop(greedy);
        tokio::time::sleep(Duration::from_millis(100)).await;

        // Four addresses holding one each: a newcomer is refused (503).
        let mut fair = Vec::new();
        for ip in [[127, 0, 0, 4], [127, 0, 0, 5], [127, 0, 0, 7], [127, 0, 0, 8]] {
            fair.push(from(ip, addr).await);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let reply = answer(from([127, 0, 0, 6], addr).await).await;
        assert!(reply.starts_with("HTTP/1.1 503"), "{reply:?}");
        server.abort();
    }
}
