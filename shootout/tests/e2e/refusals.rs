//! Bad command lines and bad scenario files: refused in one line, with
//! exit 2 and the file and line at fault, before anything runs.

use super::*;

#[test]
fn bad_command_line_values_are_refused_in_one_line_with_exit_2() {
    for (args, want) in [
        (&["calibrate", "--minutes", "0"][..], "--minutes"),
        (&["calibrate", "--spin-pct", "1,150"], "--spin-pct"),
        (&["calibrate", "--connections", "0"], "--connections"),
        (&["calibrate", "--block", "0s"], "--block"),
        (
            &["run", "scenarios/quick.toml", "--blocks", "3"],
            "--blocks",
        ),
        (&["run", "scenarios/quick.toml", "--runs", "0"], "--runs"),
        (
            &["run", "scenarios/quick.toml", "--settle", "soon"],
            "--settle",
        ),
        (
            &["run", "scenarios/quick.toml", "--duration", "0s"],
            "--duration",
        ),
        (&["run"], "<FILE>"),
        (&["report"], "<DIR>"),
    ] {
        let out = shootout(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("shootout: ") && err.contains(want),
            "{args:?}: {err}"
        );
    }
    let help = shootout(&["run", "--help"]).output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage:"));
}

#[test]
fn scenario_file_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    for (text, want) in [
        (
            "[[scenario]]\nname = \"a\"\nserver = \"rocket\"\n",
            ":3: unknown server \"rocket\"",
        ),
        (
            "[[scenario]]\nname = \"a\"\nserver = \"ntex\"\nfeatures = [\"turbo\"]\n",
            ":4: unknown feature \"turbo\"",
        ),
        (
            "[[scenario]]\nname = \"a\"\nserver = \"ntex\"\n\nduration = \"soon\"\n",
            ":5: bad duration \"soon\"",
        ),
    ] {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, text).unwrap();
        for sub in ["list", "run"] {
            let out = shootout(&[sub]).arg(&file).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{sub}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(&format!("bad.toml{want}")), "{sub}: {err}");
        }
    }
    let out = shootout(&["list", "scenarios/quick.toml"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("ntex-netns"));
    // Every committed scenario file parses.
    for entry in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        let out = shootout(&["list"]).arg(&path).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn paired_file_with_an_unknown_baseline_is_refused_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "design = \"paired\"\nbaseline = \"nope\"\n[[scenario]]\nname = \"a\"\nserver = \"actix\"\n",
    )
    .unwrap();
    let out = shootout(&["run"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:2: baseline \"nope\" is not a scenario name"),
        "{err}"
    );
}

#[test]
fn paired_file_with_an_unpinned_process_is_refused_unless_it_says_free() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("free.toml");
    let text = "design = \"paired\"\nbaseline = \"a\"\n[defaults]\nserver_cpus = \"1\"\nloadgen_cpus = \"0\"\n\
                [[scenario]]\nname = \"a\"\nserver = \"ntex\"\n[[scenario]]\nname = \"b\"\nserver = \"ntex\"\n\
                proxy = \"proxy\"\nnginx_cpus = \"0-1\"\n[[scenario]]\nname = \"c\"\nserver = \"actix\"\nserver_cpus = \"0\"\n";
    // nginx on both CPUs is a placement too; only an unset one is refused.
    std::fs::write(&file, text).unwrap();
    let out = shootout(&["list"]).arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&file, text.replace("server_cpus = \"1\"\n", "")).unwrap();
    let out = shootout(&["run"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("free.toml:6: scenario \"a\": its server would run where the scheduler puts them; set server_cpus or say placement = \"free\""),
        "{err}"
    );
    let free = text.replace("server_cpus = \"1\"\n", "placement = \"free\"\n");
    std::fs::write(&file, free).unwrap();
    let out = shootout(&["list"]).arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
