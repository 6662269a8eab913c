//! The chunk header: the unit a commit group appends to a memtable. A chunk header
//! carries the group's lsn and part count (so recovery can tell a partial last group),
//! the first sequence number, the record count, a payload crc (media corruption) and its
//! own crc. A zone-end chunk says the rest of the zone is unused.
//!
//! Recovery sizes its work by these fields, so the decoder bounds them by what is there:
//! the payload by the room left in the zone, the record count by what the payload can
//! hold, the sequence numbers by what a record can store.

use super::record::RECORD_HEADER;
use super::{FormatError, MAX_SEQ, need, u32_at, u64_at, zeroed};

pub(crate) const CHUNK_HEADER: usize = 48;
const MAGIC: u32 = u32::from_le_bytes(*b"PMCH");
/// Bytes covered by the header's own crc.
const BODY: usize = 40;
const CRC_AT: usize = BODY;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChunkKind {
    Data = 1,
    ZoneEnd = 2,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkHeader {
    pub kind: ChunkKind,
    pub lsn: u64,
    pub nparts: u32,
    pub payload_len: u32,
    pub first_seq: u64,
    /// Records in the payload; a decoded header's count fits its `payload_len`.
    pub records: u32,
    pub payload_crc: u32,
}

impl ChunkHeader {
    pub fn encode(&self) -> [u8; CHUNK_HEADER] {
        let mut b = [0u8; CHUNK_HEADER];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&(self.kind as u32).to_le_bytes());
        b[8..16].copy_from_slice(&self.lsn.to_le_bytes());
        b[16..20].copy_from_slice(&self.nparts.to_le_bytes());
        b[20..24].copy_from_slice(&self.payload_len.to_le_bytes());
        b[24..32].copy_from_slice(&self.first_seq.to_le_bytes());
        b[32..36].copy_from_slice(&self.records.to_le_bytes());
        b[36..40].copy_from_slice(&self.payload_crc.to_le_bytes());
        let crc = crc32fast::hash(&b[..BODY]);
        b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a chunk header followed by at most `room` bytes of its zone.
    pub fn decode(b: &[u8], room: usize) -> Result<ChunkHeader, FormatError> {
        need(b, CHUNK_HEADER)?;
        if u32_at(b, 0) != MAGIC {
            return Err(FormatError::BadMagic);
        }
        if crc32fast::hash(&b[..BODY]) != u32_at(b, CRC_AT) {
            return Err(FormatError::Checksum);
        }
        zeroed(&b[CRC_AT + 4..CHUNK_HEADER], "chunk header padding")?;
        let h = ChunkHeader {
            kind: match u32_at(b, 4) {
                1 => ChunkKind::Data,
                2 => ChunkKind::ZoneEnd,
                _ => return Err(FormatError::Invalid("chunk kind")),
            },
            lsn: u64_at(b, 8),
            nparts: u32_at(b, 16),
            payload_len: u32_at(b, 20),
            first_seq: u64_at(b, 24),
            records: u32_at(b, 32),
            payload_crc: u32_at(b, 36),
        };
        h.validate(room)?;
        Ok(h)
    }

    /// The invariants every header a commit writes satisfies.
    fn validate(&self, room: usize) -> Result<(), FormatError> {
        let invalid = |what| Err(FormatError::Invalid(what));
        // Groups are numbered from 1, and each holds at least one record, so an lsn never
        // exceeds the seqs handed out.
        if self.lsn == 0 || self.lsn > MAX_SEQ {
            return invalid("chunk lsn");
        }
        if self.nparts == 0 {
            return invalid("chunk part count");
        }
        let payload = self.payload_len as usize;
        if payload > room {
            return Err(FormatError::Truncated {
                needed: payload as u64,
                found: room as u64,
            });
        }
        match self.kind {
            ChunkKind::ZoneEnd if payload != 0 || self.records != 0 || self.payload_crc != 0 => {
                return invalid("zone-end chunk with a payload");
            }
            ChunkKind::Data if self.records == 0 || !payload.is_multiple_of(8) => {
                return invalid("chunk payload length");
            }
            _ => {}
        }
        if self.records as usize > payload / RECORD_HEADER {
            return invalid("chunk record count: more records than the payload holds");
        }
        let last_seq = self.first_seq.checked_add(self.records as u64);
        if last_seq.is_none_or(|end| end > MAX_SEQ + 1) {
            return invalid("chunk first seq");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::testing::{bit_flips, fuzz_config};
    use super::*;

    fn header() -> ChunkHeader {
        ChunkHeader {
            kind: ChunkKind::Data,
            lsn: 7,
            nparts: 3,
            payload_len: 96,
            first_seq: 1000,
            records: 4,
            payload_crc: 0xdead_beef,
        }
    }

    #[test]
    fn round_trips() {
        let h = header();
        assert_eq!(ChunkHeader::decode(&h.encode(), 96), Ok(h));
        let end = ChunkHeader {
            kind: ChunkKind::ZoneEnd,
            payload_len: 0,
            records: 0,
            payload_crc: 0,
            ..h
        };
        assert_eq!(ChunkHeader::decode(&end.encode(), 0), Ok(end));
    }

    #[test]
    fn every_bit_flip_is_detected() {
        let b = header().encode();
        for (bit, d) in bit_flips(&b) {
            assert!(
                ChunkHeader::decode(&d, 1 << 20).is_err(),
                "flip of bit {bit} accepted"
            );
        }
    }

    #[test]
    fn lengths_and_counts_are_bounded() {
        // `encode` seals whatever fields it is given with a valid crc, so each case below
        // reaches the checks behind the crc.
        let h = header();
        assert!(ChunkHeader::decode(&h.encode()[..CHUNK_HEADER - 1], 96).is_err());
        // The payload must fit in the zone.
        assert_eq!(
            ChunkHeader::decode(&h.encode(), 95),
            Err(FormatError::Truncated {
                needed: 96,
                found: 95
            })
        );
        // A count the payload cannot hold: recovery would size its work by it.
        let forged = ChunkHeader {
            records: u32::MAX,
            ..h
        };
        assert!(ChunkHeader::decode(&forged.encode(), usize::MAX).is_err());
        let fits = ChunkHeader {
            records: 96 / RECORD_HEADER as u32,
            ..h
        };
        assert!(ChunkHeader::decode(&fits.encode(), 96).is_ok());
        let over = ChunkHeader {
            records: fits.records + 1,
            ..h
        };
        assert!(ChunkHeader::decode(&over.encode(), 96).is_err());
        for bad in [
            ChunkHeader { lsn: 0, ..h },
            ChunkHeader { lsn: u64::MAX, ..h },
            ChunkHeader { nparts: 0, ..h },
            ChunkHeader { records: 0, ..h },
            ChunkHeader {
                payload_len: 95,
                ..h
            },
            ChunkHeader {
                first_seq: MAX_SEQ,
                ..h
            },
            ChunkHeader {
                first_seq: u64::MAX,
                ..h
            },
            ChunkHeader {
                kind: ChunkKind::ZoneEnd,
                ..h
            },
        ] {
            assert!(
                ChunkHeader::decode(&bad.encode(), 1 << 20).is_err(),
                "{bad:?}"
            );
        }
    }

    proptest! {
        #![proptest_config(fuzz_config())]

        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in prop::collection::vec(any::<u8>(), 0..64),
            room in any::<usize>(),
        ) {
            let _ = ChunkHeader::decode(&bytes, room);
        }

        /// Arbitrary fields behind a valid magic and crc reach every check after them.
        #[test]
        fn arbitrary_sealed_fields_never_panic(
            body in prop::array::uniform32(any::<u8>()),
            kind in 0u32..4,
            room in prop_oneof![any::<usize>(), 0..4096usize],
        ) {
            let mut b = [0u8; CHUNK_HEADER];
            b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
            b[4..8].copy_from_slice(&kind.to_le_bytes());
            b[8..BODY].copy_from_slice(&body);
            let crc = crc32fast::hash(&b[..BODY]);
            b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            if let Ok(h) = ChunkHeader::decode(&b, room) {
                prop_assert!(h.payload_len as usize <= room);
                prop_assert!(h.records as usize * RECORD_HEADER <= h.payload_len as usize);
                prop_assert_eq!(h.encode(), b);
            }
        }
    }
}
