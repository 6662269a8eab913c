//! The catalog: the engine's persistent metadata, reachable from the pool's root area.
//!
//! Root words: 0 the engine magic (published last at create), 1 the catalog zone,
//! 2 the catalog's owner, 3 the highest commit group recovery has confirmed complete.
//! The catalog zone is an object pool of slots (`format::catalog`); a slot is either a
//! subtable, whose dropped word is the commit point of its drop, or a memtable, whose
//! head word is the 8-byte publish point of the log-free commit.

use pmdb_pmem::{ObjPool, OwnerId, PmOff, Pool};

use crate::error::{DbError, Result};
use crate::format::MAX_SEQ;
pub use crate::format::catalog::MAX_NAME;
use crate::format::catalog::{
    CatalogSlot, DROPPED, DROPPED_AT, HEAD_AT, MemtableSlot, SLOT_SIZE, SubtableSlot,
};

/// Identifies the engine's format; "PMDBENG2": catalog slots carry a crc.
pub(crate) const ENGINE_MAGIC: u64 = u64::from_le_bytes(*b"PMDBENG2");
const R_MAGIC: usize = 0;
const R_CATALOG_ZONE: usize = 1;
const R_CATALOG_OWNER: usize = 2;
const R_COMMITTED_LSN: usize = 3;

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
    /// Address of the head word (`format::head`).
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
        let objs = ObjPool::format(pool, &grant, SLOT_SIZE as u64)?;
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

    /// The newest group recovery confirmed complete; bounded like every lsn, so the
    /// next one is representable.
    pub fn committed_lsn(pool: &Pool) -> Result<u64> {
        let lsn = pool.root(R_COMMITTED_LSN);
        if lsn > MAX_SEQ {
            return Err(DbError::Corrupt(format!(
                "root word {R_COMMITTED_LSN} (committed lsn) holds {lsn:#x}"
            )));
        }
        Ok(lsn)
    }

    pub fn publish_committed_lsn(pool: &Pool, lsn: u64) {
        pool.publish_root(R_COMMITTED_LSN, lsn);
    }

    /// Every committed subtable and memtable slot.
    pub fn entries(&self, pool: &Pool) -> Result<(Vec<SubtableDesc>, Vec<MemtableDesc>)> {
        let mut subtables = Vec::new();
        let mut memtables = Vec::new();
        for (index, off, tag) in self.objs.live(pool) {
            let bytes = pool.read(off, SLOT_SIZE)?;
            let slot = CatalogSlot::decode(tag, bytes).map_err(|e| {
                DbError::Corrupt(format!("catalog slot at {off} (tag {tag:#x}): {e}"))
            })?;
            match slot {
                CatalogSlot::Subtable(s) => subtables.push(SubtableDesc {
                    id: s.id,
                    name: s.name,
                    slot: index,
                    dropped: s.dropped,
                }),
                CatalogSlot::Memtable(m) => memtables.push(MemtableDesc {
                    id: m.id,
                    subtable: m.subtable,
                    owner: m.owner,
                    head_off: head_off(off),
                    slot: index,
                }),
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
        let entry = SubtableSlot {
            id,
            name: name.into(),
            dropped: false,
        };
        self.commit_slot(pool, slot, &CatalogSlot::Subtable(entry))?;
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
            .checked_add(DROPPED_AT as u64)
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
        let head_off = head_off(slot.off());
        let entry = MemtableSlot {
            id,
            subtable,
            owner,
        };
        self.commit_slot(pool, slot, &CatalogSlot::Memtable(entry))?;
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
        entry: &CatalogSlot,
    ) -> Result<()> {
        let off = slot.off();
        let rec = entry.encode();
        let written = pool
            .write(off, &rec)
            .and_then(|_| pool.persist(off, rec.len()));
        match written {
            Ok(()) => {
                self.objs.commit(pool, slot, entry.tag())?;
                Ok(())
            }
            Err(e) => {
                self.objs.unget(slot);
                Err(e.into())
            }
        }
    }
}

/// Address of the head word of the memtable slot at `slot`.
fn head_off(slot: PmOff) -> PmOff {
    slot.checked_add(HEAD_AT as u64).expect("inside the slot")
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
