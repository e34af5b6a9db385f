//! Latency histograms in the records: HdrHistogram's V2 binary form, base64
//! (`HISTE...`), which every HdrHistogram library's V2 decoder reads (Rust's
//! `Deserializer`, Java's `decodeFromByteBuffer`). Not the V2 + DEFLATE form
//! of the interval logs (`HISTF...`): deflated per histogram, the counts
//! cannot be compressed again, while a run's archive compresses plain V2
//! counts under xz to 16 % fewer bytes than the deflated ones (all of
//! `results/` measured on 2026-11-29). [`decode`] reads both forms, so
//! records written before the change still read.
//!
//! Percentiles cannot be averaged: whoever merges shards or repetitions adds
//! these histograms and takes percentiles of the sum.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
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

/// `h` as base64 of its V2 form.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut bytes)
        // Writing to a Vec cannot fail, and a histogram of u64 counts always
        // fits the format.
        .expect("a histogram serializes into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The histogram of an [`encode`]d string (or of the V2 + DEFLATE form
/// records written before 2026-11-29 hold), or a one-line reason.
pub fn decode(s: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram does not decode: {e:?}"))
}

/// An [`encode`]d histogram in the V2 form [`encode`] writes now: a V2 +
/// DEFLATE one (`HISTF...`, records before 2026-11-29) inflated, the same
/// histogram byte for byte, and a plain one as it is. Nothing is decoded
/// into counts, so nothing can change.
pub fn plain(s: &str) -> Result<String, String> {
    use std::io::Read;
    const DEFLATE_COOKIE: [u8; 4] = [0x1c, 0x84, 0x93, 0x14];
    let b64 = &base64::engine::general_purpose::STANDARD;
    let bytes = b64
        .decode(s.trim())
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    if bytes.get(..4) != Some(&DEFLATE_COOKIE[..]) {
        return Ok(s.to_string());
    }
    let len = bytes
        .get(4..8)
        .map(|l| u32::from_be_bytes(l.try_into().expect("four bytes")) as usize)
        .filter(|&l| bytes.len() >= 8 + l)
        .ok_or("histogram's deflated length runs past its end")?;
    let mut v2 = Vec::new();
    flate2::read::ZlibDecoder::new(&bytes[8..8 + len])
        .read_to_end(&mut v2)
        .map_err(|e| format!("histogram does not inflate: {e}"))?;
    Ok(b64.encode(v2))
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
        assert!(encode(&h).starts_with("HISTE"), "{}", encode(&h));
    }

    #[test]
    fn the_deflated_form_of_older_records_still_reads() {
        let mut h = crate::stats::new_histogram();
        for v in [3, 700, 701, 45_000] {
            h.record_n(v, v % 5 + 1).unwrap();
        }
        let mut bytes = Vec::new();
        hdrhistogram::serialization::V2DeflateSerializer::new()
            .serialize(&h, &mut bytes)
            .unwrap();
        let old = base64::engine::general_purpose::STANDARD.encode(bytes);
        assert!(old.starts_with("HISTF"), "{old}");
        assert_eq!(decode(&old).unwrap(), h);
        assert_eq!(decode(&encode(&h)).unwrap(), h);
        // Inflated, the old form is what encode writes now, byte for byte.
        assert_eq!(plain(&old).unwrap(), encode(&h));
        assert_eq!(plain(&encode(&h)).unwrap(), encode(&h));
        assert!(plain("HISTFAAAAAE=").unwrap_err().contains("runs past"));
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
        // Spread over two decades, the record stays small: under a third
        // of the same histogram at its own 3 digits.
        let full = encode(&h).len();
        assert!(text.len() * 3 < full, "{} bytes against {full}", text.len());
        assert!(text.len() < 1_600, "{} bytes", text.len());
    }

    #[test]
    fn garbage_is_a_clear_error() {
        assert!(decode("not base64!").unwrap_err().contains("not base64"));
        assert!(decode("AAAA").unwrap_err().contains("does not decode"));
    }
}
