//! A variant built from another revision of this repository: its tree, as
//! git holds it at that commit, unpacked under `target/revs/<sha>/` (no
//! worktree, nothing in `.git` changes) and built there into the shared
//! target directory, so the dependencies both revisions lock alike build
//! once. Its binary's copy is kept apart from this tree's
//! (`target/shootout/<profile>/rev-<sha>/<variant>/`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A diff applied to the tree before it is built (`patch`): its path and
/// the git blob id of its contents (which names the tree it makes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreePatch {
    pub path: PathBuf,
    pub blob: String,
}

impl TreePatch {
    /// The diff at `path`, named by its contents.
    pub fn of(path: &Path) -> Result<TreePatch, String> {
        let out = Command::new("git")
            .args(["hash-object", "--no-filters"])
            .arg(path)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running git: {e}"))?;
        let blob = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || blob.len() != 40 {
            return Err(format!(
                "reading {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(TreePatch {
            path: path.to_path_buf(),
            blob,
        })
    }
}

/// The name of the tree of commit `sha` with `patch` applied.
pub fn tree_name(sha: &str, patch: Option<&TreePatch>) -> String {
    match patch {
        Some(p) => format!("{sha}-{}", &p.blob[..12]),
        None => sha.to_string(),
    }
}

/// The tree of commit `sha` (with `patch` applied) under
/// `target/revs/<name>/`, unpacked once (a stamp file marks a whole one; a
/// half-unpacked one is made again).
pub fn tree(
    root: &Path,
    target: &Path,
    sha: &str,
    patch: Option<&TreePatch>,
) -> std::io::Result<PathBuf> {
    let revs = target.join("revs");
    let name = tree_name(sha, patch);
    let dir = revs.join(&name);
    let stamp = dir.join(".shootout-rev");
    if stamp.is_file() {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let tmp = revs.join(format!(".tmp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let unpacked = (|| -> std::io::Result<()> {
        let mut archive = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["archive", "--format=tar", sha])
            // The recorded results are no part of a build.
            .args(["--", ".", ":(exclude)results"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = archive.stdout.take().expect("piped");
        let untar = Command::new("tar")
            .arg("-x")
            .arg("-C")
            .arg(&tmp)
            .stdin(stdout)
            .output()?;
        let archived = archive.wait_with_output()?;
        if !archived.status.success() {
            return Err(std::io::Error::other(format!(
                "git archive {sha} failed: {}",
                String::from_utf8_lossy(&archived.stderr).trim()
            )));
        }
        if !untar.status.success() {
            return Err(std::io::Error::other(format!(
                "unpacking {sha}: {}",
                String::from_utf8_lossy(&untar.stderr).trim()
            )));
        }
        if let Some(p) = patch {
            crate::tools::git_apply(&p.path, &tmp, &revs).map_err(|e| {
                std::io::Error::other(format!("{} does not apply to {sha}: {e}", p.path.display()))
            })?;
        }
        std::fs::write(tmp.join(".shootout-rev"), &name)?;
        std::fs::rename(&tmp, &dir)
    })();
    if unpacked.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    unpacked.map(|()| dir)
}

/// The full sha of `rev` (a commit, tag or branch) in the repository at
/// `root`, or why it names no commit there.
pub fn resolve(root: &Path, rev: &str) -> Result<String, String> {
    if rev.starts_with('-') {
        return Err(format!("rev {rev:?} is not a commit of this repository"));
    }
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("{rev}^{{commit}}"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running git: {e}"))?;
    let sha = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || sha.len() != 40 {
        return Err(format!(
            "rev {rev:?} is not a commit of this repository (a shallow clone has no history: clone it whole)"
        ));
    }
    Ok(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_resolves_and_a_wrong_name_does_not() {
        let root = crate::workspace_root();
        let head = resolve(&root, "HEAD").unwrap();
        assert_eq!(head.len(), 40);
        assert!(head.bytes().all(|b| b.is_ascii_hexdigit()));
        let e = resolve(&root, "no-such-branch-anywhere").unwrap_err();
        assert!(e.contains("is not a commit of this repository"), "{e}");
        assert!(resolve(&root, "--all").is_err());
    }
}
