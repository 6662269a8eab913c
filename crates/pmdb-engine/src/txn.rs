//! [`Transaction`]: optimistic transactions. A transaction reads at the snapshot it took
//! when it began (under read committed, at the one it last refreshed to), sees its own
//! writes, and keeps them in DRAM until it commits; commit
//! hands them to the commit pipeline as one batch, with what the leader must validate
//! first (see `commit::conflicts`). A conflict is [`DbError::Conflict`] and nothing is
//! applied; dropping a transaction discards it. Savepoints ([`Transaction::savepoint`])
//! mark points its writes can be rolled back to while it stays open.

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::batch::{SubtableId, WriteBatch};
use crate::commit::{KeyRange, Validation};
use crate::committer::PendingCommit;
use crate::core::Core;
use crate::error::{DbError, Result};
use crate::format::record::Kind;
use crate::options::WriteOptions;
use crate::read::{self, Entry, EntryRef, ReadAt, Scan};
use crate::seq::SnapshotPin;
use crate::snapshot::Snapshot;
use crate::subtable::Subtable;

/// How much of the concurrent world a transaction is protected from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Snapshot isolation: reads see one snapshot; commit fails if a key the transaction
    /// writes was changed by another commit after its snapshot (no lost update). Write
    /// skew is possible.
    #[default]
    Snapshot,
    /// Serializable: also fails if a key it read, or any key in a range it scanned, was
    /// changed after its snapshot, so the transaction behaves as if it ran at its commit.
    Serializable,
    /// Read committed: [`Transaction::refresh`] moves the reads to a snapshot taken then
    /// (a SQL session refreshes at each statement); commit fails only if a key the
    /// transaction wrote was changed after the snapshot it was first written at, so no
    /// update is lost. Reads are not validated.
    ReadCommitted,
}

/// A transaction's own writes: per subtable id, key → value (`None`: deleted).
type WriteSet = BTreeMap<u32, BTreeMap<Vec<u8>, Option<Vec<u8>>>>;

/// One of a transaction's own writes, in key order: key and value (`None`: deleted).
type OwnWrite = (Vec<u8>, Option<Vec<u8>>);

/// A point in a transaction's writes that [`Transaction::rollback_to`] returns to.
#[derive(Debug)]
pub struct Savepoint {
    id: u64,
}

/// An open savepoint: how many undo entries and untracked writes there were at it.
#[derive(Clone, Copy)]
struct Mark {
    id: u64,
    undo: usize,
    untracked: usize,
}

/// What one write replaced, kept while a savepoint is open.
struct Undo {
    subtable: u32,
    key: Vec<u8>,
    /// The transaction's own earlier write of the key (`None`: it had not written it).
    before: Option<Option<Vec<u8>>>,
    /// Whether this write noted the snapshot the key was first written at.
    noted_at: bool,
}

/// An optimistic transaction; see the module documentation. Not thread-safe by design: one
/// owner issues its reads and writes.
pub struct Transaction {
    core: Arc<Core>,
    pin: SnapshotPin,
    isolation: Isolation,
    writes: WriteSet,
    /// Writes applied with the commit that are neither validated nor seen by reads.
    untracked: WriteBatch,
    /// Keys read from the snapshot (serializable only), each with the sequence number
    /// it was read at.
    reads: Vec<(u32, Vec<u8>, u64)>,
    /// Keys watched, each with the sequence number it was watched from.
    watched: Vec<(u32, Vec<u8>, u64)>,
    /// Read committed only: the sequence number each written key was first written at,
    /// when the reads had moved past the first snapshot by then.
    written_at: BTreeMap<u32, BTreeMap<Vec<u8>, u64>>,
    /// The sequence number of the first snapshot.
    began_at: u64,
    /// Ranges scanned (serializable only).
    ranges: Vec<KeyRange>,
    /// Open savepoints, oldest first.
    savepoints: Vec<Mark>,
    /// While a savepoint is open: what each write replaced, oldest first.
    undo: Vec<Undo>,
    next_savepoint: u64,
}

impl Transaction {
    pub(crate) fn new(core: Arc<Core>, isolation: Isolation) -> Transaction {
        let pin = core.seqs.pin();
        Transaction {
            core,
            began_at: pin.seq(),
            pin,
            written_at: BTreeMap::new(),
            isolation,
            writes: WriteSet::new(),
            untracked: WriteBatch::new(),
            reads: Vec::new(),
            watched: Vec::new(),
            ranges: Vec::new(),
            savepoints: Vec::new(),
            undo: Vec::new(),
            next_savepoint: 0,
        }
    }

