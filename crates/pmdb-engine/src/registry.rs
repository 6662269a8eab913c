//! The subtable registry: the subtables that exist, by name and by id, each with its read
//! view; durable creation and drop through the catalog; and new memtables for subtables
//! whose active one is full.
//!
//! Drop protocol (each step one 8-byte publish, so a crash leaves a state recovery
//! finishes): mark the subtable's catalog slot dropped (the commit point), free its
//! memtables' slots, free its slot. The memtables' PM is released when the last reader
//! holding them lets go (see `Memtable::retire`), or by the next open's reachability
//! pass if the process stops first.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use pmdb_pmem::{PmemError, Pool};

use crate::catalog::{Catalog, SlotRef, SubtableDesc, validate_name};
use crate::error::{DbError, Result};
use crate::format::catalog::MAX_MEMTABLE_ID;
use crate::format::manifest::MAX_LEVEL;
use crate::memtable::Memtable;
use crate::view::{ReadView, ViewCell};

/// One subtable as the engine holds it.
pub(crate) struct SubtableState {
    pub id: u32,
    pub name: String,
    /// Its catalog slot.
    slot: SlotRef,
    pub view: ViewCell,
    dropped: AtomicBool,
    /// Held by the jobs that change the layers below the memtables: `jobs[0]` by the merge
    /// into the global index, [`SubtableState::level_lock`] by a job writing level `l` (a
    /// flush writes level 0) or moving files out of level `l` of 1 or deeper; a drop
    /// takes them all. Taken in ascending order. The compaction of level 0 takes level
    /// 1's alone, so flushes go on beside it.
    pub jobs: Vec<Mutex<()>>,
    /// Per level, the key after which its next compaction starts (round robin).
    pub cursors: Mutex<Vec<Vec<u8>>>,
    /// Why the subtable is fenced off (`DbOptions::fence_damaged`), if it is.
    fence: Option<String>,
}

impl SubtableState {
    /// The state of a recovered subtable, its memtables and global-index generations
    /// newest first: all memtables but the newest are frozen, and so is the newest if it
    /// is sealed; the generations' trees are complete.
    pub fn new(desc: SubtableDesc, view: ReadView) -> SubtableState {
        for (i, m) in view.memtables.iter().enumerate() {
            if i > 0 || m.is_sealed() {
                m.index.freeze();
            }
        }
        SubtableState {
            id: desc.id,
            name: desc.name,
            slot: desc.slot,
            view: ViewCell::new(view),
            dropped: AtomicBool::new(false),
            jobs: (0..=MAX_LEVEL + 1).map(|_| Mutex::new(())).collect(),
            cursors: Mutex::new(vec![Vec::new(); usize::from(MAX_LEVEL) + 1]),
            fence: None,
        }
    }

    /// The lock of the jobs that write level `level` (or move files out of it, if 1 or
    /// deeper).
    pub fn level_lock(&self, level: u8) -> &Mutex<()> {
        &self.jobs[usize::from(level) + 1]
    }

    /// The subtable fenced off because `reason`: read, never written or compacted.
    pub fn fenced_off(self, reason: String) -> SubtableState {
        SubtableState {
            fence: Some(reason),
            ..self
        }
    }

