//! Scheduling: when each connection acts next. The timers (an open-model
//! request falling due, a connect backoff ending, a gate opening), the
//! connections whose next request goes out after this batch of events, the
//! ones left readable, the µs-precise wake-up of the open model, and the
//! thread's own scheduling policy.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::time::{Duration, Instant};

use crate::timer::TimerFd;

pub(super) struct Agenda {
    /// (when, connection, its generation then).
    timers: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    /// Connections whose response completed during this batch of events;
    /// their next requests go out together after the batch.
    pub ready: Vec<usize>,
    /// Connections left readable after a bounded number of reads: read
    /// again after the next (non-blocking) poll, since an edge-triggered
    /// poll does not report them again.
    pub unread: Vec<usize>,
    /// Open model: the µs-precise wake-up (see [`crate::timer`]).
    pub timer: Option<TimerFd>,
}

impl Agenda {
    pub fn new(conns: usize, open_model: bool) -> io::Result<Agenda> {
        Ok(Agenda {
            timers: BinaryHeap::new(),
            ready: Vec::with_capacity(conns),
            unread: Vec::new(),
            timer: if open_model {
                Some(TimerFd::new()?)
            } else {
                None
            },
        })
    }

    /// Connection `i` (of generation `gen`) acts at `at`.
    pub fn at(&mut self, at: Instant, i: usize, gen: u64) {
        self.timers.push(Reverse((at, i, gen)));
    }

    /// The next timer due by `now`: its connection and generation.
    pub fn pop_due(&mut self, now: Instant) -> Option<(usize, u64)> {
        match self.timers.peek() {
            Some(Reverse((t, i, gen))) if *t <= now => {
                let due = (*i, *gen);
                self.timers.pop();
                Some(due)
            }
            _ => None,
        }
    }

    /// The earliest of `wake` and the first timer.
    pub fn wake(&self, wake: Instant) -> Instant {
        match self.timers.peek() {
            Some(Reverse((t, _, _))) => wake.min(*t),
            None => wake,
        }
    }
}

/// Puts the calling thread under SCHED_BATCH.
///
/// Measured with nginx `return 200` and loadgen -c64 sharing one CPU of the
/// 2-core dev machine (2 A/B pairs of 3 s): 300k against 270k requests/s and
/// 1.31 against 1.61 client CPU us per request; wrk under `chrt --batch`
/// gains 4% the same way. The policy only changes who preempts whom on a
/// wake-up; it never starves the thread.
pub(super) fn set_batch_policy() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler(0, ..) changes only the calling thread, with
    // a valid parameter block.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The kernel may delay a timer of a normal thread by up to 50 µs to batch
/// wake-ups; the open model's sends must leave on time.
pub(super) fn precise_timers() {
    // SAFETY: PR_SET_TIMERSLACK changes only the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Connect backoff: wait before reconnecting after a failed connect, so a
/// refusing target is not hammered in a tight loop.
pub(super) const CONNECT_BACKOFF: Duration = Duration::from_millis(20);