    /// The sequence number the transaction reads at.
    pub fn snapshot_seq(&self) -> u64 {
        self.pin.seq()
    }

    /// Under [`Isolation::ReadCommitted`], moves the reads to a snapshot taken now, which
    /// sees every commit made so far; the keys written before stay validated against the
    /// snapshots they were written at. Under the other levels it does nothing: their
    /// reads are one snapshot.
    pub fn refresh(&mut self) {
        if self.isolation == Isolation::ReadCommitted {
            self.pin = self.core.seqs.pin();
        }
    }

    /// Makes `value` the transaction's write of `key` in subtable `id` (`None`: a
    /// delete). It notes the snapshot the key is first written at when that is not the
    /// first one (read committed, after a refresh), and what the write replaced while a
    /// savepoint is open.
    fn record(&mut self, id: u32, key: &[u8], value: Option<Vec<u8>>) {
        let at = self.pin.seq();
        let known = self.writes.get(&id).is_some_and(|w| w.contains_key(key));
        let noted_at = at != self.began_at && !known;
        if noted_at {
            self.written_at
                .entry(id)
                .or_default()
                .insert(key.to_vec(), at);
        }
        let before = self
            .writes
            .entry(id)
            .or_default()
            .insert(key.to_vec(), value);
        if !self.savepoints.is_empty() {
            self.undo.push(Undo {
                subtable: id,
                key: key.to_vec(),
                before,
                noted_at,
            });
        }
    }

    /// Marks the transaction's writes as they are now, for [`Transaction::rollback_to`].
    /// Savepoints nest: each one opened later lies within those before it.
    pub fn savepoint(&mut self) -> Savepoint {
        let id = self.next_savepoint;
        self.next_savepoint += 1;
        self.savepoints.push(Mark {
            id,
            undo: self.undo.len(),
            untracked: self.untracked.len(),
        });
        Savepoint { id }
    }

    /// Puts the transaction's writes back as they were at `savepoint`, which stays open;
    /// the savepoints opened after it are gone. Reads made since stay validated (a
    /// commit may fail for a read that was rolled back, never pass for one it should
    /// not). [`DbError::NoSuchSavepoint`] if the savepoint is gone.
    pub fn rollback_to(&mut self, savepoint: &Savepoint) -> Result<()> {
        let at = self.position(savepoint)?;
        let mark = self.savepoints[at];
        self.savepoints.truncate(at + 1);
        let undone = self.undo.split_off(mark.undo);
        for u in undone.into_iter().rev() {
            let writes = self.writes.entry(u.subtable).or_default();
            match u.before {
                Some(value) => writes.insert(u.key.clone(), value),
                None => writes.remove(&u.key),
            };
            if u.noted_at
                && let Some(w) = self.written_at.get_mut(&u.subtable)
            {
                w.remove(&u.key);
            }
        }
        self.untracked.truncate(mark.untracked);
        Ok(())
    }

    /// Forgets `savepoint` and every savepoint opened after it, keeping the writes
    /// made since. [`DbError::NoSuchSavepoint`] if it is gone already.
    pub fn release(&mut self, savepoint: Savepoint) -> Result<()> {
        let at = self.position(&savepoint)?;
        self.savepoints.truncate(at);
        if self.savepoints.is_empty() {
            self.undo.clear();
        }
        Ok(())
    }

    fn position(&self, savepoint: &Savepoint) -> Result<usize> {
        self.savepoints
            .iter()
            .position(|m| m.id == savepoint.id)
            .ok_or(DbError::NoSuchSavepoint)
    }

    /// A snapshot at the transaction's sequence number. Its reads do not see the
    /// transaction's writes and are not validated.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::pinned(Arc::clone(&self.core), self.core.seqs.pin_again(&self.pin))
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Whether the transaction has written nothing.
    pub fn is_read_only(&self) -> bool {
        self.writes.values().all(BTreeMap::is_empty) && self.untracked.is_empty()
    }

    fn check(&self, sub: &Subtable) -> Result<u32> {
        if !Arc::ptr_eq(&sub.core, &self.core) {
            return Err(DbError::ForeignSubtable);
        }
        sub.state.check_live()?;
        Ok(sub.state.id)
    }

    /// The value of `key` in `sub`: the transaction's own write if it made one, else the
    /// snapshot's.
    pub fn get(&mut self, sub: &Subtable, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let id = self.check(sub)?;
        let key = key.as_ref();
        if let Some(own) = self.writes.get(&id).and_then(|w| w.get(key)) {
            return Ok(own.clone());
        }
        let value = read::get(
            &self.core.pool,
            &sub.state,
            key,
            ReadAt::Snapshot(self.pin.seq()),
        )?
        .map(|v| v.to_vec());
        if self.isolation == Isolation::Serializable {
            self.reads.push((id, key.to_vec(), self.pin.seq()));
        }
        Ok(value)
    }

