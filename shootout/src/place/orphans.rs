//! What a runner killed by SIGKILL left behind, found and ended by the next
//! run. No process can catch SIGKILL, so a killed runner stops nothing of
//! its own: its servers, nginx, loadgens and builds go on, its network
//! namespaces and cgroups stay, and its run folder stays half-written. So
//! every runner marks what it starts, and the next one looks for marks of
//! runners that are gone:
//!
//! - processes: every process a runner starts, here or in its namespaces,
//!   inherits `SHOOTOUT_RUNNER=<runner pid>` ([`mark_runner`]);
//! - namespaces and cgroups: named `shootout-<runner pid>-…`;
//! - run folders: registered under `/run/shootout/runs/<pid>` (a tmpfs,
//!   emptied at boot) while the runner writes them ([`register`]).
//!
//! A runner is gone when its pid is not a live process (a zombie counts as
//! gone). What a live runner holds is never touched, so two runs at once,
//! or tests beside a run, are safe. Processes a runner started on remote
//! hosts are out of reach here; its ssh connections end with it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;

/// The variable every process a runner starts inherits.
pub const RUNNER_ENV: &str = "SHOOTOUT_RUNNER";

/// Marks this process as a runner for everything it starts from now on.
/// Call it before the runner starts any thread.
pub fn mark_runner() {
    std::env::set_var(RUNNER_ENV, std::process::id().to_string());
}

/// Where runners register the run folders they are writing.
fn registry() -> PathBuf {
    let run = Path::new("/run/shootout/runs");
    if std::fs::create_dir_all(run).is_ok() {
        return run.to_path_buf();
    }
    std::env::temp_dir().join("shootout-runs")
}

/// A run folder registered as being written by this process; the entry
/// goes when it drops (a run that ends in any way but SIGKILL).
#[derive(Debug)]
pub struct Registered {
    entry: PathBuf,
}

/// Registers `dir` as written by this process.
pub fn register(dir: &Path) -> anyhow::Result<Registered> {
    let reg = registry();
    std::fs::create_dir_all(&reg).with_context(|| format!("creating {}", reg.display()))?;
    let entry = reg.join(format!("{}-{}", std::process::id(), unique()));
    std::fs::write(&entry, dir.as_os_str().as_encoded_bytes())
        .with_context(|| format!("writing {}", entry.display()))?;
    Ok(Registered { entry })
}

fn unique() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.entry);
    }
}

