//! The rules of a sweep, apart from running it: which rates it steps
//! through, when a step is past saturation (the sweep stops), when it meets
//! the target, when it says nothing about the server (the client was the
//! limit), the bisection between the last passing and first failing rate,
//! the knee, and the max rate's interval over repeated searches.

use serde::Serialize;

use super::slo::Slo;
use super::votes::{points, Verdict};
use crate::stats;

/// What one open-model step measured (after its settle time).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The rate asked for, requests/s.
    pub rate: f64,
    /// 2xx/s.
    pub achieved: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// 2xx responses the percentiles rest on.
    pub ok: u64,
    /// Non-2xx responses and errors of every kind.
    pub errors: u64,
    /// How late requests that fell due on an idle connection left their
    /// intended times, µs (p50, p99): the client's own delay (logs from
    /// before loadgen told it apart: every request's).
    pub client_lateness_p50_us: f64,
    pub client_lateness_p99_us: f64,
    /// How late every request left, µs (p99): also those that waited for
    /// their connection's previous response (the server's delay).
    pub send_lateness_p99_us: f64,
    /// loadgen's CPU over its measured time, as a share of its threads
    /// (1.0 = every thread busy all the time); none when not sampled.
    pub loadgen_busy: Option<f64>,
    /// The server's CPU per 2xx, µs; none when not sampled.
    pub server_cpu_us: Option<f64>,
}

impl Step {
    /// The step's figure for the target's percentile.
    pub fn latency_at(&self, slo: &Slo) -> f64 {
        use super::slo::Quantile::*;
        match slo.quantile {
            P50 => self.p50_us,
            P90 => self.p90_us,
            P99 => self.p99_us,
            P999 => self.p999_us,
        }
    }
}

/// The bounds a sweep judges its steps by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Rules {
    pub slo: Slo,
    /// A step whose client lateness p99 (requests due on an idle
    /// connection) exceeds this (µs) measured the client, not the server:
    /// invalid.
    pub max_lateness_us: f64,
    /// A step whose loadgen was busier than this share of its threads is
    /// invalid (a saturated client delays sends and reads). None when
    /// loadgen spins before each send (`[sweep] client_spin`): it is then
    /// always about 100 % busy, and its lateness alone decides.
    pub max_loadgen_busy: Option<f64>,
}

/// Achieved below this share of the rate: past saturation, the sweep stops.
pub const SATURATED_BELOW: f64 = 0.95;
/// The target's percentile above this many times its limit: the sweep stops.
pub const STOP_AT_TIMES_SLO: f64 = 10.0;
/// A passing step achieves at least this share of its rate.
pub const PASS_ACHIEVED: f64 = 0.99;
/// The knee: the last rate whose p99 stays within this many times the
/// lightest valid step's p99.
pub const KNEE_TIMES_BASE: f64 = 2.0;

impl Rules {
    /// The default bounds for `slo`: the client may add a fifth of the
    /// limit in its own send lateness (at least 200 µs: on the development
    /// VM loadgen's p99 was 35-80 µs from 20k to 110k requests/s), and be
    /// busy up to 98 % of its threads (a first sweep there showed loadgen
    /// 97 % busy at 110k requests/s still sending on time, p99 35 µs late,
    /// and its CPU share includes wake-ups that do not saturate it).
    pub fn for_slo(slo: Slo) -> Rules {
        Rules {
            slo,
            max_lateness_us: (slo.limit_us() / 5.0).max(200.0),
            max_loadgen_busy: Some(0.98),
        }
    }

    /// Whether `s` measured the server: the client kept its schedule and
    /// was not CPU-bound.
    pub fn valid(&self, s: &Step) -> bool {
        s.client_lateness_p99_us <= self.max_lateness_us
            && s.loadgen_busy
                .is_none_or(|b| self.max_loadgen_busy.is_none_or(|m| b <= m))
    }

    /// These bounds for a loadgen that spins before each send instead of
    /// sleeping: its busy share is no limit (it always reads about 100 %),
    /// its send lateness still is.
    pub fn spinning(self) -> Rules {
        Rules {
            max_loadgen_busy: None,
            ..self
        }
    }

    /// Past saturation: the sweep goes no higher.
    pub fn stops(&self, s: &Step) -> bool {
        s.achieved < SATURATED_BELOW * s.rate
            || s.latency_at(&self.slo) > STOP_AT_TIMES_SLO * self.slo.limit_us()
    }

