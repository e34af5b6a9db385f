//! `SHOOTOUT_HOLD_AT=STAGE` (build, start, verify, measure, record; block,
//! between a paired comparison's blocks; report, once the run is recorded): the run
//! stops at that stage, says so on stderr, and waits there until SIGINT or
//! SIGTERM comes, then goes on as a run interrupted at that very point
//! would; SIGUSR1 lets it go on uninterrupted (after a test has filled the
//! disk or made it read-only, say); 60 s at most. It lets a test act at
//! each stage where it is, not where a timer happens to land
//! (`tests/interrupt.rs`); unset, it costs one environment lookup per
//! stage.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The stages every design passes, in order.
pub const STAGES: [&str; 5] = ["build", "start", "verify", "measure", "record"];

/// Stages of their own: between two blocks of a paired comparison, and
/// the report once the run is recorded.
pub const MORE_STAGES: [&str; 2] = ["block", "report"];

/// Holds the run here if `SHOOTOUT_HOLD_AT` names `stage`.
pub fn stage(stage: &str) {
    debug_assert!(STAGES.contains(&stage) || MORE_STAGES.contains(&stage));
    if std::env::var("SHOOTOUT_HOLD_AT").ok().as_deref() != Some(stage) {
        return;
    }
    let go_on = go_on();
    go_on.store(false, Ordering::Relaxed);
    eprintln!("shootout: holding at stage {stage} (SHOOTOUT_HOLD_AT)");
    let until = Instant::now() + Duration::from_secs(60);
    while !go_on.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A flag of its own set by SIGINT, SIGTERM or SIGUSR1 (beside the run's
/// stop flag, which only the first two set).
fn go_on() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    Arc::clone(FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
        for sig in [SIGINT, SIGTERM, SIGUSR1] {
            let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
        }
        flag
    }))
}
