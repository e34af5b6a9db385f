//! What the machine needs before a run, and installing it when it is missing.
//!
//! `shootout run` and `shootout calibrate` call [`ensure`] with the needs of
//! their rows before building anything; `shootout setup` does it for a file
//! or for everything (`.ci/run` uses `--all`). Debian package names: this is
//! the machine kind the project targets. As root, what is missing is
//! installed with `apt-get` and named in one line; otherwise one line names
//! the exact command and nothing is built.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::config::scenario::{Scenario, Topology};

/// A program the project runs and the Debian package that has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub program: &'static str,
    pub package: &'static str,
    /// Which rows need it, for the messages.
    pub why: &'static str,
}

pub const NGINX: Need = Need {
    program: "nginx",
    package: "nginx-light",
    why: "nginx rows",
};
pub const IP: Need = Need {
    program: "ip",
    package: "iproute2",
    why: "network-namespace rows",
};
pub const TASKSET: Need = Need {
    program: "taskset",
    package: "util-linux",
    why: "pinned rows",
};
pub const CMAKE: Need = Need {
    program: "cmake",
    package: "cmake",
    why: "snmalloc builds",
};
pub const GXX: Need = Need {
    program: "g++",
    package: "g++",
    why: "snmalloc builds",
};
pub const CC: Need = Need {
    program: "cc",
    package: "gcc",
    why: "mimalloc and jemalloc builds",
};
pub const MAKE: Need = Need {
    program: "make",
    package: "make",
    why: "jemalloc builds",
};
pub const MUSL_GCC: Need = Need {
    program: "musl-gcc",
    package: "musl-tools",
    why: "musl builds (their C allocators)",
};

pub const XVFB: Need = Need {
    program: "Xvfb",
    package: "xvfb",
    why: "terminal-emulator rows",
};
/// `xvfb-run` (in xvfb) needs it; Debian only recommends it.
pub const XAUTH: Need = Need {
    program: "xauth",
    package: "xauth",
    why: "terminal-emulator rows on remote hosts (xvfb-run)",
};
pub const XTERM: Need = Need {
    program: "xterm",
    package: "xterm",
    why: "xterm rows",
};
/// xterm's `fixed` font (a file, not a program: an absolute path is looked
/// up as it is).
pub const FIXED_FONT: Need = Need {
    program: "/usr/share/fonts/X11/misc/6x13.pcf.gz",
    package: "xfonts-base",
    why: "xterm rows",
};

pub const ALACRITTY: Need = Need {
    program: "alacritty",
    package: "alacritty",
    why: "alacritty rows",
};

/// sshd for the stand-in hosts of `scripts/netns-hosts` (the ssh tests); an
/// absolute path, as Debian keeps it out of a user's PATH.
pub const SSHD: Need = Need {
    program: "/usr/sbin/sshd",
    package: "openssh-server",
    why: "the ssh tests and scripts/netns-hosts",
};
pub const SSH: Need = Need {
    program: "ssh",
    package: "openssh-client",
    why: "remote hosts",
};

/// A real browser, headless, for the run report's test
/// (`shootout/tests/browser.rs` opens every kind of `index.html` in it).
pub const CHROMIUM: Need = Need {
    program: "chromium",
    package: "chromium",
    why: "the report's browser test",
};

/// Go, for the Go example server (`examples/go-counter`: its conformance
/// test and the command rows that build it).
pub const GO: Need = Need {
    program: "go",
    package: "golang-go",
    why: "the Go example server",
};

/// Everything any scenario or test can need.
pub fn all() -> Vec<Need> {
    vec![
        NGINX, IP, TASKSET, CMAKE, GXX, CC, MAKE, MUSL_GCC, XVFB, XAUTH, XTERM, FIXED_FONT,
        ALACRITTY, SSH, SSHD, CHROMIUM, GO,
    ]
}

