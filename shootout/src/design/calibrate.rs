//! `shootout calibrate`: what difference can this machine resolve today?
//!
//! Measures, in the paired design, an A/A comparison (one build as two
//! processes) and a positive control: the same build with `--spin-ns N`, N
//! being a set share (2% by default) of the server CPU per request the A/A
//! run measured. Writes `calibration.json` and the paired report.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use analysis::paired::input::read_comparison;
use analysis::paired::report::{cpu_metric, rps_metric, Metric};
use anyhow::{bail, Context};
use serde::Serialize;

use crate::config::scenario::{
    LogSink, PairedSettings, Request, Scenario, Schedule, Server, Topology,
};
use crate::design::paired;
use crate::prepare::build;
use crate::record::comparison::ComparisonRecord;
use crate::record::meta;
use app_core::workers::Workers;

/// How to calibrate.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    pub server: Server,
    /// Measuring time for both comparisons together.
    pub minutes: f64,
    /// The control's added CPU per request, percent of the measured cost.
    pub spin_pct: f64,
    pub block: Duration,
    pub settle: Duration,
    pub connections: u32,
    pub out: PathBuf,
    pub profile: build::Profile,
}

/// A/A figures of one metric.
#[derive(Debug, Clone, Serialize)]
pub struct AaFigures {
    pub ratio: f64,
    pub ci95_pct: f64,
    pub contains_one: bool,
}

/// Control figures of one metric.
#[derive(Debug, Clone, Serialize)]
pub struct ControlFigures {
    pub expected_pct: f64,
    pub measured_pct: f64,
    pub ci95_pct: f64,
    pub excludes_one: bool,
    /// |measured - expected| in percentage points.
    pub error_pp: f64,
}

/// The A/A comparison: RPS at the top, server CPU per request in `cpu`.
#[derive(Debug, Clone, Serialize)]
pub struct Aa {
    pub ratio: f64,
    pub ci95_pct: f64,
    pub contains_one: bool,
    pub cpu: AaFigures,
}

/// The positive control: RPS at the top, server CPU per request in `cpu`.
#[derive(Debug, Clone, Serialize)]
pub struct Control {
    pub spin_ns: u64,
    /// Loop iterations per request, median over the control's server starts.
    pub spin_iters: Option<u64>,
    /// The loop's cost each server measured at start (ns per iteration), median.
    pub spin_ns_per_iter: Option<f64>,
    pub expected_pct: f64,
    pub measured_pct: f64,
    pub ci95_pct: f64,
    pub excludes_one: bool,
    pub error_pp: f64,
    pub cpu: ControlFigures,
}

/// `calibration.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub date: String,
    pub cpu_model: Option<String>,
    pub cores: usize,
    pub kernel: Option<String>,
    pub variant: String,
    pub settings: String,
    /// Server CPU per request the A/A run measured (baseline side), µs.
    pub cpu_us_per_request: f64,
    pub spin_pct: f64,
    pub aa: Aa,
    pub control: Control,
    /// Pairs in both comparisons together.
    pub pairs: usize,
    /// Measuring time of both comparisons together.
    pub seconds: f64,
    pub aa_pairs: usize,
    pub control_pairs: usize,
    pub aa_seconds: f64,
    pub control_seconds: f64,
}

/// What `calibrate` produced.
pub struct CalibrateOutcome {
    pub dir: PathBuf,
    pub calibration: Option<Calibration>,
    pub interrupted: bool,
}

fn scenario(name: &str, label: &str, o: &CalibrateOptions) -> Scenario {
    Scenario {
        name: name.into(),
        label: label.into(),
        server: o.server,
        features: vec!["calibrate".into()],
        workers: Some(Workers::Count(std::num::NonZeroUsize::MIN)),
        backlog: 1024,
        topology: Topology::Loopback,
        link_delay: None,
        proxy: None,
        nginx_workers: 1,
        log: LogSink::None,
        log_level: "info".into(),
        request: Request::Post,
        connections: o.connections,
        threads: 1,
        duration: o.block,
        warmup: o.settle,
        interval: Duration::from_secs(1),
        rate: None,
        server_cpus: Some("1".into()),
        loadgen_cpus: Some("0".into()),
        repetitions: 1,
        libc: crate::config::scenario::Libc::Glibc,
        spin_ns: None,
        client_timeout: None,
        hosts: None,
        original: None,
    }
}

