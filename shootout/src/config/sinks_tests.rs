//! Tests of `[sinks]` and sinks rows through the scenario parser.

use std::time::Duration;

use crate::config::scenario::Design;
use crate::config::sinks::SinksSettings;

const ROW: &str =
    "[[scenario]]\nname = \"a\"\nserver = \"actix\"\nfeatures = [\"log-stdout\"]\nlog = \"terminal\"\n";

fn parse(head: &str, row: &str) -> Result<SinksSettings, String> {
    let text = format!("{head}\n{row}");
    let f = crate::config::parse::parse(std::path::Path::new("t.toml"), &text)
        .map_err(|e| e.to_string())?;
    match f.design {
        Design::Sinks(s) => Ok(s),
        other => Err(format!("{other:?}")),
    }
}

#[test]
fn a_sinks_file_reads_with_its_defaults() {
    let s = parse("design = \"sinks\"\n[sinks]\nlength = \"500ms\"\n", ROW).unwrap();
    assert_eq!(s.runs, 5);
    assert_eq!(s.length, Duration::from_millis(500));
    assert_eq!(s.sample, Duration::from_secs(1));
    assert_eq!(
        parse("design = \"sinks\"\n", ROW).unwrap(),
        SinksSettings::default()
    );
}

#[test]
fn bad_sinks_files_name_the_file_and_line() {
    for (head, row, want) in [
        (
            "design = \"sinks\"\n[sinks]\nruns = 1\n",
            ROW,
            "t.toml:3: [sinks] runs must be 2 to 1000",
        ),
        (
            "design = \"sinks\"\n[sinks]\nlength = \"0s\"\n",
            ROW,
            "t.toml:3: [sinks] length must be more than zero",
        ),
        (
            "design = \"sinks\"\n[sinks]\nsample = \"soon\"\n",
            ROW,
            "t.toml:3: [sinks] bad sample \"soon\"",
        ),
        (
            "design = \"sinks\"\n[sinks]\nlines = 3\n",
            ROW,
            "t.toml:3: unknown field `lines`",
        ),
        (
            "[sinks]\nruns = 3\n",
            ROW,
            "t.toml:1: [sinks] needs design = \"sinks\"",
        ),
        (
            "design = \"sinks\"\n",
            "[[scenario]]\nname = \"quiet\"\nserver = \"ntex\"\n",
            "t.toml:4: row \"quiet\" logs nothing to stdout",
        ),
        (
            "design = \"sinks\"\n",
            "[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nfeatures = [\"log-stdout\"]\nduration = \"5s\"\n",
            "t.toml:7: duration is not used by design = \"sinks\"",
        ),
    ] {
        let e = parse(head, row).unwrap_err();
        assert!(e.starts_with(want), "{e:?} should start with {want:?}");
    }
}

/// `[ssh]` and a stand-in `[hosts.server]` (lines 1-9), for ssh-terminal
/// rows; `netns` only when `standin`.
fn hosts(standin: bool) -> String {
    format!(
        "[ssh]\nknown_hosts = \"/dev/null\"\n\n[hosts.server]\naddress = \"10.0.0.1\"\nrole = \"server\"\nworkdir = \"/tmp/w\"\n{}\n",
        if standin { "netns = \"shh-server\"" } else { "" }
    )
}

const SSH_ROW: &str = "[[scenario]]\nname = \"s\"\nserver = \"actix\"\nfeatures = [\"log-stdout\"]\nlog = \"ssh-terminal\"\n";

