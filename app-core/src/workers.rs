//! `--workers N|logical|physical`: one rule for both frameworks.
//!
//! The original study ran ntex with one worker per logical CPU and actix
//! with one per physical core; a scenario can reproduce that split by
//! naming the rule per row, and the start-up line says which applied.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::str::FromStr;

/// How many worker threads a server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Workers {
    /// Exactly this many.
    Count(NonZeroUsize),
    /// One per logical CPU this process may run on (the default).
    #[default]
    Logical,
    /// One per physical core among those CPUs (hyper-threads counted once).
    Physical,
}

impl FromStr for Workers {
    type Err = String;

    fn from_str(s: &str) -> Result<Workers, String> {
        match s {
            "logical" => Ok(Workers::Logical),
            "physical" => Ok(Workers::Physical),
            n => n
                .parse::<NonZeroUsize>()
                .map(Workers::Count)
                .map_err(|_| format!("{s:?}: expected a number above 0, logical or physical")),
        }
    }
}

impl std::fmt::Display for Workers {
    /// The flag's value: `3`, `logical` or `physical`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Workers::Count(n) => write!(f, "{n}"),
            other => f.write_str(other.rule()),
        }
    }
}

impl Workers {
    /// The rule's name for the start-up line: `count`, `logical`, `physical`.
    pub fn rule(self) -> &'static str {
        match self {
            Workers::Count(_) => "count",
            Workers::Logical => "logical",
            Workers::Physical => "physical",
        }
    }

    /// The number of workers on this machine.
    pub fn resolve(self) -> usize {
        match self {
            Workers::Count(n) => n.get(),
            Workers::Logical => logical(),
            Workers::Physical => physical().unwrap_or_else(logical),
        }
    }
}

fn logical() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

/// Distinct (package, core) pairs among the CPUs this process may use;
/// none when the affinity or the topology cannot be read.
fn physical() -> Option<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // fills at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return None;
    }
    let mut cores = BTreeSet::new();
    for cpu in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: `cpu` is below CPU_SETSIZE.
        if !unsafe { libc::CPU_ISSET(cpu, &set) } {
            continue;
        }
        let read = |f: &str| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{f}"))
                .ok()
                .map(|s| s.trim().to_string())
        };
        cores.insert((read("physical_package_id")?, read("core_id")?));
    }
    (!cores.is_empty()).then_some(cores.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_counts_and_rules() {
        assert_eq!(
            "3".parse(),
            Ok(Workers::Count(NonZeroUsize::new(3).unwrap()))
        );
        assert_eq!("logical".parse(), Ok(Workers::Logical));
        assert_eq!("physical".parse(), Ok(Workers::Physical));
        assert!("0"
            .parse::<Workers>()
            .unwrap_err()
            .contains("logical or physical"));
        assert!("many".parse::<Workers>().is_err());
    }

    #[test]
    fn physical_never_exceeds_logical() {
        let (p, l) = (Workers::Physical.resolve(), Workers::Logical.resolve());
        assert!(p >= 1 && p <= l, "physical {p}, logical {l}");
        assert_eq!(Workers::Count(NonZeroUsize::new(5).unwrap()).resolve(), 5);
    }
}
