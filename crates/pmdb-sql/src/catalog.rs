//! The catalog: every table's definition, kept in the subtable `sql.catalog` (one entry
//! per table, keyed by its name) and in memory as [`Table`] handles. DDL changes the
//! catalog entry and the subtables in an order that a crash at any point leaves either
//! the old or the new table, plus at worst subtables no entry names; those are dropped
//! at the next open.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard, RwLock};
use pmdb_engine::{Db, WriteBatch, WriteOptions};

use crate::error::{Result, SqlError, state};
use crate::schema::{IndexDef, TableDef};
use crate::segment_layout::{COVERED, covered_key};
use crate::table::{Table, TableWriter, WriteGuard, count_key};

const CATALOG: &str = "sql.catalog";
/// Key of the id the next table gets (a u64, little-endian).
const NEXT_ID_KEY: &[u8] = b"n";
/// Prefix of the table entries' keys; the table name follows.
const TABLE_PREFIX: u8 = b't';

pub struct Catalog {
    db: Db,
    tables: RwLock<BTreeMap<String, Arc<Table>>>,
    /// Serializes DDL, so two statements never race on the next id or on one table.
    ddl: Mutex<()>,
    /// Counts finished DDL statements: a plan made at one generation may name tables
    /// that a later one replaced.
    generation: AtomicU64,
}

/// Held while a DDL statement runs; the catalog's generation moves on when it ends.
struct DdlGuard<'c> {
    _serial: MutexGuard<'c, ()>,
    generation: &'c AtomicU64,
}

impl Drop for DdlGuard<'_> {
    fn drop(&mut self) {
        self.generation.fetch_add(1, Ordering::Release);
    }
}

fn table_key(name: &str) -> Vec<u8> {
    let mut k = vec![TABLE_PREFIX];
    k.extend_from_slice(name.as_bytes());
    k
}

impl Catalog {
    /// Loads the catalog of `db`. A damaged entry fails the open with its name; it is
    /// never skipped.
    pub fn open(db: &Db) -> Result<Catalog> {
        let read_only = db.read_only().is_some();
        let cat = if read_only {
            db.existing_subtable(CATALOG).ok()
        } else {
            Some(db.subtable(CATALOG)?)
        };
        let mut tables = BTreeMap::new();
        if let Some(cat) = &cat {
            for entry in cat.scan(vec![TABLE_PREFIX]..vec![TABLE_PREFIX + 1]) {
                let entry = entry?;
                let name = String::from_utf8_lossy(&entry.key()[1..]).into_owned();
                let def = TableDef::decode(entry.value()).map_err(|source| SqlError::Damaged {
                    what: format!("catalog entry of table {name:?}"),
                    source,
                })?;
                if def.name != name {
                    return Err(SqlError::Damaged {
                        what: format!("catalog entry of table {name:?}"),
                        source: crate::error::CodecError::Mismatch(format!(
                            "it defines a table named {:?}",
                            def.name
                        )),
                    });
                }
                tables.insert(name, Arc::new(Table::open(db, cat, def)?));
            }
        }
        let catalog = Catalog {
            db: db.clone(),
            tables: RwLock::new(tables),
            ddl: Mutex::new(()),
            generation: AtomicU64::new(0),
        };
        if !read_only {
            catalog.drop_orphans()?;
        }
        Ok(catalog)
    }

