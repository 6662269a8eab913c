//! The catalog: the engine's persistent metadata, reachable from the pool's root area.
//!
//! Root words: 0 the engine magic (published last at create), 1 the catalog zone,
//! 2 the catalog's owner, 3 the highest commit group recovery has confirmed complete.
//! The catalog zone is an object pool of 256-byte slots; a slot is either a subtable
//! (id, name, dropped word) or a memtable (id, subtable, owner, head word). A memtable's
//! head word is the 8-byte publish point of the log-free commit; a subtable's dropped
//! word is the commit point of its drop.

use pmdb_pmem::{ObjPool, OwnerId, PmOff, Pool};

use crate::error::{DbError, Result};

pub(crate) const ENGINE_MAGIC: u64 = u64::from_le_bytes(*b"PMDBENG1");
const R_MAGIC: usize = 0;
const R_CATALOG_ZONE: usize = 1;
const R_CATALOG_OWNER: usize = 2;
const R_COMMITTED_LSN: usize = 3;

const SLOT_SIZE: u64 = 256;
const TAG_SHIFT: u32 = 56;
const TAG_SUBTABLE: u64 = 1;
const TAG_MEMTABLE: u64 = 2;
/// Longest subtable name, in bytes.
pub const MAX_NAME: usize = 200;
const HEAD_AT: u64 = 24;
/// Where a subtable slot keeps its dropped word, and the value that word takes.
const DROPPED_AT: u64 = 248;
const DROPPED: u64 = u64::from_le_bytes(*b"DROPPED!");

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SubtableDesc {
    pub id: u32,
    pub name: String,
    /// The catalog slot holding it.
    pub slot: u32,
    /// A drop was committed but not finished (recovery finishes it).
    pub dropped: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemtableDesc {
    pub id: u64,
    pub subtable: u32,
    pub owner: OwnerId,
    /// Address of the head word: (previous position << 32) | current position.
    pub head_off: PmOff,
    /// The catalog slot holding it.
    pub slot: u32,
}

pub(crate) struct Catalog {
    objs: ObjPool,
    owner: OwnerId,
}

impl Catalog {
    /// Whether the pool holds an engine: `Ok(false)` for a pool never (fully) set up.
    pub fn exists(pool: &Pool, path: &str) -> Result<bool> {
        match pool.root(R_MAGIC) {
            ENGINE_MAGIC => Ok(true),
            0 => Ok(false),
            found => Err(DbError::NotADatabase {
                path: path.into(),
                found,
            }),
        }
    }

    /// Lays out a new catalog; the engine magic is published last, so a crash leaves
    /// either a complete catalog or a pool whose leftovers recovery frees.
    pub fn create(pool: &Pool) -> Result<Catalog> {
        pool.retain_owners(|_| false)?;
        let owner = pool.create_owner()?;
        let grant = pool.alloc_zone(owner)?;
        let objs = ObjPool::format(pool, &grant, SLOT_SIZE)?;
        let zone = grant.commit()?;
        pool.publish_root(R_CATALOG_OWNER, owner.to_raw());
        pool.publish_root(R_CATALOG_ZONE, zone.to_raw());
        pool.publish_root(R_COMMITTED_LSN, 0);
        pool.publish_root(R_MAGIC, ENGINE_MAGIC);
        Ok(Catalog { objs, owner })
    }

    pub fn open(pool: &Pool) -> Result<Catalog> {
        let owner = OwnerId::from_raw(pool.root(R_CATALOG_OWNER))
            .ok_or_else(|| DbError::Corrupt("catalog owner missing from the root".into()))?;
        let zone = PmOff::from_raw(pool.root(R_CATALOG_ZONE));
        let objs = ObjPool::open(pool, zone)?;
        Ok(Catalog { objs, owner })
    }

    pub fn owner(&self) -> OwnerId {
        self.owner
    }

    pub fn committed_lsn(pool: &Pool) -> u64 {
        pool.root(R_COMMITTED_LSN)
    }

    pub fn publish_committed_lsn(pool: &Pool, lsn: u64) {
        pool.publish_root(R_COMMITTED_LSN, lsn);
    }

    /// Every committed subtable and memtable slot.
    pub fn entries(&self, pool: &Pool) -> Result<(Vec<SubtableDesc>, Vec<MemtableDesc>)> {
        let mut subtables = Vec::new();
        let mut memtables = Vec::new();
        for (slot, off, tag) in self.objs.live(pool) {
            let rec = pool.read(off, SLOT_SIZE as usize)?;
            match tag >> TAG_SHIFT {
                TAG_SUBTABLE => {
                    let id = u32::from_le_bytes(rec[0..4].try_into().unwrap());
                    let len = u16::from_le_bytes(rec[4..6].try_into().unwrap()) as usize;
                    let name = rec
                        .get(8..8 + len)
                        .and_then(|b| std::str::from_utf8(b).ok())
                        .ok_or_else(|| DbError::Corrupt(format!("subtable slot at {off}")))?;
                    let dropped =
                        pool.load_u64(off.checked_add(DROPPED_AT).expect("inside the slot"))?;
                    subtables.push(SubtableDesc {
                        id,
                        name: name.into(),
                        slot,
                        dropped: dropped == DROPPED,
                    });
                }
                TAG_MEMTABLE => {
                    let u64_at = |i: usize| u64::from_le_bytes(rec[i..i + 8].try_into().unwrap());
                    let owner = OwnerId::from_raw(u64_at(16)).ok_or_else(|| {
                        DbError::Corrupt(format!("memtable slot at {off} has no owner"))
                    })?;
                    memtables.push(MemtableDesc {
                        id: u64_at(0),
                        subtable: u32::from_le_bytes(rec[8..12].try_into().unwrap()),
                        owner,
                        head_off: off.checked_add(HEAD_AT).expect("inside the slot"),
                        slot,
                    });
                }
                other => {
                    return Err(DbError::Corrupt(format!(
                        "catalog slot at {off} has unknown kind {other}"
                    )));
                }
            }
        }
        subtables.sort_by_key(|s| s.id);
        memtables.sort_by_key(|m| m.id);
        Ok((subtables, memtables))
    }

    fn slot(&self) -> Result<pmdb_pmem::ObjSlot> {
        self.objs.get().ok_or(DbError::CatalogFull {
            slots: self.objs.capacity(),
        })
    }

    /// Persists a subtable slot, then commits it.
    pub fn add_subtable(&self, pool: &Pool, id: u32, name: &str) -> Result<SubtableDesc> {
        let slot = self.slot()?;
        let index = slot.index();
        let mut rec = [0u8; SLOT_SIZE as usize];
        rec[0..4].copy_from_slice(&id.to_le_bytes());
        rec[4..6].copy_from_slice(&(name.len() as u16).to_le_bytes());
        rec[8..8 + name.len()].copy_from_slice(name.as_bytes());
        self.commit_slot(pool, slot, &rec, (TAG_SUBTABLE << TAG_SHIFT) | id as u64)?;
        Ok(SubtableDesc {
            id,
            name: name.into(),
            slot: index,
            dropped: false,
        })
    }

    /// Commits the drop of the subtable in `slot`: one 8-byte publish.
    pub fn mark_dropped(&self, pool: &Pool, slot: u32) -> Result<()> {
        let word = self
            .objs
            .slot_off(slot)
            .checked_add(DROPPED_AT)
            .expect("inside the slot");
        pool.publish_u64(word, DROPPED)?;
        Ok(())
    }

    /// Frees a slot (one 8-byte publish); what it named is no longer reachable.
    pub fn free(&self, pool: &Pool, slot: u32) -> Result<()> {
        self.objs.free(pool, slot)?;
        Ok(())
    }

    /// Persists a memtable slot with an empty head, then commits it; returns its head word.
    pub fn add_memtable(
        &self,
        pool: &Pool,
        id: u64,
        subtable: u32,
        owner: OwnerId,
    ) -> Result<MemtableDesc> {
        let slot = self.slot()?;
        let index = slot.index();
        let head_off = slot.off().checked_add(HEAD_AT).expect("inside the slot");
        let mut rec = [0u8; SLOT_SIZE as usize];
        rec[0..8].copy_from_slice(&id.to_le_bytes());
        rec[8..12].copy_from_slice(&subtable.to_le_bytes());
        rec[16..24].copy_from_slice(&owner.to_raw().to_le_bytes());
        self.commit_slot(pool, slot, &rec, (TAG_MEMTABLE << TAG_SHIFT) | id)?;
        Ok(MemtableDesc {
            id,
            subtable,
            owner,
            head_off,
            slot: index,
        })
    }

    fn commit_slot(
        &self,
        pool: &Pool,
        slot: pmdb_pmem::ObjSlot,
        rec: &[u8],
        tag: u64,
    ) -> Result<()> {
        let off = slot.off();
        let written = pool
            .write(off, rec)
            .and_then(|_| pool.persist(off, rec.len()));
        match written {
            Ok(()) => {
                self.objs.commit(pool, slot, tag)?;
                Ok(())
            }
            Err(e) => {
                self.objs.unget(slot);
                Err(e.into())
            }
        }
    }
}

/// Checks a subtable name.
pub(crate) fn validate_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "it is empty".to_string()
    } else if name.len() > MAX_NAME {
        format!("it is {} bytes long; the limit is {MAX_NAME}", name.len())
    } else {
        return Ok(());
    };
    Err(DbError::InvalidName {
        name: name.into(),
        reason,
    })
}
