//! Interleaved searches (`[sweep] interleave = true`): after every row's
//! sweep, each search runs on a fresh stack, in rounds across the rows
//! (search 1 of every row in file order, search 2 in the reverse order,
//! and so on), so that a row's searches are independent processes spread
//! over the run, and search R of a row ran beside search R of the
//! baseline. Searches that shared the sweep's stack, minutes together,
//! agreed with each other about four times better than with a rerun
//! (results/README.md, "The knee, redefined, and max rates against the
//! baseline"): their interval was over the wrong unit.
//!
//! Each row's `ROW.sweep.json` is rewritten after each of its searches;
//! `meta.json` gets one record per row for its search stacks
//! (repetition 3), their CPU summed and each stack's counter checked.

use super::sweep::{
    check_counter, on_fresh_stack, search, verify, write_index, Left, Pending, Stepper,
};
use crate::config::sweep::SweepSettings;
use crate::design::{Job, Prepared};
use crate::record::meta::Meta;
use crate::record::row::{RowFacts, RowRecord};
use crate::Interrupted;

/// The repetition number of a row's search stacks in `meta.json` (1: its
/// sweep; 2: a comparison at equal rates).
pub const SEARCH_REPETITION: u32 = 3;

/// The order of the rows in round `r` (from 1): forward, then backward.
pub fn round_order(n: usize, r: u32) -> Vec<usize> {
    if r % 2 == 1 {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    }
}

/// Every round of searches; records each row's search stacks in `rows`
/// and `meta.json`. True when interrupted.
pub fn run_rounds(
    run: &Prepared,
    settings: &SweepSettings,
    pending: &mut [Pending],
    meta: &mut Meta,
    rows: &mut Vec<crate::record::row::RowRecord>,
) -> anyhow::Result<bool> {
    if pending.is_empty() {
        return Ok(false);
    }
    let mut facts: Vec<RowFacts> = pending.iter().map(|_| RowFacts::default()).collect();
    let mut failed: Vec<Option<anyhow::Error>> = pending.iter().map(|_| None).collect();
    let mut interrupted = false;
    'rounds: for r in 1..=settings.repeats {
        for i in round_order(pending.len(), r) {
            if failed[i].is_some() {
                continue;
            }
            if run.stopping() {
                interrupted = true;
                break 'rounds;
            }
            let p = &mut pending[i];
            let stem = format!("{}.search-{r}", p.scenario.name);
            let job = Job::new(run, (p.index, p.scenario, SEARCH_REPETITION, stem));
            let outcome = one_search(&job, settings, &mut p.left, r, &mut facts[i]);
            let _ = std::fs::remove_dir_all(&job.tmp);
            // The steps that ran are indexed, whatever became of the rest.
            let written = write_index(&job, settings, &p.left.targets, &p.left.entries);
            match outcome.and(written) {
                Ok(()) => println!("{}: search {r} done", p.scenario.name),
                Err(e) if e.is::<Interrupted>() => {
                    failed[i] = Some(e);
                    interrupted = true;
                    break 'rounds;
                }
                Err(e) => {
                    println!("{}: search {r} FAILED: {e:#}", p.scenario.name);
                    failed[i] = Some(e);
                }
            }
        }
    }
    for ((p, f), e) in pending.iter().zip(facts).zip(failed) {
        let outcome = e.map_or(Ok(()), Err);
        let (rec, _) = RowRecord::build(p.scenario, SEARCH_REPETITION, f, outcome);
        rows.push(rec);
    }
    meta.rows = rows.clone();
    meta.write(run.dir)?;
    Ok(interrupted)
}

/// Search `r` of every target with a bracket, on a fresh stack.
fn one_search(
    job: &Job,
    settings: &SweepSettings,
    left: &mut Left,
    r: u32,
    facts: &mut RowFacts,
) -> anyhow::Result<()> {
    on_fresh_stack(job, facts, |place, stack, facts| {
        let before = verify(job.scenario, place, stack, facts)?;
        let mut logs = Vec::new();
        let mut runner = Stepper {
            job,
            settings,
            place,
            stack,
            entries: &mut left.entries,
            logs: &mut logs,
            loadgen: &mut facts.loadgen,
            cpus: &mut facts.cpus,
        };
        for &(t, low, high) in &left.brackets {
            search(
                &mut runner,
                settings,
                (t, &left.targets[t - 1]),
                (low, high),
                r,
            )?;
        }
        check_counter(job, place, stack, before, &logs, facts)
    })
}

#[cfg(test)]
mod tests {
    use super::round_order;

    #[test]
    fn rounds_go_forward_then_backward() {
        assert_eq!(round_order(3, 1), [0, 1, 2]);
        assert_eq!(round_order(3, 2), [2, 1, 0]);
        assert_eq!(round_order(3, 3), [0, 1, 2]);
        assert_eq!(round_order(1, 2), [0]);
    }
}
