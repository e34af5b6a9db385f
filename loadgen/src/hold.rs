//! `--hold D`: open `-c` connections, make one request on each, keep them
//! all open for D without further requests, then close them all. For
//! measuring what open connections cost a server (memory per connection).
//!
//! Set-up is sequential: connect, send, read the whole response, next. On
//! loopback that is tens of microseconds a connection; it never sends a
//! connection's request before the previous one is answered, so a server's
//! accept backlog never overflows. Set-up stops at `--timeout` after it
//! began (connections not tried are counted as such), the hold lasts D, and
//! SIGINT or SIGTERM ends either phase early: bounded and self-stopping.

use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use mio::{Events, Interest, Poll, Token};

use crate::exit;
use crate::output::Format;
use crate::record::{Errors, HoldRecord, NonOk, Record};
use crate::request::Target;
use crate::response::ResponseParser;
use crate::run::RunError;
use crate::stats::{ErrorKind, Stats};

/// What a hold needs.
#[derive(Debug, Clone)]
pub struct HoldConfig {
    pub target: Target,
    pub connections: usize,
    /// How long to keep the connections open once set up.
    pub hold: Duration,
    /// Limit of the whole set-up, and of each connect and response in it.
    pub timeout: Duration,
    pub head_only: bool,
    pub shard: Option<String>,
}

/// `--hold`: prints a record when the hold starts and one when it ends.
/// Exit 1 when no connection could be held.
pub fn main(config: HoldConfig, format: Format) -> ExitCode {
    let stop = match exit::prepare(config.connections, 1) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let write = |record: &Record| -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        match (format, record) {
            (Format::Jsonl, r) => {
                serde_json::to_writer(&mut out, r)?;
                writeln!(out)?;
            }
            (Format::Text, Record::Held(h)) => writeln!(out, "{}", h.text_line(true))?,
            (Format::Text, Record::HoldSummary(h)) => writeln!(out, "{}", h.text_line(false))?,
            (Format::Text, _) => {}
        }
        out.flush()
    };
    let summary = match hold(&config, &mut |r| write(r), &stop) {
        Ok(s) => s,
        Err(e) => return exit::failed(e),
    };
    if let Err(e) = write(&Record::HoldSummary(summary.clone())) {
        return exit::failed(format!("writing the summary: {e}"));
    }
    if summary.established == 0 {
        return exit::failed(format!(
            "no connection could be held ({} failed, {} not attempted)",
            summary.errors.total(),
            summary.not_attempted
        ));
    }
    ExitCode::SUCCESS
}

/// Runs the hold; `emit` receives the `held` record when the hold starts.
/// Returns the `hold_summary` record.
pub fn hold(
    cfg: &HoldConfig,
    emit: &mut dyn FnMut(&Record) -> std::io::Result<()>,
    stop: &AtomicBool,
) -> Result<HoldRecord, RunError> {
    let start_wall = SystemTime::now();
    let started = Instant::now();
    let deadline = started + cfg.timeout;
    let mut stats = Stats::default();
    let mut open = Vec::with_capacity(cfg.connections);
    let mut tried = 0;
    for i in 0..cfg.connections {
        let now = Instant::now();
        if stop.load(Ordering::Relaxed) || now >= deadline {
            break;
        }
        tried += 1;
        match ask(cfg, deadline - now, &mut stats) {
            Ok(Some(stream)) => open.push(stream),
            Ok(None) => {}
            // The very first connection refused: the target is not there.
            Err(source) if i == 0 => {
                return Err(RunError::Unreachable {
                    url: cfg.target.url.clone(),
                    addr: cfg.target.addr,
                    source,
                })
            }
            Err(_) => stats.error(ErrorKind::Connect),
        }
    }
    let mut rec = HoldRecord {
        shard: cfg.shard.clone(),
        connections: cfg.connections as u64,
        established: open.len() as u64,
        ok: stats.ok(),
        non_2xx: NonOk::from_stats(&stats),
        errors: Errors::from_stats(&stats),
        not_attempted: (cfg.connections - tried) as u64,
        closed_early: 0,
        unsolicited: 0,
        start_unix_ms: start_wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        setup_ms: started.elapsed().as_secs_f64() * 1e3,
        held_ms: 0.0,
        interrupted: stop.load(Ordering::Relaxed),
    };
    emit(&Record::Held(rec.clone())).map_err(RunError::Output)?;

    let held_from = Instant::now();
    // Nothing to hold (set-up failed throughout): nothing to wait for.
    if !rec.interrupted && !open.is_empty() {
        watch(cfg, open, held_from + cfg.hold, stop, &mut rec)
            .map_err(|e| RunError::Worker(format!("watching held connections: {e}")))?;
        // Every connection still open was closed as `watch` returned.
        rec.held_ms = held_from.elapsed().as_secs_f64() * 1e3;
    }
    rec.interrupted = stop.load(Ordering::Relaxed);
    Ok(rec)
}

