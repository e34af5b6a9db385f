//! An incremental HTTP/1.1 response parser: status line and headers with
//! httparse, then a `Content-Length`, chunked, or read-until-close body,
//! which is skipped (only its bytes are counted).

/// A response that finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    pub status: u16,
    /// The server will close the connection after this response.
    pub close: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed HTTP response")]
pub struct ParseError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body { done: Done, remaining: u64 },
    ChunkSize { done: Done },
    ChunkData { done: Done, remaining: u64 },
    ChunkCrlf { done: Done },
    Trailers { done: Done },
    UntilClose { done: Done },
}

/// Parser state of one connection.
#[derive(Debug, Clone)]
pub struct ResponseParser {
    state: State,
    head_only: bool,
}

/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;

impl ResponseParser {
    /// `head_only` for responses to HEAD requests, which have no body.
    pub fn new(head_only: bool) -> Self {
        ResponseParser {
            state: State::Head,
            head_only,
        }
    }

    /// True between responses.
    pub fn idle(&self) -> bool {
        self.state == State::Head
    }

    /// Consumes what it can of `buf`. Returns the bytes consumed and the
    /// response if one finished; call again with the rest while it makes
    /// progress.
    pub fn parse(&mut self, buf: &[u8]) -> Result<(usize, Option<Done>), ParseError> {
        match self.state {
            State::Head => self.parse_head(buf),
            State::Body { done, remaining } => {
                let take = remaining.min(buf.len() as u64);
                if take == remaining {
                    self.state = State::Head;
                    Ok((take as usize, Some(done)))
                } else {
                    self.state = State::Body {
                        done,
                        remaining: remaining - take,
                    };
                    Ok((take as usize, None))
                }
            }
            State::ChunkSize { done } => match httparse::parse_chunk_size(buf) {
                Ok(httparse::Status::Complete((used, 0))) => {
                    self.state = State::Trailers { done };
                    Ok((used, None))
                }
                Ok(httparse::Status::Complete((used, size))) => {
                    self.state = State::ChunkData {
                        done,
                        remaining: size,
                    };
                    Ok((used, None))
                }
                Ok(httparse::Status::Partial) if buf.len() < 64 => Ok((0, None)),
                _ => Err(ParseError),
            },
            State::ChunkData { done, remaining } => {
                let take = remaining.min(buf.len() as u64);
                self.state = if take == remaining {
                    State::ChunkCrlf { done }
                } else {
                    State::ChunkData {
                        done,
                        remaining: remaining - take,
                    }
                };
                Ok((take as usize, None))
            }
            State::ChunkCrlf { done } => {
                if buf.len() < 2 {
                    return Ok((0, None));
                }
                if &buf[..2] != b"\r\n" {
                    return Err(ParseError);
                }
                self.state = State::ChunkSize { done };
                Ok((2, None))
            }
            State::Trailers { done } => {
                // Trailer lines until an empty line.
                match buf.windows(2).position(|w| w == b"\r\n") {
                    Some(0) => {
                        self.state = State::Head;
                        Ok((2, Some(done)))
                    }
                    Some(end) => Ok((end + 2, None)),
                    None if buf.len() < MAX_HEAD => Ok((0, None)),
                    None => Err(ParseError),
                }
            }
            State::UntilClose { .. } => Ok((buf.len(), None)),
        }
    }

    /// The peer closed the connection: finishes a read-until-close body.
    pub fn eof(&mut self) -> Option<Done> {
        match self.state {
            State::UntilClose { done } => {
                self.state = State::Head;
                Some(done)
            }
            _ => None,
        }
    }

    fn parse_head(&mut self, buf: &[u8]) -> Result<(usize, Option<Done>), ParseError> {
        let mut headers = [httparse::EMPTY_HEADER; 48];
        let mut res = httparse::Response::new(&mut headers);
        let used = match res.parse(buf) {
            Ok(httparse::Status::Complete(used)) => used,
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Ok((0, None)),
            _ => return Err(ParseError),
        };
        let status = res.code.ok_or(ParseError)?;
        let http10 = res.version == Some(0);
        let mut close = http10;
        let mut length = None;
        let mut chunked = false;
        for h in res.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value).map_err(|_| ParseError)?;
                length = Some(v.trim().parse::<u64>().map_err(|_| ParseError)?);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = h
                    .value
                    .split(|b| *b == b',')
                    .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                let v = h.value.trim_ascii();
                if v.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if v.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
        }
        let done = Done { status, close };
        let no_body =
            self.head_only || (100..200).contains(&status) || status == 204 || status == 304;
        self.state = if no_body {
            return Ok((used, Some(done)));
        } else if chunked {
            State::ChunkSize { done }
        } else if let Some(0) = length {
            return Ok((used, Some(done)));
        } else if let Some(remaining) = length {
            State::Body { done, remaining }
        } else {
            State::UntilClose {
                done: Done {
                    status,
                    close: true,
                },
            }
        };
        Ok((used, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step` bytes, returning the finished responses.
    fn feed(input: &[u8], step: usize) -> Vec<Done> {
        let mut p = ResponseParser::new(false);
        let mut pending: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            pending.extend_from_slice(piece);
            loop {
                let (used, done) = p.parse(&pending).unwrap();
                pending.drain(..used);
                out.extend(done);
                if used == 0 && done.is_none() {
                    break;
                }
                if pending.is_empty() && !p.idle() {
                    // Body states may complete with no bytes left only via a
                    // zero-length read; keep looping until they ask for more.
                    let (used, done) = p.parse(&pending).unwrap();
                    out.extend(done);
                    if used == 0 && done.is_none() {
                        break;
                    }
                }
            }
        }
        out
    }

    #[test]
    fn content_length_chunked_and_close_in_any_split() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n500\
HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\n\
HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n\
HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx";
        for step in [1, 2, 3, 7, 64, input.len()] {
            let got = feed(input, step);
            let statuses: Vec<_> = got.iter().map(|d| (d.status, d.close)).collect();
            assert_eq!(
                statuses,
                [(200, false), (200, false), (503, false), (200, true)],
                "step {step}"
            );
        }
    }

    #[test]
    fn body_until_close_finishes_at_eof() {
        let mut p = ResponseParser::new(false);
        let (used, done) = p.parse(b"HTTP/1.0 200 OK\r\n\r\nabc").unwrap();
        assert_eq!((used, done), (19, None));
        assert_eq!(p.parse(b"abc").unwrap(), (3, None));
        assert_eq!(
            p.eof(),
            Some(Done {
                status: 200,
                close: true
            })
        );
    }

    #[test]
    fn garbage_is_a_parse_error() {
        let mut p = ResponseParser::new(false);
        assert!(p.parse(b"NOT HTTP\r\n\r\n").is_err());
        let mut p = ResponseParser::new(false);
        assert!(p
            .parse(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")
            .is_err());
    }
}
