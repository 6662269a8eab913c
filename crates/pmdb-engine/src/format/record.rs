//! The record: key length, value length, (seq, kind), key, value, zero padding to 8
//! bytes. Records are written once and never changed, so readers borrow them in place.
//! A record has no checksum of its own: the chunk that holds it carries a crc of its
//! payload. So the decoder's duty is bounds: the lengths it reads are trusted only as far
//! as the bytes present.

use pmdb_pmem::{PmOff, Pool};

use super::{FormatError, MAX_SEQ, need, u32_at, u64_at, zeroed};
use crate::error::{DbError, Result};

/// Bytes of a record header; also the smallest record (empty key and value).
pub(crate) const RECORD_HEADER: usize = 16;

/// What a version does to its key: sets it, or deletes it (a tombstone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Put = 1,
    Delete = 2,
}

impl Kind {
    /// `put` or `delete`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Put => "put",
            Kind::Delete => "delete",
        }
    }

    fn from_u8(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Put),
            2 => Some(Kind::Delete),
            _ => None,
        }
    }
}

/// Bytes a record occupies, padding included; `None` when a length does not fit its
/// 32-bit header field or the total overflows.
fn padded_len(key: usize, value: usize) -> Option<usize> {
    u32::try_from(key).ok()?;
    u32::try_from(value).ok()?;
    RECORD_HEADER
        .checked_add(key)?
        .checked_add(value)?
        .checked_next_multiple_of(8)
}

/// Space a record takes, padding included.
pub(crate) fn record_len(key: usize, value: usize) -> usize {
    padded_len(key, value).expect("the options bound keys and values far below 4 GiB")
}

/// Encodes a record into `out` (which must be `record_len` long).
pub(crate) fn encode(out: &mut [u8], seq: u64, kind: Kind, key: &[u8], value: &[u8]) {
    debug_assert!(seq <= MAX_SEQ, "seq {seq} does not fit beside the kind");
    debug_assert_eq!(out.len(), record_len(key.len(), value.len()));
    out[0..4].copy_from_slice(&(key.len() as u32).to_le_bytes());
    out[4..8].copy_from_slice(&(value.len() as u32).to_le_bytes());
    out[8..16].copy_from_slice(&((seq << 8) | kind as u64).to_le_bytes());
    let k = RECORD_HEADER + key.len();
    out[RECORD_HEADER..k].copy_from_slice(key);
    out[k..k + value.len()].copy_from_slice(value);
    out[k + value.len()..].fill(0);
}

/// A record read back from PM.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RecordRef<'a> {
    pub seq: u64,
    pub kind: Kind,
    pub key: &'a [u8],
    pub value: &'a [u8],
    /// Bytes it occupies, padding included.
    pub len: usize,
}

/// The length, padding included, of the record whose header starts `header`: what a
/// reader must fetch before it can [`decode`].
fn encoded_len(header: &[u8]) -> Result<usize, FormatError> {
    need(header, RECORD_HEADER)?;
    padded_len(u32_at(header, 0) as usize, u32_at(header, 4) as usize)
        .ok_or(FormatError::Invalid("record length"))
}

/// Decodes the record at the start of `bytes` (which may continue past it).
pub(crate) fn decode(bytes: &[u8]) -> Result<RecordRef<'_>, FormatError> {
    let len = encoded_len(bytes)?;
    need(bytes, len)?;
    let word = u64_at(bytes, 8);
    let kind = Kind::from_u8(word as u8).ok_or(FormatError::Invalid("record kind"))?;
    let key_end = RECORD_HEADER + u32_at(bytes, 0) as usize;
    let value_end = key_end + u32_at(bytes, 4) as usize;
    zeroed(&bytes[value_end..len], "record padding")?;
    Ok(RecordRef {
        seq: word >> 8,
        kind,
        key: &bytes[RECORD_HEADER..key_end],
        value: &bytes[key_end..value_end],
        len,
    })
}

/// Reads and decodes the record at `off`: its header says how much more to read.
pub(crate) fn read(pool: &Pool, off: PmOff) -> Result<RecordRef<'_>> {
    let undecodable =
        |e: FormatError| DbError::Corrupt(format!("undecodable record at {off}: {e}"));
    pool.charge_read(0);
    let len = encoded_len(pool.read(off, RECORD_HEADER)?).map_err(undecodable)?;
    decode(pool.read(off, len)?).map_err(undecodable)
}

