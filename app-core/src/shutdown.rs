//! SIGINT and SIGTERM, handled the same way for both frameworks: the first
//! one starts a graceful stop (stop accepting, finish in-flight requests), a
//! second one exits at once.

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Calls `stop` on the first SIGINT or SIGTERM, from a thread of its own.
pub fn on_signal(stop: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("shutdown-signals".into())
        .spawn(move || {
            let mut signals = signals.forever();
            if signals.next().is_some() {
                stop();
            }
            if let Some(sig) = signals.next() {
                eprintln!("second signal ({sig}) during graceful stop: exiting now");
                std::process::exit(1);
            }
        })?;
    Ok(())
}
