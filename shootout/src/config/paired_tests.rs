//! Tests of `design = "paired"` and `[paired]` (`paired.rs`) through the
//! scenario parser.

use std::time::Duration;

use crate::config::parse_tests::{parse_str, pinned};
use crate::config::scenario::{Design, PairedSettings, Schedule, Spread};

#[test]
fn a_paired_row_with_an_unpinned_process_is_refused_unless_it_says_free() {
    let file = |extra: &str| {
        format!("design = \"paired\"\nbaseline = \"a\"\n[defaults]\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nproxy = \"proxy\"\n{extra}")
    };
    parse_str(&file("")).unwrap();
    let e = parse_str(&file("server_cpus = \"0-1\"\nnginx_cpus = \"0\"\n"));
    assert!(e.is_ok(), "{e:?}");
    let no_loadgen = file("").replace("loadgen_cpus = \"0\"\n", "");
    let e = parse_str(&no_loadgen).unwrap_err();
    assert!(
        e.starts_with("t.toml:6: scenario \"a\": its loadgen would run where the scheduler puts them; set loadgen_cpus or say placement = \"free\""),
        "{e}"
    );
    let free = parse_str(&no_loadgen.replace("[defaults]\n", "[defaults]\nplacement = \"free\"\n"))
        .unwrap();
    assert!(free.scenarios.iter().all(|s| s.placement_free));
    let e = parse_str(&file("placement = \"loose\"\n")).unwrap_err();
    assert!(
        e.starts_with("t.toml:13: placement \"loose\": use \"pinned\""),
        "{e}"
    );
    // A pipe's reader is placed with the server by default; left to the
    // scheduler with it, the message names its key, sink_cpus.
    let pipe = "design = \"paired\"\nbaseline = \"a\"\n[defaults]\nloadgen_cpus = \"0\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nserver_cpus = \"1\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\nlog = \"pipe\"\n";
    let e = parse_str(pipe).unwrap_err();
    assert!(
        e.contains("its server, sink reader would run where the scheduler puts them; set server_cpus, sink_cpus or say"),
        "{e}"
    );
    parse_str(&format!("{pipe}server_cpus = \"1\"\n")).unwrap();
    let e = parse_str(&file("nginx_cpus = \"one\"\n")).unwrap_err();
    assert!(e.contains("\"one\" is not a CPU list"), "{e}");
    // Sequential rows may leave processes free (their answers say so).
    parse_str("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n").unwrap();
}

#[test]
fn paired_design_and_its_settings() {
    let f = parse_str(&pinned(
        "design = \"paired\"\nbaseline = \"a\"\n[paired]\nblock = \"5s\"\nblocks = 6\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"actix\"\n",
    ))
    .unwrap();
    let Design::Paired(p) = f.design else {
        panic!("not paired")
    };
    assert_eq!(p.block, Duration::from_secs(5));
    assert_eq!(p.blocks, 6);
    assert_eq!(p.settle, PairedSettings::default().settle);
    assert_eq!(p.schedule, Schedule::Interleave);
    assert_eq!(p.turn, Duration::from_millis(200));
    let alt = parse_str(&pinned(
        "design = \"paired\"\nbaseline = \"a\"\n[paired]\nschedule = \"alternate\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n",
    ))
    .unwrap();
    assert!(matches!(alt.design, Design::Paired(p) if p.schedule == Schedule::Alternate));
    assert_eq!(
        parse_str("[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n")
            .unwrap()
            .design,
        Design::Sequential
    );
}

#[test]
fn a_comparison_plans_its_blocks_and_never_stops_on_its_interval() {
    let file = |paired: &str| {
        pinned(&format!("design = \"paired\"\nbaseline = \"a\"\n[paired]\n{paired}\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n"))
    };
    for bad in ["blocks = 3", "blocks = 2", "blocks = 0"] {
        let e = parse_str(&file(bad)).unwrap_err();
        assert!(
            e.contains("t.toml:3: [paired] blocks must be even and at least 4"),
            "{bad}: {e}"
        );
    }
    for gone in ["target_ci_pct = 0.5", "budget = \"2m\"", "min_blocks = 6"] {
        let e = parse_str(&file(gone)).unwrap_err();
        assert!(
            e.contains("are gone: a comparison runs a fixed number of blocks"),
            "{gone}: {e}"
        );
    }
    let Design::Paired(p) = parse_str(&file("blocks = 4")).unwrap().design else {
        panic!("not paired")
    };
    assert_eq!(p.blocks, PairedSettings::MIN_BLOCKS);
    for bad in ["runs = 0", "runs = -1"] {
        let e = parse_str(&file(bad)).unwrap_err();
        assert!(
            e.starts_with("t.toml:3: [paired] runs must be at least 1"),
            "{bad}: {e}"
        );
    }
    let Design::Paired(p) = parse_str(&file("runs = 3")).unwrap().design else {
        panic!("not paired")
    };
    assert_eq!((p.runs, p.blocks), (3, 8));
}

#[test]
fn paired_rows_name_what_they_are_compared_with_and_a_same_setup_row_is_an_aa() {
    let f = parse_str(&pinned("design = \"paired\"\nbaseline = \"actix\"\n[defaults]\nconnections = 8\n[[scenario]]\nname = \"actix\"\nserver = \"actix\"\n[[scenario]]\nname = \"ntex\"\nserver = \"ntex\"\n[[scenario]]\nname = \"ntex-nginx\"\nserver = \"ntex\"\nproxy = \"proxy\"\nagainst = \"ntex\"\n[[scenario]]\nname = \"aa\"\nlabel = \"A/A\"\nserver = \"actix\"\n"))
        .unwrap();
    let [actix, ntex, nginx, aa] = &f.scenarios[..] else {
        panic!("{:?}", f.scenarios)
    };
    assert_eq!(nginx.against.as_deref(), Some("ntex"));
    assert_eq!(
        (ntex.against.as_deref(), aa.against.as_deref()),
        (None, None)
    );
    assert!(aa.same_setup(actix));
    assert!(!ntex.same_setup(actix));
    assert!(
        !nginx.same_setup(ntex),
        "a proxy in front is not the same setup"
    );
}

#[test]
fn spread_is_comparison_by_default_sitting_when_asked_and_nothing_else() {
    let file = |paired: &str| {
        pinned(&format!("design = \"paired\"\nbaseline = \"a\"\n[paired]\n{paired}[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"actix\"\n"))
    };
    let spread = |paired: &str| match parse_str(&file(paired)).unwrap().design {
        Design::Paired(p) => p.spread,
        d => panic!("{d:?}"),
    };
    assert_eq!(spread(""), Spread::Comparison);
    assert_eq!(spread("spread = \"sitting\"\n"), Spread::Sitting);
    assert_eq!(spread("spread = \"comparison\"\n"), Spread::Comparison);
    let e = parse_str(&file("spread = \"week\"\n")).unwrap_err();
    assert!(e.contains("t.toml:") && e.contains("week"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}
