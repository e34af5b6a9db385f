//! The paired design: a row and the baseline measured beside each other.
//!
//! A comparison runs in blocks (after Bulej et al. 2020, with randomized
//! interleaving after Abedi & Brecht 2017). In each block both stacks start
//! fresh, with the same pinning, in a slot order (which stack starts first,
//! and its loadgen first) that is AB or BA; every two blocks hold one of
//! each, in a random order drawn from the file's seed before the first
//! block. Both loadgens start at one `--start-at` barrier, so their
//! intervals cover the same wall-clock seconds; the runner reads both
//! servers' CPU time at every interval boundary. After `settle` (left out),
//! `block` is measured. A comparison runs the number of blocks its settings
//! planned (`blocks`), whatever its interval looks like meanwhile: stopping
//! as soon as the interval dipped under a target made the reported
//! interval too narrow. The interval is Student's t over the block means
//! (the analysis).
//!
//! How the two loadgens share the block (`schedule`):
//! - `interleave` (the default): they take turns, a random half of every
//!   `turn` each (loadgen `--active-half`), so each server has its core to
//!   itself while it is measured: the effect alone on the core.
//! - `duet`: both load at once, so both servers share the core. On the
//!   2-vCPU VM this project is developed on, the machine flips between two
//!   throughput states several times a minute; alternating 2 s windows gave
//!   pairs whose ratio varied by 7-11% (A/A CI ±2.7-4.1% in 2 min), while
//!   loading both at once gave 1.5-2% per interval (A/A CI ±0.3-0.5% in
//!   1 min). But the servers share the core, so an effect differs from
//!   alone: a 4 % control read 0.86 of itself, ntex against actix 1.3-1.9
//!   times its alone effect, ntex on io_uring ahead where alone it is behind.
//! - `alternate`: slot 1's load, then slot 2's, within each block: alone,
//!   but exposed to machine-state changes between the two.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use analysis::paired::input::read_comparison;
use analysis::paired::report::{cpu_metric, rps_metric};
use analysis::paired::{block_stem, CpuSample, Order};
use anyhow::{bail, Context};
use rand::{Rng, SeedableRng};

use crate::check::{counter, verify};
use crate::config::scenario::{PairedSettings, Scenario, Schedule};
use crate::design::Prepared;
use crate::measure::cpu::CpuProbe;
use crate::measure::load::{self, Timing};
use crate::place::affinity::{Check, ReadCpus};
use crate::place::placement::Placement;
use crate::place::running::{Boundaries, Running};
use crate::record::comparison::{BlockRecord, ComparisonRecord, SideFacts};
use crate::record::progress::Progress;
use crate::stack::{Stack, StackSpec};
use crate::Interrupted;

/// What a paired comparison needs from the run.
pub struct Ctx<'a> {
    pub run: &'a Prepared<'a>,
    pub settings: &'a PairedSettings,
    pub progress: Progress,
}

/// One comparison: a row against the baseline; `index` keeps the network
/// namespaces of different comparisons apart.
pub(crate) struct Pair<'a> {
    base: &'a Scenario,
    row: &'a Scenario,
    index: usize,
    /// Where its raw files go.
    dir: PathBuf,
}

/// One run of a comparison under way: its pair, its record so far, and
/// its blocks as planned.
pub(crate) struct Comparison<'a> {
    pair: Pair<'a>,
    pub rec: ComparisonRecord,
    run: u32,
    orders: std::vec::IntoIter<Order>,
    next: u32,
}

/// What one block left a comparison with.
pub(crate) enum Stepped {
    /// Measured; more may follow.
    Next,
    /// The comparison ended (an error, or its last planned block).
    Ended,
    /// SIGINT or SIGTERM came.
    Interrupted,
}

