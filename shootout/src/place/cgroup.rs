//! A cgroup (version 2) of the runner's own for one process and everything
//! it starts: its CPU time over every thread and process that ever ran in
//! it, those that ended included (`cpu.stat`), its members however they
//! left their session, and a kill that reaches them all (`cgroup.kill`).
//!
//! A command row's server may start and end threads (a thread per
//! connection) and processes at will: read thread by thread from /proc, the
//! CPU of a thread that ended is gone, and a group's total can fall. Where
//! the machine has no writable cgroup2 hierarchy, the row is read from
//! /proc as the twins are, and its record says which.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A cgroup made for one process; removed when dropped, its members
/// killed first.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    procs: CString,
}

impl Cgroup {
    /// A new, empty cgroup under the cgroup2 hierarchy's root; none where
    /// the machine has no such hierarchy or it cannot be written.
    pub fn create() -> Option<Cgroup> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let root = cgroup2_root()?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("shootout-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).ok()?;
        Some(Cgroup { dir, procs })
    }

    /// Makes `cmd`'s process join this cgroup before it execs: everything
    /// it starts is born inside.
    pub fn join_at_exec(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let path = self.procs.clone();
        // SAFETY: open, write and close are async-signal-safe, and the path
        // was allocated before the fork.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let wrote = libc::write(fd, b"0".as_ptr().cast(), 1);
                let err = std::io::Error::last_os_error();
                libc::close(fd);
                if wrote == 1 {
                    Ok(())
                } else {
                    Err(err)
                }
            });
        }
    }

    /// CPU time (user + system) of everything that ran in it, nanoseconds
    /// (read in microseconds).
    pub fn usage_ns(&self) -> Option<u64> {
        usage_ns(&self.dir)
    }

    /// The processes in it now.
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Its directory (for a reader of `cpu.stat`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// SIGKILL to every process in it, wherever it moved in its session.
    pub fn kill(&self) {
        let _ = std::fs::write(self.dir.join("cgroup.kill"), b"1");
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if !self.pids().is_empty() {
            self.kill();
        }
        // A killed process leaves the cgroup a moment later.
        let deadline = Instant::now() + Duration::from_secs(2);
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// What a command row's record says of how its CPU was read: from its own
/// cgroup where this machine has a writable cgroup2 hierarchy, else from
/// /proc over its session's live threads.
pub fn accounting() -> String {
    match cgroup2_root() {
        Some(root) if root.join("cgroup.procs").exists() => {
            "cgroup: cpu.stat of the server's own cgroup (threads and processes that ended included)".into()
        }
        _ => "proc: the live threads of the server's session only (no cgroup2 here)".into(),
    }
}

/// `usage_usec` of the cgroup in `dir`, in nanoseconds.
pub fn usage_ns(dir: &Path) -> Option<u64> {
    std::fs::read_to_string(dir.join("cpu.stat"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|us| us * 1000)
}

/// Where the cgroup2 hierarchy is mounted (`/sys/fs/cgroup`, or
/// `/sys/fs/cgroup/unified` beside version 1), from /proc/self/mounts.
pub fn cgroup2_root() -> Option<PathBuf> {
    std::fs::read_to_string("/proc/self/mounts")
        .ok()?
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let (_, path, kind) = (f.next()?, f.next()?, f.next()?);
            (kind == "cgroup2").then(|| PathBuf::from(path))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell that starts a child, which starts a session of its own and
    /// spins: the cgroup counts the CPU of both after they ended, finds the
    /// child that left the session, and kills it.
    #[test]
    fn counts_what_ended_and_kills_what_left_the_session() {
        let Some(cg) = Cgroup::create() else {
            panic!("no writable cgroup2 hierarchy: the runner needs one for command rows' CPU");
        };
        let mut cmd = std::process::Command::new("sh");
        cmd.args([
            "-c",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; setsid sleep 30 & exit 0",
        ]);
        cg.join_at_exec(&mut cmd);
        let status = cmd.status().unwrap();
        assert!(status.success());
        // The shell ended; its CPU stays counted.
        assert!(cg.usage_ns().unwrap() > 1_000_000, "{:?}", cg.usage_ns());
        let pids = cg.pids();
        assert_eq!(pids.len(), 1, "the sleep that left its session: {pids:?}");
        let dir = cg.dir().to_owned();
        drop(cg);
        assert!(!dir.exists());
        assert!(
            !Path::new(&format!("/proc/{}", pids[0])).exists() || {
                let st =
                    std::fs::read_to_string(format!("/proc/{}/stat", pids[0])).unwrap_or_default();
                st.contains(") Z ")
            }
        );
    }
}
