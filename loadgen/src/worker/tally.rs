//! Accounting: the worker's statistics for the interval under way, the
//! requests it has sent against its budget, and the hand-over of each
//! closed interval to the collector.

use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

use crate::stats::Stats;

/// One interval's statistics from one worker.
#[derive(Debug)]
pub struct Snapshot {
    pub worker: usize,
    pub index: u64,
    pub start: Instant,
    pub end: Instant,
    pub stats: Stats,
    /// The worker has stopped; no snapshot with a higher index follows.
    pub last: bool,
}

pub(super) struct Tally {
    worker: usize,
    pub stats: Stats,
    /// Requests sent so far (a batch counts each of its requests).
    pub sent: u64,
    /// Requests this worker may send (`None`: until the deadline).
    budget: Option<u64>,
    /// Index of the interval under way, on the grid from the start.
    pub index: u64,
    interval_start: Instant,
    tx: Sender<Snapshot>,
    spare: Receiver<Stats>,
}

impl Tally {
    pub fn new(
        worker: usize,
        budget: Option<u64>,
        start: Instant,
        tx: Sender<Snapshot>,
        spare: Receiver<Stats>,
    ) -> Tally {
        Tally {
            worker,
            stats: Stats::default(),
            sent: 0,
            budget,
            index: 0,
            interval_start: start,
            tx,
            spare,
        }
    }

    /// Requests may still be sent within the budget.
    pub fn within_budget(&self) -> bool {
        self.budget.is_none_or(|b| self.sent < b)
    }

    /// Every request of the budget was sent (never, without one).
    pub fn budget_spent(&self) -> bool {
        self.budget.is_some_and(|b| self.sent >= b)
    }

    /// Closes the interval under way at `now` and hands it to the collector.
    pub fn snapshot(&mut self, now: Instant, last: bool) {
        // A fresh `Stats` is three histograms of about 200 KB each. Allocating
        // it here, and the collector merging it into another fresh one and
        // freeing both, took the sending thread's CPU (the collector shares
        // it when loadgen is pinned to one) for 0.56-0.95 ms at every
        // interval boundary: loadgen -c 256 --rate 20000 --spin-before 1ms
        // against nginx on the other CPU, 2-vCPU VM, 2026-11-26, read a send
        // lateness max of 558-948 µs (median 715) in each 1 s interval. With
        // each snapshot's `Stats` emptied and handed back by the collector
        // (only the first intervals allocate) and one worker's snapshot
        // emitted without a merged copy (`run.rs`), 299-627 µs (median 327);
        // the rest is mostly the interval record's histogram encoding.
        let fresh = self.spare.try_recv().unwrap_or_default();
        let stats = std::mem::replace(&mut self.stats, fresh);
        let _ = self.tx.send(Snapshot {
            worker: self.worker,
            index: self.index,
            start: self.interval_start,
            end: now,
            stats,
            last,
        });
        self.index += 1;
        self.interval_start = now;
    }
}
