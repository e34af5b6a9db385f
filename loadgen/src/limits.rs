//! Open files: every connection is one. loadgen raises its soft limit to the
//! hard limit at start and refuses a `-c` it could not open, in one line,
//! rather than failing connections one by one.

/// Files a run needs besides its connections: stdio, and per worker thread
/// its epoll, its timer and the pipe-like handles the runtime keeps.
const SPARE: u64 = 16;
const PER_THREAD: u64 = 4;

/// Raises the limit; the limit now in force, or why `connections` will not fit.
pub fn open_files(connections: usize, threads: usize) -> Result<u64, String> {
    let limit = rlimit::increase_nofile_limit(u64::MAX)
        .map_err(|e| format!("cannot raise the open-file limit: {e}"))?;
    let need = connections as u64 + SPARE + PER_THREAD * threads as u64;
    if need > limit {
        return Err(format!(
            "-c {connections} needs about {need} open files, and this process may open {limit} \
             (its hard limit: raise it with ulimit -Hn, or LimitNOFILE for a service)"
        ));
    }
    Ok(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_run_fits_and_an_impossible_one_is_refused() {
        let limit = open_files(8, 1).unwrap();
        assert!(limit >= 24);
        let err = open_files(usize::MAX / 8, 1).unwrap_err();
        assert!(
            err.contains("open files") && err.contains("ulimit -Hn"),
            "{err}"
        );
    }
}
