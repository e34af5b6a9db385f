//! Builds each (framework, feature set) once per test run through the
//! workspace's one builder, [`variants::Builder`] (dev profile), into the
//! target directory this test binary was built into; the copy of each
//! variant's binary lives in `target/shootout/debug/<variant>/`.

use std::path::PathBuf;

pub use variants::{workspace_root, Server as Framework, Variant};
use variants::{Builder, Profile};

/// Builds `variant` (dev profile) and returns the path of its own copy;
/// panics with the variant's name and the reason if it cannot be built.
pub fn binary(variant: &Variant) -> PathBuf {
    Builder::with_target(workspace_root(), target_dir(), Profile::Dev)
        .server(variant)
        .unwrap_or_else(|e| panic!("building {}: {e}", variant.name()))
}

/// Builds loadgen (dev profile, the builder's [`Builder::loadgen`]) into
/// the same target directory and returns its binary; panics with the
/// reason if it cannot be built.
pub fn loadgen() -> PathBuf {
    Builder::with_target(workspace_root(), target_dir(), Profile::Dev)
        .loadgen()
        .unwrap_or_else(|e| panic!("building loadgen: {e}"))
}

/// `variant.binary()` for the tests: [`binary`].
pub trait VariantExt {
    /// Builds the variant and returns its binary; see [`binary`].
    fn binary(&self) -> PathBuf;
}

impl VariantExt for Variant {
    fn binary(&self) -> PathBuf {
        binary(self)
    }
}

/// The target directory this test (`target/<profile>/deps/<test>`) or
/// binary (`target/<profile>/<bin>`, the `differential` run) was built into.
pub fn target_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("current exe");
    let in_deps = exe
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "deps");
    exe.ancestors()
        .nth(if in_deps { 3 } else { 2 })
        .expect("built into target/<profile>")
        .to_owned()
}
