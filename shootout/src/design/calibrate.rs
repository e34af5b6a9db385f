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

use analysis::paired::input::Window;

use crate::config::parse;
use crate::config::scenario::{Design, PairedSettings, Scenario, ScenarioFile, Server};
use crate::design::{paired, Prepared};
use crate::place::placement::Hosts;
use crate::prepare::{build, setup};
use crate::record::comparison::ComparisonRecord;
use crate::record::meta::{self, Meta};
use crate::record::report;

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

/// The calibration as a scenario file, read by the scenario parser like
/// any other (so every default is the parser's): a paired comparison of an
/// A/A row and the positive control against `base`, one worker pinned to
/// CPU 1, loadgen on CPU 0.
fn scenario_file(o: &CalibrateOptions) -> anyhow::Result<ScenarioFile> {
    use toml::{map::Map, Value};
    let row = |name: &str, label: &str| {
        let mut r = Map::new();
        r.insert("name".into(), name.into());
        r.insert("label".into(), label.into());
        r.insert("server".into(), o.server.name().into());
        Value::Table(r)
    };
    let dur = |d: Duration| Value::from(humantime::format_duration(d).to_string());
    let mut paired = Map::new();
    paired.insert("schedule".into(), "duet".into());
    paired.insert("block".into(), dur(o.block));
    paired.insert("settle".into(), dur(o.settle));
    paired.insert("blocks".into(), i64::from(planned_blocks(o)).into());
    paired.insert("seed".into(), 1.into());
    let mut defaults = Map::new();
    defaults.insert("features".into(), vec![Value::from("calibrate")].into());
    defaults.insert("workers".into(), 1.into());
    defaults.insert("connections".into(), i64::from(o.connections).into());
    defaults.insert("server_cpus".into(), "1".into());
    defaults.insert("loadgen_cpus".into(), "0".into());
    let mut t = Map::new();
    t.insert(
        "title".into(),
        "Calibration: resolution of the paired design on this machine".into(),
    );
    t.insert("design".into(), "paired".into());
    t.insert("baseline".into(), "base".into());
    t.insert("paired".into(), Value::Table(paired));
    t.insert("defaults".into(), Value::Table(defaults));
    t.insert(
        "scenario".into(),
        vec![
            row("base", "A (calibrate build, no spin)"),
            row("aa", "A/A: the same build as a second process"),
            row("control", "Positive control: the same build with --spin-ns"),
        ]
        .into(),
    );
    Ok(parse::parse(
        Path::new("calibration.toml"),
        &toml::to_string(&t)?,
    )?)
}

/// Blocks per comparison, planned from `--minutes` before anything runs:
/// half the time each, a block taking its settle and measured part plus
/// about 2 s to start and stop both stacks; even, and at least the least a
/// comparison may plan.
fn planned_blocks(o: &CalibrateOptions) -> u32 {
    let per_block = (o.block + o.settle).as_secs_f64() + 2.0;
    let n = (o.minutes * 60.0 / 2.0 / per_block).floor() as u32;
    (n - n % 2).max(PairedSettings::MIN_BLOCKS)
}

/// What the calibration ran, and where its files go.
struct Setup {
    file: ScenarioFile,
    settings: PairedSettings,
    dir: PathBuf,
    table_dir: PathBuf,
}

/// Checks the options, makes the scenario file and the run directory and
/// writes `table.toml`.
fn set_up(o: &CalibrateOptions) -> anyhow::Result<Setup> {
    if !(o.spin_pct > 0.0 && o.spin_pct < 100.0) {
        bail!("--spin-pct must be between 0 and 100");
    }
    if !(o.minutes > 0.0 && o.minutes <= 60.0) {
        bail!("--minutes must be above 0 and at most 60");
    }
    let file = scenario_file(o)?;
    let Design::Paired(settings) = file.design.clone() else {
        bail!("the calibration file is not paired");
    };
    // Before anything is built or written.
    setup::ensure(&setup::needs_of(&file.scenarios))?;
    std::fs::create_dir_all(&o.out).with_context(|| format!("creating {}", o.out.display()))?;
    let out = std::fs::canonicalize(&o.out)?;
    let dir = out.join(format!("{}-calibration", meta::timestamp()));
    let table_dir = dir.join(&file.name);
    std::fs::create_dir_all(&table_dir)
        .with_context(|| format!("creating {}", table_dir.display()))?;
    report::write_table_toml(&table_dir, &file, &file.scenarios, &file.design)?;
    Ok(Setup {
        file,
        settings,
        dir,
        table_dir,
    })
}

