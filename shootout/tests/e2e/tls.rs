//! `tls = true` rows: nginx ending TLS with the certificate the runner
//! made for it, and a twin ending TLS itself in a namespace; loadgen and
//! the verification speak HTTPS, trusting only the stack's own CA.

use super::*;

/// The records of every loadgen log of `row` in a paired table (blocks,
/// both sides).
fn loadgen_records(table: &Path, row: &str, side: &str) -> Vec<serde_json::Value> {
    let dir = table.join(row);
    let mut out = Vec::new();
    for name in names_in(&dir) {
        if name.ends_with(&format!(".{side}.jsonl")) {
            out.extend(jsonl(&dir.join(&name)));
        }
    }
    out
}

#[test]
fn tls_rows_end_tls_in_nginx_or_the_twin_and_loadgen_speaks_https() {
    let out = tempfile::tempdir_in(target_dir()).unwrap();
    let r = Ran::ok(&["run", "shootout/tests/fixtures/tls.toml"], out.path());
    let m = r.meta();
    let comparisons = m["paired"].as_array().unwrap();
    let load = |row: &str| {
        comparisons.iter().find(|c| c["row"] == row).unwrap()["load"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        load("twin-tls-netns").ends_with("a new connection every 5 requests, over TLS"),
        "{m}"
    );
    let table = r.dir().join("tls");
    // Both sides spoke TLS: the twin in its namespace (row) and nginx (base).
    let row = "twin-tls-netns";
    for side in ["row", "base"] {
        let records = loadgen_records(&table, row, side);
        let summaries: Vec<_> = records.iter().filter(|x| x["type"] == "summary").collect();
        assert!(!summaries.is_empty(), "{row} {side}: no summary");
        for s in summaries {
            assert!(s["tls_version"].is_string(), "{row} {side}: {s}");
            assert!(s["ok"].as_u64().unwrap() > 0, "{row} {side}: {s}");
            let errors = s["errors"].as_object().unwrap();
            assert!(errors.values().all(|v| v == 0), "{row} {side}: {s}");
        }
        let handshakes: u64 = records
            .iter()
            .filter(|x| x["type"] == "interval")
            .filter_map(|x| x["handshakes"]["count"].as_u64())
            .sum();
        assert!(handshakes > 0, "{row} {side}: no handshakes");
    }
    // The churning row reconnected: at least one connection per 5 answers.
    let records = loadgen_records(&table, "twin-tls-netns", "row");
    let (ok, connects) =
        records
            .iter()
            .filter(|x| x["type"] == "interval")
            .fold((0, 0), |(ok, c), x| {
                (
                    ok + x["ok"].as_u64().unwrap_or(0),
                    c + x["connects"].as_u64().unwrap_or(0),
                )
            });
    assert!(
        ok > 0 && connects * 5 >= ok,
        "{connects} connects for {ok} answers"
    );
    // Each side was verified over its own scheme before its load.
    for c in comparisons {
        assert!(c["error"].is_null(), "{c}");
    }
    r.left_nothing();
}
