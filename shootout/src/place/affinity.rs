//! Where a row's processes may run, read back from their hosts' /proc
//! (`Cpus_allowed_list` of every thread of every process of a group), and
//! checked against what the scenario says: a block whose processes are not
//! where the scenario puts them is not recorded.

use std::collections::BTreeSet;

use anyhow::{bail, Context};

pub use analysis::placement::ReadCpus;

/// The CPUs a list such as `0-1,3` names; an error on anything else.
pub fn parse_list(list: &str) -> anyhow::Result<BTreeSet<u32>> {
    let mut set = BTreeSet::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let num = |s: &str| {
            s.trim()
                .parse::<u32>()
                .with_context(|| format!("{list:?} is not a CPU list (such as 0-1,3)"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    bail!("{list:?}: the range {part} runs backwards");
                }
                set.extend(a..=b);
            }
            None => {
                set.insert(num(part)?);
            }
        }
    }
    if set.is_empty() {
        bail!("{list:?} names no CPU");
    }
    Ok(set)
}

/// The shell lines that print `PID TID CPULIST` for every thread of every
/// process in group `pgid` (on a remote host: its process and children,
/// where `pgid` is the process's own pid).
pub fn remote_script(pid: impl std::fmt::Display) -> String {
    format!(
        "for p in {pid} $(pgrep -P {pid}); do {}; done",
        remote_process_script("$p")
    )
}

/// The shell lines that wait, 5 s at most, for `file` on a remote host to
/// hold a pid whose process runs its own program, and leave it in `$p`;
/// `exit 0` (nothing printed, which reads as no thread) when none comes.
/// The lines that start a reader write its pid before it execs, through
/// `taskset` (`echo $$ >FILE; exec taskset ... script`), and run over a
/// new ssh session: read at once, the file may not be there yet, or name
/// a shell not yet placed.
pub fn await_pid_file(file: &str) -> String {
    format!(
        "i=0; while [ $i -lt 100 ]; do p=$(cat {f} 2>/dev/null); \
         if [ -n \"$p\" ]; then case $(cat /proc/$p/comm 2>/dev/null) in \
         ''|sh|dash|bash|taskset) ;; *) break ;; esac; fi; \
         sleep 0.05; i=$((i + 1)); done; [ $i -lt 100 ] || exit 0; ",
        f = crate::place::ssh::quote(file)
    )
}

/// The shell lines that print `PID TID CPULIST` for every thread of
/// process `pid` alone (not its children) on a remote host.
pub fn remote_process_script(pid: impl std::fmt::Display) -> String {
    format!(
        "for t in /proc/{pid}/task/*; do \
         echo \"{pid} ${{t##*/}} $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' $t/status 2>/dev/null)\"; \
         done"
    )
}

/// The shell line that writes the pid of the sshd process serving this
/// session (the shell's parent) to `file` and, with `cpus`, puts it
/// there first (all its threads); a failure ends the command.
pub fn sshd_prefix(file: &str, cpus: Option<&str>) -> String {
    let pin = cpus.map_or(String::new(), |c| {
        format!(
            "taskset -a -p -c {} $PPID >/dev/null || exit 1; ",
            crate::place::ssh::quote(c)
        )
    });
    format!("{pin}echo $PPID >{}; ", crate::place::ssh::quote(file))
}

/// The CPUs of the sshd process whose pid the session left in `file` on
/// `ssh`'s host ([`sshd_prefix`]), as read there against `wanted`.
pub fn sshd_read(
    ssh: &crate::place::ssh::Session,
    file: &str,
    wanted: Option<&str>,
) -> anyhow::Result<ReadCpus> {
    let script = format!("{}{}", await_pid_file(file), remote_process_script("$p"));
    Ok(from_lines("sshd", wanted, &ssh.run(&script)?))
}

/// `PID TID CPULIST` lines (here or from [`remote_script`]) summed up as
/// process `name`'s record; threads that ended meanwhile (no list) are
/// left out.
pub fn from_lines(name: &str, wanted: Option<&str>, text: &str) -> ReadCpus {
    let mut pids = BTreeSet::new();
    let mut lists = BTreeSet::new();
    let mut threads = 0;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(pid), Some(_tid), Some(list)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        pids.insert(pid.to_owned());
        lists.insert(list.to_owned());
        threads += 1;
    }
    ReadCpus {
        process: name.into(),
        wanted: wanted.map(str::to_owned),
        read: lists.into_iter().collect(),
        processes: pids.len(),
        threads,
    }
}

/// Every thread of every process in group `pgid` on this machine, as
/// `PID TID CPULIST` lines.
pub fn group_lines_here(pgid: i32) -> String {
    let mut out = String::new();
    for (pid, _) in crate::place::procs::group(pgid).unwrap_or_default() {
        out += &process_lines_here(pid);
    }
    out
}

