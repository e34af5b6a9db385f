//! The rules of a sweep, apart from running it: which rates it steps
//! through, when a step is past saturation (the sweep stops), when it meets
//! the target, when it says nothing about the server (the client was the
//! limit), the bisection between the last passing and first failing rate,
//! the knee, and the max rate's interval over repeated searches.

use serde::Serialize;

use super::slo::Slo;
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

/// Most rates a pinned interleaved search tries past its bracket's end
/// (by the sweep's `factor` each) before it stays pinned.
pub const MAX_EXTEND: u32 = 3;

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

/// The knee of `steps`, by a rule after "Kneedle" (Satopää, Albrecht,
/// Irwin and Raghavan, "Finding a 'Kneedle' in a Haystack", ICDCS
/// workshops 2011), without its normalisation and sensitivity threshold:
/// on the curve of p99 against rate, both on log scales, among the
/// rates with a valid step (a rate's p99: the median over its valid
/// steps), the one whose p99 lies farthest below the chord from the
/// lightest rate to the heaviest; the lowest such rate on a tie, and the
/// lightest rate when no rate lies below the chord (a curve that rises
/// steadily has no knee to find). The heaviest rate is never the knee.
/// None with no valid step; the one rate with one.
///
/// It replaced "the last rate before p99 first exceeds twice the lightest
/// rate's", which hung on the lightest step alone: a client that spins
/// before each send brings that step's p99 to 70-300 µs, the next rates
/// soon double it, and the knee was the lightest valid rate on 10 of the
/// 26 lines of the spinning sweeps committed on 2026-11-25.
pub fn knee(steps: &[Step], rules: &Rules) -> Option<f64> {
    let curve: Vec<(f64, f64, f64)> = points(steps)
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
            // A p99 of 0 (a step too short to read one) is a microsecond.
            Some((*rate, rate.ln(), median.max(1.0).ln()))
        })
        .collect();
    let (&(first, x0, y0), &(_, x1, y1)) = (curve.first()?, curve.last()?);
    let chord = |x: f64| {
        if x1 > x0 {
            y0 + (x - x0) * (y1 - y0) / (x1 - x0)
        } else {
            y0
        }
    };
    let mut knee = (first, 0.0);
    for &(rate, x, y) in &curve[..curve.len() - 1] {
        let below = chord(x) - y;
        // (Rounding leaves a straight line's points 1e-16 off its chord.)
        if below > knee.1 + 1e-9 {
            knee = (rate, below);
        }
    }
    Some(knee.0)
}

/// Mean of the repeated searches' max rates and its 95 % interval's
/// half-width in percent of the mean (Student's t, repeats - 1 degrees of
/// freedom); none for the interval with fewer than two.
pub fn max_rate(repeats: &[f64]) -> Option<(f64, Option<f64>)> {
    let d = stats::describe(repeats)?;
    let ci = (repeats.len() >= 2).then(|| 100.0 * d.ci95 / d.mean);
    Some((d.mean, ci))
}

/// What the steps at a rate say about the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Neither,
}

/// `steps` grouped by the rate they asked for, in increasing rate (the
/// steps of a rate in their order).
pub fn points(steps: &[Step]) -> Vec<(f64, Vec<&Step>)> {
    let mut sorted: Vec<&Step> = steps.iter().collect();
    sorted.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let mut out: Vec<(f64, Vec<&Step>)> = Vec::new();
    for s in sorted {
        match out.last_mut() {
            Some((rate, at)) if *rate == s.rate => at.push(s),
            _ => out.push((s.rate, vec![s])),
        }
    }
    out
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
    fn the_knee_lies_farthest_below_the_chord_on_log_scales() {
        // Worked by hand on log2 scales, x = log2(rate / 1,000) and
        // y = log2(p99 / 100 µs) (any base gives the same knee): p99
        // 100, 100, 200, 200, 3,200 µs at 1k, 2k, 4k, 8k, 16k requests/s
        // are y = 0, 0, 1, 1, 5. The chord from (0, 0) to (4, 5) is
        // y = 1.25 x; below it by 1.25, 1.5 and 2.75 at x = 1, 2, 3: the
        // knee is 8,000.
        let r = rules();
        let mut steps = vec![
            step(1_000.0, 1_000.0, 100.0),
            step(2_000.0, 2_000.0, 100.0),
            step(4_000.0, 4_000.0, 200.0),
            step(8_000.0, 8_000.0, 200.0),
            step(16_000.0, 15_000.0, 3_200.0),
        ];
        let close = |k: Option<f64>, want: f64| (k.unwrap() - want).abs() < 1e-6;
        assert!(close(knee(&steps, &r), 8_000.0));
        // A very light lightest step (a spinning client: 25 µs, y = -2)
        // does not pull the knee down, as it did under the old rule
        // ("twice the lightest rate's p99"): the chord from (0, -2) to
        // (4, 5) has slope 1.75; at x = 1 the chord is at -0.25, under
        // the curve's 0; it is above the curve by 0.5 at x = 2 and 2.25
        // at x = 3: still 8,000.
        steps[0].p99_us = 25.0;
        assert!(close(knee(&steps, &r), 8_000.0));
        steps[0].p99_us = 100.0;
        // An invalid lightest step is left out: the chord runs from
        // (1, 0) to (4, 5), slope 5/3; below by 0.67 at x = 2 and 2.33 at
        // x = 3: 8,000.
        steps[0].client_lateness_p99_us = 1e6;
        assert!(close(knee(&steps, &r), 8_000.0));
        steps[0].client_lateness_p99_us = 40.0;
        // A rate measured three times counts once, at its median p99:
        // 8,000 reads 200, 6,400 and 6,400 (median 6,400, y = 6, above
        // the chord's 3.75); 4,000 is now the farthest below (1.5).
        steps.push(step(8_000.0, 8_000.0, 6_400.0));
        steps.push(step(8_000.0, 8_000.0, 6_400.0));
        assert!(close(knee(&steps, &r), 4_000.0));
        // A straight line on log scales has no point below its chord: the
        // lightest rate.
        let line: Vec<Step> = (0..4)
            .map(|k| {
                let rate = 1_000.0 * f64::from(1 << k);
                step(rate, rate, 100.0 * f64::from(1 << k))
            })
            .collect();
        assert!(close(knee(&line, &r), 1_000.0));
        // Two rates: the lighter; one rate: itself; none valid: none.
        steps.truncate(2);
        assert!(close(knee(&steps, &r), 1_000.0));
        steps.truncate(1);
        assert!(close(knee(&steps, &r), 1_000.0));
        steps[0].client_lateness_p99_us = 1e6;
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