    /// `Fenced` if the subtable is fenced off.
    pub fn check_unfenced(&self) -> Result<()> {
        match &self.fence {
            Some(reason) => Err(DbError::Fenced {
                name: self.name.clone(),
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// `SubtableDropped` once the subtable is gone.
    pub fn check_live(&self) -> Result<()> {
        if self.dropped.load(Ordering::Acquire) {
            Err(DbError::SubtableDropped {
                name: self.name.clone(),
            })
        } else {
            Ok(())
        }
    }
}

#[derive(Default)]
struct Maps {
    by_name: HashMap<String, Arc<SubtableState>>,
    by_id: HashMap<u32, Arc<SubtableState>>,
}

pub(crate) struct Registry {
    pool: Arc<Pool>,
    catalog: Catalog,
    maps: RwLock<Maps>,
    /// Serialises creations; holds the next subtable id.
    next_subtable_id: Mutex<u32>,
    next_memtable_id: AtomicU64,
    /// Why nothing may be written, if so: the database was opened read-only, or
    /// recovery found the structures that make data reachable damaged.
    read_only: Option<String>,
}

impl Registry {
    pub fn new(
        pool: Arc<Pool>,
        catalog: Catalog,
        subtables: Vec<Arc<SubtableState>>,
        next_subtable_id: u32,
        next_memtable_id: u64,
        read_only: Option<String>,
    ) -> Registry {
        let mut maps = Maps::default();
        for s in subtables {
            maps.by_name.insert(s.name.clone(), Arc::clone(&s));
            maps.by_id.insert(s.id, s);
        }
        Registry {
            pool,
            catalog,
            maps: RwLock::new(maps),
            next_subtable_id: Mutex::new(next_subtable_id),
            next_memtable_id: AtomicU64::new(next_memtable_id),
            read_only,
        }
    }

    /// `ReadOnly` unless the database may be written.
    pub fn writable(&self) -> Result<()> {
        match &self.read_only {
            Some(reason) => Err(DbError::ReadOnly {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    pub fn by_name(&self, name: &str) -> Option<Arc<SubtableState>> {
        self.maps.read().by_name.get(name).cloned()
    }

    pub fn by_id(&self, id: u32) -> Option<Arc<SubtableState>> {
        self.maps.read().by_id.get(&id).cloned()
    }

    /// Every live subtable, sorted by name.
    pub fn all(&self) -> Vec<Arc<SubtableState>> {
        let mut all: Vec<_> = self.maps.read().by_name.values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// The subtable `name`, created durably if it does not exist.
    pub fn get_or_create(&self, name: &str) -> Result<Arc<SubtableState>> {
        if let Some(s) = self.by_name(name) {
            return Ok(s);
        }
        validate_name(name)?;
        self.writable()?;
        let mut next_id = self.next_subtable_id.lock();
        if let Some(s) = self.by_name(name) {
            return Ok(s);
        }
        // The slot codec refuses the last id, so that the one after a stored id exists.
        if *next_id == u32::MAX {
            return Err(DbError::Corrupt("subtable ids are exhausted".into()));
        }
        let desc = self.catalog.add_subtable(&self.pool, *next_id, name)?;
        *next_id += 1;
        let state = Arc::new(SubtableState::new(desc, ReadView::default()));
        let mut maps = self.maps.write();
        maps.by_name.insert(name.into(), Arc::clone(&state));
        maps.by_id.insert(state.id, Arc::clone(&state));
        Ok(state)
    }

    /// The id the next memtable will get.
    pub fn next_memtable_id(&self) -> u64 {
        self.next_memtable_id.load(Ordering::Relaxed)
    }

    /// Frees a catalog slot (what it named is in SSTs now, or gone).
    pub fn free_slot(&self, slot: SlotRef) -> Result<()> {
        self.catalog.free(&self.pool, slot)
    }

    /// Drops `state` durably. The caller holds the commit pipeline, so no group is
    /// appending to the subtable meanwhile, and every job lock of the subtable.
    pub fn drop_subtable(&self, state: &SubtableState) -> Result<()> {
        self.writable()?;
        let _creations = self.next_subtable_id.lock();
        state.check_live()?;
        self.catalog.mark_dropped(&self.pool, state.slot)?;
        state.dropped.store(true, Ordering::Release);
        {
            let mut maps = self.maps.write();
            maps.by_name.remove(&state.name);
            maps.by_id.remove(&state.id);
        }
        let view = state.view.clear();
        for memtable in &view.memtables {
            self.catalog.free(&self.pool, memtable.desc.slot)?;
            memtable.retire();
        }
        for gi in &view.gis {
            for member in gi.member_descs() {
                self.catalog.free(&self.pool, member.slot)?;
            }
            gi.retire();
        }
        self.catalog.free(&self.pool, state.slot)
    }

    /// Starts a new active memtable for `state` (the old one, if any, stays readable,
    /// frozen; the caller freezes its index once the groups appended to it are indexed).
    /// Only the commit leader calls this.
    pub fn new_memtable(&self, state: &SubtableState) -> Result<Arc<Memtable>> {
        self.writable()?;
        let id = self.next_memtable_id.fetch_add(1, Ordering::Relaxed);
        if id > MAX_MEMTABLE_ID {
            return Err(DbError::Corrupt(format!(
                "memtable ids are exhausted: {id} does not fit a catalog tag"
            )));
        }
        let owner = self.pool.create_owner().map_err(|e| match e {
            PmemError::OwnersFull { max_owners } => DbError::OwnersFull { max_owners },
            other => other.into(),
        })?;
        let desc = match self.catalog.add_memtable(&self.pool, id, state.id, owner) {
            Ok(desc) => desc,
            Err(e) => {
                // Never reachable: give the owner back now rather than at the next open.
                let _ = self.pool.release_owner(owner);
                return Err(e);
            }
        };
        let memtable = Arc::new(Memtable::new(desc, Arc::clone(&self.pool), Vec::new(), 0));
        state.view.freeze(Arc::clone(&memtable));
        Ok(memtable)
    }
}
