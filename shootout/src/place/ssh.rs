//! A remote host reached with plain OpenSSH (issue 14): one multiplexed
//! connection per host (`ControlMaster`, kept by `ControlPersist`), batch
//! mode, strict host keys against a known_hosts file the user gives,
//! keep-alives. On it: run a command, check the host (preflight), upload a
//! binary by content hash, and measure the clock offset. No agent of our own
//! on the other side: only `sh`, `uname`, `nproc`, `sha256sum`, `cat`,
//! `date`, `mkdir`, `mv`, `rm`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use sha2::{Digest, Sha256};

pub use crate::config::hosts::{RemoteHost, SshSettings};

/// What preflight found on a host (recorded in `meta.json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Preflight {
    pub arch: String,
    pub cores: u32,
    pub kernel: String,
}

/// One clock reading: the remote clock minus ours, measured at the middle of
/// the round trip, and that round trip.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ClockOffset {
    pub offset_ms: f64,
    pub rtt_ms: f64,
}

/// The command that reads a host's clock (seconds since the epoch with a
/// fraction). Tests replace it with `SHOOTOUT_TEST_CLOCK_CMD` to fake a
/// skewed host; nothing else should.
fn clock_command() -> String {
    std::env::var("SHOOTOUT_TEST_CLOCK_CMD").unwrap_or_else(|_| "date +%s.%N".to_string())
}

/// An open, multiplexed connection to one host. Closed (the master told to
/// exit) when the session that opened it drops; a [`Session::handle`] only
/// uses it.
pub struct Session {
    pub host: RemoteHost,
    settings: SshSettings,
    control: PathBuf,
    owner: bool,
}

impl Session {
    /// Starts the master connection (`ssh -M -N -f`) with its control socket
    /// in `control_dir` (short: a Unix socket path has at most 107 bytes).
    pub fn open(
        host: &RemoteHost,
        settings: &SshSettings,
        control_dir: &Path,
    ) -> anyhow::Result<Session> {
        let session = Session {
            host: host.clone(),
            settings: settings.clone(),
            control: control_dir.join(format!("{}.sock", host.name)),
            owner: true,
        };
        let mut cmd = Command::new("ssh");
        cmd.args(session.options())
            .args(["-M", "-N", "-f", "-o", "ControlPersist=yes"])
            .arg(session.destination())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let out = cmd
            .output()
            .context("running ssh (install openssh-client)")?;
        if !out.status.success() {
            bail!(
                "host {}: ssh {}@{}:{} failed: {}",
                host.name,
                host.user,
                host.address,
                host.port,
                tail(&out.stderr)
            );
        }
        Ok(session)
    }

    /// Another handle on the same connection (for a remote process to stop
    /// itself with); dropping it leaves the connection open.
    pub fn handle(&self) -> Session {
        Session {
            host: self.host.clone(),
            settings: self.settings.clone(),
            control: self.control.clone(),
            owner: false,
        }
    }

    fn destination(&self) -> String {
        format!("{}@{}", self.host.user, self.host.address)
    }

    /// The options every ssh call of this session uses.
    fn options(&self) -> Vec<String> {
        self.options_through(&self.control.display().to_string())
    }

    /// [`Session::options`] with `ControlPath=control` (`none`: a TCP
    /// connection of its own).
    fn options_through(&self, control: &str) -> Vec<String> {
        let s = &self.settings;
        let mut o = vec![
            "-p".to_string(),
            self.host.port.to_string(),
            "-o".into(),
            "BatchMode=yes".into(),
            "-o".into(),
            "StrictHostKeyChecking=yes".into(),
            "-o".into(),
            format!("UserKnownHostsFile={}", s.known_hosts.display()),
            "-o".into(),
            "GlobalKnownHostsFile=/dev/null".into(),
            "-o".into(),
            format!("ConnectTimeout={}", s.connect_timeout.as_secs().max(1)),
            "-o".into(),
            "ServerAliveInterval=5".into(),
            "-o".into(),
            "ServerAliveCountMax=3".into(),
            "-o".into(),
            format!("ControlPath={control}"),
            "-F".into(),
            "/dev/null".into(),
        ];
        if let Some(id) = &s.identity {
            o.extend([
                "-i".into(),
                id.display().to_string(),
                "-o".into(),
                "IdentitiesOnly=yes".into(),
            ]);
        }
        o
    }

