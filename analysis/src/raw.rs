//! A run's raw records (the loadgen and CPU `.jsonl` files) as files, or
//! packed in the run's [`ARCHIVE`] (`raw.tar.gz`): every reader goes
//! through here, so it reads either the same way.
//!
//! A path inside a run names a raw file by where it was written, e.g.
//! `RUN/quick/aa/block-01-ab.row.jsonl`; when that file is not on disk, the
//! nearest ancestor with a `raw.tar.gz` is asked for `quick/aa/...`. An
//! archive is read whole once and kept (a run's records are a few MB).
//!
//! The runner packs a run when it ends ([`pack`]); the archive is a plain
//! gzip'd tar (`tar xzf raw.tar.gz` unpacks it, Python's `tarfile` reads
//! it), written the same way every time: names sorted, times and owners
//! zero, so a re-pack of the same files gives the same bytes.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Context;

/// The archive's name in a run folder.
pub const ARCHIVE: &str = "raw.tar.gz";

/// Whether `name` is a raw record file, one [`pack`] takes.
pub fn is_raw(name: &str) -> bool {
    name.ends_with(".jsonl")
}

/// One archive's files: path relative to its folder, bytes.
type Files = BTreeMap<String, Vec<u8>>;

/// Archives read so far, by path, with the length and mtime they had.
type Cache = HashMap<PathBuf, (u64, std::time::SystemTime, Arc<Files>)>;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn load(archive: &Path) -> std::io::Result<Arc<Files>> {
    let meta = std::fs::metadata(archive)?;
    let stamp = (meta.len(), meta.modified()?);
    if let Some((len, at, files)) = cache().lock().unwrap().get(archive) {
        if (*len, *at) == stamp {
            return Ok(files.clone());
        }
    }
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(archive)?);
    let mut tar = tar::Archive::new(gz);
    let mut files = Files::new();
    for entry in tar.entries()? {
        let mut entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path()?.to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes)?;
        files.insert(name, bytes);
    }
    let files = Arc::new(files);
    cache()
        .lock()
        .unwrap()
        .insert(archive.to_path_buf(), (stamp.0, stamp.1, files.clone()));
    Ok(files)
}

/// The archive that would hold `path` (the nearest ancestor's), and the
/// path inside it.
fn archived(path: &Path) -> Option<(Arc<Files>, String)> {
    for dir in path.ancestors().skip(1) {
        let archive = dir.join(ARCHIVE);
        if archive.is_file() {
            let rel = path.strip_prefix(dir).ok()?.to_string_lossy().into_owned();
            return load(&archive).ok().map(|files| (files, rel));
        }
    }
    None
}

fn not_found(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!(
            "{}: no such file, nor in a {ARCHIVE} above it",
            path.display()
        ),
    )
}

/// The file's bytes, from disk or from its run's archive.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => archived(path)
            .and_then(|(files, rel)| files.get(&rel).cloned())
            .ok_or_else(|| not_found(path)),
        other => other,
    }
}

/// The file as text (invalid UTF-8 is an error, as with `std::fs`).
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Whether the file is on disk or in its run's archive.
pub fn is_file(path: &Path) -> bool {
    path.is_file() || archived(path).is_some_and(|(files, rel)| files.contains_key(&rel))
}

/// Whether the folder is on disk or holds files in its run's archive.
pub fn is_dir(path: &Path) -> bool {
    path.is_dir() || read_dir(path).is_ok()
}

/// One entry of [`read_dir`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub path: PathBuf,
    pub is_dir: bool,
}

impl Entry {
    /// The entry's file name, as text.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// The entries of `dir`, on disk and in the archive above or in it,
/// sorted by path. A folder that only the archive holds is listed too.
/// An error only when `dir` is neither on disk nor in an archive.
pub fn read_dir(dir: &Path) -> std::io::Result<Vec<Entry>> {
    let mut found = std::collections::BTreeSet::new();
    let on_disk = std::fs::read_dir(dir);
    let listed = on_disk.is_ok();
    if let Ok(entries) = on_disk {
        for e in entries.flatten() {
            found.insert(Entry {
                path: e.path(),
                is_dir: e.file_type().is_ok_and(|t| t.is_dir()),
            });
        }
    }
    let mut in_archive = false;
    let (files, prefix) = match archived(&dir.join(ARCHIVE)) {
        // `dir` holds the archive itself, or lies under one.
        Some((files, rel)) => {
            let prefix = rel.strip_suffix(ARCHIVE).unwrap_or("").to_string();
            (Some(files), prefix)
        }
        None => (None, String::new()),
    };
    if let Some(files) = files {
        for name in files.keys() {
            let Some(rest) = name.strip_prefix(&prefix) else {
                continue;
            };
            in_archive = true;
            let (first, deeper) = match rest.split_once('/') {
                Some((first, _)) => (first, true),
                None => (rest, false),
            };
            found.insert(Entry {
                path: dir.join(first),
                is_dir: deeper,
            });
        }
    }
    if !listed && !in_archive {
        return Err(not_found(dir));
    }
    Ok(found.into_iter().collect())
}

/// The names (relative to `run`) of the files packed in `run`'s own
/// archive, sorted; none when it has none.
pub fn packed(run: &Path) -> std::io::Result<Vec<String>> {
    let archive = run.join(ARCHIVE);
    if !archive.is_file() {
        return Ok(Vec::new());
    }
    Ok(load(&archive)?.keys().cloned().collect())
}

/// Every file under `dir`, on disk or packed (by the path it was written
/// at), sorted.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in read_dir(&d).into_iter().flatten() {
            if e.is_dir {
                stack.push(e.path);
            } else {
                out.push(e.path);
            }
        }
    }
    out.sort();
    out
}

