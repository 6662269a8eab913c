//! Write batches: puts and deletes over any number of subtables, committed atomically. A
//! batch names its subtables by id, so it holds no handle and can outlive them; the commit
//! pipeline checks each id against the subtables that exist when the batch commits.

use smallvec::SmallVec;

use crate::format::record::Kind;

/// Which subtable of which open database a write goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SubtableId {
    /// The open database (unique within the process).
    pub(crate) db: u64,
    /// The subtable's id in that database's catalog.
    pub(crate) id: u32,
}

/// An op: its key and value lie one after the other in the batch's `data`, from `at`.
struct Op {
    subtable: u32,
    kind: Kind,
    at: usize,
    key_len: usize,
    value_len: usize,
}

/// One write of a batch, as the commit pipeline reads it.
pub(crate) struct OpRef<'b> {
    pub subtable: u32,
    pub kind: Kind,
    pub key: &'b [u8],
    pub value: &'b [u8],
}

/// An atomic group of writes: after a crash either all of them are there or none. Keys
/// and values are copied into one buffer, so a batch of one write makes one allocation.
#[derive(Default)]
pub struct WriteBatch {
    /// The database of the first op; `mixed` once an op names another.
    pub(crate) db: Option<u64>,
    pub(crate) mixed: bool,
    ops: SmallVec<[Op; 1]>,
    data: Vec<u8>,
    pub(crate) bytes: usize,
}

impl WriteBatch {
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Sets `key` to `value` in `subtable` (a `&Subtable` or its [`SubtableId`]).
    pub fn put(
        &mut self,
        subtable: impl Into<SubtableId>,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) {
        self.push(subtable.into(), Kind::Put, key.as_ref(), value.as_ref());
    }

    /// Removes `key` from `subtable`.
    pub fn delete(&mut self, subtable: impl Into<SubtableId>, key: impl AsRef<[u8]>) {
        self.push(subtable.into(), Kind::Delete, key.as_ref(), &[]);
    }

    fn push(&mut self, subtable: SubtableId, kind: Kind, key: &[u8], value: &[u8]) {
        match self.db {
            None => self.db = Some(subtable.db),
            Some(db) => self.mixed |= db != subtable.db,
        }
        self.bytes += key.len() + value.len();
        self.ops.push(Op {
            subtable: subtable.id,
            kind,
            at: self.data.len(),
            key_len: key.len(),
            value_len: value.len(),
        });
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
    }

    /// Adds the writes of `other` after this batch's.
    pub(crate) fn append(&mut self, other: &WriteBatch) {
        for op in other.ops() {
            let id = SubtableId {
                db: other.db.unwrap_or_default(),
                id: op.subtable,
            };
            self.push(id, op.kind, op.key, op.value);
        }
    }

    /// The writes, in the order they were added.
    pub(crate) fn ops(&self) -> impl ExactSizeIterator<Item = OpRef<'_>> {
        self.ops.iter().map(|op| {
            let key_end = op.at + op.key_len;
            OpRef {
                subtable: op.subtable,
                kind: op.kind,
                key: &self.data[op.at..key_end],
                value: &self.data[key_end..key_end + op.value_len],
            }
        })
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Keeps the first `len` writes, dropping those added after them.
    pub(crate) fn truncate(&mut self, len: usize) {
        let Some(first_dropped) = self.ops.get(len) else {
            return;
        };
        self.data.truncate(first_dropped.at);
        self.ops.truncate(len);
        self.bytes = self.ops.iter().map(|op| op.key_len + op.value_len).sum();
    }

    pub fn clear(&mut self) {
        *self = WriteBatch::default();
    }
}
