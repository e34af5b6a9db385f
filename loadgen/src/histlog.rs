//! Latency histograms in the records, in HdrHistogram's interval-log
//! encoding: the V2 + DEFLATE binary form, base64 (the `HISTF...` strings of
//! Java's and Go's HdrHistogram logs), so any HdrHistogram tool reads them.
//!
//! Percentiles cannot be averaged: whoever merges shards or repetitions adds
//! these histograms and takes percentiles of the sum.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Significant digits of the interval records' histograms: 2 (1 %
/// resolution) keeps a record at a few hundred bytes; 3 digits, as the
/// summary has, made them 2-3 KB at 100k responses per second.
pub const INTERVAL_DIGITS: u8 = 2;

/// `h` reduced to [`INTERVAL_DIGITS`] significant digits, then [`encode`]d:
/// each recorded bucket moves, with its count, to the coarser bucket that
/// holds its highest equivalent value.
pub fn encode_coarse(h: &Histogram<u64>) -> String {
    let mut coarse =
        Histogram::<u64>::new_with_bounds(h.low(), h.high(), INTERVAL_DIGITS.min(h.sigfig()))
            .expect("valid bounds: the same as the source histogram's");
    for v in h.iter_recorded() {
        coarse.saturating_record_n(v.value_iterated_to(), v.count_at_value());
    }
    encode(&coarse)
}

/// `h` as base64 of its V2 + DEFLATE form.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        // Writing to a Vec cannot fail, and a histogram of u64 counts always
        // fits the format.
        .expect("a histogram serializes into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The histogram of an [`encode`]d string, or a one-line reason.
pub fn decode(s: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram does not decode: {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_count() {
        let mut h = crate::stats::new_histogram();
        for v in [1, 80, 81, 950, 12_000, 3_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(back.max(), h.max());
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
        }
        assert!(encode(&h).starts_with("HISTF"), "{}", encode(&h));
    }

    #[test]
    fn coarse_histograms_keep_counts_and_stay_within_one_percent() {
        let mut h = crate::stats::new_histogram();
        for v in (1..=20_000u64).map(|i| 50 + (i * 7919) % 9_000) {
            h.record(v).unwrap();
        }
        let text = encode_coarse(&h);
        let back = decode(&text).unwrap();
        assert_eq!(back.len(), h.len());
        for q in [0.5, 0.9, 0.99] {
            let (a, b) = (
                h.value_at_quantile(q) as f64,
                back.value_at_quantile(q) as f64,
            );
            assert!((a - b).abs() <= a * 0.01 + 1.0, "q {q}: {a} vs {b}");
        }
        // Spread over two decades, the record stays small.
        assert!(text.len() < 800, "{} bytes", text.len());
    }

    #[test]
    fn garbage_is_a_clear_error() {
        assert!(decode("not base64!").unwrap_err().contains("not base64"));
        assert!(decode("AAAA").unwrap_err().contains("does not decode"));
    }
}
