//! Property tests of the body codecs and the body collectors (issue 27,
//! part 3): whatever bytes arrive, in whatever chunks, decoding never
//! panics, the stack and heap collectors agree, every valid value round
//! trips, and everything else is refused with the error the rules give.

use app_core::body::{HeapBody, StackBody};
use app_core::codec::{Binary, BodyError, Codec, Text};
use proptest::prelude::*;

/// `bytes` pushed in pieces cut at `cuts` (offsets taken modulo the length).
fn pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    at.push(0);
    at.push(bytes.len());
    at.sort();
    at.dedup();
    at.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
}

/// What the text rules say of a body.
fn text_rule(body: &[u8]) -> Result<u16, BodyError> {
    if body.is_empty() {
        Err(BodyError::Empty)
    } else if body.len() > 3 {
        Err(BodyError::TooManyBytes)
    } else if !body.iter().all(u8::is_ascii_digit) {
        Err(BodyError::NotDigits)
    } else {
        let v: u16 = std::str::from_utf8(body).unwrap().parse().unwrap();
        if v > 500 {
            Err(BodyError::OutOfRange)
        } else {
            Ok(v)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn text_decodes_by_its_rules(body in proptest::collection::vec(any::<u8>(), 0..8)) {
        prop_assert_eq!(Text::decode(&body), text_rule(&body));
    }

    #[test]
    fn text_round_trips_every_valid_value(v in 0u16..=500) {
        prop_assert_eq!(Text::decode(v.to_string().as_bytes()), Ok(v));
    }

    #[test]
    fn binary_accepts_two_bytes_up_to_500(body in proptest::collection::vec(any::<u8>(), 0..5)) {
        let got = Binary::decode(&body);
        match body.len() {
            0 => prop_assert_eq!(got, Err(BodyError::Empty)),
            2 => {
                let v = u16::from_le_bytes([body[0], body[1]]);
                if v <= 500 {
                    prop_assert_eq!(got, Ok(v));
                } else {
                    prop_assert!(got.is_err());
                }
            }
            _ => prop_assert_eq!(got, Err(BodyError::BadLength)),
        }
    }

    #[test]
    fn stack_and_heap_bodies_agree_in_any_chunks(
        body in proptest::collection::vec(any::<u8>(), 0..80),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
        limit in 0usize..100,
    ) {
        let (mut stack, mut heap) = (StackBody::new(limit), HeapBody::new(limit));
        let mut refused = None;
        for p in pieces(&body, &cuts) {
            let (s, h) = (stack.push(&p), heap.push(&p));
            prop_assert_eq!(s, h);
            if s.is_err() {
                refused = Some(s);
                break;
            }
        }
        match refused {
            Some(e) => {
                prop_assert_eq!(e, Err(BodyError::TooLarge));
                prop_assert!(body.len() > limit);
            }
            None => {
                prop_assert!(body.len() <= limit);
                prop_assert_eq!(stack.decode(), heap.decode());
            }
        }
    }

    #[test]
    fn encoding_a_count_gives_its_digits(count in any::<u64>()) {
        let (text, binary) = (Text::encode(count), Binary::encode(count));
        let digits = count.to_string();
        prop_assert_eq!(text.as_bytes(), digits.as_bytes());
        prop_assert_eq!(binary.as_bytes(), &count.to_le_bytes()[..]);
    }
}
