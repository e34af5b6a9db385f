//! The far end of `log = "ssh-terminal"`: a command run through `ssh -tt`
//! on a remote host, so its stdout is an sshd pseudo-terminal there and
//! its output comes back over ssh to whatever draws it here; and
//! `link_rate`, a stand-in host's link to this machine shaped with tc's
//! token bucket (`tbf`; this kernel has no netem, so a rate and no added
//! latency).

use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::place::host::{Host, HostDir};
use crate::place::placement::Hosts;
use crate::place::ssh::{quote, Session};

/// A private directory on a remote host and the session to it.
pub struct SshEnd {
    session: Session,
    dir: HostDir,
}

impl Hosts {
    /// The far end on `host` (a `[hosts.NAME]` of the file), with a fresh
    /// private directory there (removed on drop).
    pub fn ssh_end(&self, host: &str) -> anyhow::Result<SshEnd> {
        let session = self.session(host)?.handle();
        let dir = Host::Remote(session.handle()).private_dir(std::path::Path::new(""))?;
        Ok(SshEnd { session, dir })
    }
}

impl SshEnd {
    /// Writes `bytes` to `name` in the private directory; its path there.
    pub fn put(&self, name: &str, bytes: &[u8]) -> anyhow::Result<String> {
        let path = format!("{}/{name}", self.dir.path);
        self.session.write_file(&path, bytes)?;
        Ok(path)
    }

    /// Where `local` (a binary built here) is on the host (uploaded by
    /// content hash).
    pub fn place_binary(&self, local: &std::path::Path) -> anyhow::Result<String> {
        Ok(self.session.upload(local)?.0)
    }

    /// `argv` (as the host runs it, in the private directory) as this
    /// machine spawns it: `ssh -tt HOST -- 'cd DIR && exec ARGV'`, the
    /// sshd process serving the session first put on `sshd_cpus` (none:
    /// where the host's sshd runs it), its pid left in the private
    /// directory's file `sshd` ([`SshEnd::sshd_cpus`] reads it).
    pub fn terminal_argv(
        &self,
        argv: &[String],
        sshd: &str,
        sshd_cpus: Option<&str>,
    ) -> Vec<String> {
        let line: Vec<String> = argv.iter().map(|a| quote(a)).collect();
        let file = format!("{}/{sshd}", self.dir.path);
        let script = format!(
            "{}cd {} && exec {}",
            crate::place::affinity::sshd_prefix(&file, sshd_cpus),
            quote(&self.dir.path),
            line.join(" ")
        );
        self.session.terminal_argv(&script)
    }

    /// The CPUs of the sshd process that serves the session started with
    /// file `sshd` ([`SshEnd::terminal_argv`]), as read against `wanted`;
    /// waits up to 10 s for the session to start.
    pub fn sshd_cpus(
        &self,
        sshd: &str,
        wanted: Option<&str>,
    ) -> anyhow::Result<crate::place::affinity::ReadCpus> {
        let file = format!("{}/{sshd}", self.dir.path);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let read = crate::place::affinity::sshd_read(&self.session, &file, wanted)?;
            if read.threads > 0 || std::time::Instant::now() > deadline {
                return Ok(read);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// The file `name` of the private directory.
    pub fn read(&self, name: &str) -> anyhow::Result<Vec<u8>> {
        let path = format!("{}/{name}", self.dir.path);
        Ok(self
            .session
            .run(&format!("cat {}", quote(&path)))?
            .into_bytes())
    }

    /// "ssh -tt to host NAME (root@10.88.0.1:2201)".
    pub fn describe(&self) -> String {
        let h = &self.session.host;
        format!(
            "ssh -tt to host {} ({}@{}:{})",
            h.name, h.user, h.address, h.port
        )
    }

    /// Shapes this host's ssh traffic to `bps` (see [`Shaped::ssh_of`]).
    pub fn shape(&self, bps: u64) -> anyhow::Result<Shaped> {
        Shaped::ssh_of(&self.session, bps)
    }
}

/// A stand-in host's ssh traffic shaped to a rate; the qdiscs are removed
/// on drop.
pub struct Shaped {
    netns: String,
    dev: String,
    /// What was applied, for the record.
    pub describe: String,
}

impl Shaped {
    /// Shapes the ssh traffic of `ssh`'s host (a stand-in: its namespace
    /// and sshd port) to `bps`; an error naming a host without `netns`.
    pub fn ssh_of(ssh: &Session, bps: u64) -> anyhow::Result<Shaped> {
        let h = &ssh.host;
        let ns = h.netns.as_deref().with_context(|| {
            format!(
                "host {} has no netns to shape (link_rate is for stand-ins)",
                h.name
            )
        })?;
        Shaped::apply(ns, bps, h.port)
    }

    /// Shapes what namespace `netns` sends from its sshd (source port
    /// `sport`) on its one link to this machine to `bps` bits per second,
    /// and nothing else: a served row's load and answers share that link
    /// and pass unshaped, as on a server whose operator's ssh session
    /// crosses a slow link while its clients do not. An htb root sends
    /// what a u32 filter picks (the sshd's port) to a class whose leaf is
    /// the token bucket (`tbf`); everything else leaves directly.
    pub fn apply(netns: &str, bps: u64, sport: u16) -> anyhow::Result<Shaped> {
        let dev = only_link(netns)?;
        // A burst of 10 ms at the rate, at least eight full frames: tbf
        // needs more than one MTU, and more than the rate per timer tick.
        let burst = (bps / 8 / 100).max(8 * 1514);
        let steps: [&[&str]; 4] = [
            &[
                "qdisc", "replace", "dev", &dev, "root", "handle", "1:", "htb",
            ],
            // The class itself does not limit (the leaf does).
            &[
                "class", "add", "dev", &dev, "parent", "1:", "classid", "1:1", "htb", "rate",
                "100gbit",
            ],
            &[
                "qdisc",
                "add",
                "dev",
                &dev,
                "parent",
                "1:1",
                "handle",
                "10:",
                "tbf",
                "rate",
                &format!("{bps}bit"),
                "burst",
                &burst.to_string(),
                "latency",
                "100ms",
            ],
            &[
                "filter",
                "add",
                "dev",
                &dev,
                "parent",
                "1:",
                "protocol",
                "ip",
                "prio",
                "1",
                "u32",
                "match",
                "ip",
                "sport",
                &sport.to_string(),
                "0xffff",
                "flowid",
                "1:1",
            ],
        ];
        let shaped = Shaped {
            netns: netns.into(),
            describe: format!(
                "tc tbf rate {bps} bit/s, burst {burst} B, latency 100ms on {dev} in namespace {netns}, for sshd's traffic only (source port {sport}; htb + u32)"
            ),
            dev: dev.clone(),
        };
        for args in steps {
            // On an error, drop removes what was added.
            tc(netns, args)?;
        }
        Ok(shaped)
    }
}

/// What the shaped class sent: tc's counters of the token bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LinkStats {
    /// Bytes on the wire (each frame's whole length, headers included).
    pub bytes: u64,
    pub packets: u64,
    /// Packets the bucket's queue refused (TCP sends them again).
    pub dropped: u64,
}

impl Shaped {
    /// The token bucket's counters so far; none when tc cannot say.
    pub fn stats(&self) -> Option<LinkStats> {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.netns,
                "tc",
                "-s",
                "qdisc",
                "show",
                "dev",
                &self.dev,
            ])
            .stdin(Stdio::null())
            .output()
            .ok()?;
        parse_tbf_stats(&String::from_utf8_lossy(&out.stdout))
    }
}

