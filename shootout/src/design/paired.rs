//! The paired design: a row and the baseline measured at the same time.
//!
//! Schedule ("duet", Bulej et al. 2020, with randomized interleaving after
//! Abedi & Brecht 2017): a comparison runs in blocks. In each block both
//! stacks start fresh, with the same pinning, in a slot order (which stack
//! starts first, and its loadgen first) that is AB or BA; every two blocks
//! hold one of each, in a random order from the file's seed. Both loadgens
//! start at one `--start-at` barrier, so their intervals cover the same
//! wall-clock seconds; the runner reads both servers' CPU time at every
//! interval boundary. After `settle` (left out), `block` is measured. Blocks
//! go on until both metrics' 95% CIs are within `target_ci_pct` (after
//! `min_blocks`) or until the next two blocks would pass `budget`.
//!
//! Why at once rather than alternating: on the 2-vCPU VM this project is
//! developed on, the machine flips between two throughput states several
//! times a minute; alternating 2 s windows gave pairs whose ratio varied by
//! 7-11% (A/A CI ±2.7-4.1% in 2 min), while loading both at once gave
//! 1.5-2% per interval (A/A CI ±0.3-0.5% in 1 min): both stacks see the same
//! machine state in every interval. See the crate README for this
//! machine's calibration. `schedule = "alternate"` runs the other
//! design (slot 1's load, then slot 2's, within each block) for comparison.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use analysis::paired::input::read_comparison;
use analysis::paired::report::{cpu_metric, rps_metric};
use analysis::paired::{block_stem, CpuSample, Order};
use anyhow::{bail, Context};
use rand::{Rng, SeedableRng};

use crate::check::counter;
use crate::check::verify;
use crate::config::scenario::{PairedSettings, Scenario, Schedule};
use crate::measure::load::{self, Timing};
use crate::place::connect::Connected;
use crate::place::placement::Placement;
use crate::place::procs::group_cpu_ns;
use crate::place::remote::{self, RemoteProc};
use crate::place::running::Running;
use crate::record::comparison::{BlockRecord, ComparisonRecord};
use crate::stack::{Stack, StackSpec};
use crate::Interrupted;

/// What a paired comparison needs from the run.
pub struct Ctx<'a> {
    pub root: &'a Path,
    pub loadgen_bin: &'a Path,
    /// Server binary per variant.
    pub binaries: &'a HashMap<String, PathBuf>,
    pub table_dir: &'a Path,
    pub tmp: PathBuf,
    pub settings: &'a PairedSettings,
    pub stop: &'a Arc<AtomicBool>,
    /// The remote hosts' sessions, for rows that name hosts.
    pub remote: Option<&'a Connected>,
}

/// Runs blocks of `row` against `base` until the target or the budget.
/// `index` keeps network namespaces of different comparisons apart.
pub fn compare(
    ctx: &Ctx,
    base: &Scenario,
    row: &Scenario,
    index: usize,
) -> (ComparisonRecord, Option<Interrupted>) {
    let p = ctx.settings;
    let mut rec = ComparisonRecord {
        row: row.name.clone(),
        baseline: base.name.clone(),
        row_variant: row.variant(),
        base_variant: base.variant(),
        server_cpus: row.server_cpus.clone(),
        loadgen_cpus: row.loadgen_cpus.clone(),
        settings: format!(
            "{:?}, block {}, settle {}, budget {}, target ±{}%, min {} blocks, seed {}",
            p.schedule,
            humantime::format_duration(p.block),
            humantime::format_duration(p.settle),
            humantime::format_duration(p.budget),
            p.target_ci_pct,
            p.min_blocks,
            p.seed
        )
        .to_lowercase(),
        ..ComparisonRecord::default()
    };
    let dir = ctx.table_dir.join(&row.name);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        rec.error = Some(format!("creating {}: {e}", dir.display()));
        rec.stopped_by = "error".into();
        return (rec, None);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(p.seed.wrapping_add(index as u64));
    let started = Instant::now();
    let mut next_order = Order::Ab;
    let mut last_block = Duration::ZERO;
    let mut interrupted = None;
    for n in 1u32.. {
        let done = n - 1;
        let even = done % 2 == 0;
        if even && done >= 2 {
            if done >= p.min_blocks && within_target(&rec, p.target_ci_pct) {
                rec.stopped_by = "target".into();
                break;
            }
            // Blocks come in twos (AB and BA): stop when two more would
            // pass the budget.
            if started.elapsed() + 2 * last_block > p.budget {
                rec.stopped_by = "budget".into();
                break;
            }
        }
        if ctx.stop.load(Ordering::Relaxed) {
            rec.stopped_by = "interrupted".into();
            interrupted = Some(Interrupted);
            break;
        }
        let order = if even {
            if rng.gen_bool(0.5) {
                Order::Ab
            } else {
                Order::Ba
            }
        } else {
            next_order
        };
        next_order = match order {
            Order::Ab => Order::Ba,
            Order::Ba => Order::Ab,
        };
        let t0 = Instant::now();
        let mut block = BlockRecord {
            block: n,
            order: order.as_str().into(),
            ..BlockRecord::default()
        };
        let tmp = ctx.tmp.join(format!("{}-{n}", row.name));
        let outcome = run_block(ctx, base, row, index, &dir, n, order, &mut block, &mut rec);
        let _ = std::fs::remove_dir_all(&tmp);
        last_block = t0.elapsed();
        block.seconds = last_block.as_secs_f64();
        let failed = outcome.err();
        if let Some(e) = &failed {
            block.error = Some(format!("{e:#}"));
        }
        rec.blocks.push(block);
        update_figures(&mut rec, &dir);
        eprintln!(
            "  {} vs {}: block {n} ({}) {}",
            row.name,
            base.name,
            order.as_str(),
            rec.progress()
        );
        if let Some(e) = failed {
            if e.is::<Interrupted>() {
                rec.stopped_by = "interrupted".into();
                interrupted = Some(Interrupted);
            } else {
                rec.stopped_by = "error".into();
                rec.error = Some(format!("block {n}: {e:#}"));
            }
            break;
        }
    }
    rec.seconds = started.elapsed().as_secs_f64();
    (rec, interrupted)
}

