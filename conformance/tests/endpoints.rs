//! Every endpoint and every bad input, on both servers, and the twins give
//! the same status, content type, `Allow` and body byte for byte.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use conformance::cases::{chunked, req, text_cases, Case};
use conformance::{sets, Conn, Framework, Response, Server, Variant};

fn binary_cases() -> Vec<Case> {
    let le = |v: u16| v.to_le_bytes();
    let count = |v: u64| Some(v.to_le_bytes().to_vec());
    let c = |name, raw, status, body: Option<Vec<u8>>| Case {
        name,
        raw,
        status,
        body,
    };
    vec![
        c("fresh count", req("GET", "/", None), 200, count(0)),
        c("add 500", req("POST", "/", Some(&le(500))), 200, count(500)),
        c("add 1", req("POST", "/", Some(&le(1))), 200, count(501)),
        c("chunked halves", chunked(&[&[2], &[0]]), 200, count(503)),
        c(
            "over 500",
            req("POST", "/", Some(&le(501))),
            400,
            Some(b"value is over 500\n".to_vec()),
        ),
        c(
            "one byte",
            req("POST", "/", Some(&[5])),
            400,
            Some(b"binary body must be exactly 2 bytes\n".to_vec()),
        ),
        c(
            "three bytes",
            req("POST", "/", Some(b"500")),
            400,
            Some(b"binary body must be exactly 2 bytes\n".to_vec()),
        ),
        c(
            "empty",
            req("POST", "/", Some(b"")),
            400,
            Some(b"body is empty\n".to_vec()),
        ),
        c(
            "put",
            req("PUT", "/", None),
            405,
            Some(b"method not allowed: use GET or POST on /\n".to_vec()),
        ),
        c(
            "other path",
            req("GET", "/a", None),
            404,
            Some(b"not found: the only resource is /\n".to_vec()),
        ),
        c(
            "unchanged by errors",
            req("GET", "/", None),
            200,
            count(503),
        ),
        c(
            "declared too large",
            req("POST", "/", Some(&[1; 65])),
            413,
            Some(b"body is larger than the server's limit\n".to_vec()),
        ),
    ]
}

/// Plays the cases on one keep-alive connection (reconnecting after a 413)
/// and checks each expectation.
fn play(variant: &Variant, cases: &[Case]) -> Vec<Response> {
    let server = Server::start(variant, &[]);
    let mut conn = server.conn();
    let mut responses = Vec::new();
    for case in cases {
        conn.send(&case.raw).unwrap();
        let res = conn
            .read_response(false)
            .unwrap_or_else(|e| panic!("{} {}: {e}", variant.name(), case.name));
        assert_eq!(
            res.status,
            case.status,
            "{} {}: {res:?}",
            variant.name(),
            case.name
        );
        if let Some(body) = &case.body {
            assert_eq!(
                &res.body,
                body,
                "{} {}: {}",
                variant.name(),
                case.name,
                res.text()
            );
        }
        let len: usize = res.header("content-length").unwrap().parse().unwrap();
        assert_eq!(len, res.body.len());
        // actix-web closes a connection whose request body was left unread
        // (and says so); ntex keeps it. Only the bytes of the answer are
        // compared, so follow whichever the server announced.
        if res.header("connection") == Some("close") {
            conn = server.conn();
        }
        responses.push(res);
    }
    let exit = server.stop();
    assert!(exit.status.success(), "{}: {:?}", variant.name(), exit);
    responses
}

fn twins_agree(features: sets::Features, cases: Vec<Case>, count_type: &str) {
    let actix = play(&Variant::new(Framework::Actix, features), &cases);
    let ntex = play(&Variant::new(Framework::Ntex, features), &cases);
    for ((case, a), n) in cases.iter().zip(&actix).zip(&ntex) {
        assert_eq!(a.essence(), n.essence(), "twins differ on {}", case.name);
        let expected_type = if a.status == 200 {
            count_type
        } else {
            "text/plain"
        };
        assert_eq!(
            a.header("content-type"),
            Some(expected_type),
            "{}",
            case.name
        );
        let allow = (a.status == 405).then_some("GET, POST");
        assert_eq!(a.header("allow"), allow, "{}", case.name);
    }
}

#[test]
fn text_endpoints_and_bad_input_on_both_twins() {
    twins_agree(sets::DEFAULT, text_cases(), "text/plain");
}