/// Reads the sequence number, kind and key of the record at `off`, not its value: what
/// the index compares and orders by.
pub(crate) fn read_key(pool: &Pool, off: PmOff) -> Result<(u64, &[u8])> {
    pool.charge_read(0);
    let header = pool.read(off, RECORD_HEADER)?;
    let word = u64_at(header, 8);
    if Kind::from_u8(word as u8).is_none() {
        return Err(DbError::Corrupt(format!(
            "undecodable record at {off}: {}",
            FormatError::Invalid("record kind")
        )));
    }
    let key_len = u32_at(header, 0) as usize;
    let bytes = pool.read(off, RECORD_HEADER.saturating_add(key_len))?;
    Ok((word, &bytes[RECORD_HEADER..]))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::testing::fuzz_config;
    use super::*;

    fn encoded(seq: u64, kind: Kind, key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut buf = vec![0xee; record_len(key.len(), value.len())];
        encode(&mut buf, seq, kind, key, value);
        buf
    }

    #[test]
    fn round_trips() {
        let buf = encoded(42, Kind::Put, b"key", b"value");
        let r = decode(&buf).unwrap();
        assert_eq!(
            (r.seq, r.kind, r.key, r.value, r.len),
            (42, Kind::Put, &b"key"[..], &b"value"[..], 24)
        );
        assert_eq!(encoded_len(&buf), Ok(24));
        let buf = encoded(MAX_SEQ, Kind::Delete, b"k", b"");
        let r = decode(&buf).unwrap();
        assert_eq!(
            (r.seq, r.kind, r.key, r.value),
            (MAX_SEQ, Kind::Delete, &b"k"[..], &b""[..])
        );
    }

    #[test]
    fn decodes_the_first_of_several_records() {
        let mut buf = encoded(1, Kind::Put, b"a", b"1");
        buf.extend(encoded(2, Kind::Put, b"b", b"2"));
        let r = decode(&buf).unwrap();
        assert_eq!((r.seq, r.key, r.len), (1, &b"a"[..], 24));
        assert_eq!(decode(&buf[r.len..]).unwrap().seq, 2);
    }

    #[test]
    fn truncations_are_refused() {
        let buf = encoded(7, Kind::Put, b"some key", b"some value");
        for len in 0..buf.len() {
            assert!(
                matches!(decode(&buf[..len]), Err(FormatError::Truncated { .. })),
                "{len} bytes accepted"
            );
        }
        assert!(encoded_len(&buf[..RECORD_HEADER - 1]).is_err());
    }

    #[test]
    fn oversize_lengths_are_refused() {
        let buf = encoded(7, Kind::Put, b"key", b"value");
        for (field, value) in [(0, 4), (0, u32::MAX), (4, 6), (4, u32::MAX)] {
            let mut b = buf.clone();
            b[field..field + 4].copy_from_slice(&value.to_le_bytes());
            assert!(decode(&b).is_err(), "length {value} at {field} accepted");
        }
        let mut both = buf.clone();
        both[0..8].fill(0xff);
        assert_eq!(
            decode(&both),
            Err(FormatError::Truncated {
                needed: 8_589_934_608,
                found: 24
            })
        );
    }

    #[test]
    fn bad_kind_and_dirty_padding_are_refused() {
        let buf = encoded(7, Kind::Put, b"key", b"val");
        for kind in [0u8, 3, 0xff] {
            let mut b = buf.clone();
            b[8] = kind;
            assert_eq!(decode(&b), Err(FormatError::Invalid("record kind")));
        }
        let mut b = buf.clone();
        b[23] = 1;
        assert_eq!(decode(&b), Err(FormatError::Invalid("record padding")));
    }

    proptest! {
        #![proptest_config(fuzz_config())]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..96)) {
            if let Ok(r) = decode(&bytes) {
                prop_assert!(r.len <= bytes.len());
                prop_assert_eq!(encoded(r.seq, r.kind, r.key, r.value), &bytes[..r.len]);
            }
            let _ = encoded_len(&bytes);
        }

        #[test]
        fn forged_lengths_never_panic(
            klen in any::<u32>(),
            vlen in prop_oneof![any::<u32>(), 0..64u32],
            word in any::<u64>(),
            tail in prop::collection::vec(any::<u8>(), 0..96),
        ) {
            let mut bytes = Vec::new();
            bytes.extend(klen.to_le_bytes());
            bytes.extend(vlen.to_le_bytes());
            bytes.extend(word.to_le_bytes());
            bytes.extend(tail);
            if let Ok(r) = decode(&bytes) {
                prop_assert_eq!((r.key.len(), r.value.len()), (klen as usize, vlen as usize));
            }
        }
    }
}