fn within_target(rec: &ComparisonRecord, target: f64) -> bool {
    matches!((rec.rps_ci95_pct, rec.cpu_ci95_pct), (Some(a), Some(b)) if a <= target && b <= target)
}

/// Re-reads the comparison's blocks so far and updates the running figures.
fn update_figures(rec: &mut ComparisonRecord, dir: &Path) {
    let c = read_comparison(dir, &mut Vec::new());
    rec.pairs = c.windows.len();
    let rps = rps_metric(&c.windows);
    let cpu = cpu_metric(&c.windows);
    rec.rps_ratio = rps.map(|m| m.ratio);
    rec.rps_ci95_pct = rps.map(|m| m.ci95_pct);
    rec.cpu_ratio = cpu.map(|m| m.ratio);
    rec.cpu_ci95_pct = cpu.map(|m| m.ci95_pct);
}

/// The two sides of a block, in slot order.
struct Side<'a> {
    role: &'static str,
    scenario: &'a Scenario,
    place: Placement,
    stack: Option<Stack>,
    before: u64,
    loadgen: Option<Running>,
    log: PathBuf,
}

fn make_side<'s>(
    ctx: &Ctx,
    role: &'static str,
    scenario: &'s Scenario,
    ns: usize,
    dir: &Path,
    stem: &str,
) -> anyhow::Result<Side<'s>> {
    Ok(Side {
        role,
        scenario,
        place: Placement::new(scenario, ns, ctx.remote)?,
        stack: None,
        before: 0,
        loadgen: None,
        log: dir.join(format!("{stem}.{role}.jsonl")),
    })
}

