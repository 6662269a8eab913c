//! The DRAM index of records in PM, as memtables and global-index generations hold it:
//! an adaptive radix tree with one entry per user key that reads key bytes from the
//! records ([`crate::art`]; chosen by measurement against the B-tree it replaced and a
//! skip list, docs/benchmarks/index.md). Whoever inserts (the commit leader, the merge
//! into the global index) takes its lock once per batch. Once nothing will be inserted
//! any more, the tree moves out from under its lock, so readers take no lock at all, and
//! a Bloom filter is built over its keys (`filter`).

mod filter;

use std::ops::{Bound, ControlFlow};
use std::sync::{Arc, OnceLock};

use fastbloom::BloomFilter;
use parking_lot::RwLock;
use pmdb_pmem::{PmOff, Pool};

use crate::art::{Art, BulkEntry, KeySource, Leaf, Version};
use crate::error::Result;
use crate::format::record::{self, Kind};
use crate::keys;

/// Keys and tags read from the records in the pool.
pub(crate) struct PoolKeys<'a>(pub &'a Pool);

impl KeySource for PoolKeys<'_> {
    fn record(&self, rec: u64) -> Result<(u64, &[u8])> {
        record::read_key(self.0, PmOff::from_raw(rec))
    }
}

/// The tag `collect` gives a key's only version: the record holds it. No record has it
/// (a kind is never 0xff).
pub(crate) const TAG_IN_RECORD: u64 = u64::MAX;

/// What a memtable holds for a key at a snapshot.
pub(crate) enum Lookup {
    /// The newest version the snapshot may see.
    Found { kind: Kind, rec: PmOff },
    /// No version the snapshot may see: older memtables decide.
    Absent,
    /// Every version left is newer than the snapshot, and older ones were dropped: the
    /// reader started before versions it needed were pruned, and must read again at a
    /// newer sequence number (readers that hold a registered snapshot never see this).
    Pruned,
}

/// What holds a [`LiveIndex`]: a memtable or a global-index generation.
pub(crate) trait Indexed: Send + Sync {
    fn index(&self) -> &LiveIndex;
    /// How logs name it.
    fn describe(&self) -> String;
}

/// A radix tree over records in `pool`, taking inserts under its lock until it is frozen.
pub(crate) struct LiveIndex {
    pool: Arc<Pool>,
    /// The tree while it may still take inserts.
    live: RwLock<Art>,
    /// The tree once it is complete; set under `live`'s write lock, as that is emptied.
    frozen: OnceLock<Art>,
    /// The keys of the frozen tree, once the background worker has built it (`filter`).
    filter: OnceLock<BloomFilter>,
}

/// DRAM one index uses (its Bloom filter included, once built).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IndexUsage {
    pub keys: u64,
    pub versions: u64,
    pub bytes: u64,
}

impl LiveIndex {
    pub fn new(pool: Arc<Pool>) -> LiveIndex {
        LiveIndex {
            pool,
            live: RwLock::new(Art::new()),
            frozen: OnceLock::new(),
            filter: OnceLock::new(),
        }
    }

    /// The pool the indexed records live in.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Indexes `versions`; `horizon` is the oldest sequence number a reader may still read
    /// at (versions below what it needs are dropped).
    pub fn insert(&self, versions: &[Version], horizon: u64) -> Result<()> {
        debug_assert!(self.frozen.get().is_none(), "insert after freeze");
        let keys = PoolKeys(&self.pool);
        let mut index = self.live.write();
        for v in versions {
            index.insert(&keys, keys.key(v.rec)?, *v, horizon)?;
        }
        Ok(())
    }

    /// Builds the tree from records recovery found, in any order. No reader exists yet,
    /// so only the newest version of each key is kept.
    pub fn build(&self, found: Vec<BulkEntry>) -> Result<()> {
        let built = Art::build(&PoolKeys(&self.pool), found)?;
        *self.live.write() = built;
        Ok(())
    }

