//! Repeated steps at one rate (`votes`): a rate passes or fails by the
//! majority of the valid steps measured at it, so that one stall of a few
//! milliseconds on a shared machine does not decide a bracket or a search
//! step alone. Invalid steps (the client was late or busy) say nothing
//! about the server: they take a place among the `votes` but no side.
//! With one vote a rate is its step.

pub use super::rules::{points, Verdict};
use super::rules::{Rules, Step};

impl Rules {
    /// What one step says: it passes, fails (valid but not passing), or
    /// says nothing about the server (invalid).
    pub fn outcome(&self, s: &Step) -> Verdict {
        if self.passes(s) {
            Verdict::Pass
        } else if self.valid(s) {
            Verdict::Fail
        } else {
            Verdict::Neither
        }
    }

    /// A rate's verdict from the steps measured at it: what a strict
    /// majority of its valid steps says, [`Verdict::Neither`] without one
    /// (a tie, or no valid step). One step: its own outcome.
    pub fn verdict(&self, at: &[&Step]) -> Verdict {
        let (pass, fail) = self.counts(at);
        if pass > fail {
            Verdict::Pass
        } else if fail > pass {
            Verdict::Fail
        } else {
            Verdict::Neither
        }
    }

    /// Whether the verdict of the steps `at` one rate is final: `votes`
    /// steps ran there, or passing or failing has a majority of `votes`
    /// already (no later step can outvote it). A settled rate's
    /// [`Rules::verdict`] is the vote's result.
    pub fn settled(&self, at: &[&Step], votes: u32) -> bool {
        let votes = votes.max(1) as usize;
        let need = votes / 2 + 1;
        let (pass, fail) = self.counts(at);
        at.len() >= votes || pass >= need || fail >= need
    }

    fn counts(&self, at: &[&Step]) -> (usize, usize) {
        let pass = at.iter().filter(|s| self.passes(s)).count();
        let fail = at
            .iter()
            .filter(|s| self.outcome(s) == Verdict::Fail)
            .count();
        (pass, fail)
    }