    /// Meets the target: valid, at least 99 % of the rate achieved, no
    /// error or non-2xx, the percentile within the limit.
    pub fn passes(&self, s: &Step) -> bool {
        self.valid(s)
            && s.achieved >= PASS_ACHIEVED * s.rate
            && s.errors == 0
            && s.latency_at(&self.slo) <= self.slo.limit_us()
    }

    /// Where the target lies among `steps` (any order; steps at one rate
    /// are that rate's votes, see [`Rules::verdict`]): below the first
    /// rate that fails, above the last rate that passed before it. Rates
    /// that say neither (invalid steps, or no majority) neither end nor
    /// start a bracket (in a search, a rate without a passing majority
    /// counts as failing, so invalid steps inside a bracket lower its
    /// answer, never raise it).
    pub fn bracket(&self, steps: &[Step]) -> Bracket {
        let verdicts: Vec<(f64, Verdict)> = points(steps)
            .iter()
            .map(|(rate, at)| (*rate, self.verdict(at)))
            .collect();
        let last_pass = |end: usize| {
            verdicts[..end]
                .iter()
                .rev()
                .find(|(_, v)| *v == Verdict::Pass)
                .map(|(r, _)| *r)
        };
        match verdicts.iter().position(|(_, v)| *v == Verdict::Fail) {
            Some(f) => match last_pass(f) {
                Some(low) => Bracket::Between(low, verdicts[f].0),
                None => Bracket::Below,
            },
            None if verdicts.iter().all(|(_, v)| *v == Verdict::Pass) => Bracket::Above,
            None => Bracket::Client(last_pass(verdicts.len())),
        }
    }
}

/// Where a sweep's target lies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bracket {
    /// The highest passing rate below the first failing one, and that
    /// failing rate: the search bisects between them.
    Between(f64, f64),
    /// The first valid step fails and none passed before it: the row
    /// does not meet the target at these rates.
    Below,
    /// No step failed: the sweep never got past the target.
    Above,
    /// No valid step failed, but some were invalid (the client was the
    /// limit): the max rate is at least the highest passing rate, if any,
    /// and this client cannot say more.
    Client(Option<f64>),
}

impl Bracket {
    /// `"below"`, `"above"`, `"client"`, or none when a search can run.
    pub fn limit(&self) -> Option<&'static str> {
        match self {
            Bracket::Between(..) => None,
            Bracket::Below => Some("below"),
            Bracket::Above => Some("above"),
            Bracket::Client(_) => Some("client"),
        }
    }
}

/// The sweep's rates when none are given: from `start` up by `factor`,
/// `steps` of them.
pub fn geometric(start: f64, factor: f64, steps: u32) -> Vec<f64> {
    (0..steps).map(|k| start * factor.powi(k as i32)).collect()
}

/// Bisects between a passing `low` and a failing `high` rate `rounds`
/// times at their geometric mean, `passes` running a step at a rate;
/// returns the highest rate that passed (`low` when none did).
pub fn bisect(
    mut low: f64,
    mut high: f64,
    rounds: u32,
    mut passes: impl FnMut(f64) -> anyhow::Result<bool>,
) -> anyhow::Result<f64> {
    for _ in 0..rounds {
        let mid = (low * high).sqrt();
        if passes(mid)? {
            low = mid;
        } else {
            high = mid;
        }
    }
    Ok(low)
}

/// The knee of `steps`: the highest rate reached before the first rate
/// whose p99 exceeds [`KNEE_TIMES_BASE`] times the lightest rate's (a
/// rate's p99: the median over its valid steps; rates without one are
/// left out). None with no valid step; the last valid rate when the
/// latency never doubles.
pub fn knee(steps: &[Step], rules: &Rules) -> Option<f64> {
    let valid: Vec<(f64, f64)> = points(steps)
        .iter()
        .filter_map(|(rate, at)| {
            let mut p99: Vec<f64> = at
                .iter()
                .filter(|s| rules.valid(s))
                .map(|s| s.p99_us)
                .collect();
            p99.sort_by(f64::total_cmp);
            let n = p99.len();
            let median = match n {
                0 => return None,
                _ if n % 2 == 1 => p99[n / 2],
                _ => (p99[n / 2 - 1] + p99[n / 2]) / 2.0,
            };
            Some((*rate, median))
        })
        .collect();
    let base = valid.first()?.1;
    let mut knee = valid[0].0;
    for (rate, p99) in &valid[1..] {
        if *p99 > KNEE_TIMES_BASE * base {
            break;
        }
        knee = *rate;
    }
    Some(knee)
}

