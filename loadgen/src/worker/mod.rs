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
//!
//! The worker ties three rooms together: `conn` does each connection's
//! I/O, `agenda` says when each connection acts next, `tally` counts and
//! hands each interval to the collector. What is left here is the event
//! loop and the HTTP/1.1 exchange: which request goes when, what an answer,
//! a close or an error means for the counts.

mod agenda;
mod conn;
mod tally;

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use crate::config::{Config, Model, Sched};
use crate::gate;
use crate::schedule;
use crate::stats::{ErrorKind, Stats};
use agenda::{Agenda, CONNECT_BACKOFF};
use conn::{Conn, Connect, Filled, Phase, Wrote};
pub use tally::Snapshot;
use tally::Tally;

/// The open model's timer, beside the connections' tokens (their indexes).
const TIMER: Token = Token(usize::MAX);

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
    /// interval's place without allocating (see `Tally::snapshot`).
    pub spare: Receiver<Stats>,
}

/// Reads of one connection per readiness event before the event loop gets
/// its turn again (256 KiB). Without a bound, a server that sends without
/// end (an endless body on loopback fills every read) kept the loop in one
/// connection forever: no timeout, no interval record, no end of the run
/// (`tests/hostile.rs` hung until killed). Normal responses are a few
/// hundred bytes, one read.
const READS_PER_EVENT: usize = 64;

struct Worker {
    config: Arc<Config>,
    start: Instant,
    stop: Arc<AtomicBool>,
    poll: Poll,
    conns: Vec<Conn>,
    agenda: Agenda,
    tally: Tally,
    batch: Vec<u8>,
    batch_len: usize,
    /// The request may be sent again (GET, HEAD, PUT, DELETE, OPTIONS).
    idempotent: bool,
    period: Duration,
    stopping: bool,
}

/// Runs a worker until the deadline, its budget, or the stop flag.
pub fn run(spec: WorkerSpec) -> io::Result<()> {
    let config = Arc::clone(&spec.config);
    if config.sched == Sched::Batch {
        if let Err(e) = agenda::set_batch_policy() {
            eprintln!(
                "loadgen: cannot use SCHED_BATCH ({e}); this worker runs under the default policy"
            );
        }
    }
    let open = matches!(config.model, Model::Open { .. });
    if open {
        agenda::precise_timers();
    }
    let (batch_len, period) = match config.model {
        Model::Closed { pipeline } => (pipeline, Duration::ZERO),
        Model::Open { rate } => (1, Duration::from_secs_f64(config.connections as f64 / rate)),
    };
    let start = spec.start;
    let mut worker = Worker {
        poll: Poll::new()?,
        conns: Vec::with_capacity(spec.conns),
        agenda: Agenda::new(spec.conns, open)?,
        tally: Tally::new(spec.id, spec.budget, start, spec.tx, spec.spare),
        batch: config.target.request.repeat(batch_len),
        batch_len,
        idempotent: [&b"GET "[..], b"HEAD ", b"PUT ", b"DELETE ", b"OPTIONS "]
            .iter()
            .any(|m| config.target.request.starts_with(m)),
        period,
        stopping: false,
        start,
        stop: spec.stop,
        config: Arc::clone(&config),
    };
    if let Some(t) = &worker.agenda.timer {
        worker.poll.registry().register(
            &mut SourceFd(&t.as_raw_fd()),
            TIMER,
            Interest::READABLE,
        )?;
    }
    for i in 0..spec.conns {
        // Spread the open model's schedules evenly over one period.
        let global = spec.first_conn + i;
        let due = schedule::first_due(start, period, global, config.connections);
        worker.conns.push(Conn::new(config.head_only, start, due));
        worker.connect(i);
    }
    worker.event_loop()
}

