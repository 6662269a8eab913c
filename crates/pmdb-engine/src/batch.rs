//! Write batches: puts and deletes over any number of subtables, committed atomically.

use crate::db::Subtable;
use crate::format::record::Kind;

pub(crate) struct Op {
    pub subtable: Subtable,
    pub kind: Kind,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// An atomic group of writes: after a crash either all of them are there or none.
#[derive(Default)]
pub struct WriteBatch {
    pub(crate) ops: Vec<Op>,
    pub(crate) bytes: usize,
}

impl WriteBatch {
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Sets `key` to `value` in `subtable`.
    pub fn put(&mut self, subtable: &Subtable, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.push(subtable, Kind::Put, key.as_ref(), value.as_ref());
    }

    /// Removes `key` from `subtable`.
    pub fn delete(&mut self, subtable: &Subtable, key: impl AsRef<[u8]>) {
        self.push(subtable, Kind::Delete, key.as_ref(), &[]);
    }

    fn push(&mut self, subtable: &Subtable, kind: Kind, key: &[u8], value: &[u8]) {
        self.bytes += key.len() + value.len();
        self.ops.push(Op {
            subtable: subtable.clone(),
            kind,
            key: key.to_vec(),
            value: value.to_vec(),
        });
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn clear(&mut self) {
        self.ops.clear();
        self.bytes = 0;
    }
}