/// Runs the calibration into `<out>/<timestamp>-calibration/`.
pub fn run(o: &CalibrateOptions, stop: &Arc<AtomicBool>) -> anyhow::Result<CalibrateOutcome> {
    if !(o.spin_pct > 0.0 && o.spin_pct < 100.0) {
        bail!("--spin-pct must be between 0 and 100");
    }
    if !(o.minutes > 0.0 && o.minutes <= 60.0) {
        bail!("--minutes must be above 0 and at most 60");
    }
    let root = build::workspace_root();
    // Before anything is built or written.
    crate::prepare::setup::ensure(&crate::prepare::setup::needs_of([&scenario("base", "", o)]))?;
    std::fs::create_dir_all(&o.out).with_context(|| format!("creating {}", o.out.display()))?;
    let out = std::fs::canonicalize(&o.out)?;
    let dir = out.join(format!("{}-calibration", meta::timestamp()));
    let table_dir = dir.join("calibration");
    std::fs::create_dir_all(&table_dir)
        .with_context(|| format!("creating {}", table_dir.display()))?;
    let base = scenario("base", "A (calibrate build, no spin)", o);
    let aa = scenario("aa", "A/A: the same build as a second process", o);
    let mut control = scenario(
        "control",
        "Positive control: the same build with --spin-ns",
        o,
    );
    let table = format!(
        "title = \"Calibration: resolution of the paired design on this machine\"\ndesign = \"paired\"\nbaseline = \"base\"\n\n[[row]]\nname = \"base\"\nlabel = \"{}\"\n\n[[row]]\nname = \"aa\"\nlabel = \"{}\"\n\n[[row]]\nname = \"control\"\nlabel = \"{}\"\n",
        base.label, aa.label, control.label
    );
    std::fs::write(table_dir.join("table.toml"), table)?;

    eprintln!("shootout: building loadgen and {}", base.variant());
    let loadgen = build::loadgen(&root, o.profile)?;
    let bin = build::server(&root, &base, o.profile)?;
    let binaries = HashMap::from([(base.variant(), bin)]);
    let half = Duration::from_secs_f64(o.minutes * 60.0 / 2.0);
    let settings = PairedSettings {
        schedule: Schedule::Duet,
        block: o.block,
        settle: o.settle,
        budget: half,
        // Calibration measures for its whole budget: its width is the answer.
        target_ci_pct: 0.0,
        min_blocks: 2,
        seed: 1,
    };
    let ctx = paired::Ctx {
        root: &root,
        loadgen_bin: &loadgen,
        binaries: &binaries,
        table_dir: &table_dir,
        tmp: dir.join("tmp"),
        settings: &settings,
        stop,
        remote: None,
    };
    let mut records: Vec<ComparisonRecord> = Vec::new();
    let finish = |records: &[ComparisonRecord], interrupted: bool| -> anyhow::Result<()> {
        let _ = std::fs::remove_dir_all(dir.join("tmp"));
        let mut m = serde_json::json!({
            "design": "paired",
            "command": "shootout calibrate",
            "comparisons": records,
            "interrupted": interrupted,
        });
        m["git_sha"] = serde_json::json!(meta::output(
            "git",
            &["-C", &root.display().to_string(), "rev-parse", "HEAD"]
        ));
        write_json(&dir.join("meta.json"), &m)?;
        crate::record::report::analyse(&dir);
        Ok(())
    };

    let (rec, stopped) = paired::compare(&ctx, &base, &aa, 0);
    let failed = rec.error.clone();
    records.push(rec);
    if stopped.is_some() || failed.is_some() {
        finish(&records, stopped.is_some())?;
        if let Some(e) = failed {
            bail!("A/A comparison: {e}");
        }
        return Ok(CalibrateOutcome {
            dir,
            calibration: None,
            interrupted: true,
        });
    }
    let aa_windows = read_comparison(&table_dir.join("aa"), &mut Vec::new()).windows;
    let cpus: Vec<f64> = aa_windows.iter().filter_map(|w| w.base_cpu_us).collect();
    if cpus.is_empty() {
        bail!("the A/A run measured no server CPU per request");
    }
    let cpu_us = cpus.iter().sum::<f64>() / cpus.len() as f64;
    control.spin_ns = Some((cpu_us * 1000.0 * o.spin_pct / 100.0).round().max(1.0) as u64);
    eprintln!(
        "shootout: server CPU per request {cpu_us:.3} µs: the control spins {} ns",
        control.spin_ns.unwrap_or(0)
    );
    let (rec, stopped) = paired::compare(&ctx, &base, &control, 1);
    let failed = rec.error.clone();
    records.push(rec);
    finish(&records, stopped.is_some())?;
    if let Some(e) = failed {
        bail!("control comparison: {e}");
    }
    if stopped.is_some() {
        return Ok(CalibrateOutcome {
            dir,
            calibration: None,
            interrupted: true,
        });
    }
    let control_windows = read_comparison(&table_dir.join("control"), &mut Vec::new()).windows;
    let need =
        |m: Option<Metric>, what: &str| m.with_context(|| format!("too few pairs for {what}"));
    let (aa_rps, aa_cpu) = (
        need(rps_metric(&aa_windows), "the A/A 2xx/s ratio")?,
        need(cpu_metric(&aa_windows), "the A/A CPU ratio")?,
    );
    let (c_rps, c_cpu) = (
        need(rps_metric(&control_windows), "the control 2xx/s ratio")?,
        need(cpu_metric(&control_windows), "the control CPU ratio")?,
    );
    let p = o.spin_pct / 100.0;
    let control_fig = |m: &Metric, expected_pct: f64| ControlFigures {
        expected_pct,
        measured_pct: (m.ratio - 1.0) * 100.0,
        ci95_pct: m.ci95_pct,
        excludes_one: !m.ci.contains_one(),
        error_pp: ((m.ratio - 1.0) * 100.0 - expected_pct).abs(),
    };
    let rps_c = control_fig(&c_rps, (1.0 / (1.0 + p) - 1.0) * 100.0);
    let cpu_c = control_fig(&c_cpu, p * 100.0);
    let (aa_s, c_s) = (records[0].seconds, records[1].seconds);
    let cal = Calibration {
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        cpu_model: meta::cpu_model(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|s| s.trim().to_string()),
        variant: base.variant(),
        settings: records[0].settings.clone(),
        cpu_us_per_request: cpu_us,
        spin_pct: o.spin_pct,
        aa: Aa {
            ratio: aa_rps.ratio,
            ci95_pct: aa_rps.ci95_pct,
            contains_one: aa_rps.ci.contains_one(),
            cpu: AaFigures {
                ratio: aa_cpu.ratio,
                ci95_pct: aa_cpu.ci95_pct,
                contains_one: aa_cpu.ci.contains_one(),
            },
        },
        control: Control {
            spin_ns: control.spin_ns.unwrap_or(0),
            spin_iters: median_field(&records[1], "spin_iters=").map(|v| v.round() as u64),
            spin_ns_per_iter: median_field(&records[1], "spin_ns_per_iter="),
            expected_pct: rps_c.expected_pct,
            measured_pct: rps_c.measured_pct,
            ci95_pct: rps_c.ci95_pct,
            excludes_one: rps_c.excludes_one,
            error_pp: rps_c.error_pp,
            cpu: cpu_c,
        },
        pairs: aa_windows.len() + control_windows.len(),
        seconds: aa_s + c_s,
        aa_pairs: aa_windows.len(),
        control_pairs: control_windows.len(),
        aa_seconds: aa_s,
        control_seconds: c_s,
    };
    write_json(&dir.join("calibration.json"), &cal)?;
    Ok(CalibrateOutcome {
        dir,
        calibration: Some(cal),
        interrupted: false,
    })
}

