//! Comparisons at equal rates, after every row's sweep (`compare_at` in
//! `[sweep]`): each compared row and the baseline at the same open-model
//! rate, a percentage of the baseline's max rate at the first target. A
//! block runs both, each in fresh processes, in an order planned before the
//! first block (AB/BA balanced, from a recorded seed), so blocks are
//! independent units and the ratio's interval is Student's t over them.
//! What the logs lack goes to `ROW.compare.json`, from which the analysis
//! recomputes every figure.

use std::path::PathBuf;

use analysis::paired::Order;
use analysis::sweep::Rules;
use serde::Serialize;

use super::paired::plan_orders;
use super::sweep::{check_counter, on_fresh_stack, verify, StepEntry, Stepper};
use crate::config::scenario::Scenario;
use crate::config::sweep::SweepSettings;
use crate::design::{Job, Prepared};
use crate::record::row::{RowFacts, RowRecord};

/// One step of a comparison as `ROW.compare.json` records it.
#[derive(Debug, Clone, Serialize)]
struct CompareEntry {
    /// The percentage of the baseline's max rate.
    pct: f64,
    block: u32,
    /// `row` or `base`.
    side: &'static str,
    /// Whether this side ran first in its block.
    first: bool,
    #[serde(flatten)]
    step: StepEntry,
}

/// `ROW.compare.json`.
#[derive(Debug, Clone, Serialize)]
struct CompareIndex<'a> {
    row: &'a str,
    label: &'a str,
    against: &'a str,
    against_label: &'a str,
    /// The target whose max rate the rates are a share of, and the bounds
    /// a step is judged valid by.
    target: Rules,
    /// The baseline's max rate at that target, from its sweep.
    base_max_rate: f64,
    /// True when that is only its highest passing step (its sweep never
    /// got past the target, or the client was the limit first).
    base_max_is_lower_bound: bool,
    blocks: u32,
    seed: u64,
    steps: &'a [CompareEntry],
}

/// Every comparison of the file: a record per compared row (repetition
/// 2, after its sweep's), or none when the file asks for none. True when
/// interrupted.
pub fn run_all(
    run: &Prepared,
    scenarios: &[Scenario],
    settings: &SweepSettings,
    baseline: &str,
    rows: &mut Vec<RowRecord>,
) -> anyhow::Result<bool> {
    let Some(base_index) = scenarios.iter().position(|s| s.name == baseline) else {
        return Ok(false);
    };
    let base = &scenarios[base_index];
    let compared: Vec<(usize, &Scenario)> = scenarios
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            s.name != baseline
                && settings
                    .compare
                    .as_ref()
                    .is_none_or(|c| c.contains(&s.name))
        })
        .collect();
    let target = settings.rules(settings.slos[0]);
    for (index, row) in compared {
        if run.stopping() {
            return Ok(true);
        }
        let mut facts = RowFacts::default();
        let outcome = base_max_rate(run, base, &target).and_then(|(max, lower)| {
            let pair = Pair {
                run,
                settings,
                target,
                row: (index, row),
                base: (base_index, base),
                base_max_rate: max,
                base_max_is_lower_bound: lower,
            };
            pair.compare(&mut facts)
        });
        let (rec, stopped) = RowRecord::build(row, 2, facts, outcome);
        match &rec.error {
            None => println!("{}: compared with {baseline}", rec.scenario),
            Some(e) => println!("{}: comparison FAILED: {e}", rec.scenario),
        }
        rows.push(rec);
        if stopped.is_some() {
            return Ok(true);
        }
    }
    Ok(run.stopping())
}

/// The baseline's max rate at `target`, as the analysis reads its sweep;
/// when its sweep never got past the target (or the client was the limit
/// first), its highest passing step, a lower bound (then `true`).
fn base_max_rate(run: &Prepared, base: &Scenario, target: &Rules) -> anyhow::Result<(f64, bool)> {
    let index = run.table_dir.join(format!("{}.sweep.json", base.name));
    let rows = analysis::sweep::report::row(run.table_dir, &index)?;
    let slo = target.slo.to_string();
    let Some(row) = rows.iter().find(|r| r.slo == slo) else {
        anyhow::bail!("the baseline {}'s sweep has no target {slo}", base.name);
    };
    let passing = row
        .steps
        .iter()
        .filter(|s| s.passes)
        .map(|s| s.step.rate)
        .reduce(f64::max);
    match (row.max_rate_at_slo, row.bracket, passing) {
        (Some(m), None, _) => Ok((m, false)),
        (_, Some("above" | "client"), Some(p)) => Ok((p, true)),
        _ => anyhow::bail!(
            "the baseline {} has no rate that meets {slo} to compare at (its sweep: {})",
            base.name,
            row.bracket.unwrap_or("no bracket")
        ),
    }
}