/// True when `pid` is no live process (absent, or a zombie).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// The pid in a `shootout-<pid>-…` name.
fn pid_in_name(name: &str) -> Option<u32> {
    name.strip_prefix("shootout-")?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// What was found of runners that are gone, and ended.
#[derive(Debug, Default)]
pub struct Ended {
    pub runners: Vec<u32>,
    pub processes: usize,
    pub namespaces: usize,
    pub cgroups: usize,
    /// Run folders: marked interrupted, or removed when they held no
    /// finished unit.
    pub marked: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
}

impl Ended {
    pub fn is_empty(&self) -> bool {
        self.processes + self.namespaces + self.cgroups == 0
            && self.marked.is_empty()
            && self.removed.is_empty()
    }

    /// One line saying what was ended.
    pub fn line(&self) -> String {
        let pids: Vec<String> = self.runners.iter().map(u32::to_string).collect();
        let mut parts = vec![
            format!("{} process(es)", self.processes),
            format!("{} namespace(s)", self.namespaces),
            format!("{} cgroup(s)", self.cgroups),
        ];
        for d in &self.marked {
            parts.push(format!("{} marked interrupted", d.display()));
        }
        for d in &self.removed {
            parts.push(format!("{} removed (nothing finished in it)", d.display()));
        }
        format!(
            "a run killed earlier (pid {}) left {}; ended",
            pids.join(", "),
            parts.join(", ")
        )
    }
}

/// Finds and ends what runners that are gone left: their processes, then
/// their namespaces and cgroups, then their run folders.
pub fn end_leftovers() -> Ended {
    let mut ended = Ended::default();
    let mut runners = std::collections::BTreeSet::new();
    // Processes first, so nothing still writes into a folder or holds a
    // namespace as the rest is ended.
    let mut victims = Vec::new();
    for (pid, runner) in marked_processes() {
        if gone(runner) {
            runners.insert(runner);
            victims.push(pid);
        }
    }
    for &pid in &victims {
        // SAFETY: kill(2) on a process that carries a gone runner's mark.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    ended.processes = victims.len();
    for name in super::netns::Netns::all_runners() {
        let Some(runner) = pid_in_name(&name).filter(|&p| gone(p)) else {
            continue;
        };
        runners.insert(runner);
        for pid in namespace_pids(&name) {
            // SAFETY: kill(2) on a process inside a gone runner's namespace.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if ip(&["netns", "del", &name]) {
            ended.namespaces += 1;
        }
    }
    for dir in cgroups() {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let Some(runner) = name.as_deref().and_then(pid_in_name).filter(|&p| gone(p)) else {
            continue;
        };
        runners.insert(runner);
        let _ = std::fs::write(dir.join("cgroup.kill"), b"1");
        let deadline = Instant::now() + Duration::from_secs(2);
        while std::fs::remove_dir(&dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        ended.cgroups += 1;
    }
    for (entry, runner, dir) in registered() {
        if !gone(runner) {
            continue;
        }
        runners.insert(runner);
        match finish_folder(&dir) {
            Some(true) => ended.marked.push(dir),
            Some(false) => ended.removed.push(dir),
            None => {}
        }
        let _ = std::fs::remove_file(entry);
    }
    ended.runners = runners.into_iter().collect();
    ended
}

/// Every process carrying a runner's mark: (its pid, the runner's).
fn marked_processes() -> Vec<(u32, u32)> {
    let me = std::process::id();
    let prefix = format!("{RUNNER_ENV}=");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let runner = env.split(|&b| b == 0).find_map(|var| {
            std::str::from_utf8(var)
                .ok()?
                .strip_prefix(&prefix)?
                .parse()
                .ok()
        });
        if let Some(runner) = runner {
            if runner != pid {
                found.push((pid, runner));
            }
        }
    }
    found
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn namespace_pids(name: &str) -> Vec<i32> {
    Command::new("ip")
        .args(["netns", "pids", name])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The runners' cgroups (`shootout-…`) under the cgroup2 root.
fn cgroups() -> Vec<PathBuf> {
    let Some(root) = super::cgroup::cgroup2_root() else {
        return Vec::new();
    };
    std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("shootout-"))
        .map(|e| e.path())
        .collect()
}

/// Registered run folders: (the entry, its runner, the folder).
fn registered() -> Vec<(PathBuf, u32, PathBuf)> {
    std::fs::read_dir(registry())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let runner = name.split('-').next()?.parse().ok()?;
            let dir = std::fs::read_to_string(e.path()).ok()?;
            Some((e.path(), runner, PathBuf::from(dir)))
        })
        .collect()
}

/// Ends a folder its runner left half-written, as the runner would have on
/// an interruption: no temporary or partial file stays; with a finished
/// unit (meta.json, written after each) it is marked interrupted and its raw
/// records packed (`Some(true)`); without one it goes (`Some(false)`).
/// `None`: the folder is not there any more.
fn finish_folder(dir: &Path) -> Option<bool> {
    if !dir.is_dir() {
        return None;
    }
    analysis::files::tidy(dir);
    // A shared file (history.json, index.html) the runner was replacing
    // beside its folder: its temporary, never the file itself.
    if let Some(out) = dir.parent() {
        for e in std::fs::read_dir(out).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > Duration::from_secs(60)));
            if name.starts_with('.') && name.ends_with(".tmp") && old {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let meta = dir.join("meta.json");
    let Ok(bytes) = analysis::input::raw::read(&meta) else {
        let _ = std::fs::remove_dir_all(dir);
        return Some(false);
    };
    if let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&bytes) {
        value["interrupted"] = serde_json::Value::Bool(true);
        if let Ok(text) = serde_json::to_vec_pretty(&value) {
            let _ = analysis::files::write_atomic(&meta, &text);
        }
    }
    let _ = analysis::input::raw::pack(dir);
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_gives_its_runner_and_a_live_runner_is_not_gone() {
        assert_eq!(pid_in_name("shootout-4242-0-srv"), Some(4242));
        assert_eq!(pid_in_name("shootout-x-0"), None);
        assert_eq!(pid_in_name("other-4242"), None);
        assert!(!gone(std::process::id()));
        // A child that exited and was not reaped yet is a zombie: gone.
        let child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !gone(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(gone(pid));
        drop(child);
    }
}
