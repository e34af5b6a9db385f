//! `--slowloris EVERY`: slow clients. Opens `-c` connections and sends on
//! each a request head one byte every EVERY, never finishing it: the
//! request line and headers of the target's request, then `X-Slow: 1`
//! header lines without end, never the blank line. A connection the server
//! ends (a close, a reset, a response such as 408 first) is counted with
//! how long it lived and opened again, so `-c` stay open as far as the
//! server allows. Runs for `-d`; SIGINT or SIGTERM ends it early. One
//! thread, one epoll loop (mio), a fixed few hundred bytes per connection:
//! bounded in time and memory.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::exit;
use crate::output::Format;
use crate::record::{Record, SlowLifetime, SlowRecord};
use crate::request::Target;
use crate::run::RunError;

/// What a slow-client run needs.
#[derive(Debug, Clone)]
pub struct SlowConfig {
    pub target: Target,
    pub connections: usize,
    /// One byte per connection this often.
    pub every: Duration,
    pub duration: Duration,
    pub shard: Option<String>,
}

/// `--slowloris`: prints one record at the end. Exit 1 when no slow
/// connection could be opened.
pub fn main(config: SlowConfig, format: Format) -> ExitCode {
    let stop = match exit::prepare(config.connections, 1) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let summary = match slowloris(&config, &stop) {
        Ok(s) => s,
        Err(e) => return exit::failed(e),
    };
    let written = (|| -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        match format {
            Format::Jsonl => {
                serde_json::to_writer(&mut out, &Record::SlowSummary(summary.clone()))?
            }
            Format::Text => write!(out, "{}", summary.text_line())?,
        }
        writeln!(out)?;
        out.flush()
    })();
    if let Err(e) = written {
        return exit::failed(format!("writing the summary: {e}"));
    }
    if summary.opened == 0 {
        return exit::failed(format!(
            "no slow connection could be opened ({} connects failed)",
            summary.connect_errors
        ));
    }
    ExitCode::SUCCESS
}

/// One slow connection.
struct Conn {
    stream: Option<TcpStream>,
    /// Bumped on reopen, so a stale due time is ignored.
    gen: u64,
    opened_at: Instant,
    /// Bytes of the head sent so far.
    sent: usize,
    connected: bool,
    /// The status of a response the server sent before closing.
    answered: Option<u16>,
}

/// The bytes a slow connection sends, in order, one at a time: the head of
/// the target's request without its final blank line, then header lines
/// without end.
struct Trickle {
    head: Vec<u8>,
}

const PADDING: &[u8] = b"X-Slow: 1\r\n";

impl Trickle {
    fn of(target: &Target) -> Trickle {
        let req = &target.request;
        let end = req
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(req.len(), |p| p + 2);
        Trickle {
            head: req[..end].to_vec(),
        }
    }

    fn byte(&self, n: usize) -> u8 {
        if n < self.head.len() {
            self.head[n]
        } else {
            PADDING[(n - self.head.len()) % PADDING.len()]
        }
    }
}