/// The median of `key`'s value over the row's start-up lines of `rec`.
fn median_field(rec: &ComparisonRecord, key: &str) -> Option<f64> {
    let mut v: Vec<f64> = rec
        .blocks
        .iter()
        .filter_map(|b| b.row_startup_line.as_deref())
        .filter_map(|line| {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(key))
                .and_then(|x| x.parse().ok())
        })
        .collect();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[v.len() / 2])
}

/// The lines `shootout calibrate` prints.
pub fn summary_lines(c: &Calibration) -> Vec<String> {
    let minutes = c.seconds / 60.0;
    vec![
        format!(
            "resolution on this machine: A/A {:.3} ± {:.2} %, control expected {:+.2} %, measured {:+.2} ± {:.2} % ({} pairs, {minutes:.1} min)",
            c.aa.ratio, c.aa.ci95_pct, c.control.expected_pct, c.control.measured_pct, c.control.ci95_pct, c.pairs
        ),
        format!(
            "server CPU per request ({:.3} µs, spin {} ns = {} iterations): A/A {:.3} ± {:.2} %, control expected {:+.2} %, measured {:+.2} ± {:.2} %",
            c.cpu_us_per_request,
            c.control.spin_ns,
            c.control.spin_iters.map_or("?".into(), |i| i.to_string()),
            c.aa.cpu.ratio,
            c.aa.cpu.ci95_pct,
            c.control.cpu.expected_pct,
            c.control.cpu.measured_pct,
            c.control.cpu.ci95_pct
        ),
        format!(
            "targets (A/A CI ≤ 1.0 % and holding 1; control within 1 pp and excluding 1): 2xx/s {}, CPU per request {}",
            verdict(c.aa.ci95_pct, c.aa.contains_one, c.control.error_pp, c.control.excludes_one),
            verdict(
                c.aa.cpu.ci95_pct,
                c.aa.cpu.contains_one,
                c.control.cpu.error_pp,
                c.control.cpu.excludes_one
            ),
        ),
    ]
}

fn verdict(aa_ci: f64, aa_one: bool, err_pp: f64, excludes: bool) -> &'static str {
    if aa_ci <= 1.0 && aa_one && err_pp <= 1.0 && excludes {
        "met"
    } else {
        "missed"
    }
}

fn write_json(path: &Path, v: &impl Serialize) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let mut bytes = serde_json::to_vec_pretty(v)?;
    bytes.push(b'\n');
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}
