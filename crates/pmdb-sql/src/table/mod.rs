//! A table as stored: its rows in one subtable (key: the primary key, or a hidden row
//! id, in the key encoding; value: the row codec) and each secondary index in another
//! (key: the index columns' tuple followed by the row key; value empty). Every change
//! to a row and its index entries goes into one `WriteBatch`, so they commit together.
//! This module owns the handle and what every version of it shares; the keys of rows
//! and index entries ([`row_keys`]), the checks a row must pass ([`constraints`], with
//! the CHECK constraints in [`checks`] and the parents of its foreign keys in
//! [`references`]), the writer of a statement's changes ([`writer`]) and index builds
//! ([`index_fill`]) live beside it.

mod checks;
mod constraints;
mod index_fill;
mod references;
mod row_keys;
mod writer;

pub(crate) use checks::Checks;
pub use references::Reference;
pub(crate) use references::{holds, in_types, key_of_row, shown};
pub use writer::{Arbiter, Conflict, TableWriter};

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::Expr as SqlExpr;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use pmdb_engine::{Db, Snapshot, Subtable};

use crate::domain_rules::DomainTypes;
use crate::enum_type::EnumTypes;
use crate::error::{Result, SqlError};
use crate::large_rows::{self, ChunkSource};
use crate::names::RelName;
use crate::read_point::TxnTable;
use crate::rowcode::decode_row_from;
use crate::schema::{IndexDef, TableDef};
use crate::segment_layout::{covered_key, is_covered};
use crate::types::{SqlType, Value};

/// Held while a statement changes a table; DDL holds it too.
/// An async mutex: statements hold it across the await of their commit, and a task
/// waiting for it must leave its executor thread to the holder.
pub type WriteGuard = tokio::sync::OwnedMutexGuard<()>;

pub struct Table {
    db: Db,
    def: TableDef,
    /// The definition's schema and name, as the catalog keys the table.
    name: RelName,
    types: Vec<SqlType>,
    key_types: Vec<SqlType>,
    /// The rows' Arrow schema, made once: the fast path reads with it at each statement.
    schema: SchemaRef,
    rows: Subtable,
    indexes: Vec<Index>,
    /// The positions of the unique indexes in `indexes`, which every insert claims.
    unique: Vec<usize>,
    /// Each column's default expression, parsed from its definition.
    defaults: Vec<Option<SqlExpr>>,
    /// The CHECK constraints, planned.
    checks: Checks,
    /// Columns every stored row holds: those after were added by ALTER TABLE, and a
    /// row written before lacks them.
    required: usize,
    /// Each column's value in a row that lacks it (NULL unless it was added with a
    /// default).
    missing: Arc<[Value]>,
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
    /// Made by DDL whose transaction has not ended (see [`crate::catalog::block_ddl`]).
    pending: AtomicBool,
    /// The catalog's enum types, whose labels the values of enum columns must be.
    enums: EnumTypes,
    /// The catalog's domains, for a new version of the handle to plan its columns' rules.
    domains: DomainTypes,
}

