//! loadgen against servers that misbehave on purpose: garbage instead of a
//! response, a response head that never ends (up to 1 GiB), a body that
//! never ends (Content-Length, chunked and read-until-close), and a close in
//! the middle of a response. For each, loadgen must classify what happened,
//! keep its memory bounded while the server keeps sending, and end on time.
//!
//! These run the binary, so that its peak memory (VmHWM) can be read from
//! /proc while it runs.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadgen::record::SummaryRecord;

/// How the hostile server answers every request.
#[derive(Debug, Clone, Copy)]
enum Hostile {
    /// Random-looking bytes, never an HTTP response.
    Garbage,
    /// `HTTP/1.1 200 OK` and then one header line without end, up to 1 GiB
    /// (many short header lines are refused sooner: more than 48 headers).
    EndlessHead,
    /// A head promising 1 TB, then body bytes as fast as they are taken.
    EndlessLength,
    /// A chunked body whose chunks (64 bytes each) never stop.
    EndlessChunks,
    /// A body read until close, and the server never closes.
    EndlessUntilClose,
    /// Half a response, then a close.
    CloseMidResponse,
}

/// A server that sends at most 1 GiB of head or 64 GiB of body on a
/// connection (so a broken client cannot make the test write forever; a
/// body is never finished within a run) and counts the bytes it wrote.
struct HostileServer {
    addr: SocketAddr,
    written: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

const GIB: u64 = 1 << 30;

impl HostileServer {
    fn start(how: Hostile) -> HostileServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let written = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (w, s) = (written.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (w, s) = (w.clone(), s.clone());
                std::thread::spawn(move || serve(stream, how, &w, &s));
            }
        });
        HostileServer {
            addr,
            written,
            stop,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(mut stream: TcpStream, how: Hostile, written: &AtomicU64, stop: &AtomicBool) {
    // Wait for a whole request head before misbehaving.
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let head: &[u8] = match how {
        Hostile::Garbage => b"",
        Hostile::EndlessHead => b"HTTP/1.1 200 OK\r\nX-Padding: ",
        Hostile::EndlessLength => b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n",
        Hostile::EndlessChunks => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        Hostile::EndlessUntilClose => b"HTTP/1.1 200 OK\r\n\r\n",
        Hostile::CloseMidResponse => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
            return;
        }
    };
    if stream.write_all(head).is_err() {
        return;
    }
    // What follows the head, repeated.
    let piece: Vec<u8> = match how {
        Hostile::Garbage => (0..16384u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect(),
        // 64-byte chunks: many chunk heads to parse, and enough body per
        // head that a dev-build loadgen reads far more than it holds even
        // with both cores busy. 16-byte chunks read 240-290 MB alone and
        // once 32.7 MB beside the other lanes (under 4x its 8.5 MB peak);
        // 64-byte chunks 650-810 MB alone, 205-211 MB beside six busy
        // loops (2026-11-28).
        Hostile::EndlessChunks => [&b"40\r\n"[..], &[b'c'; 64], b"\r\n"].concat().repeat(256),
        _ => vec![b'x'; 16384],
    };
    let cap = match how {
        Hostile::Garbage | Hostile::EndlessHead => GIB,
        _ => 64 * GIB,
    };
    let mut sent = head.len() as u64;
    while sent < cap && !stop.load(Ordering::Relaxed) {
        if stream.write_all(&piece).is_err() {
            return;
        }
        sent += piece.len() as u64;
        written.fetch_add(piece.len() as u64, Ordering::Relaxed);
    }
}

/// What one run of the binary gave.
struct Outcome {
    summary: SummaryRecord,
    wall: Duration,
    peak_rss_kib: u64,
}

/// Runs loadgen for 2 s with a 500 ms request timeout, sampling its peak RSS.
fn run(url: &str) -> Outcome {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args([
            "-d",
            "2s",
            "-c",
            "4",
            "--timeout",
            "500ms",
            "--format",
            "jsonl",
        ])
        .args(["--interval", "500ms", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    // Read VmHWM (the kernel's own peak) until the process is gone; a
    // run that does not end is killed at 15 s and fails below.
    while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(15) {
        if let Ok(s) = std::fs::read_to_string(&status) {
            if let Some(kib) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let wall = started.elapsed();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = stdout.lines().last().unwrap_or_else(|| {
        panic!(
            "no output; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let summary: SummaryRecord = match serde_json::from_str::<loadgen::record::Record>(last) {
        Ok(loadgen::record::Record::Summary(s)) => s,
        other => panic!("last line is not a summary: {other:?}\n{last}"),
    };
    Outcome {
        summary,
        wall,
        peak_rss_kib: peak,
    }
}

/// Ends on time (2 s of load; generous for a loaded CI machine, far below
/// "never") with memory bounded (the server offers up to 1 GiB per
/// connection; 64 MiB is far above loadgen's own few MiB).
fn check_bounded(how: Hostile, o: &Outcome) {
    eprintln!(
        "{how:?}: {:?} wall, peak RSS {} KiB, {} bytes read, errors {:?}",
        o.wall, o.peak_rss_kib, o.summary.bytes_read, o.summary.errors
    );
    assert!(
        o.wall < Duration::from_secs(8),
        "{how:?}: took {:?}",
        o.wall
    );
    assert!(o.peak_rss_kib > 0, "{how:?}: VmHWM never read");
    assert!(
        o.peak_rss_kib < 64 * 1024,
        "{how:?}: peak RSS {} KiB",
        o.peak_rss_kib
    );
    assert_eq!(o.summary.ok, 0, "{how:?}: {:?}", o.summary);
}

#[test]
fn garbage_is_a_parse_error() {
    let server = HostileServer::start(Hostile::Garbage);
    let o = run(&server.url());
    check_bounded(Hostile::Garbage, &o);
    let e = &o.summary.errors;
    assert!(e.parse > 0, "{:?}", o.summary);
    assert_eq!(e.total(), e.parse, "{:?}", o.summary);
}

#[test]
fn an_endless_head_is_a_parse_error_at_64_kib() {
    let server = HostileServer::start(Hostile::EndlessHead);
    let o = run(&server.url());
    check_bounded(Hostile::EndlessHead, &o);
    let e = &o.summary.errors;
    assert!(e.parse > 0, "{:?}", o.summary);
    assert_eq!(e.total(), e.parse, "{:?}", o.summary);
    // Each refused head was read to 64 KiB and not much further.
    let per_error = o.summary.bytes_read / e.parse;
    assert!(
        (64 << 10..256 << 10).contains(&per_error),
        "{per_error} bytes read per refused head"
    );
}

#[test]
fn endless_bodies_are_timeouts_with_memory_bounded() {
    for how in [
        Hostile::EndlessLength,
        Hostile::EndlessChunks,
        Hostile::EndlessUntilClose,
    ] {
        let server = HostileServer::start(how);
        let o = run(&server.url());
        check_bounded(how, &o);
        let e = &o.summary.errors;
        assert!(e.timeout > 0, "{how:?}: {:?}", o.summary);
        assert_eq!(e.total(), e.timeout, "{how:?}: {:?}", o.summary);
        // The body was read (skipped), not left in the socket: far more
        // bytes went through than the memory the process ever held.
        assert!(
            o.summary.bytes_read > 4 * o.peak_rss_kib * 1024,
            "{how:?}: read {} bytes, peak {} KiB",
            o.summary.bytes_read,
            o.peak_rss_kib
        );
        assert!(server.written.load(Ordering::Relaxed) > 0);
    }
}

#[test]
fn a_close_mid_response_is_a_closed_error() {
    let server = HostileServer::start(Hostile::CloseMidResponse);
    let o = run(&server.url());
    check_bounded(Hostile::CloseMidResponse, &o);
    let e = &o.summary.errors;
    assert!(e.closed > 0, "{:?}", o.summary);
    assert_eq!(e.total(), e.closed, "{:?}", o.summary);
}
