//! Where the server's stdout goes: nowhere, a file, a pipe drained into a
//! file, or a pseudo-terminal drained as a terminal emulator would. The
//! thread that drains a pipe or a pty runs on the CPUs the row gives it
//! (`Scenario::sink_cpus`), read back from /proc as the `sink reader`.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;

use crate::config::scenario::LogSink;
use crate::place::affinity::{self, ReadCpus};

/// The server's stdout end, and the thread draining the other end (if any).
pub struct Sink {
    pub stdio: Option<Stdio>,
    /// Bytes the server wrote to a pipe or terminal.
    pub bytes: Arc<AtomicU64>,
    reader: Option<JoinHandle<()>>,
    /// The reader thread's id once it runs (-1: it could not take its
    /// CPUs).
    tid: Arc<AtomicI32>,
}

impl Sink {
    /// A sink of `kind` (a pipe's into `file`), its reader (if any) on
    /// `cpus` (a CPU list; none: where the scheduler puts it).
    pub fn new(kind: LogSink, file: &Path, cpus: Option<&str>) -> anyhow::Result<Sink> {
        let bytes = Arc::new(AtomicU64::new(0));
        let tid = Arc::new(AtomicI32::new(0));
        let cpus = cpus.map(affinity::parse_list).transpose()?;
        let placed = {
            let tid = Arc::clone(&tid);
            move || {
                let ok = cpus
                    .as_ref()
                    .is_none_or(|c| affinity::pin_this_thread(c).is_ok());
                // SAFETY: gettid has no preconditions.
                let me = unsafe { libc::gettid() };
                tid.store(if ok { me } else { -1 }, Ordering::SeqCst);
            }
        };
        let (stdio, reader) = match kind {
            // The emulator is the server's terminal (see `crate::stack::emulator`);
            // an ssh terminal is the sinks design's own (the parser keeps it there).
            LogSink::None | LogSink::Xterm | LogSink::Alacritty | LogSink::SshTerminal => {
                (Stdio::null(), None)
            }
            LogSink::File => {
                let f =
                    File::create(file).with_context(|| format!("creating {}", file.display()))?;
                (Stdio::from(f), None)
            }
            LogSink::Pipe => {
                let (read, write) = pipe()?;
                let mut out =
                    File::create(file).with_context(|| format!("creating {}", file.display()))?;
                let counter = Arc::clone(&bytes);
                let t = std::thread::spawn(move || {
                    placed();
                    drain(File::from(read), &counter, |b| {
                        let _ = out.write_all(b);
                    })
                });
                (Stdio::from(write), Some(t))
            }
            LogSink::Terminal => {
                let (master, slave) = openpty()?;
                let counter = Arc::clone(&bytes);
                let t = std::thread::spawn(move || {
                    placed();
                    drain(File::from(master), &counter, |_| {})
                });
                (Stdio::from(slave), Some(t))
            }
        };
        Ok(Sink {
            stdio: Some(stdio),
            bytes,
            reader,
            tid,
        })
    }

    /// The CPUs the reader thread may run on, read from /proc, against
    /// `wanted`; none without a reader. A reader that could not take its
    /// CPUs, or has not started within a second, reads as no thread (which
    /// the check refuses).
    pub fn read_cpus(&self, wanted: Option<&str>) -> Option<ReadCpus> {
        self.reader.as_ref()?;
        let mut tid = 0;
        for _ in 0..100 {
            tid = self.tid.load(Ordering::SeqCst);
            if tid != 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let list = if tid > 0 {
            affinity::task_line_here(std::process::id(), &tid.to_string())
        } else {
            String::new()
        };
        Some(affinity::from_lines("sink reader", wanted, &list))
    }

    /// Waits for the reader to see the end (call after the server exited).
    pub fn finish(mut self) -> u64 {
        if let Some(t) = self.reader.take() {
            let _ = t.join();
        }
        self.bytes.load(Ordering::Relaxed)
    }
}

fn drain(mut from: File, counter: &AtomicU64, mut sink: impl FnMut(&[u8])) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return, // EOF, or EIO once the terminal's last writer closed
            Ok(n) => {
                counter.fetch_add(n as u64, Ordering::Relaxed);
                sink(&buf[..n]);
            }
        }
    }
}

/// Pins the calling thread to `cpus`.
fn pipe() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("creating a pipe");
    }
    // SAFETY: both fds are fresh and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn openpty() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two fds we then own; the other arguments may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("opening a pseudo-terminal");
    }
    for fd in [master, slave] {
        // SAFETY: fcntl on fds we own; the child gets the slave as its stdout
        // through dup2, which clears the flag on the copy.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both fds are fresh and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) })
}