/// What these rows need (each program once, in a fixed order).
pub fn needs_of<'a>(rows: impl IntoIterator<Item = &'a Scenario>) -> Vec<Need> {
    let mut needs = Vec::new();
    for s in rows {
        if s.hosts.is_some() {
            // nginx and taskset run on the hosts; here only ssh.
            needs.push(SSH);
        } else if s.proxy.is_some() {
            needs.push(NGINX);
        }
        if s.topology == Topology::Netns {
            needs.push(IP);
        }
        if s.hosts.is_none() && (s.server_cpus.is_some() || s.loadgen_cpus.is_some()) {
            needs.push(TASKSET);
        }
        if s.features.iter().any(|f| f == "snmalloc") {
            needs.extend([CMAKE, GXX]);
        }
        if s.features.iter().any(|f| f == "mimalloc") {
            needs.push(CC);
        }
        if s.features.iter().any(|f| f == "jemalloc") {
            needs.extend([CC, MAKE]);
        }
        if s.libc == crate::config::scenario::Libc::Musl {
            needs.push(MUSL_GCC);
        }
        match s.log {
            crate::config::scenario::LogSink::Xterm => needs.extend([XVFB, XTERM, FIXED_FONT]),
            crate::config::scenario::LogSink::Alacritty => needs.extend([XVFB, ALACRITTY]),
            _ => {}
        }
        // On a remote host (here, for the stand-ins) xvfb-run starts Xvfb.
        if s.hosts.is_some()
            && matches!(
                s.log,
                crate::config::scenario::LogSink::Xterm
                    | crate::config::scenario::LogSink::Alacritty
            )
        {
            needs.push(XAUTH);
        }
        // A command row whose build or command runs Go.
        if let Some(c) = &s.command {
            let words = c.build.iter().flatten().chain(&c.written);
            if words.clone().any(|w| w == "go" || w.contains("go build")) {
                needs.push(GO);
            }
        }
        if let Some(t) = &s.ssh_terminal {
            use crate::config::scenario::Drawn;
            needs.push(SSH);
            match t.terminal {
                Drawn::Xterm => needs.extend([XVFB, XTERM, FIXED_FONT]),
                Drawn::Alacritty => needs.extend([XVFB, ALACRITTY]),
                Drawn::Drained => {}
            }
        }
    }
    let order = all();
    needs.sort_by_key(|n| order.iter().position(|o| o == n));
    needs.dedup();
    needs
}

/// The needs of `shootout setup`: everything (`all`) or the rows of the files.
pub fn needs_of_files(files: &[PathBuf], all_needs: bool) -> anyhow::Result<Vec<Need>> {
    if all_needs {
        return Ok(all());
    }
    if files.is_empty() {
        bail!("name scenario files, or --all");
    }
    Ok(needs_of(&rows_of_files(files)?))
}

/// Every row of the files.
pub fn rows_of_files(files: &[PathBuf]) -> anyhow::Result<Vec<Scenario>> {
    let mut rows = Vec::new();
    for f in files {
        rows.extend(crate::config::parse::load(f)?.scenarios);
    }
    Ok(rows)
}

/// The Rust standard library for musl, when a row is built for it: added
/// with `rustup target add` when missing (rustup fetches it), else one line
/// saying what to do.
pub fn ensure_rust_targets<'a>(rows: impl IntoIterator<Item = &'a Scenario>) -> anyhow::Result<()> {
    use crate::config::scenario::Libc;
    if !rows.into_iter().any(|s| s.libc == Libc::Musl) {
        return Ok(());
    }
    let target = Libc::MUSL_TARGET;
    let has = || {
        Command::new("rustc")
            .args(["--print", "target-libdir", "--target", target])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            // The directory exists for any target; the library is `libstd-HASH.rlib`.
            .and_then(|dir| std::fs::read_dir(dir).ok())
            .is_some_and(|mut entries| {
                entries.any(|e| {
                    e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
                })
            })
    };
    if has() {
        return Ok(());
    }
    eprintln!("shootout: adding the Rust target {target} (rustup target add {target})");
    let status = Command::new("rustup")
        .args(["target", "add", target])
        .stdin(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() && has() => Ok(()),
        Ok(s) => bail!("rustup target add {target} failed ({s}); musl rows need that target's standard library"),
        Err(e) => bail!("musl rows need the Rust target {target}: run `rustup target add {target}` (rustup: {e})"),
    }
}

/// Where programs are looked up, who runs, and which `apt-get` to use.
#[derive(Debug, Clone)]
pub struct Env {
    pub dirs: Vec<PathBuf>,
    pub root: bool,
    pub apt_get: PathBuf,
}