    /// The rate where the bracket still needs a vote (`votes` steps a
    /// rate at most), none when its ends are settled: the first failing
    /// rate; then, going down from it, every rate whose steps disagree
    /// (no majority yet, a valid step among them: it may still pass or
    /// fail); then the last passing rate below it. With no failing rate,
    /// only rates where a valid step failed and the rest disagree (they
    /// may still fail: a bracket would then exist). Rates with only
    /// invalid steps are left alone: they say nothing about the server,
    /// and the client that could not drive them once rarely can the next
    /// time.
    pub fn unsettled(&self, steps: &[Step], votes: u32) -> Option<f64> {
        let pts = points(steps);
        let open = |at: &[&Step]| !self.settled(at, votes);
        let f = pts
            .iter()
            .position(|(_, at)| self.verdict(at) == Verdict::Fail);
        if let Some(f) = f.filter(|&f| open(&pts[f].1)) {
            return Some(pts[f].0);
        }
        let below = &pts[..f.unwrap_or(pts.len())];
        let may_move = |at: &[&Step]| match f {
            Some(_) => at.iter().any(|s| self.valid(s)),
            None => at.iter().any(|s| self.outcome(s) == Verdict::Fail),
        };
        let tie = below
            .iter()
            .rev()
            .find(|(_, at)| self.verdict(at) == Verdict::Neither && open(at) && may_move(at));
        if let Some((rate, _)) = tie {
            return Some(*rate);
        }
        f?;
        below
            .iter()
            .rev()
            .find(|(_, at)| self.verdict(at) == Verdict::Pass)
            .filter(|(_, at)| open(at))
            .map(|(rate, _)| *rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Bracket;

    /// A step at `rate` whose p99 is `p99_us`; `late` makes it invalid.
    fn step(rate: f64, p99_us: f64, late: bool) -> Step {
        let mut s = crate::sweep::rules::tests::step(rate, rate, p99_us);
        if late {
            s.client_lateness_p99_us = 1_000.0;
        }
        s
    }

    const PASS: f64 = 500.0;
    const FAIL: f64 = 2_000.0;

    fn rules() -> Rules {
        Rules::for_slo("p99 <= 1ms".parse().unwrap())
    }

    #[test]
    fn a_rate_says_what_the_majority_of_its_steps_say() {
        let r = rules();
        let (p, f, i) = (
            step(1e4, PASS, false),
            step(1e4, FAIL, false),
            step(1e4, PASS, true),
        );
        let v = |s: &[&Step]| r.verdict(s);
        assert_eq!(v(&[&p]), Verdict::Pass);
        assert_eq!(v(&[&f]), Verdict::Fail);
        assert_eq!(v(&[&i]), Verdict::Neither);
        assert_eq!(v(&[&p, &f]), Verdict::Neither);
        assert_eq!(v(&[&f, &p, &p]), Verdict::Pass);
        assert_eq!(v(&[&f, &i, &f]), Verdict::Fail);
        assert_eq!(v(&[&p, &f, &i]), Verdict::Neither);
        // Invalid steps take no side: one valid pass decides.
        assert_eq!(v(&[&i, &p, &i]), Verdict::Pass);
        assert_eq!(v(&[&i, &i]), Verdict::Neither);
    }

    #[test]
    fn a_vote_is_settled_once_more_steps_cannot_change_it() {
        let r = rules();
        let (p, f, i) = (
            step(1e4, PASS, false),
            step(1e4, FAIL, false),
            step(1e4, PASS, true),
        );
        let s = |x: &[&Step], votes| r.settled(x, votes);
        assert!(s(&[&f], 1));
        assert!(!s(&[&p], 3));
        assert!(s(&[&p, &p], 3));
        assert!(!s(&[&p, &f], 3));
        assert!(!s(&[&f, &i], 3));
        // Two invalid steps of three: the third decides.
        assert!(!s(&[&i, &i], 3));
        assert!(s(&[&i, &i, &f], 3));
        assert!(s(&[&p, &f, &i], 3));
        assert!(!s(&[&p, &p], 5));
        assert!(s(&[&p, &p, &p], 5));
    }

    #[test]
    fn the_bracket_ends_are_voted_on_until_settled() {
        let r = rules();
        let mut steps = vec![
            step(1_000.0, PASS, false),
            step(2_000.0, PASS, false),
            step(4_000.0, FAIL, false),
            step(8_000.0, FAIL, false),
        ];
        // With one vote a rate is its step.
        assert_eq!(r.unsettled(&steps, 1), None);
        // The first failure first.
        assert_eq!(r.unsettled(&steps, 3), Some(4_000.0));
        // 4,000 passes its second step: a tie, so 8,000 is now the first
        // failure and needs its vote.
        steps.push(step(4_000.0, PASS, false));
        assert_eq!(r.bracket(&steps), Bracket::Between(2_000.0, 8_000.0));
        assert_eq!(r.unsettled(&steps, 3), Some(8_000.0));
        steps.push(step(8_000.0, FAIL, false));
        // 8,000 fails twice (settled); the tie below it comes next.
        assert_eq!(r.unsettled(&steps, 3), Some(4_000.0));
        steps.push(step(4_000.0, FAIL, false));
        assert_eq!(r.bracket(&steps), Bracket::Between(2_000.0, 4_000.0));
        // 4,000 failed two of three; the last pass below it needs a vote.
        assert_eq!(r.unsettled(&steps, 3), Some(2_000.0));
        steps.push(step(2_000.0, PASS, false));
        assert_eq!(r.unsettled(&steps, 3), None);
        assert_eq!(r.bracket(&steps), Bracket::Between(2_000.0, 4_000.0));
        let rates: Vec<(f64, usize)> = points(&steps).iter().map(|(x, a)| (*x, a.len())).collect();
        assert_eq!(rates, [(1e3, 1), (2e3, 2), (4e3, 3), (8e3, 2)]);
    }

    #[test]
    fn a_failure_outvoted_moves_the_bracket_up_and_invalid_rates_are_left_alone() {
        let r = rules();
        // A stall failed 2,000 once; two more steps pass: no failure left.
        let mut steps = vec![step(1_000.0, PASS, false), step(2_000.0, FAIL, false)];
        steps.push(step(2_000.0, PASS, false));
        steps.push(step(2_000.0, PASS, false));
        assert_eq!(r.bracket(&steps), Bracket::Above);
        assert_eq!(r.unsettled(&steps, 3), None);
        // No failure at all: nothing to settle, not even the top pass.
        assert_eq!(r.unsettled(&steps[..1], 3), None);
        // A failure met an invalid step on its vote: still failing (one
        // valid step, which failed), not settled: a third step decides.
        let steps = vec![
            step(200.0, PASS, true),
            step(400.0, FAIL, false),
            step(400.0, FAIL, true),
        ];
        assert_eq!(r.bracket(&steps), Bracket::Below);
        assert_eq!(r.unsettled(&steps, 3), Some(400.0));
        // A failure outvoted to a tie (fail, pass, then invalid): settled
        // with no majority, and no failing rate left: no bracket.
        let mut tie = steps.clone();
        tie[0] = step(200.0, PASS, false);
        tie.push(step(400.0, PASS, false));
        assert_eq!(r.bracket(&tie), Bracket::Client(Some(200.0)));
        assert_eq!(r.unsettled(&tie, 3), None);
        // The same tie with a step left (five votes) is measured again.
        assert_eq!(r.unsettled(&tie, 5), Some(400.0));
        // An invalid rate between the last pass and a settled failure is
        // not repeated; the pass below it is.
        let steps = vec![
            step(1_000.0, PASS, false),
            step(2_000.0, PASS, true),
            step(4_000.0, FAIL, false),
            step(4_000.0, FAIL, false),
        ];
        assert_eq!(r.unsettled(&steps, 3), Some(1_000.0));
        assert_eq!(r.bracket(&steps), Bracket::Between(1_000.0, 4_000.0));
    }
}
