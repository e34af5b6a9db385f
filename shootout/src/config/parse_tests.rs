//! Tests of the scenario parser as a whole: every error at its file and
//! line, and a memory file; `parse_str` and `pinned` are shared with the
//! tests of each design's file.

use std::path::Path;
use std::time::Duration;

use crate::config::parse::parse;
use crate::config::scenario::{Design, Libc, MemorySettings, ScenarioFile};

/// `text` parsed as `t.toml`, its error as a line.
pub(super) fn parse_str(text: &str) -> Result<ScenarioFile, String> {
    parse(Path::new("t.toml"), text).map_err(|e| e.to_string())
}

/// `text` with every process of its rows pinned (server on CPU 1,
/// loadgen on 0) in its `[defaults]`.
pub(super) fn pinned(text: &str) -> String {
    const CPUS: &str = "server_cpus = \"1\"\nloadgen_cpus = \"0\"\n";
    match text.find("[defaults]\n") {
        Some(at) => format!("{}{CPUS}{}", &text[..at + 11], &text[at + 11..]),
        None => {
            let at = text.find("[[scenario]]").expect("a row");
            format!("{}[defaults]\n{CPUS}{}", &text[..at], &text[at..])
        }
    }
}

#[test]
fn memory_files_and_musl_rows() {
    let f = parse_str("kind = \"memory\"\n[memory]\nhold = \"4s\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nconnections = 10000\nlibc = \"musl\"\n").unwrap();
    let Design::Memory(m) = &f.design else {
        panic!("{:?}", f.design)
    };
    assert_eq!(m.hold, Duration::from_secs(4));
    assert_eq!(m.after, MemorySettings::default().after);
    assert_eq!(f.scenarios[0].connections, 10000);
    assert_eq!(f.scenarios[0].libc, Libc::Musl);
    assert_eq!(f.scenarios[0].variant(), "ntex-server@musl");
    let t = parse_str("kind = \"throughput\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n")
        .unwrap();
    assert_eq!(t.design, Design::Sequential);
    assert_eq!(t.scenarios[0].libc, Libc::Glibc);
}

