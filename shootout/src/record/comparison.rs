//! What meta.json keeps about a paired comparison and each of its blocks.
//! The analysis reads these fields; their names and order are the format.

use serde::Serialize;

use crate::check::counter::CounterCheck;
use crate::config::scenario::{PairedSettings, Scenario, Spread};
use crate::place::affinity::ReadCpus;

/// One block, as meta.json keeps it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BlockRecord {
    pub block: u32,
    pub order: String,
    pub row_startup_line: Option<String>,
    pub base_startup_line: Option<String>,
    /// The terminal emulators the servers ran in (`log = "xterm"` rows).
    pub row_terminal: Option<String>,
    pub base_terminal: Option<String>,
    pub row_counter: Option<CounterCheck>,
    pub base_counter: Option<CounterCheck>,
    pub row_loadgen_exit: Option<i32>,
    pub base_loadgen_exit: Option<i32>,
    pub row_server_exit: Option<i32>,
    pub base_server_exit: Option<i32>,
    /// What the slow clients beside a side's load met (`slow_clients` rows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_slow: Option<loadgen::SlowRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_slow: Option<loadgen::SlowRecord>,
    /// What each side's shaped ssh link carried (ssh-terminal rows with
    /// `link_rate`): bytes on the wire ÷ `acknowledged` is bytes per answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_link: Option<crate::place::ssh_terminal::LinkStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_link: Option<crate::place::ssh_terminal::LinkStats>,
    /// Where each side's processes ran: every thread's CPUs as read from
    /// its host's /proc (server and nginx once started, loadgen once the
    /// load began), beside the CPUs the scenario gives each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub row_cpus: Vec<ReadCpus>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub base_cpus: Vec<ReadCpus>,
    pub seconds: f64,
    pub error: Option<String>,
}

/// One comparison, as meta.json keeps it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ComparisonRecord {
    pub row: String,
    pub baseline: String,
    pub row_variant: String,
    pub base_variant: String,
    /// The commits the row's and the base's twins were built at (`rev`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_rev: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_rev: Option<String>,
    pub server_cpus: Option<String>,
    pub loadgen_cpus: Option<String>,
    /// nginx's CPUs on the row and the base, where they have nginx.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_nginx_cpus: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_nginx_cpus: Option<String>,
    /// `pinned`, or `free` where a side leaves a process to the scheduler
    /// (`placement = "free"`): its answer is marked so.
    pub placement: String,
    /// The row's load (`post, 256 connections, 1 thread, loopback`).
    pub load: String,
    pub settings: String,
    pub blocks: Vec<BlockRecord>,
    pub pairs: usize,
    pub seconds: f64,
    /// `blocks` (all planned blocks ran), `interrupted` or `error`.
    pub stopped_by: String,
    pub rps_ratio: Option<f64>,
    pub rps_ci95_pct: Option<f64>,
    pub cpu_ratio: Option<f64>,
    pub cpu_ci95_pct: Option<f64>,
    pub netem: Option<String>,
    pub error: Option<String>,
    /// Which run of a repeated comparison (`runs = N`); absent when it ran once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<u32>,
    /// Each side's log sink and placement as the scenario file sets them
    /// (`shootout sink-law` joins served rows to drain rates by them).
    pub row_sink: SinkRecord,
    pub base_sink: SinkRecord,
}

/// A side's log sink, as the scenario file names it, and whether nginx is
/// in front.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SinkRecord {
    /// `actix` or `ntex` (the drain run's rows name their server so).
    pub server: String,
    /// `none`, `file`, `pipe`, `terminal`, `xterm`, `alacritty`,
    /// `ssh-terminal`.
    pub log: String,
    pub log_level: String,
    /// Whether the build logs to stdout (the `log-stdout` feature).
    pub log_stdout: bool,
    /// `ssh-terminal`: what takes the session's output here.
    pub drawn: Option<crate::config::scenario::Drawn>,
    /// `ssh-terminal`: the stand-in link's shaped rate for ssh, bits/s.
    pub link_rate_bps: Option<u64>,
    /// `Some(false)` where the row turned xterm's jump scroll off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jump_scroll: Option<bool>,
    pub proxy: Option<String>,
    /// The row's remote server host (its sink is there, but for an ssh
    /// terminal's, which is here); none here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_host: Option<String>,
    /// Where the reader of a pipe or pty runs (`Scenario::sink_cpus`: the
    /// runner's thread here, `cat` or `script` on a remote server host,
    /// the ssh client here of an ssh terminal drained here); none where
    /// nothing reads the sink or the row leaves it to the scheduler.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_cpus: Option<String>,
    /// Where the sshd process serving an ssh terminal's session runs on
    /// the server's host (`sshd_cpus`); none where the row leaves it to
    /// the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sshd_cpus: Option<String>,
    /// A command row's command, checks and CPU source (none for a twin's).
    #[serde(flatten)]
    pub command_facts: analysis::placement::CommandFacts,
}

