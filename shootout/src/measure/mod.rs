//! Measure: loadgen processes against a stack, the loop that waits for them, and the CPU probe that reads
//! every server's and nginx's CPU time at the loadgens' interval boundaries.

pub mod cpu;
pub mod load;
pub mod wait;
