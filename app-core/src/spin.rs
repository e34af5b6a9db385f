//! The positive control of `shootout calibrate`: a fixed amount of CPU work
//! added to every request.
//!
//! The work is a number of loop iterations, not a wait on the clock. A wait
//! on the clock costs the same wall time whatever the machine does, while the
//! request around it gets slower when this VM is in its slow state; measured
//! here, a 226 ns clock wait cost 270-290 ns of thread CPU time (the clock
//! reads on top), so its share of a request was neither 2 % nor constant.
//! Iterations of an arithmetic loop slow down with everything else, so the
//! control stays the same share of a request in every state. `--spin-ns` is
//! turned into iterations once, at start, by timing the loop on the thread's
//! own CPU clock; the start-up line says what it found.

use std::hint::black_box;

/// Iterations timed per probe: about 0.3 ms here.
const PROBE_ITERS: u64 = 256 * 1024;
/// Probes at start; the median is used.
const PROBES: usize = 9;

/// A per-request spin of a fixed number of iterations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spin {
    /// What `--spin-ns` asked for.
    pub nominal_ns: u64,
    /// Iterations per request.
    pub iters: u64,
    /// The loop's cost at start (thread CPU ns per iteration, median of probes).
    pub ns_per_iter: f64,
}

impl Spin {
    /// No spin.
    pub const NONE: Spin = Spin {
        nominal_ns: 0,
        iters: 0,
        ns_per_iter: 0.0,
    };

    /// Times the loop on this thread's CPU clock and converts `ns` into iterations.
    pub fn calibrated(ns: u64) -> Spin {
        if ns == 0 {
            return Spin::NONE;
        }
        let mut probes: Vec<f64> = (0..PROBES)
            .map(|_| {
                let start = thread_cpu_ns();
                run(PROBE_ITERS);
                (thread_cpu_ns().saturating_sub(start)) as f64 / PROBE_ITERS as f64
            })
            .collect();
        probes.sort_by(f64::total_cmp);
        let ns_per_iter = probes[PROBES / 2].max(1e-3);
        Spin {
            nominal_ns: ns,
            iters: ((ns as f64 / ns_per_iter).round() as u64).max(1),
            ns_per_iter,
        }
    }

    /// Runs the spin once (nothing for [`Spin::NONE`]).
    #[inline]
    pub fn once(&self) {
        if self.iters > 0 {
            run(self.iters);
        }
    }

    /// ` spin_ns=N spin_iters=K spin_ns_per_iter=X` for the start-up line, or "".
    pub fn describe(&self) -> String {
        if self.iters == 0 {
            return String::new();
        }
        format!(
            " spin_ns={} spin_iters={} spin_ns_per_iter={:.4}",
            self.nominal_ns, self.iters, self.ns_per_iter
        )
    }
}

/// `iters` steps of a 64-bit LCG; `black_box` keeps every step.
#[inline(never)]
fn run(iters: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15_u64;
    for _ in 0..iters {
        x = black_box(
            x.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407),
        );
    }
    x
}

/// This thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant
    // Linux always has.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_no_spin() {
        assert_eq!(Spin::calibrated(0), Spin::NONE);
        assert_eq!(Spin::NONE.describe(), "");
    }

    #[test]
    fn iterations_follow_the_requested_time() {
        let small = Spin::calibrated(1_000);
        let large = Spin::calibrated(1_000_000);
        assert!(small.iters >= 1 && large.iters > small.iters * 100);
        // The loop spends CPU time: 1 ms asked, at least 0.1 ms spent.
        let start = thread_cpu_ns();
        large.once();
        assert!(thread_cpu_ns() - start >= 100_000);
        assert!(large.describe().contains(" spin_ns=1000000 spin_iters="));
    }
}