impl<'a> Comparison<'a> {
    /// Run `run` of `row` against `base` (files in `ROW/run-NN/` when there
    /// are several), its slot orders drawn; Err: its record, which says why
    /// it could not start.
    pub(crate) fn begin(
        ctx: &Ctx,
        base: &'a Scenario,
        row: &'a Scenario,
        index: usize,
        run: u32,
    ) -> Result<Comparison<'a>, Box<ComparisonRecord>> {
        let p = ctx.settings;
        let mut rec = ComparisonRecord::new(base, row, p);
        let mut dir = ctx.run.table_dir.join(&row.name);
        if p.runs > 1 {
            rec.run = Some(run);
            dir = dir.join(format!("run-{run:02}"));
        }
        if let Err(e) = std::fs::create_dir_all(&dir) {
            rec.error = Some(format!("creating {}: {e}", dir.display()));
            rec.stopped_by = "error".into();
            return Err(Box::new(rec));
        }
        // Each run draws its own slot orders (run 1 keeps the seed's old
        // ones). The whole plan is drawn before the first block: nothing
        // measured can change how many blocks run.
        let seed = p
            .seed
            .wrapping_add(index as u64)
            .wrapping_add(1000 * u64::from(run - 1));
        rec.stopped_by = "blocks".into();
        Ok(Comparison {
            pair: Pair {
                base,
                row,
                index,
                dir,
            },
            rec,
            run,
            orders: plan_orders(seed, p.blocks).into_iter(),
            next: 1,
        })
    }

    /// Runs the next planned block (fresh stacks) and records it.
    pub(crate) fn step(&mut self, ctx: &Ctx) -> Stepped {
        let Some(order) = self.orders.next() else {
            return Stepped::Ended;
        };
        if self.next > 1 {
            crate::hold_at::stage("block");
        }
        if ctx.run.stopping() {
            self.rec.stopped_by = "interrupted".into();
            return Stepped::Interrupted;
        }
        let (n, row) = (self.next, self.pair.row);
        self.next += 1;
        let t0 = Instant::now();
        let mut facts = [SideFacts::default(), SideFacts::default()];
        let tmp = ctx.run.tmp(&format!("{}-{}-{n}", row.name, self.run));
        let outcome = run_block(
            ctx,
            &self.pair,
            n,
            order,
            &tmp,
            &mut facts,
            &mut self.rec.netem,
        );
        let _ = std::fs::remove_dir_all(&tmp);
        let seconds = t0.elapsed().as_secs_f64();
        self.rec.seconds += seconds;
        let [row_facts, base_facts] = facts;
        let error = outcome.as_ref().err().map(|e| format!("{e:#}"));
        self.rec.blocks.push(BlockRecord::build(
            n,
            order.as_str(),
            row_facts,
            base_facts,
            seconds,
            error,
        ));
        update_figures(&mut self.rec, &self.pair.dir);
        ctx.progress.block(
            &row.name,
            &self.pair.base.name,
            n,
            order.as_str(),
            &self.rec.progress(),
        );
        match outcome {
            Err(e) if e.is::<Interrupted>() => {
                self.rec.stopped_by = "interrupted".into();
                Stepped::Interrupted
            }
            Err(e) => {
                self.rec.stopped_by = "error".into();
                self.rec.error = Some(format!("block {n}: {e:#}"));
                Stepped::Ended
            }
            Ok(()) if self.orders.len() == 0 => Stepped::Ended,
            Ok(()) => Stepped::Next,
        }
    }
}

/// Runs the planned blocks of `row` against `base`, one after another, as
/// run `run` of the comparison's `runs`. `index` keeps network namespaces
/// of different comparisons apart. Its `seconds` are those of its blocks.
/// `after_block` sees the record after each block (the caller writes it
/// down, so a runner killed mid-comparison leaves the blocks it finished).
pub fn compare(
    ctx: &Ctx,
    base: &Scenario,
    row: &Scenario,
    index: usize,
    run: u32,
    after_block: &mut dyn FnMut(&ComparisonRecord),
) -> (ComparisonRecord, Option<Interrupted>) {
    let mut c = match Comparison::begin(ctx, base, row, index, run) {
        Ok(c) => c,
        Err(rec) => return (*rec, None),
    };
    loop {
        let stepped = c.step(ctx);
        after_block(&c.rec);
        match stepped {
            Stepped::Next => {}
            Stepped::Ended => return (c.rec, None),
            Stepped::Interrupted => return (c.rec, Some(Interrupted)),
        }
    }
}

