//! Start-up line, flags, bad flags, and graceful shutdown on SIGTERM/SIGINT.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use conformance::{
    run_to_exit, sets, workspace_root, Conn, Framework, Server, Variant, VariantExt,
};

/// The version of `name` that Cargo.lock resolved.
fn locked_version(name: &str) -> String {
    let lock = std::fs::read_to_string(workspace_root().join("Cargo.lock")).unwrap();
    let marker = format!("name = \"{name}\"\nversion = \"");
    let start = lock.find(&marker).expect("package in Cargo.lock") + marker.len();
    lock[start..].split('"').next().unwrap().to_string()
}

#[test]
fn startup_line_names_address_framework_version_workers_and_features() {
    for (fw, features) in [
        (Framework::Actix, sets::DEFAULT),
        (Framework::Ntex, sets::DEFAULT),
        (Framework::Actix, sets::TUNED),
        (Framework::Ntex, sets::BINARY),
    ] {
        let variant = Variant::new(fw, features);
        let server = Server::start(&variant, &["--workers", "3", "--backlog", "77"]);
        let line = &server.startup_line;
        let fw_crate = fw.framework_crate();
        let expected_features = if features.is_empty() {
            "none".to_string()
        } else {
            let mut sorted = app_order(&features);
            sorted.dedup();
            sorted.join(",")
        };
        let allocator = ["snmalloc", "mimalloc", "jemalloc"]
            .into_iter()
            .find(|a| features.contains(a))
            .unwrap_or("glibc");
        let keep_alive = if features.contains(&"keepalive-os") {
            "os"
        } else {
            "5s"
        };
        let expected = format!(
            "{} listening addr={} framework={fw_crate}/{} workers=3 worker_rule=count backlog=77 client_timeout=5s keep_alive={keep_alive} shutdown_timeout=5s nofile={} allocator={allocator} runtime=tokio features={expected_features}",
            fw.binary(),
            server.addr,
            locked_version(fw_crate),
            hard_nofile(),
        );
        assert_eq!(line, &expected);
    }
}

/// The hard open-file limit the servers inherit: they raise their soft
/// limit to it and say so (`nofile=`).
fn hard_nofile() -> u64 {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) }, 0);
    l.rlim_max
}

/// Features in the fixed order the start-up line uses.
fn app_order(features: &[&'static str]) -> Vec<&'static str> {
    const ORDER: [&str; 12] = [
        "global-counter",
        "keepalive-os",
        "log-stdout",
        "log-file",
        "snmalloc",
        "mimalloc",
        "jemalloc",
        "alloc-reclaim",
        "mmap-backend",
        "no-alloc",
        "binary-payload",
        "calibrate",
    ];
    ORDER.into_iter().filter(|f| features.contains(f)).collect()
}

#[test]
fn default_workers_are_the_logical_cpus_for_both() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    for fw in Framework::BOTH {
        let variant = Variant::new(fw, sets::DEFAULT);
        let server = Server::spawn_raw(&variant.binary(), &["--bind", "127.0.0.1:0"]).unwrap();
        assert!(
            server
                .startup_line
                .contains(&format!(" workers={cpus} worker_rule=logical ")),
            "{}",
            server.startup_line
        );
    }
}

#[test]
fn the_physical_rule_counts_cores_once_and_says_so() {
    // Independently of the servers: distinct (package, core) pairs in sysfs.
    let mut cores = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir("/sys/devices/system/cpu").unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !(name.starts_with("cpu")
            && name[3..].chars().all(|c| c.is_ascii_digit())
            && name.len() > 3)
        {
            continue;
        }
        let read = |f: &str| std::fs::read_to_string(path.join("topology").join(f)).ok();
        if let (Some(p), Some(c)) = (read("physical_package_id"), read("core_id")) {
            cores.insert((p, c));
        }
    }
    let want = format!(" workers={} worker_rule=physical ", cores.len());
    for fw in Framework::BOTH {
        let variant = Variant::new(fw, sets::DEFAULT);
        let server = Server::spawn_raw(
            &variant.binary(),
            &["--bind", "127.0.0.1:0", "--workers", "physical"],
        )
        .unwrap();
        assert!(
            server.startup_line.contains(&want),
            "{} / {want}",
            server.startup_line
        );
    }
}

