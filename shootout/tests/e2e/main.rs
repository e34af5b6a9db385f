//! The runner end to end, with dev builds (fast; the numbers mean nothing).
//! Each test runs `shootout` through one scaffold, [`Ran`]: the command,
//! its output and exit, its run folder's files, and the check that it left
//! no process or namespace behind. The tests sit by design: `sequential`,
//! `paired` (with calibrate), `sweep`, `memory_sinks`, and `refusals` (bad
//! command lines and files). Needs root for the netns rows.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../support/mod.rs"]
mod support;
use support::{leftovers, namespaces_of, tagged};

mod command;
mod memory_sinks;
mod paired;
mod refusals;
mod revisions;
mod sequential;
mod sweep;
mod tls;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `target/` of the workspace, made if missing (a CARGO_TARGET_DIR elsewhere
/// leaves a fresh clone without one).
fn target_dir() -> PathBuf {
    let t = root().join("target");
    std::fs::create_dir_all(&t).unwrap();
    t
}

fn shootout(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shootout"));
    tagged(&mut cmd)
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null());
    cmd
}

/// Waits until the run under `out` has a non-empty `rel` log (loadgen has
/// written its first record; `REL.partial` while loadgen writes it); fails
/// if shootout exits first.
fn wait_for_first_record(child: &mut std::process::Child, out: &Path, rel: &str, secs: u64) {
    let rel = &format!("{rel}.partial");
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let log = std::fs::read_dir(out)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path().join(rel));
        if log
            .as_ref()
            .is_some_and(|l| std::fs::metadata(l).is_ok_and(|m| m.len() > 0))
        {
            return;
        }
        assert!(Instant::now() < deadline, "loadgen never started");
        assert!(child.try_wait().unwrap().is_none(), "shootout exited early");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGINT to shootout; its exit status, which must come within `secs`.
fn interrupt(child: &mut std::process::Child, secs: u64) -> std::process::ExitStatus {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(secs),
            "shootout did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn meta(out: &Path) -> serde_json::Value {
    json(&run_dir(out).join("meta.json"))
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&analysis::input::raw::read(path).unwrap()).unwrap()
}

/// The records of a raw jsonl file, loose or packed in its run's
/// `raw.tar.xz` (lines that do not parse are left out).
fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    analysis::input::raw::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A raw file of a run, loose or packed.
fn is_raw(path: &Path) -> bool {
    analysis::input::raw::is_file(path)
}

/// The names of the files in a run's folder, loose or packed.
fn names_in(dir: &Path) -> Vec<String> {
    analysis::input::raw::read_dir(dir)
        .unwrap()
        .iter()
        .map(analysis::input::raw::Entry::name)
        .collect()
}

fn run_dir(out: &Path) -> PathBuf {
    // The run's folder, beside a results folder's history and index.
    std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a run directory")
}

/// One finished `shootout` run of a test: where it wrote, how it ended and
/// what it printed. The scaffolding every end-to-end test shares.
struct Ran {
    out: PathBuf,
    pid: u32,
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

impl Ran {
    /// `shootout ARGS --build-profile dev --out OUT`, waited for.
    fn new(args: &[&str], out: &Path) -> Ran {
        let mut cmd = shootout(args);
        cmd.args(["--build-profile", "dev", "--out"]).arg(out);
        Ran::wait(&mut cmd, out)
    }

    /// `cmd` (a `shootout` command writing under `out`), waited for.
    fn wait(cmd: &mut Command, out: &Path) -> Ran {
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let r = child.wait_with_output().unwrap();
        Ran {
            out: out.to_path_buf(),
            pid,
            status: r.status,
            stdout: String::from_utf8_lossy(&r.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&r.stderr).into_owned(),
        }
    }

    /// The run, which must have succeeded.
    fn ok(args: &[&str], out: &Path) -> Ran {
        let r = Ran::new(args, out);
        assert!(r.status.success(), "{}\n{}", r.stdout, r.stderr);
        r
    }

    fn dir(&self) -> PathBuf {
        run_dir(&self.out)
    }

    fn meta(&self) -> serde_json::Value {
        meta(&self.out)
    }

    fn summary(&self) -> serde_json::Value {
        json(&self.dir().join("summary.json"))
    }

    /// A text file of the run (`README.md`, a table's file).
    fn text(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir().join(rel)).unwrap()
    }

    /// Nothing the run started is alive, and none of its namespaces is left.
    fn left_nothing(&self) {
        let left = leftovers(&self.out);
        assert!(left.is_empty(), "{left:?}");
        let ns = namespaces_of(self.pid);
        assert!(ns.is_empty(), "{ns:?}");
    }
}

/// The children of `pid` whose command line contains `needle`.
fn children_matching(pid: u32, needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...: the ppid follows the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmd = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if ppid == Some(pid) && String::from_utf8_lossy(&cmd).contains(needle) {
            found.push(child);
        }
    }
    found
}

/// Emulator rows need Xvfb, xterm and alacritty (`scripts/test` installs
/// them as root): without them a test that draws fails, naming them.
fn require_terminals() {
    use shootout::prepare::setup::{require, ALACRITTY, FIXED_FONT, XTERM, XVFB};
    if let Err(e) = require(&[XVFB, XTERM, FIXED_FONT, ALACRITTY]) {
        panic!("{e}");
    }
}
