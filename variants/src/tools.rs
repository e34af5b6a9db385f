//! The outside tools the builders call (`git`, `tar`, `cargo`): run with
//! their stderr in the error, and a diff applied to a tree that lies inside
//! this repository's directory but is no part of it.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `cmd`; its stderr, and its exit, in the error when it fails.
pub(crate) fn run(cmd: &mut Command) -> std::io::Result<()> {
    let shown = format!("{cmd:?}");
    let out = cmd.stdin(Stdio::null()).output()?;
    if out.status.success() {
        return Ok(());
    }
    Err(std::io::Error::other(format!(
        "{shown} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

/// Applies `diff` (paths with one leading directory, `-p1`) to the files
/// under `tree`. Outside any repository (the ceiling stops git's search
/// above `ceiling`, a directory above `tree`), `git apply` patches the
/// files under its current directory; inside this one it would take the
/// diff's paths from the repository's root and skip them all.
pub(crate) fn git_apply(diff: &Path, tree: &Path, ceiling: &Path) -> std::io::Result<()> {
    run(Command::new("git")
        .args(["apply", "-p1"])
        .arg(diff)
        .current_dir(tree)
        .env("GIT_CEILING_DIRECTORIES", ceiling))
}