/// SIGTERM and SIGINT both stop accepting, let the request in flight finish
/// and exit 0 (ntex-read-once too: the rest of the body comes after the
/// signal, on a socket its read path last left after a short read; and
/// ntex-call-nowait, whose services are called without a readiness check).
#[test]
fn signals_finish_the_request_in_flight_and_exit_0() {
    let variants = Framework::BOTH
        .map(|fw| Variant::new(fw, sets::DEFAULT))
        .into_iter()
        .chain(["ntex-read-once", "ntex-call-nowait"].map(|p| Variant::new(Framework::Ntex, [p])));
    for variant in variants {
        let fw = variant.name();
        for sig in [libc::SIGTERM, libc::SIGINT] {
            let server = Server::start(&variant, &[]);
            let mut stream = TcpStream::connect(server.addr).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            stream
                .write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\n50")
                .unwrap();
            // Let the server start on the request, then signal mid-body.
            std::thread::sleep(Duration::from_millis(300));
            server.signal(sig);
            std::thread::sleep(Duration::from_millis(300));
            stream.write_all(b"0").unwrap();
            let res = Conn::from_stream(stream).read_response(false).unwrap();
            assert_eq!(
                (res.status, res.text().as_str()),
                (200, "500"),
                "{fw} sig {sig}"
            );
            let exit = server.wait();
            assert_eq!(
                exit.status.code(),
                Some(0),
                "{fw} sig {sig}: {:?}",
                exit.stderr
            );
        }
    }
}

/// `--shutdown-timeout` bounds a graceful stop: a request whose body never
/// comes is given that long, then the server exits 0 (well before the
/// default 5 s).
#[test]
fn the_shutdown_timeout_bounds_a_stop_with_a_request_stuck() {
    for fw in Framework::BOTH {
        let server = Server::start(
            &Variant::new(fw, sets::DEFAULT),
            &["--shutdown-timeout", "1"],
        );
        assert!(
            server.startup_line.contains(" shutdown_timeout=1s "),
            "{}",
            server.startup_line
        );
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream
            .write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\n5")
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let signalled = std::time::Instant::now();
        server.signal(libc::SIGTERM);
        let exit = server.wait();
        let took = signalled.elapsed();
        assert_eq!(exit.status.code(), Some(0), "{fw:?}: {:?}", exit.stderr);
        assert!(
            took < Duration::from_secs(4),
            "{fw:?}: stopped after {took:?}"
        );
        drop(stream);
    }
}