/// What every version of one table's handle shares.
struct Shared {
    next_row_id: Arc<AtomicI64>,
    row_count: Arc<AtomicI64>,
    covered: Arc<AtomicBool>,
    writes: Arc<tokio::sync::Mutex<()>>,
    catalog: Subtable,
    enums: EnumTypes,
    domains: DomainTypes,
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
    pub fn open(
        db: &Db,
        catalog: &Subtable,
        def: TableDef,
        enums: &EnumTypes,
        domains: &DomainTypes,
    ) -> Result<Table> {
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
                    source: crate::error::CodecError::Mismatch(format!("{:?}", v.as_ref())),
                })?,
        };
        let covered = is_covered(&def.name, catalog.get(covered_key(def.id))?.as_deref())?;
        let shared = Shared {
            next_row_id: Arc::new(AtomicI64::new(next)),
            row_count: Arc::new(AtomicI64::new(count)),
            covered: Arc::new(AtomicBool::new(covered)),
            writes: Arc::default(),
            catalog: catalog.clone(),
            enums: Arc::clone(enums),
            domains: Arc::clone(domains),
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
            enums: Arc::clone(&old.enums),
            domains: Arc::clone(&old.domains),
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
        let defaults = def
            .columns
            .iter()
            .map(|c| {
                c.default
                    .as_deref()
                    .map(|text| {
                        parse_default(text).map_err(|reason| SqlError::Damaged {
                            what: format!("default of column {:?} of table {:?}", c.name, def.name),
                            source: crate::error::CodecError::Mismatch(reason),
                        })
                    })
                    .transpose()
            })
            .collect::<Result<Vec<_>>>()?;
        let checks = Checks::plan(&def, &shared.domains)?;
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
            name: def.rel_name(),
            types: def.types(),
            key_types: def.key_types(),
            schema: crate::arrow_conv::arrow_schema(&def, None),
            rows,
            unique: (0..indexes.len())
                .filter(|&i| indexes[i].def.unique)
                .collect(),
            indexes,
            defaults,
            checks,
            required: def
                .columns
                .iter()
                .rposition(|c| !c.added)
                .map_or(0, |p| p + 1),
            missing: def
                .columns
                .iter()
                .map(|c| c.missing.clone().unwrap_or(Value::Null))
                .collect(),
            segments,
            covered,
            next_row_id: shared.next_row_id,
            row_count: shared.row_count,
            catalog: shared.catalog,
            writes: shared.writes,
            retired: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            enums: shared.enums,
            domains: shared.domains,
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

    /// The rows' Arrow schema ([`crate::arrow_conv::arrow_schema`] of the definition).
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The table's schema and name.
    pub fn name(&self) -> &RelName {
        &self.name
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

    /// Columns every stored row holds (see [`crate::rowcode::walk_row_from`]).
    pub fn required_columns(&self) -> usize {
        self.required
    }

    /// Each column's value in a stored row that lacks it.
    pub fn missing_values(&self) -> &Arc<[Value]> {
        &self.missing
    }

    /// Column `c`'s default expression, if it has one.
    pub fn default_expr(&self, c: usize) -> Option<&SqlExpr> {
        self.defaults.get(c)?.as_ref()
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

    /// Records that the segments no longer hold the rows (a column was added).
    pub fn set_uncovered(&self) {
        self.covered.store(false, Ordering::Release);
    }

    /// Whether, at snapshot `at`, the columnar segments hold exactly the rows.
    pub fn covered_at(&self, at: &Snapshot) -> Result<bool> {
        if self.segments.is_none() {
            return Ok(false);
        }
        let entry = at.get(&self.catalog, covered_key(self.def.id))?;
        is_covered(&self.def.name, entry.as_deref())
    }

    /// The subtables the table holds, those it has made so far.
    pub fn subtable_names(&self) -> Vec<String> {
        let chunks = self.def.chunks_subtable();
        let made = self.db.existing_subtable(&chunks).is_ok();
        [self.def.rows_subtable(), self.def.segments_subtable()]
            .into_iter()
            .chain(made.then_some(chunks))
            .chain(
                self.def
                    .indexes
                    .iter()
                    .map(|ix| self.def.index_subtable(ix)),
            )
            .collect()
    }
}

/// A default expression's text as stored, parsed whole.
pub(crate) fn parse_default(text: &str) -> Result<SqlExpr, String> {
    let mut parser = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .map_err(|e| e.to_string())?;
    let e = parser.parse_expr().map_err(|e| e.to_string())?;
    match parser.peek_token().token {
        datafusion::sql::sqlparser::tokenizer::Token::EOF => Ok(e),
        t => Err(format!("{t} after the expression {e}")),
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

    /// The catalog's handle again, after a rollback of the DDL that retired it.
    pub(crate) fn revive(&self) {
        self.retired.store(false, Ordering::Release);
    }

    pub(crate) fn set_pending(&self, pending: bool) {
        self.pending.store(pending, Ordering::Release);
    }

    /// Whether DDL whose transaction has not ended made this handle.
    pub(crate) fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// The subtable of the chunks of rows stored out of line, if a row needed it.
    pub(crate) fn chunks(&self) -> Option<Subtable> {
        self.db.existing_subtable(&self.def.chunks_subtable()).ok()
    }

    /// The whole encoding of the row `stored` under `key`, as read from `source` (its
    /// chunks, if it is stored out of line, are read there too).
    pub(crate) fn whole<'a>(
        &self,
        source: &dyn ChunkSource,
        key: &[u8],
        stored: &'a [u8],
    ) -> Result<Cow<'a, [u8]>> {
        if !large_rows::is_reference(stored) {
            return Ok(Cow::Borrowed(stored));
        }
        large_rows::whole(source, self.chunks().as_ref(), &self.def.name, key, stored)
    }

    /// Decodes the row `stored` under `key`, as read from `source`; damage is an error
    /// naming the table.
    pub(crate) fn decode(
        &self,
        source: &dyn ChunkSource,
        key: &[u8],
        stored: &[u8],
    ) -> Result<Vec<Value>> {
        let bytes = self.whole(source, key, stored)?;
        decode_row_from(&self.types, self.required, &self.missing, &bytes).map_err(|source| {
            SqlError::Damaged {
                what: format!("row in table {:?}", self.def.name),
                source,
            }
        })
    }
}