/// A comparison's blocks, planned before the first one runs: `blocks`
/// slot orders, every two of them AB and BA with the first drawn from
/// `seed`. Its only inputs are the seed and the planned count, so no
/// interval seen meanwhile can end a comparison early.
pub fn plan_orders(seed: u64, blocks: u32) -> Vec<Order> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut orders = Vec::with_capacity(blocks as usize);
    for n in 0..blocks {
        let order = match orders.last() {
            Some(Order::Ab) if n % 2 == 1 => Order::Ba,
            Some(Order::Ba) if n % 2 == 1 => Order::Ab,
            _ if rng.gen_bool(0.5) => Order::Ab,
            _ => Order::Ba,
        };
        orders.push(order);
    }
    orders
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

/// Which side of a comparison: its files' suffix, and its slot in
/// [`SideFacts`] pairs (row first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Row,
    Base,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Row => "row",
            Role::Base => "base",
        }
    }

    fn index(self) -> usize {
        match self {
            Role::Row => 0,
            Role::Base => 1,
        }
    }
}

/// One side of a block.
struct Side<'a> {
    role: Role,
    scenario: &'a Scenario,
    place: Placement,
    stack: Option<Stack>,
    before: u64,
    loadgen: Option<Running>,
    log: PathBuf,
    /// Its slow clients (`slow_clients` rows), while they run.
    slow: Option<Running>,
    /// Its loadgen's CPUs as read once the load started, and a command
    /// row's server's as read under load (the threads and processes it
    /// starts for its connections).
    loaded_cpus: Vec<ReadCpus>,
}

impl<'a> Side<'a> {
    fn new(ctx: &Ctx, role: Role, pair: &Pair<'a>, stem: &str) -> anyhow::Result<Side<'a>> {
        let scenario = match role {
            Role::Row => pair.row,
            Role::Base => pair.base,
        };
        Ok(Side {
            role,
            scenario,
            place: ctx
                .run
                .hosts
                .place(scenario, 2 * pair.index + role.index())?,
            stack: None,
            before: 0,
            loadgen: None,
            log: pair.dir.join(format!("{stem}.{}.jsonl", role.name())),
            slow: None,
            loaded_cpus: Vec::new(),
        })
    }

    /// Starts and verifies its stack.
    fn start(&mut self, ctx: &Ctx, tmp: &Path, facts: &mut SideFacts) -> anyhow::Result<()> {
        let role = self.role.name();
        let spec = StackSpec {
            root: ctx.run.root,
            scenario: self.scenario,
            server_bin: ctx.run.server_bin(self.scenario),
            tmp: tmp.join(role),
        };
        let stack = Stack::start(&spec, &self.place)
            .with_context(|| format!("starting the {role} stack"))?;
        facts.startup_line = Some(stack.startup_line.clone());
        facts.terminal = stack.terminal.clone();
        let verified = stack.verify(self.place.client())?;
        // Where its processes run, read once they are up and answering.
        facts.cpus = stack.read_cpus(self.scenario)?;
        let placed = facts.cpus.iter().try_for_each(ReadCpus::check);
        if let Err(e) = placed {
            let _ = stack.stop();
            return Err(e.context(format!("the {role} stack")));
        }
        if ctx.run.stopping() {
            let _ = stack.stop();
            return Err(Interrupted.into());
        }
        self.before = verified.map_or(0, |v| v.count);
        self.stack = Some(stack);
        Ok(())
    }

    /// After the load: reads its loadgen's log, checks the counter and
    /// stops the stack.
    fn finish(&mut self, facts: &mut SideFacts) -> anyhow::Result<()> {
        let role = self.role.name();
        facts.cpus.append(&mut self.loaded_cpus);
        let status = self.loadgen.as_mut().and_then(Running::try_wait);
        let code = status.and_then(|st| st.code());
        facts.loadgen_exit = code;
        facts.slow = self.finish_slow()?;
        if let Some(st) = status {
            if let Err(e) = load::keep(&self.log) {
                if !st.success() {
                    let why = self.loadgen.as_ref().map(|l| l.stderr().tail());
                    bail!(
                        "the {role} loadgen exited with {st}: {}",
                        why.unwrap_or_default()
                    );
                }
                return Err(e);
            }
        }
        let totals = load::read_log(&self.log)?;
        let stack = self.stack.take().context("no stack")?;
        let check = if verify::post_body(self.scenario.request).is_some() && stack.has_counter() {
            let after = stack.count(self.place.client())?;
            let c = self.scenario.connections;
            Some(counter::check(self.before, after, totals.acknowledged, c))
        } else {
            None
        };
        let (stopped, result) = stack.stop();
        facts.server_exit = stopped.server_exit;
        facts.link = stopped.link;
        if status.is_some_and(|st| !st.success()) {
            let msg = self.loadgen.as_ref().map(|l| l.stderr().tail());
            bail!(
                "the {role} loadgen exited with {code:?}: {}",
                msg.unwrap_or_default()
            );
        }
        if let Some(check) = check {
            facts.counter = Some(check.with_context(|| format!("the {role} stack"))?);
        }
        result.with_context(|| format!("the {role} stack"))
    }
}

impl Side<'_> {
    /// `STEM.ROLE.slow.jsonl`: the slow clients' log.
    fn slow_log(&self) -> PathBuf {
        self.log.with_extension("slow.jsonl")
    }