#[test]
fn ntex_runtimes_answer_with_the_same_bytes() {
    // ntex's own drivers (epoll, io_uring) and compio against actix on
    // tokio, and ntex on tokio with its read path patched (ntex-read-once,
    // patches/) or its service calls made without a readiness check
    // (ntex-call-nowait): neither the runtime nor a patch may change a byte
    // of any answer.
    let cases = text_cases();
    let actix = play(&Variant::new(Framework::Actix, sets::DEFAULT), &cases);
    for rt in [
        "rt-neon",
        "rt-uring",
        "rt-compio",
        "ntex-read-once",
        "ntex-call-nowait",
    ] {
        let ntex = play(&Variant::new(Framework::Ntex, [rt]), &cases);
        for ((case, a), n) in cases.iter().zip(&actix).zip(&ntex) {
            assert_eq!(a.essence(), n.essence(), "{rt}: differs on {}", case.name);
        }
    }
}

#[test]
fn text_endpoints_with_the_tuned_features() {
    // no-alloc changes how the body is collected and the answer encoded: the
    // bytes on the wire must not change.
    twins_agree(sets::TUNED, text_cases(), "text/plain");
}

#[test]
fn binary_endpoints_and_bad_input_on_both_twins() {
    twins_agree(sets::BINARY, binary_cases(), "application/octet-stream");
}

/// A body far over the limit is refused from its headers alone: the 413
/// arrives while most of the body was never sent.
#[test]
fn oversized_body_gets_413_without_being_read() {
    for fw in Framework::BOTH {
        let server = Server::start(&Variant::new(fw, sets::DEFAULT), &[]);
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream
            .write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000000\r\n\r\n12345")
            .unwrap();
        let mut conn = Conn::from_stream(stream);
        let res = conn.read_response(false).unwrap();
        assert_eq!(res.status, 413, "{fw:?}");
        // Still serving, and nothing was added.
        assert_eq!(server.conn().get().unwrap().body, b"0");
        drop(server);
    }
}

/// `--max-body` moves the limit.
#[test]
fn max_body_flag_moves_the_limit() {
    for fw in Framework::BOTH {
        let server = Server::start(&Variant::new(fw, sets::DEFAULT), &["--max-body", "2"]);
        assert_eq!(server.conn().post(b"500").unwrap().status, 413, "{fw:?}");
        assert_eq!(server.conn().post(b"50").unwrap().status, 200, "{fw:?}");
    }
}

/// Garbage on the wire closes that connection at most; the server goes on.
#[test]
fn malformed_requests_do_not_stop_the_server() {
    for fw in Framework::BOTH {
        let server = Server::start(&Variant::new(fw, sets::DEFAULT), &[]);
        for junk in [
            &b"\x00\x01\x02\r\n\r\n"[..],
            b"GET\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        ] {
            let mut s = TcpStream::connect(server.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.write_all(junk).unwrap();
            let mut conn = Conn::from_stream(s);
            if let Ok(res) = conn.read_response(false) {
                assert!((400..500).contains(&res.status), "{fw:?}: {res:?}");
            }
        }
        let res = server.conn().post(b"5").unwrap();
        assert_eq!((res.status, res.body), (200, b"5".to_vec()), "{fw:?}");
    }
}

/// A request head up to `app_core::MAX_HEAD_BYTES` is read by both twins; a
/// longer one gets 431 from both (ntex's own default limit is 64 KiB, which
/// the differential fuzzing found).
#[test]
fn both_twins_read_heads_up_to_the_same_size() {
    for fw in Framework::BOTH {
        let server = Server::start(&Variant::new(fw, sets::DEFAULT), &[]);
        for (len, want) in [
            (70_000, 200),
            (app_core::MAX_HEAD_BYTES - 200, 200),
            (app_core::MAX_HEAD_BYTES + 100, 431),
        ] {
            let mut s = TcpStream::connect(server.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let head = format!(
                "GET / HTTP/1.1\r\nX-Big: {}\r\nHost: t\r\n\r\n",
                "a".repeat(len)
            );
            // The server may answer 431 and close before reading it all.
            let _ = s.write_all(head.as_bytes());
            let mut conn = Conn::from_stream(s);
            let res = conn
                .read_response(false)
                .unwrap_or_else(|e| panic!("{fw:?} {len}: {e}"));
            assert_eq!(res.status, want, "{fw:?}: a {len}-byte header");
        }
    }
}
