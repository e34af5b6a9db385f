//! The CPU probe: a stack's CPU time (server, and nginx's master and
//! workers) at every interval boundary of a load, wherever its processes
//! run. One probe for every host kind: each process gets its host's reader
//! ([`crate::place::running::CpuReader`]), and the probe adds them up.

use std::path::Path;
use std::time::Instant;

use crate::place::running::{Boundaries, CpuReader};
use crate::stack::Stack;

/// The CPU readers of one stack.
pub struct CpuProbe {
    readers: Vec<CpuReader>,
    last: u64,
}

impl CpuProbe {
    /// Starts a reader for every process of `stack` at boundaries `b`;
    /// remote samplers write into `scratch` here.
    pub fn start(stack: &Stack, b: Boundaries, scratch: &Path) -> anyhow::Result<CpuProbe> {
        Ok(CpuProbe {
            readers: stack.cpu_readers(b, scratch)?,
            last: b.last,
        })
    }

    /// Boundary `k` is due now.
    pub fn at(&mut self, k: u64) {
        for r in &mut self.readers {
            r.at(k);
        }
    }

    /// The stack's CPU nanoseconds at every boundary 0..=last, summed over
    /// its processes; waits for remote samplers until `deadline`.
    pub fn finish(self, deadline: Instant) -> anyhow::Result<Vec<u64>> {
        let mut total = vec![0u64; self.last as usize + 1];
        for r in self.readers {
            for (t, ns) in total.iter_mut().zip(r.finish(self.last, deadline)?) {
                *t += ns;
            }
        }
        Ok(total)
    }
}
