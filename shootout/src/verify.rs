//! Checks a server before measuring it, in the manner of TechEmpower's
//! verifications: status, body, `Content-Type`, `Content-Length`, `Date`,
//! and whether a `Server` header is sent, over one plain HTTP/1.1 exchange.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{bail, Context};

use crate::scenario::Request;

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

/// One request on a fresh connection.
pub fn exchange(addr: SocketAddr, method: &str, body: Option<&[u8]>) -> anyhow::Result<Exchange> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("connecting to {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(&request(addr, method, body))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .with_context(|| format!("reading the answer from {addr}"))?;
    parse(&raw)
}

/// The bytes of one request to `/` that asks the server to close after it.
pub fn request(addr: SocketAddr, method: &str, body: Option<&[u8]>) -> Vec<u8> {
    let mut req =
        format!("{method} / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n").into_bytes();
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

/// The body loadgen sends for this request kind.
pub fn post_body(request: Request) -> Option<Vec<u8>> {
    match request {
        Request::Get => None,
        Request::Post => Some(b"500".to_vec()),
        Request::Binary => Some(500u16.to_le_bytes().to_vec()),
    }
}

/// Reads the count from a 200 answer (text or binary).
pub fn count_of(ex: &Exchange, binary: bool) -> anyhow::Result<u64> {
    if ex.status != 200 {
        bail!("status {} instead of 200", ex.status);
    }
    if binary {
        let bytes: [u8; 8] = ex
            .body
            .as_slice()
            .try_into()
            .context("binary count is not 8 bytes")?;
        Ok(u64::from_le_bytes(bytes))
    } else {
        std::str::from_utf8(&ex.body)
            .ok()
            .and_then(|s| s.parse().ok())
            .context("count is not decimal text")
    }
}

/// What the verification found, recorded in meta.json.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verified {
    pub content_type: String,
    pub date_header: bool,
    pub server_header: Option<String>,
    /// The count after verification, before the load.
    pub count: u64,
}

/// GET, POST 0 and a bad POST: statuses, bodies, headers and that POST 0
/// changes nothing; `exchange` makes one request (method, body) wherever
/// the checking host is.
pub fn verify(
    exchange: impl Fn(&str, Option<&[u8]>) -> anyhow::Result<Exchange>,
    binary: bool,
) -> anyhow::Result<Verified> {
    let get = exchange("GET", None)?;
    let count = count_of(&get, binary).context("GET /")?;
    let want_type = if binary {
        "application/octet-stream"
    } else {
        "text/plain"
    };
    let content_type = get.header("content-type").unwrap_or_default().to_string();
    if content_type != want_type {
        bail!("GET / Content-Type is {content_type:?}, expected {want_type:?}");
    }
    let length: usize = get
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .context("GET / has no Content-Length")?;
    if length != get.body.len() {
        bail!(
            "GET / Content-Length {length} but {} body bytes",
            get.body.len()
        );
    }
    let date_header = get.header("date").is_some();
    if !date_header {
        bail!("GET / has no Date header");
    }
    let zero: Vec<u8> = if binary {
        0u16.to_le_bytes().to_vec()
    } else {
        b"0".to_vec()
    };
    let post = exchange("POST", Some(&zero))?;
    let after = count_of(&post, binary).context("POST / 0")?;
    if after != count {
        bail!("POST / 0 answered {after}, expected the unchanged count {count}");
    }
    let bad = exchange("POST", Some(b"501x"))?;
    if bad.status != 400 {
        bail!(
            "POST / with a bad body answered {} instead of 400",
            bad.status
        );
    }
    Ok(Verified {
        content_type,
        date_header,
        server_header: get.header("server").map(str::to_owned),
        count,
    })
}