    /// Sets `key` to `value` in `sub` when the transaction commits.
    pub fn put(
        &mut self,
        sub: &Subtable,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.core.options.check_limits(key, value)?;
        let id = self.check(sub)?;
        self.record(id, key, Some(value.to_vec()));
        Ok(())
    }

    /// Removes `key` from `sub` when the transaction commits.
    pub fn delete(&mut self, sub: &Subtable, key: impl AsRef<[u8]>) -> Result<()> {
        let key = key.as_ref();
        self.core.options.check_limits(key, &[])?;
        let id = self.check(sub)?;
        self.record(id, key, None);
        Ok(())
    }

    /// Makes the commit fail if `key` of `sub` was given a value after the snapshot,
    /// whatever the isolation: for a key whose appearance the transaction's writes
    /// depend on without reading it through the transaction. Its deletion meanwhile
    /// does not fail the commit, so that transactions which delete a key they saw and
    /// transactions which watch it, not having seen it, commit side by side.
    pub fn watch(&mut self, sub: &Subtable, key: impl AsRef<[u8]>) -> Result<()> {
        let id = self.check(sub)?;
        self.watched
            .push((id, key.as_ref().to_vec(), self.pin.seq()));
        Ok(())
    }

    /// Adds every write of `batch` to the transaction, as `put` and `delete` would.
    pub fn apply(&mut self, batch: &WriteBatch) -> Result<()> {
        if batch.mixed || batch.db.is_some_and(|db| db != self.core.id) {
            return Err(DbError::ForeignSubtable);
        }
        for op in batch.ops() {
            let value = (op.kind == Kind::Put).then_some(op.value);
            self.core
                .options
                .check_limits(op.key, value.unwrap_or_default())?;
            self.record(op.subtable, op.key, value.map(<[u8]>::to_vec));
        }
        Ok(())
    }

    /// Sets `key` to `value` in `sub` with the commit, after the tracked writes, without
    /// validating it and without showing it to the transaction's reads: for bookkeeping
    /// such as a statistic many transactions update, where the last writer may win.
    pub fn put_untracked(
        &mut self,
        sub: &Subtable,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.core.options.check_limits(key, value)?;
        self.check(sub)?;
        self.untracked.put(sub, key, value);
        Ok(())
    }

    /// Adds every write of `batch` as [`Transaction::put_untracked`] and
    /// [`Transaction::delete_untracked`] would.
    pub fn apply_untracked(&mut self, batch: &WriteBatch) -> Result<()> {
        if batch.mixed || batch.db.is_some_and(|db| db != self.core.id) {
            return Err(DbError::ForeignSubtable);
        }
        for op in batch.ops() {
            let value = (op.kind == Kind::Put).then_some(op.value);
            self.core
                .options
                .check_limits(op.key, value.unwrap_or_default())?;
        }
        self.untracked.append(batch);
        Ok(())
    }

    /// As [`Transaction::put_untracked`], removing `key`.
    pub fn delete_untracked(&mut self, sub: &Subtable, key: impl AsRef<[u8]>) -> Result<()> {
        let key = key.as_ref();
        self.core.options.check_limits(key, &[])?;
        self.check(sub)?;
        self.untracked.delete(sub, key);
        Ok(())
    }

    /// Entries of `sub` with keys in `range`, ascending: the snapshot's, with the
    /// transaction's own writes laid over them (as they are now; later writes do not
    /// show in a scan already begun).
    pub fn scan<K: AsRef<[u8]> + ?Sized>(
        &mut self,
        sub: &Subtable,
        range: impl RangeBounds<K>,
    ) -> Result<TxnScan> {
        self.scan_dir(sub, range, false)
    }

    /// As [`Transaction::scan`], descending.
    pub fn scan_rev<K: AsRef<[u8]> + ?Sized>(
        &mut self,
        sub: &Subtable,
        range: impl RangeBounds<K>,
    ) -> Result<TxnScan> {
        self.scan_dir(sub, range, true)
    }

