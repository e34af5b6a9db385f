//! Where the server's stdout goes: nowhere, a file, a pipe drained into a
//! file, or a pseudo-terminal drained as a terminal emulator would.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;

use crate::config::scenario::LogSink;

/// The server's stdout end, and the thread draining the other end (if any).
pub struct Sink {
    pub stdio: Option<Stdio>,
    /// Bytes the server wrote to a pipe or terminal.
    pub bytes: Arc<AtomicU64>,
    reader: Option<JoinHandle<()>>,
}

impl Sink {
    pub fn new(kind: LogSink, file: &Path) -> anyhow::Result<Sink> {
        let bytes = Arc::new(AtomicU64::new(0));
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
                    drain(File::from(read), &counter, |b| {
                        let _ = out.write_all(b);
                    })
                });
                (Stdio::from(write), Some(t))
            }
            LogSink::Terminal => {
                let (master, slave) = openpty()?;
                let counter = Arc::clone(&bytes);
                let t = std::thread::spawn(move || drain(File::from(master), &counter, |_| {}));
                (Stdio::from(slave), Some(t))
            }
        };
        Ok(Sink {
            stdio: Some(stdio),
            bytes,
            reader,
        })
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
