//! Reads built on the iterator stack: point reads that borrow the value where it lies
//! ([`ValueRef`]), and scans ([`Scan`]) that own their position and everything they read
//! (`Send + 'static`), so a caller can keep one across calls. Both hold the read view
//! they started from, so what is under them stays in PM and on disk until they are done.

use std::ops::{Bound, Deref, RangeBounds};
use std::sync::Arc;

use arc_swap::Guard;
use pmdb_pmem::{PmOff, Pool};

use crate::error::{DbError, Result};
use crate::format::record::{self, Kind};
use crate::index::Lookup;
use crate::iter::merge::MergingIterator;
use crate::iter::visible::VisibleIter;
use crate::keys;
use crate::levels::LevelLookup;
use crate::registry::SubtableState;
use crate::seq::{SeqTracker, SnapshotPin};
use crate::sst::SstValue;
use crate::view::ReadView;

/// A value read with no copy where the read mode allows: borrowed from PM, or from an
/// SST block (mapped straight from the file in the `direct` read mode, else from the
/// block cache). What holds it stays alive while this lives, even if the subtable is
/// dropped or compacted meanwhile.
pub struct ValueRef<'a>(Held<'a>);

enum Held<'a> {
    Pm {
        _view: Guard<Arc<ReadView>>,
        bytes: &'a [u8],
    },
    Sst(SstValue),
}

impl Deref for ValueRef<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Held::Pm { bytes, .. } => bytes,
            Held::Sst(v) => v,
        }
    }
}

impl AsRef<[u8]> for ValueRef<'_> {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::fmt::Debug for ValueRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ValueRef").field(&&**self).finish()
    }
}

/// Where the version a point read found lies.
enum Found {
    Pm(Kind, PmOff),
    Sst { tag: u64, value: SstValue },
}

/// The sequence number a point read reads at.
pub(crate) enum ReadAt<'a> {
    /// The newest visible data. The read may start again at a newer sequence number if
    /// versions it needed were pruned while it ran (see [`Lookup::Pruned`]).
    Latest(&'a Arc<SeqTracker>),
    /// A registered snapshot's sequence number.
    Snapshot(u64),
}

/// Unregistered tries of a latest read before it registers a snapshot, which no pruning
/// can overtake.
const OPTIMISTIC_TRIES: usize = 2;

/// The value of `key` in `state`: each memtable, then each global-index generation, then
/// each level, newest first, is asked for the newest version the read may see; the
/// first that has one decides.
pub(crate) fn get<'a>(
    pool: &'a Pool,
    state: &SubtableState,
    key: &[u8],
    at: ReadAt<'_>,
) -> Result<Option<ValueRef<'a>>> {
    state.check_live()?;
    let seqs = match at {
        ReadAt::Snapshot(snap) => {
            let view = state.view.load();
            return match lookup(&view, key, snap)? {
                Some(found) => value(pool, view, found),
                None => Err(pruned_under_snapshot(snap)),
            };
        }
        ReadAt::Latest(seqs) => seqs,
    };
    for _ in 0..OPTIMISTIC_TRIES {
        // The view is loaded after the sequence number: it holds every memtable with a
        // version at or below it.
        let snap = seqs.visible();
        let view = state.view.load();
        if let Some(found) = lookup(&view, key, snap)? {
            return value(pool, view, found);
        }
    }
    let pin = seqs.pin();
    let view = state.view.load();
    match lookup(&view, key, pin.seq())? {
        Some(found) => value(pool, view, found),
        None => Err(pruned_under_snapshot(pin.seq())),
    }
}

/// The error of a read that reached a layer whose records recovery could not all read:
/// what it would find there or below may be older than a version lost there.
fn lost_records(what: &str, id: u64) -> DbError {
    DbError::Corrupt(format!(
        "{what} {id} lost records to damage (see the recovery's damage reports), so the newest \
         version of this key may be among them; nothing older is served in its place"
    ))
}

fn pruned_under_snapshot(snap: u64) -> DbError {
    DbError::Corrupt(format!(
        "index: versions a registered snapshot at {snap} needs were dropped"
    ))
}

