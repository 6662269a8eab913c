//! The keys of a table's rows (the primary key's tuple, or a hidden row id) and of its
//! index entries (the index columns' tuple, then the row key), in the key encoding.

use std::sync::atomic::Ordering;

use super::{Index, Table};
use crate::error::{Result, SqlError, state};
use crate::keycode::encode_key;
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
}