impl Env {
    /// `$PATH` plus the sbin directories (nginx and ip live there and a
    /// non-root PATH often lacks them), the effective user, `apt-get`.
    pub fn current() -> Env {
        let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
        let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
        for extra in ["/usr/local/sbin", "/usr/sbin", "/sbin"] {
            if !dirs.iter().any(|d| d == Path::new(extra)) {
                dirs.push(extra.into());
            }
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        Env {
            dirs,
            root,
            apt_get: "apt-get".into(),
        }
    }

    /// The program's path, when one of the directories has it executable
    /// (an absolute path: when that file exists).
    pub fn find(&self, program: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        if program.starts_with('/') {
            return Path::new(program).is_file().then(|| program.into());
        }
        self.dirs.iter().map(|d| d.join(program)).find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    }
}

/// The program's path on this machine (`$PATH` and the sbin directories).
pub fn find(program: &str) -> Option<PathBuf> {
    Env::current().find(program)
}

/// For a test that needs `needs`: an error naming each one missing, its
/// package and the command that installs it, so that the test fails with
/// it rather than leaving a row out.
pub fn require(needs: &[Need]) -> Result<(), String> {
    let missing = missing(needs, &Env::current());
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "missing {}: `scripts/test` installs it as root, or run `apt-get install -y {}`",
        describe(&missing),
        packages(&missing).join(" ")
    ))
}

/// What [`ensure`] does about `needs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Present,
    Install(Vec<Need>),
    /// Missing, not root: the one line to print.
    Refuse(String),
}

/// The needs whose program `env` does not find.
fn missing(needs: &[Need], env: &Env) -> Vec<Need> {
    needs
        .iter()
        .copied()
        .filter(|n| env.find(n.program).is_none())
        .collect()
}

pub fn decide(needs: &[Need], env: &Env) -> Decision {
    let missing = missing(needs, env);
    if missing.is_empty() {
        Decision::Present
    } else if env.root {
        Decision::Install(missing)
    } else {
        Decision::Refuse(format!(
            "missing {}; as root, run: apt-get install -y {}",
            describe(&missing),
            packages(&missing).join(" ")
        ))
    }
}

/// Installs what is missing (root) or fails with the command to run.
pub fn ensure(needs: &[Need]) -> anyhow::Result<()> {
    ensure_in(needs, &Env::current())
}

pub fn ensure_in(needs: &[Need], env: &Env) -> anyhow::Result<()> {
    match decide(needs, env) {
        Decision::Present => Ok(()),
        Decision::Refuse(line) => bail!("{line}"),
        Decision::Install(missing) => {
            eprintln!("shootout: installing {}", describe(&missing));
            apt(env, &["update", "-qq"])?;
            let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
            let pkgs = packages(&missing);
            args.extend(pkgs.iter().copied());
            apt(env, &args)?;
            let still: Vec<Need> = missing
                .into_iter()
                .filter(|n| env.find(n.program).is_none())
                .collect();
            if !still.is_empty() {
                bail!(
                    "apt-get installed {} but {} is still missing",
                    pkgs.join(" "),
                    still
                        .iter()
                        .map(|n| n.program)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            Ok(())
        }
    }
}

/// `nginx-light (nginx for nginx rows), ...`
fn describe(needs: &[Need]) -> String {
    needs
        .iter()
        .map(|n| format!("{} ({} for {})", n.package, n.program, n.why))
        .collect::<Vec<_>>()
        .join(", ")
}

fn packages(needs: &[Need]) -> Vec<&'static str> {
    let mut p: Vec<&'static str> = needs.iter().map(|n| n.package).collect();
    p.dedup();
    p
}

fn apt(env: &Env, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(&env.apt_get)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        // Debian's maintainer scripts start no service in runlevel 1: the
        // packages installed here (nginx, openssh-server) are only run by
        // the runner and the tests, in their own prefixes and namespaces.
        .env("RUNLEVEL", "1")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", env.apt_get.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        bail!(
            "{} {} failed ({}): {}",
            env.apt_get.display(),
            args.join(" "),
            out.status,
            tail.trim()
        );
    }
    Ok(())
}

/// The nginx binary, or a one-line error naming the fix.
pub fn nginx_binary() -> anyhow::Result<PathBuf> {
    match find(NGINX.program) {
        Some(p) => Ok(p),
        None => bail!("nginx not found: install it (apt-get install -y nginx-light)"),
    }
}