    /// How many DDL statements have ended since the catalog was opened.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn ddl(&self) -> DdlGuard<'_> {
        DdlGuard {
            _serial: self.ddl.lock(),
            generation: &self.generation,
        }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    pub fn table(&self, name: &str) -> Option<Arc<Table>> {
        self.tables.read().get(name).cloned()
    }

    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.tables.read().values().cloned().collect()
    }

    pub fn table_or_error(&self, name: &str) -> Result<Arc<Table>> {
        self.table(name).ok_or_else(|| {
            SqlError::user(
                state::UNDEFINED_TABLE,
                format!("table {name:?} does not exist"),
            )
        })
    }

    /// Table `name`, locked for a statement's writes (the handle current once locked);
    /// blocks the thread, so only for callers off async executors.
    pub fn lock_table(&self, name: &str) -> Result<(Arc<Table>, WriteGuard)> {
        loop {
            let table = self.table_or_error(name)?;
            let guard = table.write_lock();
            if !table.is_retired() {
                return Ok((table, guard));
            }
        }
    }

    /// As [`Catalog::lock_table`], for async callers.
    pub async fn lock_table_async(&self, name: &str) -> Result<(Arc<Table>, WriteGuard)> {
        loop {
            let table = self.table_or_error(name)?;
            let guard = table.write_lock_async().await;
            if !table.is_retired() {
                return Ok((table, guard));
            }
        }
    }

    fn catalog_subtable(&self) -> Result<pmdb_engine::Subtable> {
        Ok(self.db.subtable(CATALOG)?)
    }

    /// Creates `def` (its id is given here). `Ok(false)` if the table exists and
    /// `if_not_exists` was given.
    pub fn create_table(&self, mut def: TableDef, if_not_exists: bool) -> Result<bool> {
        let _ddl = self.ddl();
        if self.table(&def.name).is_some() {
            return if if_not_exists {
                Ok(false)
            } else {
                Err(SqlError::user(
                    state::DUPLICATE_TABLE,
                    format!("table {:?} already exists", def.name),
                ))
            };
        }
        let cat = self.catalog_subtable()?;
        let id = self.next_id(&cat)?;
        def.id = id;
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_DEFINITION, m))?;
        // The subtable first: a crash before the entry leaves an empty subtable that the
        // next open drops, and the id is given again.
        let table = Table::open(&self.db, &cat, def.clone())?;
        let mut batch = WriteBatch::new();
        batch.put(&cat, table_key(&def.name), def.encode());
        batch.put(&cat, count_key(id), 0i64.to_le_bytes());
        // An empty table's segments (none) hold its rows.
        batch.put(&cat, covered_key(id), COVERED);
        batch.put(&cat, NEXT_ID_KEY, (id + 1).to_le_bytes());
        self.db.write(batch, WriteOptions::default())?;
        table.set_covered();
        self.tables
            .write()
            .insert(def.name.clone(), Arc::new(table));
        Ok(true)
    }

    /// Drops table `name` and its indexes. `Ok(false)` if it does not exist and
    /// `if_exists` was given.
    pub fn drop_table(&self, name: &str, if_exists: bool) -> Result<bool> {
        let _ddl = self.ddl();
        let Some(table) = self.table(name) else {
            return if if_exists {
                Ok(false)
            } else {
                Err(self.table_or_error(name).err().expect("no such table"))
            };
        };
        let _writes = table.write_lock();
        // The entry first: a crash after it leaves subtables no entry names, which the
        // next open drops, finishing the DROP.
        let cat = self.catalog_subtable()?;
        let mut batch = WriteBatch::new();
        batch.delete(&cat, table_key(name));
        batch.delete(&cat, count_key(table.def().id));
        batch.delete(&cat, covered_key(table.def().id));
        self.db.write(batch, WriteOptions::default())?;
        self.tables.write().remove(name);
        table.retire();
        for sub in table.subtable_names() {
            self.db.drop_subtable(&sub)?;
        }
        Ok(true)
    }

    /// Creates index `index_name` on `columns` of table `table` and fills it from the
    /// rows. `Ok(false)` if an index of that name exists and `if_not_exists` was given.
    pub fn create_index(
        &self,
        table: &str,
        index_name: &str,
        columns: &[String],
        if_not_exists: bool,
    ) -> Result<bool> {
        let _ddl = self.ddl();
        if let Some(t) = self.table_of_index(index_name) {
            return if if_not_exists {
                Ok(false)
            } else {
                Err(SqlError::user(
                    state::DUPLICATE_OBJECT,
                    format!(
                        "index {index_name:?} already exists (on table {:?})",
                        t.def().name
                    ),
                ))
            };
        }
        let old = self.table_or_error(table)?;
        let _writes = old.write_lock();
        let mut def = old.def().clone();
        let positions = columns
            .iter()
            .map(|c| {
                def.column(c).map(|p| p as u16).ok_or_else(|| {
                    SqlError::user(
                        state::UNDEFINED_COLUMN,
                        format!("column {c:?} does not exist in table {table:?}"),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let index = IndexDef {
            id: def.next_index_id,
            name: index_name.to_string(),
            columns: positions,
        };
        def.next_index_id = def
            .next_index_id
            .checked_add(1)
            .ok_or_else(|| SqlError::user(state::PROGRAM_LIMIT, "index ids are exhausted"))?;
        def.indexes.push(index);
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_DEFINITION, m))?;
        // Fill the index subtable, then publish the definition: a crash before that
        // leaves a subtable no definition names, dropped at the next open.
        let new = Table::replace(&self.db, &old, def.clone())?;
        new.fill_index(new.def().indexes.len() - 1)?;
        self.catalog_subtable()?
            .put(table_key(&def.name), def.encode())?;
        self.tables.write().insert(def.name.clone(), Arc::new(new));
        old.retire();
        Ok(true)
    }

    /// Gives table `name`, keyed by hidden row ids, the primary key `columns`: its rows
    /// are copied into a table keyed by them (a new id, so new subtables), which then
    /// takes the name in one catalog batch, and the old subtables are dropped. A crash
    /// before that batch leaves subtables no entry names, dropped at the next open; the
    /// table is as it was.
    pub fn add_primary_key(&self, name: &str, columns: &[String]) -> Result<()> {
        let _ddl = self.ddl();
        let old = self.table_or_error(name)?;
        let _writes = old.write_lock();
        if !old.def().primary_key.is_empty() {
            return Err(SqlError::user(
                state::INVALID_DEFINITION,
                format!("multiple primary keys for table {name:?} are not allowed"),
            ));
        }
        let cat = self.catalog_subtable()?;
        let id = self.next_id(&cat)?;
        let mut def = old.def().clone();
        def.id = id;
        def.primary_key = columns
            .iter()
            .map(|c| {
                def.column(c).map(|p| p as u16).ok_or_else(|| {
                    SqlError::user(
                        state::UNDEFINED_COLUMN,
                        format!("column {c:?} does not exist in table {name:?}"),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        for &p in &def.primary_key {
            def.columns[p as usize].not_null = true;
        }
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_DEFINITION, m))?;
        let new = Arc::new(Table::open(&self.db, &cat, def.clone())?);
        let copied = copy_rows(&old, &new);
        if let Err(e) = copied {
            for sub in new.subtable_names() {
                self.db.drop_subtable(&sub)?;
            }
            return Err(e);
        }
        let mut batch = WriteBatch::new();
        batch.put(&cat, table_key(name), def.encode());
        batch.put(&cat, NEXT_ID_KEY, (id + 1).to_le_bytes());
        batch.delete(&cat, count_key(old.def().id));
        batch.delete(&cat, covered_key(old.def().id));
        self.db.write(batch, WriteOptions::default())?;
        self.tables.write().insert(name.to_owned(), new);
        old.retire();
        for sub in old.subtable_names() {
            self.db.drop_subtable(&sub)?;
        }
        Ok(())
    }

    /// The id the next table gets.
    fn next_id(&self, cat: &pmdb_engine::Subtable) -> Result<u64> {
        Ok(match cat.get(NEXT_ID_KEY)? {
            Some(v) => {
                u64::from_le_bytes(v.as_ref().try_into().map_err(|_| SqlError::Damaged {
                    what: "catalog's next table id".into(),
                    source: crate::error::CodecError::Mismatch(format!("{} bytes", v.len())),
                })?)
            }
            None => 1,
        })
    }

    /// Drops index `name`. `Ok(false)` if it does not exist and `if_exists` was given.
    pub fn drop_index(&self, name: &str, if_exists: bool) -> Result<bool> {
        let _ddl = self.ddl();
        let Some(old) = self.table_of_index(name) else {
            return if if_exists {
                Ok(false)
            } else {
                Err(SqlError::user(
                    state::UNDEFINED_OBJECT,
                    format!("index {name:?} does not exist"),
                ))
            };
        };
        let _writes = old.write_lock();
        let mut def = old.def().clone();
        let pos = def
            .indexes
            .iter()
            .position(|ix| ix.name == name)
            .expect("table_of_index found it");
        let index = def.indexes.remove(pos);
        let sub = def.index_subtable(&index);
        let new = Table::replace(&self.db, &old, def.clone())?;
        self.catalog_subtable()?
            .put(table_key(&def.name), def.encode())?;
        self.tables.write().insert(def.name.clone(), Arc::new(new));
        old.retire();
        self.db.drop_subtable(&sub)?;
        Ok(true)
    }

    fn table_of_index(&self, index: &str) -> Option<Arc<Table>> {
        self.tables
            .read()
            .values()
            .find(|t| t.def().indexes.iter().any(|ix| ix.name == index))
            .cloned()
    }

    /// Drops the subtables of tables and indexes whose DDL a crash interrupted.
    fn drop_orphans(&self) -> Result<()> {
        let named: std::collections::HashSet<String> = self
            .tables
            .read()
            .values()
            .flat_map(|t| t.subtable_names())
            .collect();
        for sub in self.db.subtable_names() {
            if is_table_subtable(&sub) && !named.contains(&sub) {
                self.db.drop_subtable(&sub)?;
            }
        }
        Ok(())
    }
}

/// Whether `name` has the form of a table's subtable, `sql.<id>`, `sql.<id>.<id>` or
/// `sql.<id>.columns` (other subtables, whatever their names, are never the SQL
/// layer's to drop).
fn is_table_subtable(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("sql.") else {
        return false;
    };
    let number = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = rest.split('.').collect();
    match parts.as_slice() {
        [table] => number(table),
        [table, sub] => number(table) && (number(sub) || *sub == "columns"),
        _ => false,
    }
}

/// Copies every row of `from` into `to` (a table of the same columns keyed otherwise),
/// committing as a bulk load does; a duplicate or NULL key is an error. Runs on a
/// blocking thread of the runtime, whose commits it waits for.
fn copy_rows(from: &Table, to: &Arc<Table>) -> Result<()> {
    let runtime = tokio::runtime::Handle::current();
    let mut writer = TableWriter::for_load(to)?;
    let limit = to.fill_batch_bytes();
    let mut scan = from.rows().scan::<[u8]>(..);
    while let Some(e) = scan.next_ref() {
        let row = from.decode(e?.value)?;
        writer.insert(&row)?;
        if writer.bytes >= limit {
            runtime.block_on(writer.commit())?;
        }
    }
    runtime.block_on(writer.commit())
}
