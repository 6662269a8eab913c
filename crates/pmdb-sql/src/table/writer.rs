//! [`TableWriter`]: one statement's changes to one table, and the uniqueness of the
//! keys it writes (the primary key's and each unique index's) against concurrent
//! writers: before it writes a key it claims it with an exclusive lock (a row's lock for
//! a primary key, a lock on the values for a unique index), held to the end of the
//! block (or of the statement), then checks the key against what is committed now. A
//! claim another writer holds is never waited for here, under the table's write lock:
//! the writer reports it ([`TableWriter::blocked`]), and its caller lets the table go,
//! waits for the claim and runs the statement again, as PostgreSQL's second inserter
//! waits for the first to end and then sees its row (23505) or its rollback.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use pmdb_engine::{Subtable, WriteBatch};

use super::references::{Reference, in_types, key_of_row};
use super::{Table, count_key};
use crate::error::{Result, SqlError, state};
use crate::large_rows;
use crate::pending_checks::ChildCheck;
use crate::read_point::{Claim, ReadPoint, RowLocker, SqlTxn, TxnTable};
use crate::row_locks::LockMode;
use crate::rowcode::{encode_row, encoded_len};
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
    /// How many chunks this statement left each row key it wrote out of line (or whose
    /// chunks it deleted) with.
    chunked: HashMap<Vec<u8>, u32>,
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
    /// Takes the claims on the keys written (none without it: the checks still run).
    locker: Option<&'t mut RowLocker>,
    /// The claim another writer holds, which stopped the last change.
    blocked: Option<Claim>,
    /// The table's foreign keys, with their parents.
    references: Vec<Reference>,
    /// The values each unique index (by position) has been given by this statement,
    /// and the row that has them.
    claimed: HashMap<(usize, Vec<u8>), Vec<u8>>,
    /// Entries of unique indexes (by position) this statement removed.
    removed: HashSet<(usize, Vec<u8>)>,
}

/// A unique key an INSERT … ON CONFLICT checks its rows against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arbiter {
    PrimaryKey,
    /// The unique index at this position.
    Unique(usize),
}

/// The row an INSERT … ON CONFLICT's row conflicts with.
#[derive(Debug, PartialEq, Eq)]
pub enum Conflict {
    /// A row stored (committed, or the block's), by its key, now locked.
    Stored(Vec<u8>),
    /// A row this statement wrote.
    ThisStatement,
}

/// What a change returns when a claim it needs is held by another writer.
fn blocked_error() -> SqlError {
    SqlError::user(
        state::LOCK_NOT_AVAILABLE,
        "a key this statement writes is claimed by another transaction",
    )
}

/// The lock that claims `values` (a unique index's encoded tuple) of index `index_id`:
/// it cannot be a row's, whose keys begin with a presence byte `00` or `01`.
fn value_claim(index_id: u32, values: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(5 + values.len());
    k.push(0xff);
    k.extend_from_slice(&index_id.to_be_bytes());
    k.extend_from_slice(values);
    k
}

