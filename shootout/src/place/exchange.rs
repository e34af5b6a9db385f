//! One HTTP/1.1 request on a fresh connection (plain, or over TLS) and its
//! answer, as bytes: what a host uses to ask a server something from where
//! it stands.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::Context;

/// What came back from one request.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Exchange {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Exchange {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request to `path` on a fresh connection.
pub fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
) -> anyhow::Result<Exchange> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("connecting to {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(&request(addr, method, path, body))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .with_context(|| format!("reading the answer from {addr}"))?;
    parse(&raw)
}

/// One request over TLS on a fresh connection from here (or from inside a
/// namespace, where the caller runs it): the answer, read until the server
/// closes.
pub fn exchange_tls(
    tls: &loadgen::tls::Tls,
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
) -> anyhow::Result<Exchange> {
    let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("connecting to {addr}"))?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
    let conn = rustls::ClientConnection::new(std::sync::Arc::clone(&tls.config), tls.name.clone())
        .context("TLS: starting the handshake")?;
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    stream
        .write_all(&request(addr, method, path, body))
        .with_context(|| format!("TLS with {addr}"))?;
    let mut raw = Vec::new();
    match stream.read_to_end(&mut raw) {
        Ok(_) => {}
        // A server that closes without close_notify after a complete answer
        // (nginx and actix-web may): the answer is what counts.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
        Err(e) => {
            return Err(e).with_context(|| format!("reading the answer from {addr} over TLS"))
        }
    }
    parse(&raw)
}

/// The bytes of one request to `path` that asks the server to close
/// after it.
pub fn request(addr: SocketAddr, method: &str, path: &str, body: Option<&[u8]>) -> Vec<u8> {
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n").into_bytes();
    if let Some(b) = body {
        req.extend_from_slice(format!("Content-Length: {}\r\n\r\n", b.len()).as_bytes());
        req.extend_from_slice(b);
    } else {
        req.extend_from_slice(b"\r\n");
    }
    req
}

/// A whole answer, as read until the server closed.
pub fn parse(raw: &[u8]) -> anyhow::Result<Exchange> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no end of headers")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .context("no status line")?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Exchange {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    })
}
