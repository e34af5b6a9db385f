//! `shootout calibrate`: what difference can this machine resolve today,
//! and how does the duet read an effect against the server alone on its core?
//!
//! Measures, in the paired design's interleaved schedule (each server alone
//! on its core while it is measured), an A/A comparison (one build as two
//! processes) and a positive control at each size: the same build with
//! `--spin-ns N`, N being a set share of the server CPU per request the A/A
//! run measured (1 % and 4 % by default). Each control is measured again in
//! the duet (both servers sharing the core), so `calibration.json` states
//! per size the alone effect, the duet's raw effect, what the tool reports
//! (the interleaved figure: no correction is applied) and the duet's
//! amplification (measured / alone). Writes the paired reports of both
//! schedules as two tables.

use crate::record::progress::Progress;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use analysis::paired::input::read_comparison;
use analysis::paired::report::{cpu_metric, rps_metric, Metric};
use analysis::paired::stats::{self, log_ratio_ci};
use anyhow::{bail, Context};
use serde::Serialize;

use crate::config::parse;
use crate::config::scenario::{Design, PairedSettings, Scenario, ScenarioFile, Schedule, Server};
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
    /// Measuring time for every comparison together.
    pub minutes: f64,
    /// The controls' added CPU per request, percent of the measured cost.
    pub sizes: Vec<f64>,
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

/// The A/A comparison (interleaved): 2xx/s at the top, server CPU per
/// request in `cpu`.
#[derive(Debug, Clone, Serialize)]
pub struct Aa {
    pub ratio: f64,
    pub ci95_pct: f64,
    pub contains_one: bool,
    pub cpu: AaFigures,
}

/// One control size. Effects are on 2xx/s, in percent, with 95 % intervals
/// over blocks.
#[derive(Debug, Clone, Serialize)]
pub struct ControlSize {
    /// The spin set, percent of the A/A's server CPU per request (nominal:
    /// the loop's real cost per request is what `alone_cpu_pct` shows).
    pub set_pct: f64,
    pub spin_ns: u64,
    /// Loop iterations per request, median over the control's server starts.
    pub spin_iters: Option<u64>,
    /// The loop's cost each server measured at start (ns per iteration), median.
    pub spin_ns_per_iter: Option<f64>,
    /// Interleaved schedule: the effect with the server alone on its core.
    pub alone_pct: f64,
    pub alone_ci95_pct: [f64; 2],
    /// Its effect on server CPU per request.
    pub alone_cpu_pct: f64,
    /// Duet (both servers sharing the core): the raw paired effect.
    pub measured_pct: f64,
    pub measured_ci95_pct: [f64; 2],
    /// What the tool reports: the interleaved figure, uncorrected.
    pub reported_pct: f64,
    pub ci95_pct: [f64; 2],
    pub excludes_zero: bool,
    /// Duet effect / alone effect (ln ratios), delta-method 95 % interval.
    pub amplification: f64,
    pub amplification_ci95: [f64; 2],
}

/// The duet's amplification over every size: Σ ln(duet) / Σ ln(alone),
/// delta-method 95 % interval.
#[derive(Debug, Clone, Serialize)]
pub struct Amplification {
    pub value: f64,
    pub ci95_pct: [f64; 2],
}

/// `calibration.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub date: String,
    pub cpu_model: Option<String>,
    pub cores: usize,
    pub kernel: Option<String>,
    pub variant: String,
    /// The interleaved comparisons' settings (the duet's differ only in
    /// schedule).
    pub settings: String,
    /// Server CPU per request the A/A run measured (baseline side), µs.
    pub cpu_us_per_request: f64,
    pub aa: Aa,
    pub controls: Vec<ControlSize>,
    pub amplification: Amplification,
    /// Pairs in every comparison together.
    pub pairs: usize,
    /// Measuring time of every comparison together.
    pub seconds: f64,
}

/// What `calibrate` produced.
pub struct CalibrateOutcome {
    pub dir: PathBuf,
    pub calibration: Option<Calibration>,
    pub interrupted: bool,
}

/// The interleaved table's directory in the run (the duet's adds `-duet`).
const TABLE: &str = "calibration";

