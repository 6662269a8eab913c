//! Optimistic validation of transactions, run by the commit leader before a group is
//! sequenced: has a key a transaction read or is about to overwrite, or any key in a range
//! it scanned, gained a version newer than its snapshot? Newer versions come from groups
//! already committed (found in the subtables' indexes and levels) and from the members
//! admitted before it in its own group (which commit first).

use std::ops::Bound;

use super::context::CommitCtx;
use crate::error::{DbError, Result};
use crate::format::MAX_SEQ;
use crate::format::record::Kind;
use crate::iter::InternalIterator;
use crate::iter::merge::MergingIterator;
use crate::keys::{self, IKey};
use crate::levels::LevelLookup;
use crate::registry::SubtableState;
use crate::view::ReadView;

/// A key range of one subtable.
#[derive(Clone, Debug)]
pub(crate) struct KeyRange {
    pub subtable: u32,
    pub start: Bound<Vec<u8>>,
    pub end: Bound<Vec<u8>>,
}

impl KeyRange {
    fn contains(&self, subtable: u32, key: &[u8]) -> bool {
        subtable == self.subtable && self.after_start(key) && self.before_end(key)
    }

    fn after_start(&self, key: &[u8]) -> bool {
        match &self.start {
            Bound::Included(s) => key >= s.as_slice(),
            Bound::Excluded(s) => key > s.as_slice(),
            Bound::Unbounded => true,
        }
    }

    fn before_end(&self, key: &[u8]) -> bool {
        match &self.end {
            Bound::Included(e) => key <= e.as_slice(),
            Bound::Excluded(e) => key < e.as_slice(),
            Bound::Unbounded => true,
        }
    }
}

/// What a transaction asks the leader to check before its batch may commit.
#[derive(Debug, Default)]
pub(crate) struct Validation {
    /// The sequence number the transaction began reading at (its ranges were scanned
    /// there).
    pub snapshot: u64,
    /// Keys that must have no version newer than the sequence number given with each:
    /// those it writes (no lost update; the snapshot they were first written at) and,
    /// when serializable, those it read.
    pub keys: Vec<(u32, Vec<u8>, u64)>,
    /// Keys that must not have been given a value after the sequence number given with
    /// each (a deletion does not count): what a transaction watches.
    pub watched: Vec<(u32, Vec<u8>, u64)>,
    /// Ranges (serializable) in which no key may have a version newer than the snapshot,
    /// so that no row appeared in or left what the transaction scanned.
    pub ranges: Vec<KeyRange>,
}

/// Checks `v` against the committed data and against `earlier`, the writes of the
/// members admitted before it in its group. Every earlier group must be indexed.
pub(super) fn check(
    ctx: &CommitCtx<'_>,
    v: &Validation,
    earlier: &[(u32, &[u8], Kind)],
) -> Result<()> {
    for (subtable, key, at) in &v.keys {
        if earlier.iter().any(|(s, k, _)| s == subtable && k == key) {
            return Err(conflict(ctx, *subtable, key));
        }
        let state = subtable_state(ctx, *subtable)?;
        if newest_tag(&state.view.load(), key)?.is_some_and(|tag| tag >> 8 > *at) {
            return Err(conflict(ctx, *subtable, key));
        }
    }
    for (subtable, key, at) in &v.watched {
        let put = |kind: Kind| kind == Kind::Put;
        if earlier
            .iter()
            .any(|(s, k, kind)| s == subtable && k == key && put(*kind))
        {
            return Err(conflict(ctx, *subtable, key));
        }
        let state = subtable_state(ctx, *subtable)?;
        if newest_tag(&state.view.load(), key)?
            .is_some_and(|tag| tag >> 8 > *at && put(keys::kind_of_tag(tag)))
        {
            return Err(conflict(ctx, *subtable, key));
        }
    }
    for range in &v.ranges {
        if let Some((s, k, _)) = earlier.iter().find(|(s, k, _)| range.contains(*s, k)) {
            return Err(conflict(ctx, *s, k));
        }
        let state = subtable_state(ctx, range.subtable)?;
        if let Some(key) = newer_in_range(&state.view.load(), range, v.snapshot)? {
            return Err(conflict(ctx, range.subtable, &key));
        }
    }
    Ok(())
}

fn subtable_state(ctx: &CommitCtx<'_>, id: u32) -> Result<std::sync::Arc<SubtableState>> {
    let state = ctx
        .registry
        .by_id(id)
        .ok_or(DbError::NoSuchSubtable { id })?;
    state.check_live()?;
    Ok(state)
}

fn conflict(ctx: &CommitCtx<'_>, subtable: u32, key: &[u8]) -> DbError {
    DbError::Conflict {
        subtable: ctx
            .registry
            .by_id(subtable)
            .map_or_else(|| format!("#{subtable}"), |s| s.name.clone()),
        key: key.to_vec(),
    }
}

/// The tag (sequence number and kind) of the newest version of `key`, tombstones
/// included: the first structure, newest first, that holds the key has it.
fn newest_tag(view: &ReadView, key: &[u8]) -> Result<Option<u64>> {
    let indexes = view
        .memtables
        .iter()
        .map(|m| &m.index)
        .chain(view.gis.iter().map(|g| &g.index));
    for index in indexes {
        if let Some(tag) = index.newest_tag(key)? {
            return Ok(Some(tag));
        }
    }
    Ok(match view.levels.get(key, MAX_SEQ)? {
        LevelLookup::Found { tag, .. } => Some(tag),
        LevelLookup::Absent => None,
        // Nothing is newer than MAX_SEQ; should a level say otherwise, count it as a
        // change (to a value) rather than miss one.
        LevelLookup::Pruned => Some(keys::tag(MAX_SEQ, Kind::Put)),
    })
}

/// The first key in `range` with a version newer than `snapshot`, walking every version
/// the view holds.
fn newer_in_range(view: &ReadView, range: &KeyRange, snapshot: u64) -> Result<Option<Vec<u8>>> {
    let mut iter = MergingIterator::new(view.sources());
    match &range.start {
        Bound::Included(k) => iter.seek(IKey::first_of(k).as_slice()),
        Bound::Excluded(k) => iter.seek(IKey::last_of(k).as_slice()),
        Bound::Unbounded => iter.seek_to_first(),
    }
    while iter.valid() {
        let ikey = iter.key();
        let user = keys::user_key(ikey);
        if !range.before_end(user) {
            break;
        }
        if range.after_start(user) && keys::seq_of(ikey) > snapshot {
            return Ok(Some(user.to_vec()));
        }
        iter.next();
    }
    iter.status()?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_contain_what_their_bounds_say() {
        let r = |start, end| KeyRange {
            subtable: 1,
            start,
            end,
        };
        let k = |s: &str| s.as_bytes().to_vec();
        let closed = r(Bound::Included(k("b")), Bound::Excluded(k("d")));
        assert!(closed.contains(1, b"b") && closed.contains(1, b"c"));
        assert!(!closed.contains(1, b"d") && !closed.contains(1, b"a"));
        assert!(!closed.contains(2, b"c"), "another subtable");
        let open = r(Bound::Excluded(k("b")), Bound::Included(k("d")));
        assert!(!open.contains(1, b"b") && open.contains(1, b"d"));
        assert!(r(Bound::Unbounded, Bound::Unbounded).contains(1, b""));
    }
}
