//! Tests of a row's keys (`row.rs`) through the scenario parser.

use std::time::Duration;

use crate::config::parse_tests::{parse_str, pinned};
use crate::config::scenario::{LogSink, Request, SlowClients, Topology};

#[test]
fn defaults_apply_and_features_are_ordered() {
    let f = parse_str(
        "[defaults]\nduration = \"2s\"\nrequest = \"get\"\n\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nfeatures = [\"no-alloc\", \"global-counter\"]\n",
    )
    .unwrap();
    let s = &f.scenarios[0];
    assert_eq!(s.original, None);
    assert_eq!(s.duration, Duration::from_secs(2));
    assert_eq!(s.request, Request::Get);
    assert_eq!(s.variant(), "ntex-server+global-counter+no-alloc");
    assert_eq!(
        (s.topology, s.log, s.repetitions),
        (Topology::Loopback, LogSink::None, 1)
    );
}

#[test]
fn nginx_runs_on_the_server_cpus_unless_the_row_says_otherwise() {
    let rows = "[[scenario]]\nname = \"floor\"\nserver = \"actix\"\nproxy = \"static\"\n\n\
                [[scenario]]\nname = \"behind\"\nserver = \"ntex\"\nproxy = \"proxy\"\n\n\
                [[scenario]]\nname = \"own\"\nserver = \"ntex\"\nproxy = \"proxy\"\nnginx_cpus = \"0\"\n\n\
                [[scenario]]\nname = \"direct\"\nserver = \"actix\"\n";
    let pinned = parse_str(&pinned(rows)).unwrap();
    let cpus: Vec<Option<String>> = pinned.scenarios.iter().map(|s| s.nginx_cpus()).collect();
    let some = |c: &str| Some(c.to_string());
    assert_eq!(cpus, [some("1"), some("1"), some("0"), None]);
    let free = parse_str(rows).unwrap();
    let cpus: Vec<Option<String>> = free.scenarios.iter().map(|s| s.nginx_cpus()).collect();
    assert_eq!(cpus, [None, None, some("0"), None]);
}

#[test]
fn a_terminal_here_runs_on_the_server_cpus_unless_the_row_says_otherwise() {
    let rows = "[[scenario]]\nname = \"xterm\"\nserver = \"actix\"\nlog = \"xterm\"\n\n\
                [[scenario]]\nname = \"alacritty\"\nserver = \"ntex\"\nlog = \"alacritty\"\n\n\
                [[scenario]]\nname = \"own\"\nserver = \"ntex\"\nlog = \"xterm\"\nterminal_cpus = \"0\"\n\n\
                [[scenario]]\nname = \"pty\"\nserver = \"actix\"\nlog = \"terminal\"\n";
    let placed = parse_str(&pinned(rows)).unwrap();
    let cpus: Vec<Option<String>> = placed.scenarios.iter().map(|s| s.terminal_cpus()).collect();
    let some = |c: &str| Some(c.to_string());
    assert_eq!(cpus, [some("1"), some("1"), some("0"), None]);
    assert!(placed.scenarios.iter().all(|s| s.unpinned().is_empty()));
    // Left to the scheduler, an emulator is named among the unpinned.
    let free = parse_str(rows).unwrap();
    let cpus: Vec<Option<String>> = free.scenarios.iter().map(|s| s.terminal_cpus()).collect();
    assert_eq!(cpus, [None, None, some("0"), None]);
    assert_eq!(
        free.scenarios[0].unpinned(),
        ["server", "loadgen", "terminal"]
    );
    assert_eq!(
        free.scenarios[3].unpinned(),
        ["server", "loadgen", "sink reader"]
    );
    let bad = parse_str(&pinned(
        "[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nlog = \"xterm\"\nterminal_cpus = \"one\"\n",
    ));
    assert!(bad.is_err());
}

