//! The order of a paired file's blocks over the sitting (one invocation of
//! the runner), `[paired] spread`:
//! - `comparison` (the default): each comparison's blocks one after
//!   another, its runs in rounds (every comparison once, then again);
//! - `sitting`: the sitting in rounds of one block of every comparison and
//!   run, each round in an order drawn from the seed, so that each
//!   comparison's blocks sample the whole sitting, not a few minutes of it.
//!   The plan is drawn and written to meta.json before the first block.

use std::collections::BTreeMap;

use anyhow::Context;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::config::scenario::{PairedSettings, Scenario, Spread};
use crate::design::paired::{compare, Comparison, Ctx, Stepped};
use crate::design::{each, Prepared, RunOutcome};
use crate::record::comparison::ComparisonRecord;
use crate::record::meta::{Meta, PlannedBlock};
use crate::record::progress::Progress;
use crate::record::report;

/// Every row against its baseline (`against`, else the first row); with
/// `only`, that row alone (the rows it is compared with run beside it,
/// uncompared).
pub fn run_all(
    run: &Prepared,
    scenarios: &[Scenario],
    only: Option<&str>,
    settings: &PairedSettings,
    meta: &mut Meta,
) -> anyhow::Result<RunOutcome> {
    let (first, rows) = scenarios.split_first().context("no baseline")?;
    let pairs: Vec<(&Scenario, &Scenario)> = rows
        .iter()
        .filter(|r| only.is_none_or(|o| o == r.name))
        .map(|r| {
            let base = match &r.against {
                Some(a) => scenarios
                    .iter()
                    .find(|s| &s.name == a)
                    .with_context(|| format!("{}: no row {a:?} to compare with", r.name)),
                None => Ok(first),
            };
            base.map(|b| (b, r))
        })
        .collect::<anyhow::Result<_>>()?;
    let planned = u64::from(settings.runs) * pairs.len() as u64 * u64::from(settings.blocks);
    let ctx = Ctx {
        run,
        settings,
        progress: Progress::new(planned),
    };
    meta.design = "paired".into();
    let (comparisons, interrupted) = match settings.spread {
        Spread::Comparison => in_rounds(&ctx, &pairs, meta)?,
        Spread::Sitting => over_the_sitting(&ctx, &pairs, meta)?,
    };
    ctx.progress.finish();
    if settings.runs > 1 && !interrupted {
        for (base, row) in &pairs {
            let dir = run.table_dir.join(&row.name);
            report::print_across_runs(&row.name, &base.name, &dir, settings.effect());
        }
    }
    Ok(RunOutcome {
        comparisons,
        ..RunOutcome::of(run.dir, interrupted)
    })
}

/// Each comparison's blocks one after another; runs in rounds (every
/// comparison once, then again), so that a comparison's runs are apart in
/// time, separated by the others.
fn in_rounds(
    ctx: &Ctx,
    pairs: &[(&Scenario, &Scenario)],
    meta: &mut Meta,
) -> anyhow::Result<(Vec<ComparisonRecord>, bool)> {
    let settings = ctx.settings;
    let mut comparisons = Vec::new();
    let units =
        (1..=settings.runs).flat_map(|r| pairs.iter().enumerate().map(move |(i, p)| (r, i, *p)));
    let interrupted = each(ctx.run, units, |(r, i, (base, row))| {
        ctx.progress.comparison(&row.name, &base.name);
        // meta.json after every block too: what a runner killed by SIGKILL
        // leaves names the blocks it finished.
        let mut unwritten = None;
        let (rec, stopped) = compare(ctx, base, row, i, r, &mut |so_far| {
            meta.paired = comparisons.iter().chain([so_far]).cloned().collect();
            if let Err(e) = meta.write(ctx.run.dir) {
                unwritten.get_or_insert(e);
            }
        });
        if let Some(e) = unwritten {
            return Err(e);
        }
        ctx.progress
            .suspend(|| report::print_comparison(&rec, settings.effect()));
        comparisons.push(rec);
        crate::hold_at::stage("record");
        meta.paired = comparisons.clone();
        meta.write(ctx.run.dir)?;
        Ok(stopped)
    })?;
    Ok((comparisons, interrupted))
}

