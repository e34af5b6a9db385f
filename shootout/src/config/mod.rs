//! Configure: scenario files (rows, defaults, designs) and the remote hosts
//! they name, parsed and checked before anything runs. Every error names
//! the file and the line.

pub mod hosts;
pub mod list;
pub mod parse;
pub mod scenario;
pub mod sinks;
#[cfg(test)]
mod sinks_tests;
pub mod ssh_terminal;
pub mod sweep;
#[cfg(test)]
mod sweep_tests;
