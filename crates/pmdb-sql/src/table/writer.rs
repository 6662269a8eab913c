//! [`TableWriter`]: one statement's changes to one table.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use pmdb_engine::{Subtable, WriteBatch};

use super::{Table, count_key};
use crate::error::{Result, SqlError, state};
use crate::read_point::{ReadPoint, SqlTxn, TxnTable};
use crate::rowcode::encode_row;
use crate::segment_layout::{SegmentBuilder, covered_key};
use crate::types::Value;

/// The changes of one statement to one table, gathered into a batch that commits them
/// all at once. It remembers the keys it wrote, so a statement that writes a primary key
/// twice fails like one that meets a stored row.
pub struct TableWriter<'t> {
    table: &'t Arc<Table>,
    /// The transaction block the changes go to at each commit, instead of the database.
    txn: Option<Arc<SqlTxn>>,
    pub batch: WriteBatch,
    /// Bytes of keys and values put into the batch.
    pub bytes: usize,
    /// Row keys present after this statement's changes so far (`true`) or removed
    /// (`false`).
    written: std::collections::HashMap<Vec<u8>, bool>,
    /// When set, rows arrive in ascending key order above every stored key, and the
    /// duplicate check compares with the previous key only (a bulk load).
    ascending_after: Option<Vec<u8>>,
    /// A bulk load commits as it goes; what it committed, lookups find.
    load: bool,
    rows: u64,
    /// Rows changed by what was committed.
    committed: u64,
    /// Rows added less rows removed by what is in the batch.
    delta: i64,
    /// A bulk load into a table whose segments hold its rows builds their chunks as it
    /// goes; `None` once anything else happened, and the commit marks the segments stale.
    segments: Option<SegmentBuilder>,
}

