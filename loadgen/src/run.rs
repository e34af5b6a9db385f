//! Starts the workers, merges their per-interval snapshots and hands each
//! closed interval to the output as soon as every worker reported it.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::config::Config;
use crate::record::{IntervalHead, IntervalRecord, SummaryRecord};
use crate::stats::Stats;
use crate::worker::{self, Snapshot, WorkerSpec};

/// Where records go as they happen.
pub trait Sink {
    fn interval(&mut self, record: &IntervalRecord) -> std::io::Result<()>;
}

/// Why a run could not happen.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot connect to {url} ({addr}): {source}")]
    Unreachable {
        url: String,
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("writing a record: {0}")]
    Output(#[source] std::io::Error),
    #[error("worker thread failed: {0}")]
    Worker(String),
}

/// Runs the load described by `config`, streaming interval records to `sink`,
/// and returns the summary of the measured (non-warm-up) part.
pub fn run(
    config: Config,
    sink: &mut dyn Sink,
    stop: Arc<AtomicBool>,
) -> Result<SummaryRecord, RunError> {
    // One connection first, so a target that never answers is one clear error.
    std::net::TcpStream::connect_timeout(
        &config.target.addr,
        config.timeout.min(Duration::from_secs(5)),
    )
    .map_err(|source| RunError::Unreachable {
        url: config.target.url.clone(),
        addr: config.target.addr,
        source,
    })?;

    // The barrier: every process given the same --start-at starts here.
    if let Some(at) = config.start_at {
        if let Ok(wait) = at.duration_since(SystemTime::now()) {
            sleep_unless(wait, &stop);
        }
    }
    let config = Arc::new(config);
    let threads = config.threads.min(config.connections).max(1);
    let (tx, rx) = mpsc::channel::<Snapshot>();
    let start = Instant::now();
    let start_wall = SystemTime::now();
    let mut handles = Vec::with_capacity(threads);
    let mut spares = Vec::with_capacity(threads);
    let mut first_conn = 0;
    for id in 0..threads {
        let conns = config.connections / threads + usize::from(id < config.connections % threads);
        let budget = config
            .requests
            .map(|n| n / threads as u64 + u64::from((id as u64) < n % threads as u64));
        let (spare_tx, spare) = mpsc::channel::<Stats>();
        spares.push(spare_tx);
        let spec = WorkerSpec {
            id,
            first_conn,
            conns,
            budget,
            start,
            config: Arc::clone(&config),
            stop: Arc::clone(&stop),
            tx: tx.clone(),
            spare,
        };
        first_conn += conns;
        let handle = std::thread::Builder::new()
            .name(format!("loadgen-{id}"))
            .spawn(move || worker::run(spec))
            .map_err(|e| RunError::Worker(e.to_string()))?;
        handles.push(handle);
    }
    drop(tx);

    let mut collector = Collector::new(&config, spares, start, start_wall);
    for snapshot in rx {
        collector.add(snapshot, sink)?;
    }
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(RunError::Worker(e.to_string())),
            Err(_) => return Err(RunError::Worker("a worker panicked".into())),
        }
    }
    Ok(collector.summary())
}

/// Sleeps `d`, waking early when `stop` is set (Ctrl-C during the barrier).
fn sleep_unless(d: Duration, stop: &AtomicBool) {
    let until = Instant::now() + d;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

struct Pending {
    snapshots: Vec<Snapshot>,
}

struct Collector<'a> {
    config: &'a Config,
    start: Instant,
    start_wall: SystemTime,
    pending: BTreeMap<u64, Pending>,
    /// Where each worker takes its emptied `Stats` back from.
    spares: Vec<mpsc::Sender<Stats>>,
    /// The interval's workers merged, emptied and reused every interval.
    merged: Stats,
    /// Last index each stopped worker reported.
    stopped_at: Vec<Option<u64>>,
    next_index: u64,
    total_ok: u64,
    measured: Stats,
    measured_ms: f64,
    measured_intervals: u64,
    /// https: the TLS version and cipher suite the first handshake agreed on.
    tls: Option<(&'static str, &'static str)>,
}