    fn scan_dir<K: AsRef<[u8]> + ?Sized>(
        &mut self,
        sub: &Subtable,
        range: impl RangeBounds<K>,
        reverse: bool,
    ) -> Result<TxnScan> {
        let id = self.check(sub)?;
        let owned = |b: Bound<&K>| b.map(|k| k.as_ref().to_vec());
        let range = KeyRange {
            subtable: id,
            start: owned(range.start_bound()),
            end: owned(range.end_bound()),
        };
        let mut own: Vec<OwnWrite> = self
            .writes
            .get(&id)
            .map(|w| {
                w.range::<[u8], _>((as_slice(&range.start), as_slice(&range.end)))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        if reverse {
            own.reverse();
        }
        let pin = self.core.seqs.pin_again(&self.pin);
        let base = Scan::new(
            &sub.state,
            &(range.start.clone(), range.end.clone()),
            pin,
            reverse,
        );
        if self.isolation == Isolation::Serializable {
            self.ranges.push(range);
        }
        Ok(TxnScan {
            base,
            current: None,
            base_head: None,
            own: own.into_iter().peekable(),
            reverse,
        })
    }

    /// Commits the transaction's writes as one atomic batch, durably; fails with
    /// [`DbError::Conflict`] (nothing applied) if validation finds a change it must not
    /// overlook. A read-only transaction commits at once: its reads were one snapshot.
    pub fn commit(self) -> Result<()> {
        self.commit_with(WriteOptions::default())
    }

    /// As [`Transaction::commit`], with write options.
    pub fn commit_with(self, options: WriteOptions) -> Result<()> {
        if self.is_read_only() {
            return Ok(());
        }
        let (batch, validation) = self.request();
        self.core.commit(batch, options.sync, Some(validation))
    }

    /// As [`Transaction::commit_with`], without holding the caller's thread: the future
    /// resolves when the writes are durable and visible, or with the conflict. For async
    /// tasks (on a thread that said [`crate::lead_commits_here`], it commits before it
    /// returns).
    pub fn commit_async(self, options: WriteOptions) -> PendingCommit {
        if self.is_read_only() {
            return PendingCommit::ready(Ok(()));
        }
        let (batch, validation) = self.request();
        self.core
            .commit_async(batch, options.sync, Some(validation))
    }

    fn request(&self) -> (WriteBatch, Validation) {
        let mut batch = WriteBatch::new();
        let mut keys = Vec::new();
        for (&id, writes) in &self.writes {
            let sub = SubtableId {
                db: self.core.id,
                id,
            };
            let written_at = self.written_at.get(&id);
            for (key, value) in writes {
                match value {
                    Some(v) => batch.put(sub, key, v),
                    None => batch.delete(sub, key),
                }
                let at = written_at
                    .and_then(|w| w.get(key))
                    .copied()
                    .unwrap_or(self.began_at);
                keys.push((id, key.clone(), at));
            }
        }
        batch.append(&self.untracked);
        keys.extend(self.reads.iter().cloned());
        let validation = Validation {
            snapshot: self.began_at,
            keys,
            watched: self.watched.clone(),
            ranges: self.ranges.clone(),
        };
        (batch, validation)
    }

    /// Discards the transaction's writes (as dropping it does).
    pub fn rollback(self) {}
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// A transaction's scan: the snapshot's entries merged with the transaction's own writes
/// in the range (which win, and whose deletes hide entries).
pub struct TxnScan {
    base: Scan,
    /// The entry `next_ref` lent out last.
    current: Option<Entry>,
    base_head: Option<Entry>,
    own: std::iter::Peekable<std::vec::IntoIter<OwnWrite>>,
    reverse: bool,
}

impl TxnScan {
    /// The next entry, borrowed until the next call (copied out of PM, unlike
    /// [`Scan::next_ref`]'s); `None` at the end.
    pub fn next_ref(&mut self) -> Option<Result<EntryRef<'_>>> {
        match self.next_entry() {
            Ok(Some(entry)) => {
                let entry = self.current.insert(entry);
                Some(Ok(EntryRef {
                    key: entry.key(),
                    value: entry.value(),
                }))
            }
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    fn next_entry(&mut self) -> Result<Option<Entry>> {
        loop {
            if self.base_head.is_none() {
                self.base_head = self.base.next().transpose()?;
            }
            let take_own = match (&self.base_head, self.own.peek()) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(base), Some((key, _))) => {
                    let order = key.as_slice().cmp(base.key());
                    if order.is_eq() {
                        self.base_head = None;
                        true
                    } else {
                        order.is_lt() != self.reverse
                    }
                }
            };
            if !take_own {
                return Ok(self.base_head.take());
            }
            if let Some((key, Some(value))) = self.own.next() {
                return Ok(Some(Entry::new(key, value)));
            }
        }
    }
}

impl Iterator for TxnScan {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        self.next_entry().transpose()
    }
}