/// The plan of `spread = "sitting"`: `blocks` rounds, each one block of
/// every (run, comparison) unit (`units` of them), in an order drawn from
/// `seed`; each entry the unit's index (runs outer, comparisons inner).
pub fn plan_spread(seed: u64, units: usize, blocks: u32) -> Vec<usize> {
    // Apart from the slot orders' seeds (seed + comparison + 1000 run).
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_5b1d);
    let mut plan = Vec::with_capacity(units * blocks as usize);
    for _ in 0..blocks {
        let mut round: Vec<usize> = (0..units).collect();
        round.shuffle(&mut rng);
        plan.extend(round);
    }
    plan
}

/// Every comparison's blocks spread over the sitting by [`plan_spread`],
/// the plan in meta.json before the first block; meta.json rewritten after
/// every block. The records come in the rounds' order (runs outer).
fn over_the_sitting(
    ctx: &Ctx,
    pairs: &[(&Scenario, &Scenario)],
    meta: &mut Meta,
) -> anyhow::Result<(Vec<ComparisonRecord>, bool)> {
    let settings = ctx.settings;
    let units: Vec<(u32, usize)> = (1..=settings.runs)
        .flat_map(|r| (0..pairs.len()).map(move |i| (r, i)))
        .collect();
    let plan = plan_spread(settings.seed, units.len(), settings.blocks);
    meta.plan = plan
        .iter()
        .map(|&u| {
            let (r, i) = units[u];
            PlannedBlock {
                row: pairs[i].1.name.clone(),
                baseline: pairs[i].0.name.clone(),
                run: r,
            }
        })
        .collect();
    meta.write(ctx.run.dir)?;
    // Each unit's comparison, begun at its first block; None once it ended
    // before its last (an error), so its later blocks are skipped.
    let mut live: BTreeMap<usize, Option<Comparison>> = BTreeMap::new();
    let mut ended: BTreeMap<usize, ComparisonRecord> = BTreeMap::new();
    let mut interrupted = false;
    for &u in &plan {
        if ctx.run.stopping() {
            interrupted = true;
            break;
        }
        let (r, i) = units[u];
        let (base, row) = pairs[i];
        let slot = live
            .entry(u)
            .or_insert_with(|| match Comparison::begin(ctx, base, row, i, r) {
                Ok(c) => Some(c),
                Err(rec) => {
                    ended.insert(u, *rec);
                    None
                }
            });
        let Some(c) = slot else { continue };
        ctx.progress.comparison(&row.name, &base.name);
        let stepped = c.step(ctx);
        if matches!(stepped, Stepped::Ended) {
            let c = slot.take().expect("live");
            ctx.progress
                .suspend(|| report::print_comparison(&c.rec, settings.effect()));
            ended.insert(u, c.rec);
        }
        crate::hold_at::stage("record");
        meta.paired = records(&live, &ended);
        meta.write(ctx.run.dir)?;
        if matches!(stepped, Stepped::Interrupted) {
            interrupted = true;
            break;
        }
    }
    // Comparisons a stop cut short keep what they measured.
    for (u, c) in std::mem::take(&mut live) {
        if let Some(mut c) = c {
            if interrupted {
                c.rec.stopped_by = "interrupted".into();
            }
            ended.insert(u, c.rec);
        }
    }
    let comparisons: Vec<ComparisonRecord> = ended.into_values().collect();
    meta.paired = comparisons.clone();
    Ok((comparisons, interrupted || ctx.run.stopping()))
}

/// The records so far, in unit order: ended ones and those under way.
fn records(
    live: &BTreeMap<usize, Option<Comparison>>,
    ended: &BTreeMap<usize, ComparisonRecord>,
) -> Vec<ComparisonRecord> {
    let mut all: BTreeMap<usize, &ComparisonRecord> = ended.iter().map(|(u, r)| (*u, r)).collect();
    for (u, c) in live {
        if let Some(c) = c {
            all.insert(*u, &c.rec);
        }
    }
    all.into_values().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_holds_one_block_of_every_unit_in_a_seeded_order() {
        let plan = plan_spread(4427, 9, 8);
        assert_eq!(plan.len(), 72);
        for round in plan.chunks(9) {
            let mut r = round.to_vec();
            r.sort_unstable();
            assert_eq!(r, (0..9).collect::<Vec<_>>());
        }
        // Drawn from the seed alone: the same plan every time, another for
        // another seed, and not the rounds' plain order.
        assert_eq!(plan, plan_spread(4427, 9, 8));
        assert_ne!(plan, plan_spread(4428, 9, 8));
        assert_ne!(plan[..9], (0..9).collect::<Vec<_>>()[..]);
    }
}
