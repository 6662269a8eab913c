//! The engine's persistent formats: one typed codec per structure the engine stores in
//! the pool, each documented byte by byte in `docs/format.md`.
//!
//! Everything here is pure encoding and decoding: where a structure lives and when it is
//! published belong to its user. Decoders treat their input as untrusted media: any
//! bytes give either a value every invariant of which holds or a [`FormatError`], never
//! a panic, an overflow or an allocation sized by a stored field.

pub(crate) mod catalog;
pub(crate) mod chunk;
pub(crate) mod head;
pub(crate) mod manifest;
pub(crate) mod record;
pub(crate) mod root;
pub(crate) mod sst;
pub(crate) mod zone;

use std::fmt;

/// Highest sequence number: a record stores `(seq << 8) | kind` in one word.
pub(crate) const MAX_SEQ: u64 = (1 << 56) - 1;

/// Why bytes read from media did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FormatError {
    /// The structure needs more bytes than there are.
    Truncated { needed: u64, found: u64 },
    /// Not the magic number of the expected structure.
    BadMagic,
    /// The checksum does not match: damaged media, or bytes never written as a whole.
    Checksum,
    /// A field holds a value no encoder writes; names the field and the rule broken.
    Invalid(&'static str),
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Truncated { needed, found } => {
                write!(f, "needs {needed} bytes, {found} present")
            }
            FormatError::BadMagic => f.write_str("bad magic number"),
            FormatError::Checksum => f.write_str("checksum mismatch"),
            FormatError::Invalid(what) => write!(f, "invalid {what}"),
        }
    }
}

/// Fails unless `bytes` holds at least `needed` bytes, so fixed-offset reads that
/// follow cannot go out of bounds.
fn need(bytes: &[u8], needed: usize) -> Result<(), FormatError> {
    if bytes.len() < needed {
        return Err(FormatError::Truncated {
            needed: needed as u64,
            found: bytes.len() as u64,
        });
    }
    Ok(())
}

/// Little-endian field readers over a slice already checked with [`need`].
fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Fails unless every byte of `bytes` is zero: reserved space is written as zeros, so a
/// set bit there is damage the checksum may not cover.
fn zeroed(bytes: &[u8], what: &'static str) -> Result<(), FormatError> {
    if bytes.iter().any(|&b| b != 0) {
        return Err(FormatError::Invalid(what));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers shared by the codecs' tests.

    /// Every copy of `bytes` with exactly one bit flipped, with the bit's position.
    pub fn bit_flips(bytes: &[u8]) -> impl Iterator<Item = (usize, Vec<u8>)> + '_ {
        (0..bytes.len() * 8).map(move |bit| {
            let mut b = bytes.to_vec();
            b[bit / 8] ^= 1 << (bit % 8);
            (bit, b)
        })
    }

    /// Bounded case counts, so the fuzz tests take seconds.
    pub fn fuzz_config() -> proptest::test_runner::Config {
        proptest::test_runner::Config {
            cases: 512,
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        }
    }
}
