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
    /// The commit the twin was built at (`rev`), in full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    pub topology: String,
    pub proxy: Option<String>,
    pub log: String,
    pub server_cpus: Option<String>,
    pub loadgen_cpus: Option<String>,
    /// Where nginx was pinned (the static ceiling row: the server's CPUs);
    /// none: nginx, when the row has it, ran where the scheduler put it.
    pub nginx_cpus: Option<String>,
    pub startup_line: Option<String>,
    /// The terminal emulator the server ran in (`log = "xterm"`).
    pub terminal: Option<String>,
    pub verified: Option<Verified>,
    /// The `log-file` sink's file (in the temp dir) and its size at the end.
    pub log_file: Option<String>,
    pub log_file_bytes: Option<u64>,
    /// Bytes the server wrote to its stdout pipe, terminal or file.
    pub server_stdout_bytes: u64,
    /// What a shaped ssh link carried (`log = "ssh-terminal"` with
    /// `link_rate`), from the server's start to its stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<crate::place::ssh_terminal::LinkStats>,
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
    /// Where each process (server, nginx, loadgen) ran, as read from
    /// /proc: every thread's allowed CPUs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<crate::place::affinity::ReadCpus>,
    /// A command row's command, checks and CPU source (none for a twin's).
    #[serde(flatten)]
    pub command_facts: analysis::placement::CommandFacts,
}

/// What the stages of one repetition found, each stage's result kept
/// whole as far as the stages got; [`RowRecord::build`] makes the record
/// from it once.
#[derive(Debug, Default)]
pub struct RowFacts {
    /// Placement: the topology as meta.json names it, and a link delay
    /// asked for but not applied.
    pub placed: Option<(String, Option<String>)>,
    /// The started stack: start-up line, terminal emulator, `log-file` path.
    pub started: Option<(String, Option<String>, Option<String>)>,
    pub verified: Option<Verified>,
    /// Latest usage of the server, nginx and the loadgens (summed).
    pub server: Usage,
    pub nginx: Option<Usage>,
    pub loadgen: Usage,
    /// The loadgens' worst exit code and their summed 2xx/s.
    pub loaded: Option<(Option<i32>, Option<f64>)>,
    pub counter: Option<CounterCheck>,
    pub stopped: Option<Stopped>,
    /// Where each process ran, read from /proc during the row.
    pub cpus: Vec<crate::place::affinity::ReadCpus>,
}

impl RowRecord {
    /// The record of row `s`'s repetition from what its stages found and
    /// how they ended: an error's text, or `interrupted` (then also
    /// returned, for the run to stop).
    pub fn build(
        s: &Scenario,
        repetition: u32,
        facts: RowFacts,
        outcome: anyhow::Result<()>,
    ) -> (RowRecord, Option<crate::Interrupted>) {
        let (topology, netem) = facts
            .placed
            .unwrap_or_else(|| (format!("{:?}", s.topology).to_lowercase(), None));
        let (startup_line, terminal, log_file) = match facts.started {
            Some((line, terminal, file)) => (Some(line), terminal, file),
            None => (None, None, None),
        };
        let (loadgen_exit, rps) = facts.loaded.unwrap_or_default();
        let stopped = facts.stopped.unwrap_or_default();
        let (error, interrupted) = match outcome {
            Ok(()) => (None, None),
            Err(e) if e.is::<crate::Interrupted>() => {
                (Some("interrupted".into()), Some(crate::Interrupted))
            }
            Err(e) => (Some(format!("{e:#}")), None),
        };
        let rec = RowRecord {
            scenario: s.name.clone(),
            repetition,
            variant: s.variant(),
            rev: s.rev.as_ref().map(|r| r.recorded()),
            topology,
            proxy: s.proxy.clone(),
            // The name the scenario file uses ("ssh-terminal", "file"...).
            log: s.log.file_name(),
            server_cpus: s.server_cpus.clone(),
            loadgen_cpus: s.loadgen_cpus.clone(),
            nginx_cpus: s.nginx_cpus(),
            startup_line,
            terminal,
            verified: facts.verified,
            log_file,
            log_file_bytes: stopped.log_file_bytes,
            server_stdout_bytes: stopped.server_stdout_bytes,
            link: stopped.link,
            server: facts.server,
            nginx: facts.nginx,
            loadgen: facts.loadgen,
            server_exit: stopped.server_exit,
            nginx_exit: stopped.nginx_exit,
            loadgen_exit,
            rps,
            counter: facts.counter,
            netem,
            error,
            cpus: facts.cpus,
            command_facts: s.command_facts(),
        };
        (rec, interrupted)
    }
}
