//! Tests of `[sweep]` through the scenario parser.

use crate::config::scenario::Design;
use crate::config::sweep::SweepSettings;
use std::time::Duration;

fn parse(table: &str) -> Result<SweepSettings, String> {
    let text =
        format!("design = \"sweep\"\n{table}\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n");
    let f = crate::config::parse::parse(std::path::Path::new("t.toml"), &text)
        .map_err(|e| e.to_string())?;
    match f.design {
        Design::Sweep(s) => Ok(s),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_sweep_table_reads_with_its_defaults() {
    let s =
        parse("[sweep]\nslo = \"p99.9 <= 10ms\"\nrates = [1000.0, 2000.0]\nrepeats = 2\n").unwrap();
    assert_eq!(s.slos[0].to_string(), "p99.9 <= 10ms");
    assert_eq!(s.rates, Some(vec![1000.0, 2000.0]));
    assert_eq!((s.repeats, s.bisect, s.factor, s.votes), (2, 4, 1.5, 3));
    let s = parse("[sweep]\nslo = \"p99 <= 1ms\"\nvotes = 1\n").unwrap();
    assert_eq!(s.votes, 1);
    assert_eq!(s.client_spin, None);
    assert_eq!(s.rules(s.slos[0]).max_loadgen_busy, Some(0.98));
    // A spinning client: its busy share bounds nothing.
    let s = parse("[sweep]\nslo = \"p99 <= 1ms\"\nclient_spin = \"1ms\"\n").unwrap();
    assert_eq!(s.client_spin, Some(Duration::from_millis(1)));
    assert_eq!(s.rules(s.slos[0]).max_loadgen_busy, None);
    assert!(s.interleave, "searches are interleaved by default");
    let s = parse("[sweep]\nslo = \"p99 <= 1ms\"\ninterleave = false\n").unwrap();
    assert!(!s.interleave);
}

#[test]
fn bad_sweep_values_name_the_file_and_line() {
    for (table, want) in [
        (
            "[sweep]\nslo = \"p99 <= banana\"\n",
            "t.toml:3: [sweep] bad slo \"p99 <= banana\"",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nrates = []\n",
            "t.toml:4: [sweep] rates is empty",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nrates = [100.0, -5.0]\n",
            "t.toml:4: [sweep] rates must be more than zero, not -5",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nrates = [200.0, 100.0]\n",
            "t.toml:4: [sweep] rates must increase",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nfactor = 1.0\n",
            "t.toml:4: [sweep] factor must be more than 1",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nrepeats = 0\n",
            "t.toml:4: [sweep] repeats must be at least 1",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nvotes = 0\n",
            "t.toml:4: [sweep] votes must be at least 1",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nclient_spin = \"2ms\"\n",
            "t.toml:4: [sweep] client_spin must be at most 1ms",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nclient_spin = \"0s\"\n",
            "t.toml:4: [sweep] client_spin must be more than zero",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nvotes = 4\n",
            "t.toml:4: [sweep] votes must be odd",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nstep = \"0s\"\n",
            "t.toml:4: [sweep] step must be more than zero",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\nturbo = 1\n",
            "t.toml:4: unknown field `turbo`",
        ),
        ("[sweep]\nrates = [1.0]\n", "t.toml:2: [sweep] needs slo"),
        ("[sweep]\nslo = []\n", "t.toml:3: [sweep] slo is empty"),
        (
            "[sweep]\nslo = 5\n",
            "t.toml:3: [sweep] slo must be a string or a list",
        ),
        (
            "[sweep]\nslo = [\"p99 <= 1ms\", \"p99 <= 1000us\"]\n",
            "t.toml:3: [sweep] slo p99 <= 1ms is given twice",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\ncompare_at = [0.0]\n",
            "t.toml:4: [sweep] compare_at takes percentages in (0, 100], not 0",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\ncompare = [\"a\"]\n",
            "t.toml:4: [sweep] compare needs compare_at",
        ),
        (
            "[sweep]\nslo = \"p99 <= 1ms\"\ncompare_at = [50.0]\ncompare_blocks = 1\n",
            "t.toml:5: [sweep] compare_blocks must be at least 2",
        ),
        ("", "t.toml:1: design = \"sweep\" needs a [sweep] table"),
    ] {
        let e = parse(table).unwrap_err();
        assert!(e.starts_with(want), "{table:?}: {e}");
    }
    let rate = "design = \"sweep\"\n[sweep]\nslo = \"p99 <= 1ms\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nrate = 5.0\n";
    let e = crate::config::parse::parse(std::path::Path::new("t.toml"), rate).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("t.toml:7: rate is not used by design = \"sweep\""),
        "{e}"
    );
    let orphan = "[sweep]\nslo = \"p99 <= 1ms\"\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n";
    let e = crate::config::parse::parse(std::path::Path::new("t.toml"), orphan).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("t.toml:1: [sweep] needs design = \"sweep\""),
        "{e}"
    );
}

#[test]
fn a_step_is_long_enough_for_its_requests() {
    let s = SweepSettings::new(vec!["p99 <= 1ms".parse().unwrap()]);
    assert_eq!(s.step_length(100_000.0), Duration::from_secs(3));
    assert_eq!(s.step_length(2_000.0), Duration::from_secs(10));
    assert_eq!(s.step_length(3_000.0), Duration::from_secs(7));
}

#[test]
fn targets_and_comparisons_read_and_name_real_rows() {
    let s = parse(
        "[sweep]\nslo = [\"p99 <= 1ms\", \"p99.9 <= 10ms\"]\ncompare_at = [25.0, 50.0]\ncompare_blocks = 4\n",
    )
    .unwrap();
    let slos: Vec<String> = s.slos.iter().map(ToString::to_string).collect();
    assert_eq!(slos, ["p99 <= 1ms", "p99.9 <= 10ms"]);
    assert_eq!(
        (s.compare_at.clone(), s.compare_blocks, s.compare),
        (vec![25.0, 50.0], 4, None)
    );
    let two = |compare: &str| {
        let text = format!(
            "design = \"sweep\"\nbaseline = \"a\"\n[sweep]\nslo = \"p99 <= 1ms\"\ncompare_at = [50.0]\ncompare = {compare}\n[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"actix\"\n"
        );
        crate::config::parse::parse(std::path::Path::new("t.toml"), &text)
            .map_err(|e| e.to_string())
    };
    assert!(two("[\"b\"]").is_ok());
    let e = two("[\"c\"]").unwrap_err();
    assert!(
        e.starts_with("t.toml:6: [sweep] compare names \"c\", which is no row"),
        "{e}"
    );
    let e = two("[\"a\"]").unwrap_err();
    assert!(
        e.starts_with("t.toml:6: [sweep] compare names the baseline \"a\""),
        "{e}"
    );
}
