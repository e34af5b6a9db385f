//! A command row, checked (`crate::config::command` reads it): a server
//! the project did not build, its command line with placeholders, its
//! environment, working directory, build, readiness probe and request path.

use std::path::PathBuf;

/// A command row's keys, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRow {
    /// The command line with its placeholders; the program resolved to an
    /// absolute path.
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Where it runs (absolute); the runner's directory when none.
    pub cwd: Option<PathBuf>,
    /// The request that says it is ready, and the status it must answer.
    pub ready: Ready,
    /// The path loadgen requests (`/` unless the row says).
    pub path: String,
    /// The line of `command` in the file, for errors found when it starts.
    pub line: usize,
    /// The command as the file writes it (its program not resolved), for
    /// records and identities that hold in any checkout.
    pub written: Vec<String>,
    /// What builds the program, run once before it first starts.
    pub build: Option<Vec<String>>,
}

/// A readiness probe: `method path` answered with `status`, `within` the
/// start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub method: String,
    pub path: String,
    pub status: u16,
    pub within: std::time::Duration,
}

/// How long a command row's server has to answer its readiness probe
/// unless the row says.
pub const READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

impl CommandRow {
    /// The command line as a person would type it (placeholders kept), for
    /// tables, records and the history's identity.
    pub fn shown(&self) -> String {
        self.written.join(" ")
    }
}
