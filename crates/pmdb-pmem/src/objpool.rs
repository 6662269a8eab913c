//! Small object pools: one zone cut into fixed-size slots for metadata records
//! (subtable and memtable descriptors and the like), each slot with an 8-byte state word.
//!
//! Same protocol as zones: `get` reserves a slot in DRAM → the caller writes and persists
//! the record → `commit` publishes a non-zero tag in the slot's state word (flushed and
//! fenced). `free` stores 0. After a crash a slot is live exactly when its state word is
//! non-zero, so a record is never half there.

use parking_lot::Mutex;

use crate::error::{PmemError, Result};
use crate::halloc::ZoneGrant;
use crate::layout::align_up;
use crate::off::PmOff;
use crate::pool::Pool;

const MAGIC: [u8; 8] = *b"PMDBOBJP";
const HEADER_LEN: u64 = 64;

/// A reserved slot, not yet committed.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "commit the slot or give it back with `ObjPool::unget`"]
pub struct ObjSlot {
    index: u32,
    off: PmOff,
}

impl ObjSlot {
    pub fn off(&self) -> PmOff {
        self.off
    }

    pub fn index(&self) -> u32 {
        self.index
    }
}

/// An object pool occupying one zone.
#[derive(Debug)]
pub struct ObjPool {
    base: PmOff,
    slot_size: u64,
    slots: u32,
    free: Mutex<Vec<u32>>,
}

impl ObjPool {
    /// Lays out an object pool in a granted (not yet committed) zone and persists the
    /// layout; commit the grant afterwards. `slot_size` is rounded up to 8 bytes.
    pub fn format(pool: &Pool, grant: &ZoneGrant<'_>, slot_size: u64) -> Result<ObjPool> {
        let slot_size = align_up(slot_size.max(8), 8);
        let slots = slots_for(grant.len(), slot_size);
        if slots == 0 {
            return Err(PmemError::InvalidOption {
                name: "slot_size",
                reason: format!("{slot_size} bytes leaves no slot in a zone"),
            });
        }
        let base = grant.off();
        let mut header = [0u8; HEADER_LEN as usize];
        header[0..8].copy_from_slice(&MAGIC);
        header[8..16].copy_from_slice(&slot_size.to_le_bytes());
        header[16..20].copy_from_slice(&slots.to_le_bytes());
        let crc = crc32fast::hash(&header[..20]);
        header[20..24].copy_from_slice(&crc.to_le_bytes());
        pool.write(base, &header)?;
        let states = base.checked_add(HEADER_LEN).expect("inside the zone");
        pool.fill(states, slots as usize * 8, 0)?;
        pool.persist(base, (HEADER_LEN + slots as u64 * 8) as usize)?;
        Ok(ObjPool::with_free(
            base,
            slot_size,
            slots,
            (0..slots).rev().collect(),
        ))
    }

    /// Opens the object pool in the committed zone at `base`, rebuilding the free list
    /// from the state words.
    pub fn open(pool: &Pool, base: PmOff) -> Result<ObjPool> {
        let corrupt = |reason: String| PmemError::Corrupt {
            path: format!("object pool at {base}").into(),
            reason,
        };
        let header = pool.read(base, HEADER_LEN as usize)?;
        if header[0..8] != MAGIC {
            return Err(corrupt("no object pool header".into()));
        }
        let crc = u32::from_le_bytes(header[20..24].try_into().unwrap());
        if crc32fast::hash(&header[..20]) != crc {
            return Err(corrupt("header checksum mismatch".into()));
        }
        let slot_size = u64::from_le_bytes(header[8..16].try_into().unwrap());
        let slots = u32::from_le_bytes(header[16..20].try_into().unwrap());
        if slot_size == 0
            || !slot_size.is_multiple_of(8)
            || slots != slots_for(pool.zone_size(), slot_size)
        {
            return Err(corrupt(format!("slot size {slot_size} with {slots} slots")));
        }
        let free = (0..slots)
            .rev()
            .filter(|&i| pool.load_u64(state_off(base, i)).unwrap_or(0) == 0)
            .collect();
        Ok(ObjPool::with_free(base, slot_size, slots, free))
    }

    fn with_free(base: PmOff, slot_size: u64, slots: u32, free: Vec<u32>) -> ObjPool {
        ObjPool {
            base,
            slot_size,
            slots,
            free: Mutex::new(free),
        }
    }

    pub fn slot_size(&self) -> u64 {
        self.slot_size
    }

    pub fn capacity(&self) -> u32 {
        self.slots
    }

    /// Address of slot `index`'s record.
    pub fn slot_off(&self, index: u32) -> PmOff {
        let first = align_up(HEADER_LEN + self.slots as u64 * 8, 64);
        self.base
            .checked_add(first + index as u64 * self.slot_size)
            .expect("inside the zone")
    }

    /// Reserves a free slot (DRAM only); `None` when all are taken.
    pub fn get(&self) -> Option<ObjSlot> {
        let index = self.free.lock().pop()?;
        Some(ObjSlot {
            index,
            off: self.slot_off(index),
        })
    }

    /// Returns a reserved slot unused.
    pub fn unget(&self, slot: ObjSlot) {
        self.free.lock().push(slot.index);
    }

    /// Publishes a reserved slot with a non-zero `tag`; its record must be persisted.
    pub fn commit(&self, pool: &Pool, slot: ObjSlot, tag: u64) -> Result<PmOff> {
        if tag == 0 {
            return Err(PmemError::InvalidOption {
                name: "tag",
                reason: "an object's tag must be non-zero".into(),
            });
        }
        pool.publish_u64(state_off(self.base, slot.index), tag)?;
        Ok(slot.off)
    }

    /// Frees a committed slot (its state word becomes 0, flushed and fenced).
    pub fn free(&self, pool: &Pool, index: u32) -> Result<()> {
        if index >= self.slots {
            return Err(PmemError::OutOfBounds {
                off: self.slot_off(0),
                len: index as u64 * self.slot_size,
            });
        }
        pool.publish_u64(state_off(self.base, index), 0)?;
        self.free.lock().push(index);
        Ok(())
    }

    /// Committed slots as (index, record address, tag).
    pub fn live(&self, pool: &Pool) -> Vec<(u32, PmOff, u64)> {
        (0..self.slots)
            .filter_map(|i| {
                let tag = pool.load_u64(state_off(self.base, i)).unwrap_or(0);
                (tag != 0).then(|| (i, self.slot_off(i), tag))
            })
            .collect()
    }
}

fn state_off(base: PmOff, index: u32) -> PmOff {
    base.checked_add(HEADER_LEN + index as u64 * 8)
        .expect("inside the zone")
}

/// Slots of `slot_size` bytes (with their state words) that fit in a zone.
fn slots_for(zone_size: u64, slot_size: u64) -> u32 {
    let mut n = (zone_size - HEADER_LEN) / (slot_size + 8);
    while n > 0 && align_up(HEADER_LEN + n * 8, 64) + n * slot_size > zone_size {
        n -= 1;
    }
    n.min(u32::MAX as u64) as u32
}
