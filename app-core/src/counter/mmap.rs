use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::MmapMut;

use super::{CounterError, CounterOptions, CounterStore};

/// First 8 bytes of a counter file (the last byte is the format version).
pub const COUNTER_FILE_MAGIC: &[u8; 8] = b"SHOOTCN1";
/// A counter file is the magic followed by the count as a native-endian u64
/// (little-endian on x86-64 and aarch64).
pub const COUNTER_FILE_LEN: u64 = 16;
const COUNT_OFFSET: usize = 8;

/// The count lives in a shared memory mapping of a 16-byte file.
///
/// Every add is an atomic on the mapped page, so the kernel's page cache holds
/// each increment as soon as it is made: it survives a kill -9 of the server
/// (not a power loss; [`CounterStore::sync`] msyncs at shutdown). The file is
/// locked while open so two servers cannot share it.
#[derive(Debug)]
pub struct MmapCounter {
    cell: NonNull<AtomicU64>,
    map: MmapMut,
    path: PathBuf,
    _file: File,
}

// SAFETY: `cell` points into `map`, which lives as long as `self` and is never
// moved or unmapped before drop; all access through it is atomic.
unsafe impl Send for MmapCounter {}
// SAFETY: as above; `AtomicU64` is Sync.
unsafe impl Sync for MmapCounter {}

impl MmapCounter {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CounterError + '_ {
        move |source| CounterError::Io {
            path: path.to_owned(),
            source,
        }
    }

    fn open_file(path: &Path) -> Result<File, CounterError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(Self::io(path))?;
        if file.try_lock().is_err() {
            return Err(CounterError::Locked {
                path: path.to_owned(),
            });
        }
        let len = file.metadata().map_err(Self::io(path))?.len();
        if len == 0 {
            // A new file: write the header and a zero count, then make it durable.
            let mut header = [0u8; COUNTER_FILE_LEN as usize];
            header[..8].copy_from_slice(COUNTER_FILE_MAGIC);
            (&file).write_all(&header).map_err(Self::io(path))?;
            file.sync_all().map_err(Self::io(path))?;
        } else if len != COUNTER_FILE_LEN {
            return Err(CounterError::WrongSize {
                path: path.to_owned(),
                len,
            });
        }
        Ok(file)
    }
}

impl CounterStore for MmapCounter {
    fn open(opts: &CounterOptions) -> Result<Self, CounterError> {
        let path: &PathBuf = opts.file.as_ref().ok_or(CounterError::MissingFile)?;
        let file = Self::open_file(path)?;
        // SAFETY: the file is locked against other shootout servers; another
        // program truncating it under us is outside what we defend against.
        let mut map = unsafe { MmapMut::map_mut(&file) }.map_err(Self::io(path))?;
        if &map[..8] != COUNTER_FILE_MAGIC {
            return Err(CounterError::WrongMagic {
                path: path.to_owned(),
            });
        }
        // SAFETY: a mapping is page-aligned, so offset 8 is 8-byte aligned, and
        // the mapping is 16 bytes long. From here on the count is only touched
        // through this atomic.
        let cell = unsafe {
            NonNull::new_unchecked(map.as_mut_ptr().add(COUNT_OFFSET).cast::<AtomicU64>())
        };
        Ok(MmapCounter {
            cell,
            map,
            path: path.clone(),
            _file: file,
        })
    }

    fn add(&self, value: u64) -> u64 {
        // SAFETY: see the Send/Sync impls.
        unsafe { self.cell.as_ref() }.fetch_add(value, Ordering::Relaxed) + value
    }

    fn get(&self) -> u64 {
        // SAFETY: see the Send/Sync impls.
        unsafe { self.cell.as_ref() }.load(Ordering::Relaxed)
    }

    fn sync(&self) -> Result<(), CounterError> {
        self.map.flush().map_err(Self::io(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(path: &Path) -> CounterOptions {
        CounterOptions {
            workers: 1,
            file: Some(path.to_owned()),
        }
    }

    #[test]
    fn value_survives_reopen_and_is_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("count");
        {
            let c = MmapCounter::open(&opts(&path)).unwrap();
            c.add(7);
            c.add(500);
            c.sync().unwrap();
        }
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], COUNTER_FILE_MAGIC);
        assert_eq!(u64::from_ne_bytes(bytes[8..16].try_into().unwrap()), 507);
        let c = MmapCounter::open(&opts(&path)).unwrap();
        assert_eq!(c.get(), 507);
    }

    #[test]
    fn wrong_size_is_an_error_and_the_file_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("count");
        std::fs::write(&path, b"12345").unwrap();
        let err = MmapCounter::open(&opts(&path)).unwrap_err();
        assert!(
            matches!(err, CounterError::WrongSize { len: 5, .. }),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"12345");
    }

    #[test]
    fn wrong_magic_is_an_error_and_the_file_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("count");
        std::fs::write(&path, [7u8; 16]).unwrap();
        let err = MmapCounter::open(&opts(&path)).unwrap_err();
        assert!(matches!(err, CounterError::WrongMagic { .. }), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), [7u8; 16]);
    }

    #[test]
    fn second_opener_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("count");
        let _first = MmapCounter::open(&opts(&path)).unwrap();
        let err = MmapCounter::open(&opts(&path)).unwrap_err();
        assert!(matches!(err, CounterError::Locked { .. }), "{err}");
    }

    #[test]
    fn missing_path_is_an_error() {
        let err = MmapCounter::open(&CounterOptions::default()).unwrap_err();
        assert!(matches!(err, CounterError::MissingFile));
    }
}
