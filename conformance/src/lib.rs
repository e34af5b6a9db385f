//! Helpers for the black-box tests: build a server variant, run it as a real
//! process on a port the OS picks, and talk HTTP/1.1 to it over plain TCP.

pub mod build;
pub mod client;
pub mod process;

pub use build::{Framework, Variant};
pub use client::{Conn, Response};
pub use process::Server;

/// The feature sets the black-box tests run, each built for both frameworks.
/// Together they cover every feature with a runtime effect; `scripts/test`
/// checks that every feature and the original study's combinations build.
pub mod sets {
    /// Defaults: per-worker counter, text body, no logging.
    pub const DEFAULT: &[&str] = &[];
    /// The tuned rows of the original (global counter, KeepAlive::Os,
    /// snmalloc, no allocations), with the file log sink.
    pub const TUNED: &[&str] = &[
        "global-counter",
        "keepalive-os",
        "snmalloc",
        "no-alloc",
        "log-file",
    ];
    /// Persistent counter, logging to stdout.
    pub const PERSISTENT: &[&str] = &["mmap-backend", "log-stdout"];
    /// Binary payload without allocations.
    pub const BINARY: &[&str] = &["binary-payload", "no-alloc", "global-counter"];
}
