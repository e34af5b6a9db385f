//! `differential`: the twins against each other on generated raw requests
//! (see `conformance::fuzz`). Starts both with default features and one
//! worker, plays the cases, and prints the differences, the final counts and
//! how the servers ended. Exit 1 on any difference, crash or count mismatch.
//!
//!     cargo run --release -p conformance --bin differential -- --requests 100000

use std::process::ExitCode;
use std::time::Instant;

use conformance::{fuzz, Server};

/// A line on stdout; a closed stdout (`| head`) ends nothing early: the
/// servers are still stopped and the exit status still says what was found.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// The twins against each other on generated raw requests.
#[derive(Debug, clap::Parser)]
#[command(name = "differential")]
struct Args {
    /// Generated requests, each on a fresh connection to both twins.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    requests: u64,
    /// Seed of the generator (the same seed gives the same requests).
    #[arg(long, default_value_t = 27)]
    seed: u64,
    /// Client threads playing cases at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: u64,
}

fn main() -> ExitCode {
    let Args {
        requests,
        seed,
        threads,
    } = match <Args as clap::Parser>::try_parse() {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("bad arguments");
            eprintln!("differential: {}", first.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let cases = fuzz::generate(seed, requests as usize);
    let (actix, ntex) = fuzz::start_twins();
    let report = fuzz::run(actix.addr, ntex.addr, &cases, threads as usize);
    let count = |s: &Server| {
        s.conn()
            .get()
            .map(|r| r.text())
            .unwrap_or_else(|e| format!("<{e}>"))
    };
    let (ca, cn) = (count(&actix), count(&ntex));
    let (ea, en) = (actix.stop(), ntex.stop());
    say!(
        "{} cases (seed {seed}) on both twins in {:.0} s; {} differences",
        report.cases,
        started.elapsed().as_secs_f64(),
        report.differences.len()
    );
    for (kind, n) in &report.by_kind {
        let d = report
            .differences
            .iter()
            .filter(|d| &d.case.kind == kind)
            .count();
        say!("  {kind:<32} {n:>7} cases, {d} differ");
    }
    let classes = report.classes();
    for (class, ds) in &classes {
        say!("  class {class:<24} {} differences", ds.len());
    }
    let shown: Vec<&fuzz::Difference> = classes
        .values()
        .flat_map(|ds| {
            ds.iter()
                .take(if std::env::var_os("DIFF_ALL").is_some() {
                    1000
                } else {
                    3
                })
                .copied()
        })
        .collect();
    for d in shown {
        say!(
            "case {} ({}, class {}): {:?}\n  actix: {:?}\n  ntex:  {:?}",
            d.case.n,
            d.case.kind,
            fuzz::classify(d),
            String::from_utf8_lossy(&d.case.bytes[..d.case.bytes.len().min(200)]),
            d.actix,
            d.ntex
        );
    }
    say!("final count: actix {ca}, ntex {cn}");
    say!("exit: actix {:?}, ntex {:?}", ea.status, en.status);
    let ok =
        report.differences.is_empty() && ca == cn && ea.status.success() && en.status.success();
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
