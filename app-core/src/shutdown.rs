//! SIGINT and SIGTERM, handled the same way for both frameworks: the first
//! one starts a graceful stop (stop accepting, finish in-flight requests), a
//! second one exits at once.
//!
//! The frameworks bound a graceful stop by their shutdown timeout
//! (`--shutdown-timeout`, [`crate::SHUTDOWN_TIMEOUT_SECS`] by default). In case one does not (an ntex server
//! on a non-tokio runtime, stopped right after its start-up line, once did
//! not exit within 15 s in CI; not reproduced in 100 tries), the process
//! exits by itself [`STOP_GRACE_SECS`] after that timeout, saying so on
//! stderr, with status 0 as when the frameworks' own timeout ends a stop.

use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// How long after the shutdown timeout a graceful stop may still run.
pub const STOP_GRACE_SECS: u64 = 3;

/// Calls `stop` on the first SIGINT or SIGTERM, from a thread of its own;
/// `timeout_secs` is the frameworks' shutdown timeout.
pub fn on_signal(timeout_secs: u16, stop: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("shutdown-signals".into())
        .spawn(move || {
            let mut signals = signals.forever();
            if signals.next().is_some() {
                stop();
                watchdog(timeout_secs);
            }
            if let Some(sig) = signals.next() {
                eprintln!("second signal ({sig}) during graceful stop: exiting now");
                std::process::exit(1);
            }
        })?;
    Ok(())
}

/// Ends the process if the graceful stop outlives the shutdown timeout by
/// more than [`STOP_GRACE_SECS`].
fn watchdog(timeout_secs: u16) {
    let limit = u64::from(timeout_secs) + STOP_GRACE_SECS;
    let spawned = std::thread::Builder::new()
        .name("shutdown-watchdog".into())
        .spawn(move || {
            std::thread::sleep(Duration::from_secs(limit));
            eprintln!("graceful stop still running {limit} s after the signal: exiting now");
            std::process::exit(0);
        });
    if let Err(e) = spawned {
        eprintln!("no shutdown watchdog ({e}): the stop is bounded by the framework alone");
    }
}