#[test]
fn bad_flags_get_one_line_and_a_non_zero_exit() {
    for fw in Framework::BOTH {
        let plain = Variant::new(fw, sets::DEFAULT);
        let bin = fw.binary();
        let (code, err) = run_to_exit(
            &plain,
            &["--bind", "127.0.0.1:0", "--counter-file", "/tmp/x"],
        );
        assert_eq!(code, Some(1));
        assert_eq!(
            err,
            format!("{bin}: error: --counter-file needs a build with the mmap-backend feature\n")
        );

        let (code, err) = run_to_exit(&plain, &["--bind", "127.0.0.1:0", "--log-file", "/tmp/x"]);
        assert_eq!((code, err.lines().count()), (Some(1), 1), "{err}");

        let (code, err) = run_to_exit(&plain, &["--bind", "127.0.0.1:0", "--workers", "0"]);
        assert_eq!((code, err.lines().count()), (Some(2), 1), "{err}");
        assert!(err.contains("logical or physical"), "{err}");

        let persistent = Variant::new(fw, sets::PERSISTENT);
        let (code, err) = run_to_exit(&persistent, &["--bind", "127.0.0.1:0"]);
        assert_eq!(code, Some(1));
        assert!(err.contains("pass --counter-file PATH"), "{err}");

        let tuned = Variant::new(fw, sets::TUNED);
        let (code, err) = run_to_exit(
            &tuned,
            &[
                "--bind",
                "127.0.0.1:0",
                "--log-file",
                "/nonexistent-dir/log",
            ],
        );
        assert_eq!(code, Some(1));
        assert!(
            err.starts_with(&format!(
                "{bin}: error: opening log file /nonexistent-dir/log"
            )),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");

        // clap's usage errors exit 2.
        for args in [
            &["--workers", "0"][..],
            &["--bind", "nowhere"],
            &["--backlog", "0"],
            &["--shutdown-timeout", "0"],
            &["--shutdown-timeout", "301"],
            &["--frobnicate"],
        ] {
            let (code, err) = run_to_exit(&plain, args);
            assert_eq!(code, Some(2), "{args:?}: {err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
}

#[test]
fn a_busy_port_is_a_one_line_error_naming_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    for fw in Framework::BOTH {
        let (code, err) = run_to_exit(&Variant::new(fw, sets::DEFAULT), &["--bind", &addr]);
        assert_eq!(code, Some(1));
        assert!(
            err.starts_with(&format!("{}: error: listening on {addr}: ", fw.binary())),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// Without `keepalive-os` an idle keep-alive connection is closed after the
/// 5 s timeout; with it the connection stays open. All four servers idle at
/// once, so the test takes one wait.
#[test]
fn keepalive_os_keeps_idle_connections_open() {
    let cases: Vec<(Variant, bool)> = Framework::BOTH
        .into_iter()
        .flat_map(|fw| {
            [
                (Variant::new(fw, sets::DEFAULT), false),
                (Variant::new(fw, sets::TUNED), true),
            ]
        })
        .collect();
    let mut open: Vec<(Server, Conn, &Variant, bool)> = cases
        .iter()
        .map(|(variant, kept)| {
            let server = Server::start(variant, &[]);
            let mut conn = server.conn();
            assert_eq!(conn.get().unwrap().status, 200);
            (server, conn, variant, *kept)
        })
        .collect();
    std::thread::sleep(Duration::from_secs(8));
    for (_server, conn, variant, kept) in &mut open {
        let alive = conn.get().is_ok_and(|r| r.status == 200);
        assert_eq!(
            alive,
            *kept,
            "{}: idle connection alive after 8 s",
            variant.name()
        );
    }
}

/// The io_uring tests of this binary, one at a time: one of them switches
/// io_uring off for the whole machine for a moment.
static URING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn startup_line_names_the_runtime() {
    let _uring = URING.lock().unwrap_or_else(|e| e.into_inner());
    for (rt, name) in [
        ("rt-neon", "neon-polling"),
        ("rt-uring", "neon-uring"),
        ("rt-compio", "compio"),
    ] {
        let server = Server::start(&Variant::new(Framework::Ntex, [rt]), &["--workers", "1"]);
        assert!(
            server
                .startup_line
                .contains(&format!(" runtime={name} features=none")),
            "{rt}: {}",
            server.startup_line
        );
        assert!(server.stop().status.success());
    }
}

/// Sets `kernel.io_uring_disabled` and puts the old value back on drop.
struct UringSwitch(String);

impl UringSwitch {
    const PATH: &'static str = "/proc/sys/kernel/io_uring_disabled";

    fn set(value: &str) -> UringSwitch {
        let old = std::fs::read_to_string(Self::PATH)
            .expect("this test needs kernel.io_uring_disabled (Linux 6.6+)");
        std::fs::write(Self::PATH, value)
            .expect("this test needs root to set kernel.io_uring_disabled");
        UringSwitch(old.trim().to_string())
    }
}

impl Drop for UringSwitch {
    fn drop(&mut self) {
        let _ = std::fs::write(Self::PATH, &self.0);
    }
}

#[test]
fn an_io_uring_build_on_a_kernel_that_refuses_it_says_so_in_one_line() {
    let _uring = URING.lock().unwrap_or_else(|e| e.into_inner());
    let variant = Variant::new(Framework::Ntex, ["rt-uring"]);
    let binary = variant.binary();
    let err = {
        // io_uring off for everyone for the start of one server (the other
        // tests' servers do not use it).
        let _off = UringSwitch::set("2");
        Server::spawn_raw(&binary, &["--bind", "127.0.0.1:0", "--workers", "1"])
            .err()
            .expect("the server started although io_uring is disabled")
    };
    let lines: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.starts_with("ntex-server"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0]
            .starts_with("ntex-server: error: rt-uring: this kernel or sandbox refuses io_uring"),
        "{err}"
    );
    assert!(err.contains("exited with exit status: 1"), "{err}");
}
