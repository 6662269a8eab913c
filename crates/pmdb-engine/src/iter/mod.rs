//! The iterator stack, after LevelDB: every structure that holds versions of keys (the
//! DRAM indexes of memtables and global-index generations, `index`; SST levels join later) is a source
//! implementing [`InternalIterator`] over internal keys; `merge` merges sources into one
//! ordered stream; `visible` applies a snapshot and tombstones and yields user keys.
//! Point reads, scans and (later) compaction are all built on it.

pub(crate) mod index;
pub(crate) mod level;
pub(crate) mod merge;
pub(crate) mod visible;

use crate::error::Result;

/// An ordered cursor over internal keys (see `keys`). Positioning calls never fail; an
/// error found while moving leaves the cursor invalid and is reported by `status`.
pub(crate) trait InternalIterator: Send {
    /// Whether the cursor is on an entry.
    fn valid(&self) -> bool;
    /// Moves to the first entry.
    fn seek_to_first(&mut self);
    /// Moves to the last entry.
    fn seek_to_last(&mut self);
    /// Moves to the first entry at or after `target`.
    fn seek(&mut self, target: &[u8]);
    /// Moves to the last entry at or before `target`.
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry. Requires `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. Requires `valid()`.
    fn prev(&mut self);
    /// The current internal key. Requires `valid()`.
    fn key(&self) -> &[u8];
    /// The current entry's value (read from where it lies). Requires `valid()`.
    fn value(&self) -> Result<&[u8]>;
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}
