//! The builds a run needs, through the one variant builder
//! ([`variants::Builder`], shared with the conformance tests): each distinct
//! (server, features, libc) once, kept in `target/shootout/<profile>/<variant>/`,
//! and loadgen.
//!
//! All variants share the workspace target directory, so dependencies build
//! once; cargo keeps each feature set's artifacts apart and reuses them next
//! time, so a repeated run only re-checks freshness.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;

pub use variants::{workspace_root, Profile};

use crate::config::scenario::Scenario;

fn builder(root: &Path, profile: Profile, stop: &Arc<AtomicBool>) -> variants::Builder {
    variants::Builder::with_target(root.to_path_buf(), variants::target_dir(root), profile)
        .stopped_by(Arc::clone(stop))
}

/// Builds (or reuses) the server variant of `s`; returns its binary. A
/// raised `stop` ends the build under way.
pub fn server(
    root: &Path,
    s: &Scenario,
    profile: Profile,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<PathBuf> {
    let builder = builder(root, profile, stop);
    let builder = match &s.rev {
        Some(r) => builder
            .at_rev(&r.sha, r.patch.as_ref())
            .with_context(|| format!("building {}", s.variant()))?,
        None => builder,
    };
    builder
        .server(&s.build_variant())
        .with_context(|| format!("building {}", s.variant()))
}

/// Builds loadgen and returns its binary.
pub fn loadgen(root: &Path, profile: Profile, stop: &Arc<AtomicBool>) -> anyhow::Result<PathBuf> {
    builder(root, profile, stop)
        .loadgen()
        .context("building loadgen")
}
