//! The connection policy, byte for byte and second for second the same on
//! both twins (`--client-timeout`, keep-alive): a silent new connection, a
//! partial request head, a head trickling in (slowloris), and an idle
//! connection after a response. Raw sockets, one server per case so that no
//! other connection's timer shifts ntex's once-a-second timer ticks.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use conformance::{sets, Framework, Server, Variant, VariantExt};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Case {
    /// Connects and sends nothing.
    Silent,
    /// Sends half a request head, then nothing.
    Partial,
    /// Sends a request head one byte every 100 ms, never finishing it.
    Trickle,
    /// One full request and its response, then nothing.
    IdleAfterResponse,
}

const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n";

/// What the server sent after the case's last byte until it closed, with the
/// `date` value masked, and how long after that byte it closed.
struct Outcome {
    bytes: String,
    closed_after: Duration,
}

fn mask_date(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw).into_owned();
    text.lines()
        .map(|l| {
            if l.starts_with("date: ") {
                "date: <masked>"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads until the server closes (or 12 s pass: a test failure).
fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    stream
        .set_read_timeout(Some(Duration::from_secs(12)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("no close within 12 s ({e}); got {:?}", mask_date(&got)),
        }
    }
}

fn run_case(server: &Server, case: Case) -> Outcome {
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut start = Instant::now();
    match case {
        Case::Silent => {}
        Case::Partial => stream.write_all(&REQUEST[..20]).unwrap(),
        Case::Trickle => {
            let mut writer = stream.try_clone().unwrap();
            std::thread::spawn(move || {
                let head = b"GET / HTTP/1.1\r\nHost: test\r\nX-Slow: ";
                for byte in head.iter().chain(std::iter::repeat_n(&b'a', 150)) {
                    if writer.write_all(&[*byte]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
        Case::IdleAfterResponse => {
            stream.write_all(REQUEST).unwrap();
            let mut conn = conformance::Conn::from_stream(stream.try_clone().unwrap());
            assert_eq!(conn.read_response(false).unwrap().status, 200);
            start = Instant::now();
        }
    }
    let got = read_to_close(&mut stream);
    Outcome {
        bytes: mask_date(&got),
        closed_after: start.elapsed(),
    }
}

/// At the default `--client-timeout 5` and keep-alive 5 s: the same bytes
/// from both, at times within 10 % of each other and of 5 s.
#[test]
fn slow_and_idle_connections_get_the_same_bytes_at_the_same_time() {
    let cases = [
        Case::Silent,
        Case::Partial,
        Case::Trickle,
        Case::IdleAfterResponse,
    ];
    // Each twin, and ntex against the patched read path (patches/), whose
    // slow clients must meet the same timeouts.
    let read_once = || Variant::new(Framework::Ntex, ["ntex-read-once"]);
    let runs: Vec<_> = cases
        .into_iter()
        .flat_map(|case| {
            [
                (case, Variant::new(Framework::Actix, sets::DEFAULT)),
                (case, Variant::new(Framework::Ntex, sets::DEFAULT)),
                (case, read_once()),
            ]
        })
        .map(|(case, variant)| {
            std::thread::spawn(move || {
                let server = Server::start(&variant, &["--workers", "1"]);
                (case, variant, run_case(&server, case))
            })
        })
        .collect();
    let outcomes: Vec<_> = runs.into_iter().map(|r| r.join().unwrap()).collect();
    let timeout =
        "HTTP/1.1 408 Request Timeout\ncontent-length: 0\nconnection: close\ndate: <masked>\n";
    for case in cases {
        let [(_, _, actix), (_, _, ntex), (_, _, once)] = [
            Variant::new(Framework::Actix, sets::DEFAULT),
            Variant::new(Framework::Ntex, sets::DEFAULT),
            read_once(),
        ]
        .map(|v| {
            outcomes
                .iter()
                .find(|(c, x, _)| *c == case && *x == v)
                .unwrap()
        });
        assert_eq!(actix.bytes, ntex.bytes, "{case:?}: the twins differ");
        assert_eq!(ntex.bytes, once.bytes, "{case:?}: read-once ntex differs");
        let want = if case == Case::IdleAfterResponse {
            ""
        } else {
            timeout
        };
        assert_eq!(actix.bytes, want, "{case:?}");
        let (a, n) = (
            actix.closed_after.as_secs_f64(),
            ntex.closed_after.as_secs_f64(),
        );
        assert!(
            (a - n).abs() <= 0.1 * a.max(n),
            "{case:?}: actix closed after {a:.2} s, ntex after {n:.2} s"
        );
        for t in [a, n, once.closed_after.as_secs_f64()] {
            assert!((4.5..=5.6).contains(&t), "{case:?}: closed after {t:.2} s");
        }
    }
}

/// `--client-timeout 2` moves the 408 for both; 0 switches it off (with
/// `keepalive-os`, and is refused in one line without it).
#[test]
fn client_timeout_moves_and_zero_is_off() {
    let runs: Vec<_> = Framework::BOTH
        .into_iter()
        .flat_map(|fw| [(fw, "2"), (fw, "0")])
        .map(|(fw, secs)| {
            std::thread::spawn(move || {
                // keepalive-os beside the global counter, a build the
                // e2e tests run too (the counter's kind plays no part in
                // timeouts): one variant fewer to build for the tests.
                let features = if secs == "0" {
                    sets::Features(&["global-counter", "keepalive-os"])
                } else {
                    sets::DEFAULT
                };
                let server = Server::start(
                    &Variant::new(fw, features),
                    &["--workers", "1", "--client-timeout", secs],
                );
                assert!(
                    server.startup_line.contains(if secs == "0" {
                        " client_timeout=off keep_alive=os "
                    } else {
                        " client_timeout=2s keep_alive=5s "
                    }),
                    "{}",
                    server.startup_line
                );
                let mut stream = TcpStream::connect(server.addr).unwrap();
                if secs == "2" {
                    let start = Instant::now();
                    let got = mask_date(&read_to_close(&mut stream));
                    assert!(got.starts_with("HTTP/1.1 408 "), "{fw:?}: {got}");
                    let t = start.elapsed().as_secs_f64();
                    assert!((1.0..=3.0).contains(&t), "{fw:?}: 408 after {t:.2} s");
                } else {
                    // Well past the 5 s default: still open, and it serves.
                    std::thread::sleep(Duration::from_secs(7));
                    stream.write_all(REQUEST).unwrap();
                    let mut conn = conformance::Conn::from_stream(stream);
                    assert_eq!(conn.read_response(false).unwrap().status, 200, "{fw:?}");
                }
            })
        })
        .collect();
    for run in runs {
        run.join().unwrap();
    }
    for fw in Framework::BOTH {
        let out = std::process::Command::new(Variant::new(fw, sets::DEFAULT).binary())
            .args(["--bind", "127.0.0.1:0", "--client-timeout", "0"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("--client-timeout 0 needs a build with the keepalive-os feature"),
            "{err}"
        );
    }
}