/// Every thread of process `pid` on this machine, as `PID TID CPULIST`
/// lines; empty when it has gone.
pub fn process_lines_here(pid: impl std::fmt::Display) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return String::new();
    };
    let mut out = String::new();
    for task in tasks.flatten() {
        let tid = task.file_name().to_string_lossy().into_owned();
        out += &task_line_here(&pid, &tid);
    }
    out
}

/// Thread `tid` of process `pid` on this machine as a `PID TID CPULIST`
/// line; empty when it has gone.
pub fn task_line_here(pid: impl std::fmt::Display, tid: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|list| format!("{pid} {tid} {}\n", list.trim()))
        })
        .unwrap_or_default()
}

/// Puts the calling thread on `cpus` (in a child between fork and exec:
/// the process to be).
pub fn pin_this_thread(cpus: &BTreeSet<u32>) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET only writes
    // inside it for CPUs below CPU_SETSIZE, which the check ensures.
    // Nothing here allocates, so it may run between fork and exec.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c as usize >= libc::CPU_SETSIZE as usize {
                return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
            }
            libc::CPU_SET(c as usize, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `taskset -c CPUS` as words before a program that starts inside another
/// one the runner does not exec itself (a terminal emulator's shell, an
/// ssh session), where [`pin_at_exec`] cannot reach; nothing for none.
pub fn pinned(cpus: Option<&str>) -> Vec<String> {
    cpus.map_or_else(Vec::new, |c| vec!["taskset".into(), "-c".into(), c.into()])
}

/// Makes `cmd`'s process start on `cpus` (none: where the scheduler puts
/// it), set before it execs: its CPUs read back at once are already these.
pub fn pin_at_exec(cmd: &mut std::process::Command, cpus: Option<&str>) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let Some(cpus) = cpus else { return Ok(()) };
    let set = parse_list(cpus)?;
    // SAFETY: the closure only calls sched_setaffinity on a set built
    // beforehand (async-signal-safe, no allocation).
    unsafe {
        cmd.pre_exec(move || pin_this_thread(&set));
    }
    Ok(())
}

/// The check of a [`ReadCpus`] (the record lives in `analysis`, with every
/// design's records).
pub trait Check {
    /// An error when nothing was read, or when a thread may run on a CPU
    /// set other than the one the scenario asks for.
    fn check(&self) -> anyhow::Result<()>;
}

impl Check for ReadCpus {
    fn check(&self) -> anyhow::Result<()> {
        if self.threads == 0 {
            bail!(
                "the {}'s CPUs could not be read: no thread found",
                self.process
            );
        }
        let Some(wanted) = &self.wanted else {
            return Ok(());
        };
        let want = parse_list(wanted)?;
        for list in &self.read {
            if parse_list(list)? != want {
                bail!(
                    "the {} runs on CPUs {} where the scenario says {wanted}: not recorded",
                    self.process,
                    self.read.join(" and ")
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_list("0-2,5").unwrap(), [0, 1, 2, 5].into());
        assert_eq!(parse_list("1").unwrap(), [1].into());
        for bad in ["", "x", "3-1", "1-"] {
            assert!(parse_list(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_pid_file_is_awaited_until_its_process_runs_its_program() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("reader");
        let file = file.to_str().unwrap();
        let run = |after: &str| {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{}{after}", await_pid_file(file)))
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        // Written late, by a shell that then becomes the reader: the
        // script waits for both.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "sleep 0.3; echo $$ >{file}; sleep 0.3; exec sleep 5"
            ))
            .spawn()
            .unwrap();
        let seen = run("echo $p $(cat /proc/$p/comm)");
        assert_eq!(seen.trim(), format!("{} sleep", child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
        // Gone: nothing, so the read finds no thread.
        assert_eq!(run("echo found $p"), "");
    }

    #[test]
    fn a_thread_off_its_cpus_fails_the_check() {
        let ok = from_lines("server", Some("1"), "10 10 1\n10 11 1\n");
        assert_eq!(
            (ok.processes, ok.threads, ok.read.clone()),
            (1, 2, vec!["1".into()])
        );
        ok.check().unwrap();
        let off = from_lines("nginx", Some("1"), "20 20 1\n21 21 0-1\n");
        let e = off.check().unwrap_err().to_string();
        assert!(e.contains("nginx runs on CPUs 0-1 and 1"), "{e}");
        let free = from_lines("nginx", None, "20 20 0-1\n");
        free.check().unwrap();
        assert!(from_lines("loadgen", Some("0"), "").check().is_err());
    }

    #[test]
    fn this_process_reads_its_own_cpus() {
        let me = std::process::id() as i32;
        // The test's own group may hold other processes; its own pid is in it.
        let pgid = unsafe { libc::getpgid(0) };
        let lines = group_lines_here(pgid);
        assert!(
            lines.lines().any(|l| l.starts_with(&format!("{me} "))),
            "{lines}"
        );
        let r = from_lines("test", None, &lines);
        assert!(r.threads >= 1);
        for list in &r.read {
            parse_list(list).unwrap();
        }
    }
}
