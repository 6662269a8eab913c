//! [`Snapshot`]: reads as of one sequence number, registered so that what it sees is kept.

use std::ops::RangeBounds;
use std::sync::Arc;

use crate::core::Core;
use crate::error::{DbError, Result};
use crate::read::{self, ReadAt, Scan, ValueRef};
use crate::seq::SnapshotPin;
use crate::subtable::Subtable;

/// A consistent view of the database as of one sequence number.
pub struct Snapshot {
    core: Arc<Core>,
    pin: SnapshotPin,
}

impl Snapshot {
    pub(crate) fn new(core: Arc<Core>) -> Snapshot {
        let pin = core.seqs.pin();
        Snapshot { core, pin }
    }

    /// A snapshot at the sequence number `pin` holds.
    pub(crate) fn pinned(core: Arc<Core>, pin: SnapshotPin) -> Snapshot {
        Snapshot { core, pin }
    }

    /// The sequence number this snapshot reads at.
    pub fn seq(&self) -> u64 {
        self.pin.seq()
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
        read::get(
            &sub.core.pool,
            &sub.state,
            key.as_ref(),
            ReadAt::Snapshot(self.seq()),
        )
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
        // The scan may outlive the snapshot: it holds a registration of its own.
        let pin = self.core.seqs.pin_again(&self.pin);
        Ok(Scan::new(&sub.state, &range, pin, reverse))
    }
}
