//! The target and the request bytes, serialised once before the run.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::exit::UsageError;
use crate::tls::{Tls, Trust};

/// Where to connect and what to send.
#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    /// One request, ready to write.
    pub request: Vec<u8>,
    /// The URL, for messages.
    pub url: String,
    /// `https://`: how the connections speak TLS.
    pub tls: Option<Tls>,
}

/// What goes into the request.
#[derive(Debug, Clone, Default)]
pub struct RequestSpec {
    pub method: String,
    pub headers: Vec<String>,
    pub body: Option<Vec<u8>>,
}

impl Target {
    /// Parses the URL, resolves the host and serialises the request; an
    /// `https://` URL trusts the system's CAs.
    pub fn new(url: &str, spec: &RequestSpec) -> Result<Target, UsageError> {
        Target::trusting(url, spec, &Trust::default())
    }

    /// As [`Target::new`], an `https://` URL trusting what `trust` says.
    pub fn trusting(url: &str, spec: &RequestSpec, trust: &Trust) -> Result<Target, UsageError> {
        let parsed =
            url::Url::parse(url).map_err(|e| UsageError(format!("bad URL {url:?}: {e}")))?;
        let https = match parsed.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(UsageError(format!(
                    "unsupported scheme {other:?} in {url}: loadgen speaks http and https"
                )))
            }
        };
        let host = parsed
            .host_str()
            .ok_or_else(|| UsageError(format!("bad URL {url:?}: no host")))?;
        let port = parsed
            .port_or_known_default()
            .unwrap_or(if https { 443 } else { 80 });
        let bare_host = host.trim_start_matches('[').trim_end_matches(']');
        let tls = https.then(|| Tls::client(bare_host, trust)).transpose()?;
        let addr = (bare_host, port)
            .to_socket_addrs()
            .map_err(|e| UsageError(format!("cannot resolve host {host:?}: {e}")))?
            .next()
            .ok_or_else(|| UsageError(format!("host {host:?} has no address")))?;

        let mut path = parsed.path().to_string();
        if let Some(q) = parsed.query() {
            path.push('?');
            path.push_str(q);
        }
        let host_header = match parsed.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        let request = serialise(&spec.method, &path, &host_header, spec)?;
        Ok(Target {
            addr,
            request,
            url: url.to_string(),
            tls,
        })
    }
}

fn serialise(
    method: &str,
    path: &str,
    host: &str,
    spec: &RequestSpec,
) -> Result<Vec<u8>, UsageError> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(UsageError(format!(
            "bad method {method:?}: use an upper-case token like GET"
        )));
    }
    let mut out = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n").into_bytes();
    for header in &spec.headers {
        let (name, value) = header
            .split_once(':')
            .ok_or_else(|| UsageError(format!("bad header {header:?}: expected 'Name: value'")))?;
        let name = name.trim();
        if name.is_empty()
            || name
                .bytes()
                .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(UsageError(format!("bad header name in {header:?}")));
        }
        if name.eq_ignore_ascii_case("host") || name.eq_ignore_ascii_case("content-length") {
            return Err(UsageError(format!(
                "header {name} is set by loadgen from the URL and the body"
            )));
        }
        out.extend_from_slice(format!("{name}: {}\r\n", value.trim()).as_bytes());
    }
    match &spec.body {
        Some(body) => {
            out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            out.extend_from_slice(body);
        }
        None if matches!(method, "POST" | "PUT" | "PATCH") => {
            out.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        }
        None => out.extend_from_slice(b"\r\n"),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(method: &str, body: Option<&[u8]>) -> RequestSpec {
        RequestSpec {
            method: method.into(),
            headers: vec!["X-A: 1".into()],
            body: body.map(<[u8]>::to_vec),
        }
    }

    #[test]
    fn serialises_once_with_host_and_length() {
        let t = Target::new("http://127.0.0.1:8080/a?b=1", &spec("POST", Some(b"500"))).unwrap();
        assert_eq!(
            t.request,
            b"POST /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\nContent-Length: 3\r\n\r\n500"
        );
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        let t = Target::new("http://[::1]/", &spec("GET", None)).unwrap();
        assert_eq!(
            t.request,
            b"GET / HTTP/1.1\r\nHost: [::1]\r\nX-A: 1\r\n\r\n"
        );
        assert_eq!(t.addr.port(), 80);
    }

    #[test]
    fn refuses_bad_targets() {
        for (url, needle) in [
            ("ftp://127.0.0.1/", "unsupported scheme"),
            ("127.0.0.1:80", "bad URL"),
            ("http//x", "bad URL"),
            ("http://no-such-host.invalid/", "cannot resolve"),
        ] {
            let err = Target::new(url, &spec("GET", None)).unwrap_err();
            assert!(err.0.contains(needle), "{url}: {err}");
        }
        assert!(Target::new("http://127.0.0.1/", &spec("get", None)).is_err());
    }

    #[test]
    fn https_targets_speak_tls_to_port_443_by_default() {
        let trust = Trust {
            ca_file: None,
            insecure: true,
        };
        let t = Target::trusting("https://localhost/", &spec("GET", None), &trust).unwrap();
        assert_eq!(t.addr.port(), 443);
        let tls = t.tls.unwrap();
        assert_eq!(tls.config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        let missing = Trust {
            ca_file: Some(std::path::Path::new("/no/such/ca.pem")),
            insecure: false,
        };
        let err = Target::trusting("https://localhost/", &spec("GET", None), &missing).unwrap_err();
        assert!(err.0.contains("--ca-file /no/such/ca.pem"), "{err}");
        assert!(Target::new("http://localhost/", &spec("GET", None))
            .unwrap()
            .tls
            .is_none());
    }
}
