//! Waiting for loadgens: the one loop every design runs while its load is
//! on. It polls the loadgens, calls back at a period so that the design can
//! sample usage, forwards SIGINT to them (they then write their summary and
//! exit), and fails when the server dies or a loadgen outlives its
//! deadline, stopping every loadgen first.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use crate::place::running::Running;
use crate::stack::Stack;

/// How [`wait`] ended when nothing failed.
pub enum Waited {
    /// Every loadgen exited by itself.
    Done(Vec<ExitStatus>),
    /// The run was stopping: every loadgen was sent SIGINT and has exited.
    Interrupted(Vec<ExitStatus>),
}

/// The limits of one wait.
pub struct Limits<'a> {
    /// From the start of the wait; a loadgen still running then is stopped.
    pub deadline: Duration,
    /// How often `tick` is called (first at once).
    pub every: Duration,
    /// How long to sleep between polls.
    pub poll: Duration,
    /// True once the run should stop (SIGINT).
    pub stopping: &'a dyn Fn() -> bool,
}

/// Waits for every loadgen in `loadgens` (`proc_of` reaches its process).
/// `tick` gets the stack, the loadgens and the time since the start.
pub fn wait<T>(
    loadgens: &mut [T],
    proc_of: impl Fn(&mut T) -> &mut Running,
    stack: &mut Stack,
    limits: Limits,
    mut tick: impl FnMut(&Stack, &[T], Duration),
) -> anyhow::Result<Waited> {
    let started = Instant::now();
    let mut ticked: Option<Instant> = None;
    let mut interrupted = false;
    let fail = |loadgens: &mut [T], e: anyhow::Error| {
        for l in loadgens.iter_mut() {
            let _ = proc_of(l).stop(Duration::from_secs(2));
        }
        Err(e)
    };
    loop {
        let done: Vec<ExitStatus> = loadgens
            .iter_mut()
            .filter_map(|l| proc_of(l).try_wait())
            .collect();
        if done.len() == loadgens.len() {
            return Ok(if interrupted {
                Waited::Interrupted(done)
            } else {
                Waited::Done(done)
            });
        }
        if ticked.is_none_or(|t| t.elapsed() >= limits.every) {
            ticked = Some(Instant::now());
            tick(stack, loadgens, started.elapsed());
        }
        if (limits.stopping)() && !interrupted {
            interrupted = true;
            for l in loadgens.iter_mut() {
                let _ = proc_of(l).interrupt();
            }
        }
        if let Err(e) = stack.check_alive() {
            return fail(loadgens, e);
        }
        if started.elapsed() > limits.deadline {
            let e = anyhow::anyhow!("the loadgens did not finish within {:?}", limits.deadline);
            return fail(loadgens, e);
        }
        let nap = if interrupted {
            Duration::from_millis(20)
        } else {
            limits.poll
        };
        std::thread::sleep(nap);
    }
}