    /// `ssh … HOST -- script`, ready to spawn (through the master).
    pub fn command(&self, script: &str) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args(self.options())
            .arg(self.destination())
            .arg("--")
            .arg(script);
        cmd
    }

    /// `ssh … HOST -- script` as an argument vector (through the master).
    pub fn argv(&self, script: &str) -> Vec<String> {
        let mut v = vec!["ssh".to_string()];
        v.extend(self.options());
        v.push(self.destination());
        v.push("--".into());
        v.push(script.into());
        v
    }

    /// `ssh -tt … HOST -- script` as an argument vector: the script gets
    /// a pseudo-terminal on the host (sshd's) even when this side's stdin
    /// is none, and its output comes back on ssh's stdout. On a TCP
    /// connection of its own, not the master's: a terminal that drains
    /// slowly would hold up every other command of the session behind its
    /// queued output.
    pub fn terminal_argv(&self, script: &str) -> Vec<String> {
        let mut v = vec!["ssh".to_string()];
        v.extend(self.options_through("none"));
        v.push("-tt".into());
        v.push(self.destination());
        v.push("--".into());
        v.push(script.into());
        v
    }

    /// Runs `script` with `sh` on the host; its stdout, or an error naming
    /// the host with the tail of its stderr.
    pub fn run(&self, script: &str) -> anyhow::Result<String> {
        let out = self
            .command(script)
            .stdin(Stdio::null())
            .output()
            .context("running ssh")?;
        self.check(script, &out)?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn check(&self, script: &str, out: &Output) -> anyhow::Result<()> {
        if !out.status.success() {
            bail!(
                "host {}: `{}` failed ({}): {}",
                self.host.name,
                first_line(script),
                out.status,
                tail(&out.stderr)
            );
        }
        Ok(())
    }

    /// Architecture, core count and kernel of the host.
    pub fn preflight(&self) -> anyhow::Result<Preflight> {
        let text = self.run("uname -m; nproc; uname -r")?;
        let mut lines = text.lines().map(str::trim);
        let (Some(arch), Some(cores), Some(kernel)) = (lines.next(), lines.next(), lines.next())
        else {
            bail!("host {}: preflight printed {text:?}", self.host.name);
        };
        Ok(Preflight {
            arch: arch.to_string(),
            cores: cores
                .parse()
                .with_context(|| format!("host {}: nproc printed {cores:?}", self.host.name))?,
            kernel: kernel.to_string(),
        })
    }

    /// Copies `local` to `<workdir>/bin/<sha256>-<file name>` unless the host
    /// already has that exact content there, and checks the copy's hash.
    /// Returns the remote path and whether it was copied.
    pub fn upload(&self, local: &Path) -> anyhow::Result<(String, bool)> {
        let bytes = std::fs::read(local).with_context(|| format!("reading {}", local.display()))?;
        let hash = hex(&Sha256::digest(&bytes));
        let name = local
            .file_name()
            .and_then(|n| n.to_str())
            .with_context(|| format!("{} has no file name", local.display()))?;
        let dir = format!("{}/bin", self.host.workdir);
        let remote = format!("{dir}/{}-{name}", &hash[..16]);
        let have = self.run(&format!(
            "sha256sum {remote} 2>/dev/null | cut -d' ' -f1 || true"
        ))?;
        if have.trim() == hash {
            return Ok((remote, false));
        }
        let part = format!("{remote}.part");
        let got = self.run_with_input(
            &format!(
                "mkdir -p {dir} && cat > {part} && chmod 755 {part} && sha256sum {part} | cut -d' ' -f1"
            ),
            &bytes,
            &format!("upload {name}"),
        )?;
        let got = String::from_utf8_lossy(&got);
        let got = got.trim();
        if got != hash {
            let _ = self.run(&format!("rm -f {part}"));
            bail!(
                "host {}: {name} arrived with sha256 {got}, sent {hash}",
                self.host.name
            );
        }
        self.run(&format!("mv -f {part} {remote}"))?;
        Ok((remote, true))
    }

    /// Writes `bytes` to `path` on the host (its directory created).
    pub fn write_file(&self, path: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let dir = path.rsplit_once('/').map_or(".", |(d, _)| d);
        self.run_with_input(
            &format!("mkdir -p {} && cat > {}", quote(dir), quote(path)),
            bytes,
            &format!("writing {path}"),
        )
        .map(drop)
    }

    /// `script` started with its stdin, stdout and stderr piped.
    fn spawn_piped(&self, script: &str) -> anyhow::Result<std::process::Child> {
        self.command(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running ssh")
    }

    /// [`Session::run`] with `input` on the script's stdin and its stdout
    /// as it came (bytes); `what` names the step in errors.
    pub fn run_with_input(
        &self,
        script: &str,
        input: &[u8],
        what: &str,
    ) -> anyhow::Result<Vec<u8>> {
        let mut child = self.spawn_piped(script)?;
        let mut stdin = child.stdin.take().expect("piped");
        let written = stdin.write_all(input);
        drop(stdin);
        let out = child.wait_with_output().context("waiting for ssh")?;
        self.check(what, &out)?;
        written.with_context(|| format!("host {}: {what}", self.host.name))?;
        Ok(out.stdout)
    }

    /// Reads the host's clock `rounds` times over one open channel (a shell
    /// loop answering each line we send with the time: a new ssh command per
    /// reading would put ssh's own start-up, tens of ms, into the round trip)
    /// and keeps the reading with the smallest round trip, the least
    /// uncertain, as NTP does.
    pub fn clock_offset(&self, rounds: usize) -> anyhow::Result<ClockOffset> {
        use std::io::{BufRead, BufReader};
        let script = format!("while read -r _; do {}; done", clock_command());
        let mut child = self.spawn_piped(&script)?;
        let mut stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut best: Option<ClockOffset> = None;
        let mut line = String::new();
        let mut failure = None;
        for _ in 0..rounds.max(1) {
            line.clear();
            let t0 = now_secs();
            if let Err(e) = stdin.write_all(b"\n").and_then(|()| stdin.flush()) {
                failure = Some(format!("sending: {e}"));
                break;
            }
            match stdout.read_line(&mut line) {
                Ok(n) if n > 0 => {}
                Ok(_) => {
                    failure = Some("the clock loop ended".into());
                    break;
                }
                Err(e) => {
                    failure = Some(format!("reading: {e}"));
                    break;
                }
            }
            let t1 = now_secs();
            let remote: f64 = match line.trim().parse() {
                Ok(v) => v,
                Err(_) => {
                    failure = Some(format!("the clock read {:?}", line.trim()));
                    break;
                }
            };
            let reading = ClockOffset {
                offset_ms: (remote - (t0 + t1) / 2.0) * 1000.0,
                rtt_ms: (t1 - t0) * 1000.0,
            };
            if best.is_none_or(|b| reading.rtt_ms < b.rtt_ms) {
                best = Some(reading);
            }
        }
        drop(stdin);
        let out = child.wait_with_output().context("waiting for ssh")?;
        if let Some(why) = failure {
            bail!(
                "host {}: reading its clock: {why}: {}",
                self.host.name,
                tail(&out.stderr)
            );
        }
        self.check("clock loop", &out)?;
        Ok(best.expect("at least one round"))
    }

    /// Tells the master connection to exit, and waits, 2 s at most, until
    /// it has (`-O exit` returns before the master is gone: a run that
    /// ends at once would otherwise leave it behind for a moment).
    pub fn close(&self) {
        let control = |op: &str| {
            Command::new("ssh")
                .args(self.options())
                .args(["-O", op])
                .arg(self.destination())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let _ = control("exit");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while control("check") && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.owner {
            self.close();
        }
    }
}

/// Refuses a host whose clock is further from ours than `limit_ms`: the
/// shards of several load hosts are merged by wall-clock interval, so an
/// offset shifts them against each other.
pub fn check_offset(host: &str, offset: ClockOffset, limit_ms: f64) -> anyhow::Result<()> {
    if offset.offset_ms.abs() > limit_ms {
        bail!(
            "host {host}: its clock is {:+.1} ms from this machine's (round trip {:.1} ms), more than the {limit_ms} ms allowed: synchronise it (chrony or systemd-timesyncd) and run again",
            offset.offset_ms,
            offset.rtt_ms
        );
    }
    Ok(())
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `s` quoted for a POSIX shell.
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The last few lines of a command's stderr, on one line.
pub(crate) fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(3);
    let joined = lines[start..].join(" | ");
    if joined.is_empty() {
        "no message".into()
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skewed_clock_is_refused_and_names_the_host() {
        let skewed = ClockOffset {
            offset_ms: -250.0,
            rtt_ms: 0.4,
        };
        let err = check_offset("load2", skewed, 50.0).unwrap_err().to_string();
        assert!(
            err.starts_with("host load2: its clock is -250.0 ms"),
            "{err}"
        );
        let fine = ClockOffset {
            offset_ms: 3.0,
            rtt_ms: 0.4,
        };
        assert!(check_offset("load2", fine, 50.0).is_ok());
    }

    #[test]
    fn quoting_survives_the_shell() {
        for s in [
            "plain",
            "two words",
            "it's",
            "$HOME",
            "",
            "a'b'c",
            "--bind=1.2.3.4:0",
        ] {
            let out = Command::new("sh")
                .args(["-c", &format!("printf %s {}", quote(s))])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
    }

    #[test]
    fn tail_keeps_the_last_lines_on_one_line() {
        assert_eq!(tail(b"a\nb\n\nc\nd\n"), "b | c | d");
        assert_eq!(tail(b""), "no message");
    }
}
