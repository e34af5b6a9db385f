//! A run's raw records (the loadgen and CPU `.jsonl` files) as files, or
//! packed in the run's [`ARCHIVE`] (`raw.tar.xz`), and its `meta.json`
//! and `summary.json` as files or gzip'd beside them (`meta.json.gz`):
//! every reader goes through here, so it reads each form the same way.
//!
//! A path inside a run names a raw file by where it was written, e.g.
//! `RUN/quick/aa/block-01-ab.row.jsonl`; when that file is not on disk, its
//! gzip'd form (`PATH.gz`) is read, else the nearest ancestor with an
//! archive is asked for `quick/aa/...`. An archive is read whole once and
//! kept (a run's records are a few MB).
//!
//! The runner packs a run when it ends ([`pack`]); the archive is a plain
//! xz'd tar (`tar xJf raw.tar.xz` unpacks it, Python's `tarfile` reads it),
//! written the same way every time: names sorted, times and owners zero,
//! so a re-pack of the same files gives the same bytes. Runs packed before
//! 2026-11-29 hold a gzip'd tar, [`OLD_ARCHIVE`], read the same way; a pack
//! into such a run replaces it with an xz one.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Context;

/// The archive's name in a run folder.
pub const ARCHIVE: &str = "raw.tar.xz";

/// The archive's name in runs packed before 2026-11-29 (a gzip'd tar).
pub const OLD_ARCHIVE: &str = "raw.tar.gz";

/// The files [`pack`] gzips in place (`meta.json` to `meta.json.gz`): a
/// paired run's metadata repeats each block's startup lines and counters,
/// so it shrinks about twelve times and stays one `zcat` away.
pub const GZIPPED: &[&str] = &["meta.json"];

/// Whether `name` is a raw record file, one [`pack`] takes: loadgen's and
/// the CPU sampler's `.jsonl`, a sweep row's step index (`ROW.sweep.json`)
/// and a sink row's sampled lines (`ROW.lines.txt`). Loose, these two were
/// 3.6 of `results/`'s 97 MiB (2026-11-29); packed, a tenth of that.
pub fn is_raw(name: &str) -> bool {
    name.ends_with(".jsonl") || name.ends_with(".sweep.json") || name.ends_with(".lines.txt")
}

/// Whether `name` is a run's archive, either kind.
pub fn is_archive(name: &str) -> bool {
    name == ARCHIVE || name == OLD_ARCHIVE
}

/// The archive in `dir`, the xz one first; `None` when it has neither.
fn archive_in(dir: &Path) -> Option<PathBuf> {
    [ARCHIVE, OLD_ARCHIVE]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// `path` with `.gz` appended.
pub fn gz_path(path: &Path) -> PathBuf {
    crate::files::appended(path, ".gz")
}

/// `bytes` gzip'd, the same bytes every time (no name, time zero).
pub fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut gz = flate2::GzBuilder::new().write(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, bytes)?;
    gz.finish()
}

/// The bytes a gzip stream holds.
pub fn gunzip(gz: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gz).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Writes `path`'s bytes gzip'd to `PATH.gz` (atomically) and removes
/// `path`; a missing `path` leaves things as they are.
pub fn gzip_in_place(path: &Path) -> anyhow::Result<()> {
    let bytes = match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        other => other.with_context(|| format!("reading {}", path.display()))?,
    };
    crate::files::write_atomic(&gz_path(path), &gzip(&bytes)?)?;
    std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))
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
    let file = std::fs::File::open(archive)?;
    let stream: Box<dyn Read> = if archive.ends_with(OLD_ARCHIVE) {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(xz2::read::XzDecoder::new(file))
    };
    let mut tar = tar::Archive::new(stream);
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
        if let Some(archive) = archive_in(dir) {
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

/// The file's bytes, from disk, from its gzip'd form beside it, or from
/// its run's archive.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::read(gz_path(path)) {
            Ok(gz) => gunzip(&gz),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => archived(path)
                .and_then(|(files, rel)| files.get(&rel).cloned())
                .ok_or_else(|| not_found(path)),
            Err(e) => Err(e),
        },
        other => other,
    }
}

