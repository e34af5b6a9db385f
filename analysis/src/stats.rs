//! Descriptive statistics, the 95% confidence interval of a mean, and
//! Welch's t-test.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Summary of a sample.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Describe {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator, as pandas' `.std()`).
    pub sd: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Half-width of the 95% confidence interval of the mean (Student's t).
    pub ci95: f64,
    /// Coefficient of variation: sd / mean.
    pub cv: f64,
}

/// Describes a sample; `None` when it is empty.
pub fn describe(xs: &[f64]) -> Option<Describe> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = if n > 1 {
        xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        f64::NAN
    };
    let sd = var.sqrt();
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    let ci95 = if n > 1 {
        t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt()
    } else {
        f64::NAN
    };
    Some(Describe {
        n,
        mean,
        sd,
        median,
        min: sorted[0],
        max: sorted[n - 1],
        ci95,
        cv: sd / mean,
    })
}

/// The `p` quantile of Student's t with `df` degrees of freedom.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.inverse_cdf(p))
}

/// Result of Welch's unequal-variances t-test.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Welch {
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's t-test of `a` against `b`; `None` with fewer than 2 values in
/// either sample or no variance at all.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (da, db) = (describe(a)?, describe(b)?);
    if da.n < 2 || db.n < 2 {
        return None;
    }
    let (va, vb) = (da.sd.powi(2) / da.n as f64, db.sd.powi(2) / db.n as f64);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return None;
    }
    let t = (da.mean - db.mean) / se2.sqrt();
    let df = se2.powi(2) / (va.powi(2) / (da.n - 1) as f64 + vb.powi(2) / (db.n - 1) as f64);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = 2.0 * (1.0 - dist.cdf(t.abs()));
    Some(Welch { t, df, p })
}

/// Half-width of the 95% confidence interval of `mean(a) / mean(b)`, where
/// `a` and `b` are the means of independent repetitions (one value per run).
/// Delta method: the ratio's relative standard error is the root of the sum
/// of the squared relative standard errors; Student's t with
/// `min(len) - 1` degrees of freedom, which errs on the wide side. `None`
/// with fewer than 2 repetitions on either side.
pub fn ratio_ci95(a: &[f64], b: &[f64]) -> Option<f64> {
    let (da, db) = (describe(a)?, describe(b)?);
    if da.n < 2 || db.n < 2 || da.mean <= 0.0 || db.mean <= 0.0 {
        return None;
    }
    let rel = |d: &Describe| d.sd / (d.n as f64).sqrt() / d.mean;
    let ratio = da.mean / db.mean;
    let df = (da.n.min(db.n) - 1) as f64;
    Some(t_quantile(0.975, df) * ratio * (rel(&da).powi(2) + rel(&db).powi(2)).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_sd_uses_n_minus_1() {
        let d = describe(&[100.0, 200.0, 300.0, 400.0, 500.0]).unwrap();
        assert_eq!(
            (d.mean, d.median, d.min, d.max),
            (300.0, 300.0, 100.0, 500.0)
        );
        assert!((d.sd - 158.113_883_008_418_97).abs() < 1e-9);
        // t(0.975, 4) = 2.776445105; 2.776445105 * 158.1138830 / sqrt(5)
        assert!((d.ci95 - 196.324_316).abs() < 1e-3, "{}", d.ci95);
    }

    #[test]
    fn ratio_ci_by_delta_method() {
        // a: mean 200, sd 10, n 3 -> rel se = 10/sqrt(3)/200
        // b: mean 100, sd 5,  n 3 -> rel se = 5/sqrt(3)/100 (the same)
        // half-width = t(0.975, 2) * 2 * sqrt(2) * 0.05 / sqrt(3)
        let h = ratio_ci95(&[190.0, 200.0, 210.0], &[95.0, 100.0, 105.0]).unwrap();
        let want = 4.302_652_73 * 2.0 * 2f64.sqrt() * 0.05 / 3f64.sqrt();
        assert!((h - want).abs() < 1e-6, "{h} vs {want}");
        assert!(ratio_ci95(&[1.0], &[1.0, 2.0]).is_none());
        assert!(ratio_ci95(&[1.0, 2.0], &[0.0, 0.0]).is_none());
    }

    #[test]
    fn one_value_has_no_spread() {
        let d = describe(&[5.0]).unwrap();
        assert!(d.sd.is_nan() && d.ci95.is_nan());
        assert!(describe(&[]).is_none());
    }
}
