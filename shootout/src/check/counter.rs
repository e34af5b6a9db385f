//! The POST cross-check: what the server counted against what loadgen saw.

use anyhow::bail;
use serde::Serialize;

/// Value every POST adds (loadgen's body).
pub const VALUE: u64 = 500;

/// The counts either side of one load, and the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct CounterCheck {
    pub before: u64,
    pub after: u64,
    /// 2xx responses loadgen read, warm-up included.
    pub acknowledged: u64,
    /// Requests that may have been in flight when loadgen stopped (one per connection).
    pub in_flight_max: u64,
    pub value: u64,
    pub ok: bool,
}

/// The server's count must lie between what loadgen acknowledged and that
/// plus one request per connection (loadgen stops at its deadline without
/// draining). A mismatch is an error naming all the figures.
pub fn check(
    before: u64,
    after: u64,
    acknowledged: u64,
    connections: u32,
) -> anyhow::Result<CounterCheck> {
    let in_flight_max = u64::from(connections);
    let low = before + acknowledged * VALUE;
    let ok = after >= low && after <= low + in_flight_max * VALUE;
    let c = CounterCheck {
        before,
        after,
        acknowledged,
        in_flight_max,
        value: VALUE,
        ok,
    };
    if !ok {
        bail!(
            "counter check: the server counts {after}, loadgen acknowledged {acknowledged} POSTs of {VALUE} on top of {before} (at most {in_flight_max} more in flight)"
        );
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_acknowledged_to_one_more_per_connection() {
        assert!(check(0, 1000, 2, 4).is_ok());
        assert!(check(0, 3000, 2, 4).is_ok());
        assert!(check(0, 999, 2, 4).is_err());
        let e = check(10, 3011, 2, 4).unwrap_err().to_string();
        assert!(e.contains("counts 3011"), "{e}");
    }
}