#[test]
fn a_sink_drained_here_is_read_on_the_server_cpus_unless_the_row_says_otherwise() {
    let rows = "[[scenario]]\nname = \"pipe\"\nserver = \"actix\"\nlog = \"pipe\"\n\n\
                [[scenario]]\nname = \"pty\"\nserver = \"ntex\"\nlog = \"terminal\"\n\n\
                [[scenario]]\nname = \"own\"\nserver = \"ntex\"\nlog = \"terminal\"\nsink_cpus = \"0\"\n\n\
                [[scenario]]\nname = \"file\"\nserver = \"actix\"\nlog = \"file\"\n";
    let placed = parse_str(&pinned(rows)).unwrap();
    let cpus: Vec<Option<String>> = placed.scenarios.iter().map(|s| s.sink_cpus()).collect();
    let some = |c: &str| Some(c.to_string());
    assert_eq!(cpus, [some("1"), some("1"), some("0"), None]);
    assert!(placed.scenarios.iter().all(|s| s.unpinned().is_empty()));
    // Left to the scheduler, the reader is named among the unpinned; a
    // file has no reader.
    let free = parse_str(rows).unwrap();
    let cpus: Vec<Option<String>> = free.scenarios.iter().map(|s| s.sink_cpus()).collect();
    assert_eq!(cpus, [None, None, some("0"), None]);
    assert_eq!(
        free.scenarios[0].unpinned(),
        ["server", "loadgen", "sink reader"]
    );
    assert_eq!(free.scenarios[3].unpinned(), ["server", "loadgen"]);
    let bad = parse_str(&pinned(
        "[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nlog = \"pipe\"\nsink_cpus = \"one\"\n",
    ));
    assert!(bad.is_err());
}

#[test]
fn workers_take_a_count_or_a_rule() {
    let f = parse_str(
        "[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nworkers = \"logical\"\n\
         [[scenario]]\nname = \"b\"\nserver = \"actix\"\nworkers = \"physical\"\n\
         [[scenario]]\nname = \"c\"\nserver = \"actix\"\nworkers = 2\n",
    )
    .unwrap();
    let got: Vec<String> = f
        .scenarios
        .iter()
        .map(|s| s.workers.unwrap().to_string())
        .collect();
    assert_eq!(got, ["logical", "physical", "2"]);
}

#[test]
fn slow_clients_make_a_row_that_is_not_an_aa() {
    let f = parse_str(&pinned("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nslow_clients = 1000\n[[scenario]]\nname = \"c\"\nserver = \"ntex\"\nslow_clients = 5\nslow_every = \"250ms\"\n"))
        .unwrap();
    let [a, b, c] = &f.scenarios[..] else {
        panic!("{:?}", f.scenarios)
    };
    assert_eq!(a.slow, None);
    let want = |connections, ms| {
        Some(SlowClients {
            connections,
            every: Duration::from_millis(ms),
        })
    };
    assert_eq!((b.slow, c.slow), (want(1000, 1000), want(5, 250)));
    assert!(!b.same_setup(a));
}

#[test]
fn tls_rows_say_who_ends_tls_and_a_front_that_cannot_is_refused_at_the_key() {
    let ok = parse_str(
        "[[scenario]]\nname = \"n\"\nserver = \"ntex\"\nproxy = \"proxy-tls\"\ntls = true\n\n\
         [[scenario]]\nname = \"t\"\nserver = \"actix\"\nfeatures = [\"tls\"]\ntls = true\n\n\
         [[scenario]]\nname = \"p\"\nserver = \"actix\"\nfeatures = [\"tls\"]\n",
    )
    .unwrap();
    let tls: Vec<bool> = ok.scenarios.iter().map(|s| s.tls).collect();
    assert_eq!(tls, [true, true, false]);
    assert!(ok.scenarios[0].load_text().ends_with(", over TLS"));
    assert!(!ok.scenarios[2].load_text().contains("TLS"));
    for (row, says, line) in [
        (
            "server = \"ntex\"\nproxy = \"proxy\"\ntls = true\n",
            "nginx config \"proxy\" does not end TLS",
            5,
        ),
        (
            "server = \"ntex\"\nproxy = \"proxy-tls\"\n",
            "ends TLS ({{TLS_CERT}} or {{TLS_KEY}}): set tls = true",
            2,
        ),
        (
            "server = \"ntex\"\ntls = true\n",
            "the twin ends TLS itself, which needs the tls feature",
            4,
        ),
        (
            "command = [\"sh\", \"-c\", \"exec x {port}\"]\ntls = true\n",
            "ends TLS in nginx only",
            4,
        ),
        (
            "server = \"ntex\"\nfeatures = [\"tls\"]\ntls = true\nslow_clients = 8\n",
            "loadgen --slowloris speaks plain HTTP only",
            5,
        ),
    ] {
        let e = parse_str(&format!("[[scenario]]\nname = \"x\"\n{row}")).unwrap_err();
        assert!(e.contains(says), "{row}: {e}");
        assert!(e.starts_with(&format!("t.toml:{line}: ")), "{row}: {e}");
    }
}