#[allow(clippy::too_many_arguments)]
fn run_block(
    ctx: &Ctx,
    base: &Scenario,
    row: &Scenario,
    index: usize,
    dir: &Path,
    n: u32,
    order: Order,
    block: &mut BlockRecord,
    rec: &mut ComparisonRecord,
) -> anyhow::Result<()> {
    let stem = block_stem(n, order);
    let tmp = ctx.tmp.join(format!("{}-{n}", row.name));
    let row_side = make_side(ctx, "row", row, 2 * index, dir, &stem)?;
    let base_side = make_side(ctx, "base", base, 2 * index + 1, dir, &stem)?;
    if let Some(why) = row_side
        .place
        .netem
        .clone()
        .or(base_side.place.netem.clone())
    {
        rec.netem = Some(why);
    }
    let mut sides = match order {
        Order::Ab => [row_side, base_side],
        Order::Ba => [base_side, row_side],
    };
    // Start and verify, slot 1 first.
    for s in sides.iter_mut() {
        let spec = StackSpec {
            root: ctx.root,
            scenario: s.scenario,
            server_bin: &ctx.binaries[&s.scenario.variant()],
            tmp: tmp.join(s.role),
        };
        let stack = Stack::start(&spec, &s.place)
            .with_context(|| format!("starting the {} stack", s.role))?;
        let verified = stack.verify(s.place.client())?;
        s.before = verified.map_or(0, |v| v.count);
        let line = Some(stack.startup_line.clone());
        if s.role == "row" {
            block.row_startup_line = line;
            block.row_terminal = stack.terminal.clone();
        } else {
            block.base_startup_line = line;
            block.base_terminal = stack.terminal.clone();
        }
        s.stack = Some(stack);
    }
    // Duet: both loadgens at one barrier. Alternate: slot 1's, then slot 2's.
    let samples = match ctx.settings.schedule {
        Schedule::Duet => load_and_sample(ctx, &mut sides, &[0, 1], &tmp)?,
        Schedule::Alternate => {
            let first = load_and_sample(ctx, &mut sides, &[0], &tmp)?;
            let second = load_and_sample(ctx, &mut sides, &[1], &tmp)?;
            first
                .into_iter()
                .zip(second)
                .map(|((k, ms, a), (_, _, b))| (k, ms, [a[0], b[1]]))
                .collect()
        }
    };
    let path = dir.join(format!("{stem}.cpu.jsonl"));
    let mut lines = String::new();
    for (k, unix_ms, ns) in samples {
        let (row_cpu_ns, base_cpu_ns) = if sides[0].role == "row" {
            (ns[0], ns[1])
        } else {
            (ns[1], ns[0])
        };
        lines += &serde_json::to_string(&CpuSample {
            k,
            unix_ms,
            row_cpu_ns,
            base_cpu_ns,
        })?;
        lines.push('\n');
    }
    std::fs::write(&path, lines).with_context(|| format!("writing {}", path.display()))?;

    // Both loadgens have exited; read, check and stop, recording as we go.
    for s in sides.iter_mut() {
        let status = s.loadgen.as_mut().and_then(Running::try_wait);
        let code = status.and_then(|st| st.code());
        let totals = load::read_log(&s.log)?;
        let stack = s.stack.take().expect("started");
        let check = if verify::post_body(s.scenario.request).is_some() && !stack.is_ceiling() {
            let after = stack.count(s.place.client())?;
            Some(counter::check(
                s.before,
                after,
                totals.acknowledged,
                s.scenario.connections,
            ))
        } else {
            None
        };
        let (stopped, result) = stack.stop();
        if s.role == "row" {
            block.row_loadgen_exit = code;
            block.row_server_exit = stopped.server_exit;
        } else {
            block.base_loadgen_exit = code;
            block.base_server_exit = stopped.server_exit;
        }
        if status.is_some_and(|st| !st.success()) {
            let msg = s.loadgen.as_ref().map(|l| l.stderr().tail());
            bail!(
                "the {} loadgen exited with {code:?}: {}",
                s.role,
                msg.unwrap_or_default()
            );
        }
        if let Some(check) = check {
            let check = check.with_context(|| format!("the {} stack", s.role))?;
            if s.role == "row" {
                block.row_counter = Some(check);
            } else {
                block.base_counter = Some(check);
            }
        }
        result.with_context(|| format!("the {} stack", s.role))?;
    }
    Ok(())
}

/// One CPU reading of both slots at boundary `k`: (k, Unix ms, ns per slot).
type Sample = (u64, u64, [u64; 2]);

