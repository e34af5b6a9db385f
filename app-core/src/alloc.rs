//! The global allocator, chosen by feature (at most one): `snmalloc`,
//! `mimalloc`, `jemalloc` (tikv-jemallocator), or the C library's malloc
//! when none is on (glibc's, or musl's in a `x86_64-unknown-linux-musl`
//! build). [`reclaim`] asks the one compiled in to give freed memory back to the
//! operating system (the `alloc-reclaim` feature calls it; see
//! [`crate::reclaim`]).

#[cfg(any(
    all(feature = "snmalloc", feature = "mimalloc"),
    all(feature = "snmalloc", feature = "jemalloc"),
    all(feature = "mimalloc", feature = "jemalloc"),
))]
compile_error!(
    "features `snmalloc`, `mimalloc` and `jemalloc` each replace the global allocator: enable only one"
);

#[cfg(all(feature = "snmalloc", feature = "alloc-reclaim"))]
compile_error!(
    "`alloc-reclaim` with `snmalloc`: snmalloc-rs has no call that returns freed memory to the system, so there is nothing to ask; use glibc, mimalloc or jemalloc"
);

#[cfg(all(
    target_env = "musl",
    feature = "alloc-reclaim",
    not(any(feature = "snmalloc", feature = "mimalloc", feature = "jemalloc"))
))]
compile_error!(
    "`alloc-reclaim` with musl's malloc: musl has no call that returns freed memory (it unmaps large frees itself); use mimalloc or jemalloc"
);

/// No allocator feature: the C library's malloc.
const SYSTEM: &str = if cfg!(target_env = "musl") {
    "musl"
} else {
    "glibc"
};

#[cfg(feature = "snmalloc")]
#[global_allocator]
static GLOBAL: snmalloc_rs::SnMalloc = snmalloc_rs::SnMalloc;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The allocator of this build, as the start-up line names it.
pub const NAME: &str = if cfg!(feature = "snmalloc") {
    "snmalloc"
} else if cfg!(feature = "mimalloc") {
    "mimalloc"
} else if cfg!(feature = "jemalloc") {
    "jemalloc"
} else {
    SYSTEM
};

/// What [`reclaim`] calls, as the reclaim line names it.
pub const RECLAIM_CALL: &str = if cfg!(feature = "snmalloc") {
    "none"
} else if cfg!(feature = "mimalloc") {
    "mi_collect(true)"
} else if cfg!(feature = "jemalloc") {
    "arena.<all>.purge"
} else if cfg!(target_env = "musl") {
    "none"
} else {
    "malloc_trim(0)"
};

/// Asks the allocator to return freed memory to the system. Errors are the
/// allocator's own (jemalloc's mallctl status).
pub fn reclaim() -> Result<(), String> {
    #[cfg(feature = "mimalloc")]
    {
        // Collects this thread's heap and, with `force`, abandoned pages and
        // the segment cache; pages freed by worker threads are returned as
        // mimalloc purges them (its purge delay), which `force` shortens.
        // SAFETY: mi_collect has no preconditions.
        unsafe { libmimalloc_sys::mi_collect(true) };
        Ok(())
    }
    #[cfg(feature = "jemalloc")]
    {
        // "arena.<MALLCTL_ARENAS_ALL>.purge": purge unused dirty and muzzy
        // pages of every arena at once (jemalloc(3), MALLCTL_ARENAS_ALL = 4096).
        let name = c"arena.4096.purge";
        // SAFETY: a void mallctl: no old or new value.
        let rc = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        if rc != 0 {
            return Err(format!("mallctl arena.4096.purge failed with {rc}"));
        }
        Ok(())
    }
    #[cfg(all(
        target_env = "gnu",
        not(any(feature = "mimalloc", feature = "jemalloc", feature = "snmalloc"))
    ))]
    {
        // SAFETY: malloc_trim has no preconditions; it returns 1 if memory
        // was released, 0 if there was none to release.
        unsafe { libc::malloc_trim(0) };
        Ok(())
    }
    #[cfg(any(
        feature = "snmalloc",
        all(
            not(target_env = "gnu"),
            not(any(feature = "mimalloc", feature = "jemalloc"))
        )
    ))]
    {
        Err(format!("{NAME} has no reclaim call"))
    }
}

/// This process's resident set size in KiB, from /proc/self/statm.
pub fn rss_kib() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()? / 1024)
}
