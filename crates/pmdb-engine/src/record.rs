//! The record format in PM: key length, value length, (seq, kind), key, value, padding to
//! 8 bytes. Records are written once and never changed, so readers can borrow them.

/// Bytes of a record header.
pub(crate) const RECORD_HEADER: usize = 16;

/// What a record does to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Put = 1,
    Delete = 2,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Put),
            2 => Some(Kind::Delete),
            _ => None,
        }
    }
}

/// Space a record takes, padding included.
pub(crate) fn record_len(key: usize, value: usize) -> usize {
    (RECORD_HEADER + key + value).next_multiple_of(8)
}

/// Encodes a record into `out` (which must be `record_len` long).
pub(crate) fn encode(out: &mut [u8], seq: u64, kind: Kind, key: &[u8], value: &[u8]) {
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

/// Decodes the record at the start of `bytes`; `None` if it does not fit or is invalid.
pub(crate) fn decode(bytes: &[u8]) -> Option<RecordRef<'_>> {
    if bytes.len() < RECORD_HEADER {
        return None;
    }
    let klen = u32::from_le_bytes(bytes[0..4].try_into().ok()?) as usize;
    let vlen = u32::from_le_bytes(bytes[4..8].try_into().ok()?) as usize;
    let word = u64::from_le_bytes(bytes[8..16].try_into().ok()?);
    let kind = Kind::from_u8((word & 0xff) as u8)?;
    let len = record_len(klen, vlen);
    if len > bytes.len() {
        return None;
    }
    let k = RECORD_HEADER + klen;
    Some(RecordRef {
        seq: word >> 8,
        kind,
        key: &bytes[RECORD_HEADER..k],
        value: &bytes[k..k + vlen],
        len,
    })
}

/// Length of the record whose header starts `bytes` (for readers that only need it).
pub(crate) fn header_lens(bytes: &[u8]) -> (usize, usize) {
    let klen = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
    let vlen = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")) as usize;
    (klen, vlen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut buf = vec![0xee; record_len(3, 5)];
        encode(&mut buf, 42, Kind::Put, b"key", b"value");
        let r = decode(&buf).unwrap();
        assert_eq!(
            (r.seq, r.kind, r.key, r.value, r.len),
            (42, Kind::Put, &b"key"[..], &b"value"[..], 24)
        );
        assert_eq!(header_lens(&buf), (3, 5));
        assert!(decode(&buf[..20]).is_none());
    }
}
