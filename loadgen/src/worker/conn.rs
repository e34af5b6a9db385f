//! Connection I/O: one connection's socket, its read buffer and its
//! response parser, and the few calls the worker makes on it (open, finish
//! the connect, write the batch, read what arrived, close). Nothing here
//! counts or schedules: each call says what happened and the worker decides.
//! A new kind of connection (TLS, say) is one more transport behind these
//! calls, not a branch through the worker.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use rustls::ClientConnection;

use crate::response::ResponseParser;
use crate::tls::Tls;

const READ_BUF: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting for the connect to finish.
    Connecting,
    /// Connected, nothing outstanding, waiting for a timer (open model or backoff).
    Waiting,
    /// Connected with requests outstanding (or being written).
    Busy,
    /// Connected and idle, nothing more to send.
    Done,
    /// No socket (backoff before reconnecting).
    Closed,
}

/// How a connect stands after the socket reported an event.
pub(super) enum Connect {
    /// Connected (with https, its handshake ended): requests may go.
    Done,
    /// Not yet.
    Pending,
    /// The TCP connect failed.
    Failed,
    /// The TLS handshake failed: a certificate refused, a protocol error,
    /// a peer that closed in the middle of it.
    Refused,
}

/// How a write of the batch ended.
pub(super) enum Wrote {
    /// All of it, or as much as the socket took (the rest at the next
    /// writable event).
    Sent,
    Failed,
}

/// What one read gave.
pub(super) enum Filled {
    /// `n` bytes; `drained`: the socket has nothing more now (plain http:
    /// a read that did not fill the buffer, see the worker's opening
    /// comment; https: never said, read again until `Drained`).
    Read { n: usize, drained: bool },
    /// The peer closed.
    Eof,
    /// Nothing to read now.
    Drained,
    /// A reset or another error.
    Failed,
}

/// A connection's socket: plain, or under TLS.
enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

struct TlsStream {
    sock: TcpStream,
    tls: ClientConnection,
    /// The TCP connect has finished (the handshake may still run).
    tcp_up: bool,
}

impl Transport {
    fn sock(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(t) => &t.sock,
        }
    }

    fn sock_mut(&mut self) -> &mut TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(t) => &mut t.sock,
        }
    }
}

pub(super) struct Conn {
    stream: Option<Transport>,
    pub phase: Phase,
    /// Generation, bumped on reconnect, so stale timers are ignored.
    pub gen: u64,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    pub parser: ResponseParser,
    /// Answers on this connection (churn closes it after enough).
    pub answered: u64,
    /// Requests written or being written and not yet answered.
    pub outstanding: usize,
    /// Bytes of the current batch written so far.
    pub written: usize,
    /// When the outstanding requests were due (open model) or sent (closed).
    pub sent_at: Instant,
    /// Open model: when the next request is due.
    pub next_due: Instant,
    pub connect_started: Instant,
    /// A request the server answered with 408 as it ended the connection:
    /// sent again, once, on the new connection, its latency still counted
    /// from this time (its original send or intended time).
    pub retry: Option<Instant>,
    /// The outstanding request is such a repeat (a second 408 counts).
    pub repeated: bool,
    /// The connection has carried a response: a close as the next request
    /// goes out is the server's idle close, not a refusal.
    pub reused: bool,
}

impl Conn {
    pub fn new(head_only: bool, start: Instant, next_due: Instant) -> Conn {
        Conn {
            stream: None,
            phase: Phase::Closed,
            gen: 0,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            parser: ResponseParser::new(head_only),
            answered: 0,
            outstanding: 0,
            written: 0,
            sent_at: start,
            next_due,
            connect_started: start,
            retry: None,
            repeated: false,
            reused: false,
        }
    }

