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