/// Mean of the repeated searches' max rates and its 95 % interval's
/// half-width in percent of the mean (Student's t, repeats - 1 degrees of
/// freedom); none for the interval with fewer than two.
pub fn max_rate(repeats: &[f64]) -> Option<(f64, Option<f64>)> {
    let d = stats::describe(repeats)?;
    let ci = (repeats.len() >= 2).then(|| 100.0 * d.ci95 / d.mean);
    Some((d.mean, ci))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A valid step at `rate` that achieved `achieved`, with p99 `p99_us`.
    pub(crate) fn step(rate: f64, achieved: f64, p99_us: f64) -> Step {
        Step {
            rate,
            achieved,
            p50_us: p99_us / 4.0,
            p90_us: p99_us / 2.0,
            p99_us,
            p999_us: p99_us * 2.0,
            max_us: p99_us * 3.0,
            ok: 20_000,
            errors: 0,
            client_lateness_p50_us: 5.0,
            client_lateness_p99_us: 40.0,
            send_lateness_p99_us: 40.0,
            loadgen_busy: Some(0.3),
            server_cpu_us: Some(7.0),
        }
    }

    fn rules() -> Rules {
        Rules::for_slo("p99 <= 1ms".parse().unwrap())
    }

    #[test]
    fn rates_grow_geometrically() {
        assert_eq!(geometric(1000.0, 2.0, 4), [1000.0, 2000.0, 4000.0, 8000.0]);
        let r = geometric(10_000.0, 1.5, 3);
        assert!((r[2] - 22_500.0).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn a_step_passes_only_within_every_bound() {
        let r = rules();
        assert_eq!(r.max_lateness_us, 200.0);
        assert!(r.passes(&step(10_000.0, 9_950.0, 900.0)));
        // 98.9 % of the rate achieved: fails, but is not yet saturated.
        let short = step(10_000.0, 9_890.0, 900.0);
        assert!(!r.passes(&short) && !r.stops(&short));
        // Over the limit.
        assert!(!r.passes(&step(10_000.0, 10_000.0, 1_001.0)));
        // One error.
        let mut e = step(10_000.0, 10_000.0, 500.0);
        e.errors = 1;
        assert!(!r.passes(&e));
        // The client was late or busy: invalid, so not a pass either.
        let mut late = step(10_000.0, 10_000.0, 500.0);
        late.client_lateness_p99_us = 201.0;
        assert!(!r.valid(&late) && !r.passes(&late));
        let mut busy = step(10_000.0, 10_000.0, 500.0);
        busy.loadgen_busy = Some(0.99);
        assert!(!r.valid(&busy));
        // A spinning loadgen is always busy: only its lateness counts.
        let spin = r.spinning();
        busy.loadgen_busy = Some(1.0);
        assert!(spin.valid(&busy) && spin.passes(&busy));
        assert!(!spin.valid(&late));
    }

    #[test]
    fn the_sweep_stops_past_saturation_or_far_past_the_target() {
        let r = rules();
        assert!(r.stops(&step(100_000.0, 94_000.0, 500.0)));
        assert!(!r.stops(&step(100_000.0, 95_000.0, 500.0)));
        assert!(r.stops(&step(10_000.0, 10_000.0, 10_001.0)));
        assert!(!r.stops(&step(10_000.0, 10_000.0, 10_000.0)));
    }

    #[test]
    fn the_bracket_is_the_last_pass_before_the_first_failure() {
        let r = rules();
        let steps = vec![
            step(1_000.0, 1_000.0, 100.0),
            step(2_000.0, 2_000.0, 300.0),
            step(4_000.0, 4_000.0, 2_000.0),
            // Passes again after a failure: not in the bracket.
            step(8_000.0, 8_000.0, 900.0),
        ];
        assert_eq!(r.bracket(&steps), Bracket::Between(2_000.0, 4_000.0));
        assert_eq!(r.bracket(&steps[2..]), Bracket::Below);
        assert_eq!(r.bracket(&steps[..2]), Bracket::Above);
        // The client was the limit and no valid step failed: at least the
        // highest passing rate.
        let mut late = steps.clone();
        late[2].p99_us = 500.0;
        late[2].loadgen_busy = Some(0.99);
        assert_eq!(r.bracket(&late), Bracket::Client(Some(8_000.0)));
        assert_eq!(r.bracket(&late[2..3]), Bracket::Client(None));
        assert_eq!(Bracket::Client(None).limit(), Some("client"));
        // An invalid step neither starts nor ends a bracket: a late light
        // step, then passes, then a valid failure.
        let mut light = steps.clone();
        light[0].client_lateness_p99_us = 1_000.0;
        assert_eq!(r.bracket(&light), Bracket::Between(2_000.0, 4_000.0));
        // An invalid step between the last pass and the failure.
        let mut between = steps.clone();
        between[1].client_lateness_p99_us = 1_000.0;
        assert_eq!(r.bracket(&between), Bracket::Between(1_000.0, 4_000.0));
        // Only invalid steps before the first valid failure: below.
        assert_eq!(r.bracket(&between[1..]), Bracket::Below);
    }

    #[test]
    fn bisection_converges_on_the_threshold_from_below() {
        // The server meets the target up to 3,000/s. Between 2,000 and
        // 4,000: sqrt(8e6) = 2828.4 passes, sqrt(2828.4 * 4000) = 3363.6
        // fails, sqrt(2828.4 * 3363.6) = 3084.4 fails, sqrt(2828.4 *
        // 3084.4) = 2953.65 passes.
        let mut asked = Vec::new();
        let got = bisect(2_000.0, 4_000.0, 4, |r| {
            asked.push(r);
            Ok(r <= 3_000.0)
        })
        .unwrap();
        let want = [2828.43, 3363.59, 3084.42, 2953.65];
        for (a, w) in asked.iter().zip(want) {
            assert!((a - w).abs() < 0.01, "{asked:?}");
        }
        assert!((got - 2953.65).abs() < 0.01);
        // Nothing passes: the bracket's low end.
        assert_eq!(bisect(2_000.0, 4_000.0, 3, |_| Ok(false)).unwrap(), 2_000.0);
    }

    #[test]
    fn the_knee_is_where_p99_first_doubles() {
        let r = rules();
        let mut steps = vec![
            step(1_000.0, 1_000.0, 100.0),
            step(2_000.0, 2_000.0, 150.0),
            step(4_000.0, 4_000.0, 200.0),
            step(8_000.0, 8_000.0, 201.0),
            step(16_000.0, 15_000.0, 900.0),
        ];
        assert_eq!(knee(&steps, &r), Some(4_000.0));
        // An invalid lightest step is not the base.
        steps[0].client_lateness_p99_us = 1e6;
        assert_eq!(knee(&steps, &r), Some(8_000.0));
        // A rate measured three times counts once, at its median p99:
        // 4,000's steps read 200, 450 and 150 (median 200): still the knee.
        steps.push(step(4_000.0, 4_000.0, 450.0));
        steps.push(step(4_000.0, 4_000.0, 150.0));
        assert_eq!(knee(&steps, &r), Some(8_000.0));
        steps.push(step(4_000.0, 4_000.0, 1_000.0));
        steps.push(step(4_000.0, 4_000.0, 1_000.0));
        // Now 200, 450, 150, 1000, 1000: median 450 > 2 x 150 (the
        // lightest valid rate, 2,000): the knee is 2,000.
        assert_eq!(knee(&steps, &r), Some(2_000.0));
        steps.truncate(1);
        assert_eq!(knee(&steps, &r), None);
    }

    #[test]
    fn the_max_rate_interval_comes_from_the_repeats() {
        // Mean 3000, sd 100, t(0.975, 2) = 4.3027: 4.3027 * 100 / sqrt(3)
        // = 248.4, 8.28 % of 3000.
        let (mean, ci) = max_rate(&[2_900.0, 3_000.0, 3_100.0]).unwrap();
        assert_eq!(mean, 3_000.0);
        assert!((ci.unwrap() - 8.28).abs() < 0.01, "{ci:?}");
        assert_eq!(max_rate(&[3_000.0]), Some((3_000.0, None)));
        assert_eq!(max_rate(&[]), None);
    }
}
