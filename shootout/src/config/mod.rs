//! Configure: scenario files (rows, defaults, designs) and the remote hosts
//! they name, parsed and checked before anything runs. Every error names
//! the file and the line.

pub mod command;
pub mod command_row;
pub mod hosts;
pub mod list;
pub mod memory;
pub mod paired;
#[cfg(test)]
mod paired_tests;
pub mod parse;
#[cfg(test)]
mod parse_tests;
pub mod row;
#[cfg(test)]
mod row_tests;
pub mod scenario;
pub mod settings;
pub mod sinks;
pub mod sinks_rules;
#[cfg(test)]
mod sinks_tests;
pub mod spans;
pub mod ssh_terminal;
pub mod sweep;
pub mod sweep_rules;
#[cfg(test)]
mod sweep_tests;
pub mod tls;