/// One compared row and the baseline.
struct Pair<'a, 'b> {
    run: &'a Prepared<'b>,
    settings: &'a SweepSettings,
    target: Rules,
    row: (usize, &'a Scenario),
    base: (usize, &'a Scenario),
    base_max_rate: f64,
    base_max_is_lower_bound: bool,
}

impl Pair<'_, '_> {
    /// Every block at every percentage; writes `ROW.compare.json` as it
    /// goes, so that an interrupted comparison keeps its whole blocks.
    /// `facts` (the compared row's record) takes the row's stacks only;
    /// the baseline's are checked the same way, and a failure still ends
    /// the comparison, but they do not overwrite the row's start-up line,
    /// verification and count.
    fn compare(&self, facts: &mut RowFacts) -> anyhow::Result<()> {
        let mut base_facts = RowFacts::default();
        let seed = rand::random::<u64>();
        let orders = plan_orders(seed, self.settings.compare_blocks);
        let mut entries = Vec::new();
        for &pct in &self.settings.compare_at {
            let rate = self.base_max_rate * pct / 100.0;
            for (b, order) in orders.iter().enumerate() {
                let block = b as u32 + 1;
                let sides = match order {
                    Order::Ab => [("row", self.row), ("base", self.base)],
                    Order::Ba => [("base", self.base), ("row", self.row)],
                };
                let mut pair = Vec::new();
                for (k, (side, (index, scenario))) in sides.into_iter().enumerate() {
                    let name = format!("cmp-{}-{pct}-b{block:02}", self.row.1.name);
                    let side_facts = match side {
                        "row" => &mut *facts,
                        _ => &mut base_facts,
                    };
                    let step = self.one(index, scenario, &name, rate, side_facts)?;
                    pair.push(CompareEntry {
                        pct,
                        block,
                        side,
                        first: k == 0,
                        step,
                    });
                }
                entries.extend(pair);
                self.write(seed, &entries)?;
            }
        }
        Ok(())
    }

    /// One step of `scenario` at `rate` on a fresh stack.
    fn one(
        &self,
        index: usize,
        scenario: &Scenario,
        name: &str,
        rate: f64,
        facts: &mut RowFacts,
    ) -> anyhow::Result<StepEntry> {
        let stem = format!("{}.{name}", scenario.name);
        let job = Job::new(self.run, (index, scenario, 2, stem));
        let mut entries = Vec::new();
        let mut logs: Vec<PathBuf> = Vec::new();
        let outcome = on_fresh_stack(&job, facts, |place, stack, facts| {
            let before = verify(job.scenario, place, stack, facts)?;
            let mut stepper = Stepper {
                job: &job,
                settings: self.settings,
                place,
                stack,
                entries: &mut entries,
                logs: &mut logs,
                loadgen: &mut facts.loadgen,
                cpus: &mut facts.cpus,
            };
            stepper.step("compare", name, rate)?;
            check_counter(&job, place, stack, before, &logs, facts)
        });
        let _ = std::fs::remove_dir_all(&job.tmp);
        outcome?;
        entries
            .pop()
            .ok_or_else(|| anyhow::anyhow!("{name}: no step recorded"))
    }

    fn write(&self, seed: u64, entries: &[CompareEntry]) -> anyhow::Result<()> {
        let (row, base) = (self.row.1, self.base.1);
        let index = CompareIndex {
            row: &row.name,
            label: &row.label,
            against: &base.name,
            against_label: &base.label,
            target: self.target,
            base_max_rate: self.base_max_rate,
            base_max_is_lower_bound: self.base_max_is_lower_bound,
            blocks: self.settings.compare_blocks,
            seed,
            steps: entries,
        };
        let path = self
            .run
            .table_dir
            .join(format!("{}.compare.json", row.name));
        analysis::files::write_atomic(&path, &serde_json::to_vec_pretty(&index)?)?;
        Ok(())
    }
}
