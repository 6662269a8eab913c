//! The on-media layout of an extent: its header (magic, version, pool uuid, index, zone
//! geometry, checksum) and where the root area, owner registry, zone owner words and zones
//! sit. Every extent of a pool has the same geometry; only extent 0 holds the root area
//! and the owner registry.

use crate::off::PmOff;

pub(crate) const MAGIC: [u8; 8] = *b"PMDBPOOL";
/// The pool format this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Bytes reserved for the header at the start of every extent.
pub(crate) const HEADER_LEN: u64 = 4096;
/// Extent 0: the root area follows the header.
pub(crate) const ROOT_OFF: u64 = HEADER_LEN;
/// Number of 8-byte root words.
pub const ROOT_WORDS: usize = 512;
const ROOT_LEN: u64 = ROOT_WORDS as u64 * 8;
/// Bytes of the header covered by its checksum.
const HEADER_BODY: usize = 64;
/// Extent 0: how many extents the pool has grown to. It lies in the header page but
/// outside the checksummed body, so growth publishes it with one 8-byte store; without
/// it a pool whose last extent file was lost would look like a smaller, healthy pool.
pub(crate) const EXTENT_COUNT_OFF: u64 = 2048;

pub(crate) const MIN_ZONE_SIZE: u64 = 4096;
pub(crate) const MAX_EXTENTS: u32 = 4096;
pub(crate) const MAX_OWNERS: u32 = 1 << 24;
const DATA_ALIGN_MAX: u64 = 2 << 20;

/// The geometry of a pool, fixed at create and recorded in every extent header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub zone_size: u64,
    pub zones_per_extent: u32,
    pub max_owners: u32,
}

impl Geometry {
    /// Offset of the owner registry (extent 0 only).
    pub fn registry_off(&self) -> u64 {
        ROOT_OFF + ROOT_LEN
    }

    /// Offset of the zone owner words in extent `extent`.
    pub fn owner_words_off(&self, extent: u16) -> u64 {
        if extent == 0 {
            align_up(self.registry_off() + self.max_owners as u64 * 8, 64)
        } else {
            HEADER_LEN
        }
    }

    /// Offset of the first zone in extent `extent`; zones are aligned to the zone size up
    /// to 2 MiB so that DAX mappings can use huge pages.
    pub fn data_off(&self, extent: u16) -> u64 {
        let words_end = self.owner_words_off(extent) + self.zones_per_extent as u64 * 8;
        align_up(words_end, self.zone_size.min(DATA_ALIGN_MAX))
    }

    pub fn extent_len(&self, extent: u16) -> u64 {
        self.data_off(extent) + self.zones_per_extent as u64 * self.zone_size
    }

    /// Address of zone `index` of extent `extent`.
    pub fn zone_off(&self, zone: ZoneId) -> PmOff {
        PmOff::new(
            zone.extent,
            self.data_off(zone.extent) + zone.index as u64 * self.zone_size,
        )
    }

    /// Address of the owner word of a zone.
    pub fn owner_word_off(&self, zone: ZoneId) -> PmOff {
        PmOff::new(
            zone.extent,
            self.owner_words_off(zone.extent) + zone.index as u64 * 8,
        )
    }

    /// The zone holding `off`, if `off` is inside a zone.
    pub fn zone_of(&self, off: PmOff) -> Option<ZoneId> {
        let data = self.data_off(off.extent());
        let rel = off.offset().checked_sub(data)?;
        let index = rel / self.zone_size;
        (index < self.zones_per_extent as u64).then_some(ZoneId {
            extent: off.extent(),
            index: index as u32,
        })
    }
}

/// A zone: extent index and zone index inside the extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ZoneId {
    pub extent: u16,
    pub index: u32,
}

/// Address of root word `index` (< `ROOT_WORDS`).
pub(crate) fn root_off(index: usize) -> PmOff {
    assert!(index < ROOT_WORDS, "root word {index} out of range");
    PmOff::new(0, ROOT_OFF + index as u64 * 8)
}

pub(crate) fn align_up(v: u64, align: u64) -> u64 {
    v.div_ceil(align) * align
}

/// The decoded header of one extent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExtentHeader {
    pub version: u32,
    pub uuid: [u8; 16],
    pub extent: u16,
    pub max_extents: u32,
    pub geometry: Geometry,
    pub extent_len: u64,
}

/// Why a header could not be decoded; the caller adds the path.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HeaderError {
    Short,
    BadMagic,
    Version(u32),
    Checksum,
    Invalid(String),
}

impl ExtentHeader {
    /// The header of extent `extent` of a pool.
    pub fn new(uuid: [u8; 16], extent: u16, geometry: Geometry, max_extents: u32) -> Self {
        ExtentHeader {
            version: FORMAT_VERSION,
            uuid,
            extent,
            max_extents,
            geometry,
            extent_len: geometry.extent_len(extent),
        }
    }

    /// The first page of a new extent: the header and, in extent 0, an extent count of 1
    /// (extent 0 is always created first; growth publishes every larger count).
    pub fn page(&self) -> Vec<u8> {
        let mut page = vec![0u8; HEADER_LEN as usize];
        let header = self.encode();
        page[..header.len()].copy_from_slice(&header);
        if self.extent == 0 {
            let at = EXTENT_COUNT_OFF as usize;
            page[at..at + 8].copy_from_slice(&1u64.to_le_bytes());
        }
        page
    }

