//! Catalog slots: the records of the catalog's object pool, one per subtable and one per
//! memtable. A slot is published by its 8-byte state word (the object pool's tag):
//! `kind << 56 | id`. The slot ends with a crc32 over the tag and the slot, so a slot
//! changed on the media, or a tag naming another slot's kind or id, is refused. Some words
//! are left out of the crc because they change after the slot is published, each by one
//! 8-byte store: a memtable slot's head word (rewritten by every commit) and its
//! global-index word (the generation it merged into), and a subtable slot's dropped word
//! (the commit point of a drop).

use pmdb_pmem::OwnerId;

use super::{FormatError, need, u16_at, u32_at, u64_at, zeroed};

/// Bytes of a catalog slot.
pub(crate) const SLOT_SIZE: usize = 256;
/// Longest subtable name, in bytes.
pub const MAX_NAME: usize = 200;
/// Offset of a memtable slot's head word.
pub(crate) const HEAD_AT: usize = 24;
const HEAD_END: usize = HEAD_AT + 8;
/// Offset of a memtable slot's global-index word: the id of the global-index generation
/// it merged into (its first member's id), 0 before it merged.
pub(crate) const GI_AT: usize = HEAD_END;
const GI_END: usize = GI_AT + 8;
/// Offset of a subtable slot's dropped word.
pub(crate) const DROPPED_AT: usize = 240;
const DROPPED_END: usize = DROPPED_AT + 8;
/// The dropped word of a subtable whose drop is committed ("DROPPED!").
pub(crate) const DROPPED: u64 = u64::from_le_bytes(*b"DROPPED!");
const CRC_AT: usize = SLOT_SIZE - 4;
const NAME_AT: usize = 8;

const KIND_SHIFT: u32 = 56;
const ID_MASK: u64 = (1 << KIND_SHIFT) - 1;
/// Highest memtable id: the tag holds it beside the kind.
pub(crate) const MAX_MEMTABLE_ID: u64 = ID_MASK;
const KIND_SUBTABLE: u64 = 1;
const KIND_MEMTABLE: u64 = 2;

/// What a subtable slot holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SubtableSlot {
    pub id: u32,
    pub name: String,
    /// Its drop is committed (the dropped word is set), not yet finished.
    pub dropped: bool,
}

/// What a memtable slot holds besides its head word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemtableSlot {
    /// Below 2^56: the tag holds it beside the kind.
    pub id: u64,
    pub subtable: u32,
    pub owner: OwnerId,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CatalogSlot {
    Subtable(SubtableSlot),
    Memtable(MemtableSlot),
}

impl CatalogSlot {
    /// The state word that publishes the slot.
    pub fn tag(&self) -> u64 {
        match self {
            CatalogSlot::Subtable(s) => (KIND_SUBTABLE << KIND_SHIFT) | s.id as u64,
            CatalogSlot::Memtable(m) => {
                debug_assert!(m.id <= ID_MASK, "memtable id {} does not fit a tag", m.id);
                (KIND_MEMTABLE << KIND_SHIFT) | m.id
            }
        }
    }

