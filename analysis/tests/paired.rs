//! The paired design's arithmetic on a fixture worked out by hand
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

    // Mean ln ratio: (0.0953102 + 0 + 0 - 0.1053605) / 4 = -0.0025126.
    // sd of the four: sqrt(0.0201596 / 3) = 0.0819748; se 0.0409874;
    // t(0.975, 3) = 3.182446 -> half-width 0.1304412 in logs.
    let rps = r.rps.unwrap();
    assert!(close(rps.ratio, (-0.0025126f64).exp(), 1e-6), "{rps:?}");
    assert!(
        close(rps.t.lo, (-0.0025126f64 - 0.1304412).exp(), 1e-5),
        "{rps:?}"
    );
    assert!(
        close(rps.t.hi, (-0.0025126f64 + 0.1304412).exp(), 1e-5),
        "{rps:?}"
    );
    // Bootstrap over 2 blocks: means of (b1, b1), (b1, b2), (b2, b2), so
    // its 2.5% and 97.5% points are the block means 0.0476551 and
    // -0.0526803; narrower than t, so the reported CI is t's.
    let b = rps.bootstrap.unwrap();
    assert!(close(b.lo, (-0.0526803f64).exp(), 1e-6), "{b:?}");
    assert!(close(b.hi, 0.0476551f64.exp(), 1e-6), "{b:?}");
    assert_eq!(rps.ci, rps.t);
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

    // The CI half-width is the wider side: exp(0.1304412) - 1 = 13.93%.
    // The report names both metrics and renders a chart.
    let files = analysis::render(&report).unwrap();
    let readme = String::from_utf8(files[0].1.clone()).unwrap();
    assert!(readme.contains("| Row | 0.9975 ± 13.93% | 2.0000 ± 0.00% | 2xx/s no difference resolved; CPU/request higher | 4 (2) |"), "{readme}");
    assert!(files.iter().any(|(n, _)| n == "t-paired-ratios.svg"));
}
