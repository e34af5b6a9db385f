//! A server under test, running as a child process.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::client::Conn;
use crate::Variant;

/// A running server; killed (SIGKILL) if still running when dropped.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    /// The start-up line the server printed on stderr.
    pub startup_line: String,
    stderr: Arc<Mutex<Vec<String>>>,
    stdout: Option<JoinHandle<Vec<u8>>>,
    dir: Option<TempDir>,
}

/// How a server run ended.
#[derive(Debug)]
pub struct Exit {
    pub status: ExitStatus,
    /// The server's private directory, kept until the `Exit` drops.
    pub dir: TempDir,
    pub stdout: Vec<u8>,
    pub stderr: Vec<String>,
}

impl Server {
    /// Starts `variant` on 127.0.0.1 with an OS-chosen port and the given
    /// extra flags, and waits for its start-up line. A variant with a
    /// feature in [`variants::FILE_FLAGS`] (`mmap-backend`, `log-file`) gets
    /// its flag (`--counter-file`, `--log-file`) naming a file in
    /// [`Server::dir`] unless `extra` names the flag.
    pub fn start(variant: &Variant, extra: &[&str]) -> Server {
        Self::try_start(variant, extra).unwrap_or_else(|e| panic!("{}: {e}", variant.name()))
    }

    /// Like [`Server::start`]; an error holds what the process printed if it
    /// exited before listening.
    pub fn try_start(variant: &Variant, extra: &[&str]) -> Result<Server, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
        let mut args: Vec<String> = vec!["--bind".into(), "127.0.0.1:0".into()];
        if !extra.contains(&"--workers") {
            args.extend(["--workers".into(), "2".into()]);
        }
        for (flag, file) in variant.file_args(dir.path()) {
            if !extra.contains(&flag) {
                args.push(flag.into());
                args.push(file.display().to_string());
            }
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        Self::spawn(&crate::binary(variant), &args, dir)
    }

    /// Starts a binary with exactly `args` (no flags added).
    pub fn spawn_raw(binary: &Path, args: &[&str]) -> Result<Server, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Self::spawn(binary, &args, dir)
    }

    fn spawn(binary: &Path, args: &[String], dir: TempDir) -> Result<Server, String> {
        let mut child = Command::new(binary)
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", binary.display()))?;

        let stdout = child.stdout.take().expect("piped stdout");
        let stdout = std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = BufReader::new(stdout).read_to_end(&mut all);
            all
        });
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (first_tx, first_rx) = mpsc::channel();
        let stderr = child.stderr.take().expect("piped stderr");
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if app_core::is_startup_line(&line) {
                    let _ = first_tx.send(line.clone());
                }
                sink.lock().unwrap().push(line);
            }
        });

        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(line) = first_rx.recv_timeout(Duration::from_millis(20)) {
                let addr = app_core::startup_addr(&line)
                    .ok_or_else(|| format!("no addr= in start-up line {line:?}"))?;
                return Ok(Server {
                    child,
                    addr,
                    startup_line: line,
                    stderr: lines,
                    stdout: Some(stdout),
                    dir: Some(dir),
                });
            }
            if let Ok(Some(status)) = child.try_wait() {
                std::thread::sleep(Duration::from_millis(50));
                let stderr = lines.lock().unwrap().join("\n");
                return Err(format!(
                    "exited with {status} before listening; stderr:\n{stderr}"
                ));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err("no start-up line within 20 s".into());
            }
        }
    }

    /// A private directory for files the variant needs (counter, log).
    pub fn dir(&self) -> &Path {
        self.dir.as_ref().expect("dir is kept until exit").path()
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The stderr lines printed so far.
    pub fn stderr_so_far(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    /// The server's resident set size now, in KiB (VmRSS).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("reading the server's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc status")
    }

    pub fn conn(&self) -> Conn {
        Conn::open(self.addr).expect("connecting to the server")
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.pid(), sig);
        }
    }

    /// Sends `sig` and waits (up to 15 s) for the process to exit.
    pub fn stop_with(self, sig: i32) -> Exit {
        self.signal(sig);
        self.wait()
    }

    /// Waits (up to 15 s) for the process to exit by itself.
    pub fn wait(mut self) -> Exit {
        let deadline = Instant::now() + Duration::from_secs(15);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting for server") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("server did not exit within 15 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.collect(status)
    }

    /// SIGTERM, then wait.
    pub fn stop(self) -> Exit {
        self.stop_with(libc::SIGTERM)
    }

    /// SIGKILL, then wait.
    pub fn kill9(self) -> Exit {
        self.stop_with(libc::SIGKILL)
    }

    fn collect(&mut self, status: ExitStatus) -> Exit {
        let stdout = self
            .stdout
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        // stderr's reader thread ends with the pipe; give it a moment.
        std::thread::sleep(Duration::from_millis(20));
        let stderr = self.stderr.lock().unwrap().clone();
        Exit {
            status,
            dir: self.dir.take().expect("collected once"),
            stdout,
            stderr,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs a variant's binary with `args` to its exit (a bad flag, a missing
/// file): its exit code and stderr.
pub fn run_to_exit(variant: &Variant, args: &[&str]) -> (Option<i32>, String) {
    use crate::VariantExt;
    let out = Command::new(variant.binary())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running the server binary");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