/// Starts the loadgens of the `active` slots at one barrier, reads their
/// servers' CPU time at every interval boundary (0 = the start), and
/// returns once they have exited. Every stack must stay alive meanwhile.
fn load_and_sample(
    ctx: &Ctx,
    sides: &mut [Side; 2],
    active: &[usize],
    tmp: &Path,
) -> anyhow::Result<Vec<Sample>> {
    // Binaries first (an upload can take a while), then a barrier far
    // enough ahead for every loadgen to start (an ssh start is slower).
    let mut bins = Vec::new();
    for &i in active {
        bins.push(sides[i].place.client().place_binary(ctx.loadgen_bin)?);
    }
    let remote = sides.iter().any(|s| s.place.server.is_remote());
    let lead = Duration::from_millis(if remote { 2000 } else { 500 });
    let start_at = SystemTime::now() + lead;
    let start = Instant::now() + lead;
    let timing = Timing {
        warmup: ctx.settings.settle,
        duration: ctx.settings.block,
        start_at: Some(start_at),
    };
    for (&i, bin) in active.iter().zip(&bins) {
        let s = &mut sides[i];
        let target = s.stack.as_ref().expect("started").target;
        let argv = load::argv(bin, s.scenario, target, timing);
        s.loadgen = Some(load::spawn(s.place.client(), argv, &s.log)?);
    }
    let interval = sides[0].scenario.interval;
    let last = (timing.warmup.as_nanos().div_ceil(interval.as_nanos())
        + timing.duration.as_nanos().div_ceil(interval.as_nanos())) as u64;
    let samplers = start_samplers(sides, tmp, start_at, interval, last)?;
    let mut samples = Vec::new();
    // Here, the stacks' CPU is read from /proc at each boundary; remote
    // stacks' comes from their hosts' samplers afterwards.
    let cpu = |s: &Side| -> u64 {
        let st = s.stack.as_ref().expect("started");
        st.local_pids()
            .into_iter()
            .filter_map(group_cpu_ns)
            .sum::<u64>()
    };
    let stop_all = |sides: &mut [Side; 2]| {
        for s in sides.iter_mut() {
            if let Some(l) = s.loadgen.as_mut() {
                let _ = l.stop(Duration::from_secs(2));
            }
        }
    };
    for k in 0..=last {
        let due = start + interval * k as u32;
        while Instant::now() < due {
            if ctx.stop.load(Ordering::Relaxed) {
                stop_all(sides);
                return Err(Interrupted.into());
            }
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
        }
        let ns = [cpu(&sides[0]), cpu(&sides[1])];
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        samples.push((k, unix_ms, ns));
        let mut dead = None;
        for s in sides.iter_mut() {
            if let Err(e) = s.stack.as_mut().expect("started").check_alive() {
                dead = Some(e.context(format!("the {} stack", s.role)));
            }
        }
        if let Some(e) = dead {
            stop_all(sides);
            return Err(e);
        }
    }
    // The loadgens stop at the last boundary; give them time to write their
    // summaries, then stop whatever still runs.
    let deadline = Instant::now() + Duration::from_secs(15);
    for s in sides.iter_mut() {
        if let Some(l) = s.loadgen.as_mut() {
            while l.try_wait().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = l.stop(Duration::from_secs(2));
        }
    }
    add_remote_cpu(samplers, &mut samples, deadline)?;
    Ok(samples)
}

/// A CPU sampler on a remote host: the slot whose stack it reads, the
/// process, and the file it writes here.
type Sampler = (usize, RemoteProc, PathBuf);

/// One sampler per slot and remote host its server or nginx runs on.
fn start_samplers(
    sides: &[Side; 2],
    tmp: &Path,
    start_at: SystemTime,
    interval: Duration,
    last: u64,
) -> anyhow::Result<Vec<Sampler>> {
    let mut out = Vec::new();
    for (slot, s) in sides.iter().enumerate() {
        let procs = s.stack.as_ref().expect("started").remote_procs();
        let mut hosts: Vec<&str> = procs.iter().map(|p| p.host()).collect();
        hosts.dedup();
        for host in hosts {
            let on: Vec<&&RemoteProc> = procs.iter().filter(|p| p.host() == host).collect();
            let pids: Vec<u32> = on.iter().map(|p| p.pid).collect();
            std::fs::create_dir_all(tmp).with_context(|| format!("creating {}", tmp.display()))?;
            let path = tmp.join(format!("cpu-{}-{host}.txt", s.role));
            let file = std::fs::File::create(&path)
                .with_context(|| format!("creating {}", path.display()))?;
            let session = on[0].session();
            let proc_ = remote::cpu_sampler(session, &pids, start_at, interval, last, file.into())?;
            out.push((slot, proc_, path));
        }
    }
    Ok(out)
}

/// Adds what the remote samplers read to each boundary's figures; an error
/// naming the host when one missed a boundary.
fn add_remote_cpu(
    samplers: Vec<Sampler>,
    samples: &mut [Sample],
    deadline: Instant,
) -> anyhow::Result<()> {
    for (slot, mut proc_, path) in samplers {
        proc_.wait(deadline.saturating_duration_since(Instant::now()));
        let _ = proc_.stop(Duration::from_secs(2));
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let read = remote::read_cpu_samples(&text);
        for (k, _, ns) in samples.iter_mut() {
            let Some(v) = read.get(k) else {
                bail!(
                    "host {}: the CPU sampler has no reading at boundary {k}: {}",
                    proc_.host(),
                    proc_.lines().tail()
                );
            };
            ns[slot] += v;
        }
    }
    Ok(())
}
