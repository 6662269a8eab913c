//! The memtable source of the iterator stack. It copies index entries out in batches (one
//! index lock per batch) and keeps its position as the last entry it holds, so it owns no
//! borrow of the index between calls and the commit leader is never blocked for long.
//! Batches start with one entry for a point read, which needs no more, or a few for a
//! scan, and grow while the iterator keeps moving the same way. Records are appended in commit order, so
//! neighbours in key order lie far apart in PM: the iterator prefetches the records a few
//! entries ahead, so their misses overlap instead of queueing.

use std::borrow::Borrow;
use std::ops::Bound;

use pmdb_pmem::PmOff;
use smallvec::SmallVec;

use crate::error::Result;
use crate::format::record;
use crate::iter::InternalIterator;
use crate::keys::IKey;
use crate::memtable::Memtable;

/// The largest batch copied out of the index at once.
const MAX_BATCH: usize = 64;
/// The first batch of a scan: enough for a short scan over several memtables in one
/// index descent each.
const SCAN_BATCH: usize = 8;
/// How many entries ahead records are prefetched, and how much of each.
const PREFETCH_AHEAD: usize = 4;
const PREFETCH_BYTES: usize = 128;

/// A cursor over one memtable's index; `M` is `&Memtable` for a point read and
/// `Arc<Memtable>` for a scan that must own what it reads.
pub(crate) struct MemtableIter<M> {
    mem: M,
    /// A window of the index, in ascending order; `pos` is the current entry. A point
    /// read's one entry stays inline: no allocation per memtable per get.
    buf: SmallVec<[(IKey, PmOff); 1]>,
    pos: usize,
    batch: usize,
    /// The batch a seek starts with.
    first_batch: usize,
}

impl<M: Borrow<Memtable> + Send> MemtableIter<M> {
    /// A cursor for a point read: each seek copies out one entry.
    pub fn for_get(mem: M) -> MemtableIter<M> {
        MemtableIter::new(mem, 1)
    }

    /// A cursor for a scan.
    pub fn for_scan(mem: M) -> MemtableIter<M> {
        MemtableIter::new(mem, SCAN_BATCH)
    }

    fn new(mem: M, first_batch: usize) -> MemtableIter<M> {
        MemtableIter {
            mem,
            buf: SmallVec::new(),
            pos: 0,
            batch: first_batch,
            first_batch,
        }
    }

    /// The address of the current record.
    pub fn record_off(&self) -> PmOff {
        self.buf[self.pos].1
    }

    /// Refills the window with the entries after (`forward`) or before `from`.
    fn fill(&mut self, from: Bound<&IKey>, forward: bool) {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        self.mem
            .borrow()
            .collect(from, forward, self.batch, &mut buf);
        if !forward {
            buf.reverse();
        }
        self.pos = if forward {
            0
        } else {
            buf.len().saturating_sub(1)
        };
        self.buf = buf;
        for ahead in 1..=PREFETCH_AHEAD {
            self.prefetch(forward, ahead);
        }
    }

    /// Prefetches the record `ahead` entries from the current one in the direction of
    /// travel.
    fn prefetch(&self, forward: bool, ahead: usize) {
        let at = if forward {
            self.pos.checked_add(ahead)
        } else {
            self.pos.checked_sub(ahead)
        };
        if let Some((_, off)) = at.and_then(|i| self.buf.get(i)) {
            self.mem.borrow().pool().prefetch(*off, PREFETCH_BYTES);
        }
    }

    fn restart(&mut self, from: Bound<&IKey>, forward: bool) {
        self.batch = self.first_batch;
        self.fill(from, forward);
    }

    fn grow(&mut self) {
        self.batch = (self.batch * 2).min(MAX_BATCH);
    }
}

impl<M: Borrow<Memtable> + Send> InternalIterator for MemtableIter<M> {
    fn valid(&self) -> bool {
        self.pos < self.buf.len()
    }

    fn seek_to_first(&mut self) {
        self.restart(Bound::Unbounded, true);
    }

    fn seek_to_last(&mut self) {
        self.restart(Bound::Unbounded, false);
    }

    fn seek(&mut self, target: &[u8]) {
        self.restart(Bound::Included(&IKey::from_slice(target)), true);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.restart(Bound::Included(&IKey::from_slice(target)), false);
    }

    fn next(&mut self) {
        if self.pos + 1 < self.buf.len() {
            self.pos += 1;
            self.prefetch(true, PREFETCH_AHEAD);
            return;
        }
        let last = self.buf[self.pos].0.clone();
        self.grow();
        self.fill(Bound::Excluded(&last), true);
    }

    fn prev(&mut self) {
        if self.pos > 0 {
            self.pos -= 1;
            self.prefetch(false, PREFETCH_AHEAD);
            return;
        }
        let first = self.buf[self.pos].0.clone();
        self.grow();
        self.fill(Bound::Excluded(&first), false);
    }

    fn key(&self) -> &[u8] {
        self.buf[self.pos].0.as_slice()
    }

    fn value(&self) -> Result<&[u8]> {
        let mem = self.mem.borrow();
        Ok(record::read(mem.pool(), self.record_off())?.value)
    }

    fn status(&self) -> Result<()> {
        // Moving only copies DRAM index entries; errors come from reading values.
        Ok(())
    }
}