impl SinkRecord {
    pub fn of(s: &Scenario) -> SinkRecord {
        SinkRecord {
            server: s.server_name(),
            log: s.log.file_name(),
            log_level: s.log_level.clone(),
            log_stdout: s.features.iter().any(|f| f == "log-stdout"),
            drawn: s.ssh_terminal.as_ref().map(|t| t.terminal),
            link_rate_bps: s.ssh_terminal.as_ref().and_then(|t| t.link_rate_bps),
            jump_scroll: jump_scroll_off(s),
            proxy: s.proxy.clone(),
            server_host: s.hosts.as_ref().map(|h| h.server.clone()),
            reader_cpus: s.sink_cpus(),
            sshd_cpus: s.sshd_cpus.clone(),
            command_facts: s.command_facts(),
        }
    }
}

/// `Some(false)` where xterm draws row `s`'s stdout with jump scroll off;
/// none otherwise (the records of earlier runs, and every other row).
pub fn jump_scroll_off(s: &Scenario) -> Option<bool> {
    match crate::stack::emulator::Kind::of(s) {
        Some(crate::stack::emulator::Kind::Xterm { jump_scroll: false }) => Some(false),
        _ => None,
    }
}

impl ComparisonRecord {
    /// `2xx/s 0.9981 ± 0.41%, CPU/request 1.0030 ± 0.38% (96 pairs)`.
    pub fn progress(&self) -> String {
        let m = |r: Option<f64>, ci: Option<f64>| match (r, ci) {
            (Some(r), Some(ci)) => format!("{r:.4} ± {ci:.2}%"),
            _ => "n/a".into(),
        };
        format!(
            "2xx/s {}, CPU/request {} ({} pairs)",
            m(self.rps_ratio, self.rps_ci95_pct),
            m(self.cpu_ratio, self.cpu_ci95_pct),
            self.pairs
        )
    }
}

/// What one side of a block reached, as far as it got.
#[derive(Debug, Default)]
pub struct SideFacts {
    pub startup_line: Option<String>,
    pub terminal: Option<String>,
    pub counter: Option<CounterCheck>,
    pub loadgen_exit: Option<i32>,
    pub server_exit: Option<i32>,
    pub slow: Option<loadgen::SlowRecord>,
    pub link: Option<crate::place::ssh_terminal::LinkStats>,
    pub cpus: Vec<ReadCpus>,
}

impl BlockRecord {
    /// The record of block `block` from what its row and base sides reached.
    pub fn build(
        block: u32,
        order: &str,
        row: SideFacts,
        base: SideFacts,
        seconds: f64,
        error: Option<String>,
    ) -> BlockRecord {
        BlockRecord {
            block,
            order: order.into(),
            row_startup_line: row.startup_line,
            base_startup_line: base.startup_line,
            row_terminal: row.terminal,
            base_terminal: base.terminal,
            row_counter: row.counter,
            base_counter: base.counter,
            row_loadgen_exit: row.loadgen_exit,
            base_loadgen_exit: base.loadgen_exit,
            row_server_exit: row.server_exit,
            base_server_exit: base.server_exit,
            row_slow: row.slow,
            base_slow: base.slow,
            row_link: row.link,
            base_link: base.link,
            row_cpus: row.cpus,
            base_cpus: base.cpus,
            seconds,
            error,
        }
    }
}

impl ComparisonRecord {
    /// A comparison of `row` against `base` with settings `p`, before any block.
    pub fn new(base: &Scenario, row: &Scenario, p: &PairedSettings) -> ComparisonRecord {
        ComparisonRecord {
            row: row.name.clone(),
            baseline: base.name.clone(),
            row_variant: row.variant(),
            base_variant: base.variant(),
            row_rev: row.rev.as_ref().map(|r| r.recorded()),
            base_rev: base.rev.as_ref().map(|r| r.recorded()),
            server_cpus: row.server_cpus.clone(),
            loadgen_cpus: row.loadgen_cpus.clone(),
            row_nginx_cpus: row.nginx_cpus(),
            base_nginx_cpus: base.nginx_cpus(),
            placement: if row.placement_free || base.placement_free {
                "free"
            } else {
                "pinned"
            }
            .into(),
            load: row.load_text(),
            settings: format!(
                "{}, {} runs of {} blocks of {}, settle {}, seed {}{}",
                p.schedule_text(),
                p.runs,
                p.blocks,
                humantime::format_duration(p.block),
                humantime::format_duration(p.settle),
                p.seed,
                match p.spread {
                    Spread::Comparison => "",
                    Spread::Sitting => ", blocks spread over the sitting",
                }
            )
            .to_lowercase(),
            row_sink: SinkRecord::of(row),
            base_sink: SinkRecord::of(base),
            ..ComparisonRecord::default()
        }
    }
}