/// The file as text (invalid UTF-8 is an error, as with `std::fs`).
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Whether the file is on disk (as it is or gzip'd) or in its run's
/// archive.
pub fn is_file(path: &Path) -> bool {
    path.is_file()
        || gz_path(path).is_file()
        || archived(path).is_some_and(|(files, rel)| files.contains_key(&rel))
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
    match archive_in(run) {
        Some(archive) => Ok(load(&archive)?.keys().cloned().collect()),
        None => Ok(Vec::new()),
    }
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

/// Packs every raw record file under `run` into `run/raw.tar.xz` (with
/// those an archive there already holds, which an old `raw.tar.gz` gives
/// up to it) and removes them, then gzips [`GZIPPED`] in place; nothing to
/// pack leaves the records as they are. Written through a temporary file
/// and a rename: the archive is whole or absent, and the files go only
/// once it is in place. Returns how many files it packed.
pub fn pack(run: &Path) -> anyhow::Result<usize> {
    let packed = pack_records(run)?;
    for name in GZIPPED {
        gzip_in_place(&run.join(name))?;
    }
    Ok(packed)
}

fn pack_records(run: &Path) -> anyhow::Result<usize> {
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
    let old = archive_in(run);
    let gzipped = old.as_ref().is_some_and(|a| a.ends_with(OLD_ARCHIVE));
    if loose.is_empty() && !gzipped {
        return Ok(0);
    }
    let mut files: Files = match &old {
        Some(a) => (*load(a).with_context(|| format!("reading {}", a.display()))?).clone(),
        None => Files::new(),
    };
    for p in &loose {
        let rel = p.strip_prefix(run)?.to_string_lossy().into_owned();
        let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
        files.insert(rel, bytes);
    }
    for (name, bytes) in files.iter_mut() {
        *bytes = plain_histograms(bytes).with_context(|| name.clone())?;
    }
    crate::files::write_atomic(&run.join(ARCHIVE), &to_tar_xz(&files)?)?;
    if let Some(old) = old.filter(|a| a.ends_with(OLD_ARCHIVE)) {
        std::fs::remove_file(&old).with_context(|| format!("removing {}", old.display()))?;
    }
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

/// A record file with every V2 + DEFLATE histogram (`"HISTF...`, written
/// before 2026-11-29) in the plain V2 form loadgen writes now
/// ([`loadgen::histlog::plain`]: the same histogram, inflated), so the
/// archive's compression reaches the counts; all else byte for byte.
fn plain_histograms(bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    const OLD: &[u8] = b"\"HISTF";
    if !bytes.windows(OLD.len()).any(|w| w == OLD) {
        return Ok(bytes.to_vec());
    }
    let text = std::str::from_utf8(bytes).context("a record file that is not UTF-8")?;
    let mut out = String::with_capacity(text.len() * 2);
    let mut rest = text;
    while let Some(at) = rest.find("\"HISTF") {
        let (before, from) = rest.split_at(at + 1);
        let end = from
            .find('"')
            .context("a histogram string without its end")?;
        out.push_str(before);
        out.push_str(&loadgen::histlog::plain(&from[..end]).map_err(anyhow::Error::msg)?);
        rest = &from[end..];
    }
    out.push_str(rest);
    Ok(out.into_bytes())
}

/// The files as an xz'd tar, the same bytes for the same files: xz's
/// strongest preset, its dictionary no larger than the tar (so packing a
/// small run asks for little memory). On all of `results/` (2026-11-29)
/// this took the archives from 89 to 76 MiB against gzip, with the
/// histograms in their plain V2 form (`loadgen::histlog`).
fn to_tar_xz(files: &Files) -> anyhow::Result<Vec<u8>> {
    let mut tar = tar::Builder::new(Vec::new());
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
    let tar = tar.into_inner()?;
    let dict = (tar.len() as u32).clamp(1 << 16, 64 << 20);
    // liblzma's LZMA_PRESET_EXTREME (`xz -9e`), which xz2 does not re-export.
    const PRESET_EXTREME: u32 = 1 << 31;
    let mut opts = xz2::stream::LzmaOptions::new_preset(9 | PRESET_EXTREME)?;
    opts.dict_size(dict);
    let stream = xz2::stream::Stream::new_stream_encoder(
        xz2::stream::Filters::new().lzma2(&opts),
        xz2::stream::Check::Crc64,
    )?;
    let mut xz = xz2::write::XzEncoder::new_stream(Vec::new(), stream);
    std::io::Write::write_all(&mut xz, &tar)?;
    Ok(xz.finish()?)
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
                "meta.json.gz",
                "quick/aa/block-01-ab.base.jsonl",
                "quick/aa/block-01-ab.row.jsonl",
                "quick/table.toml",
                "raw.tar.xz"
            ]
        );
        // meta.json went gzip'd and reads as it was.
        assert!(!run.path().join("meta.json").exists());
        assert_eq!(read_to_string(&run.path().join("meta.json")).unwrap(), "{}");
        assert!(is_file(&run.path().join("meta.json")));
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

    #[test]
    fn old_histograms_become_plain_and_the_rest_stays_byte_for_byte() {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        h.record_n(120, 7).unwrap();
        h.record(95_000).unwrap();
        let mut deflated = Vec::new();
        hdrhistogram::serialization::Serializer::serialize(
            &mut hdrhistogram::serialization::V2DeflateSerializer::new(),
            &h,
            &mut deflated,
        )
        .unwrap();
        use base64::Engine;
        let old = base64::engine::general_purpose::STANDARD.encode(deflated);
        let line = |hist: &str| {
            format!("{{\"type\":\"interval\", \"histogram\":\"{hist}\",\"x\":1.50}}\n")
        };
        let two = format!("{}{}", line(&old), line(&old));
        let got = plain_histograms(two.as_bytes()).unwrap();
        let new = loadgen::histlog::encode(&h);
        assert_eq!(
            String::from_utf8(got).unwrap(),
            format!("{}{}", line(&new), line(&new))
        );
        // Already plain, or none at all: the same bytes.
        assert_eq!(
            plain_histograms(line(&new).as_bytes()).unwrap(),
            line(&new).as_bytes()
        );
        assert_eq!(plain_histograms(b"{}\n").unwrap(), b"{}\n");
        // A cut-off string is an error, not a guess.
        assert!(plain_histograms(b"{\"histogram\":\"HISTFAAA").is_err());
    }

    /// A gzip'd tar as runs packed before 2026-11-29 hold.
    fn old_archive(run: &Path, name: &str, text: &str) {
        let gz = flate2::GzBuilder::new().write(Vec::new(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        h.set_size(text.len() as u64);
        h.set_mode(0o644);
        tar.append_data(&mut h, name, text.as_bytes()).unwrap();
        let bytes = tar.into_inner().unwrap().finish().unwrap();
        std::fs::write(run.join(OLD_ARCHIVE), bytes).unwrap();
    }

    #[test]
    fn an_old_gzip_archive_reads_and_a_pack_turns_it_into_xz() {
        let run = tempfile::tempdir().unwrap();
        old_archive(run.path(), "quick/old.jsonl", "{\"old\":1}\n");
        let old = run.path().join("quick/old.jsonl");
        assert_eq!(read_to_string(&old).unwrap(), "{\"old\":1}\n");
        assert_eq!(packed(run.path()).unwrap(), ["quick/old.jsonl"]);
        assert!(is_dir(&run.path().join("quick")));
        // A pack with nothing loose turns the gzip'd archive into an xz one.
        assert_eq!(pack(run.path()).unwrap(), 0);
        assert!(!run.path().join(OLD_ARCHIVE).exists());
        assert_eq!(read_to_string(&old).unwrap(), "{\"old\":1}\n");
        // A new record joins the old ones.
        std::fs::create_dir_all(run.path().join("quick")).unwrap();
        std::fs::write(run.path().join("quick/new.jsonl"), "{}\n").unwrap();
        assert_eq!(pack(run.path()).unwrap(), 1);
        assert!(!run.path().join(OLD_ARCHIVE).exists());
        let xz = std::fs::read(run.path().join(ARCHIVE)).unwrap();
        assert_eq!(&xz[..6], b"\xfd7zXZ\0", "an xz stream");
        assert_eq!(
            packed(run.path()).unwrap(),
            ["quick/new.jsonl", "quick/old.jsonl"]
        );
        assert_eq!(read_to_string(&old).unwrap(), "{\"old\":1}\n");
    }

    #[test]
    fn a_gzipd_file_reads_as_its_plain_form_and_a_plain_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("summary.json");
        std::fs::write(&p, "{\"a\":1}").unwrap();
        gzip_in_place(&p).unwrap();
        assert!(!p.exists() && gz_path(&p).is_file());
        assert_eq!(read_to_string(&p).unwrap(), "{\"a\":1}");
        // The same bytes every time.
        assert_eq!(gzip(b"x").unwrap(), gzip(b"x").unwrap());
        assert_eq!(gunzip(&gzip(b"x").unwrap()).unwrap(), b"x");
        std::fs::write(&p, "plain").unwrap();
        assert_eq!(read_to_string(&p).unwrap(), "plain");
        // Nothing there: a clear error, not the archive's.
        let e = read(&dir.path().join("nope.json")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        // A missing file to gzip is no error and leaves nothing.
        gzip_in_place(&dir.path().join("nope.json")).unwrap();
        assert!(!gz_path(&dir.path().join("nope.json")).exists());
    }
}
