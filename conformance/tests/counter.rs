//! Counter correctness through HTTP: many clients at once, good and bad
//! requests mixed, for both counter modes on both twins.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use conformance::{sets, Framework, Server, Variant};

const CLIENTS: u64 = 8;
const REQUESTS: u64 = 250;

/// `CLIENTS` keep-alive connections POST in parallel; three in five requests
/// are refusals (400, 404, 413), so the server must keep serving through them. The final GET equals the sum of the accepted values.
fn parallel_total_is_exact(variant: &Variant) {
    let server = Server::start(variant, &["--workers", "2"]);
    let accepted = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let addr = server.addr;
            let accepted = Arc::clone(&accepted);
            std::thread::spawn(move || {
                let mut conn = conformance::Conn::open(addr).unwrap();
                for i in 0..REQUESTS {
                    let value = (client * 131 + i * 17) % 501;
                    let res = match i % 5 {
                        1 => conn.post(b"501").unwrap(),
                        2 if i % 10 == 2 => conn.request("GET", "/nope", None).unwrap(),
                        2 => conn.post(&[b'1'; 65]).unwrap(),
                        3 => conn.post(b"x1").unwrap(),
                        _ => conn.post(value.to_string().as_bytes()).unwrap(),
                    };
                    if i % 5 == 0 || i % 5 == 4 {
                        assert_eq!(res.status, 200, "{res:?}");
                        accepted.fetch_add(value, Ordering::Relaxed);
                    } else {
                        assert!([400, 404, 413].contains(&res.status), "{res:?}");
                    }
                    if res.header("connection") == Some("close") {
                        conn = conformance::Conn::open(addr).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
    let total = accepted.load(Ordering::Relaxed);
    assert!(total > 0);
    let res = server.conn().get().unwrap();
    assert_eq!(res.text(), total.to_string(), "{}", variant.name());
    assert!(server.stop().status.success());
}

#[test]
fn per_worker_counter_total_is_exact_under_parallel_posts() {
    for fw in Framework::BOTH {
        parallel_total_is_exact(&Variant::new(fw, sets::DEFAULT));
    }
}

#[test]
fn global_counter_total_is_exact_under_parallel_posts() {
    for fw in Framework::BOTH {
        parallel_total_is_exact(&Variant::new(fw, sets::TUNED));
    }
}

#[test]
fn read_once_ntex_counter_total_is_exact_under_parallel_posts() {
    // ntex against the patched ntex-net (patches/): every POST it
    // acknowledged under parallel load is in its count.
    parallel_total_is_exact(&Variant::new(Framework::Ntex, ["ntex-read-once"]));
}

#[test]
fn call_nowait_ntex_counter_total_is_exact_under_parallel_posts() {
    // ntex against the patched ntex-service (patches/): calling its
    // services without a readiness check loses no acknowledged POST.
    parallel_total_is_exact(&Variant::new(Framework::Ntex, ["ntex-call-nowait"]));
}

#[test]
fn mmap_counter_total_is_exact_under_parallel_posts() {
    for fw in Framework::BOTH {
        parallel_total_is_exact(&Variant::new(fw, sets::PERSISTENT));
    }
}
