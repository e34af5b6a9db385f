//! Builds each distinct variant once and keeps its binary in a directory of
//! its own: `target/shootout/<profile dir>/<variant>/<binary>`.
//!
//! All variants share one target directory, so dependencies build once;
//! cargo keeps each feature set's artifacts apart and reuses them next time,
//! so a repeated build only re-checks freshness.

use std::fmt;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::prebuilt::Prebuilt;
use crate::Variant;

/// The feature every dev build of a variant adds (never a release build):
/// it pins the features of dependencies the variants share, so that they
/// share one build of them (app-core's `Cargo.toml` says which).
pub const DEV_SHARED_DEPS: &str = "dev-shared-deps";

/// The workspace root: the nearest ancestor of the current directory with a
/// `Cargo.lock` and `app-core/`, or else the parent of this crate's source.
pub fn workspace_root() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    cwd.ancestors()
        .find(|d| d.join("Cargo.lock").is_file() && d.join("app-core").is_dir())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
}

/// `$CARGO_TARGET_DIR`, or `root/target`.
pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// Cargo profile of the builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    Release,
    Dev,
}

impl Profile {
    /// The value of `cargo build --profile`.
    pub fn cargo_arg(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Dev => "dev",
        }
    }

    /// The directory under the target directory cargo builds it into.
    pub fn dir(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Dev => "debug",
        }
    }
}

/// A profile name other than `release` or `dev`.
#[derive(Debug, thiserror::Error)]
#[error("unknown profile {0:?} (release or dev)")]
pub struct UnknownProfile(String);

impl FromStr for Profile {
    type Err = UnknownProfile;

    fn from_str(s: &str) -> Result<Profile, UnknownProfile> {
        match s {
            "release" => Ok(Profile::Release),
            "dev" => Ok(Profile::Dev),
            _ => Err(UnknownProfile(s.to_string())),
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.cargo_arg())
    }
}

/// Why a build gave no binary. Each message is one line and self-contained.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// cargo could not be started.
    #[error("running {cargo}: {error}")]
    Spawn {
        cargo: String,
        error: std::io::Error,
    },
    /// cargo ran and failed.
    #[error("`{command}` failed ({status})")]
    Cargo { command: String, status: ExitStatus },
    /// The stop flag was raised (SIGINT, SIGTERM to the runner): cargo and
    /// every compiler it started were stopped.
    #[error("`{command}` stopped: the run was interrupted")]
    Stopped { command: String },
    /// A file step around the build failed: `action` is creating, locking,
    /// copying or placing.
    #[error("{action} {}: {error}", path.display())]
    File {
        action: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
}

impl BuildError {
    pub(crate) fn file(
        action: &'static str,
        path: &Path,
    ) -> impl FnOnce(std::io::Error) -> BuildError {
        let path = path.to_path_buf();
        move |error| BuildError::File {
            action,
            path,
            error,
        }
    }
}

/// Builds variants (and loadgen) of the workspace at `root` into `target`.
#[derive(Debug, Clone)]
pub struct Builder {
    pub root: PathBuf,
    pub target: PathBuf,
    pub profile: Profile,
    /// Raised to stop a build under way (see [`Builder::stopped_by`]).
    pub stop: Option<Arc<AtomicBool>>,
    /// Builds of another tree (see [`Builder::at_rev`]): its name (the
    /// commit, and the diff applied to it), whose copies are kept apart
    /// from this tree's.
    pub rev: Option<String>,
}

impl Builder {
    /// The workspace of [`workspace_root`], its [`target_dir`].
    pub fn new(profile: Profile) -> Builder {
        let root = workspace_root();
        let target = target_dir(&root);
        Builder::with_target(root, target, profile)
    }

    /// The workspace at `root`, built into `target` (given to cargo as
    /// `CARGO_TARGET_DIR`).
    pub fn with_target(root: PathBuf, target: PathBuf, profile: Profile) -> Builder {
        Builder {
            root,
            target,
            profile,
            stop: None,
            rev: None,
        }
    }

    /// Builds from commit `sha` of the repository at `root` instead, with
    /// `patch` applied: its tree unpacked under `target/revs/<name>/`
    /// ([`crate::rev::tree`]), built into the same target directory; its
    /// copies under `target/shootout/<profile>/rev-<name>/`, and never a
    /// prebuilt one.
    pub fn at_rev(
        mut self,
        sha: &str,
        patch: Option<&crate::rev::TreePatch>,
    ) -> Result<Builder, BuildError> {
        let name = crate::rev::tree_name(sha, patch);
        let tree = crate::rev::tree(&self.root, &self.target, sha, patch).map_err(
            BuildError::file("making the tree", &self.target.join("revs").join(&name)),
        )?;
        self.root = tree;
        self.rev = Some(name);
        Ok(self)
    }

