//! The twins against each other on 1,500 generated raw requests (the short
//! version of `cargo run --release -p conformance --bin differential`; see
//! `conformance::fuzz`). Neither may crash or stop serving, and each one's
//! counter must still add up afterwards. Where they answer differently is
//! printed by class (`--nocapture`): the classes are framework facts listed
//! in this crate's README, and a class this crate does not know fails.

use conformance::fuzz;

#[test]
fn generated_requests_crash_neither_twin_and_differ_only_in_known_ways() {
    let cases = fuzz::generate(27, 1500);
    let (actix, ntex) = fuzz::start_twins();
    let report = fuzz::run(actix.addr, ntex.addr, &cases, 16);
    let classes: std::collections::BTreeMap<_, _> = report
        .classes()
        .into_iter()
        .map(|(class, ds)| (class, ds.len()))
        .collect();
    println!(
        "{} cases, {} differ: {classes:?}",
        report.cases,
        report.differences.len()
    );
    for server in [&actix, &ntex] {
        // Still serving, and its counter adds up: GET, POST 5, GET.
        let mut c = server.conn();
        let before: u64 = c.get().unwrap().text().parse().unwrap();
        let after_post: u64 = c.post(b"5").unwrap().text().parse().unwrap();
        let after: u64 = c.get().unwrap().text().parse().unwrap();
        assert_eq!((after_post, after), (before + 5, before + 5));
    }
    assert!(actix.stop().status.success());
    assert!(ntex.stop().status.success());
    let unknown: Vec<usize> = report
        .classes()
        .get("other")
        .map_or(Vec::new(), |ds| ds.iter().map(|d| d.case.n).collect());
    assert!(
        unknown.is_empty(),
        "{} differences of no known class: cases {unknown:?} (`cargo run -p conformance --bin differential -- --requests 1500` shows them)",
        unknown.len()
    );
}
