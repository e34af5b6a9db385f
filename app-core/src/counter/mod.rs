//! Counter backends. All three are always compiled and tested; the features
//! pick the one the servers use ([`Counter`]):
//!
//! | features | backend |
//! |---|---|
//! | `mmap-backend` | [`MmapCounter`]: one counter in a memory-mapped file |
//! | `global-counter` | [`GlobalCounter`]: one process-wide `AtomicU64` |
//! | neither | [`ShardedCounter`]: one cache-padded slot per worker thread |

mod global;
mod mmap;
mod sharded;

use std::path::PathBuf;

pub use global::GlobalCounter;
pub use mmap::{MmapCounter, COUNTER_FILE_LEN, COUNTER_FILE_MAGIC};
pub use sharded::ShardedCounter;

/// What a backend needs to start.
#[derive(Debug, Clone, Default)]
pub struct CounterOptions {
    /// Worker threads that will add to the counter.
    pub workers: usize,
    /// Backing file, for backends that persist.
    pub file: Option<PathBuf>,
}

/// Why a counter could not be opened or synced.
#[derive(Debug, thiserror::Error)]
pub enum CounterError {
    #[error("the mmap-backend feature needs --counter-file PATH")]
    MissingFile,
    #[error("counter file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("counter file {path} is {len} bytes, expected {COUNTER_FILE_LEN}: not a shootout counter file (move it away to start from 0)")]
    WrongSize { path: PathBuf, len: u64 },
    #[error("counter file {path} does not start with the shootout counter magic: not a shootout counter file (move it away to start from 0)")]
    WrongMagic { path: PathBuf },
    #[error("counter file {path} is in use by another process")]
    Locked { path: PathBuf },
}

/// A click counter shared by all worker threads.
pub trait CounterStore: Send + Sync + Sized {
    /// Opens (or creates) the counter.
    fn open(opts: &CounterOptions) -> Result<Self, CounterError>;
    /// Adds `value` and returns the total afterwards.
    fn add(&self, value: u64) -> u64;
    /// The current total.
    fn get(&self) -> u64;
    /// Makes the count durable where the backend persists; a no-op otherwise.
    fn sync(&self) -> Result<(), CounterError> {
        Ok(())
    }
}

/// The counter backend the servers use in this build.
#[cfg(feature = "mmap-backend")]
pub type Counter = MmapCounter;
/// The counter backend the servers use in this build.
#[cfg(all(feature = "global-counter", not(feature = "mmap-backend")))]
pub type Counter = GlobalCounter;
/// The counter backend the servers use in this build.
#[cfg(not(any(feature = "global-counter", feature = "mmap-backend")))]
pub type Counter = ShardedCounter;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Many threads add at once; the total is exact for every backend.
    fn concurrent_total_is_exact<C: CounterStore + 'static>(counter: C) {
        let counter = Arc::new(counter);
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                let c = Arc::clone(&counter);
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        c.add((i + t) % 501);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let expected: u64 = (0..8u64)
            .map(|t| (0..10_000u64).map(|i| (i + t) % 501).sum::<u64>())
            .sum();
        assert_eq!(counter.get(), expected);
    }

    #[test]
    fn global_counter_total_is_exact() {
        concurrent_total_is_exact(GlobalCounter::open(&CounterOptions::default()).unwrap());
    }

    #[test]
    fn sharded_counter_total_is_exact_with_fewer_slots_than_threads() {
        let opts = CounterOptions {
            workers: 3,
            file: None,
        };
        concurrent_total_is_exact(ShardedCounter::open(&opts).unwrap());
    }

    #[test]
    fn mmap_counter_total_is_exact() {
        let dir = tempfile::tempdir().unwrap();
        let opts = CounterOptions {
            workers: 2,
            file: Some(dir.path().join("count")),
        };
        concurrent_total_is_exact(MmapCounter::open(&opts).unwrap());
    }

    #[test]
    fn add_returns_the_new_total() {
        let c = ShardedCounter::open(&CounterOptions {
            workers: 2,
            file: None,
        })
        .unwrap();
        assert_eq!(c.add(5), 5);
        assert_eq!(c.add(500), 505);
        assert_eq!(c.get(), 505);
    }
}
