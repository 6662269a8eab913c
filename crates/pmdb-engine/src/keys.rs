//! Internal keys of the DRAM indexes: the user key in an order-preserving escaped form,
//! then the inverted sequence number, so that plain byte order sorts by key ascending and,
//! within a key, newest version first.
//!
//! Escaping: 0x00 becomes 0x00 0x01 and the key ends with 0x00 0x00, so no encoded key is
//! a prefix of another and byte order equals user-key order.

use smallvec::SmallVec;

/// An internal key, stored inline (no heap pointer to chase per comparison) when it is
/// at most 32 bytes, as it is for keys of up to 22 bytes.
pub(crate) type IKey = SmallVec<[u8; 32]>;

/// Appends the escaped, terminated form of `key` to `out`.
pub(crate) fn escape_into(key: &[u8], out: &mut impl Extend<u8>) {
    let mut rest = key;
    // Copy zero-free runs whole; only zero bytes need the escape.
    while let Some(z) = rest.iter().position(|&b| b == 0) {
        out.extend(rest[..z].iter().copied());
        out.extend([0, 1]);
        rest = &rest[z + 1..];
    }
    out.extend(rest.iter().copied());
    out.extend([0, 0]);
}

/// The internal key of version `seq` of `key`.
pub(crate) fn internal(key: &[u8], seq: u64) -> IKey {
    let mut out = IKey::new();
    if !key.contains(&0) {
        // The common case: nothing to escape.
        out.extend_from_slice(key);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&(!seq).to_be_bytes());
        return out;
    }
    escape_into(key, &mut out);
    out.extend_from_slice(&(!seq).to_be_bytes());
    out
}

/// The escaped user-key part of an internal key.
pub(crate) fn user_part(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len() - 8]
}

/// Lowest internal key of an escaped user key (its newest possible version).
pub(crate) fn first_of(escaped: &[u8]) -> Vec<u8> {
    let mut out = escaped.to_vec();
    out.extend_from_slice(&[0; 8]);
    out
}

/// Highest internal key of an escaped user key (its oldest possible version).
pub(crate) fn last_of(escaped: &[u8]) -> Vec<u8> {
    let mut out = escaped.to_vec();
    out.extend_from_slice(&[0xff; 8]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_is_key_then_newest_first() {
        let keys: [&[u8]; 6] = [b"", b"\0", b"\0\0", b"\x01", b"a", b"ab"];
        for w in keys.windows(2) {
            assert!(
                internal(w[0], 5) < internal(w[1], 9),
                "{:?} {:?}",
                w[0],
                w[1]
            );
            assert!(internal(w[0], 1) < internal(w[1], 1));
        }
        assert!(internal(b"k", 9) < internal(b"k", 5));
        assert_eq!(internal(b"k", 77)[3..], (!77u64).to_be_bytes());
        let mut esc = Vec::new();
        escape_into(b"k\0", &mut esc);
        assert_eq!(esc, b"k\0\x01\0\0");
        assert_eq!(user_part(&internal(b"k\0", 3)), esc.as_slice());
        assert!(first_of(&esc)[..] <= internal(b"k\0", u64::MAX)[..]);
        assert!(last_of(&esc)[..] >= internal(b"k\0", 0)[..]);
    }
}
