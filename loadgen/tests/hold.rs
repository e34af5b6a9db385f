//! `loadgen --hold`: connections held, the server's early closes, and a
//! set-up that stops by itself.

mod support;

use std::time::{Duration, Instant};

use support::{loadgen, schema_checked_records, Behaviour, TestServer};

#[test]
fn holds_every_connection_then_closes_them() {
    let server = TestServer::start(Behaviour::Ok);
    let url = server.url();
    let (records, validator) = schema_checked_records(&[
        "--hold", "400ms", "-c", "40", "--format", "jsonl", "--shard", "h", &url,
    ]);
    assert_eq!(records.len(), 2, "{records:?}");
    let (held, end) = (&records[0], &records[1]);
    assert_eq!(held["type"], "held");
    assert_eq!(end["type"], "hold_summary");
    for r in [held, end] {
        assert_eq!(r["connections"], 40);
        assert_eq!(r["established"], 40);
        assert_eq!(r["ok"], 40);
        assert_eq!(r["not_attempted"], 0);
        assert_eq!(r["shard"], "h");
    }
    assert_eq!(held["held_ms"], 0.0);
    assert!(end["held_ms"].as_f64().unwrap() >= 400.0, "{end}");
    assert_eq!(end["closed_early"], 0);
    assert_eq!(end["unsolicited"], 0);
    // One request per connection, no more.
    assert_eq!(server.answered(), 40);
    // The schema is not a rubber stamp here either.
    let mut broken = end.clone();
    broken.as_object_mut().unwrap().remove("closed_early");
    assert!(!validator.is_valid(&broken));
}

#[test]
fn counts_what_the_server_closes_early() {
    // An idle timeout with an unsolicited 408 first (as ntex does), then a
    // silent one.
    for (behaviour, unsolicited) in [
        (Behaviour::Idle408(100), 12),
        (Behaviour::IdleClose(100), 0),
    ] {
        let server = TestServer::start(behaviour);
        let url = server.url();
        let (records, _) =
            schema_checked_records(&["--hold", "700ms", "-c", "12", "--format", "jsonl", &url]);
        let end = &records[1];
        assert_eq!(end["established"], 12, "{behaviour:?}: {end}");
        assert_eq!(end["closed_early"], 12, "{behaviour:?}: {end}");
        assert_eq!(end["unsolicited"], unsolicited, "{behaviour:?}: {end}");
    }
}

#[test]
fn set_up_stops_at_the_timeout() {
    // A server that reads and never answers: the first request waits out the
    // timeout, the others are not tried, and nothing could be held: exit 1.
    let server = TestServer::start(Behaviour::Never);
    let url = server.url();
    let started = Instant::now();
    let (code, out, err) = loadgen(&[
        "--hold",
        "10s",
        "-c",
        "5",
        "--timeout",
        "300ms",
        "--format",
        "jsonl",
        &url,
    ]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(started.elapsed() < Duration::from_secs(8), "not bounded");
    let end: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(end["type"], "hold_summary");
    assert_eq!(end["established"], 0);
    assert_eq!(end["errors"]["timeout"], 1, "{end}");
    assert_eq!(end["not_attempted"], 4, "{end}");
    assert_eq!(end["held_ms"], 0.0, "nothing held, nothing waited for");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no connection could be held"), "{err}");
}

#[test]
fn bad_hold_usage_is_one_line() {
    for args in [
        &["--hold", "1s", "--rate", "10", "http://127.0.0.1:1/"][..],
        &["--hold", "1s", "-d", "1s", "http://127.0.0.1:1/"],
        &["--hold", "1s", "--warmup", "1s", "http://127.0.0.1:1/"],
        &["--hold", "0s", "http://127.0.0.1:1/"],
    ] {
        let (code, _, err) = loadgen(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    // Nobody listening: one line, exit 1.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, _, err) = loadgen(&["--hold", "1s", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot connect"), "{err}");
}