/// Runs the slow clients; returns the `slow_summary` record.
pub fn slowloris(cfg: &SlowConfig, stop: &AtomicBool) -> Result<SlowRecord, RunError> {
    let start_wall = SystemTime::now();
    let started = Instant::now();
    let deadline = started + cfg.duration;
    let trickle = Trickle::of(&cfg.target);
    let mut poll = Poll::new().map_err(|e| RunError::Worker(format!("epoll: {e}")))?;
    let mut events = Events::with_capacity(1024);
    let mut lifetimes =
        Histogram::<u64>::new_with_bounds(1, 3_600_000, 3).expect("valid histogram bounds");
    let mut rec = SlowRecord {
        shard: cfg.shard.clone(),
        connections: cfg.connections as u64,
        every_ms: cfg.every.as_secs_f64() * 1e3,
        start_unix_ms: start_wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        ..SlowRecord::default()
    };
    let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
    let (mut conns, mut due) = open_all(&poll, cfg, started, &mut rec);
    let mut scratch = [0u8; 1024];
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        // Bytes that fell due.
        while let Some(Reverse((at, i, gen))) = due.peek().copied() {
            if at > now {
                break;
            }
            due.pop();
            let c = &mut conns[i];
            if c.gen != gen {
                continue;
            }
            if c.stream.is_none() {
                // Its connect failed a period ago: try again.
                open(&poll, cfg, c, i, &mut rec);
                due.push(Reverse((now + cfg.every, i, c.gen)));
                continue;
            }
            if c.connected {
                if let Some(s) = c.stream.as_mut() {
                    match s.write(&[trickle.byte(c.sent)]) {
                        Ok(1) => {
                            c.sent += 1;
                            rec.bytes_sent += 1;
                        }
                        Ok(_) => {}
                        Err(e) if e.kind() == IoKind::WouldBlock => {}
                        Err(_) => {
                            ended(c, now, &mut rec, &mut lifetimes, &mut statuses);
                            open(&poll, cfg, c, i, &mut rec);
                            due.push(Reverse((now + cfg.every, i, c.gen)));
                            continue;
                        }
                    }
                }
            }
            due.push(Reverse((at + cfg.every, i, gen)));
        }
        let next = due
            .peek()
            .map_or(deadline, |Reverse((t, _, _))| *t)
            .min(deadline);
        let wait = next
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(100));
        match poll.poll(&mut events, Some(wait)) {
            Ok(()) => {}
            Err(e) if e.kind() == IoKind::Interrupted => continue,
            Err(e) => return Err(RunError::Worker(format!("epoll: {e}"))),
        }
        let now = Instant::now();
        for event in events.iter() {
            let i = event.token().0;
            let c = &mut conns[i];
            let Some(s) = c.stream.as_mut() else {
                continue;
            };
            if !c.connected && (event.is_writable() || event.is_error()) {
                match s.take_error() {
                    Ok(None) if s.peer_addr().is_ok() => {
                        c.connected = true;
                        rec.opened += 1;
                    }
                    Ok(None) => {}
                    _ => {
                        rec.connect_errors += 1;
                        c.stream = None;
                        c.gen += 1;
                        // Tried again when due, not in a tight loop.
                        due.push(Reverse((now + cfg.every, i, c.gen)));
                        continue;
                    }
                }
            }
            let readable = event.is_readable() || event.is_read_closed() || event.is_error();
            if readable && read_all(s, &mut scratch, &mut c.answered) {
                ended(c, now, &mut rec, &mut lifetimes, &mut statuses);
                open(&poll, cfg, c, i, &mut rec);
                due.push(Reverse((now + cfg.every, i, c.gen)));
            }
        }
    }
    rec.open_at_end = conns
        .iter()
        .filter(|c| c.stream.is_some() && c.connected)
        .count() as u64;
    rec.duration_s = started.elapsed().as_secs_f64();
    rec.interrupted = stop.load(Ordering::Relaxed);
    rec.answered = statuses;
    rec.lifetime_ms = lifetime_quantiles(&lifetimes);
    Ok(rec)
}

/// (due, connection, generation): the next byte of each connection.
type Due = BinaryHeap<Reverse<(Instant, usize, u64)>>;

/// Every connection, each opened, its first byte due within one period
/// of `started` (spread evenly).
fn open_all(
    poll: &Poll,
    cfg: &SlowConfig,
    started: Instant,
    rec: &mut SlowRecord,
) -> (Vec<Conn>, Due) {
    let mut conns: Vec<Conn> = Vec::with_capacity(cfg.connections);
    let mut due: Due = BinaryHeap::new();
    for i in 0..cfg.connections {
        conns.push(Conn {
            stream: None,
            gen: 0,
            opened_at: started,
            sent: 0,
            connected: false,
            answered: None,
        });
        // Spread the first bytes evenly over one period.
        let first = started + cfg.every.mul_f64(i as f64 / cfg.connections as f64);
        open(poll, cfg, &mut conns[i], i, rec);
        due.push(Reverse((first, i, conns[i].gen)));
    }
    (conns, due)
}

