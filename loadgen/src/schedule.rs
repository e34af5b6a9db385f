//! The open model's schedule, apart from the event loop so that it can be
//! checked on a fake clock (any `Instant` plus offsets).
//!
//! Every connection sends on a fixed grid: `period` = connections / rate,
//! the connections' grids spread evenly over one period. A request's latency
//! counts from its intended time on the grid (coordinated-omission
//! correction), and the grid never drifts: a late send does not move the
//! next one.

use std::time::{Duration, Instant};

/// When connection `global` of `total` sends first: spread over one period.
pub fn first_due(start: Instant, period: Duration, global: usize, total: usize) -> Instant {
    start + period.mul_f64(global as f64 / total.max(1) as f64)
}

/// One scheduled send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    /// Its place on the grid: where latency counts from.
    pub intended: Instant,
    /// How long after it the request actually left.
    pub lateness: Duration,
}

/// Takes the request due at `*next_due` for a send at `now`, and moves
/// `*next_due` one period on.
pub fn take(next_due: &mut Instant, period: Duration, now: Instant) -> Due {
    let intended = *next_due;
    *next_due = intended + period;
    Due {
        intended,
        lateness: now.saturating_duration_since(intended),
    }
}

/// How the event loop waits for `wake`: the instant to arm the precise
/// timer for (none when there is no such timer or `wake` has passed), and
/// the epoll timeout. With the timer, epoll's own timeout is only a
/// fallback, a millisecond after it. With `spin` (`--spin-before`), the
/// timer fires that much earlier and, from then on, the loop polls without
/// waiting until `wake`.
pub fn plan(
    now: Instant,
    wake: Instant,
    precise: bool,
    spin: Duration,
) -> (Option<Instant>, Duration) {
    let left = wake.saturating_duration_since(now);
    if !precise || left.is_zero() {
        (None, left)
    } else if left <= spin {
        (None, Duration::ZERO)
    } else {
        (Some(wake - spin), left - spin + Duration::from_millis(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn connections_spread_over_one_period() {
        let t0 = Instant::now();
        // 4 connections at 2000/s: each every 2 ms, 0.5 ms apart.
        let period = Duration::from_secs_f64(4.0 / 2000.0);
        let firsts: Vec<Duration> = (0..4).map(|g| first_due(t0, period, g, 4) - t0).collect();
        assert_eq!(
            firsts,
            [0, 500, 1000, 1500].map(Duration::from_micros).to_vec()
        );
    }

    #[test]
    fn intended_times_stay_on_the_grid_whatever_the_send_times() {
        let t0 = Instant::now();
        let period = 2 * MS;
        let mut next = t0;
        // On time, 0.3 ms late, 5 ms late (two periods missed), early.
        let sends = [
            t0,
            t0 + 2 * MS + Duration::from_micros(300),
            t0 + 9 * MS,
            t0 + 5 * MS,
        ];
        let got: Vec<(Duration, Duration)> = sends
            .iter()
            .map(|&now| {
                let d = take(&mut next, period, now);
                (d.intended - t0, d.lateness)
            })
            .collect();
        assert_eq!(
            got,
            [
                (Duration::ZERO, Duration::ZERO),
                (2 * MS, Duration::from_micros(300)),
                (4 * MS, 5 * MS),
                (6 * MS, Duration::ZERO),
            ]
        );
        assert_eq!(next - t0, 8 * MS);
    }

    #[test]
    fn the_precise_timer_is_armed_for_the_wake_and_epoll_waits_longer() {
        let t0 = Instant::now();
        let wake = t0 + Duration::from_micros(300);
        let z = Duration::ZERO;
        assert_eq!(
            plan(t0, wake, true, z),
            (Some(wake), Duration::from_micros(1300))
        );
        assert_eq!(plan(t0, wake, false, z), (None, Duration::from_micros(300)));
        // A wake that has passed: no timer, no wait.
        assert_eq!(plan(wake + MS, wake, true, z), (None, z));
        // Spinning 100 µs: the timer 100 µs early, then no waiting.
        let spin = Duration::from_micros(100);
        let early = t0 + Duration::from_micros(200);
        assert_eq!(
            plan(t0, wake, true, spin),
            (Some(early), Duration::from_micros(1200))
        );
        assert_eq!(plan(early, wake, true, spin), (None, z));
    }
}