    /// Starts the side's slow clients (if it has any) now, for `duration`:
    /// from before the load's barrier to its end.
    fn start_slow(&mut self, bin: &str, duration: Duration) -> anyhow::Result<()> {
        let Some(slow) = self.scenario.slow else {
            return Ok(());
        };
        let target = self.stack.as_ref().expect("started").target;
        let argv = load::slow_argv(bin, self.scenario, slow, target, duration);
        self.slow = Some(load::spawn(
            self.place.client(),
            self.scenario.loadgen_cpus.as_deref(),
            argv,
            &self.slow_log(),
        )?);
        Ok(())
    }

    /// Waits for the slow clients (they end with the load) and reads what
    /// they met.
    fn finish_slow(&mut self) -> anyhow::Result<Option<loadgen::SlowRecord>> {
        let Some(mut slow) = self.slow.take() else {
            return Ok(None);
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(st) = slow.try_wait() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = slow.stop(Duration::from_secs(2));
                bail!("the {} slow clients did not end", self.role.name());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if !status.success() {
            bail!(
                "the {} slow clients exited with {status}: {}",
                self.role.name(),
                slow.stderr().tail()
            );
        }
        load::keep(&self.slow_log())?;
        load::read_slow(&self.slow_log()).map(Some)
    }
}

/// One block: both stacks started and verified (slot 1 first), loaded
/// (together in a duet, one after the other when alternating), their CPU
/// written to `STEM.cpu.jsonl`, then checked and stopped. What each side
/// reached goes to `facts` (row, base).
fn run_block(
    ctx: &Ctx,
    pair: &Pair,
    n: u32,
    order: Order,
    tmp: &Path,
    facts: &mut [SideFacts; 2],
    netem: &mut Option<String>,
) -> anyhow::Result<()> {
    let stem = block_stem(n, order);
    let row = Side::new(ctx, Role::Row, pair, &stem)?;
    let base = Side::new(ctx, Role::Base, pair, &stem)?;
    if let Some(why) = row.place.netem.clone().or(base.place.netem.clone()) {
        *netem = Some(why);
    }
    let mut sides = match order {
        Order::Ab => [row, base],
        Order::Ba => [base, row],
    };
    for s in sides.iter_mut() {
        s.start(ctx, tmp, &mut facts[s.role.index()])?;
    }
    // Duet: both loadgens at one barrier. Interleave: the same, each in its
    // half of every interval. Alternate: slot 1's, then slot 2's.
    let samples = match ctx.settings.schedule {
        Schedule::Duet | Schedule::Interleave => load_and_sample(ctx, &mut sides, &[0, 1], tmp)?,
        Schedule::Alternate => {
            let first = load_and_sample(ctx, &mut sides, &[0], tmp)?;
            let second = load_and_sample(ctx, &mut sides, &[1], tmp)?;
            first
                .into_iter()
                .zip(second)
                .map(|((k, ms, a), (_, _, b))| (k, ms, [a[0], b[1]]))
                .collect()
        }
    };
    write_cpu(&pair.dir.join(format!("{stem}.cpu.jsonl")), &sides, samples)?;
    // Both loadgens have exited: read, check and stop, slot 1 first.
    for s in sides.iter_mut() {
        s.finish(&mut facts[s.role.index()])?;
    }
    Ok(())
}

/// `STEM.cpu.jsonl`: both servers' CPU at every boundary, by role.
fn write_cpu(path: &Path, sides: &[Side; 2], samples: Vec<Sample>) -> anyhow::Result<()> {
    let mut lines = String::new();
    for (k, unix_ms, ns) in samples {
        let mut by_role = [0u64; 2];
        for (slot, s) in sides.iter().enumerate() {
            by_role[s.role.index()] = ns[slot];
        }
        lines += &serde_json::to_string(&CpuSample {
            k,
            unix_ms,
            row_cpu_ns: by_role[0],
            base_cpu_ns: by_role[1],
        })?;
        lines.push('\n');
    }
    analysis::files::write_atomic(path, lines.as_bytes())
}

/// One CPU reading of both slots at boundary `k`: (k, Unix ms, ns per slot).
type Sample = (u64, u64, [u64; 2]);

/// Starts the loadgens of the `active` slots at one barrier, reads both
/// stacks' CPU time at every interval boundary (0 = the start) through
/// their CPU probes, and returns once the loadgens have exited. Every stack
/// must stay alive meanwhile.
fn load_and_sample(
    ctx: &Ctx,
    sides: &mut [Side; 2],
    active: &[usize],
    tmp: &Path,
) -> anyhow::Result<Vec<Sample>> {
    // Binaries first (an upload can take a while), then a barrier far
    // enough ahead for every loadgen to start on its host.
    let mut bins = Vec::new();
    for &i in active {
        bins.push(sides[i].place.client().place_binary(ctx.run.loadgen)?);
    }
    let lead = sides
        .iter()
        .map(|s| s.place.start_lead())
        .max()
        .unwrap_or_default();
    let start_at = SystemTime::now() + lead;
    let start = Instant::now() + lead;
    let timing = Timing {
        warmup: ctx.settings.settle,
        duration: ctx.settings.block,
        start_at: Some(start_at),
        turn: None,
    };
    // Slow clients first, so that they are open when the load starts.
    let slow_for = lead + ctx.settings.settle + ctx.settings.block;
    for (&i, bin) in active.iter().zip(&bins) {
        sides[i].start_slow(bin, slow_for)?;
    }
    for (&i, bin) in active.iter().zip(&bins) {
        let s = &mut sides[i];
        let stack = s.stack.as_ref().expect("started");
        let turn = (ctx.settings.schedule == Schedule::Interleave)
            .then_some((["first", "second"][i], ctx.settings.turn));
        let ca = stack.ca_file(s.place.client());
        let argv = load::argv(bin, s.scenario, stack.target, ca, Timing { turn, ..timing });
        s.loadgen = Some(load::spawn(
            s.place.client(),
            s.scenario.loadgen_cpus.as_deref(),
            argv,
            &s.log,
        )?);
    }
    crate::hold_at::stage("measure");
    let interval = sides[0].scenario.interval;
    let last = (timing.warmup.as_nanos().div_ceil(interval.as_nanos())
        + timing.duration.as_nanos().div_ceil(interval.as_nanos())) as u64;
    let b = Boundaries {
        start: start_at,
        interval,
        last,
    };
    let mut probes = Vec::new();
    for s in sides.iter() {
        let stack = s.stack.as_ref().expect("started");
        probes.push(CpuProbe::start(stack, b, &tmp.join(s.role.name()))?);
    }
    let mut times = Vec::new();
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
            if ctx.run.stopping() {
                stop_all(sides);
                return Err(Interrupted.into());
            }
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
        }
        for p in &mut probes {
            p.at(k);
        }
        if let Err(e) = read_placements(k, sides, active) {
            stop_all(sides);
            return Err(e);
        }
        times.push(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        );
        let mut dead = None;
        for s in sides.iter_mut() {
            if let Err(e) = s.stack.as_mut().expect("started").check_alive() {
                dead = Some(e.context(format!("the {} stack", s.role.name())));
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
    let mut probes = probes.into_iter();
    let (first, second) = (probes.next().expect("two"), probes.next().expect("two"));
    let (first, second) = (first.finish(deadline)?, second.finish(deadline)?);
    Ok((0..=last)
        .zip(times)
        .map(|(k, unix_ms)| (k, unix_ms, [first[k as usize], second[k as usize]]))
        .collect())
}

/// Reads where the `active` sides' loadgens run and checks it against
/// their scenarios' `loadgen_cpus`.
fn read_loadgen_cpus(sides: &mut [Side; 2], active: &[usize]) -> anyhow::Result<()> {
    for &i in active {
        let s = &mut sides[i];
        let wanted = s.scenario.loadgen_cpus.as_deref();
        let l = s.loadgen.as_ref().context("no loadgen")?;
        let read = l.read_cpus("loadgen", wanted)?;
        read.check()
            .with_context(|| format!("the {} side", s.role.name()))?;
        s.loaded_cpus.push(read);
    }
    Ok(())
}

/// At boundary 0, in the settle, which is left out: where each loadgen
/// runs; at boundary 1: where a command row's server runs under load.
fn read_placements(k: u64, sides: &mut [Side; 2], active: &[usize]) -> anyhow::Result<()> {
    match k {
        0 => read_loadgen_cpus(sides, active),
        1 => read_servers_under_load(sides, active),
        _ => Ok(()),
    }
}

/// Reads where the `active` command rows' servers run once their
/// connections are open (a server may start a thread or a process per
/// connection, each placed where it was started) and checks it.
fn read_servers_under_load(sides: &mut [Side; 2], active: &[usize]) -> anyhow::Result<()> {
    for &i in active {
        let s = &mut sides[i];
        if s.scenario.is_twin() {
            continue;
        }
        let stack = s.stack.as_ref().context("no stack")?;
        let mut read = stack.server_cpus(s.scenario)?;
        read.process = "server under load".into();
        read.check()
            .with_context(|| format!("the {} side", s.role.name()))?;
        s.loaded_cpus.push(read);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use analysis::paired::stats::t_ratio;

    use super::*;

    /// The rule this design replaced: from `min` blocks on, stop as soon as
    /// the block-level interval is narrower than ±`target_pct`. The number
    /// of blocks it would have run.
    fn old_rule_stops_after(block_logs: &[f64], min: usize, target_pct: f64) -> usize {
        (min..=block_logs.len())
            .find(|&n| t_ratio(&block_logs[..n]).is_some_and(|c| c.half_width_pct() < target_pct))
            .unwrap_or(block_logs.len())
    }

    #[test]
    fn a_comparison_runs_its_planned_blocks_where_the_old_rule_stopped_early() {
        // Block mean ln ratios: four close together, then the drift the
        // rest of the comparison shows (a machine-state change).
        let fixture = [0.001, -0.001, 0.0005, -0.0005, 0.02, 0.025, 0.018, 0.03];
        assert_eq!(old_rule_stops_after(&fixture, 4, 1.0), 4);
        // Stopped there, the interval is narrow and misses where the whole
        // comparison lands.
        let early = t_ratio(&fixture[..4]).unwrap();
        let full = t_ratio(&fixture).unwrap();
        assert!(early.half_width_pct() < full.half_width_pct());
        assert!(!(early.lo..=early.hi).contains(&full.ratio));
        // The plan is drawn from the seed and the count alone, before any
        // block: all 8 run, every two of them AB and BA.
        let plan = plan_orders(7, 8);
        assert_eq!(plan.len(), 8);
        assert!(plan.chunks(2).all(|p| p[0] != p[1]), "{plan:?}");
        assert_eq!(plan, plan_orders(7, 8));
        let firsts: Vec<_> = (0..40).map(|s| plan_orders(s, 2)[0]).collect();
        assert!(firsts.contains(&Order::Ab) && firsts.contains(&Order::Ba));
    }
}
