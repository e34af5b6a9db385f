//! What every mode shares at its edges: the usage error (exit 2), the stop
//! flag SIGINT and SIGTERM raise, and the one line a failure prints (exit 1).

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::limits;

/// A problem with how loadgen was called: one line, exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Prints a usage problem: exit 2.
pub fn usage(why: impl std::fmt::Display) -> ExitCode {
    eprintln!("loadgen: {why}");
    ExitCode::from(2)
}

/// Prints why a run failed: exit 1.
pub fn failed(why: impl std::fmt::Display) -> ExitCode {
    eprintln!("loadgen: {why}");
    ExitCode::from(1)
}

/// What a mode needs before its first connection: enough open files for
/// `connections` over `threads`, and the stop flag. A refusal is one line,
/// exit 2.
pub fn prepare(connections: usize, threads: usize) -> Result<Arc<AtomicBool>, ExitCode> {
    limits::open_files(connections, threads).map_err(usage)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| usage(format!("installing signal handler: {e}")))?;
    }
    Ok(stop)
}
