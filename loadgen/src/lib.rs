//! loadgen: the shootout's HTTP/1.1 load generator, as a library the binary
//! and the tests call. See the crate README.
//!
//! Each mode owns its entry point: [`load::main`], [`hold::main`],
//! [`slow::main`]; `main.rs` parses the command line and dispatches.

pub mod cli;
pub mod config;
pub mod exit;
pub mod gate;
pub mod histlog;
pub mod hold;
pub mod limits;
pub mod load;
pub mod output;
pub mod record;
pub mod request;
pub mod response;
pub mod run;
pub mod schedule;
pub mod slow;
pub mod stats;
pub mod timer;
pub mod tls;
pub mod worker;

pub use config::{Config, Model, Sched};
pub use record::{HoldRecord, IntervalRecord, Record, SlowRecord, SummaryRecord};
pub use run::{run, RunError, Sink};