#[test]
fn an_ssh_terminal_row_reads_its_host_terminal_and_link_rate() {
    let text = format!(
        "design = \"sinks\"\n[sinks]\nsettle = \"5s\"\n{}\n{SSH_ROW}ssh_host = \"server\"\nterminal = \"xterm\"\nlink_rate = \"1.5mbit\"\n",
        hosts(true)
    );
    let f = crate::config::parse::parse(std::path::Path::new("t.toml"), &text).unwrap();
    let Design::Sinks(k) = &f.design else {
        panic!("{:?}", f.design)
    };
    assert_eq!(k.settle, Duration::from_secs(5));
    let t = f.scenarios[0].ssh_terminal.clone().unwrap();
    assert_eq!(t.host, "server");
    assert_eq!(t.terminal, crate::config::scenario::Drawn::Xterm);
    assert_eq!(t.link_rate_bps, Some(1_500_000));
}

#[test]
fn bad_ssh_terminal_rows_name_the_file_and_line() {
    let head = |standin: bool| format!("design = \"sinks\"\n{}", hosts(standin));
    // The row's first line is line 11 of these files.
    for (head, extra, want) in [
        (
            head(true),
            "",
            "t.toml:12: log = \"ssh-terminal\" needs ssh_host",
        ),
        (
            head(true),
            "ssh_host = \"elsewhere\"\n",
            "t.toml:16: ssh_host: no [hosts.elsewhere]",
        ),
        (
            head(false),
            "ssh_host = \"server\"\nlink_rate = \"1mbit\"\n",
            "t.toml:17: link_rate shapes a stand-in host's link, and host server has no netns",
        ),
        (
            head(true),
            "ssh_host = \"server\"\nlink_rate = \"fast\"\n",
            "t.toml:17: link_rate \"fast\": a number and bit, kbit, mbit or gbit",
        ),
        (
            head(true),
            "ssh_host = \"server\"\nterminal = \"kitty\"\n",
            "t.toml:17: terminal \"kitty\": use \"drained\", \"xterm\" or \"alacritty\"",
        ),
        (
            head(true).replace("design = \"sinks\"\n", ""),
            "ssh_host = \"server\"\n",
            "t.toml:11: row \"s\": a served log = \"ssh-terminal\" row runs its server on the ssh host: set server_host = \"server\"",
        ),
    ] {
        let row = format!("{SSH_ROW}{extra}");
        let e = parse(&head, &row).unwrap_err();
        assert!(e.starts_with(want), "{e:?} should start with {want:?}");
    }
    // The ssh keys without an ssh terminal.
    let row = "[[scenario]]\nname = \"a\"\nserver = \"actix\"\nfeatures = [\"log-stdout\"]\nlog = \"terminal\"\nlink_rate = \"1mbit\"\n";
    let e = parse(&head(true), row).unwrap_err();
    assert!(
        e.starts_with("t.toml:16: link_rate is for log = \"ssh-terminal\""),
        "{e}"
    );
}

#[test]
fn remote_rows_take_every_sink_and_serve_an_ssh_terminal_from_its_host() {
    let hosts = "[ssh]\nknown_hosts = \"/dev/null\"\n\n[hosts.server]\naddress = \"10.0.0.1\"\nrole = \"server\"\nworkdir = \"/tmp/w\"\n\n[hosts.other]\naddress = \"10.0.0.3\"\nrole = \"server\"\nworkdir = \"/tmp/w\"\n\n[hosts.load]\naddress = \"10.0.0.2\"\nrole = \"load\"\nworkdir = \"/tmp/w\"\n";
    let row = |log: &str| {
        format!("{hosts}\n[[scenario]]\nname = \"r\"\nserver = \"actix\"\nfeatures = [\"log-stdout\"]\nlog = \"{log}\"\nserver_host = \"server\"\nload_hosts = [\"load\"]\n")
    };
    let path = std::path::Path::new("t.toml");
    let f = crate::config::parse::parse(path, &row("file")).unwrap();
    assert_eq!(f.scenarios[0].log, crate::config::scenario::LogSink::File);
    // Every sink; an emulator draws on the server's host.
    for (log, sink) in [
        ("xterm", crate::config::scenario::LogSink::Xterm),
        ("alacritty", crate::config::scenario::LogSink::Alacritty),
        ("terminal", crate::config::scenario::LogSink::Terminal),
    ] {
        let f = crate::config::parse::parse(path, &row(log)).unwrap();
        assert_eq!(f.scenarios[0].log, sink);
    }
    // The sinks design measures a remote row's sink on its host.
    let f = crate::config::parse::parse(path, &format!("design = \"sinks\"\n{}", row("terminal")))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(f.scenarios[0].hosts.is_some());
    // A served ssh terminal: the server runs on the ssh host.
    let ssh = format!("{}ssh_host = \"server\"\n", row("ssh-terminal"));
    let f = crate::config::parse::parse(path, &ssh).unwrap();
    assert_eq!(f.scenarios[0].ssh_terminal.as_ref().unwrap().host, "server");
    let elsewhere = ssh.replace("ssh_host = \"server\"", "ssh_host = \"other\"");
    let e = crate::config::parse::parse(path, &elsewhere)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("t.toml:20: log = \"ssh-terminal\" serves from its ssh_host: set server_host = \"other\""),
        "{e}"
    );
}