    /// Moves the tree out from under its lock. Call it only once no insert can come any
    /// more.
    pub fn freeze(&self) {
        let mut index = self.live.write();
        if self.frozen.get().is_none() {
            let complete = std::mem::take(&mut *index);
            let _ = self.frozen.set(complete);
        }
    }

    pub fn is_frozen(&self) -> bool {
        self.frozen.get().is_some()
    }

    /// Runs `f` on the tree: the frozen one with no lock, else under the read lock
    /// (checked again once the lock is held, as the tree may have moved meanwhile).
    fn with_tree<R>(&self, f: impl FnOnce(&Art) -> R) -> R {
        if let Some(index) = self.frozen.get() {
            return f(index);
        }
        let index = self.live.read();
        f(self.frozen.get().unwrap_or(&index))
    }

    /// DRAM the index uses.
    pub fn usage(&self) -> IndexUsage {
        self.with_tree(|index| IndexUsage {
            keys: index.len(),
            versions: index.versions(),
            bytes: index.dram_bytes() as u64 + self.filter_bytes(),
        })
    }

    /// The newest version of `key` visible at `snap`.
    pub fn lookup(&self, key: &[u8], snap: u64) -> Result<Lookup> {
        if self.filter_excludes(key) {
            return Ok(Lookup::Absent);
        }
        let keys = PoolKeys(&self.pool);
        self.with_tree(|index| {
            let Some((leaf, newest_tag)) = index.get(&keys, key)? else {
                return Ok(Lookup::Absent);
            };
            let (tag, rec, pruned) = match leaf {
                Leaf::One { rec, pruned } => (newest_tag, rec, pruned),
                Leaf::Many(list) => match list.versions().iter().rev().find(|v| v.seq() <= snap) {
                    Some(v) => (v.tag, v.rec, false),
                    None => (u64::MAX, 0, list.pruned()),
                },
            };
            Ok(if tag >> 8 <= snap {
                Lookup::Found {
                    kind: keys::kind_of_tag(tag),
                    rec: PmOff::from_raw(rec),
                }
            } else if pruned {
                Lookup::Pruned
            } else {
                Lookup::Absent
            })
        })
    }

    /// The tag (sequence number and kind) of the newest version of `key` this index
    /// holds: what a transaction's validation compares with its snapshot.
    pub fn newest_tag(&self, key: &[u8]) -> Result<Option<u64>> {
        if self.filter_excludes(key) {
            return Ok(None);
        }
        let keys = PoolKeys(&self.pool);
        self.with_tree(|index| {
            Ok(index.get(&keys, key)?.map(|(leaf, newest_tag)| match leaf {
                Leaf::One { .. } => newest_tag,
                Leaf::Many(list) => list.versions().last().map_or(newest_tag, |v| v.tag),
            }))
        })
    }

    /// Copies the versions of up to `n` keys from `from` on into `out`, in ascending
    /// internal-key order (key ascending, newest version first) when `forward`, else in
    /// descending order from `from` down; a key's only version has `TAG_IN_RECORD`. The lock (if the index still has one) is taken
    /// once per call, so iterators pay it once per batch, not per entry.
    pub fn collect(
        &self,
        from: Bound<&[u8]>,
        forward: bool,
        n: usize,
        out: &mut Vec<Version>,
    ) -> Result<()> {
        let keys = PoolKeys(&self.pool);
        self.with_tree(|index| {
            let mut taken = 0;
            index.walk(&keys, from, forward, |leaf| {
                match leaf {
                    // The tag is in the record, which the iterator reads anyway (after
                    // prefetching it): not read here, under the lock, one miss at a time.
                    Leaf::One { rec, .. } => out.push(Version {
                        tag: TAG_IN_RECORD,
                        rec,
                    }),
                    Leaf::Many(list) if forward => out.extend(list.versions().iter().rev()),
                    Leaf::Many(list) => out.extend(list.versions()),
                }
                taken += 1;
                if taken == n {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
        })
    }
}
