//! The twins' HTTP/1 differences that ntex-server aligns with actix-web
//! (`ntex-server/src/strict.rs`), each checked byte for byte (status,
//! headers but `date` and `server`, body, whether the connection closed)
//! on both twins against what actix-http does. The differences that remain
//! are listed in this crate's README.

use std::time::Duration;

use conformance::fuzz::{self, Case, Outcome};

fn case(bytes: &str) -> Case {
    Case {
        n: 0,
        kind: "aligned".into(),
        bytes: bytes.as_bytes().to_vec(),
        splits: Vec::new(),
    }
}

fn outcome(responses: &[&str], closed: bool) -> Outcome {
    Outcome {
        responses: responses.iter().map(|r| r.to_string()).collect(),
        tail: String::new(),
        closed,
    }
}

const NOT_FOUND: &str =
    "404|content-length: 34|content-type: text/plain||not found: the only resource is /\n";
const NOT_FOUND_CLOSE: &str = "404|connection: close|content-length: 34|content-type: text/plain||not found: the only resource is /\n";
const REFUSED: &str = "400|connection: close|content-length: 0||";

#[test]
fn ntex_answers_what_actix_http_refuses_and_drains_like_it() {
    let (actix, ntex) = fuzz::start_twins();
    // ntex against the patched read path and the patched service calls
    // (patches/) must answer alike.
    let patched = |p| {
        conformance::Server::start(
            &conformance::Variant::new(conformance::Framework::Ntex, [p]),
            &["--workers", "1"],
        )
    };
    let (once, nowait) = (patched("ntex-read-once"), patched("ntex-call-nowait"));
    let cases = [
        (
            "two Host headers: 400 and close, the pipelined GET unanswered",
            "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\nGET /x HTTP/1.1\r\nHost: t\r\n\r\n",
            outcome(&[REFUSED], true),
        ),
        (
            "a POST with two Host headers: its body is not read",
            "POST / HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 1\r\n\r\n5",
            outcome(&[REFUSED], true),
        ),
        (
            "HTTP/1.1 without Host: 400 and close",
            "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n",
            outcome(&[REFUSED], true),
        ),
        (
            "HTTP/1.0 without Host is served",
            "GET /x HTTP/1.0\r\n\r\n",
            outcome(&[NOT_FOUND], true),
        ),
        (
            "an unread chunked body is drained: the connection is kept",
            "POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /x HTTP/1.1\r\nHost: t\r\n\r\n",
            outcome(&[NOT_FOUND, NOT_FOUND], false),
        ),
        (
            "Connection: close, then Connection: keep-alive: close wins",
            "GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n",
            outcome(&[NOT_FOUND_CLOSE], true),
        ),
        (
            "close after another option in one Connection header",
            "GET /x HTTP/1.1\r\nHost: t\r\nConnection: keep-alive, close\r\n\r\n",
            outcome(&[NOT_FOUND_CLOSE], true),
        ),
        (
            "Connection: keep-alive alone keeps the connection",
            "GET /x HTTP/1.1\r\nHost: t\r\nConnection: keep-alive\r\n\r\nGET /x HTTP/1.1\r\nHost: t\r\n\r\n",
            outcome(&[NOT_FOUND, NOT_FOUND], false),
        ),
    ];
    let (first, idle) = (Duration::from_millis(500), Duration::from_millis(250));
    let mut wrong = Vec::new();
    for (what, bytes, want) in &cases {
        let c = case(bytes);
        for (name, server) in [
            ("actix", &actix),
            ("ntex", &ntex),
            ("ntex-read-once", &once),
            ("ntex-call-nowait", &nowait),
        ] {
            let got = fuzz::play(server.addr, &c, first, idle);
            if &got != want {
                wrong.push(format!("{name}, {what}: got {got:?}, want {want:?}"));
            }
        }
    }
    assert!(actix.stop().status.success());
    assert!(ntex.stop().status.success());
    assert!(once.stop().status.success());
    assert!(nowait.stop().status.success());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
