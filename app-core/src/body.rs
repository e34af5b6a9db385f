//! Collecting a request body under the server's size limit.
//!
//! [`StackBody`] keeps only the first few bytes on the stack (a valid body is
//! at most 3 bytes, so nothing more is needed to tell every error apart);
//! [`HeapBody`] buffers the whole body in a `Vec`, as a handler written without
//! care for allocations would. The `no-alloc` feature picks [`StackBody`].
//! Both give the same answers for the same input; a test checks it.

use crate::codec::{ActiveCodec, BodyError, Codec};

/// Bytes kept by [`StackBody`]: one more than the longest valid body of any
/// codec, so a body that is too long is still seen as too long.
const HEAD: usize = 4;
const _: () = assert!(crate::codec::Text::MAX_VALID_LEN < HEAD);
const _: () = assert!(crate::codec::Binary::MAX_VALID_LEN < HEAD);

/// Refuses a declared `Content-Length` over the limit before any byte is read.
pub fn check_declared_length(content_length: u64, limit: usize) -> Result<(), BodyError> {
    if content_length > limit as u64 {
        Err(BodyError::TooLarge)
    } else {
        Ok(())
    }
}

/// A body collected on the stack: no heap allocation whatever arrives.
#[derive(Debug)]
pub struct StackBody {
    head: [u8; HEAD],
    len: usize,
    limit: usize,
}

impl StackBody {
    pub fn new(limit: usize) -> Self {
        StackBody {
            head: [0; HEAD],
            len: 0,
            limit,
        }
    }

    /// Adds one chunk; refuses once the body passes the limit.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), BodyError> {
        let new_len = self.len.saturating_add(chunk.len());
        if new_len > self.limit {
            return Err(BodyError::TooLarge);
        }
        if self.len < HEAD {
            let take = (HEAD - self.len).min(chunk.len());
            self.head[self.len..self.len + take].copy_from_slice(&chunk[..take]);
        }
        self.len = new_len;
        Ok(())
    }

    /// Decodes the collected body with the active codec.
    pub fn decode(&self) -> Result<u16, BodyError> {
        ActiveCodec::decode(&self.head[..self.len.min(HEAD)])
    }
}

/// A body collected into a heap buffer.
#[derive(Debug)]
pub struct HeapBody {
    buf: Vec<u8>,
    limit: usize,
}

impl HeapBody {
    pub fn new(limit: usize) -> Self {
        HeapBody {
            buf: Vec::new(),
            limit,
        }
    }

    /// Adds one chunk; refuses once the body passes the limit.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), BodyError> {
        if self.buf.len().saturating_add(chunk.len()) > self.limit {
            return Err(BodyError::TooLarge);
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// Decodes the collected body with the active codec.
    pub fn decode(&self) -> Result<u16, BodyError> {
        ActiveCodec::decode(&self.buf)
    }
}

/// The body collector the servers use in this build.
#[cfg(feature = "no-alloc")]
pub type BodyBuf = StackBody;
/// The body collector the servers use in this build.
#[cfg(not(feature = "no-alloc"))]
pub type BodyBuf = HeapBody;

#[cfg(test)]
mod tests {
    use super::*;

    fn both(chunks: &[&[u8]], limit: usize) -> (Result<u16, BodyError>, Result<u16, BodyError>) {
        let mut s = StackBody::new(limit);
        let mut h = HeapBody::new(limit);
        let rs = chunks
            .iter()
            .try_for_each(|c| s.push(c))
            .and_then(|_| s.decode());
        let rh = chunks
            .iter()
            .try_for_each(|c| h.push(c))
            .and_then(|_| h.decode());
        (rs, rh)
    }

    #[test]
    fn stack_and_heap_collectors_agree() {
        let cases: &[&[&[u8]]] = &[
            &[],
            &[b""],
            &[b"5", b"00"],
            &[b"50", b"1"],
            &[b"1", b"2", b"3", b"4"],
            &[b"12345678"],
            &[b"ab"],
            &[b"\x01\x00"],
            &[b"\x01", b"\x00"],
            &[b"\xf4\x01"],
            &[b"0000000000000000000000000000000000000000000000000000000000000000"],
        ];
        for chunks in cases {
            let (s, h) = both(chunks, 64);
            assert_eq!(s, h, "{chunks:?}");
        }
    }

    #[test]
    fn body_over_limit_is_too_large_in_both() {
        let (s, h) = both(&[b"1234", b"5"], 4);
        assert_eq!(s, Err(BodyError::TooLarge));
        assert_eq!(h, Err(BodyError::TooLarge));
        assert_eq!(check_declared_length(65, 64), Err(BodyError::TooLarge));
        assert_eq!(check_declared_length(64, 64), Ok(()));
    }
}
