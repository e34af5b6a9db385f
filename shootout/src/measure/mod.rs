//! Measure: loadgen processes against a stack, and the CPU probe that reads
//! every server's and nginx's CPU time at the loadgens' interval boundaries.

pub mod cpu;
pub mod load;
