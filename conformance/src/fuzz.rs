//! Differential fuzzing of the twins over raw sockets (issue 27, part 3):
//! requests generated from a seed (valid ones, and mutations of them: split,
//! truncated, oversized headers, bad chunking, pipelining, flipped and
//! inserted bytes, pure noise), each played on a fresh connection to both
//! servers, and what came back compared.
//!
//! What is compared: every response the server sent on that connection
//! (status, headers without `date` and `server` in name order, since the
//! frameworks' header maps keep none, and the body),
//! any bytes after the last whole response, and whether the server closed
//! the connection. A 200's body is a count, which depends on the order in
//! which concurrent requests landed, so it is compared as "a count"; the
//! final counts of the two servers are compared at the end instead.
//!
//! A case is read until the server closes, or until it has been silent for
//! `idle` (after `first` for the first byte). A difference is played again
//! with ten times the waits before it counts, so a busy machine does not
//! make one.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

/// One generated case.
#[derive(Debug, Clone)]
pub struct Case {
    pub n: usize,
    /// Which mutations made it (`valid` when none).
    pub kind: String,
    pub bytes: Vec<u8>,
    /// Offsets at which the bytes are sent as separate writes (with a short
    /// pause between them).
    pub splits: Vec<usize>,
}

/// What a server did with a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub responses: Vec<String>,
    /// Bytes after the last whole response (lossy text).
    pub tail: String,
    pub closed: bool,
}

const METHODS: [&str; 6] = ["GET", "POST", "PUT", "HEAD", "DELETE", "OPTIONS"];
const PATHS: [&str; 4] = ["/", "/", "/x", "/?a=1"];

fn valid(rng: &mut impl Rng) -> Vec<u8> {
    let method = if rng.gen_bool(0.5) {
        "POST"
    } else {
        METHODS[rng.gen_range(0..METHODS.len())]
    };
    let path = PATHS[rng.gen_range(0..PATHS.len())];
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: t\r\n");
    for (p, h) in [
        (0.3, "User-Agent: fuzz/1\r\n"),
        (0.2, "Accept: */*\r\n"),
        (0.1, "Connection: close\r\n"),
        (0.1, "Connection: keep-alive\r\n"),
    ] {
        if rng.gen_bool(p) {
            head += h;
        }
    }
    let body: Option<Vec<u8>> =
        (method == "POST" || rng.gen_bool(0.05)).then(|| match rng.gen_range(0..10) {
            0 => b"abc".to_vec(),
            1 => b"501".to_vec(),
            2 => Vec::new(),
            3 => b"-1".to_vec(),
            4 => vec![b'7'; rng.gen_range(4..80)],
            _ => rng.gen_range(0..=500u32).to_string().into_bytes(),
        });
    let mut out = head.into_bytes();
    match body {
        None => out.extend_from_slice(b"\r\n"),
        Some(b) if rng.gen_bool(0.25) => {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
            let cut = rng.gen_range(0..=b.len());
            for part in [&b[..cut], &b[cut..]] {
                if !part.is_empty() {
                    out.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
                    out.extend_from_slice(part);
                    out.extend_from_slice(b"\r\n");
                }
            }
            out.extend_from_slice(b"0\r\n\r\n");
        }
        Some(b) => {
            out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", b.len()).as_bytes());
            out.extend_from_slice(&b);
        }
    }
    out
}

/// The cases of `seed`, `count` of them (the same every time).
pub fn generate(seed: u64, count: usize) -> Vec<Case> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..count).map(|n| one(&mut rng, n)).collect()
}