    /// Builds that end as soon as `stop` is raised: cargo runs in a process
    /// group of its own, which gets SIGTERM (then SIGKILL after 5 s), so no
    /// compiler goes on after the runner stopped. Without it, cargo shares
    /// the caller's group and a terminal's Ctrl-C reaches it directly, but a
    /// SIGTERM to the caller alone would wait for the whole build.
    pub fn stopped_by(mut self, stop: Arc<AtomicBool>) -> Builder {
        self.stop = Some(stop);
        self
    }

    /// Builds (or reuses) `variant`; returns its own copy of the binary,
    /// `target/shootout/<profile dir>/<variant name>/<binary>`.
    pub fn server(&self, variant: &Variant) -> Result<PathBuf, BuildError> {
        let server = variant.server;
        let target = variant.libc.target();
        let copy = self.copy_of(variant);
        let dir = copy.parent().expect("a copy is in a directory");
        // Built from this tree before the tests (`scripts/test`): the
        // copy as it is, without a cargo call (prebuilt.rs).
        let prebuilt = Prebuilt::from_env()?.filter(|_| self.rev.is_none());
        if let Some(prebuilt) = &prebuilt {
            if let Some(copy) = self.prebuilt_copy(prebuilt, variant)? {
                return Ok(copy);
            }
        }
        // From the build to the copy, no other builder may build: another
        // variant of the same package would replace cargo's output in between.
        let _lock = self.lock()?;
        // A patched variant builds from a workspace of its own (same target
        // directory, so the dependencies it shares are built once).
        let patches = variant.patches();
        let manifest = match patches.first() {
            Some(first) => Some(
                crate::patched::write_workspace(&self.root, &self.target, server, &patches)
                    .map_err(BuildError::file(
                        "writing the patched workspace for",
                        &self.root.join(first.diff),
                    ))?,
            ),
            None => None,
        };
        let args = self.server_args(variant, manifest.as_deref());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.cargo(&args)?;
        let out = match target {
            Some(target) => self.target.join(target).join(self.profile.dir()),
            None => self.target.join(self.profile.dir()),
        };
        let built = out.join(server.binary());
        std::fs::create_dir_all(dir).map_err(BuildError::file("creating", dir))?;
        // Copy to a temporary name and rename, so that a running copy is
        // never overwritten in place.
        let tmp = dir.join(format!(".tmp-{}", std::process::id()));
        std::fs::copy(&built, &tmp).map_err(BuildError::file("copying", &built))?;
        std::fs::rename(&tmp, &copy).map_err(BuildError::file("placing", &copy))?;
        if let Some(prebuilt) = &prebuilt {
            prebuilt.record_use(&variant.name())?;
        }
        Ok(copy)
    }

    /// Where `variant`'s own copy of its binary lives.
    fn copy_of(&self, variant: &Variant) -> PathBuf {
        let mut dir = self.target.join("shootout").join(self.profile.dir());
        if let Some(sha) = &self.rev {
            dir.push(format!("rev-{sha}"));
        }
        dir.join(variant.name()).join(variant.server.binary())
    }

    /// `variant`'s copy, if `prebuilt` lists it and it is there; the use
    /// is recorded.
    fn prebuilt_copy(
        &self,
        prebuilt: &Prebuilt,
        variant: &Variant,
    ) -> Result<Option<PathBuf>, BuildError> {
        let copy = self.copy_of(variant);
        if !self.takes_prebuilt(prebuilt, &variant.name(), &copy) {
            return Ok(None);
        }
        prebuilt.record_use(&variant.name())?;
        Ok(Some(copy))
    }

    /// Whether `binary`, built as `name`, is taken as it is: dev builds
    /// only (the list names what `scripts/test-variants` built), listed,
    /// and there.
    fn takes_prebuilt(&self, prebuilt: &Prebuilt, name: &str, binary: &Path) -> bool {
        self.profile == Profile::Dev && prebuilt.has(name) && binary.is_file()
    }

    /// cargo's arguments for `variant` (from `manifest` when it is built
    /// from a patched workspace). Dev builds add [`DEV_SHARED_DEPS`].
    fn server_args(&self, variant: &Variant, manifest: Option<&Path>) -> Vec<String> {
        let mut args: Vec<String> = ["build", "--profile", self.profile.cargo_arg(), "--quiet"]
            .map(String::from)
            .into();
        if let Some(m) = manifest {
            args.extend(["--manifest-path".into(), m.display().to_string()]);
        }
        args.push("-p".into());
        args.push(variant.server.package().into());
        let mut features = variant.features.clone();
        if self.profile == Profile::Dev {
            features.push(DEV_SHARED_DEPS.into());
        }
        if !features.is_empty() {
            args.extend(["--features".into(), features.join(",")]);
        }
        if variant.replaces_default_features() {
            args.push("--no-default-features".into());
        }
        if let Some(target) = variant.libc.target() {
            args.extend(["--target".into(), target.into()]);
        }
        args
    }

