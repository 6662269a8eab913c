//! The cursor both decoders read with: it never reads past its bytes, and every error
//! it gives names what was being decoded.

use crate::error::CodecError;

/// A reader of the body of `bytes`, a `what` that ends with the CRC-32 of the bytes
/// before it (little-endian), once the checksum matches.
pub(crate) fn checked<'a>(what: &'static str, bytes: &'a [u8]) -> Result<Reader<'a>, CodecError> {
    let invalid = |reason: String| CodecError::Invalid { what, reason };
    let body_len = bytes
        .len()
        .checked_sub(4)
        .ok_or_else(|| invalid(format!("{} bytes", bytes.len())))?;
    let (body, crc) = bytes.split_at(body_len);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(invalid("checksum mismatch".into()));
    }
    Ok(Reader::new(what, body))
}

pub(crate) struct Reader<'a> {
    what: &'static str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A cursor over `bytes`, which hold a `what` ("key", "row").
    pub fn new(what: &'static str, bytes: &'a [u8]) -> Reader<'a> {
        Reader { what, bytes, at: 0 }
    }

    pub fn invalid(&self, reason: String) -> CodecError {
        CodecError::Invalid {
            what: self.what,
            reason,
        }
    }

    /// The next `n` bytes.
    pub fn slice(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        let out = self
            .at
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.at..end))
            .ok_or(CodecError::Truncated {
                what: self.what,
                at: self.at,
            })?;
        self.at += n;
        Ok(out)
    }

    pub fn take<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        Ok(self.slice(N)?.try_into().expect("N bytes"))
    }

    pub fn byte(&mut self) -> Result<u8, CodecError> {
        Ok(self.take::<1>()?[0])
    }

    /// A name [`put_name`] wrote, of at most `max` bytes of UTF-8.
    pub fn name(&mut self, max: usize) -> Result<String, CodecError> {
        let len = u16::from_le_bytes(self.take()?) as usize;
        if len > max {
            return Err(self.invalid(format!("a name of {len} bytes")));
        }
        String::from_utf8(self.slice(len)?.to_vec())
            .map_err(|_| self.invalid("a name that is not UTF-8".into()))
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at..]
    }

    /// Bytes not read yet.
    pub fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// Fails unless every byte was read.
    pub fn finish(&self) -> Result<(), CodecError> {
        match self.left() {
            0 => Ok(()),
            n => Err(self.invalid(format!("{n} bytes after the last column"))),
        }
    }
}

/// Writes a name as the catalog's codecs keep one: its length (u16 little-endian), then
/// its UTF-8.
pub(crate) fn put_name(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
}
