//! Chunks: the unit a commit group appends to a memtable. A chunk header carries the
//! group's lsn and part count (so recovery can tell a partial last group), the first
//! sequence number, the record count, a payload crc (media corruption) and its own crc.
//! A zone-end chunk says the rest of the zone is unused.

pub(crate) const CHUNK_HEADER: usize = 48;
const MAGIC: u32 = u32::from_le_bytes(*b"PMCH");

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
    pub records: u32,
    pub payload_crc: u32,
}

/// Why a header did not decode.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ChunkError {
    /// Bad magic or checksum: not a header written and persisted by a commit.
    Damaged,
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
        let crc = crc32fast::hash(&b[..40]);
        b[40..44].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<ChunkHeader, ChunkError> {
        if b.len() < CHUNK_HEADER {
            return Err(ChunkError::Damaged);
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        if u32_at(0) != MAGIC || crc32fast::hash(&b[..40]) != u32_at(40) {
            return Err(ChunkError::Damaged);
        }
        let kind = match u32_at(4) {
            1 => ChunkKind::Data,
            2 => ChunkKind::ZoneEnd,
            _ => return Err(ChunkError::Damaged),
        };
        Ok(ChunkHeader {
            kind,
            lsn: u64_at(8),
            nparts: u32_at(16),
            payload_len: u32_at(20),
            first_seq: u64_at(24),
            records: u32_at(32),
            payload_crc: u32_at(36),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_detects_damage() {
        let h = ChunkHeader {
            kind: ChunkKind::Data,
            lsn: 7,
            nparts: 3,
            payload_len: 96,
            first_seq: 1000,
            records: 4,
            payload_crc: 0xdead_beef,
        };
        let b = h.encode();
        assert_eq!(ChunkHeader::decode(&b), Ok(h));
        for i in 0..44 {
            let mut d = b;
            d[i] ^= 1;
            assert_eq!(
                ChunkHeader::decode(&d),
                Err(ChunkError::Damaged),
                "byte {i}"
            );
        }
    }
}