#[test]
fn a_reader_on_the_server_host_runs_with_the_server_and_an_ssh_client_here_is_said() {
    let hosts = "[ssh]\nknown_hosts = \"/dev/null\"\n\n[hosts.server]\naddress = \"10.0.0.1\"\nrole = \"server\"\nworkdir = \"/tmp/w\"\n\n[hosts.load]\naddress = \"10.0.0.2\"\nrole = \"load\"\nworkdir = \"/tmp/w\"\n";
    let row = |log: &str, extra: &str| {
        format!("{hosts}\n[[scenario]]\nname = \"r\"\nserver = \"actix\"\nfeatures = [\"log-stdout\"]\nlog = \"{log}\"\nserver_host = \"server\"\nload_hosts = [\"load\"]\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\n{extra}")
    };
    let parse = |t: &str| crate::config::parse::parse(std::path::Path::new("t.toml"), t);
    // `cat` of a pipe and `script` of a pty on the server's host: on the
    // server's CPUs there unless the row says otherwise.
    for (log, extra, want) in [
        ("pipe", "", "1"),
        ("terminal", "", "1"),
        ("terminal", "sink_cpus = \"0\"\n", "0"),
    ] {
        let f = parse(&row(log, extra)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.scenarios[0].sink_cpus().as_deref(), Some(want), "{log}");
        assert!(f.scenarios[0].unpinned().is_empty(), "{log}");
    }
    // A file has no reader.
    let f = parse(&row("file", "")).unwrap();
    assert_eq!(f.scenarios[0].sink_cpus(), None);
    assert!(f.scenarios[0].unpinned().is_empty());
    // An ssh terminal drained here: the ssh client and the runner's thread
    // reading it have no CPUs of the server's to default to.
    let ssh = row("ssh-terminal", "ssh_host = \"server\"\n");
    let f = parse(&ssh).unwrap();
    assert_eq!(f.scenarios[0].sink_cpus(), None);
    // Nor has the sshd there that serves the session: the host's own.
    assert_eq!(f.scenarios[0].unpinned(), ["sink reader", "sshd"]);
    let f = parse(&format!("{ssh}sink_cpus = \"0\"\nsshd_cpus = \"1\"\n")).unwrap();
    assert_eq!(f.scenarios[0].sink_cpus().as_deref(), Some("0"));
    assert_eq!(f.scenarios[0].sshd_cpus.as_deref(), Some("1"));
    assert!(f.scenarios[0].unpinned().is_empty());
    assert!(parse(&format!("{ssh}sshd_cpus = \"x\"\n")).is_err());
    // Paired, it must say where (or say free), and the message names the key.
    let e = parse(&format!(
        "design = \"paired\"\nbaseline = \"r\"\n[paired]\nschedule = \"duet\"\n{ssh}"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("its sink reader, sshd would run where the scheduler puts them; set sink_cpus, sshd_cpus or say placement = \"free\""),
        "{e}"
    );
}

#[test]
fn jump_scroll_is_xterms_wherever_xterm_draws() {
    use crate::stack::emulator::Kind;
    let parse = |t: &str| crate::config::parse::parse(std::path::Path::new("t.toml"), t);
    // A `[defaults]` key is taken by xterm rows (here, or drawing an ssh
    // session) and ignored by the others.
    let text = format!(
        "design = \"sinks\"\n{}\n[defaults]\njump_scroll = false\nfeatures = [\"log-stdout\"]\n\n{SSH_ROW}ssh_host = \"server\"\nterminal = \"xterm\"\n\n[[scenario]]\nname = \"x\"\nserver = \"actix\"\nlog = \"xterm\"\n\n[[scenario]]\nname = \"f\"\nserver = \"actix\"\nlog = \"file\"\n\n[[scenario]]\nname = \"a\"\nserver = \"actix\"\nlog = \"alacritty\"\n",
        hosts(true)
    );
    let f = parse(&text).unwrap();
    let kinds: Vec<Option<Kind>> = f.scenarios.iter().map(Kind::of).collect();
    let off = Some(Kind::Xterm { jump_scroll: false });
    assert_eq!(kinds, [off, off, None, Some(Kind::Alacritty)]);
    assert!(f.scenarios[2].jump_scroll && f.scenarios[3].jump_scroll);
    // Without the key, xterm keeps its default.
    let f = parse("[[scenario]]\nname = \"x\"\nserver = \"actix\"\nlog = \"xterm\"\n").unwrap();
    assert_eq!(
        Kind::of(&f.scenarios[0]),
        Some(Kind::Xterm { jump_scroll: true })
    );
    // A row's own key where xterm does not draw is refused at its line.
    for (row, line) in [
        ("log = \"file\"\njump_scroll = false\n", 5),
        ("log = \"alacritty\"\n\njump_scroll = true\n", 6),
    ] {
        let text = format!("[[scenario]]\nname = \"x\"\nserver = \"actix\"\n{row}");
        let e = parse(&text).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("t.toml:{line}: jump_scroll is xterm's")),
            "{e}"
        );
    }
}

