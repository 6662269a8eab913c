//! The SST file's fixed structures: varints, block handles, the block trailer (compression
//! type and crc), LZ4 block contents, the filter block, the properties block and the
//! footer. What goes into data and index blocks, and where blocks are placed, belongs to
//! `crate::sst`; this module only encodes and decodes, and like every codec here treats
//! its input as untrusted media.

use super::{FormatError, MAX_SEQ, need, u32_at, u64_at, zeroed};
use crate::keys;

/// The footer's format version, the only one this build reads.
pub(crate) const SST_FORMAT_VERSION: u32 = 1;
/// The properties block this build writes: version 2 names the table's place
/// ([`SstIdentity`]). Version 1, without it, is still read.
pub(crate) const PROPERTIES_VERSION: u32 = 2;
const PROPERTIES_V1: u32 = 1;
/// The last 8 bytes of every SST file.
const MAGIC: u64 = u64::from_le_bytes(*b"PMDBSSTF");
/// Bytes of the footer, the last bytes of the file.
pub(crate) const FOOTER_LEN: usize = 64;
/// Bytes of the trailer after every block: compression type, crc.
pub(crate) const TRAILER_LEN: usize = 5;
/// Longest varint of a u64.
const MAX_VARINT: usize = 10;
/// LZ4 expands no byte of its input into more than 255 bytes of output (a match length
/// byte of 255); a stated length beyond this bound is damage, and refusing it keeps the
/// buffer a damaged block could make us allocate within a fixed multiple of its size.
const LZ4_MAX_RATIO: usize = 256;
/// Most hash functions a filter may use: the encoder uses at most 30, and a bound keeps a
/// damaged filter from turning each probe into a long loop.
pub(crate) const MAX_FILTER_HASHES: u32 = 30;

/// How a block's bytes are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Compression {
    /// As they are.
    #[default]
    None = 0,
    /// One LZ4 block (`lz4_flex`), after the uncompressed length as a varint.
    Lz4 = 1,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
        }
    }

    fn from_u8(b: u8) -> Option<Compression> {
        match b {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            _ => None,
        }
    }
}

/// Appends `v` as a LEB128 varint: 7 bits a byte, low bits first, high bit set on every
/// byte but the last.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes the varint at `*at` in `b` and moves `*at` past it.
pub(crate) fn get_varint(b: &[u8], at: &mut usize) -> Result<u64, FormatError> {
    let mut v = 0u64;
    for i in 0..MAX_VARINT {
        let Some(&byte) = b.get(*at + i) else {
            return Err(FormatError::Truncated {
                needed: (*at + i + 1) as u64,
                found: b.len() as u64,
            });
        };
        // The tenth byte holds bit 63 alone.
        if i == MAX_VARINT - 1 && byte > 1 {
            return Err(FormatError::Invalid("varint: more than 64 bits"));
        }
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            *at += i + 1;
            return Ok(v);
        }
    }
    Err(FormatError::Invalid("varint: more than 64 bits"))
}

/// Where a block lies in the file: its first byte and its length, trailer excluded (the
/// 5-byte trailer follows it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    /// Appends the handle as two varints, as index entries hold it.
    pub fn encode_varint(&self, out: &mut Vec<u8>) {
        put_varint(out, self.offset);
        put_varint(out, self.size);
    }

    /// Decodes a handle encoded by [`Self::encode_varint`] that fills `b` exactly.
    pub fn decode_varint(b: &[u8]) -> Result<BlockHandle, FormatError> {
        let mut at = 0;
        let offset = get_varint(b, &mut at)?;
        let size = get_varint(b, &mut at)?;
        if at != b.len() {
            return Err(FormatError::Invalid("block handle: trailing bytes"));
        }
        Ok(BlockHandle { offset, size })
    }

    /// The first byte past the block's trailer, if it does not overflow.
    pub fn end(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(TRAILER_LEN as u64)
    }

    /// Fails unless the block and its trailer lie in the first `limit` bytes, so the
    /// reads that follow stay inside the file and buffers are sized by bytes present.
    pub fn check(&self, limit: u64) -> Result<(), FormatError> {
        match self.end() {
            Some(end) if end <= limit => Ok(()),
            _ => Err(FormatError::Invalid(
                "block handle: past the end of the blocks",
            )),
        }
    }

    fn encode_fixed(&self, out: &mut [u8]) {
        out[0..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.size.to_le_bytes());
    }

    fn decode_fixed(b: &[u8], at: usize) -> BlockHandle {
        BlockHandle {
            offset: u64_at(b, at),
            size: u64_at(b, at + 8),
        }
    }
}

