//! A minimal HTTP/1.1 client over one TCP connection, so tests control every
//! byte sent (bad bodies, chunked encoding, partial bodies) and see every byte
//! received.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A parsed response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Header names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Status, content type, `Allow` and body: what both twins must agree on.
    pub fn essence(&self) -> (u16, Option<&str>, Option<&str>, &[u8]) {
        (
            self.status,
            self.header("content-type"),
            self.header("allow"),
            &self.body,
        )
    }
}

/// One keep-alive connection.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> std::io::Result<Conn> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::new(),
        })
    }

    /// Wraps an already connected stream.
    pub fn from_stream(stream: TcpStream) -> Conn {
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    /// Sends raw bytes.
    pub fn send(&mut self, raw: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(raw)
    }

    /// Sends a request with a `Content-Length` body (none for `None`).
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> std::io::Result<Response> {
        let mut raw = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n").into_bytes();
        if let Some(body) = body {
            raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            raw.extend_from_slice(body);
        } else {
            raw.extend_from_slice(b"\r\n");
        }
        self.send(&raw)?;
        self.read_response(method == "HEAD")
    }

    pub fn get(&mut self) -> std::io::Result<Response> {
        self.request("GET", "/", None)
    }

    pub fn post(&mut self, body: &[u8]) -> std::io::Result<Response> {
        self.request("POST", "/", Some(body))
    }

    /// Reads one response (with a `Content-Length` body, or none for HEAD).
    pub fn read_response(&mut self, head_only: bool) -> std::io::Result<Response> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut parsed = httparse::Response::new(&mut headers);
            match parsed.parse(&self.buf) {
                Ok(httparse::Status::Complete(head_len)) => {
                    let status = parsed.code.unwrap_or(0);
                    let headers: Vec<(String, String)> = parsed
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_ascii_lowercase(),
                                String::from_utf8_lossy(h.value).into_owned(),
                            )
                        })
                        .collect();
                    let len = if head_only {
                        0
                    } else {
                        headers
                            .iter()
                            .find(|(n, _)| n == "content-length")
                            .and_then(|(_, v)| v.parse::<usize>().ok())
                            .unwrap_or(0)
                    };
                    while self.buf.len() < head_len + len {
                        self.fill()?;
                    }
                    let body = self.buf[head_len..head_len + len].to_vec();
                    self.buf.drain(..head_len + len);
                    return Ok(Response {
                        status,
                        headers,
                        body,
                    });
                }
                Ok(httparse::Status::Partial) => self.fill()?,
                Err(e) => {
                    return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
                }
            }
        }
    }

    fn fill(&mut self) -> std::io::Result<()> {
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

/// One request on a fresh connection.
pub fn once(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
) -> std::io::Result<Response> {
    Conn::open(addr)?.request(method, path, body)
}
