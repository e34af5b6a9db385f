//! Small HTTP/1.1 servers for loadgen's tests, on loopback ports the OS picks.
//! Each behaves one way (answers 200, 500, chunked, closes mid-response,
//! never answers...) and counts the responses it wrote completely.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the server answers each request.
#[derive(Debug, Clone, Copy)]
pub enum Behaviour {
    Ok,
    Status(u16),
    Chunked,
    /// Half a response, then close.
    CloseMidResponse,
    /// Reads requests, never answers.
    Never,
    /// `Connection: close` on every n-th response of a connection.
    CloseEvery(u64),
    /// Answers; a connection idle this long (ms) gets an unsolicited
    /// `408 Request Timeout` without `Connection: close`, then is closed
    /// (what ntex does after its client timeout).
    Idle408(u64),
    /// Answers; a connection idle this long (ms) is closed without a word.
    IdleClose(u64),
    /// The n-th request of every connection gets `408` and a close (a
    /// request that crossed the server's idle timeout); the others are answered.
    Nth408(u64),
    /// The n-th request of every connection is read and the connection
    /// closed without an answer (an idle close crossing the request).
    NthClose(u64),
    /// A connection whose first request head is not complete this long
    /// (ms) after the accept gets `408` and a close (a header-read timeout).
    HeadTimeout408(u64),
}

pub struct TestServer {
    pub addr: SocketAddr,
    /// Responses written completely.
    pub answered: Arc<AtomicU64>,
    /// Largest number of requests found in one read (pipelining seen).
    pub max_batch: Arc<AtomicU64>,
    /// When each read that completed requests arrived.
    pub arrivals: Arc<Mutex<Vec<Instant>>>,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    pub fn start(behaviour: Behaviour) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let answered = Arc::new(AtomicU64::new(0));
        let max_batch = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let (a, m, s, t) = (
            answered.clone(),
            max_batch.clone(),
            stop.clone(),
            arrivals.clone(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (a, m, s, t) = (a.clone(), m.clone(), s.clone(), t.clone());
                std::thread::spawn(move || serve(stream, behaviour, &a, &m, &s, &t));
            }
        });
        TestServer {
            addr,
            answered,
            max_batch,
            arrivals,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::SeqCst)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(
    mut stream: TcpStream,
    behaviour: Behaviour,
    answered: &AtomicU64,
    max_batch: &AtomicU64,
    stop: &AtomicBool,
    arrivals: &Mutex<Vec<Instant>>,
) {
    let _ = stream.set_nodelay(true);
    let idle_limit = match behaviour {
        Behaviour::Idle408(ms) | Behaviour::IdleClose(ms) => Some(Duration::from_millis(ms)),
        _ => None,
    };
    let head_limit = match behaviour {
        Behaviour::HeadTimeout408(ms) => Some(Duration::from_millis(ms)),
        _ => None,
    };
    let accepted = Instant::now();
    let tick = if idle_limit.is_some() || head_limit.is_some() {
        5
    } else {
        200
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(tick)));
    let mut buf = Vec::new();
    let mut served_here = 0u64;
    let mut chunk = [0u8; 8192];
    let mut last_activity = std::time::Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if head_limit.is_some_and(|l| served_here == 0 && accepted.elapsed() >= l) {
            let _ = stream.write_all(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n");
            return;
        }
        let n = match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if idle_limit.is_some_and(|l| buf.is_empty() && last_activity.elapsed() >= l) {
                    if matches!(behaviour, Behaviour::Idle408(_)) {
                        let _ = stream.write_all(
                            b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n",
                        );
                    }
                    return;
                }
                continue;
            }
            Err(_) => return,
        };
        last_activity = std::time::Instant::now();
        buf.extend_from_slice(&chunk[..n]);
        let mut out = Vec::new();
        let mut batch = 0u64;
        let mut close = false;
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            let Ok(httparse::Status::Complete(head)) = req.parse(&buf) else {
                break;
            };
            let body: usize = req
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.parse().ok())
                .unwrap_or(0);
            if buf.len() < head + body {
                break;
            }
            buf.drain(..head + body);
            batch += 1;
            served_here += 1;
            match behaviour {
                Behaviour::Ok
                | Behaviour::Idle408(_)
                | Behaviour::IdleClose(_)
                | Behaviour::HeadTimeout408(_) => {
                    out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                }
                Behaviour::Status(code) => out.extend_from_slice(
                    format!("HTTP/1.1 {code} X\r\nContent-Length: 4\r\n\r\nnope").as_bytes(),
                ),
                Behaviour::Chunked => out.extend_from_slice(
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                ),
                Behaviour::CloseMidResponse => {
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
                    return;
                }
                Behaviour::Nth408(n) if served_here == n => {
                    let _ = stream.write_all(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n");
                    return;
                }
                Behaviour::NthClose(n) if served_here == n => return,
                Behaviour::Nth408(_) | Behaviour::NthClose(_) => out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
                Behaviour::Never => {}
                Behaviour::CloseEvery(n) => {
                    if served_here.is_multiple_of(n) {
                        out.extend_from_slice(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
                        close = true;
                        break;
                    }
                    out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                }
            }
        }
        max_batch.fetch_max(batch, Ordering::SeqCst);
        if batch > 0 {
            arrivals.lock().unwrap().push(last_activity);
        }
        if !out.is_empty() {
            if stream.write_all(&out).is_err() {
                return;
            }
            if !matches!(behaviour, Behaviour::Never) {
                answered.fetch_add(batch, Ordering::SeqCst);
            }
        }
        if close {
            return;
        }
    }
}

/// Runs the loadgen binary: (exit code, stdout, stderr).
pub fn loadgen(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Runs loadgen with `args` (jsonl), expects exit 0, and checks every
/// record against the schema and the one definition; returns the records
/// and the schema's validator.
pub fn schema_checked_records(args: &[&str]) -> (Vec<serde_json::Value>, jsonschema::Validator) {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schema/record.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let (code, out, err) = loadgen(args);
    assert_eq!(code, Some(0), "{err}");
    let records: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for r in &records {
        let errors: Vec<String> = validator.iter_errors(r).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{r}: {errors:?}");
        // And the one definition reads back what it wrote.
        let _: loadgen::Record = serde_json::from_value(r.clone()).unwrap();
    }
    (records, validator)
}
