//! Rows beyond this tree and the project's nginx configs: a twin built at
//! an earlier commit of this repository (`rev`, `shootout ab --rev`), and
//! a proxy row running the user's own nginx template (`proxy_conf`).

use super::*;

/// Release 0.1.0 of this repository (tag v0.1.0): a commit every later
/// one has in its history.
const EARLIER: &str = "079850cb0746b63bd4ea2db1b1fe12b7ca11600b";

fn head() -> String {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root())
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn ab_rev_runs_a_twin_at_an_earlier_commit_paired_with_its_sha_in_meta_and_history() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let ran = Ran::ok(
        &[
            "ab", "--rev", EARLIER, "--rev", "HEAD", "--blocks", "4", "--block", "1s", "--settle",
            "0s", "-c", "4",
        ],
        out.path(),
    );
    assert!(ran.stdout.contains("b/a "), "{}", ran.stdout);
    assert!(ran.stdout.contains("A/A "), "{}", ran.stdout);
    let m = ran.meta();
    let c = &m["paired"][0];
    assert_eq!(c["base_rev"], EARLIER, "{c}");
    assert_eq!(c["row_rev"], head(), "{c}");
    let short = &EARLIER[..12];
    assert!(
        c["base_variant"]
            .as_str()
            .unwrap()
            .ends_with(&format!("@{short}")),
        "{c}"
    );
    assert_eq!(c["blocks"].as_array().unwrap().len(), 4, "{c}");
    assert!(c["error"].is_null(), "{c}");
    // The A/A: the earlier commit against itself.
    let aa = &m["paired"][1];
    assert_eq!(
        (&aa["base_rev"], &aa["row_rev"]),
        (&c["base_rev"], &c["base_rev"])
    );
    // The history names the comparison by its variants, sha included.
    let history = std::fs::read_to_string(out.path().join("history.json")).unwrap();
    assert!(history.contains(&format!("@{short}")), "{history}");
    assert!(ran.dir().join("index.html").is_file());
    ran.left_nothing();

    // A commit this repository does not have, one rev, and commands beside
    // revs: one line, exit 2, nothing written.
    let bad = tempfile::tempdir_in(target_dir()).unwrap();
    for (args, says) in [
        (
            vec!["ab", "--rev", "no-such-commit-here", "--rev", "HEAD"],
            "rev A: rev \"no-such-commit-here\" is not a commit of this repository",
        ),
        (vec!["ab", "--rev", "HEAD"], "--rev takes two commits"),
    ] {
        let r = Ran::new(&args, bad.path());
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{says}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    }
    assert_eq!(std::fs::read_dir(bad.path()).map_or(0, |d| d.count()), 0);
}

/// The project's proxy template with the access log sent to `log` (where
/// the test can read it) and `extra` inside `http`.
fn template(log: &Path, extra: &str) -> String {
    let ours = std::fs::read_to_string(root().join("nginx/proxy.conf")).unwrap();
    ours.replace(
        "access_log {{ACCESS_LOG}};",
        &format!("access_log {};\n    {extra}", log.display()),
    )
}

#[test]
fn a_proxy_row_runs_the_users_nginx_template_and_a_bad_one_is_refused_at_its_line() {
    let dir = tempfile::tempdir_in(target_dir()).unwrap();
    let log = dir.path().join("access.log");
    let conf = dir.path().join("mine.conf");
    std::fs::write(&conf, template(&log, "")).unwrap();
    let scenario = |conf: &Path| {
        format!(
            "[defaults]\nduration = \"2s\"\nwarmup = \"0s\"\nconnections = 4\nworkers = 1\n\
             server_cpus = \"1\"\nloadgen_cpus = \"0\"\n\n\
             [[scenario]]\nname = \"mine\"\nserver = \"ntex\"\n\
             proxy_conf = \"{}\"\n",
            conf.display()
        )
    };
    let f = dir.path().join("mine.toml");
    std::fs::write(&f, scenario(&conf)).unwrap();
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let ran = Ran::ok(&["run", f.to_str().unwrap()], out.path());
    let m = ran.meta();
    let row = &m["rows"][0];
    assert_eq!(row["proxy"], conf.display().to_string(), "{row}");
    assert!(row["error"].is_null(), "{row}");
    // nginx ran the user's template: every request it passed on is in the
    // access log that template names, and it was pinned and read back.
    let logged = std::fs::read_to_string(&log).unwrap().lines().count();
    assert!(logged > 100, "{logged} lines in the template's access log");
    let cpus = row["cpus"].as_array().unwrap();
    assert!(
        cpus.iter()
            .any(|c| c["process"] == "nginx" && c["read"] == serde_json::json!(["1"])),
        "{row}"
    );
    ran.left_nothing();

    // A template nginx refuses, and one without the address to fill in:
    // refused at the line that names it, exit 2, before anything starts.
    let bad_out = tempfile::tempdir_in(target_dir()).unwrap();
    for (text, says) in [
        (
            template(&log, "no_such_directive on;"),
            "nginx -t refuses it: unknown directive \"no_such_directive\"",
        ),
        (
            template(&log, "").replace("{{UPSTREAM}}", "127.0.0.1:9"),
            "has no {{UPSTREAM}}",
        ),
    ] {
        let bad = dir.path().join("bad.conf");
        std::fs::write(&bad, text).unwrap();
        let f = dir.path().join("bad.toml");
        std::fs::write(&f, scenario(&bad)).unwrap();
        let r = Ran::new(&["run", f.to_str().unwrap()], bad_out.path());
        assert_eq!(r.status.code(), Some(2), "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!("{}:12:", f.display())),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains(says), "{says}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    }
    assert_eq!(
        std::fs::read_dir(bad_out.path()).map_or(0, |d| d.count()),
        0
    );
    assert!(leftovers(bad_out.path()).is_empty());
}

/// `patch` and `rev` refused at their line, exit 2, before anything is
/// built: a diff that is not there, a commit the repository lacks, and
/// either on a command row.
#[test]
fn bad_revs_and_patches_are_refused_at_their_line() {
    let dir = tempfile::tempdir_in(target_dir()).unwrap();
    let head = "[defaults]\nconnections = 4\n\n[[scenario]]\nname = \"r\"\n";
    for (row, says) in [
        (
            "server = \"ntex\"\npatch = \"patches/no-such.diff\"\n",
            "patch \"patches/no-such.diff\": no such file",
        ),
        (
            "server = \"ntex\"\nrev = \"no-such-commit-here\"\n",
            "is not a commit of this repository",
        ),
        (
            "command = [\"sh\", \"{port}\"]\nrev = \"HEAD\"\n",
            "a command row runs its own program",
        ),
    ] {
        let f = dir.path().join("bad.toml");
        std::fs::write(&f, format!("{head}{row}")).unwrap();
        let r = Ran::new(&["run", f.to_str().unwrap()], dir.path());
        assert_eq!(r.status.code(), Some(2), "{row}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("{}:7:", f.display())),
            "{row}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(says), "{says}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    }
}