    /// Builds loadgen and returns its binary.
    pub fn loadgen(&self) -> Result<PathBuf, BuildError> {
        let built = self.target.join(self.profile.dir()).join("loadgen");
        if let Some(prebuilt) = Prebuilt::from_env()? {
            if self.takes_prebuilt(&prebuilt, "loadgen", &built) {
                return Ok(built);
            }
        }
        self.cargo(&[
            "build",
            "--profile",
            self.profile.cargo_arg(),
            "--quiet",
            "-p",
            "loadgen",
        ])?;
        Ok(built)
    }

    fn cargo(&self, args: &[&str]) -> Result<(), BuildError> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let command = || format!("cargo {}", args.join(" "));
        let mut cmd = Command::new(&cargo);
        cmd.args(args)
            .current_dir(&self.root)
            .env("CARGO_TARGET_DIR", &self.target)
            .stdin(Stdio::null());
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(is_crate_env) {
                cmd.env_remove(name);
            }
        }
        let spawned = |error| BuildError::Spawn {
            cargo: cargo.clone(),
            error,
        };
        let status = match &self.stop {
            None => cmd.status().map_err(spawned)?,
            Some(stop) => {
                if stop.load(Ordering::Relaxed) {
                    return Err(BuildError::Stopped { command: command() });
                }
                let mut child = cmd.process_group(0).spawn().map_err(spawned)?;
                loop {
                    if let Some(status) = child.try_wait().map_err(spawned)? {
                        break status;
                    }
                    if stop.load(Ordering::Relaxed) {
                        stop_group(&mut child);
                        return Err(BuildError::Stopped { command: command() });
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        };
        if !status.success() {
            return Err(BuildError::Cargo {
                command: command(),
                status,
            });
        }
        Ok(())
    }

    /// An exclusive lock on `target/shootout/.build-lock`, released when the
    /// file drops: builders in other processes and threads take turns.
    fn lock(&self) -> Result<File, BuildError> {
        let dir = self.target.join("shootout");
        std::fs::create_dir_all(&dir).map_err(BuildError::file("creating", &dir))?;
        let path = dir.join(".build-lock");
        let file = File::create(&path).map_err(BuildError::file("creating", &path))?;
        file.lock().map_err(BuildError::file("locking", &path))?;
        Ok(file)
    }
}

/// Whether `name` is one of the variables cargo sets for the crate it
/// runs (a test calling the builder, `cargo run` of `build-variant`):
/// `CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME` and the like. The builder's cargo
/// runs without them, as from a shell: ring's build script asks to be run
/// again whenever one of them changes, so a build from a test and one from
/// a shell would otherwise rebuild ring, and rustls and the frameworks on
/// top of it (every dev variant has them, `dev-shared-deps`), in turn.
/// Cargo's own settings (`CARGO`, `CARGO_HOME`, `CARGO_PROFILE_*`...) stay.
fn is_crate_env(name: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_EXE_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || [
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
            "CARGO_RUSTC_CURRENT_DIR",
            "OUT_DIR",
        ]
        .contains(&name)
}

/// SIGTERM to `child`'s process group (cargo and its compilers), SIGKILL
/// after 5 s, and the wait for cargo itself.
fn stop_group(child: &mut std::process::Child) {
    let group = child.id() as i32;
    // SAFETY: kill(2) on the process group our own child leads.
    unsafe { libc::kill(-group, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above; whatever is left of the group.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builders_cargo_runs_without_the_callers_crate_variables() {
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_CRATE_NAME",
            "CARGO_BIN_EXE_loadgen",
            "CARGO_TARGET_TMPDIR",
            "OUT_DIR",
        ] {
            assert!(is_crate_env(name), "{name}");
        }
        for name in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_PROFILE_DEV_DEBUG",
            "CARGO_BUILD_JOBS",
            "RUSTFLAGS",
            "PATH",
        ] {
            assert!(!is_crate_env(name), "{name}");
        }
    }

    #[test]
    fn profile_parses_its_cargo_name_and_prints_it() {
        for p in [Profile::Release, Profile::Dev] {
            assert_eq!(p.cargo_arg().parse::<Profile>().unwrap(), p);
            assert_eq!(p.to_string(), p.cargo_arg());
        }
        assert_eq!(Profile::Dev.dir(), "debug");
        assert_eq!(Profile::Release.dir(), "release");
        let err = "debug".parse::<Profile>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown profile \"debug\" (release or dev)"
        );
    }

    #[test]
    fn build_errors_are_one_line_naming_the_command_or_path() {
        use std::os::unix::process::ExitStatusExt;
        let failed = BuildError::Cargo {
            command: "cargo build -p shootout-ntex".into(),
            status: ExitStatus::from_raw(101 << 8),
        };
        let file = BuildError::File {
            action: "copying",
            path: "/t/debug/ntex-server".into(),
            error: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        for (e, part) in [
            (
                failed,
                "`cargo build -p shootout-ntex` failed (exit status: 101)",
            ),
            (file, "copying /t/debug/ntex-server: "),
        ] {
            let msg = e.to_string();
            assert!(msg.starts_with(part) && !msg.contains('\n'), "{msg}");
        }
    }

    #[test]
    fn a_prebuilt_dev_copy_is_taken_only_when_listed_and_there() {
        use crate::Server;
        let target = std::env::temp_dir().join(format!("prebuilt-builder-{}", std::process::id()));
        let dev = Builder::with_target("/w".into(), target.clone(), Profile::Dev);
        let release = Builder::with_target("/w".into(), target.clone(), Profile::Release);
        let listed = Variant::new(Server::Actix, ["global-counter"]);
        let missing = Variant::new(Server::Ntex, [""; 0]);
        let unlisted = Variant::new(Server::Actix, [""; 0]);
        for v in [&listed, &unlisted] {
            for b in [&dev, &release] {
                let copy = b.copy_of(v);
                std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
                std::fs::write(&copy, "binary").unwrap();
            }
        }
        let list = target.join("list");
        std::fs::write(&list, format!("{}\n{}\n", listed.name(), missing.name())).unwrap();
        let prebuilt = Prebuilt::read(&list).unwrap();
        let copy = dev.prebuilt_copy(&prebuilt, &listed).unwrap();
        assert_eq!(
            copy,
            Some(target.join("shootout/debug/actix-server+global-counter/actix-server"))
        );
        for (b, v) in [(&release, &listed), (&dev, &missing), (&dev, &unlisted)] {
            assert_eq!(b.prebuilt_copy(&prebuilt, v).unwrap(), None, "{}", v.name());
        }
        // Only what was handed out is recorded.
        let used = std::fs::read_to_string(target.join("list.used")).unwrap();
        assert_eq!(used, format!("{}\n", listed.name()));
        std::fs::remove_dir_all(&target).unwrap();
    }

    #[test]
    fn builder_with_target_keeps_what_it_is_given() {
        let b = Builder::with_target("/w".into(), "/t".into(), Profile::Dev);
        assert_eq!(
            (b.root.as_path(), b.target.as_path()),
            (Path::new("/w"), Path::new("/t"))
        );
        assert_eq!(b.profile, Profile::Dev);
    }

    #[test]
    fn dev_builds_share_dependencies_and_release_builds_are_as_named() {
        use crate::Server;
        let args = |profile, v: &Variant| {
            Builder::with_target("/w".into(), "/t".into(), profile)
                .server_args(v, None)
                .join(" ")
        };
        let tuned = Variant::new(Server::Actix, ["global-counter", "keepalive-os"]);
        assert_eq!(
            args(Profile::Release, &tuned),
            "build --profile release --quiet -p shootout-actix --features global-counter,keepalive-os"
        );
        assert_eq!(
            args(Profile::Dev, &tuned),
            "build --profile dev --quiet -p shootout-actix --features global-counter,keepalive-os,dev-shared-deps"
        );
        let plain = Variant::new(Server::Ntex, [""; 0]);
        assert_eq!(
            args(Profile::Release, &plain),
            "build --profile release --quiet -p shootout-ntex"
        );
        let neon = Variant::new(Server::Ntex, ["rt-neon"]);
        assert_eq!(
            args(Profile::Dev, &neon),
            "build --profile dev --quiet -p shootout-ntex --features rt-neon,dev-shared-deps --no-default-features"
        );
        // A patched variant names its own workspace's manifest.
        let once = Variant::new(Server::Ntex, ["ntex-read-once"]);
        let b = Builder::with_target("/w".into(), "/t".into(), Profile::Release);
        assert_eq!(
            b.server_args(
                &once,
                Some(Path::new("/t/patched/ntex-read-once/Cargo.toml"))
            )
            .join(" "),
            "build --profile release --quiet --manifest-path /t/patched/ntex-read-once/Cargo.toml \
             -p shootout-ntex --features ntex-read-once"
        );
    }
}
