//! More connections than file descriptors (issue 27, part 2). Each twin runs
//! under `prlimit --nofile=64:64` (it raises its soft limit to the hard one
//! at start, so 64 is what it gets and says in its start-up line). Then:
//!
//! 1. 24 keep-alive connections, each answered;
//! 2. 96 more, each sending a request at once: the server runs out of
//!    descriptors part way, and the rest wait in the listen backlog
//!    unanswered;
//! 3. while it is out of descriptors, the first 24 are still served, and its
//!    CPU time over 2 s shows whether its accept loop spins on EMFILE (a
//!    spinning loop takes a whole core; the check allows half of one, so it
//!    is not a speed test: only a loop that retries at once fails it);
//! 4. once connections close, the waiting ones are accepted and answered,
//!    and a new connection is served.
//!
//! The same on both twins; what each did is printed (`--nocapture`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use conformance::{sets, Framework, Server, Variant};

const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n";

/// Sends a GET on `s` and waits up to `wait` for a complete 200 response.
fn answered(s: &mut TcpStream, send: bool, wait: Duration) -> bool {
    if send && s.write_all(REQUEST).is_err() {
        return false;
    }
    s.set_read_timeout(Some(wait)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got);
                if let Some(head_end) = text.find("\r\n\r\n") {
                    // Counts are one to a few digits: the body is in by now
                    // or in the next read.
                    let len: usize = text
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length: ")
                                .map(str::to_owned)
                        })
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if got.len() >= head_end + 4 + len {
                        return text.starts_with("HTTP/1.1 200");
                    }
                }
            }
        }
    }
    false
}

/// utime + stime of `pid`, in clock ticks.
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = stat.rsplit_once(')').unwrap().1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the comm: state is field 0; utime and stime are fields 11, 12.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

fn prlimit() -> PathBuf {
    ["/usr/bin/prlimit", "/bin/prlimit"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("prlimit (util-linux) is missing")
}

#[test]
fn past_the_descriptor_limit_both_twins_keep_serving_do_not_spin_and_recover() {
    for fw in Framework::BOTH {
        let variant = Variant::new(fw, sets::DEFAULT);
        let bin = conformance::binary(&variant).display().to_string();
        let server = Server::spawn_raw(
            &prlimit(),
            &[
                "--nofile=64:64",
                &bin,
                "--bind",
                "127.0.0.1:0",
                "--workers",
                "1",
            ],
        )
        .unwrap_or_else(|e| panic!("{fw:?}: {e}"));
        assert!(
            server.startup_line.contains(" nofile=64 "),
            "{fw:?}: {}",
            server.startup_line
        );
        let connect = || TcpStream::connect(server.addr).unwrap();
        // 1. Within the limit: every connection answered.
        let mut first: Vec<TcpStream> = (0..24).map(|_| connect()).collect();
        for (i, s) in first.iter_mut().enumerate() {
            assert!(
                answered(s, true, Duration::from_secs(5)),
                "{fw:?}: connection {i}"
            );
        }
        // 2. Past it: the kernel completes the handshakes (backlog), the
        //    server accepts until it has no descriptor left.
        //    (Quickly: the first connections' keep-alive is 5 s.)
        let mut more: Vec<TcpStream> = (0..96).map(|_| connect()).collect();
        for s in more.iter_mut() {
            s.write_all(REQUEST).unwrap();
        }
        std::thread::sleep(Duration::from_millis(500));
        let mut waiting = Vec::new();
        let mut served = 0;
        for (i, s) in more.iter_mut().enumerate() {
            if answered(s, false, Duration::from_millis(20)) {
                served += 1;
            } else {
                waiting.push(i);
            }
        }
        assert!(
            !waiting.is_empty(),
            "{fw:?}: 120 connections under a limit of 64 all served"
        );
        // 3. Out of descriptors: the connections it has are served...
        for (i, s) in first.iter_mut().enumerate() {
            assert!(
                answered(s, true, Duration::from_secs(5)),
                "{fw:?}: kept connection {i} not served while out of descriptors"
            );
        }
        // ...and it does not spin on the failing accept.
        let t0 = cpu_ticks(server.pid());
        std::thread::sleep(Duration::from_secs(2));
        let cpu = (cpu_ticks(server.pid()) - t0) as f64 / ticks_per_second() / 2.0;
        let errors = server
            .stderr_so_far()
            .iter()
            .filter(|l| !l.contains(" listening "))
            .count();
        println!(
            "{fw:?}: served {} of 120 connections under nofile=64, {} waiting; CPU while refused {:.1} % of a core; {errors} stderr lines",
            24 + served,
            waiting.len(),
            cpu * 100.0
        );
        assert!(
            cpu < 0.5,
            "{fw:?}: {:.0} % of a core while out of descriptors",
            cpu * 100.0
        );
        // 4. Descriptors freed: the waiting connections are accepted and
        //    answered (their requests are already in their buffers).
        drop(first);
        let mut rest: Vec<TcpStream> = Vec::new();
        for (i, s) in more.into_iter().enumerate() {
            if waiting.contains(&i) {
                rest.push(s);
            }
        }
        let mut late = 0;
        for s in rest.iter_mut().take(30) {
            if answered(s, false, Duration::from_secs(5)) {
                late += 1;
            }
        }
        assert!(
            late > 0,
            "{fw:?}: no waiting connection answered after others closed"
        );
        drop(rest);
        std::thread::sleep(Duration::from_millis(200));
        let res = server.conn().post(b"5").unwrap();
        assert_eq!(res.status, 200, "{fw:?}: a new connection after recovery");
        let exit = server.stop();
        assert!(exit.status.success(), "{fw:?}: {exit:?}");
    }
}
