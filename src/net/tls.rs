//! HTTPS (`[http] tls_cert` and `tls_key`): the certificate and key read at
//! start, and a connection whose TLS handshake runs inside its first reads and
//! writes, so that a slow or silent client never holds the accept loop up (its
//! handshake is bounded by the header timeout like any slow request).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

/// The server's TLS set-up from a PEM certificate chain and a PEM private key;
/// what is wrong (with the file), else.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("[http] tls_cert: {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("[http] tls_cert: {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "[http] tls_cert: {}: no certificate (PEM, -----BEGIN CERTIFICATE-----) in it",
            cert.display()
        ));
    }
    let key_path = key;
    let key = PrivateKeyDer::from_pem_file(key_path)
        .map_err(|e| format!("[http] tls_key: {}: no private key read: {e}", key_path.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            format!(
                "[http] tls_cert and tls_key: {e} ({} and {} must be a certificate and its own key)",
                cert.display(),
                key_path.display()
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// An accepted connection: plain, or TLS (handshaking, then established).
pub enum Conn {
    Plain(TcpStream),
    Handshake(Box<tokio_rustls::Accept<TcpStream>>),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    Failed,
}

impl Conn {
    pub fn new(stream: TcpStream, tls: Option<&TlsAcceptor>) -> Conn {
        match tls {
            Some(a) => Conn::Handshake(Box::new(a.accept(stream))),
            None => Conn::Plain(stream),
        }
    }

    /// Drives the handshake; ready once the connection carries plain bytes.
    fn ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        if let Conn::Handshake(accept) = self {
            match Pin::new(accept.as_mut()).poll(cx) {
                Poll::Ready(Ok(s)) => *self = Conn::Tls(Box::new(s)),
                Poll::Ready(Err(e)) => {
                    tracing::debug!("HTTPS: a handshake failed: {e}");
                    *self = Conn::Failed;
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        match self {
            Conn::Failed => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "the TLS handshake failed",
            ))),
            _ => Poll::Ready(Ok(())),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Err(e) = std::task::ready!(this.ready(cx)) {
            return Poll::Ready(Err(e));
        }
        match this {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            _ => Poll::Ready(Ok(())),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if let Err(e) = std::task::ready!(this.ready(cx)) {
            return Poll::Ready(Err(e));
        }
        match this {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            _ => Poll::Ready(Ok(0)),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            _ => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            _ => Poll::Ready(Ok(())),
        }
    }
}
