//! Writing result files so that each is complete or absent: through a
//! temporary file in the same directory and a rename (atomic on one file
//! system), the temporary removed when anything fails (a full disk, a
//! read-only directory). The runner and the analysis both write this way.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Writes `bytes` to `path` through `.NAME.XXXXXX.tmp` beside it and a
/// rename; on error nothing new is left (an older `path` stays as it was).
/// The file gets the mode `std::fs::write` would give it (0666 less the
/// umask), not the temporary file's private 0600.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let written = (|| -> std::io::Result<()> {
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)?;
        tmp.write_all(bytes)?;
        tmp.as_file().sync_data()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    })();
    written.with_context(|| format!("writing {}", path.display()))
}

/// Where a file streamed by another process (a loadgen's jsonl) is written
/// until it is known complete: `PATH.partial`.
pub fn partial(path: &Path) -> PathBuf {
    appended(path, ".partial")
}

/// `path` with `suffix` appended to its name (`a.json` and `.gz` give
/// `a.json.gz`).
pub fn appended(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Temporary and partial files left under `dir` (recursively): what a
/// failed or interrupted writer leaves before it is cleaned up.
pub fn unfinished(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if name.ends_with(".partial")
                || (name.starts_with('.') && name.ends_with(".tmp"))
            {
                found.push(p);
            }
        }
    }
    found
}

/// Leaves a run folder with only whole files, however its writer ended:
/// its scratch directory (`tmp/`) and every temporary or partial file
/// ([`unfinished`]) removed.
pub fn tidy(run_dir: &Path) {
    let _ = std::fs::remove_dir_all(run_dir.join("tmp"));
    for f in unfinished(run_dir) {
        let _ = std::fs::remove_file(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_files_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, b"{}\n").unwrap();
        write_atomic(&p, b"{\"x\":1}\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"x\":1}\n");
        assert!(unfinished(dir.path()).is_empty());
        std::fs::write(partial(&p), "x").unwrap();
        assert_eq!(unfinished(dir.path()), [dir.path().join("a.json.partial")]);
    }

    #[test]
    fn files_are_as_readable_as_fs_write_makes_them() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("a.json");
        let plain = dir.path().join("b.json");
        write_atomic(&ours, b"x").unwrap();
        std::fs::write(&plain, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&ours), mode(&plain));
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("no/such/a.json");
        let e = write_atomic(&p, b"x").unwrap_err();
        assert!(format!("{e:#}").contains("writing "), "{e:#}");
        assert!(format!("{e:#}").contains("a.json"), "{e:#}");
    }
}