    /// Starts a new connection to `addr` (under TLS when `tls` is given),
    /// registered once, edge-triggered, for both directions. On `Err` the
    /// connection has no socket.
    pub fn open(
        &mut self,
        registry: &Registry,
        token: Token,
        addr: SocketAddr,
        head_only: bool,
        tls: Option<&Tls>,
    ) -> io::Result<()> {
        self.gen += 1;
        self.start = 0;
        self.end = 0;
        self.parser = ResponseParser::new(head_only);
        self.outstanding = 0;
        self.written = 0;
        self.reused = false;
        self.answered = 0;
        self.connect_started = Instant::now();
        let mut stream = TcpStream::connect(addr)?;
        registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
        self.stream = Some(match tls {
            None => Transport::Plain(stream),
            Some(t) => {
                let tls = ClientConnection::new(t.config.clone(), t.name.clone())
                    .map_err(io::Error::other)?;
                Transport::Tls(Box::new(TlsStream {
                    sock: stream,
                    tls,
                    tcp_up: false,
                }))
            }
        });
        self.phase = Phase::Connecting;
        Ok(())
    }

    /// The TLS version and cipher suite a finished handshake agreed on.
    pub fn agreed(&self) -> Option<(&'static str, &'static str)> {
        let Some(Transport::Tls(t)) = &self.stream else {
            return None;
        };
        let version = t.tls.protocol_version()?.as_str()?;
        let suite = t.tls.negotiated_cipher_suite()?.suite().as_str()?;
        Some((version, suite))
    }

    /// Connected over TCP, the TLS handshake still under way.
    pub fn in_handshake(&self) -> bool {
        matches!(&self.stream, Some(Transport::Tls(t)) if t.tcp_up)
    }

    /// The connection speaks TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self.stream, Some(Transport::Tls(_)))
    }

    /// Drops the socket, if any.
    pub fn close(&mut self, registry: &Registry) {
        if let Some(mut stream) = self.stream.take() {
            let _ = registry.deregister(stream.sock_mut());
        }
    }

    /// Drops the socket after a failed connect (it was never registered,
    /// or its registration ends with it).
    pub fn forget(&mut self) {
        self.stream = None;
    }

    /// Whether the connect (and with https the handshake, as far as the
    /// socket lets it go now) has finished, after any event.
    pub fn finish_connect(&mut self) -> Connect {
        let Some(stream) = self.stream.as_mut() else {
            return Connect::Pending;
        };
        if let Transport::Tls(t) = stream {
            if t.tcp_up {
                return handshake(t);
            }
        }
        let sock = stream.sock();
        match sock.take_error() {
            Ok(None) => {}
            _ => return Connect::Failed,
        }
        match sock.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return Connect::Pending,
            Err(_) => return Connect::Failed,
        }
        let _ = sock.set_nodelay(true);
        match stream {
            Transport::Plain(_) => Connect::Done,
            Transport::Tls(t) => {
                t.tcp_up = true;
                handshake(t)
            }
        }
    }

    /// Bytes of the request, or of TLS records, are still to be written.
    pub fn has_unsent(&self, batch_len: usize) -> bool {
        self.written < batch_len
            || matches!(&self.stream, Some(Transport::Tls(t)) if t.tls.wants_write())
    }

    /// Writes what is left of `batch` (from `written`); with https, what
    /// TLS holds of it too.
    pub fn write(&mut self, batch: &[u8]) -> Wrote {
        match self.stream.as_mut() {
            None => Wrote::Sent,
            Some(Transport::Plain(sock)) => {
                while self.written < batch.len() {
                    match sock.write(&batch[self.written..]) {
                        Ok(0) => return Wrote::Failed,
                        Ok(n) => self.written += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Wrote::Sent,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => return Wrote::Failed,
                    }
                }
                Wrote::Sent
            }
            Some(Transport::Tls(t)) => loop {
                while self.written < batch.len() {
                    match t.tls.writer().write(&batch[self.written..]) {
                        Ok(0) => break,
                        Ok(n) => self.written += n,
                        Err(_) => return Wrote::Failed,
                    }
                }
                match flush(t) {
                    Flushed::All if self.written < batch.len() => continue,
                    Flushed::All | Flushed::Blocked => return Wrote::Sent,
                    Flushed::Failed => return Wrote::Failed,
                }
            },
        }
    }

    /// One read into the buffer, which first makes room: moves unparsed
    /// bytes to its start, or grows it for a response head larger than it.
    /// `None`: no socket.
    pub fn fill(&mut self) -> Option<Filled> {
        let stream = self.stream.as_mut()?;
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                let mut bigger = vec![0u8; self.buf.len() * 2].into_boxed_slice();
                bigger[..self.end].copy_from_slice(&self.buf[..self.end]);
                self.buf = bigger;
            }
        }
        let space = self.buf.len() - self.end;
        let filled = match stream {
            Transport::Plain(sock) => loop {
                break match sock.read(&mut self.buf[self.end..]) {
                    Ok(0) => Filled::Eof,
                    Ok(n) => Filled::Read {
                        n,
                        drained: n < space,
                    },
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Filled::Drained,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => Filled::Failed,
                };
            },
            Transport::Tls(t) => read_tls(t, &mut self.buf[self.end..]),
        };
        if let Filled::Read { n, .. } = filled {
            self.end += n;
        }
        Some(filled)
    }

    /// True when nothing read is left unparsed.
    pub fn nothing_unparsed(&self) -> bool {
        self.start == self.end
    }

    /// Parses what was read: the bytes used and a response, if one ended.
    pub fn parse(&mut self) -> Result<(usize, Option<crate::response::Done>), ()> {
        let (used, done) = self
            .parser
            .parse(&self.buf[self.start..self.end])
            .map_err(|_| ())?;
        self.start += used;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        Ok((used, done))
    }
}

