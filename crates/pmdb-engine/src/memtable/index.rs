//! The memtable's DRAM index: a B-tree with keys stored inline in its nodes, behind a
//! reader-writer lock that the commit leader takes once per group. Measured against a
//! lock-free skip list and scc's TreeIndex at 1 M and 10 M keys
//! (docs/benchmarks/index.md), it does the fewest dependent DRAM loads per lookup, which
//! dominate on this hardware. Once the memtable is frozen and every group appended to it
//! is indexed, the index moves out from under its lock: nothing inserts any more, so
//! readers take no lock at all.

use std::ops::Bound;
use std::sync::atomic::Ordering;

use pmdb_pmem::PmOff;

use super::{Entries, Index, Memtable};
use crate::keys::IKey;

impl Memtable {
    /// Builds the index at recovery from the zones' sorted runs (a bulk build, linear in
    /// the entries once the runs are merged).
    pub fn build_index(&self, runs: Vec<Entries>) {
        let mut all: Entries = runs.into_iter().flatten().collect();
        // A stable sort finds the sorted runs and merges them.
        all.sort_by(|a, b| a.0.cmp(&b.0));
        self.records.store(all.len() as u64, Ordering::Relaxed);
        *self.index.write() = all.into_iter().collect();
    }

    /// Indexes the records of a published part (one lock acquisition per part).
    pub fn index_part(&self, entries: impl Iterator<Item = (IKey, PmOff)>) {
        debug_assert!(
            self.frozen_index.get().is_none(),
            "memtable {} indexed after its index was frozen",
            self.desc.id
        );
        self.index.write().extend(entries);
    }

    /// Moves the index out from under its lock. Call it only once no insert can come any
    /// more: the memtable is frozen and every group appended to it has been indexed.
    pub fn freeze_index(&self) {
        let mut index = self.index.write();
        if self.frozen_index.get().is_none() {
            let complete = std::mem::take(&mut *index);
            let _ = self.frozen_index.set(complete);
        }
    }

    #[cfg(test)]
    pub fn index_is_frozen(&self) -> bool {
        self.frozen_index.get().is_some()
    }

    /// Runs `f` on the index: the frozen one with no lock, else under the read lock
    /// (checked again once the lock is held, as the index may have moved meanwhile).
    fn with_index<R>(&self, f: impl FnOnce(&Index) -> R) -> R {
        if let Some(index) = self.frozen_index.get() {
            return f(index);
        }
        let index = self.index.read();
        f(self.frozen_index.get().unwrap_or(&index))
    }

    /// Copies up to `n` index entries starting at `from` into `out`, in ascending order
    /// when `forward`, else the entries at or before `from` in descending order. The lock
    /// (if the index still has one) is taken once per call, so iterators pay it once per
    /// batch, not per entry.
    pub fn collect(
        &self,
        from: Bound<&IKey>,
        forward: bool,
        n: usize,
        out: &mut impl Extend<(IKey, PmOff)>,
    ) {
        let entries = |(k, off): (&IKey, &PmOff)| (k.clone(), *off);
        self.with_index(|index| {
            if forward {
                out.extend(index.range((from, Bound::Unbounded)).take(n).map(entries));
            } else {
                out.extend(
                    index
                        .range((Bound::Unbounded, from))
                        .rev()
                        .take(n)
                        .map(entries),
                );
            }
        })
    }
}