/// The trailer of a block whose stored bytes are `stored` and whose compression is
/// `kind`: the type byte, then the crc32 of the stored bytes followed by the type byte.
pub(crate) fn block_trailer(stored: &[u8], kind: Compression) -> [u8; TRAILER_LEN] {
    let mut t = [0u8; TRAILER_LEN];
    t[0] = kind as u8;
    let crc = trailer_crc(stored, t[0]);
    t[1..5].copy_from_slice(&crc.to_le_bytes());
    t
}

fn trailer_crc(stored: &[u8], kind: u8) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(stored);
    h.update(&[kind]);
    h.finalize()
}

/// Splits a block read with its trailer into its stored bytes and compression, after
/// verifying the crc.
pub(crate) fn check_block(with_trailer: &[u8]) -> Result<(&[u8], Compression), FormatError> {
    need(with_trailer, TRAILER_LEN)?;
    let (stored, t) = with_trailer.split_at(with_trailer.len() - TRAILER_LEN);
    if trailer_crc(stored, t[0]) != u32_at(t, 1) {
        return Err(FormatError::Checksum);
    }
    let kind = Compression::from_u8(t[0]).ok_or(FormatError::Invalid("block compression"))?;
    Ok((stored, kind))
}

/// LZ4-compresses `raw` into `out` (cleared first) as the uncompressed length then one
/// LZ4 block.
pub(crate) fn compress_lz4(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    put_varint(out, raw.len() as u64);
    let at = out.len();
    out.resize(at + lz4_flex::block::get_maximum_output_size(raw.len()), 0);
    let n = lz4_flex::block::compress_into(raw, &mut out[at..])
        .expect("the buffer has the maximum output size");
    out.truncate(at + n);
}

/// The uncompressed length stated by LZ4 block contents, and the compressed bytes.
pub(crate) fn lz4_parts(stored: &[u8]) -> Result<(usize, &[u8]), FormatError> {
    let mut at = 0;
    let len = get_varint(stored, &mut at)?;
    let payload = &stored[at..];
    match usize::try_from(len) {
        Ok(len) if len <= payload.len().saturating_mul(LZ4_MAX_RATIO) => Ok((len, payload)),
        _ => Err(FormatError::Invalid("lz4 block: uncompressed length")),
    }
}

/// Decompresses the payload of [`lz4_parts`] into `out`, which must be the stated length.
pub(crate) fn decompress_lz4(payload: &[u8], out: &mut [u8]) -> Result<(), FormatError> {
    match lz4_flex::block::decompress_into(payload, out) {
        Ok(n) if n == out.len() => Ok(()),
        _ => Err(FormatError::Invalid(
            "lz4 block: does not decompress to its length",
        )),
    }
}

/// Filter kind 1: fastbloom 0.17's bit layout, probed with the source hash
/// `crate::sst::filter` computes.
const FILTER_KIND: u8 = 1;
const FILTER_HEADER: usize = 8;

/// A Bloom filter as stored: hash functions per key and the bit words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FilterBlock {
    pub hashes: u32,
    pub words: Vec<u64>,
}

