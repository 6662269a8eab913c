//! Ordered range scans over all memtables of a subtable at a snapshot, forward or
//! backward: a merge that, for each key, takes the newest version visible at the
//! snapshot (newer memtables hold newer versions) and skips deleted keys.
//!
//! The scan keeps its position as an internal-key bound and re-seeks each memtable's
//! index per key, so it holds no borrow of the indexes between steps and sees a stable
//! view: versions committed after the snapshot are never returned.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::db::{DbInner, SubtableState};
use crate::error::Result;
use crate::format::record::{self, Kind};
use crate::keys;
use crate::memtable::Memtable;

/// One key and its value, both borrowed from PM.
pub struct Entry<'a> {
    _guard: crossbeam_epoch::Guard,
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> Entry<'a> {
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    pub fn value(&self) -> &'a [u8] {
        self.value
    }

    /// Copies key and value out.
    pub fn to_owned(&self) -> (Vec<u8>, Vec<u8>) {
        (self.key.to_vec(), self.value.to_vec())
    }
}

impl std::fmt::Debug for Entry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("key", &self.key)
            .field("value", &self.value)
            .finish()
    }
}

/// An iterator over a key range; see [`crate::Subtable::scan`].
pub struct Scan<'a> {
    db: &'a DbInner,
    memtables: Vec<Arc<Memtable>>,
    snap: u64,
    reverse: bool,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    done: bool,
}

fn escaped(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    keys::escape_into(key, &mut out);
    out
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<'a> Scan<'a> {
    pub(crate) fn new<K: AsRef<[u8]> + ?Sized>(
        db: &'a DbInner,
        state: &SubtableState,
        range: &impl RangeBounds<K>,
        snap: u64,
        reverse: bool,
    ) -> Scan<'a> {
        // Bounds in internal-key space: every version of an included key lies inside.
        let lower = match range.start_bound() {
            Bound::Included(k) => Bound::Included(keys::first_of(&escaped(k.as_ref()))),
            Bound::Excluded(k) => Bound::Excluded(keys::last_of(&escaped(k.as_ref()))),
            Bound::Unbounded => Bound::Unbounded,
        };
        let upper = match range.end_bound() {
            Bound::Included(k) => Bound::Included(keys::last_of(&escaped(k.as_ref()))),
            Bound::Excluded(k) => Bound::Excluded(keys::first_of(&escaped(k.as_ref()))),
            Bound::Unbounded => Bound::Unbounded,
        };
        Scan {
            db,
            memtables: state.memtables.read().clone(),
            snap,
            reverse,
            lower,
            upper,
            done: false,
        }
    }

    /// The next user key (escaped) in scan order still inside the bounds.
    fn next_key(&self) -> Option<Vec<u8>> {
        let mut best: Option<Vec<u8>> = None;
        for m in &self.memtables {
            let Some(k) = m.seek(as_slice(&self.lower), as_slice(&self.upper), self.reverse) else {
                continue;
            };
            let u = keys::user_part(&k);
            let better = best
                .as_deref()
                .is_none_or(|b| if self.reverse { u > b } else { u < b });
            if better {
                best = Some(u.to_vec());
            }
        }
        best
    }
}

impl<'a> Iterator for Scan<'a> {
    type Item = Result<Entry<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let Some(user) = self.next_key() else {
                self.done = true;
                break;
            };
            if self.reverse {
                self.upper = Bound::Excluded(keys::first_of(&user));
            } else {
                self.lower = Bound::Excluded(keys::last_of(&user));
            }
            let mut search = user.clone();
            search.extend_from_slice(&(!self.snap).to_be_bytes());
            let Some(off) = self
                .memtables
                .iter()
                .find_map(|m| m.find(&search, user.len()))
            else {
                continue;
            };
            let guard = crossbeam_epoch::pin();
            self.db.pool.charge_read(0);
            let r = match record::read(&self.db.pool, off) {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            if r.kind == Kind::Put {
                return Some(Ok(Entry {
                    _guard: guard,
                    key: r.key,
                    value: r.value,
                }));
            }
        }
        None
    }
}