/// The `Sent B bytes P pkt (dropped D, ...` line after `qdisc tbf` in
/// `tc -s qdisc show` output.
fn parse_tbf_stats(text: &str) -> Option<LinkStats> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("qdisc tbf"));
    lines.next()?;
    let sent = lines.next()?.trim();
    let words: Vec<&str> = sent.split_whitespace().collect();
    let at = |key: &str| -> Option<u64> {
        let i = words
            .iter()
            .position(|w| w.trim_matches(['(', ',']) == key)?;
        let v = if key == "dropped" {
            words.get(i + 1)?
        } else {
            words.get(i.checked_sub(1)?)?
        };
        v.trim_matches([',', ')']).parse().ok()
    };
    Some(LinkStats {
        bytes: at("bytes")?,
        packets: at("pkt")?,
        dropped: at("dropped")?,
    })
}

impl Drop for Shaped {
    fn drop(&mut self) {
        let _ = tc(&self.netns, &["qdisc", "del", "dev", &self.dev, "root"]);
    }
}

fn tc(netns: &str, args: &[&str]) -> anyhow::Result<()> {
    let mut all = vec!["netns", "exec", netns, "tc"];
    all.extend(args);
    crate::place::netns::ip(&all)
}

/// The one link of `netns` besides `lo` (a stand-in has exactly one).
fn only_link(netns: &str) -> anyhow::Result<String> {
    let out = Command::new("ip")
        .args(["-n", netns, "-o", "link", "show"])
        .stdin(Stdio::null())
        .output()
        .context("running ip (install iproute2)")?;
    if !out.status.success() {
        bail!(
            "namespace {netns}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let links: Vec<String> = text
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .filter(|n| n != "lo")
        .collect();
    match links.as_slice() {
        [one] => Ok(one.clone()),
        _ => bail!("namespace {netns}: expected one link besides lo, found {links:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_bucket_counters_from_tc() {
        let text = "qdisc htb 1: dev shh1b root refcnt 3 r2q 10 default 0 direct_packets_stat 1470395 direct_qlen 1000\n Sent 258738661 bytes 1470647 pkt (dropped 161, overlimits 191 requeues 0) \n backlog 0b 0p requeues 0\nqdisc tbf 10: dev shh1b parent 1:1 rate 1Mbit burst 12112b lat 100ms \n Sent 255189 bytes 252 pkt (dropped 336, overlimits 18179 requeues 0) \n backlog 0b 0p requeues 0\n";
        assert_eq!(
            parse_tbf_stats(text),
            Some(LinkStats {
                bytes: 255_189,
                packets: 252,
                dropped: 336
            })
        );
        assert_eq!(parse_tbf_stats("qdisc noqueue 0: dev lo root\n"), None);
    }
}