impl FilterBlock {
    pub fn encode(&self) -> Vec<u8> {
        debug_assert!((1..=MAX_FILTER_HASHES).contains(&self.hashes));
        debug_assert!(!self.words.is_empty());
        let mut b = vec![0u8; FILTER_HEADER];
        b[0] = FILTER_KIND;
        b[1] = self.hashes as u8;
        for w in &self.words {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b
    }

    pub fn decode(b: &[u8]) -> Result<FilterBlock, FormatError> {
        need(b, FILTER_HEADER + 8)?;
        if b[0] != FILTER_KIND {
            return Err(FormatError::Invalid("filter kind"));
        }
        let hashes = u32::from(b[1]);
        if !(1..=MAX_FILTER_HASHES).contains(&hashes) {
            return Err(FormatError::Invalid("filter hash count"));
        }
        zeroed(&b[2..FILTER_HEADER], "filter header padding")?;
        let bits = &b[FILTER_HEADER..];
        if !bits.len().is_multiple_of(8) {
            return Err(FormatError::Invalid("filter length"));
        }
        let words = bits.chunks_exact(8).map(|w| u64_at(w, 0)).collect();
        Ok(FilterBlock { hashes, words })
    }
}

/// Where a table belongs: the database that wrote it (its pool's uuid), the file number
/// the manifest names it by, and its subtable. A reader that finds another identity
/// than the manifest's record of the file refuses the table: a file swapped with
/// another, or copied in from another database, is never served as this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SstIdentity {
    pub database: [u8; 16],
    pub number: u64,
    pub subtable: u32,
}

/// What a table holds, summed up by its writer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Properties {
    /// [`PROPERTIES_VERSION`], or 1 for a table written before identities.
    pub format_version: u32,
    /// The writer's compression option (a block that does not shrink is stored as is).
    pub compression: Compression,
    pub entries: u64,
    /// Entries whose kind is a delete.
    pub tombstones: u64,
    /// Bytes of the internal keys (tags included) and of the values, before compression.
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    pub data_blocks: u64,
    /// 0 and 0 when the table is empty.
    pub min_seq: u64,
    pub max_seq: u64,
    /// Internal keys; empty when the table is empty.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    /// Present from version 2 on, absent in version 1.
    pub identity: Option<SstIdentity>,
}

/// Bytes before the keys: the counts of version 1, then version 2's identity.
const PROPERTIES_FIXED_V1: usize = 72;
const PROPERTIES_FIXED: usize = 104;

