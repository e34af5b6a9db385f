//! The async runtime a server runs on, chosen by feature: `rt-tokio` (the
//! servers' default), or for ntex `rt-neon` (ntex's own epoll driver,
//! `neon-polling`), `rt-uring` (its io_uring driver, `neon-uring`) or
//! `rt-compio`. Exactly one: ntex would silently prefer tokio over the
//! others, so two at once is a `compile_error!`. actix-web runs on tokio
//! only, and its crate refuses the others.

#[cfg(any(
    all(feature = "rt-tokio", feature = "rt-neon"),
    all(feature = "rt-tokio", feature = "rt-uring"),
    all(feature = "rt-tokio", feature = "rt-compio"),
    all(feature = "rt-neon", feature = "rt-uring"),
    all(feature = "rt-neon", feature = "rt-compio"),
    all(feature = "rt-uring", feature = "rt-compio"),
))]
compile_error!(
    "enable only one runtime feature: rt-tokio is the servers' default, so build rt-neon, rt-uring or rt-compio with --no-default-features"
);

/// The runtime features that replace the servers' default one (a build with
/// one of them needs `--no-default-features`).
pub const REPLACES_DEFAULT: [&str; 3] = ["rt-neon", "rt-uring", "rt-compio"];

/// The runtime of this build, as the start-up line names it.
pub const NAME: &str = if cfg!(feature = "rt-neon") {
    "neon-polling"
} else if cfg!(feature = "rt-uring") {
    "neon-uring"
} else if cfg!(feature = "rt-compio") {
    "compio"
} else {
    "tokio"
};

/// For `rt-uring`: whether this kernel (and any sandbox around the process)
/// lets it set up an io_uring. ntex would otherwise panic in every worker.
pub fn check() -> Result<(), String> {
    if !cfg!(feature = "rt-uring") {
        return Ok(());
    }
    // struct io_uring_params is 120 bytes; zeroed asks for the defaults.
    let mut params = [0u8; 120];
    // SAFETY: io_uring_setup(2) reads and writes `params` only.
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 8, params.as_mut_ptr()) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!(
            "rt-uring: this kernel or sandbox refuses io_uring ({e}); build with rt-neon or rt-tokio"
        ));
    }
    // SAFETY: closing the ring this call just made.
    unsafe { libc::close(fd as i32) };
    Ok(())
}
