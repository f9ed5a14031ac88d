//! A plain HTTP/1.1 client for the tests: one request on a fresh connection
//! (`Connection: close`), its status, headers and body. Every call is bounded.

use std::net::SocketAddr;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use super::Within;

/// A port free on 127.0.0.1 a moment ago, for a server of the test.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An answer: status, headers (names in lower case), body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// Every header `name` (an answer may set several cookies).
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The `Set-Cookie` header that sets cookie `name`, whole (its attributes).
    pub fn set_cookie(&self, name: &str) -> Option<&str> {
        self.headers_named("set-cookie")
            .into_iter()
            .find(|set| set.split_once('=').is_some_and(|(k, _)| k == name))
    }

    /// The value `name=VALUE` of the `Set-Cookie` header that sets that cookie.
    pub fn cookie(&self, name: &str) -> Option<String> {
        let (_, rest) = self.set_cookie(name)?.split_once('=')?;
        Some(rest.split(';').next().unwrap_or_default().to_string())
    }

    /// Every cookie the answer sets, as a browser sends them back
    /// (`a=1; b=2`).
    pub fn cookies(&self) -> String {
        self.headers_named("set-cookie")
            .into_iter()
            .filter_map(|set| set.split(';').next())
            .map(str::trim)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// `METHOD PATH` to `addr` with `headers` and `body`, over a new TCP connection.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let stream = tokio::net::TcpStream::connect(addr)
        .within(10, "a TCP connection")
        .await
        .unwrap();
    exchange(stream, &addr.to_string(), method, path, headers, body)
        .within(30, &format!("the answer to {method} {path}"))
        .await
}

/// A new TCP connection to `addr` from the local address `from` (one of
/// 127.0.0.0/8 on the loopback: a test may speak from as many addresses as it
/// likes), made within 10 s.
pub async fn connect_from(from: std::net::IpAddr, addr: SocketAddr) -> tokio::net::TcpStream {
    let connect = async {
        let socket = match from {
            std::net::IpAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
            std::net::IpAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
        }
        .unwrap();
        socket.bind(SocketAddr::new(from, 0)).unwrap();
        socket.connect(addr).await.unwrap()
    };
    connect.within(10, "a TCP connection").await
}

/// The same over any stream (TLS in the tests of HTTPS); `host` for the `Host` header.
pub async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut r = BufReader::new(stream);
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    r.get_mut().write_all(req.as_bytes()).await.unwrap();
    r.get_mut().write_all(body).await.unwrap();
    r.get_mut().flush().await.unwrap();
    let (status, headers) = read_head(&mut r).await;
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok());
    let mut body = Vec::new();
    match length {
        Some(n) => {
            body.resize(n, 0);
            r.read_exact(&mut body).await.unwrap();
        }
        None => {
            let _ = r.read_to_end(&mut body).await;
        }
    }
    Answer {
        status,
        headers,
        body,
    }
}

/// Reads an answer's status line and headers (names in lower case).
pub async fn read_head<S: AsyncRead + Unpin>(r: &mut BufReader<S>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    r.read_line(&mut line).await.unwrap();
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).await.unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((n, v)) = l.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    (status, headers)
}
