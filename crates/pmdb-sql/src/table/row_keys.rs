//! The keys of a table's rows (the primary key's tuple, or a hidden row id) and of its
//! index entries (the index columns' tuple, then the row key), in the key encoding; the
//! row an index entry names.

use std::sync::atomic::Ordering;

use super::{Index, Table};
use crate::error::{CodecError, Result, SqlError, state};
use crate::keycode::{decode_key_prefix, encode_key};
use crate::read_point::ReadPoint;
use crate::types::Value;

impl Table {
    /// The row key of a row whose primary-key columns hold `values`.
    pub fn key_for(&self, values: &[Value]) -> Result<Vec<u8>> {
        let mut key = Vec::new();
        encode_key(&self.key_types, values, &mut key)
            .map_err(|e| SqlError::user(state::DATA_EXCEPTION, e.to_string()))?;
        Ok(key)
    }

    /// The row key of `row` (a new hidden row id for a table without a primary key).
    pub(super) fn key_of(&self, row: &[Value]) -> Result<Vec<u8>> {
        let mut key = Vec::new();
        if self.def.primary_key.is_empty() {
            let id = self.next_row_id.fetch_add(1, Ordering::Relaxed);
            encode_key(&self.key_types, &[Value::BigInt(id)], &mut key)
        } else {
            let values: Vec<Value> = self
                .def
                .primary_key
                .iter()
                .map(|&c| row[c as usize].clone())
                .collect();
            encode_key(&self.key_types, &values, &mut key)
        }
        .map_err(|e| SqlError::user(state::DATA_EXCEPTION, e.to_string()))?;
        Ok(key)
    }

    pub(super) fn index_key(&self, ix: &Index, row: &[Value], row_key: &[u8]) -> Result<Vec<u8>> {
        let values: Vec<Value> = ix
            .def
            .columns
            .iter()
            .map(|&c| row[c as usize].clone())
            .collect();
        let mut key = Vec::with_capacity(row_key.len() + 16);
        encode_key(&ix.types, &values, &mut key)
            .map_err(|e| SqlError::user(state::DATA_EXCEPTION, e.to_string()))?;
        key.extend_from_slice(row_key);
        Ok(key)
    }

    /// Gives `f` the row key and the stored row (whole) that the entry `entry_key` of
    /// index `index` names, read at `read_point`; an entry naming no row is damage.
    pub(crate) fn read_indexed<R>(
        &self,
        index: usize,
        read_point: &ReadPoint,
        entry_key: &[u8],
        f: impl FnOnce(&[u8], &[u8]) -> Result<R>,
    ) -> Result<R> {
        let ix = &self.indexes[index];
        let damaged = |source| SqlError::Damaged {
            what: format!("entry of index {:?}", ix.def.name),
            source,
        };
        let (_, row_key) = decode_key_prefix(&ix.types, entry_key).map_err(damaged)?;
        read_point.get(&self.rows, row_key, |row| {
            let row = row.ok_or_else(|| {
                damaged(CodecError::Mismatch(
                    "it names a row that does not exist".into(),
                ))
            })?;
            f(row_key, &self.whole(read_point, row_key, row)?)
        })?
    }
}
