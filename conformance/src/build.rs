//! Builds each (framework, feature set) once per test run with `cargo build`,
//! and keeps a copy of the binary in `target/variants/<name>/`.
//!
//! Every variant builds into the workspace's own target directory, so the
//! dependencies compile once; a file lock serialises build-and-copy across
//! test binaries running at the same time.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Which twin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framework {
    Actix,
    Ntex,
}

impl Framework {
    pub const BOTH: [Framework; 2] = [Framework::Actix, Framework::Ntex];

    pub fn package(self) -> &'static str {
        match self {
            Framework::Actix => "shootout-actix",
            Framework::Ntex => "shootout-ntex",
        }
    }

    pub fn binary(self) -> &'static str {
        match self {
            Framework::Actix => "actix-server",
            Framework::Ntex => "ntex-server",
        }
    }

    /// The framework crate whose version the start-up line names.
    pub fn framework_crate(self) -> &'static str {
        match self {
            Framework::Actix => "actix-web",
            Framework::Ntex => "ntex",
        }
    }
}

/// One server build: a framework and a set of cargo features.
#[derive(Debug, Clone)]
pub struct Variant {
    pub framework: Framework,
    pub features: Vec<&'static str>,
}

impl Variant {
    pub fn new(framework: Framework, features: &[&'static str]) -> Variant {
        Variant {
            framework,
            features: features.to_vec(),
        }
    }

    /// `actix-server+global-counter+no-alloc`, or `actix-server` with no features.
    pub fn name(&self) -> String {
        let mut name = self.framework.binary().to_string();
        for f in &self.features {
            name.push('+');
            name.push_str(f);
        }
        name
    }

    /// Builds the variant (debug profile) and returns the path of its own copy.
    pub fn binary(&self) -> PathBuf {
        let target = target_dir();
        let dir = target.join("variants").join(self.name());
        std::fs::create_dir_all(&dir).expect("creating target/variants");
        let lock = File::create(target.join("variants").join(".lock")).expect("lock file");
        lock.lock().expect("locking target/variants");

        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(workspace_root())
            .args(["build", "--quiet", "-p", self.framework.package()])
            .env("CARGO_TARGET_DIR", &target)
            .stdin(Stdio::null());
        if !self.features.is_empty() {
            cmd.args(["--features", &self.features.join(",")]);
        }
        // ntex's own runtimes replace the default feature, rt-tokio.
        if self
            .features
            .iter()
            .any(|f| f.starts_with("rt-") && *f != "rt-tokio")
        {
            cmd.arg("--no-default-features");
        }
        let status = cmd.status().expect("running cargo build");
        assert!(status.success(), "cargo build of {} failed", self.name());
        let built = target.join("debug").join(self.framework.binary());
        let copy = dir.join(self.framework.binary());
        // Copy to a temporary name and rename, so a running copy is never overwritten in place.
        let tmp = dir.join(".tmp-binary");
        std::fs::copy(&built, &tmp).expect("copying the built binary");
        std::fs::rename(&tmp, &copy).expect("renaming the built binary");
        copy
    }
}

/// The workspace root (parent of this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crate has a parent")
        .to_owned()
}

/// The target directory this test binary was built into.
pub fn target_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    // target/<profile>/deps/<test binary>
    let exe = std::env::current_exe().expect("current exe");
    exe.ancestors()
        .nth(3)
        .expect("test binary lives in target/<profile>/deps")
        .to_owned()
}