/// A control row's name at size `pct`: `control-1`, `control-0.5`.
fn control_name(pct: f64) -> String {
    format!("control-{pct}")
}

/// The calibration as a scenario file, read by the scenario parser like
/// any other (so every default is the parser's): a paired comparison of an
/// A/A row and the positive controls against `base`, interleaved, one
/// worker pinned to CPU 1, loadgen on CPU 0.
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
    paired.insert("schedule".into(), "interleave".into());
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
        "Calibration: resolution and accuracy of the paired design on this machine".into(),
    );
    t.insert("design".into(), "paired".into());
    t.insert("baseline".into(), "base".into());
    t.insert("paired".into(), Value::Table(paired));
    t.insert("defaults".into(), Value::Table(defaults));
    let mut rows = vec![
        row("base", "A (calibrate build, no spin)"),
        row("aa", "A/A: the same build as a second process"),
    ];
    for &pct in &o.sizes {
        let label = format!("Positive control: --spin-ns set to {pct} % of a request");
        rows.push(row(&control_name(pct), &label));
    }
    t.insert("scenario".into(), rows.into());
    Ok(parse::parse(
        Path::new(&format!("{TABLE}.toml")),
        &toml::to_string(&t)?,
    )?)
}

/// Blocks per comparison, planned from `--minutes` before anything runs:
/// the time split evenly over the comparisons (the A/A, and each control
/// interleaved and in the duet), a block taking its settle and measured
/// part plus about 2 s to start and stop both stacks; even, and at least
/// the least a comparison may plan.
fn planned_blocks(o: &CalibrateOptions) -> u32 {
    let comparisons = 1 + 2 * o.sizes.len();
    let per_block = (o.block + o.settle).as_secs_f64() + 2.0;
    let n = (o.minutes * 60.0 / comparisons as f64 / per_block).floor() as u32;
    (n - n % 2).max(PairedSettings::MIN_BLOCKS)
}

/// What the calibration ran, and where its files go.
struct Setup {
    file: ScenarioFile,
    settings: PairedSettings,
    dir: PathBuf,
    /// The interleaved table, and the duet's.
    table_dir: PathBuf,
    duet_dir: PathBuf,
}

/// Checks the options, makes the scenario file and the run directory and
/// writes both tables' `table.toml`.
fn set_up(o: &CalibrateOptions) -> anyhow::Result<Setup> {
    if o.sizes.is_empty() || o.sizes.iter().any(|&p| !(p > 0.0 && p < 100.0)) {
        bail!("--spin-pct takes sizes between 0 and 100 (percent), for example 1,4");
    }
    let mut sorted = o.sizes.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    if sorted.len() != o.sizes.len() {
        bail!("--spin-pct lists a size twice");
    }
    if !(o.minutes > 0.0 && o.minutes <= 120.0) {
        bail!("--minutes must be above 0 and at most 120");
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
    let table_dir = dir.join(TABLE);
    let duet_dir = dir.join(format!("{TABLE}-duet"));
    let duet = Design::Paired(PairedSettings {
        schedule: Schedule::Duet,
        ..settings.clone()
    });
    let mut duet_file = file.clone();
    duet_file.title = format!("{} (duet: both servers sharing the core)", file.title);
    let duet_rows: Vec<Scenario> = file
        .scenarios
        .iter()
        .filter(|s| s.name != "aa")
        .cloned()
        .collect();
    for (d, f, rows, design) in [
        (&table_dir, &file, &file.scenarios[..], &file.design),
        (&duet_dir, &duet_file, &duet_rows[..], &duet),
    ] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        // The controls' spin is set once the A/A has measured a request's
        // cost, so their rows look like the baseline here: name the A/A.
        report::write_table_toml(d, f, rows, design, Some(&["aa"]))?;
    }
    Ok(Setup {
        file,
        settings,
        dir,
        table_dir,
        duet_dir,
    })
}

/// One comparison's figures on 2xx/s and CPU per request.
struct Figures {
    rps: Metric,
    cpu: Metric,
    pairs: usize,
}