#[test]
fn writer_gap_paces_a_sinks_row_and_nothing_else() {
    let text = format!("design = \"sinks\"\n\n{ROW}writer_gap = \"20us\"\n");
    let f = crate::config::parse::parse(std::path::Path::new("t.toml"), &text).unwrap();
    assert_eq!(f.scenarios[0].writer_gap, Some(Duration::from_micros(20)));
    let text = format!("design = \"sinks\"\n[defaults]\nwriter_gap = \"1ms\"\n{ROW}");
    let f = crate::config::parse::parse(std::path::Path::new("t.toml"), &text).unwrap();
    assert_eq!(f.scenarios[0].writer_gap, Some(Duration::from_millis(1)));
    let f = crate::config::parse::parse(
        std::path::Path::new("t.toml"),
        &format!("design = \"sinks\"\n\n{ROW}"),
    )
    .unwrap();
    assert_eq!(f.scenarios[0].writer_gap, None);
    for (text, want) in [
        (
            format!("design = \"sinks\"\n\n{ROW}writer_gap = \"soon\"\n"),
            "t.toml:8: bad duration \"soon\"",
        ),
        (
            format!("design = \"sinks\"\n\n{ROW}writer_gap = \"0us\"\n"),
            "t.toml:8: duration must be more than zero",
        ),
        (
            format!("baseline = \"a\"\ndesign = \"paired\"\n{ROW}writer_gap = \"20us\"\n"),
            "t.toml:8: writer_gap paces the writer of design = \"sinks\"",
        ),
    ] {
        let e = crate::config::parse::parse(std::path::Path::new("t.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(want), "{e:?} should start with {want:?}");
    }
}