fn one(rng: &mut impl Rng, n: usize) -> Case {
    let mut bytes = valid(rng);
    let mut kinds = Vec::new();
    let mutations = if rng.gen_bool(0.2) {
        0
    } else {
        rng.gen_range(1..=2)
    };
    for _ in 0..mutations {
        let kind = match rng.gen_range(0..10) {
            0 => {
                let k = rng.gen_range(1..=3);
                for _ in 0..k {
                    bytes.extend(valid(rng));
                }
                "pipelined"
            }
            1 => {
                // Never to nothing: an empty case is no request.
                if bytes.len() > 1 {
                    let at = rng.gen_range(1..bytes.len());
                    bytes.truncate(at);
                }
                "truncated"
            }
            2 => {
                let len = [4_000, 9_000, 17_000, 40_000, 70_000][rng.gen_range(0..5)];
                let header = format!("X-Big: {}\r\n", "a".repeat(len));
                let at = bytes
                    .windows(2)
                    .position(|w| w == b"\r\n")
                    .map_or(0, |p| p + 2);
                bytes.splice(at..at, header.into_bytes());
                "big-header"
            }
            3 => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let bad = ["zz", "fffffffffffffffffff", "-1", "1;ext=\"x", "", "5 5"]
                    [rng.gen_range(0..6)];
                let text = if text.contains("chunked") {
                    match text.split_once("\r\n\r\n") {
                        Some((head, rest)) => {
                            let rest = rest.split_once("\r\n").map_or("", |x| x.1);
                            format!("{head}\r\n\r\n{bad}\r\n{rest}")
                        }
                        None => text,
                    }
                } else {
                    text.replacen(
                        "\r\n\r\n",
                        &format!("\r\nTransfer-Encoding: chunked\r\n\r\n{bad}\r\n"),
                        1,
                    )
                };
                bytes = text.into_bytes();
                "bad-chunking"
            }
            4 => {
                for _ in 0..rng.gen_range(1..=4) {
                    if !bytes.is_empty() {
                        let at = rng.gen_range(0..bytes.len());
                        bytes[at] = rng.gen();
                    }
                }
                "flipped"
            }
            5 => {
                let at = rng.gen_range(0..=bytes.len());
                let noise: Vec<u8> = (0..rng.gen_range(1..16)).map(|_| rng.gen()).collect();
                bytes.splice(at..at, noise);
                "inserted"
            }
            6 => {
                bytes = (0..rng.gen_range(1..200)).map(|_| rng.gen()).collect();
                "noise"
            }
            7 => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let header = [
                    "Content-Length: 3\r\nContent-Length: 2\r\n",
                    "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",
                    "Transfer-Encoding: gzip\r\n",
                    "Content-Length: +3\r\n",
                    "Host: a\r\nHost: b\r\n",
                    "Expect: 100-continue\r\n",
                    " folded: x\r\n",
                ][rng.gen_range(0..7)];
                bytes = text
                    .replacen("\r\n", &format!("\r\n{header}"), 1)
                    .into_bytes();
                "odd-headers"
            }
            8 => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let (from, to) = [
                    ("HTTP/1.1", "HTTP/1.0"),
                    ("HTTP/1.1", "HTTP/2.0"),
                    ("HTTP/1.1", "HTTP/1.1 extra"),
                    (" HTTP/1.1", ""),
                    ("POST", "post"),
                    ("GET", "GET  "),
                    ("\r\n", "\n"),
                ][rng.gen_range(0..7)];
                bytes = text.replacen(from, to, 1).into_bytes();
                "request-line"
            }
            _ => "split",
        };
        kinds.push(kind);
    }
    let splits = if kinds.contains(&"split") && bytes.len() > 2 {
        let mut s: Vec<usize> = (0..rng.gen_range(1..=3))
            .map(|_| rng.gen_range(1..bytes.len()))
            .collect();
        s.sort();
        s.dedup();
        s
    } else {
        Vec::new()
    };
    Case {
        n,
        kind: if kinds.is_empty() {
            "valid".into()
        } else {
            kinds.join("+")
        },
        bytes,
        splits,
    }
}

/// Plays `case` on a fresh connection to `addr`.
pub fn play(addr: SocketAddr, case: &Case, first: Duration, idle: Duration) -> Outcome {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return Outcome {
            responses: Vec::new(),
            tail: "<connect failed>".into(),
            closed: true,
        };
    };
    let _ = s.set_nodelay(true);
    let mut at = 0;
    for &cut in case.splits.iter().chain([&case.bytes.len()]) {
        if s.write_all(&case.bytes[at..cut]).is_err() {
            break;
        }
        at = cut;
        if cut < case.bytes.len() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    let mut closed = false;
    let mut wait = first;
    loop {
        let _ = s.set_read_timeout(Some(wait));
        let t = Instant::now();
        match s.read(&mut buf) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                wait = idle;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break
            }
            // A reset is a close too.
            Err(_) => {
                closed = true;
                break;
            }
        }
        if t.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    let (responses, rest) = split_responses(&got);
    // A last response to HEAD has no body, so it stays in the tail: its
    // `date` and `server` are left out there too.
    // Its header lines in name order, as above.
    let mut lines: Vec<String> = String::from_utf8_lossy(rest)
        .split("\r\n")
        .map(str::to_owned)
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            !l.starts_with("date:") && !l.starts_with("server:")
        })
        .collect();
    let end = lines
        .iter()
        .position(String::is_empty)
        .unwrap_or(lines.len());
    if let Some(fields) = lines.get_mut(1.min(end)..end) {
        fields.sort();
    }
    let tail = lines.join("\r\n");
    Outcome {
        responses,
        tail,
        closed,
    }
}