/// `nginx -v`, e.g. `nginx/1.22.1`.
pub fn nginx_version() -> Option<String> {
    let out = Command::new(nginx_binary().ok()?).arg("-v").output().ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    text.split_whitespace()
        .find(|t| t.starts_with("nginx/"))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake PATH directory, and a fake `apt-get` outside it that logs its
    /// arguments and, on `install`, puts the packages' programs on the PATH
    /// (unless `installs` is false).
    fn fake(programs: &[&str], root: bool, installs: bool) -> (tempfile::TempDir, Env) {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        for p in programs {
            exe(&bin.join(p), "#!/bin/sh\n");
        }
        let apt = tmp.path().join("apt-get");
        let log = tmp.path().join("apt.log");
        let mut script = format!("#!/bin/sh\necho \"$@\" >> {}\n", log.display());
        if installs {
            script += &format!(
                "for a in \"$@\"; do case $a in nginx-light) p=nginx;; iproute2) p=ip;; *) continue;; esac; printf '#!/bin/sh\\n' > {0}/$p; chmod +x {0}/$p; done\n",
                bin.display()
            );
        }
        exe(&apt, &script);
        let env = Env {
            dirs: vec![bin],
            root,
            apt_get: apt,
        };
        (tmp, env)
    }

    /// Written by a child process: a file this process held open for
    /// writing could be inherited by a child that another test thread forks
    /// at that moment, and running the file would then fail with "Text
    /// file busy" (ETXTBSY) until that child execs (it did, once in CI).
    fn exe(path: &Path, text: &str) {
        use std::io::Write;
        let mut c = Command::new("sh")
            .args(["-c", "cat >\"$0\" && chmod 755 \"$0\""])
            .arg(path)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        assert!(c.wait().unwrap().success());
    }

    fn apt_log(tmp: &tempfile::TempDir) -> Option<String> {
        std::fs::read_to_string(tmp.path().join("apt.log")).ok()
    }

    #[test]
    fn present_installs_nothing() {
        let (tmp, env) = fake(&["nginx", "ip"], true, true);
        assert_eq!(decide(&[NGINX, IP], &env), Decision::Present);
        ensure_in(&[NGINX, IP], &env).unwrap();
        assert_eq!(apt_log(&tmp), None);
    }

    #[test]
    fn missing_as_root_is_installed() {
        let (tmp, env) = fake(&["ip"], true, true);
        assert_eq!(decide(&[NGINX, IP], &env), Decision::Install(vec![NGINX]));
        ensure_in(&[NGINX, IP], &env).unwrap();
        assert_eq!(
            apt_log(&tmp).unwrap(),
            "update -qq\ninstall -y -qq --no-install-recommends nginx-light\n"
        );
        assert!(env.find("nginx").is_some());
    }

    #[test]
    fn missing_as_non_root_names_the_command_and_installs_nothing() {
        let (tmp, env) = fake(&[], false, true);
        let err = ensure_in(&[NGINX, IP], &env).unwrap_err().to_string();
        assert_eq!(
            err,
            "missing nginx-light (nginx for nginx rows), iproute2 (ip for network-namespace rows); \
             as root, run: apt-get install -y nginx-light iproute2"
        );
        assert_eq!(apt_log(&tmp), None);
    }

    #[test]
    fn an_install_that_does_not_deliver_is_an_error() {
        let (_tmp, env) = fake(&[], true, false);
        let err = ensure_in(&[NGINX], &env).unwrap_err().to_string();
        assert!(err.contains("nginx is still missing"), "{err}");
    }

    #[test]
    fn a_file_that_is_not_executable_is_missing() {
        let (tmp, env) = fake(&[], false, true);
        std::fs::write(tmp.path().join("bin/nginx"), "").unwrap();
        assert!(matches!(decide(&[NGINX], &env), Decision::Refuse(_)));
    }

    #[test]
    fn rows_name_what_they_need() {
        let text = r#"
title = "t"
[[scenario]]
name = "a"
server = "actix"
[[scenario]]
name = "b"
server = "ntex"
features = ["snmalloc"]
proxy = "proxy"
topology = "netns"
server_cpus = "1"
"#;
        let f = crate::config::parse::parse(Path::new("t.toml"), text).unwrap();
        assert_eq!(needs_of(&f.scenarios[..1]), vec![]);
        assert_eq!(needs_of(&f.scenarios), vec![NGINX, IP, TASKSET, CMAKE, GXX]);
    }
}
