//! `alloc-reclaim`: once the open connections are back to zero, the server
//! hands freed memory back to the system, says so in one line, and its
//! resident memory falls; without the feature nothing of the kind happens.

use std::time::{Duration, Instant};

use conformance::{sets, Conn, Framework, Server, Variant};

/// Opens `n` connections, each with one answered GET, and keeps them.
fn hold(server: &Server, n: usize) -> Vec<Conn> {
    (0..n)
        .map(|_| {
            let mut c = server.conn();
            let res = c.get().expect("GET on a held connection");
            assert_eq!(res.status, 200);
            c
        })
        .collect()
}

fn reclaim_lines(server: &Server) -> Vec<String> {
    server
        .stderr_so_far()
        .into_iter()
        .filter(|l| l.contains(" reclaim "))
        .collect()
}

fn field(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
}

#[test]
fn reclaim_gives_memory_back_once_connections_close() {
    for fw in Framework::BOTH {
        // With keepalive-os, as e2e's memory fixture builds ntex's (this
        // test closes its connections itself, so keep-alive plays no
        // part): one build fewer for the tests.
        let variant = Variant::new(fw, ["keepalive-os", "alloc-reclaim"]);
        let server = Server::start(&variant, &["--workers", "1"]);
        assert!(
            server.startup_line.contains(" allocator=glibc "),
            "{}",
            server.startup_line
        );
        let held = hold(&server, 3000);
        // Held: no reclaim while connections are open.
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            reclaim_lines(&server).is_empty(),
            "{fw:?}: reclaimed with connections open"
        );
        let busy = server.rss_kib();
        drop(held);
        let deadline = Instant::now() + Duration::from_secs(10);
        let line = loop {
            if let Some(l) = reclaim_lines(&server).pop() {
                break l;
            }
            assert!(
                Instant::now() < deadline,
                "{fw:?}: no reclaim line within 10 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(
            line.starts_with(&format!(
                "{} reclaim allocator=glibc call=malloc_trim(0) ",
                fw.binary()
            )),
            "{line}"
        );
        let (before, after) = (
            field(&line, "rss_before_kib"),
            field(&line, "rss_after_kib"),
        );
        // glibc kept the connections' buffers (before is near the busy
        // figure); the trim gave most of them back.
        assert!(before > after, "{fw:?}: {line}");
        assert!(
            server.rss_kib() < busy,
            "{fw:?}: {} KiB now, {busy} KiB held",
            server.rss_kib()
        );
        // Once per return to zero.
        std::thread::sleep(Duration::from_millis(2200));
        assert_eq!(reclaim_lines(&server).len(), 1, "{fw:?}");
        // And again after the next busy spell (long enough to be seen: the
        // connections are counted once a second).
        let again = hold(&server, 10);
        std::thread::sleep(Duration::from_millis(1500));
        drop(again);
        std::thread::sleep(Duration::from_millis(2500));
        assert_eq!(reclaim_lines(&server).len(), 2, "{fw:?}");
        server.stop();
    }
}

#[test]
fn without_the_feature_nothing_is_reclaimed() {
    for fw in Framework::BOTH {
        let server = Server::start(&Variant::new(fw, sets::DEFAULT), &["--workers", "1"]);
        drop(hold(&server, 200));
        std::thread::sleep(Duration::from_millis(2500));
        assert!(reclaim_lines(&server).is_empty(), "{fw:?}");
        server.stop();
    }
}
