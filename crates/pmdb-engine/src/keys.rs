//! Internal keys: what the iterator stack orders by. An internal key is
//! the user key followed by an 8-byte big-endian tag `(seq << 8) | kind`; internal keys
//! order by user key ascending, then by tag descending, so within a key the newest
//! version comes first and a seek to `(key, snapshot)` lands on the newest version the
//! snapshot may see. The kind in the tag lets readers skip tombstones without touching PM.

use std::cmp::Ordering;

use smallvec::SmallVec;

use crate::format::MAX_SEQ;
use crate::format::record::Kind;

/// Bytes of the tag at the end of an internal key.
pub(crate) const TAG: usize = 8;
/// The tag of a seek target that finds the newest version of a key.
const NEWEST: u64 = u64::MAX;
/// The tag of a seek target that finds the oldest version of a key.
const OLDEST: u64 = 0;

/// An internal key, stored inline (no heap pointer to chase per comparison) when it is at
/// most 32 bytes, as it is for user keys of up to 24 bytes.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct IKey(SmallVec<[u8; 32]>);

impl IKey {
    /// The internal key of version `seq` of `key`.
    #[cfg(test)]
    pub fn new(key: &[u8], seq: u64, kind: Kind) -> IKey {
        IKey::with_tag(key, tag(seq, kind))
    }

    /// The lowest internal key of `key` (before all its versions).
    pub fn first_of(key: &[u8]) -> IKey {
        IKey::with_tag(key, NEWEST)
    }

    /// The highest internal key of `key` (after all its versions).
    pub fn last_of(key: &[u8]) -> IKey {
        IKey::with_tag(key, OLDEST)
    }

    /// The seek target of `key` at snapshot `snap`: after every version of `key` newer
    /// than `snap`, before all the others, so a seek lands on the newest version `snap`
    /// may see.
    pub fn at_snapshot(key: &[u8], snap: u64) -> IKey {
        IKey::with_tag(key, (snap.min(MAX_SEQ) << 8) | 0xff)
    }

    fn with_tag(key: &[u8], tag: u64) -> IKey {
        let mut out = SmallVec::with_capacity(key.len() + TAG);
        out.extend_from_slice(key);
        out.extend_from_slice(&tag.to_be_bytes());
        IKey(out)
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }
}

impl Ord for IKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

impl PartialOrd for IKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for IKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (user, seq, kind) = (user_key(&self.0), seq_of(&self.0), kind_of(&self.0));
        write!(f, "{user:?}@{seq}/{kind:?}")
    }
}

/// Orders internal keys: user key ascending, then tag descending.
pub(crate) fn compare(a: &[u8], b: &[u8]) -> Ordering {
    compare_user_keys(user_key(a), user_key(b)).then_with(|| tag_of(b).cmp(&tag_of(a)))
}

/// Byte order of user keys, compared 8 bytes at a time as big-endian words (the first
/// differing word decides, exactly as it would byte by byte): keys of a few dozen bytes
/// are decided in a couple of register compares instead of a call into `memcmp`.
pub(crate) fn compare_user_keys(mut a: &[u8], mut b: &[u8]) -> Ordering {
    while let (Some((x, rest_a)), Some((y, rest_b))) =
        (a.split_first_chunk::<8>(), b.split_first_chunk::<8>())
    {
        if x != y {
            return u64::from_be_bytes(*x).cmp(&u64::from_be_bytes(*y));
        }
        (a, b) = (rest_a, rest_b);
    }
    a.cmp(b)
}

/// The user key of an internal key.
pub(crate) fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len() - TAG]
}

/// The tag of an internal key.
pub(crate) fn tag_of(ikey: &[u8]) -> u64 {
    let mut tag = [0u8; TAG];
    tag.copy_from_slice(&ikey[ikey.len() - TAG..]);
    u64::from_be_bytes(tag)
}

/// The sequence number of an internal key.
pub(crate) fn seq_of(ikey: &[u8]) -> u64 {
    tag_of(ikey) >> 8
}

/// The kind of an internal key (a seek target's 0xff reads as a put; targets are never
/// returned by the indexes).
pub(crate) fn kind_of(ikey: &[u8]) -> Kind {
    kind_of_tag(tag_of(ikey))
}

/// The tag of version `seq` of a write of kind `kind`.
pub(crate) fn tag(seq: u64, kind: Kind) -> u64 {
    (seq << 8) | kind as u64
}

/// The kind a tag records (a seek target's 0xff reads as a put).
pub(crate) fn kind_of_tag(tag: u64) -> Kind {
    if tag & 0xff == Kind::Delete as u64 {
        Kind::Delete
    } else {
        Kind::Put
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn word_compare_is_byte_order(
            a in prop::collection::vec(any::<u8>(), 0..40),
            b in prop::collection::vec(any::<u8>(), 0..40),
            shared in prop::collection::vec(any::<u8>(), 0..20),
        ) {
            prop_assert_eq!(compare_user_keys(&a, &b), a.cmp(&b));
            let (pa, pb) = ([&shared[..], &a].concat(), [&shared[..], &b].concat());
            prop_assert_eq!(compare_user_keys(&pa, &pb), pa.cmp(&pb));
        }
    }

    #[test]
    fn order_is_user_key_then_newest_first() {
        let keys: [&[u8]; 6] = [b"", b"\0", b"\0\0", b"\x01", b"a", b"ab"];
        for w in keys.windows(2) {
            assert!(IKey::new(w[0], 5, Kind::Put) < IKey::new(w[1], 9, Kind::Put));
            assert!(IKey::new(w[0], 1, Kind::Delete) < IKey::new(w[1], 1, Kind::Put));
            assert!(IKey::last_of(w[0]) < IKey::first_of(w[1]));
        }
        assert!(IKey::new(b"k", 9, Kind::Put) < IKey::new(b"k", 5, Kind::Delete));
        let v = IKey::new(b"k\0", 77, Kind::Delete);
        assert_eq!(
            (user_key(v.as_slice()), seq_of(v.as_slice())),
            (&b"k\0"[..], 77)
        );
        assert_eq!(kind_of(v.as_slice()), Kind::Delete);
        assert!(IKey::first_of(b"k\0") < v && v < IKey::last_of(b"k\0"));
        assert!(IKey::at_snapshot(b"k\0", 78) < IKey::at_snapshot(b"k\0", 77));
        assert!(IKey::at_snapshot(b"k\0", 77) < v && v < IKey::at_snapshot(b"k\0", 76));
        assert_eq!(IKey::at_snapshot(b"k", u64::MAX), IKey::first_of(b"k"));
    }
}