impl Worker {
    fn event_loop(&mut self) -> io::Result<()> {
        let config = Arc::clone(&self.config);
        let deadline = config.total_duration().map(|d| self.start + d);
        let mut events = Events::with_capacity(1024);
        let check_every = (config.timeout / 4).min(Duration::from_millis(100));
        let mut next_check = Instant::now() + check_every;
        loop {
            let now = Instant::now();
            // Boundaries on a fixed grid from the start, so that processes
            // started at one --start-at barrier close their intervals together
            // (no drift from the time each close takes).
            let boundary = self.start + config.interval * (self.tally.index as u32 + 1);
            if now >= boundary {
                // The interval the deadline closes ends there, however
                // late this thread woke to close it: no send is due past
                // the deadline, so the time after it (the thread waiting
                // for a core) is the client's, not the run's. Ending at
                // `now` lengthened a one-second step by the wake-up's
                // lateness and cut its 2xx/s by as much (10.1 ms late
                // fails a sweep step's 99 %-of-the-rate bound; six busy
                // loops on 2 cores made it up to 5.1 ms).
                self.tally
                    .snapshot(deadline.map_or(now, |d| now.min(d)), false);
            }
            if deadline.is_some_and(|d| now >= d) || self.stop.load(Ordering::Relaxed) {
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

            let mut wake = self.agenda.wake(boundary.min(next_check));
            if let Some(d) = deadline {
                wake = wake.min(d);
            }
            let now = Instant::now();
            let (arm, mut timeout) =
                schedule::plan(now, wake, self.agenda.timer.is_some(), config.spin_before);
            if !self.agenda.unread.is_empty() {
                timeout = Duration::ZERO;
            }
            if let (Some(at), Some(t)) = (arm, self.agenda.timer.as_mut()) {
                t.arm(at, now)?;
            }
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for event in events.iter() {
                if event.token() == TIMER {
                    if let Some(t) = self.agenda.timer.as_mut() {
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
            for i in std::mem::take(&mut self.agenda.unread) {
                self.on_readable(i, false);
            }
            self.flush_ready();
        }
        // The closing fragment ends at the deadline at the latest: past it
        // (the last boundary already closed an interval) it has no length,
        // and the collector drops it, however late this thread got here.
        let end = Instant::now();
        self.tally
            .snapshot(deadline.map_or(end, |d| end.min(d)), true);
        Ok(())
    }

    /// With a request budget: true once every request was sent and answered.
    fn finished(&self) -> bool {
        self.tally.budget_spent()
            && self
                .conns
                .iter()
                .all(|c| c.outstanding == 0 && c.retry.is_none())
    }

    fn budget_left(&self) -> bool {
        !self.stopping && self.tally.within_budget()
    }

    fn connect(&mut self, i: usize) {
        let addr = self.config.target.addr;
        let head_only = self.config.head_only;
        let tls = self.config.target.tls.as_ref();
        if self.conns[i]
            .open(self.poll.registry(), Token(i), addr, head_only, tls)
            .is_err()
        {
            self.tally.stats.error(ErrorKind::Connect);
            self.backoff(i);
        }
    }

    fn backoff(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        conn.forget();
        conn.phase = Phase::Closed;
        conn.outstanding = 0;
        self.agenda
            .at(Instant::now() + CONNECT_BACKOFF, i, conn.gen);
    }

    /// Drops the connection after an error: each outstanding request is one
    /// error of `kind`. Reconnects at once (or after a backoff for connect errors).
    fn fail(&mut self, i: usize, kind: ErrorKind) {
        let conn = &mut self.conns[i];
        let lost = conn.outstanding.max(1) as u64;
        conn.close(self.poll.registry());
        let was_connecting = conn.phase == Phase::Connecting;
        conn.outstanding = 0;
        self.tally.stats.errors[kind as usize] += lost;
        if was_connecting || kind == ErrorKind::Connect {
            self.backoff(i);
        } else if !self.stopping {
            self.connect(i);
        }
    }

    /// The server closed the connection after a response (Connection: close).
    fn reopen(&mut self, i: usize) {
        self.conns[i].close(self.poll.registry());
        self.tally.stats.reconnects += 1;
        self.connect(i);
    }

    fn fire_timers(&mut self, now: Instant) {
        while let Some((i, gen)) = self.agenda.pop_due(now) {
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
        let timeout = self.config.timeout;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let expired = match c.phase {
                Phase::Busy => c.outstanding > 0 && now.duration_since(c.sent_at) > timeout,
                Phase::Connecting => now.duration_since(c.connect_started) > timeout,
                _ => false,
            };
            if expired {
                let kind = match c.phase {
                    // A server that never finishes the handshake.
                    Phase::Connecting if c.in_handshake() => ErrorKind::Tls,
                    Phase::Connecting => ErrorKind::Connect,
                    _ => ErrorKind::Timeout,
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
        if self.agenda.ready.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut ready = std::mem::take(&mut self.agenda.ready);
        for &i in &ready {
            // Skip connections replaced since (their generation moved on).
            if self.conns[i].phase == Phase::Busy && self.conns[i].outstanding == 0 {
                self.next_request(i, now);
            }
        }
        ready.clear();
        self.agenda.ready = ready;
    }

    /// The connection is ready for its next request: sends it now (closed
    /// model), or when due (open model).
    fn next_request(&mut self, i: usize, now: Instant) {
        if !self.budget_left() {
            self.conns[i].phase = Phase::Done;
            return;
        }
        let at = match self.config.model {
            Model::Closed { .. } => self.gate_opens(now),
            Model::Open { .. } => Some(self.conns[i].next_due).filter(|due| *due > now),
        };
        match at {
            None => self.send(i, now),
            Some(at) => {
                let conn = &mut self.conns[i];
                conn.phase = Phase::Waiting;
                self.agenda.at(at, i, conn.gen);
            }
        }
    }

    /// With `--active-half`: when this worker's half next opens (`None`:
    /// open now, or no gate).
    fn gate_opens(&self, now: Instant) -> Option<Instant> {
        let g = self.config.gate?;
        gate::next_open(self.start, g.period, g.half, now)
    }

    fn send(&mut self, i: usize, now: Instant) {
        if !self.budget_left() {
            self.conns[i].phase = Phase::Done;
            return;
        }
        let open = matches!(self.config.model, Model::Open { .. });
        let conn = &mut self.conns[i];
        if open {
            // Latency counts from when the request was due, not when it could
            // be sent. It is late if it fell due while the connection was busy.
            let busy = conn.phase == Phase::Busy;
            let due = schedule::take(&mut conn.next_due, self.period, Instant::now());
            if busy && due.lateness > Duration::from_millis(1) {
                self.tally.stats.late += 1;
            }
            self.tally.stats.sent_late(due.lateness, busy);
            conn.sent_at = due.intended;
        } else {
            conn.sent_at = now;
        }
        conn.phase = Phase::Busy;
        conn.outstanding = self.batch_len;
        conn.written = 0;
        conn.repeated = false;
        self.tally.sent += self.batch_len as u64;
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
        if let Wrote::Failed = self.conns[i].write(&self.batch) {
            self.fail(i, ErrorKind::Write);
        }
    }

    fn on_writable(&mut self, i: usize) {
        let conn = &self.conns[i];
        match conn.phase {
            Phase::Connecting => self.progress_connect(i),
            Phase::Busy if conn.has_unsent(self.batch.len()) => self.write_pending(i),
            _ => {}
        }
    }

    /// Takes a connect (and with https its handshake) as far as it goes;
    /// once done, the connection's first request goes (or the one a close
    /// cut off).
    fn progress_connect(&mut self, i: usize) {
        match self.conns[i].finish_connect() {
            Connect::Pending => {}
            Connect::Failed => self.fail(i, ErrorKind::Connect),
            Connect::Refused => self.fail(i, ErrorKind::Tls),
            Connect::Done => {
                let stats = &mut self.tally.stats;
                stats.connects += 1;
                let conn = &mut self.conns[i];
                if conn.is_tls() {
                    stats.handshakes += 1;
                    stats.handshake_us += conn.connect_started.elapsed().as_micros() as u64;
                    stats.tls = stats.tls.or(conn.agreed());
                }
                conn.phase = Phase::Waiting;
                if let Some(at) = conn.retry.take() {
                    self.repeat(i, at);
                } else {
                    self.next_request(i, Instant::now());
                }
            }
        }
    }

    /// Reads what arrived. `closing`: the event also reported the peer's
    /// FIN (or an error), which must be read too, so the short-read shortcut
    /// does not apply (regression: a response cut short by a close was
    /// otherwise left waiting for a timeout).
    fn on_readable(&mut self, i: usize, closing: bool) {
        if self.conns[i].phase == Phase::Connecting {
            // A refused connect shows up as readable with an error; a
            // handshake goes on with what arrived.
            return self.progress_connect(i);
        }
        for _ in 0..READS_PER_EVENT {
            let Some(filled) = self.conns[i].fill() else {
                return;
            };
            match filled {
                Filled::Eof => return self.on_eof(i),
                Filled::Read { n, drained } => {
                    self.tally.stats.bytes_read += n as u64;
                    if !self.consume(i) {
                        return;
                    }
                    if drained && !closing {
                        return;
                    }
                }
                Filled::Drained => return,
                // A reset of a connection with nothing outstanding lost nothing.
                Filled::Failed if self.conns[i].outstanding == 0 => {
                    return self.idle_closed(i, None)
                }
                Filled::Failed if self.crossed_idle_close(i) => {
                    return self.repeat_after_idle_close(i)
                }
                Filled::Failed => return self.fail(i, ErrorKind::Read),
            }
        }
        // Still readable: the rest after the event loop's next turn.
        self.agenda.unread.push(i);
    }

    fn on_eof(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        if let Some(done) = conn.parser.eof() {
            let latency = conn.sent_at.elapsed().as_micros() as u64;
            self.tally.stats.response(done.status, latency);
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
            && c.nothing_unparsed()
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
        self.tally.stats.closed_idle(status);
        self.reopen(i);
    }

    /// Parses what was read. Returns false if the connection was replaced.
    fn consume(&mut self, i: usize) -> bool {
        loop {
            let conn = &mut self.conns[i];
            let Ok((used, done)) = conn.parse() else {
                self.fail(i, ErrorKind::Parse);
                return false;
            };
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
                conn.answered += 1;
                let finished_batch = conn.outstanding == 0;
                let churn = finished_batch
                    && self
                        .config
                        .requests_per_connection
                        .is_some_and(|n| conn.answered >= n);
                self.tally.stats.response(done.status, latency);
                if done.close {
                    let lost = self.conns[i].outstanding as u64;
                    self.tally.stats.errors[ErrorKind::Closed as usize] += lost;
                    self.conns[i].outstanding = 0;
                    self.reopen(i);
                    return false;
                }
                if churn {
                    // Connection churn: this one has given its answers; a
                    // new one takes its place (in the open model, the time
                    // it takes is in the next request's latency).
                    self.conns[i].close(self.poll.registry());
                    if self.budget_left() {
                        self.connect(i);
                    } else {
                        // Nothing more to send: no new connection.
                        self.conns[i].phase = Phase::Done;
                    }
                    return false;
                }
                if finished_batch {
                    self.agenda.ready.push(i);
                }
            } else if used == 0 {
                return true;
            }
        }
    }
}