/// Reads what the server sent until the socket would block, noting the
/// status of its first answer in `answered`; true when the server closed
/// the connection (or reading failed).
fn read_all(s: &mut TcpStream, scratch: &mut [u8], answered: &mut Option<u16>) -> bool {
    loop {
        match s.read(scratch) {
            Ok(0) => return true,
            Ok(n) => {
                if answered.is_none() {
                    *answered = Some(status_of(&scratch[..n]));
                }
            }
            Err(e) if e.kind() == IoKind::WouldBlock => return false,
            Err(e) if e.kind() == IoKind::Interrupted => {}
            Err(_) => return true,
        }
    }
}

/// The connections' lifetimes: p10, p50, p90 and max, if any ended.
fn lifetime_quantiles(lifetimes: &Histogram<u64>) -> Option<SlowLifetime> {
    if lifetimes.is_empty() {
        return None;
    }
    Some(SlowLifetime {
        p10: lifetimes.value_at_quantile(0.10),
        p50: lifetimes.value_at_quantile(0.50),
        p90: lifetimes.value_at_quantile(0.90),
        max: lifetimes.max(),
    })
}

/// Opens connection `i` (non-blocking); a connect that fails at once is
/// counted, and tried again when the connection is next due.
fn open(poll: &Poll, cfg: &SlowConfig, c: &mut Conn, i: usize, rec: &mut SlowRecord) {
    c.gen += 1;
    c.sent = 0;
    c.connected = false;
    c.answered = None;
    c.opened_at = Instant::now();
    c.stream = match TcpStream::connect(cfg.target.addr) {
        Ok(mut s) => {
            let _ = s.set_nodelay(true);
            match poll.registry().register(
                &mut s,
                Token(i),
                Interest::READABLE | Interest::WRITABLE,
            ) {
                Ok(()) => Some(s),
                Err(_) => None,
            }
        }
        Err(_) => None,
    };
    if c.stream.is_none() {
        rec.connect_errors += 1;
    }
}

/// The server ended connection `c` at `now`: counted with its lifetime
/// and whatever it answered first.
fn ended(
    c: &mut Conn,
    now: Instant,
    rec: &mut SlowRecord,
    lifetimes: &mut Histogram<u64>,
    statuses: &mut BTreeMap<String, u64>,
) {
    rec.closed_by_server += 1;
    let ms = now.duration_since(c.opened_at).as_millis().max(1) as u64;
    let _ = lifetimes.record(ms.min(3_600_000));
    let key = c.answered.map_or("none".to_string(), |s| s.to_string());
    *statuses.entry(key).or_default() += 1;
    c.stream = None;
}

/// The status code of a response's first bytes (0 when there is none).
fn status_of(bytes: &[u8]) -> u16 {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut res = httparse::Response::new(&mut headers);
    match res.parse(bytes) {
        Ok(_) => res.code.unwrap_or(0),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::RequestSpec;

    #[test]
    fn trickles_the_head_without_its_blank_line_then_padding() {
        let spec = RequestSpec {
            method: "GET".into(),
            headers: Vec::new(),
            body: None,
        };
        let target = Target::new("http://127.0.0.1:1/x", &spec).unwrap();
        let t = Trickle::of(&target);
        let sent: Vec<u8> = (0..t.head.len() + 2 * PADDING.len())
            .map(|n| t.byte(n))
            .collect();
        let text = String::from_utf8(sent).unwrap();
        assert!(text.starts_with("GET /x HTTP/1.1\r\n"), "{text:?}");
        assert!(!text.contains("\r\n\r\n"), "{text:?}");
        assert!(text.ends_with("X-Slow: 1\r\nX-Slow: 1\r\n"), "{text:?}");
    }

    #[test]
    fn status_of_a_response_or_garbage() {
        assert_eq!(status_of(b"HTTP/1.1 408 Request Timeout\r\n\r\n"), 408);
        assert_eq!(status_of(b"HTTP/1.1 400 Bad"), 400);
        assert_eq!(status_of(b"junk"), 0);
    }
}
