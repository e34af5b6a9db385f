//! Builds each distinct (server, feature set) once, in release, and keeps its
//! binary in a directory of its own: `target/shootout/<profile>/<variant>/`.
//!
//! All variants share the workspace target directory, so dependencies build
//! once; cargo keeps each feature set's artifacts apart and reuses them next
//! time, so a repeated run only re-checks freshness.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::config::scenario::{Libc, Scenario};

/// The workspace root: the nearest ancestor of the current directory with a
/// `Cargo.lock`, or the directory this crate was built from.
pub fn workspace_root() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    cwd.ancestors()
        .find(|d| d.join("Cargo.lock").is_file() && d.join("app-core").is_dir())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// Cargo profile of the builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    Release,
    Dev,
}

impl Profile {
    fn arg(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Dev => "dev",
        }
    }
    fn dir(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Dev => "debug",
        }
    }
}

/// Builds (or reuses) the server variant of `s`; returns its binary.
pub fn server(root: &Path, s: &Scenario, profile: Profile) -> anyhow::Result<PathBuf> {
    let mut args = vec![
        "build",
        "--profile",
        profile.arg(),
        "--quiet",
        "-p",
        s.server.package(),
    ];
    let features = s.features.join(",");
    if !features.is_empty() {
        args.extend(["--features", &features]);
    }
    // ntex's own runtimes replace the default feature, rt-tokio.
    if s.features
        .iter()
        .any(|f| app_core::runtime::REPLACES_DEFAULT.contains(&f.as_str()))
    {
        args.push("--no-default-features");
    }
    let musl = s.libc == Libc::Musl;
    if musl {
        args.extend(["--target", Libc::MUSL_TARGET]);
    }
    let target = target_dir(root);
    // From the build to the copy, no other runner may build: another
    // variant of the same package would replace cargo's output in between.
    let _lock = BuildLock::take(&target.join("shootout"))?;
    cargo(root, &args).with_context(|| format!("building {}", s.variant()))?;
    let out = if musl {
        target.join(Libc::MUSL_TARGET).join(profile.dir())
    } else {
        target.join(profile.dir())
    };
    let built = out.join(s.server.binary());
    let dir = target
        .join("shootout")
        .join(profile.dir())
        .join(s.variant());
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let copy = dir.join(s.server.binary());
    let tmp = dir.join(format!(".tmp-{}", std::process::id()));
    std::fs::copy(&built, &tmp).with_context(|| format!("copying {}", built.display()))?;
    std::fs::rename(&tmp, &copy).with_context(|| format!("placing {}", copy.display()))?;
    Ok(copy)
}

/// Builds loadgen and returns its binary.
pub fn loadgen(root: &Path, profile: Profile) -> anyhow::Result<PathBuf> {
    cargo(
        root,
        &[
            "build",
            "--profile",
            profile.arg(),
            "--quiet",
            "-p",
            "loadgen",
        ],
    )
    .context("building loadgen")?;
    Ok(target_dir(root).join(profile.dir()).join("loadgen"))
}

fn cargo(root: &Path, args: &[&str]) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// An exclusive lock on `DIR/.build-lock` (flock), released on drop: runs
/// of the runner at the same time (the tests run several) build one at a
/// time.
struct BuildLock {
    /// Closing it releases the lock.
    _file: std::fs::File,
}

impl BuildLock {
    fn take(dir: &Path) -> anyhow::Result<BuildLock> {
        use std::os::fd::AsRawFd;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(".build-lock");
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        // SAFETY: flock on a descriptor we own; it blocks until the lock is ours.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            anyhow::bail!(
                "locking {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(BuildLock { _file: file })
    }
}
