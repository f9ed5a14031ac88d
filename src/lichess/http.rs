//! The push over HTTP/1.1 (hyper's client), over TLS with the system's roots
//! (rustls and `ring`, as the MQTT link) for `https://`, in the clear for a
//! stand-in or a relay on `http://`. One connection, kept between pushes and
//! made again when it breaks. Every step is bounded in time.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue, RETRY_AFTER, USER_AGENT};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::config::{LichessServer, Token};
use crate::api::lichess::RoundId;

/// How long a connection may take to open (TCP and TLS).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a push may take, from sending it to its answer's end.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest answer read (a round's answer is a few KiB).
const MAX_ANSWER: usize = 1 << 20;

/// The answer to a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<String>,
    pub body: Vec<u8>,
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

pub struct PushClient {
    server: LichessServer,
    tls: Option<tokio_rustls::TlsConnector>,
    conn: Option<SendRequest<Full<Bytes>>>,
    agent: HeaderValue,
}

/// The system's CA roots (rustls-native-certs), with `ring`, HTTP/1.1 by ALPN.
fn tls_connector() -> Result<tokio_rustls::TlsConnector, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(
            "[lichess] no CA certificates on this system to check lichess's (install ca-certificates)".into(),
        );
    }
    connector_with(roots)
}

fn connector_with(roots: rustls::RootCertStore) -> Result<tokio_rustls::TlsConnector, String> {
    let mut cfg =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("[lichess] TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(cfg)))
}

impl PushClient {
    /// A client of `server` (no connection yet); TLS is set up here, so that a
    /// system without CA certificates is said at start.
    pub fn new(server: LichessServer) -> Result<PushClient, String> {
        let tls = if server.tls { Some(tls_connector()?) } else { None };
        let agent = HeaderValue::from_str(&format!(
            "eboard-bridge/{} (+https://lichess.org/api#tag/Broadcasts)",
            env!("CARGO_PKG_VERSION")
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("eboard-bridge"));
        Ok(PushClient {
            server,
            tls,
            conn: None,
            agent,
        })
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let s = &self.server;
        let open = async {
            let tcp = TcpStream::connect((s.host.as_str(), s.port))
                .await
                .map_err(|e| format!("cannot connect to {}:{}: {e}", s.host, s.port))?;
            let _ = tcp.set_nodelay(true);
            let io: Box<dyn Io> = match &self.tls {
                Some(tls) => {
                    let name = rustls::pki_types::ServerName::try_from(s.host.clone())
                        .map_err(|e| format!("{}: {e}", s.host))?;
                    Box::new(
                        tls.connect(name, tcp)
                            .await
                            .map_err(|e| format!("TLS with {}: {e}", s.host))?,
                    )
                }
                None => Box::new(tcp),
            };
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
                .await
                .map_err(|e| format!("HTTP with {}: {e}", s.host))?;
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!("lichess: the connection ended: {e}");
                }
            });
            Ok::<_, String>(sender)
        };
        tokio::time::timeout(CONNECT_TIMEOUT, open)
            .await
            .map_err(|_| format!("{}: no connection in {} s", s, CONNECT_TIMEOUT.as_secs()))?
    }

    /// Pushes `body` to round `id`: lichess's answer, or why there is none.
    pub async fn push(&mut self, id: &RoundId, token: &Token, body: Bytes) -> Result<Answer, String> {
        let kept = match self.conn.take() {
            Some(mut c) => c.ready().await.is_ok().then_some(c),
            None => None,
        };
        let mut sender = match kept {
            Some(c) => c,
            None => self.connect().await?,
        };
        let mut auth = HeaderValue::from_str(&token.bearer())
            .map_err(|_| "the token is not a header value".to_string())?;
        auth.set_sensitive(true);
        let req = hyper::Request::post(self.server.push_path(id))
            .header(HOST, self.server.authority())
            .header(AUTHORIZATION, auth)
            .header(CONTENT_TYPE, "text/plain; charset=utf-8")
            .header(USER_AGENT, self.agent.clone())
            .body(Full::new(body))
            .map_err(|e| format!("the request: {e}"))?;
        let exchange = async {
            let resp = sender
                .send_request(req)
                .await
                .map_err(|e| format!("{}: {e}", self.server))?;
            let (parts, body) = resp.into_parts();
            let bytes = Limited::new(body, MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| format!("{}: the answer: {e}", self.server))?
                .to_bytes();
            Ok::<_, String>(Answer {
                status: parts.status.as_u16(),
                retry_after: parts
                    .headers
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
                body: bytes.to_vec(),
            })
        };
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .map_err(|_| format!("{}: no answer in {} s", self.server, REQUEST_TIMEOUT.as_secs()))??;
        // Kept for the next push (hyper says when it cannot be).
        self.conn = Some(sender);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TLS server on 127.0.0.1 with a certificate for `localhost` that no
    /// system root signed, answering every request `200 {"games":[]}` and
    /// handing over what it got: its address, the certificate, the requests.
    async fn tls_server() -> (
        std::net::SocketAddr,
        rcgen::Certificate,
        tokio::sync::mpsc::UnboundedReceiver<(hyper::http::request::Parts, Bytes)>,
    ) {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        let der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        let cfg =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![cert.der().clone()], der)
                .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let svc =
                        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                            let tx = tx.clone();
                            async move {
                                let (parts, body) = req.into_parts();
                                let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                                let _ = tx.send((parts, body));
                                Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                                    Bytes::from(r#"{"games":[]}"#),
                                )))
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        (addr, cert, rx)
    }

    fn server(port: u16) -> LichessServer {
        LichessServer::try_from(format!("https://localhost:{port}")).unwrap()
    }

    /// Over TLS, a server whose certificate the roots vouch for gets the push
    /// as lichess documents it; the system's roots refuse one they do not
    /// vouch for (no push is made).
    #[tokio::test]
    async fn the_push_over_tls_and_a_certificate_no_root_signed() {
        let (addr, cert, mut got) = tls_server().await;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.der().clone()).unwrap();
        let mut client = PushClient::new(server(addr.port())).unwrap();
        client.tls = Some(connector_with(roots).unwrap());
        let token = super::super::config::Token::for_tests("lip_tlsToken");
        let id = RoundId::parse("AbCd1234").unwrap();
        let body = Bytes::from_static(b"[Event \"x\"]\n\n1. e4 *\n\n");
        let a = client.push(&id, &token, body.clone()).await.unwrap();
        assert_eq!((a.status, a.body.as_slice()), (200, &br#"{"games":[]}"#[..]));
        let (parts, sent) = got.recv().await.unwrap();
        assert_eq!(parts.method, hyper::Method::POST);
        assert_eq!(parts.uri.path(), "/api/broadcast/round/AbCd1234/push");
        let h = |n: &str| parts.headers.get(n).unwrap().to_str().unwrap().to_string();
        assert_eq!(h("authorization"), "Bearer lip_tlsToken");
        assert_eq!(h("content-type"), "text/plain; charset=utf-8");
        assert_eq!(h("host"), format!("localhost:{}", addr.port()));
        assert_eq!(sent, body);
        // The connection is kept for the next push.
        client.push(&id, &token, body.clone()).await.unwrap();
        assert!(got.recv().await.is_some());

        // The system's roots do not vouch for it.
        let Ok(mut system) = PushClient::new(server(addr.port())) else {
            return; // no CA certificates on this machine
        };
        let e = system.push(&id, &token, body).await.unwrap_err();
        assert!(e.contains("TLS with localhost"), "{e}");
        assert!(got.try_recv().is_err(), "nothing reached the server");
    }
}