/// Reads comparison `name` of `table_dir`.
fn figures_of(table_dir: &Path, name: &str) -> anyhow::Result<Figures> {
    let windows = read_comparison(&table_dir.join(name), &mut Vec::new()).windows;
    Ok(Figures {
        rps: rps_metric(&windows).with_context(|| format!("too few pairs for {name}'s 2xx/s"))?,
        cpu: cpu_metric(&windows).with_context(|| format!("too few pairs for {name}'s CPU"))?,
        pairs: windows.len(),
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
        duet_dir,
    } = set_up(o)?;
    let [base, aa, controls @ ..] = file.scenarios.as_slice() else {
        bail!("the calibration file has an A/A row and controls");
    };
    eprintln!("shootout: building loadgen and {}", base.variant());
    let loadgen = build::loadgen(&root, o.profile, stop)?;
    let bin = build::server(&root, base, o.profile, stop)?;
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
    let duet_run = Prepared {
        table_dir: &duet_dir,
        ..run
    };
    let duet_settings = PairedSettings {
        schedule: Schedule::Duet,
        ..settings.clone()
    };
    let interleaved = paired::Ctx {
        run: &run,
        settings: &settings,
        progress: Progress::lines(),
    };
    let duet = paired::Ctx {
        run: &duet_run,
        settings: &duet_settings,
        progress: Progress::lines(),
    };
    let mut meta = Meta::collect(&root, "shootout calibrate");
    meta.design = "paired".into();
    let mut records: Vec<ComparisonRecord> = Vec::new();
    // Every comparison goes through here: its record is kept, and the run
    // ends (meta.json and the reports written) on an error or Ctrl-C.
    let mut compare = |ctx: &paired::Ctx, row: &Scenario, index: usize| {
        let (rec, stopped) = paired::compare(ctx, base, row, index, 1, &mut |_| {});
        let failed = rec.error.clone();
        records.push(rec);
        if stopped.is_some() || failed.is_some() {
            let _ = std::fs::remove_dir_all(dir.join("tmp"));
            meta.paired = records.clone();
            meta.interrupted = stopped.is_some();
            meta.write(&dir)?;
            analysis::input::raw::pack(&dir)?;
            report::analyse(&dir)?;
            if let Some(e) = failed {
                bail!("{} comparison: {e}", row.name);
            }
            return Ok(false);
        }
        anyhow::Ok(true)
    };
    let interrupted = |dir: PathBuf| CalibrateOutcome {
        dir,
        calibration: None,
        interrupted: true,
    };

    if !compare(&interleaved, aa, 0)? {
        return Ok(interrupted(dir.clone()));
    }
    let cpu_us = aa_cpu_us(&table_dir.join(&aa.name))?;
    for (i, (c, &pct)) in controls.iter().zip(&o.sizes).enumerate() {
        let mut c = c.clone();
        c.spin_ns = Some(spin_ns(cpu_us, pct));
        eprintln!(
            "shootout: server CPU per request {cpu_us:.3} µs: {} spins {} ns",
            c.name,
            c.spin_ns.unwrap_or(0)
        );
        for (ctx, index) in [(&interleaved, 1 + 2 * i), (&duet, 2 + 2 * i)] {
            if !compare(ctx, &c, index)? {
                return Ok(interrupted(dir.clone()));
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir.join("tmp"));
    meta.paired = records.clone();
    meta.write(&dir)?;
    analysis::input::raw::pack(&dir)?;
    report::analyse(&dir)?;
    let cal = recompute(&dir)?;
    write_json(&dir.join("calibration.json"), &cal)?;
    Ok(CalibrateOutcome {
        dir,
        calibration: Some(cal),
        interrupted: false,
    })
}

fn pct(x: f64) -> f64 {
    (x - 1.0) * 100.0
}

fn pct_ci(m: &Metric) -> [f64; 2] {
    [pct(m.ci.lo), pct(m.ci.hi)]
}

/// ln of a metric's ratio and its standard error, from its 95 % t interval
/// over blocks.
fn log_and_se(m: &Metric) -> (f64, f64) {
    stats::log_and_se(&m.ci, (m.blocks.max(2) - 1) as f64)
}

/// The server CPU per request (µs) the A/A comparison measured on its
/// baseline side: what the controls' spins are sized from.
fn aa_cpu_us(aa_dir: &Path) -> anyhow::Result<f64> {
    let windows = read_comparison(aa_dir, &mut Vec::new()).windows;
    let cpus: Vec<f64> = windows.iter().filter_map(|w| w.base_cpu_us).collect();
    if cpus.is_empty() {
        bail!("the A/A run measured no server CPU per request");
    }
    Ok(cpus.iter().sum::<f64>() / cpus.len() as f64)
}

/// A control's spin: `pct` % of `cpu_us`, in whole nanoseconds (at least 1).
fn spin_ns(cpu_us: f64, pct: f64) -> u64 {
    (cpu_us * 1000.0 * pct / 100.0).round().max(1.0) as u64
}

/// What `calibration.json` takes from one comparison's record in
/// `meta.json`.
struct RecordFacts {
    row: String,
    settings: String,
    seconds: f64,
    /// The row's server start-up lines, one per block.
    startup_lines: Vec<String>,
}

/// `calibration.json` of the calibrate run in `dir`, from its `meta.json`
/// and the raw windows of its two tables only: the run writes it through
/// here, and the regression test recomputes every committed one the same
/// way.
pub fn recompute(dir: &Path) -> anyhow::Result<Calibration> {
    let path = dir.join("meta.json");
    let meta: serde_json::Value = serde_json::from_slice(
        &analysis::input::raw::read(&path)
            .with_context(|| format!("reading {}", path.display()))?,
    )
    .with_context(|| format!("parsing {}", path.display()))?;
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let records: Vec<RecordFacts> = meta["paired"]
        .as_array()
        .context("meta.json has no paired records")?
        .iter()
        .map(|r| RecordFacts {
            row: text(&r["row"]).unwrap_or_default(),
            settings: text(&r["settings"]).unwrap_or_default(),
            seconds: r["seconds"].as_f64().unwrap_or(0.0),
            startup_lines: r["blocks"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| text(&b["row_startup_line"]))
                .collect(),
        })
        .collect();
    let first = meta["paired"][0].clone();
    let table_dir = dir.join(TABLE);
    let duet_dir = dir.join(format!("{TABLE}-duet"));
    let cpu_us = aa_cpu_us(&table_dir.join("aa"))?;
    let aa = figures_of(&table_dir, "aa")?;
    let mut pairs = aa.pairs;
    let mut sizes = Vec::new();
    let (mut sum_m, mut sum_a): ((f64, f64), (f64, f64)) = ((0.0, 0.0), (0.0, 0.0));
    // The controls in the order they ran (interleaved, then the duet, per size).
    let mut controls: Vec<&RecordFacts> = Vec::new();
    for r in &records {
        if r.row.starts_with("control-") && !controls.iter().any(|c| c.row == r.row) {
            controls.push(r);
        }
    }
    for rec in controls {
        let set_pct: f64 = rec.row["control-".len()..]
            .parse()
            .with_context(|| format!("control row {:?} names no size", rec.row))?;
        let alone = figures_of(&table_dir, &rec.row)?;
        let duet = figures_of(&duet_dir, &rec.row)?;
        pairs += alone.pairs + duet.pairs;
        let (m, a) = (log_and_se(&duet.rps), log_and_se(&alone.rps));
        sum_m = (sum_m.0 + m.0, sum_m.1.hypot(m.1));
        sum_a = (sum_a.0 + a.0, sum_a.1.hypot(a.1));
        let (amp, amp_ci) = log_ratio_ci(m, a);
        sizes.push(ControlSize {
            set_pct,
            spin_ns: spin_ns(cpu_us, set_pct),
            spin_iters: median_field(&rec.startup_lines, "spin_iters").map(|v| v.round() as u64),
            spin_ns_per_iter: median_field(&rec.startup_lines, "spin_ns_per_iter"),
            alone_pct: pct(alone.rps.ratio),
            alone_ci95_pct: pct_ci(&alone.rps),
            alone_cpu_pct: pct(alone.cpu.ratio),
            measured_pct: pct(duet.rps.ratio),
            measured_ci95_pct: pct_ci(&duet.rps),
            reported_pct: pct(alone.rps.ratio),
            ci95_pct: pct_ci(&alone.rps),
            excludes_zero: !alone.rps.ci.contains_one(),
            amplification: amp,
            amplification_ci95: amp_ci,
        });
    }
    if sizes.is_empty() {
        bail!("{} has no control comparisons", dir.display());
    }
    let (value, ci) = log_ratio_ci(sum_m, sum_a);
    Ok(Calibration {
        date: text(&meta["date"]).unwrap_or_default(),
        cpu_model: text(&meta["cpu_model"]),
        cores: meta["cores"].as_u64().unwrap_or(0) as usize,
        kernel: text(&meta["kernel"]),
        variant: text(&first["base_variant"]).unwrap_or_default(),
        settings: records[0].settings.clone(),
        cpu_us_per_request: cpu_us,
        aa: Aa {
            ratio: aa.rps.ratio,
            ci95_pct: aa.rps.ci95_pct,
            contains_one: aa.rps.ci.contains_one(),
            cpu: AaFigures {
                ratio: aa.cpu.ratio,
                ci95_pct: aa.cpu.ci95_pct,
                contains_one: aa.cpu.ci.contains_one(),
            },
        },
        controls: sizes,
        amplification: Amplification {
            value,
            ci95_pct: ci,
        },
        pairs,
        seconds: records.iter().map(|r| r.seconds).sum(),
    })
}

/// The median of `key`'s value over a row's start-up lines.
fn median_field(lines: &[String], key: &str) -> Option<f64> {
    let mut v: Vec<f64> = lines
        .iter()
        .filter_map(|line| app_core::startup_field(line, key)?.parse().ok())
        .collect();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[v.len() / 2])
}

/// The lines `shootout calibrate` prints.
pub fn summary_lines(c: &Calibration) -> Vec<String> {
    let minutes = c.seconds / 60.0;
    let mut lines = vec![format!(
        "resolution on this machine: A/A {:.3} ± {:.2} % (interleaved: each server alone on its core; CPU per request {:.3} ± {:.2} %; {} pairs, {minutes:.1} min in all)",
        c.aa.ratio, c.aa.ci95_pct, c.aa.cpu.ratio, c.aa.cpu.ci95_pct, c.pairs
    )];
    for s in &c.controls {
        lines.push(format!(
            "control set to {} % of {:.3} µs (spin {} ns): alone {:+.2} % ({:+.2} to {:+.2}; CPU per request {:+.2} %), duet {:+.2} % ({:+.2} to {:+.2}); duet / alone {:.2} ({:.2}-{:.2})",
            s.set_pct,
            c.cpu_us_per_request,
            s.spin_ns,
            s.alone_pct,
            s.alone_ci95_pct[0],
            s.alone_ci95_pct[1],
            s.alone_cpu_pct,
            s.measured_pct,
            s.measured_ci95_pct[0],
            s.measured_ci95_pct[1],
            s.amplification,
            s.amplification_ci95[0],
            s.amplification_ci95[1]
        ));
    }
    lines.push(format!(
        "the duet reads {:.2} ({:.2}-{:.2}) of an effect alone on the core; the tool reports interleaved figures, uncorrected",
        c.amplification.value, c.amplification.ci95_pct[0], c.amplification.ci95_pct[1]
    ));
    let met =
        c.aa.ci95_pct <= 1.0 && c.aa.contains_one && c.controls.iter().all(|s| s.excludes_zero);
    lines.push(format!(
        "target (A/A interval ≤ ±1.0 % and holding 1; every control's interval excluding 0): {}",
        if met { "met" } else { "missed" }
    ));
    lines
}

/// `calibration.json`'s bytes.
pub fn to_json(c: &Calibration) -> anyhow::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(c)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes `calibration.json` through a temporary file and a rename.
pub fn write_json(path: &Path, c: &Calibration) -> anyhow::Result<()> {
    analysis::files::write_atomic(path, &to_json(c)?)
}