/// The newest version of `key` at `snap` in `view` (`Some(None)`: none), or `None` when
/// a layer dropped versions the read needed.
fn lookup(view: &ReadView, key: &[u8], snap: u64) -> Result<Option<Option<Found>>> {
    let indexes = view
        .memtables
        .iter()
        .map(|m| {
            (
                &m.index,
                m.lost_records().then_some(("memtable", m.desc.id)),
            )
        })
        .chain(view.gis.iter().map(|g| {
            (
                &g.index,
                g.lost_records()
                    .then_some(("global-index generation", g.id)),
            )
        }));
    for (index, lossy) in indexes {
        // Found there or not, the key's newest version may be among the lost records.
        if let Some((what, id)) = lossy {
            return Err(lost_records(what, id));
        }
        match index.lookup(key, snap)? {
            Lookup::Found { kind, rec } => return Ok(Some(Some(Found::Pm(kind, rec)))),
            Lookup::Absent => {}
            Lookup::Pruned => return Ok(None),
        }
    }
    Ok(match view.levels.get(key, snap)? {
        LevelLookup::Found { tag, value } => Some(Some(Found::Sst { tag, value })),
        LevelLookup::Absent => Some(None),
        LevelLookup::Pruned => None,
    })
}

fn value<'a>(
    pool: &'a Pool,
    view: Guard<Arc<ReadView>>,
    found: Option<Found>,
) -> Result<Option<ValueRef<'a>>> {
    match found {
        Some(Found::Pm(Kind::Put, rec)) => {
            let bytes = record::read(pool, rec)?.value;
            Ok(Some(ValueRef(Held::Pm { _view: view, bytes })))
        }
        Some(Found::Sst { tag, value }) if keys::kind_of_tag(tag) == Kind::Put => {
            Ok(Some(ValueRef(Held::Sst(value))))
        }
        _ => Ok(None),
    }
}

/// One key and its value, copied out of PM (see [`Scan::next_ref`] for a borrowed one).
#[derive(Clone, PartialEq, Eq)]
pub struct Entry {
    key: Vec<u8>,
    value: Vec<u8>,
}

impl Entry {
    pub(crate) fn new(key: Vec<u8>, value: Vec<u8>) -> Entry {
        Entry { key, value }
    }

    pub fn key(&self) -> &[u8] {
        &self.key
    }

    pub fn value(&self) -> &[u8] {
        &self.value
    }

    /// Copies key and value out.
    pub fn to_owned(&self) -> (Vec<u8>, Vec<u8>) {
        (self.key.clone(), self.value.clone())
    }

    /// Key and value, without a copy.
    pub fn into_parts(self) -> (Vec<u8>, Vec<u8>) {
        (self.key, self.value)
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("key", &self.key)
            .field("value", &self.value)
            .finish()
    }
}

/// One key and its value, borrowed from the scan (the value straight from PM on forward
/// scans) until its next step.
#[derive(Debug)]
pub struct EntryRef<'s> {
    pub key: &'s [u8],
    pub value: &'s [u8],
}

/// An ordered scan of a key range at a snapshot; see [`crate::Subtable::scan`]. It keeps
/// its position between calls and owns what it reads, so it can be kept, sent to another
/// thread, and resumed.
pub struct Scan {
    iter: VisibleIter<MergingIterator>,
    /// Keeps what the scan reads from being pruned while it runs.
    _pin: SnapshotPin,
    /// An error to report before anything else (the subtable was dropped).
    failed: Option<DbError>,
    done: bool,
}

fn owned_bound<K: AsRef<[u8]> + ?Sized>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Scan {
    pub(crate) fn new<K: AsRef<[u8]> + ?Sized>(
        state: &SubtableState,
        range: &impl RangeBounds<K>,
        pin: SnapshotPin,
        reverse: bool,
    ) -> Scan {
        let view = state.view.load_full();
        let lossy = view
            .memtables
            .iter()
            .find(|m| m.lost_records())
            .map(|m| lost_records("memtable", m.desc.id))
            .or_else(|| {
                let g = view.gis.iter().find(|g| g.lost_records())?;
                Some(lost_records("global-index generation", g.id))
            });
        let children = view.sources();
        Scan {
            iter: VisibleIter::new(
                MergingIterator::new(children),
                pin.seq(),
                owned_bound(range.start_bound()),
                owned_bound(range.end_bound()),
                reverse,
            ),
            _pin: pin,
            failed: state.check_live().err().or(lossy),
            done: false,
        }
    }

    /// The next entry in scan order, borrowed until the next call; `None` at the end.
    /// After an error the scan ends.
    pub fn next_ref(&mut self) -> Option<Result<EntryRef<'_>>> {
        if self.done {
            return None;
        }
        if let Some(e) = self.failed.take() {
            self.done = true;
            return Some(Err(e));
        }
        let step = self.iter.advance().and_then(|more| {
            if more {
                self.iter.value().map(Some)
            } else {
                Ok(None)
            }
        });
        match step {
            Ok(Some(value)) => Some(Ok(EntryRef {
                key: self.iter.key(),
                value,
            })),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Iterator for Scan {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_ref().map(|r| {
            r.map(|e| Entry {
                key: e.key.to_vec(),
                value: e.value.to_vec(),
            })
        })
    }
}
