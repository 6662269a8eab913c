//! The source of the iterator stack over a DRAM index (a memtable's or a global-index
//! generation's). It copies the versions of a few keys at a time out of the index (one index lock per batch) and keeps its position as the key it
//! is on, so it owns no borrow of the index between calls and the commit leader is never
//! blocked for long. Batches start small and grow while the iterator keeps moving the
//! same way. Records are appended in commit order, so neighbours in key order lie far
//! apart in PM: the iterator prefetches the records a few entries ahead, so their misses
//! overlap instead of queueing. The internal key of the current entry is rebuilt from its
//! record (the index keeps no key bytes).

use std::cmp::Ordering;
use std::ops::{Bound, Deref};

use pmdb_pmem::PmOff;

use crate::art::Version;
use crate::error::{DbError, Result};
use crate::format::record;
use crate::index::{Indexed, TAG_IN_RECORD};
use crate::iter::InternalIterator;
use crate::keys;

/// The most keys copied out of the index at once.
const MAX_BATCH: usize = 64;
/// The first batch: enough for a short scan over several memtables in one index descent
/// each.
const FIRST_BATCH: usize = 8;
/// How many entries ahead records are prefetched, and how much of each.
const PREFETCH_AHEAD: usize = 4;
const PREFETCH_BYTES: usize = 128;

/// A cursor over one index, owning its holder (an `Arc`) so a scan can outlive the call
/// that made it.
pub(crate) struct IndexIter<M> {
    mem: M,
    /// A window of the index in ascending internal-key order; `pos` is the current entry.
    buf: Vec<Version>,
    pos: usize,
    batch: usize,
    /// The internal key of the current entry.
    ikey: Vec<u8>,
    /// The first error met (the records are read again to rebuild keys).
    error: Option<String>,
}

impl<M: Deref<Target: Indexed> + Send> IndexIter<M> {
    pub fn new(mem: M) -> IndexIter<M> {
        IndexIter {
            mem,
            buf: Vec::new(),
            pos: 0,
            batch: FIRST_BATCH,
            ikey: Vec::new(),
            error: None,
        }
    }

    fn rec(&self, i: usize) -> PmOff {
        PmOff::from_raw(self.buf[i].rec)
    }

    /// Ends the iteration with `e`, reported by `status`.
    fn fail(&mut self, e: DbError) {
        self.buf.clear();
        self.pos = 0;
        self.error.get_or_insert(e.to_string());
    }

    /// Rebuilds the current internal key from its record.
    fn load_key(&mut self) {
        if !self.valid() {
            return;
        }
        let mem = self.mem.index();
        match record::read_key(mem.pool(), self.rec(self.pos)) {
            Ok((tag, key)) => {
                let v = &mut self.buf[self.pos];
                if v.tag == TAG_IN_RECORD {
                    v.tag = tag;
                }
                self.ikey.clear();
                self.ikey.extend_from_slice(key);
                self.ikey.extend_from_slice(&v.tag.to_be_bytes());
            }
            Err(e) => self.fail(e),
        }
    }

    /// Refills the window with the keys after (`forward`) or before `from`.
    fn fill(&mut self, from: Bound<&[u8]>, forward: bool) {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let collected = self
            .mem
            .index()
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
        if let Err(e) = collected {
            return self.fail(e);
        }
        for ahead in 1..=PREFETCH_AHEAD {
            self.prefetch(forward, ahead);
        }
        self.load_key();
    }

    /// Prefetches the record `ahead` entries from the current one in the direction of
    /// travel.
    fn prefetch(&self, forward: bool, ahead: usize) {
        let at = if forward {
            self.pos.checked_add(ahead)
        } else {
            self.pos.checked_sub(ahead)
        };
        if let Some(i) = at.filter(|&i| i < self.buf.len()) {
            self.mem
                .index()
                .pool()
                .prefetch(self.rec(i), PREFETCH_BYTES);
        }
    }

    fn restart(&mut self, from: Bound<&[u8]>, forward: bool) {
        self.batch = FIRST_BATCH;
        self.fill(from, forward);
    }

    fn grow(&mut self) {
        self.batch = (self.batch * 2).min(MAX_BATCH);
    }

    /// The user key of the current entry, copied (the window is about to be refilled).
    fn current_user_key(&self) -> Vec<u8> {
        keys::user_key(&self.ikey).to_vec()
    }
}

impl<M: Deref<Target: Indexed> + Send> InternalIterator for IndexIter<M> {
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
        self.restart(Bound::Included(keys::user_key(target)), true);
        // Versions of the target's key newer than the target come before it.
        while self.valid() && keys::compare(&self.ikey, target) == Ordering::Less {
            self.next();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.restart(Bound::Included(keys::user_key(target)), false);
        while self.valid() && keys::compare(&self.ikey, target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        if self.pos + 1 < self.buf.len() {
            self.pos += 1;
            self.prefetch(true, PREFETCH_AHEAD);
            return self.load_key();
        }
        let last = self.current_user_key();
        self.grow();
        self.fill(Bound::Excluded(&last), true);
    }

    fn prev(&mut self) {
        if self.pos > 0 {
            self.pos -= 1;
            self.prefetch(false, PREFETCH_AHEAD);
            return self.load_key();
        }
        let first = self.current_user_key();
        self.grow();
        self.fill(Bound::Excluded(&first), false);
    }

    fn key(&self) -> &[u8] {
        &self.ikey
    }

    fn value(&self) -> Result<&[u8]> {
        let mem = self.mem.index();
        Ok(record::read(mem.pool(), self.rec(self.pos))?.value)
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(DbError::Corrupt(e.clone())),
            None => Ok(()),
        }
    }
}