/// Opens one connection and makes its request. `Ok(Some)`: open and
/// answered; `Ok(None)`: failed after connecting (counted in `stats`);
/// `Err`: the connect itself failed.
fn ask(cfg: &HoldConfig, left: Duration, stats: &mut Stats) -> std::io::Result<Option<TcpStream>> {
    let limit = left.min(cfg.timeout);
    let mut stream = TcpStream::connect_timeout(&cfg.target.addr, limit)?;
    let _ = stream.set_nodelay(true);
    stream.set_write_timeout(Some(limit))?;
    stream.set_read_timeout(Some(limit))?;
    if let Err(e) = stream.write_all(&cfg.target.request) {
        stats.error(io_kind(&e, ErrorKind::Write));
        return Ok(None);
    }
    let mut parser = ResponseParser::new(cfg.head_only);
    let mut buf = [0u8; 4096];
    let mut have = 0;
    loop {
        let n = match stream.read(&mut buf[have..]) {
            Ok(0) => match parser.eof() {
                Some(done) => {
                    stats.response(done.status, 0);
                    return Ok(None);
                }
                None => {
                    stats.error(ErrorKind::Closed);
                    return Ok(None);
                }
            },
            Ok(n) => n,
            Err(e) => {
                stats.error(io_kind(&e, ErrorKind::Read));
                return Ok(None);
            }
        };
        have += n;
        let mut at = 0;
        while at < have {
            match parser.parse(&buf[at..have]) {
                Ok((_, Some(done))) => {
                    stats.response(done.status, 0);
                    if done.close {
                        return Ok(None);
                    }
                    return Ok(Some(stream));
                }
                Ok((0, None)) => break,
                Ok((used, None)) => at += used,
                Err(_) => {
                    stats.error(ErrorKind::Parse);
                    return Ok(None);
                }
            }
        }
        // Keep what the parser could not use yet (a head split over reads).
        buf.copy_within(at..have, 0);
        have -= at;
        if have == buf.len() {
            stats.error(ErrorKind::Parse);
            return Ok(None);
        }
    }
}

fn io_kind(e: &std::io::Error, otherwise: ErrorKind) -> ErrorKind {
    match e.kind() {
        IoKind::WouldBlock | IoKind::TimedOut => ErrorKind::Timeout,
        _ => otherwise,
    }
}

/// Holds `open` until `until`, counting what the server does to them.
fn watch(
    cfg: &HoldConfig,
    open: Vec<TcpStream>,
    until: Instant,
    stop: &AtomicBool,
    rec: &mut HoldRecord,
) -> std::io::Result<()> {
    let mut poll = Poll::new()?;
    let mut conns: Vec<Option<(mio::net::TcpStream, ResponseParser)>> = Vec::new();
    for (i, s) in open.into_iter().enumerate() {
        s.set_nonblocking(true)?;
        let mut s = mio::net::TcpStream::from_std(s);
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE)?;
        conns.push(Some((s, ResponseParser::new(cfg.head_only))));
    }
    let mut events = Events::with_capacity(1024);
    let mut buf = [0u8; 4096];
    loop {
        let now = Instant::now();
        if now >= until || stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        match poll.poll(
            &mut events,
            Some((until - now).min(Duration::from_millis(100))),
        ) {
            Ok(()) => {}
            Err(e) if e.kind() == IoKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for ev in &events {
            let slot = &mut conns[ev.token().0];
            let Some((stream, parser)) = slot.as_mut() else {
                continue;
            };
            let closed = loop {
                match stream.read(&mut buf) {
                    Ok(0) => break true,
                    Ok(n) => {
                        let mut at = 0;
                        while at < n {
                            match parser.parse(&buf[at..n]) {
                                Ok((used, done)) => {
                                    rec.unsolicited += u64::from(done.is_some());
                                    if used == 0 && done.is_none() {
                                        break;
                                    }
                                    at += used;
                                }
                                Err(_) => break,
                            }
                        }
                    }
                    Err(e) if e.kind() == IoKind::WouldBlock => break false,
                    Err(e) if e.kind() == IoKind::Interrupted => {}
                    Err(_) => break true,
                }
            };
            if closed {
                rec.closed_early += 1;
                *slot = None;
            }
        }
    }
}
