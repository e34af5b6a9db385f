//! `meta.json`: what the run ran on, rewritten after every scenario.

use std::path::Path;
use std::process::Command;

use serde::Serialize;

use crate::record::row::RowRecord;

#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    pub date: String,
    pub git_sha: Option<String>,
    /// True when tracked files differed from `git_sha` before the run's
    /// builds or after them ([`Meta::dirty_before`]): the binaries may
    /// have been built from uncommitted changes.
    pub git_dirty: Option<bool>,
    pub scenario_file: String,
    pub rustc: Option<String>,
    pub crate_versions: Vec<(String, String)>,
    pub nginx: Option<String>,
    pub cpu_model: Option<String>,
    pub cores: usize,
    /// The CPUs the runner was pinned to (`taskset -c 1 shootout run ...`),
    /// when fewer than the machine's online CPUs: every process it starts
    /// without a pinning of its own (a sink's reader, a terminal and its
    /// Xvfb, the ssh client) runs there too. `cores` counts only these.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_cpus: Option<String>,
    pub kernel: Option<String>,
    pub interrupted: bool,
    /// `sequential` or `paired`.
    pub design: String,
    pub rows: Vec<RowRecord>,
    /// Paired design: one record per comparison.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paired: Vec<crate::record::comparison::ComparisonRecord>,
    /// Paired design with `spread = "sitting"`: the plan, drawn before the
    /// first block, one entry per block in the order run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<PlannedBlock>,
    /// Memory rows: one record per repetition (also in the table directory).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<analysis::memory::MemoryRecord>,
    /// Remote hosts: what preflight found and each clock offset.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<crate::place::connect::Checked>,
}

/// One block of the plan: which comparison and run take it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedBlock {
    pub row: String,
    pub baseline: String,
    pub run: u32,
}

/// A command's trimmed stdout when it succeeds.
/// Whether tracked files in `root` differ from HEAD (none without git).
pub fn git_dirty(root: &Path) -> Option<bool> {
    let root = root.display().to_string();
    output(
        "git",
        &["-C", &root, "status", "--porcelain", "--untracked-files=no"],
    )
    .map(|s| !s.is_empty())
}

impl Meta {
    /// The record dirty if the tree was dirty before the builds too
    /// (`before`, from [`git_dirty`]): [`Meta::collect`] runs after them,
    /// and a change made and undone while they ran would go unrecorded.
    pub fn dirty_before(mut self, before: Option<bool>) -> Meta {
        self.git_dirty = match (before, self.git_dirty) {
            (Some(a), Some(b)) => Some(a || b),
            (a, b) => a.or(b),
        };
        self
    }
}

pub(crate) fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// This process's allowed CPUs when they are not all the online ones.
fn runner_cpus() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim()
        .to_string();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    (allowed != online.trim()).then_some(allowed)
}

/// UTC time as `2026-11-22T04-10-00Z` (safe in a directory name).
pub fn timestamp() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace(':', "-")
}

/// Versions of the packages that matter, from Cargo.lock.
fn crate_versions(root: &Path) -> Vec<(String, String)> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    let wanted = [
        "actix-web",
        "ntex",
        "tokio",
        "snmalloc-rs",
        "mimalloc",
        "tikv-jemallocator",
        "memmap2",
        "mio",
        "hdrhistogram",
    ];
    let mut out = Vec::new();
    let mut name = None;
    for line in lock.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            if wanted.contains(&n.as_str()) {
                out.push((n, v.trim_matches('"').to_string()));
            }
        }
    }
    out
}

/// The CPU model from /proc/cpuinfo.
pub fn cpu_model() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
}

impl Meta {
    pub fn collect(root: &Path, scenario_file: &str) -> Meta {
        Meta {
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            git_sha: output(
                "git",
                &["-C", &root.display().to_string(), "rev-parse", "HEAD"],
            ),
            git_dirty: git_dirty(root),
            scenario_file: scenario_file.to_string(),
            rustc: output("rustc", &["-V"]),
            crate_versions: crate_versions(root),
            nginx: crate::prepare::setup::nginx_version(),
            cpu_model: cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            runner_cpus: runner_cpus(),
            kernel: output("uname", &["-r"]),
            interrupted: false,
            design: "sequential".into(),
            rows: Vec::new(),
            paired: Vec::new(),
            plan: Vec::new(),
            memory: Vec::new(),
            hosts: Vec::new(),
        }
    }

    /// Writes `meta.json` through a temporary file and a rename.
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self)?;
        bytes.push(b'\n');
        analysis::files::write_atomic(&dir.join("meta.json"), &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirty_before_the_builds_or_after_them_is_dirty() {
        let meta = |after| Meta {
            git_dirty: after,
            ..Meta::collect(Path::new("/nonexistent"), "t.toml")
        };
        for (before, after, want) in [
            (Some(true), Some(false), Some(true)),
            (Some(false), Some(true), Some(true)),
            (Some(false), Some(false), Some(false)),
            (None, Some(false), Some(false)),
            (Some(true), None, Some(true)),
            (None, None, None),
        ] {
            assert_eq!(meta(after).dirty_before(before).git_dirty, want);
        }
    }
}