impl Properties {
    fn fixed_len(version: u32) -> usize {
        if version == PROPERTIES_V1 {
            PROPERTIES_FIXED_V1
        } else {
            PROPERTIES_FIXED
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let fixed = Properties::fixed_len(self.format_version);
        let mut b = vec![0u8; fixed];
        b[0..4].copy_from_slice(&self.format_version.to_le_bytes());
        b[4] = self.compression as u8;
        for (at, v) in [
            (8, self.entries),
            (16, self.tombstones),
            (24, self.raw_key_bytes),
            (32, self.raw_value_bytes),
            (40, self.data_blocks),
            (48, self.min_seq),
            (56, self.max_seq),
        ] {
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        let len = |k: &[u8]| u32::try_from(k.len()).expect("keys are far below 4 GiB");
        b[64..68].copy_from_slice(&len(&self.smallest).to_le_bytes());
        b[68..72].copy_from_slice(&len(&self.largest).to_le_bytes());
        if let (Some(id), PROPERTIES_FIXED) = (self.identity, fixed) {
            b[72..88].copy_from_slice(&id.database);
            b[88..96].copy_from_slice(&id.number.to_le_bytes());
            b[96..100].copy_from_slice(&id.subtable.to_le_bytes());
        }
        b.extend_from_slice(&self.smallest);
        b.extend_from_slice(&self.largest);
        b
    }

    pub fn decode(b: &[u8]) -> Result<Properties, FormatError> {
        need(b, PROPERTIES_FIXED_V1)?;
        let format_version = u32_at(b, 0);
        if format_version != PROPERTIES_V1 && format_version != PROPERTIES_VERSION {
            return Err(FormatError::Invalid("properties: format version"));
        }
        let fixed = Properties::fixed_len(format_version);
        need(b, fixed)?;
        zeroed(&b[5..8], "properties padding")?;
        let identity = (format_version == PROPERTIES_VERSION)
            .then(|| {
                zeroed(&b[100..104], "properties identity padding")?;
                Ok(SstIdentity {
                    database: b[72..88].try_into().expect("16 bytes"),
                    number: u64_at(b, 88),
                    subtable: u32_at(b, 96),
                })
            })
            .transpose()?;
        let small_len = u32_at(b, 64) as usize;
        let large_len = u32_at(b, 68) as usize;
        let total = fixed
            .checked_add(small_len)
            .and_then(|n| n.checked_add(large_len))
            .ok_or(FormatError::Invalid("properties: key lengths"))?;
        need(b, total)?;
        if b.len() != total {
            return Err(FormatError::Invalid("properties: trailing bytes"));
        }
        let p = Properties {
            format_version,
            compression: Compression::from_u8(b[4])
                .ok_or(FormatError::Invalid("properties: compression"))?,
            entries: u64_at(b, 8),
            tombstones: u64_at(b, 16),
            raw_key_bytes: u64_at(b, 24),
            raw_value_bytes: u64_at(b, 32),
            data_blocks: u64_at(b, 40),
            min_seq: u64_at(b, 48),
            max_seq: u64_at(b, 56),
            smallest: b[fixed..fixed + small_len].to_vec(),
            largest: b[fixed + small_len..total].to_vec(),
            identity,
        };
        p.check()?;
        Ok(p)
    }

    /// The rules every writer's summary obeys.
    fn check(&self) -> Result<(), FormatError> {
        let identified = self.format_version == PROPERTIES_VERSION;
        if self.identity.is_some() != identified
            || (!identified && self.format_version != PROPERTIES_V1)
        {
            return Err(FormatError::Invalid("properties: format version"));
        }
        if self.tombstones > self.entries {
            return Err(FormatError::Invalid(
                "properties: more tombstones than entries",
            ));
        }
        if self.entries == 0 {
            let empty = self.data_blocks == 0
                && self.min_seq == 0
                && self.max_seq == 0
                && self.smallest.is_empty()
                && self.largest.is_empty();
            return match empty {
                true => Ok(()),
                false => Err(FormatError::Invalid("properties: an empty table's fields")),
            };
        }
        if self.data_blocks == 0 || self.data_blocks > self.entries {
            return Err(FormatError::Invalid("properties: data block count"));
        }
        if self.min_seq > self.max_seq || self.max_seq > MAX_SEQ {
            return Err(FormatError::Invalid("properties: sequence range"));
        }
        if self.smallest.len() < keys::TAG || self.largest.len() < keys::TAG {
            return Err(FormatError::Invalid("properties: key shorter than its tag"));
        }
        if keys::compare(&self.smallest, &self.largest).is_gt() {
            return Err(FormatError::Invalid(
                "properties: smallest key after largest",
            ));
        }
        Ok(())
    }
}

/// The last [`FOOTER_LEN`] bytes of the file: where the index, filter and properties
/// blocks are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    pub index: BlockHandle,
    /// `None` when the table has no filter (stored as offset 0, size 0).
    pub filter: Option<BlockHandle>,
    pub properties: BlockHandle,
}

/// Bytes covered by the footer's crc.
const FOOTER_BODY: usize = 52;

impl Footer {
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        self.index.encode_fixed(&mut b[0..16]);
        self.filter.unwrap_or_default().encode_fixed(&mut b[16..32]);
        self.properties.encode_fixed(&mut b[32..48]);
        b[48..52].copy_from_slice(&SST_FORMAT_VERSION.to_le_bytes());
        let crc = crc32fast::hash(&b[..FOOTER_BODY]);
        b[52..56].copy_from_slice(&crc.to_le_bytes());
        b[56..64].copy_from_slice(&MAGIC.to_le_bytes());
        b
    }