impl<'t> TableWriter<'t> {
    pub fn new(table: &'t Arc<Table>) -> TableWriter<'t> {
        TableWriter {
            table,
            txn: None,
            batch: WriteBatch::new(),
            bytes: 0,
            written: Default::default(),
            ascending_after: None,
            load: false,
            rows: 0,
            committed: 0,
            delta: 0,
            segments: None,
        }
    }

    /// A writer for a bulk load: while rows arrive in ascending key order above the
    /// table's last key it skips the lookups of the duplicate check.
    pub fn for_load(table: &'t Arc<Table>) -> Result<TableWriter<'t>> {
        let mut w = TableWriter::new(table);
        w.load = true;
        if table.covered.load(Ordering::Acquire) {
            w.segments = Some(SegmentBuilder::new(Arc::from(table.types())));
        }
        if !table.def.primary_key.is_empty() {
            let last = table.rows.scan_rev::<[u8]>(..).next().transpose()?;
            w.ascending_after = Some(last.map(|e| e.key().to_vec()).unwrap_or_default());
        }
        Ok(w)
    }

    /// Sends the changes to the transaction block of `read_point`, if it has one (a bulk
    /// load in a block is a plain insert: its rows gather in the transaction).
    pub fn through(mut self, read_point: &ReadPoint) -> TableWriter<'t> {
        if let ReadPoint::Transaction(txn) = read_point {
            self.txn = Some(Arc::clone(txn));
            self.load = false;
            self.segments = None;
            self.ascending_after = None;
        }
        self
    }

    /// Rows changed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Rows changed by what was committed so far.
    pub fn committed(&self) -> u64 {
        self.committed
    }

    /// Commits what the batch holds, with the table's new row count. The duplicate
    /// check goes on across commits.
    pub async fn commit(&mut self) -> Result<()> {
        let t = self.table;
        if self.batch.is_empty() {
            return Ok(());
        }
        if let Some(txn) = &self.txn {
            txn.write(Arc::clone(t) as Arc<dyn TxnTable>, &self.batch, self.delta)?;
            self.batch.clear();
            self.committed = self.rows;
            self.delta = 0;
            self.bytes = 0;
            return Ok(());
        }
        let count = t.row_count.load(Ordering::Acquire) + self.delta;
        self.batch
            .put(&t.catalog, count_key(t.def.id), count.to_le_bytes());
        let keep_segments = match (&mut self.segments, &t.segments) {
            (Some(builder), Some(segments)) => {
                builder.drain_into(&mut self.batch, segments, t.db.options().max_value_size)?
            }
            _ => false,
        };
        // The entry as stored, not the flag: a transaction block may have deleted it.
        let stale = !keep_segments && t.catalog.get(covered_key(t.def.id))?.is_some();
        if stale {
            self.segments = None;
            self.batch.delete(&t.catalog, covered_key(t.def.id));
        }
        // Awaited, not waited for: the caller's executor thread stays free.
        t.db.write_async(
            std::mem::take(&mut self.batch),
            pmdb_engine::WriteOptions::default(),
        )
        .await?;
        t.row_count.store(count, Ordering::Release);
        self.committed = self.rows;
        if stale {
            t.covered.store(false, Ordering::Release);
        }
        self.delta = 0;
        self.bytes = 0;
        if self.load {
            self.written.clear();
        }
        Ok(())
    }

    fn exists(&mut self, key: &[u8]) -> Result<bool> {
        if let Some(&present) = self.written.get(key) {
            return Ok(present);
        }
        match &self.txn {
            Some(txn) => txn.exists(&self.table.rows, key),
            None => Ok(self.table.rows.get(key)?.is_some()),
        }
    }

    fn put(&mut self, sub: &Subtable, key: &[u8], value: &[u8]) {
        self.bytes += key.len() + value.len() + 16;
        self.batch.put(sub, key, value);
    }

    fn del(&mut self, sub: &Subtable, key: &[u8]) {
        self.bytes += key.len() + 16;
        self.batch.delete(sub, key);
    }

    pub fn insert(&mut self, row: &[Value]) -> Result<()> {
        let t = self.table;
        t.check(row)?;
        let key = t.key_of(row)?;
        if !t.def.primary_key.is_empty() {
            let fresh = match &mut self.ascending_after {
                Some(last) if key.as_slice() > last.as_slice() => {
                    last.clone_from(&key);
                    true
                }
                _ => {
                    // Out of order: from here on, every key is looked up, and chunks
                    // in key order can no longer be built.
                    self.ascending_after = None;
                    self.segments = None;
                    !self.exists(&key)?
                }
            };
            if !fresh {
                return Err(t.duplicate(row));
            }
            self.written.insert(key.clone(), true);
        }
        let mut value = Vec::with_capacity(64);
        encode_row(&t.types, row, &mut value)
            .map_err(|e| SqlError::user(state::DATA_EXCEPTION, e.to_string()))?;
        for ix in &t.indexes {
            let ik = t.index_key(ix, row, &key)?;
            self.put(&ix.subtable, &ik, &[]);
        }
        self.put(&t.rows, &key, &value);
        if let Some(s) = &mut self.segments {
            s.note_row(&key);
        }
        self.rows += 1;
        self.delta += 1;
        Ok(())
    }

    /// The columns of the rows just inserted (in table order, of the columns' Arrow
    /// types), for the segments a bulk load builds.
    pub fn add_columns(&mut self, columns: &[datafusion::arrow::array::ArrayRef]) {
        if let Some(s) = &mut self.segments {
            s.add_columns(columns);
        }
    }

    /// Deletes the row stored under `key`, whose values are `old`.
    pub fn delete(&mut self, key: &[u8], old: &[Value]) -> Result<()> {
        let t = self.table;
        for ix in &t.indexes {
            let ik = t.index_key(ix, old, key)?;
            self.del(&ix.subtable, &ik);
        }
        self.del(&t.rows, key);
        if !t.def.primary_key.is_empty() {
            self.written.insert(key.to_vec(), false);
        }
        self.rows += 1;
        self.delta -= 1;
        Ok(())
    }

    /// Replaces the row stored under `key` (values `old`) with `new`.
    pub fn update(&mut self, key: &[u8], old: &[Value], new: &[Value]) -> Result<()> {
        let t = self.table;
        t.check(new)?;
        let new_key = if t.def.primary_key.is_empty() {
            key.to_vec()
        } else {
            t.key_of(new)?
        };
        if new_key != key {
            if self.exists(&new_key)? {
                return Err(t.duplicate(new));
            }
            self.del(&t.rows, key);
            self.written.insert(key.to_vec(), false);
            self.written.insert(new_key.clone(), true);
        }
        for ix in &t.indexes {
            let old_ik = t.index_key(ix, old, key)?;
            let new_ik = t.index_key(ix, new, &new_key)?;
            if old_ik != new_ik {
                self.del(&ix.subtable, &old_ik);
                self.put(&ix.subtable, &new_ik, &[]);
            }
        }
        let mut value = Vec::with_capacity(64);
        encode_row(&t.types, new, &mut value)
            .map_err(|e| SqlError::user(state::DATA_EXCEPTION, e.to_string()))?;
        self.put(&t.rows, &new_key, &value);
        self.rows += 1;
        Ok(())
    }
}