/// Whole responses in `bytes`, each as comparable text, and what follows
/// the last one.
fn split_responses(mut bytes: &[u8]) -> (Vec<String>, &[u8]) {
    let mut out = Vec::new();
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut r = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(head)) = r.parse(bytes) else {
            return (out, bytes);
        };
        let len = r
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<usize>().ok())
            .unwrap_or(0);
        // A HEAD response announces a length but carries no body: when
        // another response starts right after the head, this one had none.
        let len = if bytes[head..].starts_with(b"HTTP/1.") {
            0
        } else {
            len
        };
        if bytes.len() < head + len {
            return (out, bytes);
        }
        let status = r.code.unwrap_or(0);
        let mut text = format!("{status}");
        // In name order: the frameworks' header maps do not keep one.
        let mut fields: Vec<String> = r
            .headers
            .iter()
            .map(|h| (h.name.to_ascii_lowercase(), h.value))
            .filter(|(name, _)| name != "date" && name != "server")
            .map(|(name, v)| format!("|{name}: {}", String::from_utf8_lossy(v)))
            .collect();
        fields.sort();
        let body = &bytes[head..head + len];
        let body = if status == 200 && !body.is_empty() && body.iter().all(u8::is_ascii_digit) {
            // A count: its digits, and so its length, depend on the order.
            fields.retain(|f| !f.starts_with("|content-length: "));
            "<count>".to_string()
        } else {
            String::from_utf8_lossy(body).into_owned()
        };
        text += &fields.concat();
        text += &format!("||{body}");
        out.push(text);
        bytes = &bytes[head + len..];
    }
}

/// Which known way of differing a difference is (see the README of this
/// crate for each, with an example); `other` when none fits.
pub fn classify(d: &Difference) -> &'static str {
    let text = String::from_utf8_lossy(&d.case.bytes).to_ascii_lowercase();
    let plain = |o: &Outcome| -> (Vec<String>, String) {
        let responses = o
            .responses
            .iter()
            .map(|r| r.replace("|connection: close", ""))
            .collect();
        (responses, o.tail.replace("\r\nconnection: close", ""))
    };
    if plain(&d.actix) == plain(&d.ntex) {
        return "connection-close";
    }
    let silent = |o: &Outcome| o.responses.is_empty() && o.tail.is_empty() && !o.closed;
    if silent(&d.actix) || silent(&d.ntex) {
        return "incomplete-head";
    }
    let refused_431 = |o: &Outcome| o.responses.iter().any(|r| r.starts_with("431|"));
    if refused_431(&d.actix) != refused_431(&d.ntex) {
        return "header-size";
    }
    if text
        .split("\r\n\r\n")
        .any(|head| head.matches("\r\nhost: ").count() > 1)
    {
        return "duplicate-host";
    }
    let line = text.split("\r\n").next().unwrap_or("");
    let words: Vec<&str> = line.split(' ').collect();
    if words.len() != 3 || words.iter().any(|w| w.is_empty()) {
        return "request-line";
    }
    let unread = |o: &Outcome| {
        o.responses
            .iter()
            .any(|r| r.ends_with("body could not be read\n"))
    };
    let parser = |o: &Outcome| {
        o.responses
            .iter()
            .any(|r| r.starts_with("400|") && r.ends_with("||"))
    };
    let app = |o: &Outcome| {
        unread(o)
            || o.responses
                .iter()
                .any(|r| r.starts_with("413|") && !r.ends_with("||"))
    };
    if text.contains("chunked")
        && ((app(&d.actix) && parser(&d.ntex)) || (app(&d.ntex) && parser(&d.actix)))
    {
        return "bad-chunk";
    }
    // Modulo `connection: close`, as above.
    let extra_400 = |long: &Outcome, short: &Outcome| {
        let (l, s) = (plain(long).0, plain(short).0);
        l.len() == s.len() + 1
            && l.starts_with(&s)
            && l.last()
                .is_some_and(|r| r.starts_with("400|") && r.ends_with("||"))
    };
    if extra_400(&d.actix, &d.ntex) || extra_400(&d.ntex, &d.actix) {
        return "trailing-garbage";
    }
    let first_head = text.split("\r\n\r\n").next().unwrap_or("");
    if first_head.contains("\r\nconnection: close")
        && first_head.contains("\r\nconnection: keep-alive")
    {
        return "conflicting-connection";
    }
    if !first_head.contains("\r\nhost:") && parser(&d.actix) {
        return "missing-host";
    }
    if text.matches(" http/1.").count() > 1 {
        return "pipelined";
    }
    if text.contains("\r\nexpect: ") {
        return "expect";
    }
    "other"
}

