//! The semi-persistent memtable: records appended to PM zones in chunks (`append`),
//! indexed in DRAM by a radix tree from user key to the versions' record addresses
//! (`index`), and read back from the zones at open (`scan`).
//!
//! A position inside a memtable is `zone index * zone size + offset`; each zone starts
//! with a zone header, then chunks of records. The memtable's head word holds the start
//! of the last published part and the end of the published log (`format` has all three).

pub(crate) mod append;
mod filter;
pub(crate) mod index;
pub(crate) mod scan;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use fastbloom::BloomFilter;
use parking_lot::{Mutex, RwLock};
use pmdb_pmem::{PmOff, Pool};

use crate::art::{Art, Version};
use crate::catalog::MemtableDesc;

/// The DRAM index (see `index`).
type Index = Art;

/// Index entries: the versions of records, to be indexed.
pub(crate) type Entries = Vec<Version>;

/// The append side of a memtable, used by the commit leader and by recovery only.
struct Log {
    zones: Vec<PmOff>,
    /// End of the published log (0: empty).
    published: u64,
}

pub(crate) struct Memtable {
    pub desc: MemtableDesc,
    pool: Arc<Pool>,
    /// The index while the memtable may still take inserts.
    index: RwLock<Index>,
    /// The index once it is complete; set under `index`'s write lock, as that is emptied.
    frozen_index: OnceLock<Index>,
    /// The keys of the frozen index, once the background worker has built it (`filter`).
    filter: OnceLock<BloomFilter>,
    zone_size: u64,
    log: Mutex<Log>,
    records: AtomicU64,
    /// Set when recovery found the memtable damaged: it is read, never appended to.
    sealed: AtomicBool,
    /// Set once the catalog no longer names the memtable: its zones go back to the pool
    /// when the last reader holding it lets go (see `Drop`).
    retired: AtomicBool,
}

impl Memtable {
    pub fn new(desc: MemtableDesc, pool: Arc<Pool>, zones: Vec<PmOff>, published: u64) -> Memtable {
        Memtable {
            desc,
            zone_size: pool.zone_size(),
            pool,
            index: RwLock::new(Index::new()),
            frozen_index: OnceLock::new(),
            filter: OnceLock::new(),
            log: Mutex::new(Log { zones, published }),
            records: AtomicU64::new(0),
            sealed: AtomicBool::new(false),
            retired: AtomicBool::new(false),
        }
    }

    /// The pool the memtable's records live in.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Marks the memtable as no longer named by the catalog: its PM is released once the
    /// last `Arc` to it — a read view, a scan, a borrowed value — is dropped.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    /// Stops appends to this memtable (its data stays readable).
    pub fn seal(&self) {
        self.sealed.store(true, Ordering::Release);
    }

    pub fn is_sealed(&self) -> bool {
        self.sealed.load(Ordering::Acquire)
    }

    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Bytes of log published so far (the freeze criterion).
    pub fn used(&self) -> u64 {
        self.log.lock().published
    }
}

impl Drop for Memtable {
    fn drop(&mut self) {
        if self.retired.load(Ordering::Acquire)
            && let Err(e) = self.pool.release_owner(self.desc.owner)
        {
            // The catalog no longer names the owner, so the next open frees it anyway.
            log::warn!("memtable {}: releasing its zones failed: {e}", self.desc.id);
        }
    }
}

fn at_off(zone: PmOff, offset: usize) -> PmOff {
    zone.checked_add(offset as u64).expect("inside the zone")
}
