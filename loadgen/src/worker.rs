//! One worker thread: its own epoll loop (mio), its own connections and its
//! own statistics. Nothing shared is touched per request; once per interval
//! the worker sends its interval's [`Stats`] to the collector.
//!
//! Syscalls per request are what a client on a shared 2-core machine pays
//! for, so the loop is written for few of them: each connection is
//! registered once, edge-triggered, for both directions; the next request is
//! written once the batch of events that completed its response is handled
//! (no re-arming of write interest, which costs wrk two `epoll_ctl` calls per
//! request); and a read that did
//! not fill the buffer is taken as having drained the socket (Linux reports
//! every arrival of data to an edge-triggered epoll), which saves the extra
//! `read` returning EAGAIN.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use crate::config::{Config, Model, Sched};
use crate::gate;
use crate::response::ResponseParser;
use crate::schedule;
use crate::stats::{ErrorKind, Stats};
use crate::timer::TimerFd;

/// The open model's timer, beside the connections' tokens (their indexes).
const TIMER: Token = Token(usize::MAX);

/// One interval's statistics from one worker.
#[derive(Debug)]
pub struct Snapshot {
    pub worker: usize,
    pub index: u64,
    pub start: Instant,
    pub end: Instant,
    pub stats: Stats,
    /// The worker has stopped; no snapshot with a higher index follows.
    pub last: bool,
}

/// What a worker is told.
pub struct WorkerSpec {
    pub id: usize,
    /// Index of this worker's first connection among all connections.
    pub first_conn: usize,
    pub conns: usize,
    /// Requests this worker may send (`None`: until the deadline).
    pub budget: Option<u64>,
    pub start: Instant,
    pub config: Arc<Config>,
    pub stop: Arc<AtomicBool>,
    pub tx: Sender<Snapshot>,
    /// Emptied statistics the collector hands back, to take the next
    /// interval's place without allocating (see `Worker::snapshot`).
    pub spare: Receiver<Stats>,
}

const READ_BUF: usize = 4096;
/// Reads of one connection per readiness event before the event loop gets
/// its turn again (256 KiB). Without a bound, a server that sends without
/// end (an endless body on loopback fills every read) kept the loop in one
/// connection forever: no timeout, no interval record, no end of the run
/// (`tests/hostile.rs` hung until killed). Normal responses are a few
/// hundred bytes, one read.
const READS_PER_EVENT: usize = 64;
/// Wait before reconnecting after a failed connect, so a refusing target is
/// not hammered in a tight loop.
const CONNECT_BACKOFF: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
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

struct Conn {
    stream: Option<TcpStream>,
    phase: Phase,
    /// Generation, bumped on reconnect, so stale timers are ignored.
    gen: u64,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    parser: ResponseParser,
    /// Requests written or being written and not yet answered.
    outstanding: usize,
    /// Bytes of the current batch written so far.
    written: usize,
    /// When the outstanding requests were due (open model) or sent (closed).
    sent_at: Instant,
    /// Open model: when the next request is due.
    next_due: Instant,
    connect_started: Instant,
    /// A request the server answered with 408 as it ended the connection:
    /// sent again, once, on the new connection, its latency still counted
    /// from this time (its original send or intended time).
    retry: Option<Instant>,
    /// The outstanding request is such a repeat (a second 408 counts).
    repeated: bool,
    /// The connection has carried a response: a close as the next request
    /// goes out is the server's idle close, not a refusal.
    reused: bool,
}

struct Worker {
    spec: WorkerSpec,
    poll: Poll,
    conns: Vec<Conn>,
    timers: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    batch: Vec<u8>,
    batch_len: usize,
    /// The request may be sent again (GET, HEAD, PUT, DELETE, OPTIONS).
    idempotent: bool,
    period: Duration,
    stats: Stats,
    /// Connections whose response completed during this batch of events;
    /// their next requests go out together after the batch (see `flush_ready`).
    ready: Vec<usize>,
    sent: u64,
    index: u64,
    interval_start: Instant,
    stopping: bool,
    /// Open model: the µs-precise wake-up (see [`crate::timer`]).
    timer: Option<TimerFd>,
    /// Connections left readable after `READS_PER_EVENT` reads: read again
    /// after the next (non-blocking) poll, since an edge-triggered poll
    /// does not report them again.
    unread: Vec<usize>,
}