/// Runs the calibration into `<out>/<timestamp>-calibration/`.
pub fn run(o: &CalibrateOptions, stop: &Arc<AtomicBool>) -> anyhow::Result<CalibrateOutcome> {
    let root = build::workspace_root();
    let Setup {
        file,
        settings,
        dir,
        table_dir,
    } = set_up(o)?;
    let [base, aa, control] = file.scenarios.as_slice() else {
        bail!("the calibration file has three rows");
    };
    eprintln!("shootout: building loadgen and {}", base.variant());
    let loadgen = build::loadgen(&root, o.profile)?;
    let bin = build::server(&root, base, o.profile)?;
    let binaries = HashMap::from([(base.variant(), bin)]);
    let hosts = Hosts::here();
    let run = Prepared {
        root: &root,
        dir: &dir,
        table_dir: &table_dir,
        loadgen: &loadgen,
        binaries: &binaries,
        hosts: &hosts,
        stop,
    };
    let ctx = paired::Ctx {
        run: &run,
        settings: &settings,
    };
    let mut meta = Meta::collect(&root, "shootout calibrate");
    meta.design = "paired".into();
    let finish = |meta: &mut Meta, records: &[ComparisonRecord], interrupted: bool| {
        let _ = std::fs::remove_dir_all(dir.join("tmp"));
        meta.paired = records.to_vec();
        meta.interrupted = interrupted;
        meta.write(&dir)?;
        report::analyse(&dir);
        anyhow::Ok(())
    };
    let interrupted = |dir: PathBuf| CalibrateOutcome {
        dir,
        calibration: None,
        interrupted: true,
    };

    let (rec, stopped) = paired::compare(&ctx, base, aa, 0, 1);
    let mut records = vec![rec];
    if stopped.is_some() || records[0].error.is_some() {
        finish(&mut meta, &records, stopped.is_some())?;
        if let Some(e) = &records[0].error {
            bail!("A/A comparison: {e}");
        }
        return Ok(interrupted(dir));
    }
    let aa_windows = read_comparison(&table_dir.join(&aa.name), &mut Vec::new()).windows;
    let cpus: Vec<f64> = aa_windows.iter().filter_map(|w| w.base_cpu_us).collect();
    if cpus.is_empty() {
        bail!("the A/A run measured no server CPU per request");
    }
    let cpu_us = cpus.iter().sum::<f64>() / cpus.len() as f64;
    let mut control = control.clone();
    control.spin_ns = Some((cpu_us * 1000.0 * o.spin_pct / 100.0).round().max(1.0) as u64);
    eprintln!(
        "shootout: server CPU per request {cpu_us:.3} µs: the control spins {} ns",
        control.spin_ns.unwrap_or(0)
    );
    let (rec, stopped) = paired::compare(&ctx, base, &control, 1, 1);
    records.push(rec);
    finish(&mut meta, &records, stopped.is_some())?;
    if let Some(e) = &records[1].error {
        bail!("control comparison: {e}");
    }
    if stopped.is_some() {
        return Ok(interrupted(dir));
    }
    let control_windows = read_comparison(&table_dir.join(&control.name), &mut Vec::new()).windows;
    let spin_ns = control.spin_ns.unwrap_or(0);
    let cal = figures(
        o,
        base,
        &records,
        cpu_us,
        spin_ns,
        &aa_windows,
        &control_windows,
    )?;
    write_json(&dir.join("calibration.json"), &cal)?;
    Ok(CalibrateOutcome {
        dir,
        calibration: Some(cal),
        interrupted: false,
    })
}

/// `calibration.json`'s figures from both comparisons' windows.
#[allow(clippy::too_many_arguments)]
fn figures(
    o: &CalibrateOptions,
    base: &Scenario,
    records: &[ComparisonRecord],
    cpu_us: f64,
    spin_ns: u64,
    aa_windows: &[Window],
    control_windows: &[Window],
) -> anyhow::Result<Calibration> {
    let need =
        |m: Option<Metric>, what: &str| m.with_context(|| format!("too few pairs for {what}"));
    let (aa_rps, aa_cpu) = (
        need(rps_metric(aa_windows), "the A/A 2xx/s ratio")?,
        need(cpu_metric(aa_windows), "the A/A CPU ratio")?,
    );
    let (c_rps, c_cpu) = (
        need(rps_metric(control_windows), "the control 2xx/s ratio")?,
        need(cpu_metric(control_windows), "the control CPU ratio")?,
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
    Ok(Calibration {
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
            spin_ns,
            spin_iters: median_field(&records[1], "spin_iters").map(|v| v.round() as u64),
            spin_ns_per_iter: median_field(&records[1], "spin_ns_per_iter"),
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
    })
}

/// The median of `key`'s value over the row's start-up lines of `rec`.
fn median_field(rec: &ComparisonRecord, key: &str) -> Option<f64> {
    let mut v: Vec<f64> = rec
        .blocks
        .iter()
        .filter_map(|b| b.row_startup_line.as_deref())
        .filter_map(|line| app_core::startup_field(line, key)?.parse().ok())
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
            "server CPU per request ({:.3} µs, spin {} ns = {} iterations): A/A {:.3} ± {:.2} %, control expected {:+.2} %, measured {:+.2} ± {:.2} % (not a second test: with both servers on one core the CPU splits evenly, so it is about the inverse of 2xx/s)",
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
            "target (A/A CI over blocks ≤ 1.0 % and holding 1; control within 1 pp and excluding 1): {}",
            verdict(c.aa.ci95_pct, c.aa.contains_one, c.control.error_pp, c.control.excludes_one),
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
