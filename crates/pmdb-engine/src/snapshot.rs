//! [`Snapshot`]: reads as of one sequence number, registered so that what it sees is kept.

use std::ops::RangeBounds;
use std::sync::Arc;

use crate::core::Core;
use crate::error::{DbError, Result};
use crate::read::{self, Scan, ValueRef};
use crate::subtable::Subtable;

/// A consistent view of the database as of one sequence number.
pub struct Snapshot {
    core: Arc<Core>,
    seq: u64,
}

impl Snapshot {
    pub(crate) fn new(core: Arc<Core>) -> Snapshot {
        let seq = core.seqs.acquire();
        Snapshot { core, seq }
    }

    /// The sequence number this snapshot reads at.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    fn check<'a>(&self, sub: &'a Subtable) -> Result<&'a Subtable> {
        if Arc::ptr_eq(&sub.core, &self.core) {
            Ok(sub)
        } else {
            Err(DbError::ForeignSubtable)
        }
    }

    /// The value of `key` in `sub` as of this snapshot.
    pub fn get<'a>(
        &self,
        sub: &'a Subtable,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<ValueRef<'a>>> {
        let sub = self.check(sub)?;
        read::get(&sub.core.pool, &sub.state, key.as_ref(), self.seq)
    }

    /// Ascending scan of `sub` as of this snapshot.
    pub fn scan<K: AsRef<[u8]> + ?Sized>(
        &self,
        sub: &Subtable,
        range: impl RangeBounds<K>,
    ) -> Result<Scan> {
        self.scan_at(sub, range, false)
    }

    /// Descending scan of `sub` as of this snapshot.
    pub fn scan_rev<K: AsRef<[u8]> + ?Sized>(
        &self,
        sub: &Subtable,
        range: impl RangeBounds<K>,
    ) -> Result<Scan> {
        self.scan_at(sub, range, true)
    }

    fn scan_at<K: AsRef<[u8]> + ?Sized>(
        &self,
        sub: &Subtable,
        range: impl RangeBounds<K>,
        reverse: bool,
    ) -> Result<Scan> {
        let sub = self.check(sub)?;
        Ok(Scan::new(&sub.state, &range, self.seq, reverse))
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.core.seqs.release(self.seq);
    }
}