impl<'a> Collector<'a> {
    fn new(
        config: &'a Config,
        spares: Vec<mpsc::Sender<Stats>>,
        start: Instant,
        start_wall: SystemTime,
    ) -> Self {
        Collector {
            config,
            start,
            start_wall,
            pending: BTreeMap::new(),
            stopped_at: vec![None; spares.len()],
            spares,
            merged: Stats::default(),
            next_index: 0,
            total_ok: 0,
            measured: Stats::default(),
            measured_ms: 0.0,
            measured_intervals: 0,
            tls: None,
        }
    }

    fn add(&mut self, snapshot: Snapshot, sink: &mut dyn Sink) -> Result<(), RunError> {
        if snapshot.last {
            self.stopped_at[snapshot.worker] = Some(snapshot.index);
        }
        self.pending
            .entry(snapshot.index)
            .or_insert_with(|| Pending {
                snapshots: Vec::new(),
            })
            .snapshots
            .push(snapshot);
        // Emit every interval that all running workers have reported.
        while let Some(p) = self.pending.get(&self.next_index) {
            let expected = self
                .stopped_at
                .iter()
                .filter(|s| s.is_none_or(|last| last >= self.next_index))
                .count();
            if p.snapshots.len() < expected {
                break;
            }
            let p = self.pending.remove(&self.next_index).expect("present");
            self.emit(p, sink)?;
            self.next_index += 1;
        }
        Ok(())
    }

    fn emit(&mut self, p: Pending, sink: &mut dyn Sink) -> Result<(), RunError> {
        let snapshots = p.snapshots;
        let length_ms = snapshots
            .iter()
            .map(|s| s.end.duration_since(s.start).as_secs_f64() * 1000.0)
            .sum::<f64>()
            / snapshots.len() as f64;
        let start = snapshots.iter().map(|s| s.start).min();
        let end = snapshots
            .iter()
            .map(|s| s.end)
            .fold(self.start, Instant::max);
        // One worker's snapshot is the interval itself: merging it into a
        // copy first cost the sending CPU about 0.25 ms an interval.
        let result = if let [only] = snapshots.as_slice() {
            self.emit_merged(&only.stats, length_ms, start, end, sink)
        } else {
            let mut merged = std::mem::take(&mut self.merged);
            merged.reset();
            for s in &snapshots {
                merged.merge(&s.stats);
            }
            let result = self.emit_merged(&merged, length_ms, start, end, sink);
            self.merged = merged;
            result
        };
        for s in snapshots {
            let mut spare = s.stats;
            spare.reset();
            // A stopped worker no longer takes it back; that is fine.
            let _ = self.spares[s.worker].send(spare);
        }
        result
    }

    fn emit_merged(
        &mut self,
        stats: &Stats,
        length_ms: f64,
        start: Option<Instant>,
        end: Instant,
        sink: &mut dyn Sink,
    ) -> Result<(), RunError> {
        // A closing fragment too short to measure anything is not an interval.
        if length_ms < 1.0 && stats.responses() + stats.error_total() == 0 {
            return Ok(());
        }
        let start = start.unwrap_or(self.start);
        let offset = start.duration_since(self.start);
        let start_unix_ms = (self.start_wall + offset)
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let warmup = self.next_index < self.config.warmup_intervals();
        self.total_ok += stats.ok();
        let head = IntervalHead {
            index: self.next_index,
            start_unix_ms,
            length_ms,
            elapsed_s: end.duration_since(self.start).as_secs_f64(),
            warmup,
            https: self.config.target.tls.is_some(),
        };
        self.tls = self.tls.or(stats.tls);
        let record = IntervalRecord::new(head, stats, self.total_ok, self.config.shard.as_deref());
        if !warmup {
            self.measured.merge(stats);
            self.measured_ms += length_ms;
            self.measured_intervals += 1;
        }
        sink.interval(&record).map_err(RunError::Output)
    }

    fn summary(&mut self) -> SummaryRecord {
        // The TLS agreement, from whichever interval's handshakes made it
        // (the warm-up's too).
        self.measured.tls = self.tls;
        SummaryRecord::new(
            &self.measured,
            self.measured_ms / 1000.0,
            self.measured_intervals,
            self.config.shard.as_deref(),
        )
    }
}
