//! The `loadgen` binary: output formats, exit codes, bad input.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{loadgen, schema_checked_records, Behaviour, TestServer};

/// The original study's rule: the interval's ms is the last token before
/// `ms:`, its count the first token after.
fn original_rule(line: &str) -> Option<(f64, f64)> {
    let (before, after) = line.split_once("ms:")?;
    let ms = before.split_whitespace().last()?.parse().ok()?;
    let count = after.split_whitespace().next()?.parse().ok()?;
    Some((ms, count))
}

#[test]
fn text_intervals_parse_with_the_original_rule() {
    let server = TestServer::start(Behaviour::Ok);
    let (code, out, err) = loadgen(&[
        "-d",
        "1s",
        "--interval",
        "200ms",
        "--warmup",
        "200ms",
        "-c",
        "4",
        &server.url(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("ms:")).collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert!(lines[0].ends_with(" warmup"), "{}", lines[0]);
    let mut measured = 0.0;
    for line in &lines[1..] {
        let (ms, count) = original_rule(line).unwrap_or_else(|| panic!("unparsable: {line}"));
        assert!((150.0..=260.0).contains(&ms), "{line}");
        assert!(line.contains(&format!(" 2xx={count} ")), "{line}");
        measured += count;
    }
    let summary = out
        .lines()
        .find(|l| l.trim_start().starts_with("requests:"))
        .unwrap();
    assert!(
        summary.contains(&format!("(2xx {measured},")),
        "{summary} vs {measured}"
    );
    assert!(
        err.is_empty(),
        "no progress bar when stderr is not a terminal: {err:?}"
    );
}

#[test]
fn jsonl_records_match_the_schema() {
    let server = TestServer::start(Behaviour::Ok);
    let (records, validator) = schema_checked_records(&[
        "--format",
        "jsonl",
        "-d",
        "600ms",
        "--interval",
        "200ms",
        "--warmup",
        "200ms",
        "--shard",
        "east",
        "-c",
        "2",
        "--body",
        "500",
        &server.url(),
    ]);
    assert!(records.len() >= 4, "{records:?}");
    assert!(records.iter().all(|r| r["shard"] == "east"));
    assert_eq!(records[0]["warmup"], true);
    assert_eq!(records.last().unwrap()["type"], "summary");
    // Histograms survive the trip through jsonl: the summary's decodes to
    // exactly its counts and percentiles, the measured intervals' add up
    // to its count (they are coarser, so only counts are compared).
    let summary = records.last().unwrap();
    let h = loadgen::histlog::decode(summary["histogram"].as_str().unwrap()).unwrap();
    let count = summary["ok"].as_u64().unwrap();
    assert!(count > 0);
    assert_eq!(h.len(), count);
    for (key, q) in [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999)] {
        assert_eq!(summary["latency_us"][key], h.value_at_quantile(q), "{key}");
    }
    assert_eq!(summary["latency_us"]["max"], h.max());
    let measured: u64 = records
        .iter()
        .filter(|r| r["type"] == "interval" && r["warmup"] == false)
        .map(|r| {
            loadgen::histlog::decode(r["histogram"].as_str().unwrap())
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(measured, count);
    // The schema is not a rubber stamp: a record missing a field fails it.
    let mut broken = records[1].clone();
    broken.as_object_mut().unwrap().remove("ok");
    assert!(!validator.is_valid(&broken));
    // Closed model: no send lateness.
    assert!(records.iter().all(|r| r.get("send_lateness_us").is_none()));
}

#[test]
fn open_model_records_carry_send_lateness() {
    let server = TestServer::start(Behaviour::Ok);
    let (records, _) = schema_checked_records(&[
        "--format",
        "jsonl",
        "-d",
        "600ms",
        "--interval",
        "200ms",
        "-c",
        "4",
        "--rate",
        "500",
        &server.url(),
    ]);
    let summary = records.last().unwrap();
    let late = &summary["send_lateness_us"];
    assert!(
        late["p50"].as_u64().unwrap() <= late["max"].as_u64().unwrap(),
        "{summary}"
    );
    // The client's own share: sends due on an idle connection, a subset.
    let client = &summary["client_lateness_us"];
    assert!(
        client["max"].as_u64().unwrap() <= late["max"].as_u64().unwrap(),
        "{summary}"
    );
    assert!(records[..records.len() - 1]
        .iter()
        .any(|r| r["send_lateness_us"]["max"].is_u64()));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["not a url"][..],
        &["ftp://127.0.0.1/"],
        &["--ca-file", "/nonexistent/ca.pem", "https://127.0.0.1:1/"],
        &["--ca-file", "/etc/hostname", "https://127.0.0.1:1/"],
        &[
            "--insecure",
            "--ca-file",
            "/etc/hostname",
            "https://127.0.0.1:1/",
        ],
        &["--hold", "1s", "--insecure", "https://127.0.0.1:1/"],
        &["--requests-per-connection", "0", "http://127.0.0.1:1/"],
        &["http://no-such-host.invalid/"],
        &["-c", "0", "http://127.0.0.1:1/"],
        &["--rate", "0", "http://127.0.0.1:1/"],
        &["--rate", "-5", "http://127.0.0.1:1/"],
        &["--rate", "abc", "http://127.0.0.1:1/"],
        &["-d", "0s", "http://127.0.0.1:1/"],
        &["-d", "ten", "http://127.0.0.1:1/"],
        &["--body-file", "/nonexistent/body", "http://127.0.0.1:1/"],
        &["--body-hex", "f4z1", "http://127.0.0.1:1/"],
        &["--body", "1", "--body-hex", "01", "http://127.0.0.1:1/"],
        &["--rate", "10", "--pipeline", "2", "http://127.0.0.1:1/"],
        &["-t", "4", "-c", "2", "http://127.0.0.1:1/"],
        &["-H", "no colon", "http://127.0.0.1:1/"],
        // More connections than any open-file limit allows.
        &["-c", "4000000000", "http://127.0.0.1:1/"],
        &["--spin-before", "50us", "http://127.0.0.1:1/"],
        &[],
    ] {
        let started = Instant::now();
        let (code, out, err) = loadgen(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.starts_with("loadgen: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.is_empty());
        assert!(started.elapsed() < Duration::from_secs(5));
    }
    let (_, _, err) = loadgen(&["--body-file", "/nonexistent/body", "http://127.0.0.1:1/"]);
    assert!(err.contains("/nonexistent/body"), "{err}");
}

#[test]
fn a_target_that_never_answers_is_exit_1() {
    // Bind then drop: the port is closed, so connecting is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, out, err) = loadgen(&["-d", "1s", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    assert!(out.is_empty());
}

#[test]
fn exit_1_when_nothing_succeeds_or_the_error_rate_is_too_high() {
    let server = TestServer::start(Behaviour::Status(503));
    let (code, out, err) = loadgen(&["-n", "20", "-c", "2", &server.url()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no request succeeded"), "{err}");
    assert!(
        out.contains("Summary:"),
        "the summary is still printed: {out}"
    );

    let ok = TestServer::start(Behaviour::Ok);
    let (code, _, err) = loadgen(&["-n", "20", "-c", "2", "--max-error-rate", "0", &ok.url()]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn sigint_ends_early_and_still_prints_the_summary() {
    let server = TestServer::start(Behaviour::Ok);
    let child = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["-d", "60s", "-c", "2", &server.url()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ms:"), "{stdout}");
    assert!(stdout.contains("Summary:"), "{stdout}");
}

#[test]
fn a_late_wake_at_the_deadline_does_not_lengthen_the_last_interval() {
    // loadgen stopped (SIGSTOP) from mid-way through its last interval
    // until past its deadline: woken, it closes that interval at the
    // deadline, not when it woke, so the interval's length and the
    // summary's duration (2xx/s's denominator) stay the schedule's.
    let server = TestServer::start(Behaviour::Ok);
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["--format", "jsonl", "-d", "2s", "--interval", "1s"])
        .args(["-c", "2", "--rate", "50", &server.url()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let first = lines.next().unwrap().unwrap();
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["index"], 0, "{first}");
    // The first record comes out at 1 s; stopped at about 1.4 s, woken at
    // about 2.6 s, 0.6 s past the deadline.
    std::thread::sleep(Duration::from_millis(400));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(1200));
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
    let rest: Vec<serde_json::Value> = lines
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{rest:?}");
    let [last, summary] = rest.as_slice() else {
        panic!("one interval and the summary: {rest:?}");
    };
    assert_eq!(last["index"], 1, "{last}");
    // The two intervals run from the start to the 2 s deadline (the 1 s
    // boundary between them wherever the first closed); before, the last
    // ended at the wake-up, about 2.6 s from the start.
    let lengths: f64 = [&first, last]
        .iter()
        .map(|r| r["length_ms"].as_f64().unwrap())
        .sum();
    assert!((lengths - 2000.0).abs() < 0.01, "{first} {last}");
    assert_eq!(summary["type"], "summary", "{summary}");
    let duration = summary["duration_s"].as_f64().unwrap();
    assert!((duration - 2.0).abs() < 1e-5, "{summary}");
}
