//! The paired design's arithmetic (block-level interval) on a fixture worked out by hand
//! (`tests/fixtures/paired/t`): two blocks of two windows, 1000 ms each.
//!
//! Block 1 (ab): row 1100, 1000 against base 1000, 1000 -> ln ratios
//! 0.0953102, 0. Block 2 (ba): row 1000, 990 against 1000, 1100 -> 0,
//! -0.1053605. Server CPU: row 2 µs per request, base 1 µs, everywhere.

use std::path::Path;

use analysis::{analyse, Options};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() < tol
}

#[test]
fn paired_ratios_and_intervals_worked_by_hand() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/paired");
    let (report, problems) = analyse(&dir, &Options::default());
    assert!(problems.is_empty(), "{problems:?}");
    let report = report.unwrap();
    assert!(report.tables.is_empty());
    let t = &report.paired[0];
    assert_eq!((t.baseline.as_str(), t.rows.len()), ("base", 1));
    let r = &t.rows[0];
    assert_eq!((r.pairs, r.blocks, r.dropped), (4, 2, 0));

    // Over pairs as if independent (the diagnostic): mean ln ratio
    // (0.0953102 + 0 + 0 - 0.1053605) / 4 = -0.0025126; sd of the four
    // sqrt(0.0201596 / 3) = 0.0819748; se 0.0409874; t(0.975, 3) =
    // 3.182446 -> half-width 0.1304412 in logs.
    let rps = r.rps.unwrap();
    assert!(close(rps.ratio, (-0.0025126f64).exp(), 1e-6), "{rps:?}");
    assert!(
        close(rps.pairs_t.lo, (-0.0025126f64 - 0.1304412).exp(), 1e-5),
        "{rps:?}"
    );
    assert!(
        close(rps.pairs_t.hi, (-0.0025126f64 + 0.1304412).exp(), 1e-5),
        "{rps:?}"
    );
    // Over blocks (the reported CI): block means 0.0476551 and -0.0526803,
    // their mean -0.0025126 (equal blocks: the same point estimate); se =
    // |difference| / 2 = 0.0501677; t(0.975, 1) = 12.706205 -> half-width
    // 0.6374407 in logs: far wider, as two blocks deserve.
    assert_eq!(rps.blocks, 2);
    assert!(
        close(rps.ci.lo, (-0.0025126f64 - 0.6374407).exp(), 1e-5),
        "{rps:?}"
    );
    assert!(
        close(rps.ci.hi, (-0.0025126f64 + 0.6374407).exp(), 1e-5),
        "{rps:?}"
    );
    assert!(rps.ci.contains_one());
    // Slot orders: block 1 was AB, block 2 BA.
    assert!(close(r.rps_ab.unwrap(), 0.0476551f64.exp(), 1e-6));
    assert!(close(r.rps_ba.unwrap(), (-0.0526803f64).exp(), 1e-6));

    // CPU per request: 2 µs against 1 µs in every window: exactly 2.
    let cpu = r.cpu.unwrap();
    assert!(
        close(cpu.ratio, 2.0, 1e-9) && close(cpu.ci95_pct, 0.0, 1e-9),
        "{cpu:?}"
    );
    assert!(close(r.row_cpu_us_mean.unwrap(), 2.0, 1e-9));

    // Totals 2100, 2000, 2000, 2090 are within 10%: one state.
    assert!(r.states.is_empty() && r.state_threshold.is_none());

    // The CI half-width is the wider side: exp(0.6374407) - 1 = 89.16%.
    // The verdict rests on 2xx/s alone; the chart is rendered.
    let files = analysis::render(&report).unwrap();
    let readme = String::from_utf8(files[0].1.clone()).unwrap();
    assert!(
        readme.contains(
            "| Row | 0.9975 ± 89.16% | 2.0000 ± 0.00% | 2xx/s no difference resolved | 4 (2) |"
        ),
        "{readme}"
    );
    assert!(files.iter().any(|(n, _)| n == "t-paired-ratios.svg"));
}

/// A comparison repeated as three runs (`tests/fixtures/paired-runs/t`,
/// `row/run-NN/`): run 1 is the fixture above; run 2 has every measured row
/// count × 1.1 (1210, 1100; 1100, 1089), run 3 × 0.95 rounded (1045, 950;
/// 950, 940). Per run, by hand (block means averaged):
/// run 1 -0.0025126; run 2 (ln 1.21 + ln 1.1) / 4 + (ln 1.1 + ln 0.99) / 4 =
/// 0.0927976; run 3 (ln 1.045 + ln 0.95) / 4 + (ln 0.95 + ln(940 / 1100)) / 4
/// = -0.0539388. Over runs: mean 0.0121154, sd 0.0744539, se 0.0429860,
/// t(0.975, 2) = 4.302653 -> half-width 0.1849536 in logs.
#[test]
fn repeated_comparison_reports_the_run_level_interval() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/paired-runs");
    let (report, problems) = analyse(&dir, &Options::default());
    assert!(problems.is_empty(), "{problems:?}");
    let r = &report.unwrap().paired[0].rows[0];
    assert_eq!((r.pairs, r.blocks), (12, 6));
    let runs: Vec<(u32, f64)> = r
        .runs
        .iter()
        .map(|x| (x.run, x.rps.unwrap().ratio.ln()))
        .collect();
    let want = [(1, -0.002_512_6), (2, 0.092_797_6), (3, -0.053_938_8)];
    for ((n, got), (m, exp)) in runs.iter().zip(want) {
        assert!(*n == m && close(*got, exp, 1e-6), "{runs:?}");
    }
    let across = r.across_runs.unwrap();
    assert!(close(across.ratio.ln(), 0.012_115_4, 1e-6), "{across:?}");
    assert!(
        close(across.lo.ln(), 0.012_115_4 - 0.184_953_6, 1e-6),
        "{across:?}"
    );
    assert!(
        close(across.hi.ln(), 0.012_115_4 + 0.184_953_6, 1e-6),
        "{across:?}"
    );
    // Within a run each interval is over its own 2 blocks (run 3: block
    // means -0.0036381 and -0.1042397, half-width 12.706205 × 0.0503008 =
    // 0.6391352 in logs: +89.48 %); the pooled
    // metric groups blocks by (run, block): 6 blocks, not 2.
    assert_eq!(r.rps.unwrap().blocks, 6);
    assert!(r.runs.iter().all(|x| x.rps.unwrap().blocks == 2));
    let files = analysis::render(&analysis::analyse(&dir, &Options::default()).0.unwrap()).unwrap();
    let readme = String::from_utf8(files[0].1.clone()).unwrap();
    assert!(
        readme.contains("| Row | 1.0122 ± 20.32% across 3 runs (within a run ± 89.16–89.48%) |"),
        "{readme}"
    );
}