    /// Decodes a footer that fills `b` exactly.
    pub fn decode(b: &[u8]) -> Result<Footer, FormatError> {
        need(b, FOOTER_LEN)?;
        if b.len() != FOOTER_LEN {
            return Err(FormatError::Invalid("footer length"));
        }
        if u64_at(b, 56) != MAGIC {
            return Err(FormatError::BadMagic);
        }
        if crc32fast::hash(&b[..FOOTER_BODY]) != u32_at(b, 52) {
            return Err(FormatError::Checksum);
        }
        if u32_at(b, 48) != SST_FORMAT_VERSION {
            return Err(FormatError::Invalid("sst format version"));
        }
        let filter = BlockHandle::decode_fixed(b, 16);
        let filter = match filter {
            BlockHandle { offset: 0, size: 0 } => None,
            BlockHandle { size: 0, .. } => return Err(FormatError::Invalid("filter handle")),
            handle => Some(handle),
        };
        Ok(Footer {
            index: BlockHandle::decode_fixed(b, 0),
            filter,
            properties: BlockHandle::decode_fixed(b, 32),
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::record::Kind;
    use super::super::testing::{bit_flips, fuzz_config};
    use super::*;
    use crate::keys::IKey;

    const FOOTER: Footer = Footer {
        index: BlockHandle {
            offset: 70_000,
            size: 1234,
        },
        filter: Some(BlockHandle {
            offset: 71_239,
            size: 808,
        }),
        properties: BlockHandle {
            offset: 72_052,
            size: 120,
        },
    };

    const IDENTITY: SstIdentity = SstIdentity {
        database: *b"0123456789abcdef",
        number: 54,
        subtable: 3,
    };

    fn properties() -> Properties {
        Properties {
            format_version: PROPERTIES_VERSION,
            compression: Compression::Lz4,
            entries: 1000,
            tombstones: 10,
            raw_key_bytes: 18_000,
            raw_value_bytes: 100_000,
            data_blocks: 30,
            min_seq: 5,
            max_seq: 900,
            smallest: IKey::new(b"apple", 900, Kind::Put).as_slice().to_vec(),
            largest: IKey::new(b"zebra", 5, Kind::Delete).as_slice().to_vec(),
            identity: Some(IDENTITY),
        }
    }

    #[test]
    fn varints_round_trip_at_every_length() {
        let mut values = vec![0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        values.extend((0..64).map(|b| 1u64 << b));
        for v in values {
            let mut b = vec![0xaa];
            put_varint(&mut b, v);
            let mut at = 1;
            assert_eq!(get_varint(&b, &mut at), Ok(v));
            assert_eq!(at, b.len());
            at = 1;
            assert!(
                get_varint(&b[..b.len() - 1], &mut at).is_err(),
                "{v} cut short"
            );
        }
        let mut at = 0;
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(get_varint(&over, &mut at).is_err());
        assert!(get_varint(&[0x80; 11], &mut 0).is_err());
    }

    #[test]
    fn handles_round_trip_and_are_bounded() {
        let h = BlockHandle {
            offset: 1 << 40,
            size: 4096,
        };
        let mut b = Vec::new();
        h.encode_varint(&mut b);
        assert_eq!(BlockHandle::decode_varint(&b), Ok(h));
        b.push(0);
        assert!(BlockHandle::decode_varint(&b).is_err(), "trailing byte");
        assert!(h.check((1 << 40) + 4096 + 5).is_ok());
        assert!(h.check((1 << 40) + 4096 + 4).is_err());
        let huge = BlockHandle {
            offset: u64::MAX - 2,
            size: 1,
        };
        assert!(huge.check(u64::MAX).is_err(), "the end overflows");
    }

    #[test]
    fn trailers_check_bytes_and_type() {
        let stored = b"some block bytes".to_vec();
        for kind in [Compression::None, Compression::Lz4] {
            let mut b = stored.clone();
            b.extend(block_trailer(&stored, kind));
            assert_eq!(check_block(&b), Ok((&stored[..], kind)));
            for (bit, flipped) in bit_flips(&b) {
                assert!(check_block(&flipped).is_err(), "flip of bit {bit} accepted");
            }
        }
        let mut unknown = stored.clone();
        let mut t = block_trailer(&stored, Compression::None);
        t[0] = 7;
        t[1..5].copy_from_slice(&trailer_crc(&stored, 7).to_le_bytes());
        unknown.extend(t);
        assert_eq!(
            check_block(&unknown),
            Err(FormatError::Invalid("block compression"))
        );
        assert!(check_block(&[0; 4]).is_err());
    }

    #[test]
    fn lz4_round_trips_and_refuses_inflated_lengths() {
        let raw: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        let mut stored = Vec::new();
        compress_lz4(&raw, &mut stored);
        assert!(stored.len() < raw.len() / 4);
        let (len, payload) = lz4_parts(&stored).unwrap();
        let mut out = vec![0; len];
        decompress_lz4(payload, &mut out).unwrap();
        assert_eq!(out, raw);
        let mut short = vec![0; len - 1];
        assert!(decompress_lz4(payload, &mut short).is_err());
        let mut forged = Vec::new();
        put_varint(&mut forged, 1 << 40);
        forged.extend_from_slice(payload);
        assert!(lz4_parts(&forged).is_err());
        let mut zeros = Vec::new();
        compress_lz4(&vec![0; 1 << 20], &mut zeros);
        assert!(
            lz4_parts(&zeros).is_ok(),
            "the most compressible input is accepted"
        );
    }

    #[test]
    fn footer_round_trips() {
        assert_eq!(Footer::decode(&FOOTER.encode()), Ok(FOOTER));
        let no_filter = Footer {
            filter: None,
            ..FOOTER
        };
        assert_eq!(Footer::decode(&no_filter.encode()), Ok(no_filter));
        assert_eq!(&FOOTER.encode()[56..], b"PMDBSSTF");
    }

    #[test]
    fn every_bit_flip_of_the_footer_is_detected() {
        for (bit, b) in bit_flips(&FOOTER.encode()) {
            assert!(Footer::decode(&b).is_err(), "flip of bit {bit} accepted");
        }
    }

    #[test]
    fn footers_of_other_lengths_versions_and_files_are_refused() {
        let b = FOOTER.encode();
        assert!(matches!(
            Footer::decode(&b[..FOOTER_LEN - 1]),
            Err(FormatError::Truncated { .. })
        ));
        assert!(Footer::decode(&[&b[..], &[0]].concat()).is_err());
        assert_eq!(Footer::decode(&[0; FOOTER_LEN]), Err(FormatError::BadMagic));
        let mut v2 = b;
        v2[48] = 2;
        let crc = crc32fast::hash(&v2[..FOOTER_BODY]);
        v2[52..56].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(
            Footer::decode(&v2),
            Err(FormatError::Invalid("sst format version"))
        );
    }

    #[test]
    fn properties_round_trip() {
        let p = properties();
        assert_eq!(Properties::decode(&p.encode()), Ok(p.clone()));
        let empty = Properties {
            format_version: PROPERTIES_VERSION,
            identity: Some(IDENTITY),
            ..Properties::default()
        };
        assert_eq!(Properties::decode(&empty.encode()), Ok(empty));
    }

    #[test]
    fn version_1_properties_are_read_without_an_identity() {
        let v1 = Properties {
            format_version: PROPERTIES_V1,
            identity: None,
            ..properties()
        };
        let bytes = v1.encode();
        assert_eq!(
            bytes.len(),
            PROPERTIES_FIXED_V1 + v1.smallest.len() + v1.largest.len()
        );
        assert_eq!(Properties::decode(&bytes), Ok(v1));
        let v2 = properties().encode();
        assert_eq!(v2.len(), bytes.len() + 32);
        assert_eq!(&v2[72..88], b"0123456789abcdef");
        assert_eq!(u64_at(&v2, 88), 54);
        assert_eq!(u32_at(&v2, 96), 3);
        let mut padded = v2.clone();
        padded[101] = 1;
        assert!(Properties::decode(&padded).is_err(), "identity padding");
    }

    #[test]
    fn inconsistent_properties_are_refused() {
        type Damage = fn(&mut Properties);
        let damages: [Damage; 8] = [
            |p| p.format_version = 3,
            |p| p.tombstones = p.entries + 1,
            |p| p.data_blocks = 0,
            |p| p.min_seq = p.max_seq + 1,
            |p| p.max_seq = MAX_SEQ + 1,
            |p| p.smallest.truncate(3),
            |p| std::mem::swap(&mut p.smallest, &mut p.largest),
            |p| {
                p.entries = 0;
                p.tombstones = 0;
            },
        ];
        for (i, damage) in damages.iter().enumerate() {
            let mut p = properties();
            damage(&mut p);
            assert!(
                Properties::decode(&p.encode()).is_err(),
                "damage {i} accepted"
            );
        }
        let mut b = properties().encode();
        b.push(0);
        assert!(Properties::decode(&b).is_err(), "trailing byte");
        let mut b = properties().encode();
        b[64..68].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Properties::decode(&b).is_err(), "oversize key length");
    }

    #[test]
    fn filters_round_trip_and_are_bounded() {
        let f = FilterBlock {
            hashes: 7,
            words: vec![1, u64::MAX, 0x0123_4567_89ab_cdef],
        };
        assert_eq!(FilterBlock::decode(&f.encode()), Ok(f.clone()));
        let b = f.encode();
        for (at, value) in [(0, 2u8), (1, 0), (1, 31), (2, 1), (7, 1)] {
            let mut d = b.clone();
            d[at] = value;
            assert!(FilterBlock::decode(&d).is_err(), "{value} at {at} accepted");
        }
        assert!(FilterBlock::decode(&b[..b.len() - 1]).is_err());
        assert!(
            FilterBlock::decode(&b[..FILTER_HEADER]).is_err(),
            "no words"
        );
    }

    proptest! {
        #![proptest_config(fuzz_config())]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(f) = Footer::decode(&bytes) {
                prop_assert_eq!(&f.encode()[..], &bytes[..]);
            }
            if let Ok(p) = Properties::decode(&bytes) {
                prop_assert_eq!(p.encode(), bytes.clone());
            }
            if let Ok(f) = FilterBlock::decode(&bytes) {
                prop_assert_eq!(f.encode(), bytes.clone());
            }
            if let Ok(h) = BlockHandle::decode_varint(&bytes) {
                let _ = h.check(u64::MAX);
            }
            let _ = check_block(&bytes);
            if let Ok((len, payload)) = lz4_parts(&bytes) {
                let mut out = vec![0; len];
                let _ = decompress_lz4(payload, &mut out);
            }
            let (mut at, mut n) = (0, 0);
            while get_varint(&bytes, &mut at).is_ok() {
                n += 1;
            }
            prop_assert!(n <= bytes.len());
        }

        #[test]
        fn arbitrary_footers_round_trip(
            fields in prop::array::uniform6(any::<u64>()),
            has_filter in any::<bool>(),
        ) {
            let f = Footer {
                index: BlockHandle { offset: fields[0], size: fields[1] },
                filter: has_filter.then_some(BlockHandle { offset: fields[2], size: fields[3] | 1 }),
                properties: BlockHandle { offset: fields[4], size: fields[5] },
            };
            prop_assert_eq!(Footer::decode(&f.encode()), Ok(f));
        }

        #[test]
        fn arbitrary_lz4_input_round_trips(raw in prop::collection::vec(0..4u8, 0..2000)) {
            let mut stored = Vec::new();
            compress_lz4(&raw, &mut stored);
            let (len, payload) = lz4_parts(&stored).unwrap();
            let mut out = vec![0; len];
            decompress_lz4(payload, &mut out).unwrap();
            prop_assert_eq!(out, raw);
        }
    }
}
