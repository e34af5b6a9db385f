//! The shootout runner: one command runs a scenario matrix end to end and
//! leaves raw data, metadata and the analysed report in `results/<run>/`.
//!
//! The folders are the stages a row goes through, in the order data flows
//! (see the crate README's stage map): `config` reads a scenario file,
//! `prepare` installs and builds, `place` decides where each process runs,
//! `stack` starts the server, its log sink and nginx, `measure` loads and
//! reads CPU, `check` verifies the app and its counter, `record` writes what
//! happened, and `design` holds the schedules that drive them; `commands`
//! are the subcommands.

pub mod check;
pub mod commands;
pub mod config;
pub mod design;
pub mod hold_at;
pub mod measure;
pub mod place;
pub mod prepare;
pub mod record;
pub mod stack;

pub use design::{run_file, RunOptions, RunOutcome};

/// The run was stopped by SIGINT or SIGTERM.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;
