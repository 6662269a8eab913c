//! The catalog: the engine's persistent metadata, reachable from the pool's root area.
//!
//! Root words: 0 the engine magic (published last at create), then three root cells
//! (`format::root`, each value kept twice with a check word): the catalog's owner, the
//! highest commit group recovery has confirmed complete, and how far the manifest is
//! durable (0 until a manifest is first written; four zero words in a database made
//! before the cell). The catalog is every zone
//! its owner holds, each an object pool of slots (`format::catalog`), in address order;
//! it grows by a zone when every slot is taken. A slot is either a subtable, whose
//! dropped word is the commit point of its drop, or a memtable, whose head word is the
//! 8-byte publish point of the log-free commit.

use parking_lot::{Mutex, RwLock};
use pmdb_pmem::{ObjPool, ObjSlot, OwnerId, PmOff, Pool};

use crate::error::{DbError, Result};
use crate::format::MAX_SEQ;
pub use crate::format::catalog::MAX_NAME;
use crate::format::catalog::{
    CatalogSlot, DROPPED, DROPPED_AT, GI_AT, HEAD_AT, MemtableSlot, SLOT_SIZE, SubtableSlot,
};
use crate::format::manifest::ManifestMark;
use crate::format::root::{CELL_WORDS, RootCell};

/// Identifies the engine's format; "PMDBENG3": catalog slots carry a crc, root words are
/// checked cells and the catalog is every zone of its owner.
pub(crate) const ENGINE_MAGIC: u64 = u64::from_le_bytes(*b"PMDBENG3");
const R_MAGIC: usize = 0;
/// First root word of the catalog owner's cell.
const R_CATALOG_OWNER: usize = 1;
/// First root word of the committed lsn's cell.
const R_COMMITTED_LSN: usize = R_CATALOG_OWNER + CELL_WORDS;
/// First root word of the manifest mark's cell.
const R_MANIFEST_MARK: usize = R_COMMITTED_LSN + CELL_WORDS;
/// The manifest mark's value until a manifest is written (no mark packs to it: a
/// manifest holds one edit at least).
const NO_MANIFEST: u64 = 0;

/// Where a slot is: the catalog zone (its place in the catalog's list, stable while the
/// database is open) and the slot in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotRef {
    zone: usize,
    index: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SubtableDesc {
    pub id: u32,
    pub name: String,
    /// The catalog slot holding it.
    pub slot: SlotRef,
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
    /// Address of the global-index word.
    pub gi_off: PmOff,
    /// The global-index generation it merged into (0: none), as the slot said when read.
    pub gi: u64,
    /// The catalog slot holding it.
    pub slot: SlotRef,
}

/// Every committed catalog slot that decodes, and what does not.
pub(crate) struct Entries {
    pub subtables: Vec<SubtableDesc>,
    pub memtables: Vec<MemtableDesc>,
    /// Catalog zones and slots that could not be read: whatever they name is unknown.
    pub damage: Vec<String>,
}

pub(crate) struct Catalog {
    owner: OwnerId,
    /// The catalog zones that could be read, in address order, then those added since.
    zones: RwLock<Vec<ObjPool>>,
    /// Serialises growth, so two writers finding the catalog full add one zone.
    grow: Mutex<()>,
    /// Catalog zones whose object pool header did not decode.
    damage: Vec<String>,
}

