//! Variants the test command built moments before its tests, taken as they
//! are instead of asking cargo again.
//!
//! `scripts/test-variants build` builds each dev variant the tests run
//! (and loadgen) through the builder, then writes their names, one a line,
//! to a list; `scripts/test` points [`ENV`] at that list for its tests
//! only. Without it, every variant a test or a run asks for is a `cargo
//! build` that finds it fresh: about 150 of them in a test run, each a
//! quarter of a CPU-second alone and more beside the tests' loads, every
//! one under the builder's lock that the other tests' builders wait on.
//! With it, a dev builder returns a listed variant's copy as it is; an
//! unlisted one, a release build, or a missing copy builds as usual.
//! Every variant handed out (taken as it is or built) is appended to
//! `<list>.used`, which `scripts/test-variants check` compares with the
//! list.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::BuildError;

/// The list's path, set by `scripts/test` for its tests.
pub const ENV: &str = "SHOOTOUT_PREBUILT";

/// The names on the list [`ENV`] points at.
#[derive(Debug)]
pub(crate) struct Prebuilt {
    list: PathBuf,
    names: Vec<String>,
}

impl Prebuilt {
    /// The list [`ENV`] names, or `None` when it is not set.
    pub(crate) fn from_env() -> Result<Option<Prebuilt>, BuildError> {
        match std::env::var_os(ENV) {
            Some(list) if !list.is_empty() => Prebuilt::read(Path::new(&list)).map(Some),
            _ => Ok(None),
        }
    }

    pub(crate) fn read(list: &Path) -> Result<Prebuilt, BuildError> {
        let text = std::fs::read_to_string(list).map_err(BuildError::file("reading", list))?;
        Ok(Prebuilt {
            list: list.to_path_buf(),
            names: text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect(),
        })
    }

    /// Whether `name` was built before the tests.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// Appends `name` to `<list>.used` (one short append: lines from
    /// builders running at once do not mix).
    pub(crate) fn record_use(&self, name: &str) -> Result<(), BuildError> {
        let used = self.used();
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&used)
            .map_err(BuildError::file("opening", &used))?;
        file.write_all(format!("{name}\n").as_bytes())
            .map_err(BuildError::file("appending to", &used))
    }

    fn used(&self) -> PathBuf {
        let mut used = self.list.clone().into_os_string();
        used.push(".used");
        PathBuf::from(used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_names_are_found_and_each_use_is_one_line() {
        let dir = std::env::temp_dir().join(format!("prebuilt-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let list = dir.join("list");
        std::fs::write(&list, "actix-server\nntex-server+rt-neon\n\nloadgen\n").unwrap();
        let p = Prebuilt::read(&list).unwrap();
        assert!(p.has("actix-server") && p.has("ntex-server+rt-neon") && p.has("loadgen"));
        assert!(!p.has("ntex-server") && !p.has(""));
        p.record_use("actix-server").unwrap();
        p.record_use("ntex-server").unwrap();
        let used = std::fs::read_to_string(dir.join("list.used")).unwrap();
        assert_eq!(used, "actix-server\nntex-server\n");
        let missing = Prebuilt::read(&dir.join("none")).unwrap_err().to_string();
        assert!(
            missing.starts_with("reading ") && missing.contains("none") && !missing.contains('\n'),
            "{missing}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
