//! Stand-in hosts for the tests: `scripts/netns-hosts` in a temp dir, taken
//! down on drop (even on panic).

#![allow(dead_code)] // each test binary uses part of it

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use shootout::place::ssh::{RemoteHost, SshSettings};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Hosts made by `scripts/netns-hosts`; taken down on drop, even on panic.
pub struct Hosts {
    pub dir: PathBuf,
    pub prefix: String,
    pub net: u32,
}

impl Hosts {
    /// `slot` keeps the hosts of this binary's tests apart (their names);
    /// each set gets a subnet no other set on the machine has, so that test
    /// binaries run side by side (a second bridge on a subnet in use would
    /// take the first one's routes).
    pub fn up(dir: &Path, names: &str, slot: u32) -> Hosts {
        let pid = std::process::id();
        // Choosing and taking a subnet is one step for every test binary:
        // an exclusive lock on a file all of them open.
        let lock = std::fs::File::create("/tmp/shootout-test-subnets.lock").unwrap();
        // SAFETY: flock(2) on a file we hold open; released when it closes.
        assert_eq!(
            unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) },
            0
        );
        let taken = subnets_in_use();
        let net = (0..150)
            .map(|i| 100 + (pid * 2 + slot + i) % 150)
            .find(|n| !taken.contains(n))
            .expect("a free 10.N.0.0/24 for stand-in hosts");
        let hosts = Hosts {
            dir: dir.to_path_buf(),
            prefix: format!("t{slot}{}", pid % 100_000),
            net,
        };
        let out = Command::new(root().join("scripts/netns-hosts"))
            .arg("up")
            .arg(dir)
            .args(["--prefix", &hosts.prefix, "--net", &hosts.net.to_string()])
            .args(["--hosts", names])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "netns-hosts up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        hosts
    }

    pub fn host(&self, name: &str, index: u32) -> RemoteHost {
        RemoteHost {
            name: name.into(),
            address: format!("10.{}.0.{index}", self.net),
            user: "root".into(),
            port: 2200 + index as u16,
            workdir: self
                .dir
                .join("hosts")
                .join(name)
                .join("work")
                .display()
                .to_string(),
            netns: Some(format!("{}-{name}", self.prefix)),
        }
    }

    pub fn settings(&self) -> SshSettings {
        SshSettings {
            identity: Some(self.dir.join("id_ed25519")),
            known_hosts: self.dir.join("known_hosts"),
            connect_timeout: Duration::from_secs(5),
        }
    }

    pub fn namespaces(&self) -> Vec<String> {
        let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with(&format!("{}-", self.prefix)))
            .map(str::to_owned)
            .collect()
    }

    /// Stops `name`'s sshd and the connections it serves: the host is gone.
    pub fn stop_sshd(&self, name: &str) {
        let pid =
            std::fs::read_to_string(self.dir.join("hosts").join(name).join("sshd.pid")).unwrap();
        // The whole tree, not only sshd's children: a session's unprivileged
        // child holds the TCP connection too, and while it lives an ssh
        // control master can still run commands through it (a flaky test).
        let mut tree = vec![pid.trim().to_string()];
        let mut i = 0;
        while i < tree.len() {
            let out = Command::new("pgrep")
                .args(["-P", &tree[i]])
                .output()
                .unwrap();
            tree.extend(
                String::from_utf8_lossy(&out.stdout)
                    .split_whitespace()
                    .map(str::to_owned),
            );
            i += 1;
        }
        let _ = Command::new("kill").arg("-KILL").args(&tree).status();
        let alive = |p: &String| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .map(|s| {
                    !s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
                .unwrap_or(false)
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while tree.iter().any(alive) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !tree.iter().any(alive),
            "sshd of {name} still alive: {tree:?}"
        );
    }
}

/// N of every 10.N.0.254 on this machine: bridges of stand-in hosts up now.
fn subnets_in_use() -> Vec<u32> {
    let out = Command::new("ip")
        .args(["-o", "-4", "addr", "show"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| {
            w.strip_prefix("10.")?
                .strip_suffix(".0.254/24")?
                .parse()
                .ok()
        })
        .collect()
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new(root().join("scripts/netns-hosts"))
            .arg("down")
            .arg(&self.dir)
            .status();
    }
}