/// Packs every raw record file under `run` into `run/raw.tar.gz` (with
/// those an archive there already holds) and removes them; nothing to pack
/// leaves the run as it is. Written through a temporary file and a rename:
/// the archive is whole or absent, and the files go only once it is in
/// place. Returns how many files it packed.
pub fn pack(run: &Path) -> anyhow::Result<usize> {
    let mut loose = Vec::new();
    let mut stack = vec![run.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))?;
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if is_raw(&e.file_name().to_string_lossy()) {
                loose.push(p);
            }
        }
    }
    if loose.is_empty() {
        return Ok(0);
    }
    let archive = run.join(ARCHIVE);
    let mut files: Files = if archive.is_file() {
        (*load(&archive).with_context(|| format!("reading {}", archive.display()))?).clone()
    } else {
        Files::new()
    };
    for p in &loose {
        let rel = p.strip_prefix(run)?.to_string_lossy().into_owned();
        let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
        files.insert(rel, bytes);
    }
    crate::files::write_atomic(&archive, &to_tar_gz(&files)?)?;
    for p in &loose {
        std::fs::remove_file(p).with_context(|| format!("removing {}", p.display()))?;
    }
    // Folders the records alone filled are empty now.
    let mut dirs: Vec<&Path> = loose.iter().filter_map(|p| p.parent()).collect();
    dirs.sort();
    dirs.dedup();
    for d in dirs.into_iter().rev() {
        for a in d.ancestors().take_while(|a| *a != run) {
            if std::fs::remove_dir(a).is_err() {
                break;
            }
        }
    }
    Ok(loose.len())
}

/// The files as a gzip'd tar, the same bytes for the same files.
fn to_tar_gz(files: &Files) -> anyhow::Result<Vec<u8>> {
    let gz = flate2::GzBuilder::new().write(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    for (name, bytes) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, name, bytes.as_slice())?;
    }
    Ok(tar.into_inner()?.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with_records() -> tempfile::TempDir {
        let run = tempfile::tempdir().unwrap();
        let aa = run.path().join("quick/aa");
        std::fs::create_dir_all(&aa).unwrap();
        std::fs::write(aa.join("block-01-ab.row.jsonl"), "{\"a\":1}\n").unwrap();
        std::fs::write(aa.join("block-01-ab.base.jsonl"), "{\"b\":2}\n").unwrap();
        std::fs::write(run.path().join("quick/table.toml"), "x = 1\n").unwrap();
        std::fs::write(run.path().join("meta.json"), "{}").unwrap();
        run
    }

    #[test]
    fn packed_records_read_as_the_files_did() {
        let run = run_with_records();
        let row = run.path().join("quick/aa/block-01-ab.row.jsonl");
        let before = read_dir(&run.path().join("quick")).unwrap();
        assert_eq!(pack(run.path()).unwrap(), 2);
        // The files are gone, their folder too; the rest stays.
        assert!(!row.exists() && !run.path().join("quick/aa").exists());
        assert!(run.path().join("quick/table.toml").is_file());
        assert_eq!(
            packed(run.path()).unwrap(),
            [
                "quick/aa/block-01-ab.base.jsonl",
                "quick/aa/block-01-ab.row.jsonl"
            ]
        );
        assert_eq!(read_to_string(&row).unwrap(), "{\"a\":1}\n");
        assert!(is_file(&row));
        assert!(!is_file(&run.path().join("quick/aa/nope.jsonl")));
        assert_eq!(read_dir(&run.path().join("quick")).unwrap(), before);
        let all: Vec<String> = walk(run.path())
            .iter()
            .map(|p| p.strip_prefix(run.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(
            all,
            [
                "meta.json",
                "quick/aa/block-01-ab.base.jsonl",
                "quick/aa/block-01-ab.row.jsonl",
                "quick/table.toml",
                "raw.tar.gz"
            ]
        );
        let aa = read_dir(&run.path().join("quick/aa")).unwrap();
        let names: Vec<String> = aa.iter().map(Entry::name).collect();
        assert_eq!(names, ["block-01-ab.base.jsonl", "block-01-ab.row.jsonl"]);
        assert!(read_dir(&run.path().join("quick/bb")).is_err());
        assert!(is_dir(&run.path().join("quick/aa")) && !is_dir(&run.path().join("quick/bb")));
        let e = read(&run.path().join("quick/aa/nope.jsonl")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        // Nothing loose: nothing to do.
        assert_eq!(pack(run.path()).unwrap(), 0);
    }

    #[test]
    fn packing_the_same_files_gives_the_same_bytes_and_adds_to_an_archive() {
        let (a, b) = (run_with_records(), run_with_records());
        pack(a.path()).unwrap();
        pack(b.path()).unwrap();
        let bytes = |r: &tempfile::TempDir| std::fs::read(r.path().join(ARCHIVE)).unwrap();
        assert_eq!(bytes(&a), bytes(&b));
        // A record written after a pack joins the archive at the next.
        let late = a.path().join("quick/late.jsonl");
        std::fs::write(&late, "{}\n").unwrap();
        assert_eq!(pack(a.path()).unwrap(), 1);
        assert!(!late.exists());
        assert_eq!(read_to_string(&late).unwrap(), "{}\n");
        assert!(is_file(&a.path().join("quick/aa/block-01-ab.row.jsonl")));
    }
}
