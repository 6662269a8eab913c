//! The global index (GI): per subtable, the layer between the memtables and the SST
//! levels, after seed 002. A frozen memtable merges into the subtable's open GI
//! generation by moving pointers — its versions' record addresses are inserted into the
//! generation's radix tree, older versions no reader needs are dropped — and its PM
//! zones become the generation's. The data is not copied. Membership is recorded by one
//! 8-byte publish in the memtable's catalog slot (its global-index word), so recovery
//! rebuilds one tree per generation instead of one per memtable.
//!
//! A generation that has reached its budget is sealed (a new one takes merges). It stays
//! in PM, read from there, until the flush watermark sends it, coldest first, to SST
//! files; once the manifest edit that makes those files live is durable, the members'
//! catalog slots are freed and their zones go back to the pool together, when the last
//! reader of the generation lets go.

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use pmdb_pmem::Pool;

use crate::art::KeySource;
use crate::catalog::MemtableDesc;
use crate::error::Result;
use crate::index::{Indexed, LiveIndex, PoolKeys, TAG_IN_RECORD};
use crate::memtable::{Memtable, ZoneLease};

/// Keys whose versions are moved per lock of the generation's tree, so readers and the
/// commit path never wait long.
const MERGE_BATCH: usize = 1024;

/// A member memtable: its catalog entry and its zones.
pub(crate) struct Member {
    pub desc: MemtableDesc,
    lease: Arc<ZoneLease>,
}

/// One generation of a subtable's global index.
pub(crate) struct Gi {
    /// Its first member's id; what the members' global-index words hold.
    pub id: u64,
    pub index: LiveIndex,
    members: Mutex<Vec<Member>>,
    /// PM bytes of the members' logs.
    bytes: AtomicU64,
    /// Bytes of the members' records, as stored.
    record_bytes: AtomicU64,
    /// Takes no more merges; stays in PM until flushed to SSTs.
    sealed: AtomicBool,
    /// A member lost records at recovery (see `Memtable::lost_records`).
    lost_records: AtomicBool,
}

impl Gi {
    pub fn new(pool: Arc<Pool>, id: u64) -> Gi {
        Gi {
            id,
            index: LiveIndex::new(pool),
            members: Mutex::new(Vec::new()),
            bytes: AtomicU64::new(0),
            record_bytes: AtomicU64::new(0),
            sealed: AtomicBool::new(false),
            lost_records: AtomicBool::new(false),
        }
    }

    /// A generation recovery rebuilt from `members` (its tree is built by the caller).
    pub fn recovered(pool: Arc<Pool>, id: u64, members: &[Arc<Memtable>]) -> Gi {
        let gi = Gi::new(pool, id);
        for m in members {
            gi.adopt(m);
        }
        gi
    }

    /// Whether a member lost records at recovery.
    pub fn lost_records(&self) -> bool {
        self.lost_records.load(Ordering::Acquire)
    }

    fn adopt(&self, m: &Memtable) {
        if m.lost_records() {
            self.lost_records.store(true, Ordering::Release);
        }
        self.bytes.fetch_add(m.used(), Ordering::Relaxed);
        self.record_bytes
            .fetch_add(m.record_bytes(), Ordering::Relaxed);
        self.members.lock().push(Member {
            desc: m.desc.clone(),
            lease: Arc::clone(&m.lease),
        });
    }

    /// Moves the versions of frozen memtable `m` into this generation's tree, dropping
    /// versions older than `horizon` needs. The caller then records the membership and
    /// publishes a view without `m`; until then readers find every version in `m` first.
    pub fn merge(&self, m: &Memtable, horizon: u64) -> Result<()> {
        debug_assert!(
            m.index.is_frozen(),
            "merging a memtable still taking inserts"
        );
        let keys = PoolKeys(m.index.pool());
        let mut from: Option<Vec<u8>> = None;
        let mut batch = Vec::with_capacity(MERGE_BATCH * 2);
        loop {
            batch.clear();
            // Backward: a key's versions come oldest first, the order inserts take.
            let bound = from.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            m.index.collect(bound, false, MERGE_BATCH, &mut batch)?;
            let Some(last) = batch.last() else { break };
            from = Some(keys.key(last.rec)?.to_vec());
            for v in &mut batch {
                if v.tag == TAG_IN_RECORD {
                    v.tag = keys.record(v.rec)?.0;
                }
            }
            self.index.insert(&batch, horizon)?;
        }
        self.adopt(m);
        Ok(())
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn record_bytes(&self) -> u64 {
        self.record_bytes.load(Ordering::Relaxed)
    }

    pub fn seal(&self) {
        self.sealed.store(true, Ordering::Release);
    }

    pub fn is_sealed(&self) -> bool {
        self.sealed.load(Ordering::Acquire)
    }

    /// The members' catalog entries.
    pub fn member_descs(&self) -> Vec<MemtableDesc> {
        self.members.lock().iter().map(|m| m.desc.clone()).collect()
    }

    /// The highest member id: every memtable of the subtable up to it is in this
    /// generation or an older layer.
    pub fn max_member(&self) -> u64 {
        self.members
            .lock()
            .iter()
            .map(|m| m.desc.id)
            .max()
            .unwrap_or(0)
    }

    /// The catalog no longer names the members: their zones go back to the pool once the
    /// last reader of this generation (and of the members) lets go.
    pub fn retire(&self) {
        for m in self.members.lock().iter() {
            m.lease.retire();
        }
    }
}

impl Indexed for Gi {
    fn index(&self) -> &LiveIndex {
        &self.index
    }

    fn describe(&self) -> String {
        format!("global-index generation {}", self.id)
    }
}
