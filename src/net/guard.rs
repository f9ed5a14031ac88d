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

/// Connections open per address.
type Counts = Arc<Mutex<HashMap<IpAddr, usize>>>;

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
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        if let Ok(mut c) = self.counts.lock() {
            if let Some(n) = c.get_mut(&self.ip) {
                *n -= 1;
                if *n == 0 {
                    c.remove(&self.ip);
                }
            }
        }
    }
}

/// A connection holding its slots until it closes, with its deadlines.
pub struct Guarded {
    stream: super::tls::Conn,
    _slot: OwnedSemaphorePermit,
    _address: AddressSlot,
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
        let n = c.entry(ip).or_insert(0);
        if *n >= self.limits.per_address {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            ip,
            counts: self.counts.clone(),
        })
    }
}

impl axum::serve::Listener for Limited {
    type Io = Guarded;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Guarded, SocketAddr) {
        loop {
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
            match self.slots.clone().try_acquire_owned() {
                Ok(slot) => {
                    let _ = stream.set_nodelay(true);
                    let deadline = Box::pin(tokio::time::sleep(self.limits.header_timeout));
                    let guarded = Guarded {
                        stream: super::tls::Conn::new(stream, self.tls.as_ref()),
                        _slot: slot,
                        _address: address,
                        limits: self.limits,
                        headers_done: false,
                        matched: 0,
                        deadline,
                    };
                    return (guarded, addr);
                }
                Err(_) => {
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
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nRetry-After: 5\r\nConnection: close\r\n\r\n{body}",
        body.len()
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
