//! `ntex-read-once` (ntex against the patched ntex-net of `patches/`, which
//! reads a socket once per readiness edge instead of until EAGAIN) against
//! stock ntex: the patch may change how often ntex reads, never what it
//! answers. The cases that reach the read path: generated raw requests,
//! requests pipelined in one segment (a short read that holds several), a
//! request trickled over several segments (several short reads), and a head
//! larger than the read buffer (reads that fill it, then read again).

use std::io::{Read, Write};
use std::time::Duration;

use conformance::{fuzz, sets, Framework, Server, Variant};

fn stock() -> Variant {
    Variant::new(Framework::Ntex, sets::DEFAULT)
}

fn read_once() -> Variant {
    Variant::new(Framework::Ntex, ["ntex-read-once"])
}

/// Both builds, one worker each (a GET reads the one counter).
fn both() -> (Server, Server) {
    let start = |v: &Variant| Server::start(v, &["--workers", "1"]);
    (start(&stock()), start(&read_once()))
}

#[test]
fn generated_requests_get_the_same_bytes_from_stock_and_read_once_ntex() {
    let cases = fuzz::generate(45, 1500);
    let (stock, once) = both();
    let report = fuzz::run(stock.addr, once.addr, &cases, 16);
    // Some answers depend on when each segment arrives, in stock ntex too:
    // a split chunked POST to a missing path gave stock ntex's usual answer
    // (404, then 400 and a close for the body left behind) in 149 of 150
    // plays under load, and the 404 alone once. So a difference counts
    // only if, in ten more plays each with the slow waits, read-once ntex
    // never gives stock ntex's answer and stock never gives read-once's;
    // those either gives are printed. (Replaying read-once alone missed
    // the case where stock gave the rare answer: a clean clone's lanes
    // had stock answer the 404 alone, read-once the usual two.)
    let (first, idle) = (Duration::from_secs(1), Duration::from_millis(250));
    let lasting: Vec<String> = report
        .differences
        .iter()
        .filter(|d| {
            let gives = |addr, answer: &fuzz::Outcome| {
                (0..10).any(|_| fuzz::play(addr, &d.case, first, idle) == *answer)
            };
            let timing = if gives(once.addr, &d.actix) {
                Some("read-once gave stock's answer")
            } else if gives(stock.addr, &d.ntex) {
                Some("stock gave read-once's answer")
            } else {
                None
            };
            if let Some(which) = timing {
                println!("case {}: timing, {which} again", d.case.n);
            }
            timing.is_none()
        })
        .map(|d| format!("{:?}: {:?} / {:?}", d.case, d.actix, d.ntex))
        .collect();
    assert!(
        lasting.is_empty(),
        "{} of {} cases differ, and read-once never answers as stock does: {lasting:#?}",
        lasting.len(),
        report.cases
    );
    for server in [&stock, &once] {
        let mut c = server.conn();
        let before: u64 = c.get().unwrap().text().parse().unwrap();
        assert_eq!(c.post(b"5").unwrap().text(), (before + 5).to_string());
    }
    assert!(stock.stop().status.success());
    assert!(once.stop().status.success());
}

/// Every response `server` sends on one connection for `segments` written
/// `gap` apart, until it has `want` responses (date headers masked).
fn exchange(server: &Server, segments: &[Vec<u8>], gap: Duration, want: usize) -> Vec<String> {
    let mut c = server.conn();
    for (i, s) in segments.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(gap);
        }
        c.send(s).unwrap();
    }
    (0..want)
        .map(|_| {
            let r = c.read_response(false).unwrap();
            format!(
                "{} {:?} {:?}",
                r.status,
                r.header("content-length"),
                r.text()
            )
        })
        .collect()
}

#[test]
fn pipelined_trickled_and_oversized_requests_are_answered_alike() {
    let post = |n: &str| {
        format!(
            "POST / HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{n}",
            n.len()
        )
    };
    // Three requests in one segment: one short read holds all three.
    let pipelined = vec![format!(
        "{}{}GET / HTTP/1.1\r\nhost: x\r\n\r\n",
        post("7"),
        post("3")
    )
    .into_bytes()];
    // One request a few bytes at a time: each read is short.
    let whole = post("12").into_bytes();
    let trickled: Vec<Vec<u8>> = whole.chunks(5).map(<[u8]>::to_vec).collect();
    // A head of 100 KB: reads fill the buffer before the head ends.
    let big = vec![format!(
        "GET / HTTP/1.1\r\nhost: x\r\nx-pad: {}\r\n\r\n",
        "p".repeat(100_000)
    )
    .into_bytes()];
    let (stock, once) = both();
    for (name, segments, gap, want) in [
        ("pipelined", &pipelined, Duration::ZERO, 3),
        ("trickled", &trickled, Duration::from_millis(20), 1),
        ("oversized head", &big, Duration::ZERO, 1),
    ] {
        let a = exchange(&stock, segments, gap, want);
        let b = exchange(&once, segments, gap, want);
        assert_eq!(a, b, "{name}: stock and read-once ntex differ");
        assert!(a.iter().all(|r| r.starts_with("200 ")), "{name}: {a:?}");
    }
    // A connection closed by the client mid-head: the server reads the
    // end of the stream and goes on serving.
    for server in [&stock, &once] {
        let mut s = std::net::TcpStream::connect(server.addr).unwrap();
        s.write_all(b"POST / HTTP/1.1\r\nhost: x\r\n").unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert_eq!(server.conn().get().unwrap().status, 200);
    }
    assert!(stock.stop().status.success());
    assert!(once.stop().status.success());
}
