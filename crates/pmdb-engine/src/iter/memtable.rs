//! The memtable source of the iterator stack. It copies index entries out in batches (one
//! index lock per batch) and keeps its position as the last entry it holds, so it owns no
//! borrow of the index between calls and the commit leader is never blocked for long.
//! Batches start with one entry — a point read needs no more — and grow while the
//! iterator keeps moving the same way.

use std::borrow::Borrow;
use std::ops::Bound;

use pmdb_pmem::PmOff;

use crate::error::Result;
use crate::format::record;
use crate::iter::InternalIterator;
use crate::keys::IKey;
use crate::memtable::Memtable;

/// The largest batch copied out of the index at once.
const MAX_BATCH: usize = 128;

/// A cursor over one memtable's index; `M` is `&Memtable` for a point read and
/// `Arc<Memtable>` for a scan that must own what it reads.
pub(crate) struct MemtableIter<M> {
    mem: M,
    /// A window of the index, in ascending order; `pos` is the current entry.
    buf: Vec<(IKey, PmOff)>,
    pos: usize,
    batch: usize,
}

impl<M: Borrow<Memtable> + Send> MemtableIter<M> {
    pub fn new(mem: M) -> MemtableIter<M> {
        MemtableIter {
            mem,
            buf: Vec::new(),
            pos: 0,
            batch: 1,
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
    }

    fn restart(&mut self, from: Bound<&IKey>, forward: bool) {
        self.batch = 1;
        self.fill(from, forward);
    }

    fn grow(&mut self) {
        self.batch = (self.batch * 8).min(MAX_BATCH);
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
            return;
        }
        let last = self.buf[self.pos].0.clone();
        self.grow();
        self.fill(Bound::Excluded(&last), true);
    }

    fn prev(&mut self) {
        if self.pos > 0 {
            self.pos -= 1;
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
