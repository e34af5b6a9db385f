//! Helpers for the black-box tests: build a server variant, run it as a real
//! process on a port the OS picks, and talk HTTP/1.1 to it over plain TCP.
//! The variants themselves (and their builder) are the `variants` crate's.

pub mod build;
pub mod cases;
pub mod client;
pub mod fuzz;
pub mod process;

pub use build::{binary, loadgen, target_dir, workspace_root, Framework, Variant, VariantExt};
pub use client::{Conn, Response};
pub use process::{run_to_exit, Server};

/// The feature sets the black-box tests run, each built for both frameworks.
/// Together they cover every feature with a runtime effect; `scripts/test`
/// checks that every feature and the original study's combinations build.
pub mod sets {
    use std::ops::Deref;

    /// A fixed list of features: `Variant::new(fw, sets::TUNED)`, and a
    /// slice for `contains` and `is_empty`.
    #[derive(Debug, Clone, Copy)]
    pub struct Features(pub &'static [&'static str]);

    impl Deref for Features {
        type Target = [&'static str];
        fn deref(&self) -> &[&'static str] {
            self.0
        }
    }

    impl IntoIterator for Features {
        type Item = &'static str;
        type IntoIter = std::iter::Copied<std::slice::Iter<'static, &'static str>>;
        fn into_iter(self) -> Self::IntoIter {
            self.0.iter().copied()
        }
    }

    /// Defaults: per-worker counter, text body, no logging.
    pub const DEFAULT: Features = Features(&[]);
    /// The tuned rows of the original (global counter, KeepAlive::Os,
    /// snmalloc, no allocations), with the file log sink. In
    /// `app_core::ALL_FEATURES` order, the order the runner names a row's
    /// build by, so a scenario row with these features runs this build.
    pub const TUNED: Features = Features(&[
        "global-counter",
        "keepalive-os",
        "log-file",
        "snmalloc",
        "no-alloc",
    ]);
    /// Persistent counter, logging to stdout.
    pub const PERSISTENT: Features = Features(&["mmap-backend", "log-stdout"]);
    /// Binary payload without allocations.
    pub const BINARY: Features = Features(&["binary-payload", "no-alloc", "global-counter"]);
}