#[test]
fn errors_name_the_file_and_line() {
    let cases = [
        ("[[scenario]]\nname = \"a\"\nserver = \"rocket\"\n", "t.toml:3: unknown server \"rocket\""),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nfeatures = [\n  \"turbo\"]\n", "t.toml:5: unknown feature \"turbo\""),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nduration = \"ten\"\n", "t.toml:4: bad duration \"ten\""),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\ncolour = 1\n", "t.toml:4: unknown field `colour`"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:5: scenario name \"a\" is used twice"),
        ("[defaults]\noriginal = { rps = 5 }\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: [defaults] cannot set a published figure"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\noriginal = { rps = 0 }\n", "t.toml:4: original needs rps > 0"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\noriginal = { rps = 1, sd = -2 }\n", "t.toml:4: original needs rps > 0 and sd >= 0"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\noriginal = { rps = 1, mean = 2 }\n", "t.toml:4: unknown field `mean`"),
        ("design = \"paired\"\nbaseline = \"nope\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: baseline \"nope\" is not a scenario name"),
        ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nagainst = \"c\"\n", "t.toml:9: against \"c\" is not a scenario name"),
        ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nagainst = \"b\"\n", "t.toml:9: scenario \"b\" is against itself"),
        ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nagainst = \"b\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\n", "t.toml:6: \"a\" is the baseline: it is compared with nothing"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nagainst = \"a\"\n", "t.toml:7: against is for design = \"paired\""),
        ("design = \"paired\"\nbaseline = \"a\"\n[defaults]\nagainst = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:4: [defaults] cannot set against"),
        ("design = \"paired\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:1: design = \"paired\" needs a baseline"),
        ("design = \"duet\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:1: unknown design \"duet\""),
        ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrepetitions = 3\n", "t.toml:6: repetitions is not used by design = \"paired\""),
        ("baseline = \"a\"\n[paired]\nblock = \"5s\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: [paired] needs design = \"paired\""),
        ("design = \"paired\"\nbaseline = \"a\"\n[paired]\nblocks = 3\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:3: [paired] blocks must be even"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nspin_ns = 10\n", "t.toml:2: spin_ns needs the calibrate feature"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nserver_host = \"x\"\n", "t.toml:4: server_host needs [ssh] and [hosts.NAME] tables"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nclient_timeout = 0\n", "t.toml:2: client_timeout = 0 needs the keepalive-os feature (the servers refuse it otherwise)"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nworkers = \"all\"\n", "t.toml:4: bad workers: \"all\": expected a number above 0, logical or physical"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nworkers = 0\n", "t.toml:4: bad workers"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nconnections = 0\n", "t.toml:4: connections must be at least 1, not 0"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrequests_per_connection = 0\n", "t.toml:4: requests_per_connection must be at least 1"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nslow_clients = 10\n", "t.toml:4: slow_clients is for design = \"paired\""),
        ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nslow_clients = 0\n", "t.toml:9: slow_clients must be at least 1, not 0"),
        ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nslow_every = \"1s\"\n", "t.toml:9: slow_every needs slow_clients"),
        ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nslow_clients = 5\nslow_every = \"0s\"\n", "t.toml:10: slow_every must be more than zero"),
        ("design = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nslow_clients = 5\nslow_every = \"soon\"\n", "t.toml:10: slow_every \"soon\": "),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nconnections = -1\n", "t.toml:4: invalid value: integer `-1`"),
        ("[defaults]\nthreads = 0\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: threads must be at least 1, not 0"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nnginx_workers = 0\n", "t.toml:4: nginx_workers must be at least 1, not 0"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrepetitions = 0\n", "t.toml:4: repetitions must be at least 1, not 0"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = 0.0\n", "t.toml:4: rate must be a number of requests per second above 0, not 0"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = -5.0\n", "t.toml:4: rate must be a number of requests per second above 0, not -5"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = nan\n", "t.toml:4: rate must be a number of requests per second above 0, not NaN"),
        ("kind = \"disk\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:1: unknown kind \"disk\""),
        ("kind = \"memory\"\ndesign = \"paired\"\nbaseline = \"a\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: design is for throughput rows"),
        ("kind = \"memory\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nduration = \"5s\"\n", "t.toml:5: duration is not used by memory rows"),
        ("kind = \"memory\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nproxy = \"nginx\"\n", "t.toml:3: scenario \"a\": memory rows measure the server's own connections"),
        ("kind = \"memory\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = 5.0\n", "t.toml:3: scenario \"a\": rate is not used by memory rows"),
        ("design = \"paired\"\nbaseline = \"a\"\n[paired]\nschedule = \"interleave\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = 5.0\n", "t.toml:6: scenario \"a\": rate is not used by schedule = \"interleave\""),
        ("kind = \"memory\"\n[memory]\nhold = \"1s\"\nsettle = \"2s\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:2: [memory] settle must be shorter than hold"),
        ("[memory]\nhold = \"1s\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n", "t.toml:1: [memory] needs kind = \"memory\""),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nlibc = \"bionic\"\n", "t.toml:4: unknown variant `bionic`"),
        ("[[scenario]]\nname = \"a\"\nserver = \"actix\"\nfeatures = [\"rt-neon\"]\n", "t.toml:4: actix-web runs on tokio only"),
        ("[[scenario]]\nname = \"a\"\nserver = \"actix\"\nfeatures = [\"ntex-read-once\"]\n", "t.toml:4: ntex-read-once patches ntex's tokio read path: ntex rows on rt-tokio only"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nfeatures = [\"ntex-read-once\", \"rt-neon\"]\n", "t.toml:4: ntex-read-once patches ntex's tokio read path: ntex rows on rt-tokio only"),
        ("[[scenario]]\nname = \"a\"\nserver = \"actix\"\nfeatures = [\"ntex-call-nowait\"]\n", "t.toml:4: ntex-call-nowait patches ntex's service calls: ntex rows only"),
        ("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nfeatures = [\"rt-neon\", \"rt-uring\"]\n", "t.toml:4: features [\"rt-neon\", \"rt-uring\"]: one runtime per row"),
    ];
    for (text, want) in cases {
        let got = parse_str(text).unwrap_err();
        assert!(got.starts_with(want), "{got:?} should start with {want:?}");
    }
}