/// Puts the calling thread under SCHED_BATCH.
///
/// Measured with nginx `return 200` and loadgen -c64 sharing one CPU of the
/// 2-core dev machine (2 A/B pairs of 3 s): 300k against 270k requests/s and
/// 1.31 against 1.61 client CPU us per request; wrk under `chrt --batch`
/// gains 4% the same way. The policy only changes who preempts whom on a
/// wake-up; it never starves the thread.
fn set_batch_policy() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler(0, ..) changes only the calling thread, with
    // a valid parameter block.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Runs a worker until the deadline, its budget, or the stop flag.
pub fn run(spec: WorkerSpec) -> io::Result<()> {
    let config = Arc::clone(&spec.config);
    if config.sched == Sched::Batch {
        if let Err(e) = set_batch_policy() {
            eprintln!(
                "loadgen: cannot use SCHED_BATCH ({e}); this worker runs under the default policy"
            );
        }
    }
    if matches!(config.model, Model::Open { .. }) {
        // The kernel may delay a timer of a normal thread by up to 50 µs to
        // batch wake-ups; the open model's sends must leave on time.
        // SAFETY: PR_SET_TIMERSLACK changes only the calling thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    }
    let (batch_len, period) = match config.model {
        Model::Closed { pipeline } => (pipeline, Duration::ZERO),
        Model::Open { rate } => (1, Duration::from_secs_f64(config.connections as f64 / rate)),
    };
    let batch = config.target.request.repeat(batch_len);
    let start = spec.start;
    let mut worker = Worker {
        poll: Poll::new()?,
        conns: Vec::with_capacity(spec.conns),
        timers: BinaryHeap::new(),
        batch,
        batch_len,
        idempotent: [&b"GET "[..], b"HEAD ", b"PUT ", b"DELETE ", b"OPTIONS "]
            .iter()
            .any(|m| config.target.request.starts_with(m)),
        period,
        stats: Stats::default(),
        ready: Vec::with_capacity(spec.conns),
        sent: 0,
        index: 0,
        interval_start: start,
        stopping: false,
        unread: Vec::new(),
        timer: match config.model {
            Model::Open { .. } => Some(TimerFd::new()?),
            Model::Closed { .. } => None,
        },
        spec,
    };
    if let Some(t) = &worker.timer {
        worker.poll.registry().register(
            &mut SourceFd(&t.as_raw_fd()),
            TIMER,
            Interest::READABLE,
        )?;
    }
    for i in 0..worker.spec.conns {
        // Spread the open model's schedules evenly over one period.
        let global = worker.spec.first_conn + i;
        worker.conns.push(Conn {
            stream: None,
            phase: Phase::Closed,
            gen: 0,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            parser: ResponseParser::new(config.head_only),
            outstanding: 0,
            written: 0,
            sent_at: start,
            next_due: schedule::first_due(start, period, global, config.connections),
            connect_started: start,
            retry: None,
            repeated: false,
            reused: false,
        });
        worker.connect(i);
    }
    worker.event_loop()
}

impl Worker {
    fn event_loop(&mut self) -> io::Result<()> {
        let config = Arc::clone(&self.spec.config);
        let deadline = config.total_duration().map(|d| self.spec.start + d);
        let mut events = Events::with_capacity(1024);
        let check_every = (config.timeout / 4).min(Duration::from_millis(100));
        let mut next_check = Instant::now() + check_every;
        loop {
            let now = Instant::now();
            // Boundaries on a fixed grid from the start, so that processes
            // started at one --start-at barrier close their intervals together
            // (no drift from the time each close takes).
            let boundary = self.spec.start + config.interval * (self.index as u32 + 1);
            if now >= boundary {
                // The interval the deadline closes ends there, however
                // late this thread woke to close it: no send is due past
                // the deadline, so the time after it (the thread waiting
                // for a core) is the client's, not the run's. Ending at
                // `now` lengthened a one-second step by the wake-up's
                // lateness and cut its 2xx/s by as much (10.1 ms late
                // fails a sweep step's 99 %-of-the-rate bound; six busy
                // loops on 2 cores made it up to 5.1 ms).
                self.snapshot(deadline.map_or(now, |d| now.min(d)), false);
            }
            if deadline.is_some_and(|d| now >= d) || self.spec.stop.load(Ordering::Relaxed) {
                break;
            }
            if self.finished() {
                break;
            }
            if now >= next_check {
                self.check_timeouts(now);
                next_check = now + check_every;
            }
            self.fire_timers(now);

            let mut wake = boundary.min(next_check);
            if let Some(Reverse((t, _, _))) = self.timers.peek() {
                wake = wake.min(*t);
            }
            if let Some(d) = deadline {
                wake = wake.min(d);
            }
            let now = Instant::now();
            let (arm, mut timeout) =
                schedule::plan(now, wake, self.timer.is_some(), config.spin_before);
            if !self.unread.is_empty() {
                timeout = Duration::ZERO;
            }
            if let (Some(at), Some(t)) = (arm, self.timer.as_mut()) {
                t.arm(at, now)?;
            }
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for event in events.iter() {
                if event.token() == TIMER {
                    if let Some(t) = self.timer.as_mut() {
                        t.clear();
                    }
                    continue;
                }
                let i = event.token().0;
                if event.is_writable() || event.is_error() {
                    self.on_writable(i);
                }
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    self.on_readable(i, event.is_read_closed() || event.is_error());
                }
            }
            for i in std::mem::take(&mut self.unread) {
                self.on_readable(i, false);
            }
            self.flush_ready();
        }
        // The closing fragment ends at the deadline at the latest: past it
        // (the last boundary already closed an interval) it has no length,
        // and the collector drops it, however late this thread got here.
        let end = Instant::now();
        self.snapshot(deadline.map_or(end, |d| end.min(d)), true);
        Ok(())
    }

    /// With a request budget: true once every request was sent and answered.
    fn finished(&self) -> bool {
        self.spec.budget.is_some_and(|b| self.sent >= b)
            && self
                .conns
                .iter()
                .all(|c| c.outstanding == 0 && c.retry.is_none())
    }

    fn budget_left(&self) -> bool {
        !self.stopping && self.spec.budget.is_none_or(|b| self.sent < b)
    }

    fn snapshot(&mut self, now: Instant, last: bool) {
        // A fresh `Stats` is three histograms of about 200 KB each. Allocating
        // it here, and the collector merging it into another fresh one and
        // freeing both, took the sending thread's CPU (the collector shares
        // it when loadgen is pinned to one) for 0.56-0.95 ms at every
        // interval boundary: loadgen -c 256 --rate 20000 --spin-before 1ms
        // against nginx on the other CPU, 2-vCPU VM, 2026-11-26, read a send
        // lateness max of 558-948 µs (median 715) in each 1 s interval. With
        // each snapshot's `Stats` emptied and handed back by the collector
        // (only the first intervals allocate) and one worker's snapshot
        // emitted without a merged copy (`run.rs`), 299-627 µs (median 327);
        // the rest is mostly the interval record's histogram encoding.
        let fresh = self.spec.spare.try_recv().unwrap_or_default();
        let stats = std::mem::replace(&mut self.stats, fresh);
        let _ = self.spec.tx.send(Snapshot {
            worker: self.spec.id,
            index: self.index,
            start: self.interval_start,
            end: now,
            stats,
            last,
        });
        self.index += 1;
        self.interval_start = now;
    }

    fn connect(&mut self, i: usize) {
        let addr = self.spec.config.target.addr;
        let conn = &mut self.conns[i];
        conn.gen += 1;
        conn.start = 0;
        conn.end = 0;
        conn.parser = ResponseParser::new(self.spec.config.head_only);
        conn.outstanding = 0;
        conn.written = 0;
        conn.reused = false;
        conn.connect_started = Instant::now();
        match TcpStream::connect(addr) {
            Ok(mut stream) => {
                let interest = Interest::READABLE | Interest::WRITABLE;
                if self
                    .poll
                    .registry()
                    .register(&mut stream, Token(i), interest)
                    .is_err()
                {
                    self.stats.error(ErrorKind::Connect);
                    self.backoff(i);
                    return;
                }
                let conn = &mut self.conns[i];
                conn.stream = Some(stream);
                conn.phase = Phase::Connecting;
            }
            Err(_) => {
                self.stats.error(ErrorKind::Connect);
                self.backoff(i);
            }
        }
    }

    fn backoff(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        conn.stream = None;
        conn.phase = Phase::Closed;
        conn.outstanding = 0;
        self.timers
            .push(Reverse((Instant::now() + CONNECT_BACKOFF, i, conn.gen)));
    }

    /// Drops the connection after an error: each outstanding request is one
    /// error of `kind`. Reconnects at once (or after a backoff for connect errors).
    fn fail(&mut self, i: usize, kind: ErrorKind) {
        let conn = &mut self.conns[i];
        let lost = conn.outstanding.max(1) as u64;
        if let Some(mut stream) = conn.stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
        }
        let was_connecting = conn.phase == Phase::Connecting;
        conn.outstanding = 0;
        self.stats.errors[kind as usize] += lost;
        if was_connecting || kind == ErrorKind::Connect {
            self.backoff(i);
        } else if !self.stopping {
            self.connect(i);
        }
    }

    /// The server closed the connection after a response (Connection: close).
    fn reopen(&mut self, i: usize) {
        if let Some(mut stream) = self.conns[i].stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
        }
        self.stats.reconnects += 1;
        self.connect(i);
    }

    fn fire_timers(&mut self, now: Instant) {
        while let Some(Reverse((t, i, gen))) = self.timers.peek().copied() {
            if t > now {
                break;
            }
            self.timers.pop();
            let conn = &self.conns[i];
            if conn.gen != gen {
                continue;
            }
            match conn.phase {
                Phase::Closed => self.connect(i),
                Phase::Waiting => self.send(i, now),
                _ => {}
            }
        }
    }

    fn check_timeouts(&mut self, now: Instant) {
        let timeout = self.spec.config.timeout;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let expired = match c.phase {
                Phase::Busy => c.outstanding > 0 && now.duration_since(c.sent_at) > timeout,
                Phase::Connecting => now.duration_since(c.connect_started) > timeout,
                _ => false,
            };
            if expired {
                let kind = if c.phase == Phase::Connecting {
                    ErrorKind::Connect
                } else {
                    ErrorKind::Timeout
                };
                self.fail(i, kind);
            }
        }
    }

    /// Sends the next requests of every connection answered in the last batch
    /// of events, together, as wrk does, so the server finds many requests
    /// per wake-up. Measured against writing each request as soon as its
    /// response is parsed (nginx `return 200` and loadgen -c64 sharing one
    /// CPU, 3 A/B pairs of 3 s on the 2-core dev machine): 1.3% less client
    /// CPU per request (1.611 vs 1.636 us) and 0.6% more requests/s.
    fn flush_ready(&mut self) {
        if self.ready.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut ready = std::mem::take(&mut self.ready);
        for &i in &ready {
            // Skip connections replaced since (their generation moved on).
            if self.conns[i].phase == Phase::Busy && self.conns[i].outstanding == 0 {
                self.next_request(i, now);
            }
        }
        ready.clear();
        self.ready = ready;
    }

    /// The connection is ready for its next request: sends it now (closed
    /// model), or when due (open model).
    fn next_request(&mut self, i: usize, now: Instant) {
        if !self.budget_left() {
            self.conns[i].phase = Phase::Done;
            return;
        }
        match self.spec.config.model {
            Model::Closed { .. } => match self.gate_opens(now) {
                None => self.send(i, now),
                Some(at) => {
                    let conn = &mut self.conns[i];
                    conn.phase = Phase::Waiting;
                    self.timers.push(Reverse((at, i, conn.gen)));
                }
            },
            Model::Open { .. } => {
                let due = self.conns[i].next_due;
                if due <= now {
                    self.send(i, now);
                } else {
                    let conn = &mut self.conns[i];
                    conn.phase = Phase::Waiting;
                    self.timers.push(Reverse((due, i, conn.gen)));
                }
            }
        }
    }

    /// With `--active-half`: when this worker's half next opens (`None`:
    /// open now, or no gate).
    fn gate_opens(&self, now: Instant) -> Option<Instant> {
        let g = self.spec.config.gate?;
        gate::next_open(self.spec.start, g.period, g.half, now)
    }

    fn send(&mut self, i: usize, now: Instant) {
        if !self.budget_left() {
            self.conns[i].phase = Phase::Done;
            return;
        }
        let open = matches!(self.spec.config.model, Model::Open { .. });
        let conn = &mut self.conns[i];
        if open {
            // Latency counts from when the request was due, not when it could
            // be sent. It is late if it fell due while the connection was busy.
            let busy = conn.phase == Phase::Busy;
            let due = schedule::take(&mut conn.next_due, self.period, Instant::now());
            if busy && due.lateness > Duration::from_millis(1) {
                self.stats.late += 1;
            }
            self.stats.sent_late(due.lateness, busy);
            conn.sent_at = due.intended;
        } else {
            conn.sent_at = now;
        }
        conn.phase = Phase::Busy;
        conn.outstanding = self.batch_len;
        conn.written = 0;
        conn.repeated = false;
        self.sent += self.batch_len as u64;
        self.write_pending(i);
    }

    /// Sends again the request a 408 cut off (see `Conn::retry`).
    fn repeat(&mut self, i: usize, at: Instant) {
        let conn = &mut self.conns[i];
        conn.phase = Phase::Busy;
        conn.outstanding = 1;
        conn.written = 0;
        conn.sent_at = at;
        conn.repeated = true;
        self.write_pending(i);
    }

    fn write_pending(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        let Some(stream) = conn.stream.as_mut() else {
            return;
        };
        while conn.written < self.batch.len() {
            match stream.write(&self.batch[conn.written..]) {
                Ok(0) => return self.fail(i, ErrorKind::Write),
                Ok(n) => conn.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail(i, ErrorKind::Write),
            }
        }
    }

    fn on_writable(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        match conn.phase {
            Phase::Connecting => {
                let Some(stream) = conn.stream.as_ref() else {
                    return;
                };
                match stream.take_error() {
                    Ok(None) => {}
                    _ => return self.fail(i, ErrorKind::Connect),
                }
                match stream.peer_addr() {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                    Err(_) => return self.fail(i, ErrorKind::Connect),
                }
                let _ = stream.set_nodelay(true);
                conn.phase = Phase::Waiting;
                if let Some(at) = conn.retry.take() {
                    self.repeat(i, at);
                } else {
                    self.next_request(i, Instant::now());
                }
            }
            Phase::Busy if conn.written < self.batch.len() => self.write_pending(i),
            _ => {}
        }
    }

    /// Reads what arrived. `closing`: the event also reported the peer's
    /// FIN (or an error), which must be read too, so the short-read shortcut
    /// does not apply (regression: a response cut short by a close was
    /// otherwise left waiting for a timeout).
    fn on_readable(&mut self, i: usize, closing: bool) {
        if self.conns[i].phase == Phase::Connecting {
            // A refused connect shows up as readable + error.
            if let Some(stream) = self.conns[i].stream.as_ref() {
                if matches!(stream.take_error(), Ok(Some(_)) | Err(_)) {
                    return self.fail(i, ErrorKind::Connect);
                }
            }
            return;
        }
        for _ in 0..READS_PER_EVENT {
            let conn = &mut self.conns[i];
            let Some(stream) = conn.stream.as_mut() else {
                return;
            };
            if conn.end == conn.buf.len() {
                if conn.start > 0 {
                    conn.buf.copy_within(conn.start..conn.end, 0);
                    conn.end -= conn.start;
                    conn.start = 0;
                } else {
                    // A response head larger than the buffer: grow it.
                    let mut bigger = vec![0u8; conn.buf.len() * 2].into_boxed_slice();
                    bigger[..conn.end].copy_from_slice(&conn.buf[..conn.end]);
                    conn.buf = bigger;
                }
            }
            let space = conn.buf.len() - conn.end;
            match stream.read(&mut conn.buf[conn.end..]) {
                Ok(0) => return self.on_eof(i),
                Ok(n) => {
                    conn.end += n;
                    self.stats.bytes_read += n as u64;
                    if !self.consume(i) {
                        return;
                    }
                    if n < space && !closing {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A reset of a connection with nothing outstanding lost nothing.
                Err(_) if self.conns[i].outstanding == 0 => return self.idle_closed(i, None),
                Err(_) if self.crossed_idle_close(i) => return self.repeat_after_idle_close(i),
                Err(_) => return self.fail(i, ErrorKind::Read),
            }
        }
        // Still readable: the rest after the event loop's next turn.
        self.unread.push(i);
    }

    fn on_eof(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        if let Some(done) = conn.parser.eof() {
            let latency = conn.sent_at.elapsed().as_micros() as u64;
            self.stats.response(done.status, latency);
            conn.outstanding = conn.outstanding.saturating_sub(1);
        }
        if self.crossed_idle_close(i) {
            self.repeat_after_idle_close(i);
        } else if self.conns[i].outstanding > 0 {
            self.fail(i, ErrorKind::Closed);
        } else if self.conns[i].phase == Phase::Busy {
            // Closed right after the last answer of a batch: as after
            // `Connection: close`.
            self.reopen(i);
        } else {
            // The server closed an idle connection (keep-alive timeout).
            self.idle_closed(i, None);
        }
    }

    /// True when the connection closed (or was reset) with one idempotent
    /// request out and not a byte of its answer, on a connection that had
    /// already carried a response: the server's idle close crossed the
    /// request (RFC 9112 §9.3.1 lets a client retry it), so it goes again,
    /// once, on a new connection.
    fn crossed_idle_close(&self, i: usize) -> bool {
        let c = &self.conns[i];
        self.idempotent
            && self.batch_len == 1
            && c.outstanding == 1
            && c.reused
            && !c.repeated
            && c.start == c.end
            && c.parser.idle()
            && !self.stopping
    }

    fn repeat_after_idle_close(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        conn.retry = Some(conn.sent_at);
        conn.outstanding = 0;
        self.idle_closed(i, None);
    }

    /// The server ended a connection with nothing outstanding, with a
    /// response nobody asked for (`status`, e.g. ntex's 408 after its client
    /// timeout) or without: counted once, under its own kind, and reopened.
    fn idle_closed(&mut self, i: usize, status: Option<u16>) {
        self.stats.closed_idle(status);
        self.reopen(i);
    }

    /// Parses what was read. Returns false if the connection was replaced.
    fn consume(&mut self, i: usize) -> bool {
        loop {
            let conn = &mut self.conns[i];
            let (used, done) = match conn.parser.parse(&conn.buf[conn.start..conn.end]) {
                Ok(r) => r,
                Err(_) => {
                    self.fail(i, ErrorKind::Parse);
                    return false;
                }
            };
            conn.start += used;
            if conn.start == conn.end {
                conn.start = 0;
                conn.end = 0;
            }
            if let Some(done) = done {
                if conn.outstanding == 0 {
                    // A response nobody asked for: the server is ending an
                    // idle connection (it closes next, whatever it said).
                    self.idle_closed(i, Some(done.status));
                    return false;
                }
                if done.status == 408
                    && self.batch_len == 1
                    && conn.outstanding == 1
                    && !conn.repeated
                    && !self.stopping
                {
                    // The server timed the connection out as our request
                    // crossed its 408 (RFC 9110 §15.5.9: the client may
                    // repeat it): an idle close, and the request goes again.
                    conn.retry = Some(conn.sent_at);
                    conn.outstanding = 0;
                    self.idle_closed(i, Some(408));
                    return false;
                }
                let now = Instant::now();
                let latency = now.duration_since(conn.sent_at).as_micros() as u64;
                conn.reused = true;
                conn.outstanding -= 1;
                let finished_batch = conn.outstanding == 0;
                self.stats.response(done.status, latency);
                if done.close {
                    let lost = self.conns[i].outstanding as u64;
                    self.stats.errors[ErrorKind::Closed as usize] += lost;
                    self.conns[i].outstanding = 0;
                    self.reopen(i);
                    return false;
                }
                if finished_batch {
                    self.ready.push(i);
                }
            } else if used == 0 {
                return true;
            }
        }
    }
}
