//! A table as stored: its rows in one subtable (key: the primary key, or a hidden row
//! id, in the key encoding; value: the row codec) and each secondary index in another
//! (key: the index columns' tuple followed by the row key; value empty). Every change
//! to a row and its index entries goes into one `WriteBatch`, so they commit together.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use pmdb_engine::{Db, Snapshot, Subtable, WriteBatch};

use crate::error::{Result, SqlError, state};
use crate::keycode::encode_key;
use crate::read_point::{ReadPoint, SqlTxn, TxnTable};
use crate::rowcode::{decode_row, encode_row};
use crate::schema::{IndexDef, TableDef};
use crate::segment_layout::{SegmentBuilder, covered_key, is_covered};
use crate::types::{SqlType, Value};

/// Held while a statement changes a table; DDL holds it too.
/// An async mutex: statements hold it across the await of their commit, and a task
/// waiting for it must leave its executor thread to the holder.
pub type WriteGuard = tokio::sync::OwnedMutexGuard<()>;

pub struct Table {
    db: Db,
    def: TableDef,
    types: Vec<SqlType>,
    key_types: Vec<SqlType>,
    rows: Subtable,
    indexes: Vec<Index>,
    /// The columnar segments (absent for a table of an older pool opened read-only).
    segments: Option<Subtable>,
    /// Whether the segments held exactly the committed rows when last looked at (see
    /// [`crate::segment_layout`]): a hint for bulk loads whether to build chunks. What
    /// decides is the catalog entry, which transaction blocks may delete at any time.
    covered: Arc<AtomicBool>,
    next_row_id: Arc<AtomicI64>,
    /// Rows stored: each autocommit statement writes the new count into the catalog
    /// subtable in the batch of its rows, exactly; a transaction block adds its change at
    /// COMMIT without validating it (concurrent blocks may make it an estimate, which
    /// ANALYZE makes exact again).
    row_count: Arc<AtomicI64>,
    catalog: Subtable,
    /// Shared by every version of the table's handle, so DDL and writes serialize.
    writes: Arc<tokio::sync::Mutex<()>>,
    /// Set by DDL that replaced or dropped this handle; a writer that finds it set takes
    /// the catalog's current one.
    retired: AtomicBool,
}

/// What every version of one table's handle shares.
struct Shared {
    next_row_id: Arc<AtomicI64>,
    row_count: Arc<AtomicI64>,
    covered: Arc<AtomicBool>,
    writes: Arc<tokio::sync::Mutex<()>>,
    catalog: Subtable,
}

/// Key of a table's row count in the catalog subtable: `r`, then the table id (u64
/// big-endian); the value is an i64, little-endian.
pub fn count_key(id: u64) -> Vec<u8> {
    let mut k = vec![b'r'];
    k.extend_from_slice(&id.to_be_bytes());
    k
}

pub struct Index {
    pub def: IndexDef,
    pub subtable: Subtable,
    pub types: Vec<SqlType>,
}

impl Table {
    /// Opens (creating if missing) the subtables of `def`; `catalog` holds its row count.
    pub fn open(db: &Db, catalog: &Subtable, def: TableDef) -> Result<Table> {
        let rows = db.subtable(&def.rows_subtable())?;
        let next = if def.primary_key.is_empty() {
            match rows.scan_rev::<[u8]>(..).next().transpose()? {
                Some(e) => {
                    let last = crate::keycode::decode_key(&[SqlType::BigInt], e.key()).map_err(
                        |source| SqlError::Damaged {
                            what: format!("row id in table {:?}", def.name),
                            source,
                        },
                    )?;
                    match last[0] {
                        Value::BigInt(id) => id.saturating_add(1),
                        _ => 0,
                    }
                }
                None => 0,
            }
        } else {
            0
        };
        let count = match catalog.get(count_key(def.id))? {
            None => 0,
            Some(v) => v
                .as_ref()
                .try_into()
                .map(i64::from_le_bytes)
                .ok()
                .filter(|&n| n >= 0)
                .ok_or_else(|| SqlError::Damaged {
                    what: format!("row count of table {:?}", def.name),
                    source: crate::CodecError::Mismatch(format!("{:?}", v.as_ref())),
                })?,
        };
        let covered = is_covered(&def.name, catalog.get(covered_key(def.id))?.as_deref())?;
        let shared = Shared {
            next_row_id: Arc::new(AtomicI64::new(next)),
            row_count: Arc::new(AtomicI64::new(count)),
            covered: Arc::new(AtomicBool::new(covered)),
            writes: Arc::default(),
            catalog: catalog.clone(),
        };
        Self::with_parts(db, def, shared, rows)
    }

