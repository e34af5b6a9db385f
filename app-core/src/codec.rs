//! The request and answer formats of the click counter, in text and binary form.
//!
//! Both codecs are always compiled (so both are tested in every build); the
//! `binary-payload` feature picks which one the servers use ([`ActiveCodec`]).
//! Nothing here allocates.

/// The largest value one POST may add.
pub const MAX_VALUE: u16 = 500;

/// Why a request body was refused. Every variant maps to one status and one
/// static one-line message, so the error path allocates nothing either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("body is empty")]
    Empty,
    #[error("body has too many bytes for a value 0..=500")]
    TooManyBytes,
    #[error("body is not a plain decimal integer")]
    NotDigits,
    #[error("value is over 500")]
    OutOfRange,
    #[error("binary body must be exactly 2 bytes")]
    BadLength,
    #[error("body is larger than the server's limit")]
    TooLarge,
    #[error("body could not be read")]
    Unreadable,
}

impl BodyError {
    /// HTTP status code for this error: 413 for a body over the limit, 400 otherwise.
    pub fn status(self) -> u16 {
        match self {
            BodyError::TooLarge => 413,
            _ => 400,
        }
    }

    /// The response body: the reason on one line, newline-terminated.
    pub fn message(self) -> &'static str {
        match self {
            BodyError::Empty => "body is empty\n",
            BodyError::TooManyBytes => "body has too many bytes for a value 0..=500\n",
            BodyError::NotDigits => "body is not a plain decimal integer\n",
            BodyError::OutOfRange => "value is over 500\n",
            BodyError::BadLength => "binary body must be exactly 2 bytes\n",
            BodyError::TooLarge => "body is larger than the server's limit\n",
            BodyError::Unreadable => "body could not be read\n",
        }
    }
}

/// An encoded count, held on the stack: at most 20 decimal digits or 8 bytes.
#[derive(Clone, Copy)]
pub struct Answer {
    buf: [u8; 20],
    len: u8,
}

impl Answer {
    /// The encoded bytes, ready to send.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Answer({:?})", self.as_bytes())
    }
}

/// A body format: how a POST value is read and how a count is written.
pub trait Codec {
    /// `Content-Type` of a count.
    const CONTENT_TYPE: &'static str;
    /// The longest body that can still be valid; a body read beyond this
    /// many bytes is refused without keeping the rest.
    const MAX_VALID_LEN: usize;
    /// Reads the value a POST body asks to add.
    fn decode(body: &[u8]) -> Result<u16, BodyError>;
    /// Writes a count into a stack buffer.
    fn encode(count: u64) -> Answer;
}

/// Decimal text: the body is 1 to 3 ASCII digits (no sign, no spaces, no
/// newline), the answer is the count in decimal.
pub struct Text;

impl Codec for Text {
    const CONTENT_TYPE: &'static str = "text/plain";
    const MAX_VALID_LEN: usize = 3;

    fn decode(body: &[u8]) -> Result<u16, BodyError> {
        if body.is_empty() {
            return Err(BodyError::Empty);
        }
        if body.len() > Self::MAX_VALID_LEN {
            return Err(BodyError::TooManyBytes);
        }
        let mut value: u16 = 0;
        for &b in body {
            if !b.is_ascii_digit() {
                return Err(BodyError::NotDigits);
            }
            value = value * 10 + u16::from(b - b'0');
        }
        if value > MAX_VALUE {
            return Err(BodyError::OutOfRange);
        }
        Ok(value)
    }

    fn encode(count: u64) -> Answer {
        let mut fmt = itoa::Buffer::new();
        let digits = fmt.format(count).as_bytes();
        let mut buf = [0u8; 20];
        buf[..digits.len()].copy_from_slice(digits);
        Answer {
            buf,
            len: digits.len() as u8,
        }
    }
}

/// Binary: the body is the value as a little-endian u16, the answer the count
/// as a little-endian u64.
pub struct Binary;

impl Codec for Binary {
    const CONTENT_TYPE: &'static str = "application/octet-stream";
    const MAX_VALID_LEN: usize = 2;

    fn decode(body: &[u8]) -> Result<u16, BodyError> {
        let bytes: [u8; 2] = match body.len() {
            0 => return Err(BodyError::Empty),
            2 => [body[0], body[1]],
            _ => return Err(BodyError::BadLength),
        };
        let value = u16::from_le_bytes(bytes);
        if value > MAX_VALUE {
            return Err(BodyError::OutOfRange);
        }
        Ok(value)
    }

    fn encode(count: u64) -> Answer {
        let mut buf = [0u8; 20];
        buf[..8].copy_from_slice(&count.to_le_bytes());
        Answer { buf, len: 8 }
    }
}

/// The codec the servers use in this build.
#[cfg(feature = "binary-payload")]
pub type ActiveCodec = Binary;
/// The codec the servers use in this build.
#[cfg(not(feature = "binary-payload"))]
pub type ActiveCodec = Text;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_accepts_every_value_in_range() {
        for v in 0..=MAX_VALUE {
            assert_eq!(Text::decode(v.to_string().as_bytes()), Ok(v));
        }
        assert_eq!(Text::decode(b"007"), Ok(7));
    }

    #[test]
    fn text_refuses_bad_bodies_with_the_right_reason() {
        assert_eq!(Text::decode(b""), Err(BodyError::Empty));
        assert_eq!(Text::decode(b"501"), Err(BodyError::OutOfRange));
        assert_eq!(Text::decode(b"999"), Err(BodyError::OutOfRange));
        assert_eq!(Text::decode(b"0500"), Err(BodyError::TooManyBytes));
        assert_eq!(Text::decode(b"-5"), Err(BodyError::NotDigits));
        assert_eq!(Text::decode(b"+5"), Err(BodyError::NotDigits));
        assert_eq!(Text::decode(b"5\n"), Err(BodyError::NotDigits));
        assert_eq!(Text::decode(b" 5"), Err(BodyError::NotDigits));
        assert_eq!(Text::decode(b"abc"), Err(BodyError::NotDigits));
    }

    #[test]
    fn text_encodes_decimal() {
        assert_eq!(Text::encode(0).as_bytes(), b"0");
        assert_eq!(Text::encode(231_044).as_bytes(), b"231044");
        assert_eq!(
            Text::encode(u64::MAX).as_bytes(),
            u64::MAX.to_string().as_bytes()
        );
    }

    #[test]
    fn binary_round_trips() {
        assert_eq!(Binary::decode(&500u16.to_le_bytes()), Ok(500));
        assert_eq!(Binary::decode(&0u16.to_le_bytes()), Ok(0));
        assert_eq!(
            Binary::decode(&501u16.to_le_bytes()),
            Err(BodyError::OutOfRange)
        );
        assert_eq!(Binary::decode(b""), Err(BodyError::Empty));
        assert_eq!(Binary::decode(b"\x01"), Err(BodyError::BadLength));
        assert_eq!(Binary::decode(b"\x01\x00\x00"), Err(BodyError::BadLength));
        assert_eq!(Binary::encode(0x0102).as_bytes(), &0x0102u64.to_le_bytes());
    }

    #[test]
    fn every_error_message_is_one_line() {
        use BodyError::*;
        for e in [
            Empty,
            TooManyBytes,
            NotDigits,
            OutOfRange,
            BadLength,
            TooLarge,
            Unreadable,
        ] {
            let m = e.message();
            assert_eq!(m.trim_end(), e.to_string());
            assert_eq!(m.matches('\n').count(), 1, "{m:?}");
        }
    }
}
