//! `log = "ssh-terminal"` and its keys (issue 24, part 2): `ssh_host`
//! (whose sshd gives the writer its terminal), `terminal` (what draws the
//! session's output on this machine) and `link_rate` (a stand-in host's
//! link shaped with `tc qdisc tbf`), checked at the line that sets them,
//! from a row or `[defaults]` (`ssh_terminal_of`).
//!
//! ```toml
//! [[scenario]]
//! name = "ssh-xterm-1mbit"
//! server = "actix"
//! log = "ssh-terminal"
//! ssh_host = "server"       # a [hosts.NAME]
//! terminal = "xterm"        # "drained" (default), "xterm" or "alacritty"
//! link_rate = "1mbit"       # stand-in hosts only (netns = "..." in [hosts.NAME])
//! ```

use toml::Spanned;

use crate::config::hosts::{Remote, RowHosts};
use crate::config::scenario::{Drawn, LogSink, ScenarioError, SshTerminal};
use crate::config::settings::Settings;
use crate::config::spans::Err;

/// The three keys as a row (or `[defaults]`) writes them.
pub struct Keys<'a> {
    pub ssh_host: Option<&'a Spanned<String>>,
    pub terminal: Option<&'a Spanned<String>>,
    pub link_rate: Option<&'a Spanned<String>>,
}

/// The row's ssh terminal, when `log` is one; an error is (offset,
/// message), at the key that is wrong (`at`, the row's name, when a key
/// is missing).
pub fn check(
    log: LogSink,
    keys: Keys,
    remote: Option<&Remote>,
    at: usize,
) -> Result<Option<SshTerminal>, (usize, String)> {
    if log != LogSink::SshTerminal {
        let set = [
            ("ssh_host", keys.ssh_host),
            ("terminal", keys.terminal),
            ("link_rate", keys.link_rate),
        ];
        if let Some((key, sp)) = set.iter().find_map(|(k, v)| v.map(|v| (*k, v))) {
            return Err((
                sp.span().start,
                format!("{key} is for log = \"ssh-terminal\""),
            ));
        }
        return Ok(None);
    }
    let Some(host) = keys.ssh_host else {
        return Err((
            at,
            "log = \"ssh-terminal\" needs ssh_host = \"NAME\" (a [hosts.NAME] whose sshd gives the terminal)".into(),
        ));
    };
    let Some(entry) = remote.and_then(|r| r.hosts.iter().find(|h| h.host.name == *host.get_ref()))
    else {
        return Err((
            host.span().start,
            format!("ssh_host: no [hosts.{}]", host.get_ref()),
        ));
    };
    let terminal = match keys
        .terminal
        .map(|t| (t.get_ref().as_str(), t.span().start))
    {
        None | Some(("drained", _)) => Drawn::Drained,
        Some(("xterm", _)) => Drawn::Xterm,
        Some(("alacritty", _)) => Drawn::Alacritty,
        Some((other, at)) => {
            return Err((
                at,
                format!("terminal {other:?}: use \"drained\", \"xterm\" or \"alacritty\""),
            ))
        }
    };
    let link_rate_bps = match keys.link_rate {
        None => None,
        Some(sp) => {
            if entry.host.netns.is_none() {
                return Err((
                    sp.span().start,
                    format!(
                        "link_rate shapes a stand-in host's link, and host {} has no netns (scripts/netns-hosts writes it); a real host's link is what it is",
                        entry.host.name
                    ),
                ));
            }
            Some(rate(sp.get_ref()).map_err(|why| (sp.span().start, why))?)
        }
    };
    Ok(Some(SshTerminal {
        host: entry.host.name.clone(),
        terminal,
        link_rate_bps,
    }))
}

/// The row's ssh terminal (`log = "ssh-terminal"`), checked against its
/// hosts: a served ssh terminal's server runs on its ssh host. (A remote
/// row takes every sink; all but the ssh terminal are on the server's
/// host.)
pub fn ssh_terminal_of(
    o: &Settings,
    d: &Settings,
    log: LogSink,
    remote: Option<&Remote>,
    hosts: Option<&RowHosts>,
    at: usize,
    err: &Err,
) -> Result<Option<SshTerminal>, ScenarioError> {
    // `[defaults]` may set the ssh keys for the file's ssh-terminal rows;
    // a row that logs elsewhere is refused only for keys it sets itself.
    let inherit = log == LogSink::SshTerminal;
    let keys = Keys {
        ssh_host: inherited(&o.ssh_host, &d.ssh_host, inherit),
        terminal: inherited(&o.terminal, &d.terminal, inherit),
        link_rate: inherited(&o.link_rate, &d.link_rate, inherit),
    };
    let ssh_terminal = check(log, keys, remote, at).map_err(|(a, m)| err(a, m))?;
    if let (Some(h), Some(t)) = (hosts, &ssh_terminal) {
        if h.server != t.host {
            return Err(err(
                at,
                format!(
                    "log = \"ssh-terminal\" serves from its ssh_host: set server_host = {:?} (it is {:?})",
                    t.host, h.server
                ),
            ));
        }
    }
    Ok(ssh_terminal)
}

/// A row's own key, else (when `inherit`) the default's.
fn inherited<'a>(
    own: &'a Option<Spanned<String>>,
    def: &'a Option<Spanned<String>>,
    inherit: bool,
) -> Option<&'a Spanned<String>> {
    own.as_ref().or(def.as_ref().filter(|_| inherit))
}

/// Lowest and highest `link_rate`: tbf needs a burst above the MTU at
/// the kernel's timer rate, and above 10 Gbit/s nothing is shaped.
const MIN_BPS: u64 = 8_000;
const MAX_BPS: u64 = 10_000_000_000;

/// `"1mbit"` as tc writes rates: a number and `bit`, `kbit`, `mbit` or
/// `gbit` (decimal: 1mbit = 1,000,000 bits/s).
pub fn rate(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        _ => {
            return Err(format!(
                "link_rate {text:?}: a number and bit, kbit, mbit or gbit (e.g. \"1mbit\")"
            ))
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("link_rate {text:?}: no number before {unit:?}"))?;
    let bps = (n * scale).round();
    if !(MIN_BPS as f64..=MAX_BPS as f64).contains(&bps) {
        return Err(format!("link_rate {text:?}: must be 8kbit to 10gbit"));
    }
    Ok(bps as u64)
}

#[cfg(test)]
mod tests {
    use super::rate;

    #[test]
    fn rates_read_as_tc_writes_them() {
        assert_eq!(rate("1mbit"), Ok(1_000_000));
        assert_eq!(rate("2.5Mbit"), Ok(2_500_000));
        assert_eq!(rate("64kbit"), Ok(64_000));
        assert_eq!(rate("1gbit"), Ok(1_000_000_000));
        assert_eq!(rate("9000bit"), Ok(9_000));
        for bad in ["1mb", "mbit", "fast", "-1mbit", "1kbit", "20gbit", ""] {
            assert!(rate(bad).is_err(), "{bad}");
        }
    }
}
