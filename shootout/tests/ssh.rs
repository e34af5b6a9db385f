//! OpenSSH sessions against real sshds in network namespaces standing for
//! hosts (`scripts/netns-hosts`): preflight, upload by content hash, clock
//! offset, a skewed clock refused, a host whose sshd stops named in the
//! error, `shootout hosts` on the file the script writes, and nothing left
//! behind. Needs root and openssh-server (`shootout setup --all`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use shootout::ssh::{check_offset, RemoteHost, Session, SshSettings};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Hosts made by `scripts/netns-hosts`; taken down on drop, even on panic.
struct Hosts {
    dir: PathBuf,
    prefix: String,
    net: u32,
}

impl Hosts {
    /// `slot` keeps the hosts of this binary's tests apart.
    fn up(dir: &Path, names: &str, slot: u32) -> Hosts {
        let pid = std::process::id();
        let hosts = Hosts {
            dir: dir.to_path_buf(),
            prefix: format!("t{slot}{}", pid % 100_000),
            net: 100 + (pid * 2 + slot) % 150,
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

    fn host(&self, name: &str, index: u32) -> RemoteHost {
        RemoteHost {
            name: name.into(),
            address: format!("10.{}.0.{index}", self.net),
            user: "root".into(),
            port: 22,
            workdir: self
                .dir
                .join("hosts")
                .join(name)
                .join("work")
                .display()
                .to_string(),
        }
    }

    fn settings(&self) -> SshSettings {
        SshSettings {
            identity: Some(self.dir.join("id_ed25519")),
            known_hosts: self.dir.join("known_hosts"),
            connect_timeout: Duration::from_secs(5),
        }
    }

    fn namespaces(&self) -> Vec<String> {
        let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with(&format!("{}-", self.prefix)))
            .map(str::to_owned)
            .collect()
    }

    /// Stops `name`'s sshd and the connections it serves: the host is gone.
    fn stop_sshd(&self, name: &str) {
        let pid =
            std::fs::read_to_string(self.dir.join("hosts").join(name).join("sshd.pid")).unwrap();
        let pid = pid.trim();
        let _ = Command::new("pkill").args(["-P", pid]).status();
        let _ = Command::new("kill").arg(pid).status();
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new(root().join("scripts/netns-hosts"))
            .arg("down")
            .arg(&self.dir)
            .status();
    }
}

fn local(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn sessions_check_upload_time_and_name_a_lost_host() {
    // Short: the control sockets live here (Unix socket paths are short).
    let dir = tempfile::Builder::new()
        .prefix("sho")
        .tempdir_in("/tmp")
        .unwrap();
    let hosts = Hosts::up(dir.path(), "alpha beta", 0);
    let control = dir.path().join("c");
    std::fs::create_dir(&control).unwrap();
    let settings = hosts.settings();
    let alpha = Session::open(&hosts.host("alpha", 1), &settings, &control).unwrap();
    let beta = Session::open(&hosts.host("beta", 2), &settings, &control).unwrap();

    // Preflight: the same machine underneath.
    let pre = alpha.preflight().unwrap();
    assert_eq!(pre.arch, local("uname", &["-m"]));
    assert_eq!(pre.kernel, local("uname", &["-r"]));
    assert_eq!(pre.cores.to_string(), local("nproc", &[]));
    // Each host is its own network: alpha sees its own address.
    assert!(alpha
        .run("ip -4 -o addr")
        .unwrap()
        .contains(&hosts.host("alpha", 1).address));

    // Upload: copied once, skipped when the same bytes are there, copied
    // again when they change, and runnable.
    let tool = dir.path().join("tool.sh");
    std::fs::write(&tool, "#!/bin/sh\necho one\n").unwrap();
    let (path1, copied) = alpha.upload(&tool).unwrap();
    assert!(copied);
    assert!(
        path1.starts_with(&hosts.host("alpha", 1).workdir),
        "{path1}"
    );
    assert_eq!(alpha.run(&path1).unwrap().trim(), "one");
    let (again, copied) = alpha.upload(&tool).unwrap();
    assert_eq!((again.as_str(), copied), (path1.as_str(), false));
    std::fs::write(&tool, "#!/bin/sh\necho two\n").unwrap();
    let (path2, copied) = alpha.upload(&tool).unwrap();
    assert!(copied && path2 != path1);
    assert_eq!(alpha.run(&path2).unwrap().trim(), "two");

    // Clock: the same clock underneath, so a small offset and a real round trip.
    let clock = beta.clock_offset(5).unwrap();
    assert!(clock.rtt_ms > 0.0, "{clock:?}");
    assert!(clock.offset_ms.abs() < clock.rtt_ms + 20.0, "{clock:?}");
    check_offset("beta", clock, 50.0).unwrap();
    // A host whose clock command says it is 3 s ahead is refused.
    std::env::set_var(
        "SHOOTOUT_TEST_CLOCK_CMD",
        "echo $(( $(date +%s) + 3 )).$(date +%N)",
    );
    let skewed = beta.clock_offset(3);
    std::env::remove_var("SHOOTOUT_TEST_CLOCK_CMD");
    let skewed = skewed.unwrap();
    assert!((skewed.offset_ms - 3000.0).abs() < 200.0, "{skewed:?}");
    let err = check_offset("beta", skewed, 50.0).unwrap_err().to_string();
    assert!(err.starts_with("host beta: its clock is +"), "{err}");

    // A failing command names the host and the tail of its stderr.
    let err = alpha
        .run("echo broken >&2; exit 3")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("host alpha: `echo broken"), "{err}");
    assert!(err.ends_with(": broken"), "{err}");

    // beta's sshd stops: the next command fails and names beta.
    hosts.stop_sshd("beta");
    let err = beta.run("true").unwrap_err().to_string();
    assert!(err.starts_with("host beta: "), "{err}");
    assert_eq!(alpha.run("echo still").unwrap().trim(), "still");

    drop((alpha, beta));
    let names = hosts.namespaces();
    assert_eq!(names.len(), 2, "{names:?}");
    drop(hosts);
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !names.iter().any(|n| left.contains(n.as_str())),
        "namespaces left: {left}"
    );
    assert!(!dir.path().join("netns-hosts.state").exists());
}

/// `shootout hosts` on the hosts.toml netns-hosts wrote: a table naming every
/// host; then a host that is gone is named in one line and the command
/// fails, and the other host's check still ran (its loadgen already there).
#[test]
fn the_hosts_command_checks_every_host_and_names_the_one_that_fails() {
    let dir = tempfile::Builder::new()
        .prefix("sho")
        .tempdir_in("/tmp")
        .unwrap();
    let hosts = Hosts::up(dir.path(), "server load1", 1);
    let file = dir.path().join("hosts.toml");
    let shootout = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_shootout"))
            .args(args)
            .arg(&file)
            .args(["--build-profile", "dev"])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, table, err) = shootout(&["hosts"]);
    assert_eq!(code, Some(0), "{err}");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {table}"))
            .to_string()
    };
    assert!(row("server ").contains(" server "), "{table}");
    assert!(row("server ").ends_with(" -"), "{table}");
    assert!(row("load1 ").contains(" load "), "{table}");
    assert!(row("load1 ").contains("copied to "), "{table}");
    let (_, again, _) = shootout(&["hosts"]);
    assert!(
        again
            .lines()
            .any(|l| l.starts_with("load1 ") && l.contains("already at ")),
        "{again}"
    );

    hosts.stop_sshd("server");
    let (code, _, err) = shootout(&["hosts"]);
    assert_eq!(code, Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("shootout: host server: ssh root@"),
        "{err}"
    );
}
