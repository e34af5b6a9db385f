//! Statistics a worker owns and the collector merges: nothing here is shared
//! while requests run.

use hdrhistogram::Histogram;

/// Latencies are recorded in microseconds, up to one hour, 3 significant digits:
/// a fixed-size histogram whatever the run length.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// Kinds of failed request, in the order they are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Connect,
    Read,
    Write,
    Timeout,
    Parse,
    Closed,
    /// A TLS handshake that failed: a certificate refused, a protocol
    /// error, a peer that closed in the middle of it.
    Tls,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::Connect,
        ErrorKind::Read,
        ErrorKind::Write,
        ErrorKind::Timeout,
        ErrorKind::Parse,
        ErrorKind::Closed,
        ErrorKind::Tls,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Read => "read",
            ErrorKind::Write => "write",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Parse => "parse",
            ErrorKind::Closed => "closed",
            ErrorKind::Tls => "tls",
        }
    }
}

/// Counts and latencies over some span (one interval, or a whole run).
#[derive(Debug, Clone)]
pub struct Stats {
    /// Responses per status code (index = code, 100..=599).
    pub status: Box<[u64; 600]>,
    /// Errors per [`ErrorKind`], in `ErrorKind::ALL` order.
    pub errors: [u64; 7],
    /// Requests whose intended send time passed while their connection was
    /// still busy (open model only).
    pub late: u64,
    /// Connections re-opened after the server closed one (`Connection: close`).
    pub reconnects: u64,
    /// Connections established (with https, once their handshake ended).
    pub connects: u64,
    /// TLS handshakes that ended, and their time in all (µs, from the
    /// connect's start).
    pub handshakes: u64,
    pub handshake_us: u64,
    /// The TLS version and cipher suite the first handshake agreed on.
    pub tls: Option<(&'static str, &'static str)>,
    pub bytes_read: u64,
    /// Latency of every response, in microseconds.
    pub latency_us: Histogram<u64>,
    /// Open model: how long after its intended time each request left, µs.
    pub send_lateness_us: Histogram<u64>,
    /// Open model: the lateness of requests that fell due while their
    /// connection was idle, µs: the client's own delay (a late wake-up, a
    /// busy loop), apart from the server's (a request due while its
    /// connection still waits for a response leaves late because of the
    /// server, and that wait is already in its corrected latency).
    pub client_lateness_us: Histogram<u64>,
    /// Idle connections the server ended (nothing outstanding): by the
    /// status of the response it sent first (index 0: none, a plain close
    /// or reset). Not errors: no request was lost.
    pub idle_closed: Box<[u64; 600]>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            status: Box::new([0; 600]),
            errors: [0; 7],
            late: 0,
            reconnects: 0,
            connects: 0,
            handshakes: 0,
            handshake_us: 0,
            tls: None,
            bytes_read: 0,
            latency_us: new_histogram(),
            send_lateness_us: new_histogram(),
            client_lateness_us: new_histogram(),
            idle_closed: Box::new([0; 600]),
        }
    }
}

impl Stats {
    /// Records one complete response.
    #[inline]
    pub fn response(&mut self, status: u16, latency_us: u64) {
        let idx = if (100..600).contains(&status) {
            status as usize
        } else {
            0
        };
        self.status[idx] += 1;
        self.latency_us.saturating_record(latency_us.max(1));
    }

    /// The server ended an idle connection, with a response (`Some(status)`,
    /// e.g. 408) or without.
    pub fn closed_idle(&mut self, status: Option<u16>) {
        let idx = status
            .filter(|s| (100..600).contains(s))
            .map_or(0, usize::from);
        self.idle_closed[idx] += 1;
    }

    /// Idle connections the server ended.
    pub fn idle_closed_total(&self) -> u64 {
        self.idle_closed.iter().sum()
    }

    #[inline]
    pub fn error(&mut self, kind: ErrorKind) {
        self.errors[kind as usize] += 1;
    }

    /// Adds another span's counts into this one.
    pub fn merge(&mut self, other: &Stats) {
        for (a, b) in self.status.iter_mut().zip(other.status.iter()) {
            *a += b;
        }
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        for (a, b) in self.idle_closed.iter_mut().zip(other.idle_closed.iter()) {
            *a += b;
        }
        self.late += other.late;
        self.reconnects += other.reconnects;
        self.connects += other.connects;
        self.handshakes += other.handshakes;
        self.handshake_us += other.handshake_us;
        self.tls = self.tls.or(other.tls);
        self.bytes_read += other.bytes_read;
        self.latency_us
            .add(&other.latency_us)
            .expect("histograms share bounds");
        self.send_lateness_us
            .add(&other.send_lateness_us)
            .expect("histograms share bounds");
        self.client_lateness_us
            .add(&other.client_lateness_us)
            .expect("histograms share bounds");
    }

    /// Open model: one request left `lateness` after its intended time;
    /// `conn_busy` when it fell due while its connection was still busy.
    pub fn sent_late(&mut self, lateness: std::time::Duration, conn_busy: bool) {
        let us = lateness.as_micros().min(u64::MAX as u128) as u64;
        self.send_lateness_us.saturating_record(us);
        if !conn_busy {
            self.client_lateness_us.saturating_record(us);
        }
    }

    /// Clears the counts, keeping the allocations.
    pub fn reset(&mut self) {
        self.status.fill(0);
        self.idle_closed.fill(0);
        self.errors = [0; 7];
        self.late = 0;
        self.reconnects = 0;
        self.connects = 0;
        self.handshakes = 0;
        self.handshake_us = 0;
        self.tls = None;
        self.bytes_read = 0;
        self.latency_us.reset();
        self.send_lateness_us.reset();
        self.client_lateness_us.reset();
    }

    /// Responses with a 2xx status: the only ones counted as throughput.
    pub fn ok(&self) -> u64 {
        self.status[200..300].iter().sum()
    }

    /// Responses by status class: (1xx, 3xx, 4xx, 5xx, other).
    pub fn non_ok_by_class(&self) -> [u64; 5] {
        let class = |r: std::ops::Range<usize>| self.status[r].iter().sum::<u64>();
        [
            class(100..200),
            class(300..400),
            class(400..500),
            class(500..600),
            self.status[0],
        ]
    }

    pub fn non_ok(&self) -> u64 {
        self.non_ok_by_class().iter().sum()
    }

    pub fn responses(&self) -> u64 {
        self.status.iter().sum()
    }

    pub fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_everything() {
        let mut a = Stats::default();
        let mut b = Stats::default();
        a.response(200, 100);
        b.response(204, 300);
        b.response(503, 10);
        b.error(ErrorKind::Timeout);
        b.bytes_read = 7;
        a.merge(&b);
        assert_eq!(
            (a.ok(), a.non_ok(), a.error_total(), a.bytes_read),
            (2, 1, 1, 7)
        );
        assert_eq!(a.non_ok_by_class(), [0, 0, 0, 1, 0]);
        assert_eq!(a.latency_us.len(), 3);
        a.reset();
        assert_eq!((a.responses(), a.latency_us.len()), (0, 0));
    }
}
