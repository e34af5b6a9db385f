//! What meta.json keeps about each measured row (sequential design).

use serde::Serialize;

use crate::check::counter::CounterCheck;
use crate::check::verify::Verified;
use crate::config::scenario::Scenario;
use crate::place::procs::Usage;
use crate::stack::Stopped;

/// Everything recorded about one scenario repetition (part of meta.json).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RowRecord {
    pub scenario: String,
    pub repetition: u32,
    pub variant: String,
    pub topology: String,
    pub proxy: Option<String>,
    pub log: String,
    pub server_cpus: Option<String>,
    pub loadgen_cpus: Option<String>,
    pub startup_line: Option<String>,
    /// The terminal emulator the server ran in (`log = "xterm"`).
    pub terminal: Option<String>,
    pub verified: Option<Verified>,
    /// The `log-file` sink's file (in the temp dir) and its size at the end.
    pub log_file: Option<String>,
    pub log_file_bytes: Option<u64>,
    /// Bytes the server wrote to its stdout pipe or terminal.
    pub server_stdout_bytes: u64,
    pub server: Usage,
    pub nginx: Option<Usage>,
    pub loadgen: Usage,
    pub server_exit: Option<i32>,
    pub nginx_exit: Option<i32>,
    pub loadgen_exit: Option<i32>,
    pub rps: Option<f64>,
    pub counter: Option<CounterCheck>,
    /// Set when a link delay was asked for and could not be applied.
    pub netem: Option<String>,
    pub error: Option<String>,
}

impl RowRecord {
    /// A record with the scenario's settings filled in.
    pub fn new(s: &Scenario, repetition: u32) -> RowRecord {
        RowRecord {
            scenario: s.name.clone(),
            repetition,
            variant: s.variant(),
            topology: format!("{:?}", s.topology).to_lowercase(),
            proxy: s.proxy.clone(),
            log: format!("{:?}", s.log).to_lowercase(),
            server_cpus: s.server_cpus.clone(),
            loadgen_cpus: s.loadgen_cpus.clone(),
            ..RowRecord::default()
        }
    }

    /// The record with `outcome` filled in: an error's text, or
    /// `interrupted` (then also returned, for the run to stop).
    pub fn finish(
        mut self,
        outcome: anyhow::Result<()>,
    ) -> (RowRecord, Option<crate::Interrupted>) {
        match outcome {
            Ok(()) => (self, None),
            Err(e) if e.is::<crate::Interrupted>() => {
                self.error = Some("interrupted".into());
                (self, Some(crate::Interrupted))
            }
            Err(e) => {
                self.error = Some(format!("{e:#}"));
                (self, None)
            }
        }
    }

    /// Takes what the stack's stop reported.
    pub fn stopped(&mut self, st: &Stopped) {
        self.server_exit = st.server_exit;
        self.nginx_exit = st.nginx_exit;
        self.server_stdout_bytes = st.server_stdout_bytes;
        self.log_file_bytes = st.log_file_bytes;
    }
}
