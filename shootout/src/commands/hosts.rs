//! `shootout hosts FILE`: connects to and checks every remote host of a
//! file, as a run's first stage will, and prints what it found.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;

use super::{report_error, BuildArgs};
use crate::config::hosts;
use crate::place::connect::{self, Checked};
use crate::prepare::build;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    file: PathBuf,
    /// Build profile of the loadgen uploaded.
    #[command(flatten)]
    build: BuildArgs,
}

pub(super) fn run(a: Args) -> ExitCode {
    match check_file(&a) {
        Ok(table) => {
            print!("{table}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            report_error(&e);
            ExitCode::FAILURE
        }
    }
}

/// Builds loadgen, checks every host, and returns the table to print.
fn check_file(a: &Args) -> anyhow::Result<String> {
    let Some(remote) = hosts::load(&a.file)? else {
        bail!("{}: no [ssh] and [hosts.NAME] tables", a.file.display());
    };
    let loadgen = build::loadgen(
        &build::workspace_root(),
        a.build.profile(),
        &super::stop_flag(),
    )?;
    Ok(table(&connect::check(&remote, &loadgen)?))
}

/// The table `shootout hosts` prints.
fn table(checked: &[Checked]) -> String {
    let mut out = String::from(
        "host      role    address          arch     cores  kernel                    clock offset (rtt)   loadgen\n",
    );
    for c in checked {
        let role = format!("{:?}", c.role).to_lowercase();
        let loadgen = match &c.loadgen {
            Some((path, true)) => format!("copied to {path}"),
            Some((path, false)) => format!("already at {path}"),
            None => "-".into(),
        };
        out.push_str(&format!(
            "{:<9} {:<7} {:<16} {:<8} {:>5}  {:<25} {:>+8.2} ms ({:.2} ms)   {loadgen}\n",
            c.name,
            role,
            c.address,
            c.preflight.arch,
            c.preflight.cores,
            c.preflight.kernel,
            c.clock.offset_ms,
            c.clock.rtt_ms,
        ));
    }
    out
}