/// How writing out what TLS holds went.
enum Flushed {
    All,
    /// The socket takes no more now (the rest at its next writable event).
    Blocked,
    Failed,
}

fn flush(t: &mut TlsStream) -> Flushed {
    while t.tls.wants_write() {
        match t.tls.write_tls(&mut t.sock) {
            Ok(0) => return Flushed::Failed,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Flushed::Blocked,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Flushed::Failed,
        }
    }
    Flushed::All
}

/// Drives a handshake as far as the socket lets it: writes what TLS has to
/// send, reads what came, until it ends, fails or waits for the peer.
fn handshake(t: &mut TlsStream) -> Connect {
    loop {
        if let Flushed::Failed = flush(t) {
            return Connect::Refused;
        }
        if !t.tls.is_handshaking() {
            return Connect::Done;
        }
        match t.tls.read_tls(&mut t.sock) {
            // The peer closed in the middle of the handshake.
            Ok(0) => return Connect::Refused,
            Ok(_) => {
                if t.tls.process_new_packets().is_err() {
                    // Our alert, if the socket takes it, then the end.
                    let _ = flush(t);
                    return Connect::Refused;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Connect::Pending,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Connect::Refused,
        }
    }
}

/// One read of plaintext under TLS: what TLS already decrypted, else the
/// socket's next records, until there is plaintext, an end, or nothing now.
/// A short read tells nothing of the socket here (records and plaintext
/// come apart), so `drained` is never said: the worker reads until
/// `Drained`, one more read per turn than over plain http.
fn read_tls(t: &mut TlsStream, buf: &mut [u8]) -> Filled {
    let mut closed = false;
    loop {
        match t.tls.reader().read(buf) {
            Ok(0) => return Filled::Eof,
            Ok(n) => return Filled::Read { n, drained: false },
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && closed => return Filled::Eof,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // Closed without close_notify: an end, as over plain http.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Filled::Eof,
            Err(_) => return Filled::Failed,
        }
        match t.tls.read_tls(&mut t.sock) {
            Ok(0) => closed = true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Filled::Drained,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Filled::Failed,
        }
        if t.tls.process_new_packets().is_err() {
            return Filled::Failed;
        }
        // A record the peer sent after the handshake may ask for an answer
        // (a key update): written when the socket takes it.
        let _ = flush(t);
    }
}
