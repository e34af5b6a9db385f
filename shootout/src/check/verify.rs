//! Checks a server before measuring it, in the manner of TechEmpower's
//! verifications: status, body, `Content-Type`, `Content-Length`, `Date`,
//! and whether a `Server` header is sent, over one plain HTTP/1.1 exchange.

use anyhow::{bail, Context};

use crate::config::scenario::Request;
use crate::place::exchange::Exchange;

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
