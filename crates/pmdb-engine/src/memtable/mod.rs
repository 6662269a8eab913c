//! The semi-persistent memtable: records appended to PM zones in chunks (`append`),
//! indexed in DRAM by a radix tree from user key to the versions' record addresses
//! ([`crate::index`]), and read back from the zones at open (`scan`).
//!
//! A position inside a memtable is `zone index * zone size + offset`; each zone starts
//! with a zone header, then chunks of records. The memtable's head word holds the start
//! of the last published part and the end of the published log (`format` has all three).

pub(crate) mod append;
pub(crate) mod scan;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use pmdb_pmem::{OwnerId, PmOff, Pool};

use crate::art::Version;
use crate::catalog::MemtableDesc;
use crate::index::{Indexed, LiveIndex};

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
    /// Frozen once the memtable is frozen and every group appended to it is indexed.
    pub index: LiveIndex,
    zone_size: u64,
    log: Mutex<Log>,
    records: AtomicU64,
    /// Bytes of the published records, as stored: what commits wrote to it, less the
    /// chunk and zone headers.
    record_bytes: AtomicU64,
    /// Set when recovery found the memtable damaged: it is read, never appended to.
    sealed: AtomicBool,
    /// Set when recovery could not read some of its records: a read that reaches this
    /// memtable cannot tell a key's newest version from an older one, and fails.
    lost_records: AtomicBool,
    /// The memtable's zones; shared with the global-index generation it merges into.
    pub lease: Arc<ZoneLease>,
}

/// The zones of one memtable, by their owner. Once the catalog no longer names the owner
/// (`retire`), the zones go back to the pool when the last holder lets go: a read view,
/// a scan, a borrowed value, or the global-index generation the memtable merged into.
pub(crate) struct ZoneLease {
    pool: Arc<Pool>,
    memtable: u64,
    owner: OwnerId,
    retired: AtomicBool,
}

impl ZoneLease {
    /// Marks the owner as no longer named by the catalog.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }
}

impl Drop for ZoneLease {
    fn drop(&mut self) {
        if self.retired.load(Ordering::Acquire)
            && let Err(e) = self.pool.release_owner(self.owner)
        {
            // The catalog no longer names the owner, so the next open frees it anyway.
            log::warn!(
                "memtable {}: releasing its zones failed: {e}",
                self.memtable
            );
        }
    }
}

impl Memtable {
    pub fn new(desc: MemtableDesc, pool: Arc<Pool>, zones: Vec<PmOff>, published: u64) -> Memtable {
        let lease = Arc::new(ZoneLease {
            pool: Arc::clone(&pool),
            memtable: desc.id,
            owner: desc.owner,
            retired: AtomicBool::new(false),
        });
        Memtable {
            desc,
            zone_size: pool.zone_size(),
            index: LiveIndex::new(Arc::clone(&pool)),
            pool,
            log: Mutex::new(Log { zones, published }),
            records: AtomicU64::new(0),
            record_bytes: AtomicU64::new(0),
            sealed: AtomicBool::new(false),
            lost_records: AtomicBool::new(false),
            lease,
        }
    }

    /// Marks the memtable as no longer named by the catalog: its PM is released once the
    /// last holder of its zones lets go (see [`ZoneLease`]).
    pub fn retire(&self) {
        self.lease.retire();
    }

    /// Stops appends to this memtable (its data stays readable).
    pub fn seal(&self) {
        self.sealed.store(true, Ordering::Release);
    }

    /// Seals the memtable and records that some of its records could not be read.
    pub fn lose_records(&self) {
        self.seal();
        self.lost_records.store(true, Ordering::Release);
    }

    /// Whether recovery could not read some of its records.
    pub fn lost_records(&self) -> bool {
        self.lost_records.load(Ordering::Acquire)
    }

    pub fn is_sealed(&self) -> bool {
        self.sealed.load(Ordering::Acquire)
    }

    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Counts records recovery indexed.
    pub fn add_records(&self, n: u64) {
        self.records.fetch_add(n, Ordering::Relaxed);
    }

    pub fn record_bytes(&self) -> u64 {
        self.record_bytes.load(Ordering::Relaxed)
    }

    /// Counts bytes of records recovery found in the log.
    pub fn add_record_bytes(&self, n: u64) {
        self.record_bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Bytes of log published so far (the freeze criterion).
    pub fn used(&self) -> u64 {
        self.log.lock().published
    }
}

impl Indexed for Memtable {
    fn index(&self) -> &LiveIndex {
        &self.index
    }

    fn describe(&self) -> String {
        format!("memtable {}", self.desc.id)
    }
}

fn at_off(zone: PmOff, offset: usize) -> PmOff {
    zone.checked_add(offset as u64).expect("inside the zone")
}
