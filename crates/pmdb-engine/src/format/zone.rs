//! The memtable zone header: the first bytes of every zone a memtable owns. The pool
//! hands out a memtable's zones in no particular order; the header names the memtable
//! and the zone's place in its log, so recovery puts the zones back in order and refuses
//! a zone that is not the memtable's.

use super::{FormatError, need, u32_at, u64_at, zeroed};

/// Bytes reserved at the start of a memtable zone; the first chunk follows.
pub(crate) const ZONE_HEADER: usize = 64;
const MAGIC: u64 = u64::from_le_bytes(*b"PMDBMZON");
/// Bytes covered by the header's crc.
const BODY: usize = 20;
const CRC_AT: usize = BODY;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ZoneHeader {
    /// Id of the memtable owning the zone.
    pub memtable: u64,
    /// The zone's place in the memtable's log, from 0.
    pub index: u32,
}

impl ZoneHeader {
    pub fn encode(&self) -> [u8; ZONE_HEADER] {
        let mut b = [0u8; ZONE_HEADER];
        b[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        b[8..16].copy_from_slice(&self.memtable.to_le_bytes());
        b[16..20].copy_from_slice(&self.index.to_le_bytes());
        let crc = crc32fast::hash(&b[..BODY]);
        b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<ZoneHeader, FormatError> {
        need(b, ZONE_HEADER)?;
        if u64_at(b, 0) != MAGIC {
            return Err(FormatError::BadMagic);
        }
        if crc32fast::hash(&b[..BODY]) != u32_at(b, CRC_AT) {
            return Err(FormatError::Checksum);
        }
        zeroed(&b[CRC_AT + 4..ZONE_HEADER], "zone header padding")?;
        Ok(ZoneHeader {
            memtable: u64_at(b, 8),
            index: u32_at(b, 16),
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::testing::{bit_flips, fuzz_config};
    use super::*;

    const HEADER: ZoneHeader = ZoneHeader {
        memtable: 0x0102_0304_0506,
        index: 9,
    };

    #[test]
    fn round_trips() {
        assert_eq!(ZoneHeader::decode(&HEADER.encode()), Ok(HEADER));
        let mut longer = HEADER.encode().to_vec();
        longer.extend([0xab; 8]);
        assert_eq!(ZoneHeader::decode(&longer), Ok(HEADER));
    }

    #[test]
    fn every_bit_flip_is_detected() {
        for (bit, b) in bit_flips(&HEADER.encode()) {
            assert!(
                ZoneHeader::decode(&b).is_err(),
                "flip of bit {bit} accepted"
            );
        }
    }

    #[test]
    fn short_and_foreign_headers_are_refused() {
        let b = HEADER.encode();
        assert!(matches!(
            ZoneHeader::decode(&b[..ZONE_HEADER - 1]),
            Err(FormatError::Truncated { .. })
        ));
        assert_eq!(
            ZoneHeader::decode(&[0; ZONE_HEADER]),
            Err(FormatError::BadMagic)
        );
    }

    proptest! {
        #![proptest_config(fuzz_config())]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
            let _ = ZoneHeader::decode(&bytes);
        }

        #[test]
        fn arbitrary_sealed_fields_round_trip(memtable in any::<u64>(), index in any::<u32>()) {
            let h = ZoneHeader { memtable, index };
            prop_assert_eq!(ZoneHeader::decode(&h.encode()), Ok(h));
        }
    }
}