impl Catalog {
    /// Whether the pool holds an engine: `Ok(false)` for a pool never (fully) set up. A
    /// pool whose magic is 0 but which holds more than a create leaves before it
    /// publishes the magic (a catalog with entries, or owners besides the catalog's) has
    /// lost its root words to damage, and is refused rather than created over.
    pub fn exists(pool: &Pool, path: &str) -> Result<bool> {
        match pool.root(R_MAGIC) {
            ENGINE_MAGIC => Ok(true),
            0 => {
                let owners = pool.owners().len();
                let entries = owner_cell(pool)
                    .ok()
                    .and_then(OwnerId::from_raw)
                    .map_or(0, |owner| catalog_entries(pool, owner));
                if owners > 1 || entries > 0 {
                    return Err(DbError::Corrupt(format!(
                        "root word {R_MAGIC} (engine magic) is 0, but the pool holds {owners}                          owners and {entries} catalog entries: a database whose magic word is                          damaged; nothing was changed"
                    )));
                }
                Ok(false)
            }
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
        let catalog = Catalog {
            owner,
            zones: RwLock::new(Vec::new()),
            grow: Mutex::new(()),
            damage: Vec::new(),
        };
        catalog.add_zone(pool)?;
        publish_cell(pool, R_CATALOG_OWNER, owner.to_raw())?;
        publish_cell(pool, R_COMMITTED_LSN, 0)?;
        publish_cell(pool, R_MANIFEST_MARK, NO_MANIFEST)?;
        pool.publish_root(R_MAGIC, ENGINE_MAGIC)?;
        Ok(catalog)
    }

    /// Opens the catalog: every zone its owner holds. A catalog zone that does not
    /// decode is kept as damage (`entries` reports it), never skipped silently.
    pub fn open(pool: &Pool) -> Result<Catalog> {
        let raw = owner_cell(pool).map_err(DbError::Corrupt)?;
        let owner = OwnerId::from_raw(raw).ok_or_else(|| {
            DbError::Corrupt(format!("the catalog owner cell names no owner ({raw:#x})"))
        })?;
        let offs = pool.zones_of(owner);
        if offs.is_empty() {
            return Err(DbError::Corrupt(format!(
                "the catalog's {owner} holds no zone (is it live?): the catalog is lost"
            )));
        }
        let mut zones = Vec::with_capacity(offs.len());
        let mut damage = Vec::new();
        for off in offs {
            match ObjPool::open(pool, off) {
                Ok(objs) => zones.push(objs),
                Err(e) => damage.push(format!("catalog zone at {off}: {e}")),
            }
        }
        Ok(Catalog {
            owner,
            zones: RwLock::new(zones),
            grow: Mutex::new(()),
            damage,
        })
    }

    pub fn owner(&self) -> OwnerId {
        self.owner
    }

    /// Zones the catalog occupies.
    pub fn zone_count(&self) -> usize {
        self.zones.read().len() + self.damage.len()
    }

    /// The newest group recovery confirmed complete; bounded like every lsn, so the
    /// next one is representable. `Err` describes the damage.
    pub fn committed_lsn(pool: &Pool) -> Result<u64, String> {
        let lsn = read_cell(pool, R_COMMITTED_LSN)
            .map_err(|e| format!("root cell {R_COMMITTED_LSN} (committed lsn): {e}"))?;
        if lsn > MAX_SEQ {
            return Err(format!(
                "root cell {R_COMMITTED_LSN} (committed lsn) holds {lsn:#x}, beyond every lsn"
            ));
        }
        Ok(lsn)
    }

    pub fn publish_committed_lsn(pool: &Pool, lsn: u64) -> Result<()> {
        publish_cell(pool, R_COMMITTED_LSN, lsn)
    }

    /// How far the manifest is durable; `None` before a manifest was first written, and
    /// in a database made before the cell existed (four zero words). `Err` describes
    /// the damage.
    pub fn manifest_mark(pool: &Pool) -> Result<Option<ManifestMark>, String> {
        let words = manifest_cell_words(pool);
        if words == [0; CELL_WORDS] {
            return Ok(None);
        }
        let what = || format!("root cell {R_MANIFEST_MARK} (manifest mark)");
        match RootCell::decode(R_MANIFEST_MARK, words) {
            Ok(cell) if cell.value == NO_MANIFEST => Ok(None),
            Ok(cell) => ManifestMark::unpack(cell.value)
                .map(Some)
                .map_err(|e| format!("{}: {e}", what())),
            Err(e) => Err(format!("{}: {e}", what())),
        }
    }

    pub fn publish_manifest_mark(pool: &Pool, mark: ManifestMark) -> Result<()> {
        let word = mark
            .pack()
            .map_err(|e| DbError::Corrupt(format!("manifest {mark:?}: {e}")))?;
        if manifest_cell_words(pool) == [0; CELL_WORDS] {
            // A database made before the cell: its copies are zero, so neither verifies
            // and a torn first copy would be damage. Publishing "no manifest" changes
            // only check words (the value word stays zero), each one atomic store.
            publish_cell(pool, R_MANIFEST_MARK, NO_MANIFEST)?;
        }
        publish_cell(pool, R_MANIFEST_MARK, word)
    }

    /// Every committed subtable and memtable slot; a slot that does not decode is
    /// reported in `damage`, with the unreadable zones.
    pub fn entries(&self, pool: &Pool) -> Entries {
        let mut out = Entries {
            subtables: Vec::new(),
            memtables: Vec::new(),
            damage: self.damage.clone(),
        };
        for (zone, objs) in self.zones.read().iter().enumerate() {
            for (index, off, tag) in objs.live(pool) {
                let slot = SlotRef { zone, index };
                let decoded = pool
                    .read(off, SLOT_SIZE)
                    .map_err(DbError::from)
                    .and_then(|bytes| {
                        CatalogSlot::decode(tag, bytes).map_err(|e| DbError::Corrupt(e.to_string()))
                    });
                match decoded {
                    Ok(CatalogSlot::Subtable(s)) => out.subtables.push(SubtableDesc {
                        id: s.id,
                        name: s.name,
                        slot,
                        dropped: s.dropped,
                    }),
                    Ok(CatalogSlot::Memtable(m)) => match pool.load_u64(word_off(off, GI_AT)) {
                        // A generation is named by its first member, never a later one.
                        Ok(gi) if gi <= m.id => out.memtables.push(MemtableDesc {
                            id: m.id,
                            subtable: m.subtable,
                            owner: m.owner,
                            head_off: word_off(off, HEAD_AT),
                            gi_off: word_off(off, GI_AT),
                            gi,
                            slot,
                        }),
                        Ok(gi) => out.damage.push(format!(
                            "catalog slot at {off}: memtable {} names global-index generation {gi}, a later memtable",
                            m.id
                        )),
                        Err(e) => out.damage.push(format!("catalog slot at {off}: {e}")),
                    },
                    Err(e) => out
                        .damage
                        .push(format!("catalog slot at {off} (tag {tag:#x}): {e}")),
                }
            }
        }
        out.subtables.sort_by_key(|s| s.id);
        out.memtables.sort_by_key(|m| m.id);
        out
    }

    /// Reserves a free slot, growing the catalog by a zone when every slot is taken.
    fn slot(&self, pool: &Pool) -> Result<(usize, ObjSlot)> {
        if let Some(found) = self.free_slot() {
            return Ok(found);
        }
        let _growing = self.grow.lock();
        if let Some(found) = self.free_slot() {
            return Ok(found);
        }
        self.add_zone(pool)?;
        self.free_slot()
            .ok_or_else(|| DbError::Corrupt("a new catalog zone has no free slot".into()))
    }

    fn free_slot(&self) -> Option<(usize, ObjSlot)> {
        let zones = self.zones.read();
        zones
            .iter()
            .enumerate()
            .find_map(|(zone, objs)| objs.get().map(|slot| (zone, slot)))
    }

    /// Adds a zone to the catalog: allocated, formatted and persisted, then committed to
    /// the catalog's owner, which makes it part of the catalog. A crash before the
    /// commit leaves the zone free (its owner word was never written).
    fn add_zone(&self, pool: &Pool) -> Result<()> {
        let grant = pool.alloc_zone(self.owner)?;
        let objs = ObjPool::format(pool, &grant, SLOT_SIZE as u64)?;
        grant.commit()?;
        self.zones.write().push(objs);
        Ok(())
    }

    fn slot_off(&self, slot: SlotRef) -> Result<PmOff> {
        self.zones
            .read()
            .get(slot.zone)
            .map(|objs| objs.slot_off(slot.index))
            .ok_or_else(|| DbError::Corrupt(format!("no catalog zone {}", slot.zone)))
    }

    /// Persists a subtable slot, then commits it.
    pub fn add_subtable(&self, pool: &Pool, id: u32, name: &str) -> Result<SubtableDesc> {
        let entry = SubtableSlot {
            id,
            name: name.into(),
            dropped: false,
        };
        let (slot, _) = self.commit_slot(pool, &CatalogSlot::Subtable(entry))?;
        Ok(SubtableDesc {
            id,
            name: name.into(),
            slot,
            dropped: false,
        })
    }

    /// Records that `memtable` merged into global-index generation `gi`: one 8-byte
    /// publish.
    pub fn set_gi(pool: &Pool, memtable: &MemtableDesc, gi: u64) -> Result<()> {
        pool.publish_u64(memtable.gi_off, gi)?;
        Ok(())
    }

    /// Commits the drop of the subtable in `slot`: one 8-byte publish.
    pub fn mark_dropped(&self, pool: &Pool, slot: SlotRef) -> Result<()> {
        let word = self
            .slot_off(slot)?
            .checked_add(DROPPED_AT as u64)
            .expect("inside the slot");
        pool.publish_u64(word, DROPPED)?;
        Ok(())
    }

    /// Frees a slot (one 8-byte publish); what it named is no longer reachable.
    pub fn free(&self, pool: &Pool, slot: SlotRef) -> Result<()> {
        let zones = self.zones.read();
        let objs = zones
            .get(slot.zone)
            .ok_or_else(|| DbError::Corrupt(format!("no catalog zone {}", slot.zone)))?;
        objs.free(pool, slot.index)?;
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
        let entry = MemtableSlot {
            id,
            subtable,
            owner,
        };
        let (slot, off) = self.commit_slot(pool, &CatalogSlot::Memtable(entry))?;
        Ok(MemtableDesc {
            id,
            subtable,
            owner,
            head_off: word_off(off, HEAD_AT),
            gi_off: word_off(off, GI_AT),
            gi: 0,
            slot,
        })
    }

    fn commit_slot(&self, pool: &Pool, entry: &CatalogSlot) -> Result<(SlotRef, PmOff)> {
        let (zone, slot) = self.slot(pool)?;
        let zones = self.zones.read();
        let objs = &zones[zone];
        let off = slot.off();
        let index = slot.index();
        let rec = entry.encode();
        let written = pool
            .write(off, &rec)
            .and_then(|_| pool.persist(off, rec.len()));
        match written {
            Ok(()) => {
                objs.commit(pool, slot, entry.tag())?;
                Ok((SlotRef { zone, index }, off))
            }
            Err(e) => {
                objs.unget(slot);
                Err(e.into())
            }
        }
    }
}

/// The value of the cell at root word `cell`, or why it does not verify.
fn read_cell(pool: &Pool, cell: usize) -> Result<u64, crate::format::FormatError> {
    let words = std::array::from_fn(|i| pool.root(cell + i));
    RootCell::decode(cell, words).map(|c| c.value)
}

fn manifest_cell_words(pool: &Pool) -> [u64; CELL_WORDS] {
    std::array::from_fn(|i| pool.root(R_MANIFEST_MARK + i))
}

/// The catalog owner's raw id, or why its cell does not verify.
fn owner_cell(pool: &Pool) -> Result<u64, String> {
    read_cell(pool, R_CATALOG_OWNER)
        .map_err(|e| format!("root cell {R_CATALOG_OWNER} (catalog owner): {e}"))
}

/// Committed slots in the catalog zones of `owner` that decode as object pools.
fn catalog_entries(pool: &Pool, owner: OwnerId) -> usize {
    pool.zones_of(owner)
        .into_iter()
        .filter_map(|off| ObjPool::open(pool, off).ok())
        .map(|objs| objs.live(pool).len())
        .sum()
}

/// Publishes `value` in the cell at root word `cell`: the copy readers do not take now
/// first, then the other, each word one 8-byte publish (`format::root`).
fn publish_cell(pool: &Pool, cell: usize, value: u64) -> Result<()> {
    let current = {
        let words = std::array::from_fn(|i| pool.root(cell + i));
        RootCell::decode(cell, words).ok()
    };
    let first = RootCell::write_first(current);
    for copy in [first, first.other()] {
        let words = RootCell::encode_copy(cell, copy, value);
        for (i, word) in words.into_iter().enumerate() {
            pool.publish_root(cell + copy.at() + i, word)?;
        }
    }
    Ok(())
}

/// Address of the head word of the memtable slot at `slot`.
/// Address of the word at `at` in the slot at `slot`.
fn word_off(slot: PmOff, at: usize) -> PmOff {
    slot.checked_add(at as u64).expect("inside the slot")
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

#[cfg(test)]
mod tests {
    //! The root cells' publish order at every crash point: from a cell never written,
    //! and from every state such a crash leaves — a copy torn among them.

    use std::sync::Arc;

    use pmdb_pmem::{AckLog, CrashTest, Pool};

    use super::*;

    const CELL: usize = R_COMMITTED_LSN;

    fn cell_words(pool: &Pool) -> [u64; CELL_WORDS] {
        std::array::from_fn(|i| pool.root(CELL + i))
    }

    fn value(words: [u64; CELL_WORDS]) -> Option<u64> {
        RootCell::decode(CELL, words).ok().map(|c| c.value)
    }

    /// Writes `start` into the cell word by word, acknowledges what it reads as, then
    /// publishes each of `values`, acknowledging each.
    fn publishes(
        start: [u64; CELL_WORDS],
        values: &'static [u64],
    ) -> impl Fn(&Arc<Pool>, &mut AckLog<Option<u64>>) {
        move |pool, acks| {
            for (i, word) in start.into_iter().enumerate() {
                pool.publish_root(CELL + i, word).unwrap();
            }
            acks.ack(value(start));
            for &v in values {
                publish_cell(pool, CELL, v).unwrap();
                acks.ack(Some(v));
            }
        }
    }

    /// The cell reads as the last value acknowledged or the one in flight; before the
    /// start is acknowledged it may read as anything.
    fn holds_an_acknowledged_value(
        pool: &Pool,
        acked: &[&Option<u64>],
        in_flight: Option<&Option<u64>>,
    ) -> Result<(), String> {
        let Some(&&last) = acked.last() else {
            return Ok(());
        };
        let got = value(cell_words(pool));
        if got == last || in_flight.is_some_and(|&v| v == got) {
            Ok(())
        } else {
            Err(format!(
                "cell reads {got:?} (words {:x?}); acknowledged {last:?}, in flight {in_flight:?}",
                cell_words(pool)
            ))
        }
    }

    #[test]
    fn a_root_cell_holds_the_old_or_the_new_value_at_every_crash_point() {
        let images = std::cell::Cell::new(0);
        let outer = CrashTest::new(1).mixes(4).run(
            publishes([0; CELL_WORDS], &[1, 2, 3]),
            |pool, acked, in_flight| {
                holds_an_acknowledged_value(pool, acked, in_flight)?;
                // Whatever this crash left (a copy torn, the copies apart), the next
                // publishes must keep the cell readable at every crash point too.
                let start = cell_words(pool);
                if value(start).is_none() {
                    return Ok(());
                }
                let inner = CrashTest::new(2)
                    .mixes(4)
                    .run(publishes(start, &[10, 11]), |pool, acked, in_flight| {
                        holds_an_acknowledged_value(pool, acked, in_flight)
                    })
                    .map_err(|f| format!("from {start:x?}: {f}"))?;
                images.set(images.get() + inner.images);
                Ok(())
            },
        );
        let outer = outer.unwrap_or_else(|f| panic!("{f}"));
        assert!(outer.images >= 40, "{outer:?}");
        assert!(
            images.get() >= 1000,
            "{} images after a first crash",
            images.get()
        );
    }
}