    /// A new handle for `def`, a changed definition of `old`'s table, sharing its write
    /// lock and row ids.
    pub fn replace(db: &Db, old: &Table, def: TableDef) -> Result<Table> {
        let rows = db.subtable(&def.rows_subtable())?;
        let shared = Shared {
            next_row_id: Arc::clone(&old.next_row_id),
            row_count: Arc::clone(&old.row_count),
            covered: Arc::clone(&old.covered),
            writes: Arc::clone(&old.writes),
            catalog: old.catalog.clone(),
        };
        Self::with_parts(db, def, shared, rows)
    }

    fn with_parts(db: &Db, def: TableDef, shared: Shared, rows: Subtable) -> Result<Table> {
        let indexes = def
            .indexes
            .iter()
            .map(|ix| {
                Ok(Index {
                    subtable: db.subtable(&def.index_subtable(ix))?,
                    types: ix
                        .columns
                        .iter()
                        .map(|&c| def.columns[c as usize].ty)
                        .collect(),
                    def: ix.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let segments = if db.read_only().is_some() {
            db.existing_subtable(&def.segments_subtable()).ok()
        } else {
            Some(db.subtable(&def.segments_subtable())?)
        };
        let covered = if segments.is_some() {
            shared.covered
        } else {
            Arc::new(AtomicBool::new(false))
        };
        Ok(Table {
            db: db.clone(),
            types: def.types(),
            key_types: def.key_types(),
            rows,
            indexes,
            segments,
            covered,
            next_row_id: shared.next_row_id,
            row_count: shared.row_count,
            catalog: shared.catalog,
            writes: shared.writes,
            retired: AtomicBool::new(false),
            def,
        })
    }

    /// Rows stored, as of the last committed statement.
    pub fn row_count(&self) -> u64 {
        self.row_count.load(Ordering::Acquire).max(0) as u64
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    pub fn def(&self) -> &TableDef {
        &self.def
    }

    pub fn types(&self) -> &[SqlType] {
        &self.types
    }

    pub fn key_types(&self) -> &[SqlType] {
        &self.key_types
    }

    pub fn rows(&self) -> &Subtable {
        &self.rows
    }

    pub fn indexes(&self) -> &[Index] {
        &self.indexes
    }

    pub fn segments(&self) -> Option<&Subtable> {
        self.segments.as_ref()
    }

    /// The catalog subtable, which holds the table's row count and segment state.
    pub fn catalog(&self) -> &Subtable {
        &self.catalog
    }

    /// Records that the segments now hold the rows (their build just committed).
    pub fn set_covered(&self) {
        self.covered.store(true, Ordering::Release);
    }

    /// Whether, at snapshot `at`, the columnar segments hold exactly the rows.
    pub fn covered_at(&self, at: &Snapshot) -> Result<bool> {
        if self.segments.is_none() {
            return Ok(false);
        }
        let entry = at.get(&self.catalog, covered_key(self.def.id))?;
        is_covered(&self.def.name, entry.as_deref())
    }

    pub fn subtable_names(&self) -> Vec<String> {
        [self.def.rows_subtable(), self.def.segments_subtable()]
            .into_iter()
            .chain(
                self.def
                    .indexes
                    .iter()
                    .map(|ix| self.def.index_subtable(ix)),
            )
            .collect()
    }
}

impl TxnTable for Table {
    fn id(&self) -> u64 {
        self.def.id
    }

    fn name(&self) -> &str {
        &self.def.name
    }

    fn row_subtable(&self) -> &Subtable {
        &self.rows
    }

    /// Adds to `tx` the row count with `delta` rows more, as a write no other transaction
    /// conflicts on, and what keeps the segments honest: if the entry that says they
    /// hold the rows is there at the snapshot, its deletion; if not, a watch on it, so
    /// that the commit fails should an ANALYZE mark them whole meanwhile (it could not
    /// have seen the transaction's rows).
    fn bookkeeping(&self, tx: &mut pmdb_engine::Transaction, delta: i64) -> Result<()> {
        let count = self.row_count.load(Ordering::Acquire) + delta;
        tx.put_untracked(&self.catalog, count_key(self.def.id), count.to_le_bytes())?;
        if self.segments.is_some() {
            let key = covered_key(self.def.id);
            if tx.get(&self.catalog, &key)?.is_some() {
                tx.delete_untracked(&self.catalog, &key)?;
            } else {
                tx.watch(&self.catalog, &key)?;
            }
        }
        Ok(())
    }

    /// Takes note of a committed transaction block that changed the table by `delta`
    /// rows (after [`Table::bookkeeping`]).
    fn committed_elsewhere(&self, delta: i64) {
        self.row_count.fetch_add(delta, Ordering::AcqRel);
        self.covered.store(false, Ordering::Release);
    }
}

impl Table {
    /// Sets the row count (ANALYZE counted the rows).
    pub fn set_row_count(&self, rows: i64) {
        self.row_count.store(rows, Ordering::Release);
    }

    /// Takes the write lock, blocking the thread: only off async executors (DDL runs on
    /// a blocking thread).
    pub fn write_lock(&self) -> WriteGuard {
        Arc::clone(&self.writes).blocking_lock_owned()
    }

    /// Takes the write lock, for async callers.
    pub async fn write_lock_async(&self) -> WriteGuard {
        Arc::clone(&self.writes).lock_owned().await
    }

    pub fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Decodes a stored row; damage is an error naming the table.
    pub fn decode(&self, bytes: &[u8]) -> Result<Vec<Value>> {
        decode_row(&self.types, bytes).map_err(|source| SqlError::Damaged {
            what: format!("row in table {:?}", self.def.name),
            source,
        })
    }

    /// The row key of a row whose primary-key columns hold `values`.
    pub fn key_for(&self, values: &[Value]) -> Result<Vec<u8>> {
        let mut key = Vec::new();
        encode_key(&self.key_types, values, &mut key)
            .map_err(|e| SqlError::user(state::DATA_EXCEPTION, e.to_string()))?;
        Ok(key)
    }

    /// The row key of `row` (a new hidden row id for a table without a primary key).
    fn key_of(&self, row: &[Value]) -> Result<Vec<u8>> {
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

    /// Checks `row` against the columns: count, types, lengths, NOT NULL and the
    /// primary key's implied NOT NULL.
    fn check(&self, row: &[Value]) -> Result<()> {
        if row.len() != self.types.len() {
            return Err(SqlError::user(
                state::DATA_EXCEPTION,
                format!(
                    "table {:?} has {} columns; a row of {} values was given",
                    self.def.name,
                    self.types.len(),
                    row.len()
                ),
            ));
        }
        for (i, (col, v)) in self.def.columns.iter().zip(row).enumerate() {
            if matches!(v, Value::Null)
                && (col.not_null || self.def.primary_key.contains(&(i as u16)))
            {
                return Err(SqlError::user(
                    state::NOT_NULL_VIOLATION,
                    format!(
                        "null value in column {:?} of table {:?} violates not-null constraint",
                        col.name, self.def.name
                    ),
                ));
            }
            col.ty.check(v).map_err(|_| {
                SqlError::user(
                    state::DATA_EXCEPTION,
                    format!(
                        "value {} does not fit column {:?} of type {}",
                        v.display(col.ty),
                        col.name,
                        col.ty
                    ),
                )
            })?;
        }
        Ok(())
    }

    fn index_key(&self, ix: &Index, row: &[Value], row_key: &[u8]) -> Result<Vec<u8>> {
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

    fn duplicate(&self, row: &[Value]) -> SqlError {
        let cols: Vec<&str> = self
            .def
            .primary_key
            .iter()
            .map(|&c| self.def.columns[c as usize].name.as_str())
            .collect();
        let vals: Vec<String> = self
            .def
            .primary_key
            .iter()
            .map(|&c| row[c as usize].display(self.def.columns[c as usize].ty))
            .collect();
        SqlError::user(
            state::UNIQUE_VIOLATION,
            format!(
                "duplicate key value violates the primary key of table {:?}: ({})=({})",
                self.def.name,
                cols.join(", "),
                vals.join(", ")
            ),
        )
    }
}

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

impl Table {
    /// Writes the entries of index `i` for every stored row, in batches.
    pub fn fill_index(&self, i: usize) -> Result<()> {
        let ix = &self.indexes[i];
        let db_write = |batch: WriteBatch| -> Result<()> {
            self.db.write(batch, pmdb_engine::WriteOptions::default())?;
            Ok(())
        };
        let mut batch = WriteBatch::new();
        let mut bytes = 0usize;
        let limit = self.fill_batch_bytes();
        let mut scan = self.rows.scan::<[u8]>(..);
        while let Some(e) = scan.next_ref() {
            let e = e?;
            let row = self.decode(e.value)?;
            let ik = self.index_key(ix, &row, e.key)?;
            bytes += ik.len() + 16;
            batch.put(&ix.subtable, &ik, []);
            if bytes >= limit {
                db_write(std::mem::take(&mut batch))?;
                bytes = 0;
            }
        }
        if !batch.is_empty() {
            db_write(batch)?;
        }
        Ok(())
    }
}

/// Bytes of the batches an index build or a bulk load commits, at most.
const FILL_BATCH_BYTES: usize = 8 << 20;

impl Table {
    /// Bytes of keys and values an index build or a bulk load puts into one batch: a
    /// few MiB, and at most a quarter of a memtable, which must take the whole batch
    /// (a load's chunks about double it).
    pub fn fill_batch_bytes(&self) -> usize {
        FILL_BATCH_BYTES.min((self.db.options().memtable_size / 4) as usize)
    }
}
