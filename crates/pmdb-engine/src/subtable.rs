//! [`Subtable`]: the handle users read and write a subtable through.

use std::ops::RangeBounds;
use std::sync::Arc;

use crate::batch::{SubtableId, WriteBatch};
use crate::core::Core;
use crate::error::Result;
use crate::options::WriteOptions;
use crate::read::{self, ReadAt, Scan, ValueRef};
use crate::registry::SubtableState;

/// A named, ordered key-value table (an LSM instance) inside a database. Cheap to clone.
/// After the subtable is dropped, every call on a handle fails with `SubtableDropped`.
#[derive(Clone)]
pub struct Subtable {
    pub(crate) core: Arc<Core>,
    pub(crate) state: Arc<SubtableState>,
}

impl From<&Subtable> for SubtableId {
    fn from(s: &Subtable) -> SubtableId {
        s.id()
    }
}

impl Subtable {
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The id write batches name this subtable by.
    pub fn id(&self) -> SubtableId {
        SubtableId {
            db: self.core.id,
            id: self.state.id,
        }
    }

    /// Sets `key` to `value` (a batch of one), durably.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(self, key, value);
        self.core.write(batch, WriteOptions::default().sync)
    }

    /// Removes `key` (a batch of one), durably.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete(self, key);
        self.core.write(batch, WriteOptions::default().sync)
    }

    /// The current value of `key`, borrowed from PM with no copy.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<ValueRef<'_>>> {
        let at = ReadAt::Latest(&self.core.seqs);
        read::get(&self.core.pool, &self.state, key.as_ref(), at)
    }

    /// The current value of `key`, copied.
    pub fn get_owned(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        Ok(self.get(key)?.map(|v| v.to_vec()))
    }

    /// Entries with keys in `range`, in ascending key order, as of now.
    pub fn scan<K: AsRef<[u8]> + ?Sized>(&self, range: impl RangeBounds<K>) -> Scan {
        Scan::new(&self.state, &range, self.core.seqs.pin(), false)
    }

    /// Entries with keys in `range`, in descending key order, as of now.
    pub fn scan_rev<K: AsRef<[u8]> + ?Sized>(&self, range: impl RangeBounds<K>) -> Scan {
        Scan::new(&self.state, &range, self.core.seqs.pin(), true)
    }
}
