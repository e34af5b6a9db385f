//! What the twin click-counter servers share, so that `actix-server` and
//! `ntex-server` differ only where the frameworks' APIs differ: the counter
//! backends, the body codec, body collection, the flags, the listening socket,
//! the logging sinks, signal handling and the start-up line.

pub mod alloc;
pub mod app;
pub mod args;
pub mod body;
pub mod codec;
pub mod counter;
pub mod launch;
pub mod logging;
pub mod net;
pub mod reclaim;
pub mod runtime;
pub mod shutdown;
pub mod spin;
pub mod tls;
pub mod workers;

pub use app::{App, Reply, ReplyBody};
pub use args::ServerArgs;
pub use launch::{exit_code, Launch};

/// Default keep-alive of both frameworks when `keepalive-os` is off, in seconds
/// (actix-web 4 and ntex 3 both default to 5 s; set explicitly so the twins
/// cannot drift apart).
pub const KEEP_ALIVE_SECS: u16 = 5;

/// Largest request head both twins read, in bytes: actix-http's fixed
/// `MAX_BUFFER_SIZE` (128 KiB); ntex is set to it (its default is 64 KiB).
/// A longer head gets `431 Request Header Fields Too Large` from both.
pub const MAX_HEAD_BYTES: usize = 131_072;

/// Grace period for in-flight requests after SIGTERM or SIGINT, in seconds.
pub const SHUTDOWN_TIMEOUT_SECS: u16 = 5;

/// Every server feature, in the order the start-up line lists them. Both
/// server crates define exactly these; the runner checks scenario files
/// against this list.
pub const ALL_FEATURES: [&str; 20] = [
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
    "large-io-buffers",
    "tls",
    "rt-tokio",
    "rt-neon",
    "rt-uring",
    "rt-compio",
    "ntex-read-once",
    "ntex-call-nowait",
];

/// The cargo features compiled into this build, in [`ALL_FEATURES`] order,
/// without the runtime ones (`rt-tokio` is a default feature of the servers;
/// the start-up line names the runtime as `runtime=`).
pub fn features() -> Vec<&'static str> {
    let on = [
        cfg!(feature = "global-counter"),
        cfg!(feature = "keepalive-os"),
        cfg!(feature = "log-stdout"),
        cfg!(feature = "log-file"),
        cfg!(feature = "snmalloc"),
        cfg!(feature = "mimalloc"),
        cfg!(feature = "jemalloc"),
        cfg!(feature = "alloc-reclaim"),
        cfg!(feature = "mmap-backend"),
        cfg!(feature = "no-alloc"),
        cfg!(feature = "binary-payload"),
        cfg!(feature = "calibrate"),
        cfg!(feature = "large-io-buffers"),
        cfg!(feature = "tls"),
        cfg!(feature = "rt-tokio"),
        cfg!(feature = "rt-neon"),
        cfg!(feature = "rt-uring"),
        cfg!(feature = "rt-compio"),
        cfg!(feature = "ntex-read-once"),
        cfg!(feature = "ntex-call-nowait"),
    ];
    ALL_FEATURES
        .into_iter()
        .zip(on)
        .filter_map(|(name, on)| on.then_some(name))
        .filter(|name| !name.starts_with("rt-"))
        .collect()
}

/// The one line each server prints on stderr once it listens, in `key=value`
/// form for the runner to record, e.g.
/// `actix-server listening addr=127.0.0.1:8080 framework=actix-web/4.18.1 workers=2 worker_rule=logical backlog=1024 client_timeout=5s keep_alive=os shutdown_timeout=5s nofile=1048576 allocator=glibc runtime=tokio features=global-counter,keepalive-os`
/// (`client_timeout=off` for 0; `keep_alive=5s` without `keepalive-os`).
/// `listen` is the bound address and whether it serves HTTPS, which adds
/// `tls=on` after `addr=` (a `tls` build without `--tls-cert` serves plain
/// HTTP and says nothing). `timeouts` are the client and shutdown timeouts
/// in seconds.
pub fn startup_line(
    binary: &str,
    framework: &str,
    listen: (std::net::SocketAddr, bool),
    workers: (usize, &str),
    backlog: i32,
    timeouts: (u16, u16),
    nofile: u64,
) -> String {
    let (client_timeout, shutdown_timeout) = timeouts;
    let (workers, rule) = workers;
    let (addr, tls) = listen;
    let tls = if tls { " tls=on" } else { "" };
    let features = features();
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(",")
    };
    let client_timeout = match client_timeout {
        0 => "off".to_string(),
        secs => format!("{secs}s"),
    };
    let keep_alive = if cfg!(feature = "keepalive-os") {
        "os".to_string()
    } else {
        format!("{KEEP_ALIVE_SECS}s")
    };
    format!(
        "{binary} listening addr={addr}{tls} framework={framework} workers={workers} worker_rule={rule} backlog={backlog} client_timeout={client_timeout} keep_alive={keep_alive} shutdown_timeout={shutdown_timeout}s nofile={nofile} allocator={} runtime={} features={features}",
        alloc::NAME,
        runtime::NAME
    )
}