impl<'t> TableWriter<'t> {
    /// A writer of `table`, whose rows must find their parents among `references`
    /// (the catalog's [`crate::catalog::Catalog::references`] of the table).
    pub fn new(table: &'t Arc<Table>, references: Vec<Reference>) -> TableWriter<'t> {
        TableWriter {
            table,
            txn: None,
            batch: WriteBatch::new(),
            bytes: 0,
            written: Default::default(),
            chunked: HashMap::new(),
            ascending_after: None,
            load: false,
            rows: 0,
            committed: 0,
            delta: 0,
            segments: None,
            locker: None,
            blocked: None,
            references,
            claimed: HashMap::new(),
            removed: HashSet::new(),
        }
    }

    /// Claims the keys it writes through `locker` (the statement's, or its block's).
    pub(crate) fn claiming(mut self, locker: &'t mut RowLocker) -> TableWriter<'t> {
        self.locker = Some(locker);
        self
    }

    /// The claim that stopped the last change, held by another writer: the caller must
    /// drop this writer and the table's lock, wait for the claim, and start again.
    pub(crate) fn blocked(&self) -> Option<&Claim> {
        self.blocked.as_ref()
    }

    /// A writer for a bulk load: while rows arrive in ascending key order above the
    /// table's last key it skips the lookups of the duplicate check.
    pub fn for_load(table: &'t Arc<Table>, references: Vec<Reference>) -> Result<TableWriter<'t>> {
        let mut w = TableWriter::new(table, references);
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
        if let Some(locker) = self.locker.as_deref_mut() {
            locker.statement_done();
        }
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

    /// Whether a row is stored under `key`: as this statement left it, else as its
    /// block reads it, else as committed now (a row another writer committed after the
    /// block's snapshot counts, as in PostgreSQL's uniqueness check).
    fn exists(&mut self, key: &[u8]) -> Result<bool> {
        if let Some(&present) = self.written.get(key) {
            return Ok(present);
        }
        let rows = &self.table.rows;
        match &self.txn {
            Some(txn) => {
                Ok(txn.exists(rows, key)? || (rows.get(key)?.is_some() && !txn.saw(rows, key)?))
            }
            None => Ok(rows.get(key)?.is_some()),
        }
    }

    /// Claims `lock` (a row key, or a [`value_claim`]) of the table, exclusively.
    fn claim(&mut self, lock: &[u8]) -> Result<()> {
        let t = self.table;
        self.claim_in(t, lock, LockMode::Update)
    }

    /// Locks `key` of `table` in `mode`, if that needs no wait.
    fn claim_in(&mut self, table: &Table, key: &[u8], mode: LockMode) -> Result<()> {
        let Some(locker) = self.locker.as_deref_mut() else {
            return Ok(());
        };
        let claim = Claim {
            table: table.def.id,
            name: table.def.name.clone(),
            key: key.to_vec(),
            mode,
        };
        if locker.try_claim(&claim) {
            Ok(())
        } else {
            self.blocked = Some(claim);
            Err(blocked_error())
        }
    }

    /// Checks that each foreign key of `row` (all of its columns non-NULL, and for an
    /// update, changed from `old`) finds its parent row, locked FOR KEY SHARE so that it
    /// stays until this block ends: as this statement wrote it, as the block wrote it,
    /// or as committed now.
    fn check_references(&mut self, row: &[Value], key: &[u8], old: Option<&[Value]>) -> Result<()> {
        for i in 0..self.references.len() {
            let Reference { def: fk, parent } = self.references[i].clone();
            let Some(values) = key_of_row(&fk, row) else {
                continue;
            };
            if let Some(old) = old
                && fk
                    .columns
                    .iter()
                    .zip(&values)
                    .all(|(&c, v)| &old[usize::from(c)] == v)
            {
                continue;
            }
            if let Some(txn) = self.txn.as_deref()
                && txn.pending_checks().defers(&fk)
            {
                txn.pending_checks().child(ChildCheck {
                    table: self.table.def.id,
                    fk: fk.name,
                    key: key.to_vec(),
                });
                continue;
            }
            let missing = || self.table.missing_parent(&fk, &parent, &values);
            let Some(wanted) = in_types(&values, &parent, &fk.parent_columns) else {
                return Err(missing());
            };
            if !self.parent_found(&parent, &fk.parent_columns, &wanted, row, key)? {
                return Err(missing());
            }
        }
        Ok(())
    }

    /// Whether a row of `parent` holds `wanted` in `columns`, locking the one found.
    /// `row` (stored under `key`) is the row being written: in a table that references
    /// itself, it may be its own parent.
    fn parent_found(
        &mut self,
        parent: &Arc<Table>,
        columns: &[u16],
        wanted: &[Value],
        row: &[Value],
        key: &[u8],
    ) -> Result<bool> {
        let holds = |r: &[Value]| super::references::holds(r, columns, wanted);
        let own = parent.def.id == self.table.def.id;
        if own && holds(row) {
            return Ok(true);
        }
        for candidate in parent.keys_holding(columns, wanted, self.txn.as_deref())? {
            if own && let Some(&present) = self.written.get(&candidate) {
                // This statement wrote it: it holds the values it was found by.
                if present && candidate != key {
                    return Ok(true);
                }
                continue;
            }
            self.claim_in(parent, &candidate, LockMode::KeyShare)?;
            if let Some(r) = parent.row_for_check(&candidate, self.txn.as_deref())?
                && holds(&r)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Claims the values `row` (stored under `key`) gives each unique index in
    /// `indexes` (positions), and checks that no other row has them.
    fn claim_unique(&mut self, indexes: &[usize], row: &[Value], key: &[u8]) -> Result<()> {
        let t = self.table;
        for &i in indexes {
            let ix = &t.indexes[i];
            if ix
                .def
                .columns
                .iter()
                .any(|&c| row[usize::from(c)] == Value::Null)
            {
                // NULLs are distinct.
                continue;
            }
            let entry = t.index_key(ix, row, key)?;
            let values = entry[..entry.len() - key.len()].to_vec();
            self.claim(&value_claim(ix.def.id, &values))?;
            if self.holder(i, &values, key)?.is_some() {
                return Err(t.duplicate_in_index(i, row));
            }
            self.claimed.insert((i, values), key.to_vec());
        }
        Ok(())
    }

    /// The key of a row other than `key` that has `values` in unique index `i`: in
    /// this statement, in what is committed now, or in the block's own changes.
    fn holder(&mut self, i: usize, values: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>> {
        let ix = &self.table.indexes[i];
        if let Some(other) = self.claimed.get(&(i, values.to_vec()))
            && other != key
        {
            return Ok(Some(other.clone()));
        }
        let other_row = |entry: &[u8]| &entry[values.len()..] != key;
        let mut scan = ix.subtable.scan(values.to_vec()..);
        while let Some(e) = scan.next_ref() {
            let entry = e?.key;
            if !entry.starts_with(values) {
                break;
            }
            if !other_row(entry) || self.removed.contains(&(i, entry.to_vec())) {
                continue;
            }
            match &self.txn {
                // The block removed a row its snapshot held.
                Some(txn)
                    if txn.saw(&ix.subtable, entry)? && !txn.exists(&ix.subtable, entry)? => {}
                _ => return Ok(Some(entry[values.len()..].to_vec())),
            }
        }
        if let Some(txn) = &self.txn {
            for entry in txn.keys_with_prefix(&ix.subtable, values)? {
                if other_row(&entry) && !self.removed.contains(&(i, entry.clone())) {
                    return Ok(Some(entry[values.len()..].to_vec()));
                }
            }
        }
        Ok(None)
    }

    /// For INSERT … ON CONFLICT: the row `row` conflicts with on one of `arbiters`
    /// (each claimed first, as an insert claims it), or `None` if it conflicts with
    /// none, and then it is inserted. A row found stored is locked (its key claimed)
    /// before it is returned.
    pub fn insert_unless_conflict(
        &mut self,
        row: &[Value],
        arbiters: &[Arbiter],
    ) -> Result<Option<Conflict>> {
        let t = self.table;
        t.check(row)?;
        let key = t.key_of(row)?;
        for arbiter in arbiters {
            match *arbiter {
                Arbiter::PrimaryKey => {
                    self.claim(&key)?;
                    match self.written.get(&key).copied() {
                        Some(true) => return Ok(Some(Conflict::ThisStatement)),
                        Some(false) => {}
                        None if self.exists(&key)? => return Ok(Some(Conflict::Stored(key))),
                        None => {}
                    }
                }
                Arbiter::Unique(i) => {
                    let ix = &t.indexes[i];
                    if ix
                        .def
                        .columns
                        .iter()
                        .any(|&c| row[usize::from(c)] == Value::Null)
                    {
                        continue;
                    }
                    let entry = t.index_key(ix, row, &key)?;
                    let values = entry[..entry.len() - key.len()].to_vec();
                    self.claim(&value_claim(ix.def.id, &values))?;
                    if self.claimed.contains_key(&(i, values.clone())) {
                        return Ok(Some(Conflict::ThisStatement));
                    }
                    // Any row holding the values conflicts, whatever its key: the row
                    // proposed is not stored (and no row key is empty).
                    if let Some(other) = self.holder(i, &values, &[])? {
                        if self.written.get(&other) == Some(&true) {
                            return Ok(Some(Conflict::ThisStatement));
                        }
                        self.claim(&other)?;
                        return Ok(Some(Conflict::Stored(other)));
                    }
                }
            }
        }
        self.insert_keyed(row, key)?;
        Ok(None)
    }

    fn put(&mut self, sub: &Subtable, key: &[u8], value: &[u8]) {
        self.bytes += key.len() + value.len() + 16;
        self.batch.put(sub, key, value);
    }

    fn del(&mut self, sub: &Subtable, key: &[u8]) {
        self.bytes += key.len() + 16;
        self.batch.delete(sub, key);
    }

    /// Writes `row` under `key`: whole, or out of line when it is longer than a record
    /// takes (see [`large_rows`]). `replaced`: the chunks of the row it replaces under
    /// the same key (those it does not overwrite are deleted).
    fn put_row(&mut self, key: &[u8], row: &[Value], replaced: u32) -> Result<()> {
        let t = self.table;
        let mut value = Vec::with_capacity(64);
        encode_row(&t.types, row, &mut value)
            .map_err(|e| SqlError::user(state::DATA_EXCEPTION, e.to_string()))?;
        let size = large_rows::chunk_size(t.db.options().max_value_size);
        let chunks = size.map_or(0, |size| large_rows::chunks_for(value.len(), size));
        if chunks > 0 || replaced > 0 {
            let sub = t.db.subtable(&t.def.chunks_subtable())?;
            let size = size.unwrap_or(large_rows::MAX_CHUNK);
            for (n, part) in (0..chunks).zip(value.chunks(size)) {
                self.put(&sub, &large_rows::chunk_key(key, n), part);
            }
            for n in chunks..replaced {
                self.del(&sub, &large_rows::chunk_key(key, n));
            }
            self.chunked.insert(key.to_vec(), chunks);
            if chunks > 0 {
                value = large_rows::reference(&value, size);
            }
        }
        self.put(&t.rows, key, &value);
        Ok(())
    }

    /// Deletes the row stored under `key`, whose values are `old`, with its chunks.
    fn delete_row(&mut self, key: &[u8], old: &[Value]) -> Result<()> {
        let chunks = self.stored_chunks(key, old)?;
        if chunks > 0 {
            let sub = self.table.db.subtable(&self.table.def.chunks_subtable())?;
            for n in 0..chunks {
                self.del(&sub, &large_rows::chunk_key(key, n));
            }
            self.chunked.insert(key.to_vec(), 0);
        }
        self.del(&self.table.rows, key);
        Ok(())
    }

    /// How many chunks the row stored under `key` (values `old`) has: as this statement
    /// wrote it, else as its block or the committed state holds it. Read only for a row
    /// long enough to have been stored out of line.
    fn stored_chunks(&self, key: &[u8], old: &[Value]) -> Result<u32> {
        if let Some(&n) = self.chunked.get(key) {
            return Ok(n);
        }
        // A row written before a column was added is shorter than its values now.
        if encoded_len(old) <= large_rows::MIN_CHUNK {
            return Ok(0);
        }
        let rows = &self.table.rows;
        let stored = match &self.txn {
            Some(txn) => txn.own_or_committed(rows, key)?,
            None => rows.get(key)?.map(|v| v.to_vec()),
        };
        let Some(stored) = stored else {
            return Ok(0);
        };
        large_rows::chunks_of(&stored).map_err(|source| SqlError::Damaged {
            what: format!("row in table {:?}", self.table.def.name),
            source,
        })
    }

    pub fn insert(&mut self, row: &[Value]) -> Result<()> {
        let t = self.table;
        t.check(row)?;
        let key = t.key_of(row)?;
        self.insert_keyed(row, key)
    }

    /// Inserts `row`, checked, under its row key `key`.
    fn insert_keyed(&mut self, row: &[Value], key: Vec<u8>) -> Result<()> {
        let t = self.table;
        if !self.references.is_empty() {
            self.check_references(row, &key, None)?;
        }
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
                    // A bulk load holds the table throughout: no statement writes it
                    // meanwhile, and a block that wrote one of its keys fails its
                    // commit's validation; a claim would only cost a lock per row.
                    if !self.load {
                        self.claim(&key)?;
                    }
                    !self.exists(&key)?
                }
            };
            if !fresh {
                return Err(t.duplicate(row));
            }
            self.written.insert(key.clone(), true);
        }
        let unique = t.unique_indexes();
        if !unique.is_empty() {
            self.claim_unique(unique, row, &key)?;
        }
        for ix in &t.indexes {
            let ik = t.index_key(ix, row, &key)?;
            self.put(&ix.subtable, &ik, &[]);
        }
        self.put_row(&key, row, 0)?;
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
        for (i, ix) in t.indexes.iter().enumerate() {
            let ik = t.index_key(ix, old, key)?;
            self.del(&ix.subtable, &ik);
            if ix.def.unique {
                self.unclaim(i, &ik, key);
            }
        }
        self.delete_row(key, old)?;
        if !t.def.primary_key.is_empty() {
            self.written.insert(key.to_vec(), false);
        }
        self.rows += 1;
        self.delta -= 1;
        Ok(())
    }

    /// Notes that the entry `entry` of unique index `i` (of the row `key`) is gone.
    fn unclaim(&mut self, i: usize, entry: &[u8], key: &[u8]) {
        let values = entry[..entry.len() - key.len()].to_vec();
        if self
            .claimed
            .get(&(i, values.clone()))
            .is_some_and(|k| k == key)
        {
            self.claimed.remove(&(i, values));
        }
        self.removed.insert((i, entry.to_vec()));
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
            self.claim(&new_key)?;
            if self.exists(&new_key)? {
                return Err(t.duplicate(new));
            }
        }
        if !self.references.is_empty() {
            self.check_references(new, &new_key, Some(old))?;
        }
        let mut changed = Vec::new();
        for (i, ix) in t.indexes.iter().enumerate() {
            let old_ik = t.index_key(ix, old, key)?;
            let new_ik = t.index_key(ix, new, &new_key)?;
            if old_ik != new_ik && ix.def.unique {
                self.unclaim(i, &old_ik, key);
                changed.push(i);
            }
        }
        // Checked before anything of the change is written: a claim held elsewhere
        // leaves the batch as it was.
        self.claim_unique(&changed, new, &new_key)?;
        let replaced = if new_key != key {
            self.delete_row(key, old)?;
            self.written.insert(key.to_vec(), false);
            self.written.insert(new_key.clone(), true);
            0
        } else {
            self.stored_chunks(key, old)?
        };
        for ix in &t.indexes {
            let old_ik = t.index_key(ix, old, key)?;
            let new_ik = t.index_key(ix, new, &new_key)?;
            if old_ik != new_ik {
                self.del(&ix.subtable, &old_ik);
                self.put(&ix.subtable, &new_ik, &[]);
            }
        }
        self.put_row(&new_key, new, replaced)?;
        self.rows += 1;
        Ok(())
    }
}