    /// The slot's bytes; a memtable's head word is 0, its value before the first commit,
    /// and so is a subtable's dropped word until it is dropped.
    pub fn encode(&self) -> [u8; SLOT_SIZE] {
        let mut b = [0u8; SLOT_SIZE];
        match self {
            CatalogSlot::Subtable(s) => {
                debug_assert!(s.name.len() <= MAX_NAME, "names are validated first");
                b[0..4].copy_from_slice(&s.id.to_le_bytes());
                b[4..6].copy_from_slice(&(s.name.len() as u16).to_le_bytes());
                b[NAME_AT..NAME_AT + s.name.len()].copy_from_slice(s.name.as_bytes());
                if s.dropped {
                    b[DROPPED_AT..DROPPED_END].copy_from_slice(&DROPPED.to_le_bytes());
                }
            }
            CatalogSlot::Memtable(m) => {
                b[0..8].copy_from_slice(&m.id.to_le_bytes());
                b[8..12].copy_from_slice(&m.subtable.to_le_bytes());
                b[16..24].copy_from_slice(&m.owner.to_raw().to_le_bytes());
            }
        }
        let crc = crc(self.tag(), &b);
        b[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes the slot published with `tag`.
    pub fn decode(tag: u64, b: &[u8]) -> Result<CatalogSlot, FormatError> {
        need(b, SLOT_SIZE)?;
        let kind = tag >> KIND_SHIFT;
        if kind != KIND_SUBTABLE && kind != KIND_MEMTABLE {
            return Err(FormatError::Invalid("catalog slot kind"));
        }
        if crc(tag, b) != u32_at(b, CRC_AT) {
            return Err(FormatError::Checksum);
        }
        let slot = if kind == KIND_SUBTABLE {
            CatalogSlot::Subtable(decode_subtable(b)?)
        } else {
            CatalogSlot::Memtable(decode_memtable(b)?)
        };
        if slot.tag() != tag {
            return Err(FormatError::Invalid(
                "catalog tag: its id is not the slot's",
            ));
        }
        Ok(slot)
    }
}

fn decode_subtable(b: &[u8]) -> Result<SubtableSlot, FormatError> {
    let id = u32_at(b, 0);
    // Ids are handed out upward from the highest one found: the next must exist.
    if id == u32::MAX {
        return Err(FormatError::Invalid("subtable id"));
    }
    let len = u16_at(b, 4) as usize;
    if !(1..=MAX_NAME).contains(&len) {
        return Err(FormatError::Invalid("subtable name length"));
    }
    zeroed(&b[6..NAME_AT], "subtable slot padding")?;
    zeroed(&b[NAME_AT + len..DROPPED_AT], "subtable slot padding")?;
    zeroed(&b[DROPPED_END..CRC_AT], "subtable slot padding")?;
    let dropped = match u64_at(b, DROPPED_AT) {
        0 => false,
        DROPPED => true,
        _ => return Err(FormatError::Invalid("subtable dropped word")),
    };
    let name = std::str::from_utf8(&b[NAME_AT..NAME_AT + len])
        .map_err(|_| FormatError::Invalid("subtable name: not UTF-8"))?;
    Ok(SubtableSlot {
        id,
        name: name.into(),
        dropped,
    })
}

fn decode_memtable(b: &[u8]) -> Result<MemtableSlot, FormatError> {
    let id = u64_at(b, 0);
    if id > ID_MASK {
        return Err(FormatError::Invalid("memtable id"));
    }
    zeroed(&b[12..16], "memtable slot padding")?;
    zeroed(&b[GI_END..CRC_AT], "memtable slot padding")?;
    Ok(MemtableSlot {
        id,
        subtable: u32_at(b, 8),
        owner: OwnerId::from_raw(u64_at(b, 16)).ok_or(FormatError::Invalid("memtable owner"))?,
    })
}

/// crc32 of the tag and the slot before its crc, but for the words that change after the
/// slot is published.
fn crc(tag: u64, b: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&tag.to_le_bytes());
    let (skip, skip_end) = if tag >> KIND_SHIFT == KIND_MEMTABLE {
        (HEAD_AT, GI_END)
    } else {
        (DROPPED_AT, DROPPED_END)
    };
    h.update(&b[..skip]);
    h.update(&b[skip_end..CRC_AT]);
    h.finalize()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::testing::{bit_flips, fuzz_config};
    use super::*;

    fn subtable() -> CatalogSlot {
        CatalogSlot::Subtable(SubtableSlot {
            id: 3,
            name: "users_by_email".into(),
            dropped: false,
        })
    }

    fn memtable() -> CatalogSlot {
        CatalogSlot::Memtable(MemtableSlot {
            id: 17,
            subtable: 3,
            owner: OwnerId::from_raw((5 << 24) | 9).unwrap(),
        })
    }

    #[test]
    fn round_trips() {
        let longest = CatalogSlot::Subtable(SubtableSlot {
            id: u32::MAX - 1,
            name: "é".repeat(MAX_NAME / 2),
            dropped: true,
        });
        for slot in [subtable(), memtable(), longest] {
            assert_eq!(CatalogSlot::decode(slot.tag(), &slot.encode()), Ok(slot));
        }
        assert_eq!(subtable().tag(), (1 << 56) | 3);
        assert_eq!(memtable().tag(), (2 << 56) | 17);
    }

    #[test]
    fn every_bit_flip_outside_the_head_word_is_detected() {
        for slot in [subtable(), memtable()] {
            let (tag, b) = (slot.tag(), slot.encode());
            let is_memtable = matches!(slot, CatalogSlot::Memtable(_));
            for (bit, d) in bit_flips(&b) {
                let in_head = is_memtable && (HEAD_AT..GI_END).contains(&(bit / 8));
                assert_eq!(
                    CatalogSlot::decode(tag, &d).is_ok(),
                    in_head,
                    "{slot:?}: flip of bit {bit}"
                );
            }
            for bit in 0..64 {
                assert!(
                    CatalogSlot::decode(tag ^ (1 << bit), &b).is_err(),
                    "{slot:?}: flip of tag bit {bit} accepted"
                );
            }
        }
    }

    #[test]
    fn the_head_word_is_not_part_of_the_slot() {
        let slot = memtable();
        let mut b = slot.encode();
        b[HEAD_AT..HEAD_END].copy_from_slice(&u64::MAX.to_le_bytes());
        b[GI_AT..GI_END].copy_from_slice(&17u64.to_le_bytes());
        assert_eq!(CatalogSlot::decode(slot.tag(), &b), Ok(slot));
    }

    #[test]
    fn a_drop_is_one_word_outside_the_crc() {
        let slot = subtable();
        let mut b = slot.encode();
        b[DROPPED_AT..DROPPED_END].copy_from_slice(&DROPPED.to_le_bytes());
        match CatalogSlot::decode(slot.tag(), &b) {
            Ok(CatalogSlot::Subtable(s)) => assert!(s.dropped && s.name == "users_by_email"),
            other => panic!("{other:?}"),
        }
        b[DROPPED_AT] ^= 1;
        assert!(CatalogSlot::decode(slot.tag(), &b).is_err());
    }

    #[test]
    fn short_slots_are_refused() {
        let slot = subtable();
        assert!(matches!(
            CatalogSlot::decode(slot.tag(), &slot.encode()[..SLOT_SIZE - 1]),
            Err(FormatError::Truncated { .. })
        ));
    }

    /// A slot whose crc matches but whose fields no encoder writes.
    fn sealed(tag: u64, mut b: [u8; SLOT_SIZE]) -> [u8; SLOT_SIZE] {
        let crc = crc(tag, &b);
        b[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    #[test]
    fn fields_no_encoder_writes_are_refused() {
        let sub = subtable();
        let (tag, b) = (sub.tag(), sub.encode());
        let mut no_name = b;
        no_name[4..6].fill(0);
        let mut long_name = b;
        long_name[4..6].copy_from_slice(&(MAX_NAME as u16 + 1).to_le_bytes());
        let mut not_utf8 = b;
        not_utf8[NAME_AT] = 0xff;
        for bad in [no_name, long_name, not_utf8] {
            assert!(CatalogSlot::decode(tag, &sealed(tag, bad)).is_err());
        }
        let mut last_id = b;
        last_id[0..4].fill(0xff);
        let last_tag = (KIND_SUBTABLE << KIND_SHIFT) | u32::MAX as u64;
        assert!(CatalogSlot::decode(last_tag, &sealed(last_tag, last_id)).is_err());

        let mem = memtable();
        let (tag, b) = (mem.tag(), mem.encode());
        let mut no_owner = b;
        no_owner[16..24].fill(0);
        assert!(CatalogSlot::decode(tag, &sealed(tag, no_owner)).is_err());
        let mut huge_id = b;
        huge_id[0..8].fill(0xff);
        let huge_tag = (KIND_MEMTABLE << KIND_SHIFT) | ID_MASK;
        assert!(CatalogSlot::decode(huge_tag, &sealed(huge_tag, huge_id)).is_err());
    }

    proptest! {
        #![proptest_config(fuzz_config())]

        #[test]
        fn arbitrary_bytes_never_panic(
            tag in any::<u64>(),
            bytes in prop::collection::vec(any::<u8>(), 0..300),
        ) {
            let _ = CatalogSlot::decode(tag, &bytes);
        }

        /// Arbitrary fields behind a valid crc reach every check after it.
        #[test]
        fn arbitrary_sealed_slots_never_panic(
            kind in 0u64..4,
            id in prop_oneof![any::<u64>(), 0..8u64],
            head in prop::array::uniform32(any::<u8>()),
            name_len in prop_oneof![any::<u16>(), 0..=MAX_NAME as u16 + 1],
            fill in any::<u8>(),
            zero_tail in any::<bool>(),
        ) {
            let tag = (kind << KIND_SHIFT) | (id & ID_MASK);
            let mut b = [if zero_tail { 0 } else { fill }; SLOT_SIZE];
            b[..32].copy_from_slice(&head);
            if kind == KIND_SUBTABLE {
                b[4..6].copy_from_slice(&name_len.to_le_bytes());
                b[NAME_AT..NAME_AT + name_len.min(MAX_NAME as u16) as usize].fill(fill & 0x7f);
            }
            let b = sealed(tag, b);
            if let Ok(slot) = CatalogSlot::decode(tag, &b) {
                prop_assert_eq!(slot.tag(), tag);
                let mut again = slot.encode();
                again[HEAD_AT..GI_END].copy_from_slice(&b[HEAD_AT..GI_END]);
                prop_assert_eq!(again, b);
            }
        }
    }
}