/// What marks the line [`startup_line`] writes, wherever it shows up in a
/// stream of lines.
const LISTENING: &str = " listening addr=";

/// Whether `line` is (or contains) the line [`startup_line`] writes.
pub fn is_startup_line(line: &str) -> bool {
    line.contains(LISTENING)
}

/// The value of `key=` among the whitespace-separated tokens of `line`
/// (`startup_field(line, "workers")`), as [`startup_line`] writes them.
pub fn startup_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|token| token.strip_prefix(key)?.strip_prefix('='))
}

/// The address in `addr=` of a start-up line.
pub fn startup_addr(line: &str) -> Option<std::net::SocketAddr> {
    startup_field(line, "addr")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_startup_line_parses_back() {
        let addr: std::net::SocketAddr = "[::1]:40123".parse().unwrap();
        let line = startup_line(
            "ntex-server",
            "ntex/3.0.0",
            (addr, false),
            (2, "count"),
            77,
            (0, 1),
            4096,
        );
        assert!(is_startup_line(&line));
        assert!(is_startup_line(&format!("[pty] {line}")));
        assert!(!is_startup_line(
            "ntex-server: error: listening on [::1]:40123: in use"
        ));
        assert_eq!(startup_addr(&line), Some(addr));
        for (key, value) in [
            ("framework", "ntex/3.0.0"),
            ("workers", "2"),
            ("worker_rule", "count"),
            ("backlog", "77"),
            ("client_timeout", "off"),
            ("shutdown_timeout", "1s"),
            ("nofile", "4096"),
            ("allocator", alloc::NAME),
            ("runtime", runtime::NAME),
        ] {
            assert_eq!(startup_field(&line, key), Some(value), "{key} in {line}");
        }
        let listed = startup_field(&line, "features").unwrap();
        assert_eq!(listed == "none", features().is_empty(), "{line}");
        // Whole keys only: `work` is not `workers`, `rule` not `worker_rule`.
        assert_eq!(startup_field(&line, "work"), None);
        assert_eq!(startup_field(&line, "rule"), None);
        assert_eq!(startup_field(&line, "listening"), None);
        assert_eq!(startup_addr("actix-server listening addr=nowhere"), None);
        assert_eq!(startup_field(&line, "tls"), None, "{line}");
    }

    #[test]
    fn a_tls_startup_line_says_so_and_parses_back() {
        let addr: std::net::SocketAddr = "127.0.0.1:8443".parse().unwrap();
        let plain = startup_line(
            "actix-server",
            "a/1",
            (addr, false),
            (1, "count"),
            9,
            (5, 5),
            64,
        );
        let line = startup_line(
            "actix-server",
            "a/1",
            (addr, true),
            (1, "count"),
            9,
            (5, 5),
            64,
        );
        assert!(is_startup_line(&line));
        assert_eq!(startup_addr(&line), Some(addr));
        assert_eq!(startup_field(&line, "tls"), Some("on"));
        assert_eq!(startup_field(&line, "framework"), Some("a/1"));
        assert_eq!(
            startup_field(&line, "features"),
            startup_field(&plain, "features")
        );
        // One field more, right after the address; nothing else changes.
        assert_eq!(
            line.replacen(" tls=on", "", 1),
            plain,
            "{line} against {plain}"
        );
        assert!(line.contains(&format!("addr={addr} tls=on ")), "{line}");
    }
}