/// A temp dir with a short path in /tmp: ssh's control sockets live under
/// it, and a Unix socket path has at most 107 bytes.
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("sho")
        .tempdir_in("/tmp")
        .unwrap()
}

/// A directory for sessions' control sockets, in `dir`.
pub fn control_dir(dir: &Path) -> PathBuf {
    let control = dir.join("c");
    std::fs::create_dir(&control).unwrap();
    control
}

/// actix-server's dev build as the runner builds it (the variant builder,
/// with its shared dependencies): the same binary `scripts/test-variants`
/// built before the tests, so no test builds the server stack again under
/// other features.
pub fn dev_actix_server() -> PathBuf {
    let variant = variants::Variant::from_name("actix-server").expect("a variant name");
    variants::Builder::new(variants::Profile::Dev)
        .server(&variant)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// loadgen's dev build, as the runner builds it.
pub fn dev_loadgen() -> PathBuf {
    variants::Builder::new(variants::Profile::Dev)
        .loadgen()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Where this checkout's runner keeps its server builds: another
/// checkout's servers (a developer's, while CI runs on a clone) are not
/// this test's leftovers.
pub fn own_builds() -> String {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .expect("the shootout crate lives in the workspace")
                .join("target")
        });
    format!("{}/shootout/", target.display())
}

/// The tag of the test running on this thread (libtest names each test's
/// thread after the test): `<this binary's pid>:<test name>`.
pub fn test_tag() -> String {
    let thread = std::thread::current();
    format!("{}:{}", std::process::id(), thread.name().unwrap_or("main"))
}

/// `cmd` with this test's tag in its environment (`SHOOTOUT_TEST`): every
/// process it starts inherits it, so [`leftovers`] finds what this test's
/// run left and nothing of the tests that run beside it.
pub fn tagged(cmd: &mut Command) -> &mut Command {
    cmd.env("SHOOTOUT_TEST", test_tag())
}

/// Processes this test's runs started that are still alive: those that
/// carry this test's tag (see [`tagged`]; servers, nginx, loadgen, Xvfb and
/// terminals inherit it), a `SHOOTOUT_TAG` under `out` (the runner's tag for
/// Xvfb and terminals), or `out` on their command line (nginx's prefix).
pub fn leftovers(out: &Path) -> Vec<String> {
    let out = out.display().to_string();
    let own = format!("SHOOTOUT_TEST={}", test_tag());
    let under = format!("SHOOTOUT_TAG={out}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_none()
            || entry.file_name().to_str() == Some(&std::process::id().to_string())
        {
            continue;
        }
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
        let env = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let env = String::from_utf8_lossy(&env);
        let tagged = env
            .split('\0')
            .any(|var| var == own || var.starts_with(&under));
        if tagged || cmd.contains(&out) {
            found.push(cmd);
        }
    }
    found
}

/// Processes still alive that name `dir` on their command line or carry
/// a `SHOOTOUT_TAG` under it (Xvfb and terminals), sshd aside: what one
/// test left, where [`leftovers`] would also see other tests' loadgens.
pub fn left_under(dir: &Path) -> Vec<String> {
    let dir = dir.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_none()
        {
            continue;
        }
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
        let env = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let tagged = String::from_utf8_lossy(&env).contains(&format!("SHOOTOUT_TAG={dir}"));
        if (cmd.contains(&dir) || tagged) && !cmd.contains("sshd") {
            found.push(cmd);
        }
    }
    found
}

/// Command lines of orphans (parent pid 1) whose command line contains
/// `pattern`: what a run that has ended left behind, and not the live
/// children of another test's run.
pub fn orphans(pattern: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_none()
        {
            continue;
        }
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // The parent pid is the second field after the parenthesised name.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(1) && cmd.contains(pattern) {
            found.push(cmd);
        }
    }
    found
}

pub fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&format!("shootout-{pid}-")))
        .map(str::to_owned)
        .collect()
}