/// One case on which the twins differed (after the slower replay).
#[derive(Debug, Clone)]
pub struct Difference {
    pub case: Case,
    pub actix: Outcome,
    pub ntex: Outcome,
}

/// What a differential run found.
#[derive(Debug, Default)]
pub struct Report {
    pub cases: usize,
    pub by_kind: std::collections::BTreeMap<String, usize>,
    pub differences: Vec<Difference>,
}

/// Both twins as the differential run plays them: default features, one
/// worker (so a GET reads the one counter).
pub fn start_twins() -> (crate::Server, crate::Server) {
    use crate::{sets, Framework, Server, Variant};
    let start = |fw| Server::start(&Variant::new(fw, sets::DEFAULT), &["--workers", "1"]);
    (start(Framework::Actix), start(Framework::Ntex))
}

impl Report {
    /// The differences by class ([`classify`]), in class order.
    pub fn classes(&self) -> std::collections::BTreeMap<&'static str, Vec<&Difference>> {
        let mut out: std::collections::BTreeMap<_, Vec<_>> = Default::default();
        for d in &self.differences {
            out.entry(classify(d)).or_default().push(d);
        }
        out
    }
}

/// Plays every case on both servers with `threads` threads; a difference is
/// replayed with ten times the waits before it is kept.
pub fn run(actix: SocketAddr, ntex: SocketAddr, cases: &[Case], threads: usize) -> Report {
    let (first, idle) = (Duration::from_millis(100), Duration::from_millis(25));
    let chunks: Vec<&[Case]> = cases
        .chunks(cases.len().div_ceil(threads.max(1)).max(1))
        .collect();
    let found: Vec<Vec<Difference>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    let mut diffs = Vec::new();
                    for case in chunk {
                        let a = play(actix, case, first, idle);
                        let n = play(ntex, case, first, idle);
                        if a != n {
                            let a = play(actix, case, first * 10, idle * 10);
                            let n = play(ntex, case, first * 10, idle * 10);
                            if a != n {
                                diffs.push(Difference {
                                    case: case.clone(),
                                    actix: a,
                                    ntex: n,
                                });
                            }
                        }
                    }
                    diffs
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a fuzz thread"))
            .collect()
    });
    let mut report = Report {
        cases: cases.len(),
        ..Report::default()
    };
    for c in cases {
        *report.by_kind.entry(c.kind.clone()).or_default() += 1;
    }
    report.differences = found.into_iter().flatten().collect();
    report.differences.sort_by_key(|d| d.case.n);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_are_a_function_of_the_seed_and_cover_every_kind() {
        // Many cases of another seed generate without a panic, none empty.
        assert!(generate(27, 100_000).iter().all(|c| !c.bytes.is_empty()));
        let a = generate(7, 2000);
        let b = generate(7, 2000);
        assert!(a
            .iter()
            .zip(&b)
            .all(|(x, y)| x.bytes == y.bytes && x.kind == y.kind));
        for kind in [
            "valid",
            "pipelined",
            "truncated",
            "big-header",
            "bad-chunking",
            "flipped",
            "inserted",
            "noise",
            "odd-headers",
            "request-line",
            "split",
        ] {
            assert!(
                a.iter().any(|c| c.kind.split('+').any(|k| k == kind)),
                "{kind}"
            );
        }
    }

    #[test]
    fn responses_are_compared_without_date_server_or_count() {
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ndate: x\r\nserver: y\r\n\r\n42HTTP/1.1 400 Bad Request\r\ncontent-length: 3\r\n\r\nbadHTTP/1.1 2";
        let (r, rest) = split_responses(raw);
        assert_eq!(r, ["200||<count>", "400|content-length: 3||bad"]);
        assert_eq!(rest, b"HTTP/1.1 2");
    }
}