    pub fn encode(&self) -> [u8; HEADER_BODY + 4] {
        let mut b = [0u8; HEADER_BODY + 4];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&(self.extent as u32).to_le_bytes());
        b[16..32].copy_from_slice(&self.uuid);
        b[32..40].copy_from_slice(&self.geometry.zone_size.to_le_bytes());
        b[40..44].copy_from_slice(&self.geometry.zones_per_extent.to_le_bytes());
        b[44..48].copy_from_slice(&self.geometry.max_owners.to_le_bytes());
        b[48..52].copy_from_slice(&self.max_extents.to_le_bytes());
        b[56..64].copy_from_slice(&self.extent_len.to_le_bytes());
        let crc = crc32fast::hash(&b[..HEADER_BODY]);
        b[HEADER_BODY..HEADER_BODY + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(bytes: &[u8]) -> Result<ExtentHeader, HeaderError> {
        if bytes.len() < HEADER_BODY + 4 {
            return Err(HeaderError::Short);
        }
        if bytes[0..8] != MAGIC {
            return Err(HeaderError::BadMagic);
        }
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        let crc = u32_at(HEADER_BODY);
        if crc32fast::hash(&bytes[..HEADER_BODY]) != crc {
            return Err(HeaderError::Checksum);
        }
        let version = u32_at(8);
        if version != FORMAT_VERSION {
            return Err(HeaderError::Version(version));
        }
        let extent = u32_at(12);
        let geometry = Geometry {
            zone_size: u64_at(32),
            zones_per_extent: u32_at(40),
            max_owners: u32_at(44),
        };
        let header = ExtentHeader {
            version,
            uuid: bytes[16..32].try_into().unwrap(),
            extent: u16::try_from(extent)
                .map_err(|_| HeaderError::Invalid(format!("extent index {extent}")))?,
            max_extents: u32_at(48),
            geometry,
            extent_len: u64_at(56),
        };
        header.validate().map_err(HeaderError::Invalid)?;
        Ok(header)
    }

    fn validate(&self) -> Result<(), String> {
        let g = &self.geometry;
        validate_geometry(g).map_err(|(_, reason)| reason)?;
        if self.max_extents == 0 || self.max_extents > MAX_EXTENTS {
            return Err(format!("max extents {}", self.max_extents));
        }
        if self.extent as u32 >= MAX_EXTENTS {
            return Err(format!("extent index {}", self.extent));
        }
        if self.extent_len != g.extent_len(self.extent) {
            return Err(format!(
                "extent length {} does not match its geometry ({})",
                self.extent_len,
                g.extent_len(self.extent)
            ));
        }
        Ok(())
    }
}

/// Checks a geometry; on failure names the option at fault and why.
pub(crate) fn validate_geometry(g: &Geometry) -> Result<(), (&'static str, String)> {
    if !g.zone_size.is_power_of_two() || g.zone_size < MIN_ZONE_SIZE {
        return Err((
            "zone_size",
            format!(
                "{} is not a power of two of at least {MIN_ZONE_SIZE}",
                g.zone_size
            ),
        ));
    }
    if g.zones_per_extent == 0 || g.zones_per_extent > 1 << 20 {
        return Err((
            "zones_per_extent",
            format!("{} is not in 1..=1048576", g.zones_per_extent),
        ));
    }
    if g.max_owners == 0 || g.max_owners > MAX_OWNERS {
        return Err((
            "max_owners",
            format!("{} is not in 1..={MAX_OWNERS}", g.max_owners),
        ));
    }
    if g.extent_len(0) > PmOff::MAX_OFFSET {
        return Err(("zones_per_extent", "extent larger than 2^48 bytes".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> ExtentHeader {
        let geometry = Geometry {
            zone_size: 1 << 16,
            zones_per_extent: 8,
            max_owners: 64,
        };
        ExtentHeader::new([7; 16], 2, geometry, 4)
    }

    #[test]
    fn header_round_trips() {
        let h = header();
        assert_eq!(ExtentHeader::decode(&h.encode()), Ok(h));
    }

    #[test]
    fn page_holds_the_header_and_extent_zero_counts_itself() {
        const { assert!(EXTENT_COUNT_OFF as usize >= HEADER_BODY + 4) };
        const { assert!(EXTENT_COUNT_OFF + 8 <= HEADER_LEN) };
        let count = |page: &[u8]| {
            let at = EXTENT_COUNT_OFF as usize;
            u64::from_le_bytes(page[at..at + 8].try_into().unwrap())
        };
        let h = header();
        assert_eq!(ExtentHeader::decode(&h.page()), Ok(h.clone()));
        assert_eq!(count(&h.page()), 0);
        let h0 = ExtentHeader {
            extent: 0,
            extent_len: h.geometry.extent_len(0),
            ..h
        };
        assert_eq!(count(&h0.page()), 1);
    }

    #[test]
    fn every_flipped_byte_is_caught() {
        let bytes = header().encode();
        for i in 0..bytes.len() {
            let mut b = bytes;
            b[i] ^= 0x40;
            assert!(
                ExtentHeader::decode(&b).is_err(),
                "flip at byte {i} accepted"
            );
        }
    }

    #[test]
    fn zones_are_aligned_and_disjoint_from_metadata() {
        let g = header().geometry;
        for extent in [0u16, 1] {
            let data = g.data_off(extent);
            assert_eq!(data % g.zone_size, 0);
            assert!(data >= g.owner_words_off(extent) + 8 * g.zones_per_extent as u64);
            let last = ZoneId {
                extent,
                index: g.zones_per_extent - 1,
            };
            assert_eq!(g.zone_of(g.zone_off(last)), Some(last));
            assert_eq!(
                g.zone_off(last).offset() + g.zone_size,
                g.extent_len(extent)
            );
        }
        assert!(g.owner_words_off(0) >= g.registry_off() + 8 * g.max_owners as u64);
    }
}
