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

use crate::response::ResponseParser;

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
    /// Connected: requests may go.
    Done,
    /// Not yet.
    Pending,
    Failed,
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
    /// `n` bytes, into a buffer that had room for `space`.
    Read { n: usize, space: usize },
    /// The peer closed.
    Eof,
    /// Nothing to read now.
    Drained,
    /// A reset or another error.
    Failed,
}

pub(super) struct Conn {
    stream: Option<TcpStream>,
    pub phase: Phase,
    /// Generation, bumped on reconnect, so stale timers are ignored.
    pub gen: u64,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    pub parser: ResponseParser,
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

    /// Starts a new connection to `addr`, registered once, edge-triggered,
    /// for both directions. On `Err` the connection has no socket.
    pub fn open(
        &mut self,
        registry: &Registry,
        token: Token,
        addr: SocketAddr,
        head_only: bool,
    ) -> io::Result<()> {
        self.gen += 1;
        self.start = 0;
        self.end = 0;
        self.parser = ResponseParser::new(head_only);
        self.outstanding = 0;
        self.written = 0;
        self.reused = false;
        self.connect_started = Instant::now();
        let mut stream = TcpStream::connect(addr)?;
        registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
        self.stream = Some(stream);
        self.phase = Phase::Connecting;
        Ok(())
    }

    /// Drops the socket, if any.
    pub fn close(&mut self, registry: &Registry) {
        if let Some(mut stream) = self.stream.take() {
            let _ = registry.deregister(&mut stream);
        }
    }

    /// Drops the socket after a failed connect (it was never registered,
    /// or its registration ends with it).
    pub fn forget(&mut self) {
        self.stream = None;
    }

    /// Whether the connect has finished, after a writable event.
    pub fn finish_connect(&mut self) -> Connect {
        let Some(stream) = self.stream.as_ref() else {
            return Connect::Pending;
        };
        match stream.take_error() {
            Ok(None) => {}
            _ => return Connect::Failed,
        }
        match stream.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return Connect::Pending,
            Err(_) => return Connect::Failed,
        }
        let _ = stream.set_nodelay(true);
        Connect::Done
    }

    /// A refused connect shows up as readable with an error.
    pub fn connect_refused(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(|s| matches!(s.take_error(), Ok(Some(_)) | Err(_)))
    }

    /// Writes what is left of `batch` (from `written`).
    pub fn write(&mut self, batch: &[u8]) -> Wrote {
        let Some(stream) = self.stream.as_mut() else {
            return Wrote::Sent;
        };
        while self.written < batch.len() {
            match stream.write(&batch[self.written..]) {
                Ok(0) => return Wrote::Failed,
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Wrote::Sent,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Wrote::Failed,
            }
        }
        Wrote::Sent
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
        loop {
            return Some(match stream.read(&mut self.buf[self.end..]) {
                Ok(0) => Filled::Eof,
                Ok(n) => {
                    self.end += n;
                    Filled::Read { n, space }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Filled::Drained,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => Filled::Failed,
            });
        }
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
