//! The catalog: every schema's, table's, view's and sequence's definition, kept in the
//! subtable `sql.catalog` (one entry each, keyed by its schema and name) and in memory
//! as [`Table`] and [`Sequence`] handles. DDL changes the catalog entry and the subtables
//! in an order that a crash at any point leaves either the old or the new table, plus
//! at worst subtables no entry names; those are dropped at the next open. A table and
//! the sequences of its serial and identity columns are created, and dropped, in one
//! batch.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, ReentrantMutex, ReentrantMutexGuard, RwLock};
use pmdb_engine::{Db, WriteBatch, WriteOptions};

use crate::domain_rules::DomainTypes;
use crate::enum_type::{ENUM_PREFIX, EnumDef, EnumTypes};
use crate::error::{Result, SqlError, state};
use crate::extension::ExtensionDef;
use crate::key_rules::{NewReference, resolve, unique_key_of};
use crate::names::{PUBLIC, RelName};
use crate::namespace::{NAMESPACE_PREFIX, NamespaceDef};
use crate::read_point::RowLocker;
use crate::row_locks::{LockMode, RelationMode};
use crate::schema::{CheckDef, ForeignKeyDef, IndexDef, TableDef};
use crate::segment_layout::{COVERED, covered_key};
use crate::sequence::{self, Sequence, SequenceDef, SequenceState};
use crate::table::{Checks, Reference, Table, WriteGuard, count_key};
use crate::types::SqlType;
use crate::view::{VIEW_PREFIX, ViewDef, view_key};

pub(crate) mod block_ddl;
mod dependents;
mod domain_types;
mod enum_types;
mod extensions;
mod image;
mod rebuild;
mod schemas;
mod viewer_option;
pub use block_ddl::Viewer;
pub use domain_types::{DomainBase, NewDomain};
pub use enum_types::LabelPlace;
pub use image::CatalogImage;
pub use rebuild::{Convert, Rebuild, unchanged_rows};

const CATALOG: &str = "sql.catalog";
/// Key of the id the next table gets (a u64, little-endian).
const NEXT_ID_KEY: &[u8] = b"n";
/// Prefix of the table entries' keys; the table's name follows (see
/// [`RelName::key_bytes`]).
const TABLE_PREFIX: u8 = b't';

pub struct Catalog {
    db: Db,
    /// The schemas besides `public`, by name.
    schemas: RwLock<BTreeMap<String, Arc<NamespaceDef>>>,
    tables: RwLock<BTreeMap<RelName, Arc<Table>>>,
    sequences: RwLock<BTreeMap<RelName, Arc<Sequence>>>,
    views: RwLock<BTreeMap<RelName, Arc<ViewDef>>>,
    enums: EnumTypes,
    domains: DomainTypes,
    /// The installed extensions, by name.
    extensions: RwLock<BTreeMap<String, Arc<ExtensionDef>>>,
    /// Serializes DDL, so two statements never race on the next id or on one table;
    /// reentrant, as DROP SCHEMA … CASCADE drops each object the way its own DROP does.
    ddl: ReentrantMutex<()>,
    /// Counts finished DDL statements: a plan made at one generation may name tables
    /// that a later one replaced.
    generation: AtomicU64,
    /// The changes of the transaction that holds the catalog's lock.
    block: Mutex<Option<block_ddl::BlockDdl>>,
    /// The next [`Viewer`] given to a session.
    viewers: AtomicU64,
}

/// Held while a DDL statement runs; the catalog's generation moves on when it ends.
struct DdlGuard<'c> {
    _serial: ReentrantMutexGuard<'c, ()>,
    generation: &'c AtomicU64,
}

impl Drop for DdlGuard<'_> {
    fn drop(&mut self) {
        self.generation.fetch_add(1, Ordering::Release);
    }
}

/// Settles a table definition DDL made: forgets the comments of constraints it dropped,
/// then checks it: 42P16 for what no definition may have, 0A000 for a key or index over
/// a JSON or hstore column (pmdb has no jsonb or hstore order; json has none).
fn settle(def: &mut TableDef) -> Result<()> {
    def.drop_stale_comments();
    def.validate()
        .map_err(|m| SqlError::user(state::INVALID_DEFINITION, m))?;
    let keys = def
        .primary_key
        .iter()
        .chain(def.indexes.iter().flat_map(|i| &i.columns));
    for &k in keys {
        let c = &def.columns[k as usize];
        if matches!(
            c.ty,
            SqlType::Json | SqlType::Jsonb | SqlType::Interval | SqlType::Hstore
        ) {
            return Err(SqlError::unsupported(format!(
                "column {:?} of type {} as a key or index column",
                c.name, c.ty
            )));
        }
    }
    Ok(())
}

/// 42809 for a DROP of `wanted` ("a view") that names the table `def`, saying which
/// DROP drops it.
fn wrong_drop(name: &RelName, def: &TableDef, wanted: &str) -> SqlError {
    let (what, drop) = match def.materialized {
        Some(_) => ("a materialized view", "DROP MATERIALIZED VIEW"),
        None => ("a table", "DROP TABLE"),
    };
    SqlError::user(
        state::WRONG_OBJECT_TYPE,
        format!("{name:?} is not {wanted} (use {drop} to remove {what})"),
    )
}

/// 42809 for a statement that would change the rows of a materialized view: only its
/// query's rows, at a REFRESH, go into it.
fn refuse_changes(table: &Table) -> Result<()> {
    match table.def().materialized {
        Some(_) => Err(SqlError::user(
            state::WRONG_OBJECT_TYPE,
            format!("cannot change materialized view \"{}\"", table.def().name),
        )),
        None => Ok(()),
    }
}

fn table_key(name: &RelName) -> Vec<u8> {
    let mut k = vec![TABLE_PREFIX];
    k.extend_from_slice(&name.key_bytes());
    k
}

/// The error of a catalog entry whose key and definition disagree, or whose schema has
/// no entry.
fn mismatched(what: String, reason: String) -> SqlError {
    SqlError::Damaged {
        what,
        source: crate::error::CodecError::Mismatch(reason),
    }
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
        let schemas = match &cat {
            Some(cat) => load_schemas(cat)?,
            None => BTreeMap::new(),
        };
        let enums: EnumTypes = Arc::new(RwLock::new(match &cat {
            Some(cat) => load_named(
                cat,
                &schemas,
                ENUM_PREFIX,
                "type",
                EnumDef::decode,
                EnumDef::rel_name,
            )?,
            None => BTreeMap::new(),
        }));
        let domains: DomainTypes = Arc::new(RwLock::new(match &cat {
            Some(cat) => domain_types::load(cat, &schemas)?,
            None => BTreeMap::new(),
        }));
        let extensions = match &cat {
            Some(cat) => extensions::load(cat)?,
            None => BTreeMap::new(),
        };
        let mut tables = BTreeMap::new();
        if let Some(cat) = &cat {
            for entry in cat.scan(vec![TABLE_PREFIX]..vec![TABLE_PREFIX + 1]) {
                let entry = entry?;
                let key = String::from_utf8_lossy(&entry.key()[1..]).into_owned();
                let what = || format!("catalog entry of table {key:?}");
                let def = TableDef::decode(entry.value()).map_err(|source| SqlError::Damaged {
                    what: what(),
                    source,
                })?;
                let name = def.rel_name();
                check_entry(&entry.key()[1..], &name, &schemas, what)?;
                check_types(&def, &enums, &domains, &extensions, what)?;
                tables.insert(name, Arc::new(Table::open(db, cat, def, &enums, &domains)?));
            }
        }
        let sequences = match &cat {
            Some(cat) => load_sequences(db, cat, &schemas)?,
            None => BTreeMap::new(),
        };
        let views = match &cat {
            Some(cat) => load_named(
                cat,
                &schemas,
                VIEW_PREFIX,
                "view",
                ViewDef::decode,
                ViewDef::rel_name,
            )?,
            None => BTreeMap::new(),
        };
        let catalog = Catalog {
            db: db.clone(),
            schemas: RwLock::new(schemas),
            tables: RwLock::new(tables),
            sequences: RwLock::new(sequences),
            views: RwLock::new(views),
            enums,
            domains,
            extensions: RwLock::new(extensions),
            ddl: ReentrantMutex::new(()),
            generation: AtomicU64::new(0),
            block: Mutex::new(None),
            viewers: AtomicU64::new(1),
        };
        if !read_only {
            catalog.drop_orphans()?;
        }
        Ok(catalog)
    }

    /// A handle of table `def` (its subtables made if missing), with the catalog's
    /// user types.
    fn open_table(&self, cat: &pmdb_engine::Subtable, def: TableDef) -> Result<Table> {
        Table::open(&self.db, cat, def, &self.enums, &self.domains)
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

    pub fn table(&self, name: &RelName) -> Option<Arc<Table>> {
        self.tables.read().get(name).cloned()
    }

    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.tables.read().values().cloned().collect()
    }

    /// The table whose id is `id`.
    pub fn table_by_id(&self, id: u64) -> Option<Arc<Table>> {
        self.tables
            .read()
            .values()
            .find(|t| t.def().id == id)
            .cloned()
    }

    /// The foreign keys of `table`, each with its parent's handle: what a writer of
    /// the table checks its rows against. Called under the table's write lock, which
    /// DDL that changes its keys also takes.
    pub fn references(&self, table: &Table) -> Result<Vec<Reference>> {
        table
            .def()
            .foreign_keys
            .iter()
            .map(|fk| {
                let parent = self
                    .table_by_id(fk.parent)
                    .ok_or_else(|| SqlError::Damaged {
                        what: format!("foreign key {:?} of table {:?}", fk.name, table.def().name),
                        source: crate::error::CodecError::Mismatch(format!(
                            "it references table id {}, which no table has",
                            fk.parent
                        )),
                    })?;
                Ok(Reference {
                    def: fk.clone(),
                    parent,
                })
            })
            .collect()
    }

    /// Every foreign key that references table `id` (its own among them): the
    /// referencing table and the key.
    pub fn referencing(&self, id: u64) -> Vec<(Arc<Table>, ForeignKeyDef)> {
        let mut found = Vec::new();
        for t in self.tables.read().values() {
            for fk in t.def().foreign_keys.iter().filter(|fk| fk.parent == id) {
                found.push((Arc::clone(t), fk.clone()));
            }
        }
        found
    }

    /// Whether a foreign key that references table `id` passes `test`; nothing is
    /// copied, as the fast path asks this of every UPDATE and DELETE it recognises.
    pub fn any_reference_to(&self, id: u64, test: impl Fn(&ForeignKeyDef) -> bool) -> bool {
        self.tables.read().values().any(|t| {
            t.def()
                .foreign_keys
                .iter()
                .any(|fk| fk.parent == id && test(fk))
        })
    }

    /// The foreign keys of other tables that reference table `id`, for the errors of
    /// DDL that would leave them without their parent or its key.
    fn referenced_from_elsewhere(&self, id: u64) -> Vec<(Arc<Table>, ForeignKeyDef)> {
        self.referencing(id)
            .into_iter()
            .filter(|(t, _)| t.def().id != id)
            .collect()
    }

    pub fn table_or_error(&self, name: &RelName) -> Result<Arc<Table>> {
        self.table(name).ok_or_else(|| {
            SqlError::user(
                state::UNDEFINED_TABLE,
                format!("table {name:?} does not exist"),
            )
        })
    }

    /// Whether schema `name` exists (`public` always does).
    pub fn schema_exists(&self, name: &str) -> bool {
        name == PUBLIC || self.schemas.read().contains_key(name)
    }

    /// Schema `name`, if it exists and is not `public` (which has no definition).
    pub fn schema(&self, name: &str) -> Option<Arc<NamespaceDef>> {
        self.schemas.read().get(name).cloned()
    }

    /// The schemas besides `public`.
    pub fn schemas(&self) -> Vec<Arc<NamespaceDef>> {
        self.schemas.read().values().cloned().collect()
    }

    /// 3F000 unless schema `name` exists.
    fn schema_or_error(&self, name: &str) -> Result<()> {
        if self.schema_exists(name) {
            Ok(())
        } else {
            Err(SqlError::user(
                state::INVALID_SCHEMA_NAME,
                format!("schema \"{name}\" does not exist"),
            ))
        }
    }

    /// Table `name`, locked for a statement's writes (the handle current once locked);
    /// blocks the thread, so only for callers off async executors.
    pub fn lock_table(&self, name: &RelName) -> Result<(Arc<Table>, WriteGuard)> {
        loop {
            let table = self.table_or_error(name)?;
            let guard = table.write_lock();
            if !table.is_retired() {
                return Ok((table, guard));
            }
        }
    }

    /// Table `name`, locked for a load of rows into it.
    pub fn lock_table_for_load(&self, name: &RelName) -> Result<(Arc<Table>, WriteGuard)> {
        refuse_changes(&*self.table_or_error(name)?)?;
        self.lock_table(name)
    }

    /// As [`Catalog::lock_table`], for async callers whose row locks `locker` takes. A
    /// table that DDL of another transaction made, which has not ended, is waited for
    /// (the catalog's lock, as `locker`'s owner: a wait in a cycle is a deadlock) and
    /// looked up again. The table's own lock is taken shared, held as the row locks are
    /// (to the end of the transaction), so DDL on the table waits for the writes.
    pub(crate) async fn lock_table_async(
        &self,
        name: &RelName,
        locker: &mut RowLocker,
    ) -> Result<(Arc<Table>, WriteGuard)> {
        loop {
            let table = self.table_or_error(name)?;
            refuse_changes(&table)?;
            if table.is_pending() {
                locker.lock_catalog(LockMode::KeyShare).await?;
                // Held now, the lock keeps every other transaction's DDL out: a table
                // still pending is this transaction's own.
                if !table.is_pending() || table.is_retired() {
                    continue;
                }
            }
            locker
                .lock_whole_table(
                    table.def().id,
                    &table.def().name,
                    RelationMode::RowExclusive,
                )
                .await?;
            if table.is_retired() {
                // DDL that held the table's lock replaced it meanwhile.
                continue;
            }
            let guard = table.write_lock_async().await;
            if !table.is_retired() {
                return Ok((table, guard));
            }
        }
    }

    fn catalog_subtable(&self) -> Result<pmdb_engine::Subtable> {
        Ok(self.db.subtable(CATALOG)?)
    }

    /// Creates `def` (its id is given here) with a sequence for each of `serials` (a
    /// column position and the sequence's definition, its name the one it asks for
    /// unless taken): the column's default takes its values. `Ok(false)` if the table
    /// exists and `if_not_exists` was given.
    pub fn create_table(
        &self,
        mut def: TableDef,
        serials: Vec<(usize, SequenceDef)>,
        references: Vec<NewReference>,
        if_not_exists: bool,
    ) -> Result<bool> {
        let _ddl = self.ddl();
        if self.taken(&def.rel_name(), if_not_exists)? {
            return Ok(false);
        }
        let cat = self.catalog_subtable()?;
        let id = self.take_ids(&cat, 1 + serials.len() as u64)?;
        def.id = id;
        let mut sequences = Vec::with_capacity(serials.len());
        for (i, (column, mut seq)) in serials.into_iter().enumerate() {
            seq.id = id + 1 + i as u64;
            seq.name = self.free_name(&seq.rel_name(), &sequences);
            seq.owned_by = Some((id, column as u16));
            def.columns[column].default = Some(nextval_call(&seq.rel_name()));
            sequences.push(seq);
        }
        for r in references {
            let fk = if r.parent == def.rel_name() {
                resolve(&def, &def.clone(), r)?
            } else {
                let parent = self.table_or_error(&r.parent)?;
                resolve(&def, parent.def(), r)?
            };
            def.foreign_keys.push(fk);
        }
        settle(&mut def)?;
        // The subtable first: a crash before the entry leaves an empty subtable that the
        // next open drops, and the id is given again.
        let table = self.open_table(&cat, def.clone())?;
        let mut batch = WriteBatch::new();
        batch.put(&cat, table_key(&def.rel_name()), def.encode());
        // An empty table's segments (none) hold its rows.
        batch.put(&cat, covered_key(id), COVERED);
        for seq in &sequences {
            batch.put(&cat, sequence::def_key(&seq.rel_name()), seq.encode());
        }
        let mut counts = WriteBatch::new();
        counts.put(&cat, count_key(id), 0i64.to_le_bytes());
        self.store_first_states(&cat, &sequences)?;
        self.write_with_bookkeeping(batch, counts)?;
        table.set_covered();
        self.publish(&def.rel_name(), Arc::new(table));
        let mut map = self.sequences.write();
        for seq in sequences {
            let state = Sequence::initial_state(&seq);
            map.insert(
                seq.rel_name(),
                Arc::new(Sequence::new(&self.db, &cat, seq, state)),
            );
        }
        Ok(true)
    }

    /// Creates `def` filled by `fill` (given the new table, it writes the rows and says
    /// how many), for CREATE TABLE … AS: the rows go into the new subtables first, and
    /// the table appears with them in one catalog batch, so a crash or an error before
    /// leaves no table (its subtables, which no entry names, are dropped). `Ok(None)` if
    /// the table exists and `if_not_exists` was given.
    pub fn create_table_filled(
        &self,
        mut def: TableDef,
        if_not_exists: bool,
        fill: impl FnOnce(&Arc<Table>) -> Result<u64>,
    ) -> Result<Option<u64>> {
        let _ddl = self.ddl();
        if self.taken(&def.rel_name(), if_not_exists)? {
            return Ok(None);
        }
        let cat = self.catalog_subtable()?;
        let id = self.take_ids(&cat, 1)?;
        def.id = id;
        settle(&mut def)?;
        let table = Arc::new(self.open_table(&cat, def.clone())?);
        let rows = match fill(&table) {
            Ok(rows) => rows,
            Err(e) => {
                for sub in table.subtable_names() {
                    self.db.drop_subtable(&sub)?;
                }
                return Err(e);
            }
        };
        // The writer that filled the table stored its row count.
        let mut batch = WriteBatch::new();
        batch.put(&cat, table_key(&def.rel_name()), def.encode());
        self.write(batch)?;
        self.publish(&def.rel_name(), table);
        Ok(Some(rows))
    }

    /// Whether a relation called `name` exists, for a CREATE: `Ok(true)` if it does and
    /// `if_not_exists` was given, 42P07 if it does and was not, 3F000 if its schema
    /// does not exist.
    fn taken(&self, name: &RelName, if_not_exists: bool) -> Result<bool> {
        self.schema_or_error(&name.schema)?;
        match (self.relation_exists(name), if_not_exists) {
            (false, _) => Ok(false),
            (true, true) => Ok(true),
            (true, false) => Err(SqlError::user(
                state::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", name.name),
            )),
        }
    }

    /// Whether a table or a sequence (which share PostgreSQL's namespace of relations)
    /// is called `name`.
    fn relation_exists(&self, name: &RelName) -> bool {
        self.table(name).is_some() || self.sequence(name).is_some() || self.view(name).is_some()
    }

    /// Whether any relation is called `name`: a table, sequence or view, or an index
    /// (a primary key's too).
    pub fn names_a_relation(&self, name: &RelName) -> bool {
        self.relation_exists(name)
            || self.tables.read().values().any(|t| {
                let def = t.def();
                def.schema == name.schema && def.names_an_index(&name.name)
            })
    }

    pub fn view(&self, name: &RelName) -> Option<Arc<ViewDef>> {
        self.views.read().get(name).cloned()
    }

    pub fn views(&self) -> Vec<Arc<ViewDef>> {
        self.views.read().values().cloned().collect()
    }

    /// Whether any view is defined: statements expand none otherwise.
    pub fn has_views(&self) -> bool {
        !self.views.read().is_empty()
    }

    /// Creates view `def` (its id is given here), or with `or_replace` replaces the view
    /// of that name (which keeps its id), in one catalog write.
    pub fn create_view(&self, mut def: ViewDef, or_replace: bool) -> Result<()> {
        let _ddl = self.ddl();
        let cat = self.catalog_subtable()?;
        let mut batch = WriteBatch::new();
        let name = def.rel_name();
        self.schema_or_error(&name.schema)?;
        match self.view(&name) {
            Some(old) if or_replace => def.id = old.id,
            None if !self.relation_exists(&name) => {
                def.id = self.take_ids(&cat, 1)?;
            }
            _ => {
                return Err(SqlError::user(
                    state::DUPLICATE_TABLE,
                    format!("relation {:?} already exists", def.name),
                ));
            }
        }
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_DEFINITION, m))?;
        batch.put(&cat, view_key(&name), def.encode());
        self.write(batch)?;
        self.views.write().insert(name, Arc::new(def));
        Ok(())
    }

    /// Drops view `name` (with the views that depend on it, given `cascade`).
    /// `Ok(false)` if it does not exist and `if_exists` was given.
    pub fn drop_view(&self, name: &RelName, if_exists: bool, cascade: bool) -> Result<bool> {
        let _ddl = self.ddl();
        if self.view(name).is_none() {
            return match (self.table(name), if_exists) {
                (Some(t), _) => Err(wrong_drop(name, t.def(), "a view")),
                (None, true) => Ok(false),
                (None, false) => Err(SqlError::user(
                    state::UNDEFINED_TABLE,
                    format!("view {name:?} does not exist"),
                )),
            };
        }
        let dependents = self.dependents(name, cascade)?;
        let cat = self.catalog_subtable()?;
        let mut batch = WriteBatch::new();
        batch.delete(&cat, view_key(name));
        self.drop_dependents(&dependents, &mut batch)?;
        self.write(batch)?;
        self.views.write().remove(name);
        self.forget_views(&dependents);
        Ok(true)
    }

    /// `wanted`'s name, or with the first number after it that makes it a name no
    /// relation of its schema (nor one of `taken`) has, as PostgreSQL names a serial
    /// column's sequence.
    fn free_name(&self, wanted: &RelName, taken: &[SequenceDef]) -> String {
        let free =
            |n: &RelName| !self.relation_exists(n) && taken.iter().all(|s| &s.rel_name() != n);
        if free(wanted) {
            return wanted.name.clone();
        }
        (1..)
            .map(|i| format!("{}{i}", wanted.name))
            .find(|n| free(&wanted.sibling(n.clone())))
            .expect("some number is free")
    }

    pub fn sequence(&self, name: &RelName) -> Option<Arc<Sequence>> {
        self.sequences.read().get(name).cloned()
    }

    pub fn sequences(&self) -> Vec<Arc<Sequence>> {
        self.sequences.read().values().cloned().collect()
    }

    pub fn sequence_or_error(&self, name: &RelName) -> Result<Arc<Sequence>> {
        self.sequence(name).ok_or_else(|| {
            SqlError::user(
                state::UNDEFINED_TABLE,
                format!("relation {name:?} does not exist"),
            )
        })
    }

    /// CREATE SEQUENCE (its id is given here). `Ok(false)` if the name is taken and
    /// `if_not_exists` was given.
    pub fn create_sequence(&self, mut def: SequenceDef, if_not_exists: bool) -> Result<bool> {
        let _ddl = self.ddl();
        if self.taken(&def.rel_name(), if_not_exists)? {
            return Ok(false);
        }
        let cat = self.catalog_subtable()?;
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_PARAMETER_VALUE, m))?;
        def.id = self.take_ids(&cat, 1)?;
        let initial = Sequence::initial_state(&def);
        let mut batch = WriteBatch::new();
        batch.put(&cat, sequence::def_key(&def.rel_name()), def.encode());
        self.store_first_states(&cat, std::slice::from_ref(&def))?;
        self.write(batch)?;
        self.sequences.write().insert(
            def.rel_name(),
            Arc::new(Sequence::new(&self.db, &cat, def, initial)),
        );
        Ok(true)
    }

    /// `ALTER SEQUENCE name OWNED BY` the column `owned_by` (a table's id and the column's
    /// position; `None`: no column), which the sequence is then dropped with. The
    /// sequence goes on handing out values from where it was.
    pub fn set_sequence_owner(&self, name: &RelName, owned_by: Option<(u64, u16)>) -> Result<()> {
        let _ddl = self.ddl();
        let seq = self.sequence_or_error(name)?;
        let cat = self.catalog_subtable()?;
        let mut def = seq.def().clone();
        def.owned_by = owned_by;
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_PARAMETER_VALUE, m))?;
        // Held, so that no nextval stores its state between the write and the handle
        // that replaces this one.
        let mut held = seq.hold();
        let mut batch = WriteBatch::new();
        batch.put(&cat, sequence::def_key(name), def.encode());
        self.write(batch)?;
        let next = held.hand_over(&self.db, &cat, def);
        self.sequences.write().insert(name.clone(), next);
        Ok(())
    }

    /// DROP SEQUENCE. `Ok(false)` if it does not exist and `if_exists` was given; a
    /// sequence a column owns goes with its table only, and one a column's default
    /// takes values from (`uses(table, column)`) stays while that default does.
    pub fn drop_sequence(
        &self,
        name: &RelName,
        if_exists: bool,
        uses: impl Fn(&Table, usize) -> bool,
    ) -> Result<bool> {
        let _ddl = self.ddl();
        let Some(seq) = self.sequence(name) else {
            if self.table(name).is_some() {
                return Err(SqlError::user(
                    state::WRONG_OBJECT_TYPE,
                    format!("{name:?} is not a sequence"),
                ));
            }
            return if if_exists {
                Ok(false)
            } else {
                Err(self.sequence_or_error(name).expect_err("no such sequence"))
            };
        };
        for t in self.tables() {
            let def = t.def();
            let owner = seq.def().owned_by;
            if let Some(c) =
                (0..def.columns.len()).find(|&c| owner == Some((def.id, c as u16)) || uses(&t, c))
            {
                return Err(SqlError::user(
                    state::DEPENDENT_OBJECTS_STILL_EXIST,
                    format!(
                        "cannot drop sequence {name} because the default of column {} of \
                         table {} requires it",
                        def.columns[c].name, def.name
                    ),
                ));
            }
        }
        let cat = self.catalog_subtable()?;
        let mut held = seq.hold();
        let mut batch = WriteBatch::new();
        batch.delete(&cat, sequence::def_key(name));
        batch.delete(&cat, sequence::state_key(seq.def().id));
        self.write(batch)?;
        held.mark_dropped();
        self.sequences.write().remove(name);
        Ok(true)
    }

    /// Drops table `name` and its indexes. `Ok(false)` if it does not exist and
    /// `if_exists` was given.
    /// Foreign keys of other tables that reference it are dropped with it when
    /// `cascade` is given (each such table changed in the same batch), and refuse the
    /// DROP otherwise (2BP01), as in PostgreSQL.
    pub fn drop_table(&self, name: &RelName, if_exists: bool, cascade: bool) -> Result<bool> {
        self.drop_stored(name, Some(false), if_exists, cascade)
    }

    /// DROP MATERIALIZED VIEW `name`, as [`Catalog::drop_table`].
    pub fn drop_materialized_view(
        &self,
        name: &RelName,
        if_exists: bool,
        cascade: bool,
    ) -> Result<bool> {
        self.drop_stored(name, Some(true), if_exists, cascade)
    }

    /// Drops table `name`, which must be a materialized view if `materialized` says so
    /// and must not be one if it says not (42809: another DROP drops it).
    fn drop_stored(
        &self,
        name: &RelName,
        materialized: Option<bool>,
        if_exists: bool,
        cascade: bool,
    ) -> Result<bool> {
        let _ddl = self.ddl();
        let wanted = match materialized {
            Some(true) => "a materialized view",
            _ => "a table",
        };
        let Some(table) = self.table(name) else {
            return match (self.view(name).is_some(), if_exists) {
                (true, _) => Err(SqlError::user(
                    state::WRONG_OBJECT_TYPE,
                    format!("{name:?} is not {wanted} (use DROP VIEW to remove a view)"),
                )),
                (false, true) => Ok(false),
                (false, false) if materialized == Some(true) => Err(SqlError::user(
                    state::UNDEFINED_TABLE,
                    format!("materialized view {name:?} does not exist"),
                )),
                (false, false) => Err(self.table_or_error(name).err().expect("no such table")),
            };
        };
        if materialized.is_some_and(|m| m != table.def().materialized.is_some()) {
            return Err(wrong_drop(name, table.def(), wanted));
        }
        let views = self.dependents(name, cascade)?;
        let dependents = self.referenced_from_elsewhere(table.def().id);
        if let Some((child, fk)) = dependents.first()
            && !cascade
        {
            return Err(SqlError::user(
                state::DEPENDENT_OBJECTS_STILL_EXIST,
                format!(
                    "cannot drop table {name} because other objects depend on it: constraint \
                     {} on table {} depends on table {name} (use DROP ... CASCADE to drop the \
                     dependent objects too)",
                    fk.name,
                    child.def().name
                ),
            ));
        }
        let _writes = table.write_lock();
        // Each referencing table, without its keys that reference this one, under its
        // write lock so that no writer checks them meanwhile.
        let mut children: Vec<(Arc<Table>, Table, WriteGuard)> = Vec::new();
        for (child, _) in &dependents {
            if children.iter().any(|(c, _, _)| Arc::ptr_eq(c, child)) {
                continue;
            }
            let guard = child.write_lock();
            let mut def = child.def().clone();
            def.foreign_keys.retain(|fk| fk.parent != table.def().id);
            def.drop_stale_comments();
            let new = Table::replace(&self.db, child, def)?;
            children.push((Arc::clone(child), new, guard));
        }
        // The entry first: a crash after it leaves subtables no entry names, which the
        // next open drops, finishing the DROP.
        let cat = self.catalog_subtable()?;
        let owned: Vec<Arc<Sequence>> = self
            .sequences()
            .into_iter()
            .filter(|s| s.def().owned_by.is_some_and(|(t, _)| t == table.def().id))
            .collect();
        let mut batch = WriteBatch::new();
        batch.delete(&cat, table_key(name));
        let mut counts = WriteBatch::new();
        counts.delete(&cat, count_key(table.def().id));
        counts.delete(&cat, covered_key(table.def().id));
        for (_, new, _) in &children {
            batch.put(&cat, table_key(new.name()), new.def().encode());
        }
        self.drop_dependents(&views, &mut batch)?;
        for seq in &owned {
            batch.delete(&cat, sequence::def_key(&seq.def().rel_name()));
            batch.delete(&cat, sequence::state_key(seq.def().id));
        }
        // Each owned sequence is held, so that no nextval stores its state after the
        // batch deleted it.
        let held: Vec<_> = owned.iter().map(|s| s.hold()).collect();
        self.write_with_bookkeeping(batch, counts)?;
        self.forget_rows_of(table.def().id);
        for (seq, mut held) in owned.iter().zip(held) {
            held.mark_dropped();
            self.sequences.write().remove(&seq.def().rel_name());
        }
        self.tables.write().remove(name);
        table.retire();
        self.forget_views(&views);
        for (old, new, _guard) in children {
            self.publish(old.name(), Arc::new(new));
            old.retire();
        }
        for sub in table.subtable_names() {
            self.release(sub)?;
        }
        Ok(true)
    }

    /// Creates index `index` (its id is given here) on table `table` and fills it from
    /// the rows; a unique one refuses rows that repeat its values (23505). `Ok(false)`
    /// if an index of that name exists and `if_not_exists` was given.
    pub fn create_index(
        &self,
        table: &RelName,
        index: NewIndex,
        if_not_exists: bool,
    ) -> Result<bool> {
        let NewIndex {
            name: index_name,
            columns,
            unique,
            constraint,
        } = index;
        let _ddl = self.ddl();
        if let Some(t) = self.table_of_index(&table.sibling(index_name.clone())) {
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
        self.reading_rows(&old)?;
        let mut def = old.def().clone();
        let positions = def
            .positions(&columns)
            .map_err(|c| crate::error::undefined_column(&c, &table.name))?;
        let index = IndexDef {
            id: def.next_index_id,
            name: index_name,
            columns: positions,
            unique,
            constraint,
        };
        def.next_index_id = def
            .next_index_id
            .checked_add(1)
            .ok_or_else(|| SqlError::user(state::PROGRAM_LIMIT, "index ids are exhausted"))?;
        def.indexes.push(index);
        settle(&mut def)?;
        // Fill the index subtable, then publish the definition: a crash before that
        // leaves a subtable no definition names, dropped at the next open.
        let new = Table::replace(&self.db, &old, def.clone())?;
        if let Err(e) = new.fill_index(new.def().indexes.len() - 1) {
            let ix = def.indexes.last().expect("the new index");
            self.db.drop_subtable(&def.index_subtable(ix))?;
            return Err(e);
        }
        self.write_entry(&def)?;
        self.publish(table, Arc::new(new));
        old.retire();
        Ok(true)
    }

    /// Changes table `name`'s definition with `change` (given the table as it is, under
    /// its write lock) in one catalog write: the changes ALTER TABLE makes without
    /// touching a row (names, defaults, NOT NULL, added columns, which older rows read as
    /// their missing values). Adding columns takes the segments off the table's scans
    /// until ANALYZE builds them again.
    pub fn change_table(
        &self,
        name: &RelName,
        change: impl FnOnce(&Table, &mut TableDef) -> Result<()>,
    ) -> Result<()> {
        let _ddl = self.ddl();
        let old = self.table_or_error(name)?;
        let _writes = old.write_lock();
        let mut def = old.def().clone();
        change(&old, &mut def)?;
        settle(&mut def)?;
        let renamed = def.rel_name() != *name;
        if renamed && self.relation_exists(&def.rel_name()) {
            return Err(SqlError::user(
                state::DUPLICATE_TABLE,
                format!("relation {:?} already exists", def.name),
            ));
        }
        let cat = self.catalog_subtable()?;
        let new = Table::replace(&self.db, &old, def.clone())?;
        let mut batch = WriteBatch::new();
        if renamed {
            batch.delete(&cat, table_key(name));
        }
        batch.put(&cat, table_key(&def.rel_name()), def.encode());
        let added = def.columns.len() != old.def().columns.len();
        let mut coverage = WriteBatch::new();
        if added {
            coverage.delete(&cat, covered_key(def.id));
        }
        self.write_with_bookkeeping(batch, coverage)?;
        if added {
            new.set_uncovered();
        }
        self.publish(name, Arc::new(new));
        old.retire();
        Ok(())
    }

    /// Adds foreign key `r` to table `name`, once every row has its parent (23503
    /// otherwise), in one catalog write. The parent's writers wait meanwhile.
    pub fn add_foreign_key(&self, name: &RelName, r: NewReference) -> Result<()> {
        self.change_table(name, |child, def| {
            let parent = match r.parent == def.rel_name() {
                true => None,
                false => Some(self.table_or_error(&r.parent)?),
            };
            let fk = match &parent {
                Some(p) => resolve(def, p.def(), r)?,
                None => resolve(def, &def.clone(), r)?,
            };
            let _parent_writes = parent.as_ref().map(|p| p.write_lock());
            self.reading_rows(child)?;
            if let Some(p) = &parent {
                self.reading_rows(p)?;
            }
            child.check_stored_references(&fk, parent.as_deref().unwrap_or(child))?;
            def.foreign_keys.push(fk);
            Ok(())
        })
    }

    /// Adds the CHECK constraint `check` makes of the definition to table `name`, once
    /// every row passes it (23514 otherwise), in one catalog write.
    pub fn add_check(
        &self,
        name: &RelName,
        check: impl FnOnce(&TableDef) -> Result<CheckDef>,
    ) -> Result<()> {
        self.change_table(name, |old, def| {
            self.reading_rows(old)?;
            let c = check(def)?;
            def.checks.push(c.clone());
            Checks::plan(def, &self.domains)?;
            Table::replace(&self.db, old, def.clone())?.check_stored_rows(&c.name)
        })
    }

    /// Drops the foreign key or CHECK constraint `constraint` of table `name`;
    /// `Ok(false)` if it has none of that name.
    pub fn drop_foreign_key_or_check(&self, name: &RelName, constraint: &str) -> Result<bool> {
        let t = self.table_or_error(name)?;
        if !t.def().foreign_keys.iter().any(|f| f.name == constraint)
            && !t.def().checks.iter().any(|c| c.name == constraint)
        {
            return Ok(false);
        }
        self.change_table(name, |_, def| {
            def.foreign_keys.retain(|f| f.name != constraint);
            def.checks.retain(|c| c.name != constraint);
            Ok(())
        })?;
        Ok(true)
    }

    /// Writes table `def`'s catalog entry.
    fn write_entry(&self, def: &TableDef) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(
            &self.catalog_subtable()?,
            table_key(&def.rel_name()),
            def.encode(),
        );
        self.write(batch)
    }

    /// Stores the first progress of the new sequences `made`, at once: nextval stores
    /// progress at once too, outside any transaction, and a commit of the first state
    /// after it would hand values out again. A state whose sequence never commits names
    /// an id no later object is given.
    fn store_first_states(&self, cat: &pmdb_engine::Subtable, made: &[SequenceDef]) -> Result<()> {
        let mut states = WriteBatch::new();
        for seq in made {
            states.put(
                cat,
                sequence::state_key(seq.id),
                Sequence::initial_state(seq).encode(),
            );
        }
        Ok(self.db.write(states, WriteOptions::default())?)
    }

    /// Takes `n` ids for new tables and sequences, the first returned: stored at once,
    /// outside the DDL's transaction, so that no id is given twice whichever
    /// transactions commit (one that does not leaves a gap).
    fn take_ids(&self, cat: &pmdb_engine::Subtable, n: u64) -> Result<u64> {
        let next = match cat.get(NEXT_ID_KEY)? {
            Some(v) => {
                u64::from_le_bytes(v.as_ref().try_into().map_err(|_| SqlError::Damaged {
                    what: "catalog's next table id".into(),
                    source: crate::error::CodecError::Mismatch(format!("{} bytes", v.len())),
                })?)
            }
            None => 1,
        };
        let after = next
            .checked_add(n)
            .ok_or_else(|| SqlError::user(state::PROGRAM_LIMIT, "table ids are exhausted"))?;
        cat.put(NEXT_ID_KEY, after.to_le_bytes())?;
        Ok(next)
    }

    /// Drops index `name`. `Ok(false)` if it does not exist and `if_exists` was given.
    pub fn drop_index(&self, name: &RelName, if_exists: bool) -> Result<bool> {
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
            .position(|ix| ix.name == name.name)
            .expect("table_of_index found it");
        if let Some((child, fk)) = self
            .referencing(def.id)
            .into_iter()
            .find(|(_, fk)| unique_key_of(&def, &fk.parent_columns) == Some(Some(pos)))
        {
            return Err(SqlError::user(
                state::DEPENDENT_OBJECTS_STILL_EXIST,
                format!(
                    "cannot drop index {name} because constraint {} on table {} requires it",
                    fk.name,
                    child.def().name
                ),
            ));
        }
        let index = def.indexes.remove(pos);
        def.drop_stale_comments();
        let sub = def.index_subtable(&index);
        let new = Table::replace(&self.db, &old, def.clone())?;
        self.write_entry(&def)?;
        self.publish(&def.rel_name(), Arc::new(new));
        old.retire();
        self.release(sub)?;
        Ok(true)
    }

    /// The table of index `index` (indexes live in their table's schema).
    pub(crate) fn table_of_index(&self, index: &RelName) -> Option<Arc<Table>> {
        self.tables
            .read()
            .values()
            .find(|t| {
                t.def().schema == index.schema
                    && t.def().indexes.iter().any(|ix| ix.name == index.name)
            })
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

/// An index CREATE INDEX or a UNIQUE constraint asks for.
pub struct NewIndex {
    pub name: String,
    pub columns: Vec<String>,
    pub unique: bool,
    /// Made for a UNIQUE constraint (ALTER TABLE … ADD UNIQUE).
    pub constraint: bool,
}

/// `nextval('name')`: the default of a column whose values come from sequence `name`.
pub fn nextval_call(name: &RelName) -> String {
    format!("nextval('{}')", name.quoted().replace('\'', "''"))
}

/// Every schema in `cat` besides `public`. A damaged entry fails the open with the
/// schema's name.
fn load_schemas(cat: &pmdb_engine::Subtable) -> Result<BTreeMap<String, Arc<NamespaceDef>>> {
    let mut out = BTreeMap::new();
    for entry in cat.scan(vec![NAMESPACE_PREFIX]..vec![NAMESPACE_PREFIX + 1]) {
        let entry = entry?;
        let key = String::from_utf8_lossy(&entry.key()[1..]).into_owned();
        let what = || format!("catalog entry of schema {key:?}");
        let def = NamespaceDef::decode(entry.value()).map_err(|source| SqlError::Damaged {
            what: what(),
            source,
        })?;
        if def.name.as_bytes() != &entry.key()[1..] || def.name == PUBLIC {
            return Err(mismatched(
                what(),
                format!("it defines a schema named {:?}", def.name),
            ));
        }
        out.insert(def.name.clone(), Arc::new(def));
    }
    Ok(out)
}

/// Checks that an entry keyed `key` (after its prefix) defines relation `name`, in a
/// schema the catalog has.
fn check_entry(
    key: &[u8],
    name: &RelName,
    schemas: &BTreeMap<String, Arc<NamespaceDef>>,
    what: impl Fn() -> String,
) -> Result<()> {
    if key != name.key_bytes().as_slice() {
        return Err(mismatched(what(), format!("it defines {name:?}")));
    }
    if name.schema != PUBLIC && !schemas.contains_key(&name.schema) {
        return Err(mismatched(
            what(),
            format!("its schema {:?} has no entry", name.schema),
        ));
    }
    Ok(())
}

/// Every sequence in `cat`, with its stored state. A damaged entry, or a definition
/// without a state, fails the open with the sequence's name.
fn load_sequences(
    db: &Db,
    cat: &pmdb_engine::Subtable,
    schemas: &BTreeMap<String, Arc<NamespaceDef>>,
) -> Result<BTreeMap<RelName, Arc<Sequence>>> {
    let prefix = sequence::DEF_PREFIX;
    let mut out = BTreeMap::new();
    for entry in cat.scan(vec![prefix]..vec![prefix + 1]) {
        let entry = entry?;
        let key = String::from_utf8_lossy(&entry.key()[1..]).into_owned();
        let what = || format!("catalog entry of sequence {key:?}");
        let damaged = |source| SqlError::Damaged {
            what: what(),
            source,
        };
        let def = SequenceDef::decode(entry.value()).map_err(damaged)?;
        let name = def.rel_name();
        check_entry(&entry.key()[1..], &name, schemas, what)?;
        let stored = cat.get(sequence::state_key(def.id))?.ok_or_else(|| {
            damaged(crate::error::CodecError::Mismatch(
                "its state entry is missing".into(),
            ))
        })?;
        let state = SequenceState::decode(&stored).map_err(damaged)?;
        out.insert(name, Arc::new(Sequence::new(db, cat, def, state)));
    }
    Ok(out)
}

/// Every definition keyed `prefix` + a relation name in `cat` (views, enum types),
/// decoded by `decode`. A damaged entry fails the open with the `kind`'s name.
fn load_named<D>(
    cat: &pmdb_engine::Subtable,
    schemas: &BTreeMap<String, Arc<NamespaceDef>>,
    prefix: u8,
    kind: &str,
    decode: fn(&[u8]) -> std::result::Result<D, crate::error::CodecError>,
    rel_name: fn(&D) -> RelName,
) -> Result<BTreeMap<RelName, Arc<D>>> {
    let mut out = BTreeMap::new();
    for entry in cat.scan(vec![prefix]..vec![prefix + 1]) {
        let entry = entry?;
        let key = String::from_utf8_lossy(&entry.key()[1..]).into_owned();
        let what = || format!("catalog entry of {kind} {key:?}");
        let def = decode(entry.value()).map_err(|source| SqlError::Damaged {
            what: what(),
            source,
        })?;
        let name = rel_name(&def);
        check_entry(&entry.key()[1..], &name, schemas, what)?;
        out.insert(name, Arc::new(def));
    }
    Ok(out)
}

/// 2BP01 for a DROP of `object` (`type t`, `extension e`) that `users` (columns,
/// domains) depend on; 0A000 with CASCADE, as pmdb drops no column for a type.
fn refuse_dependents(statement: &str, object: &str, users: &[String], cascade: bool) -> Result<()> {
    if users.is_empty() {
        return Ok(());
    }
    if cascade {
        return Err(SqlError::unsupported(format!(
            "{statement} … CASCADE of a type others depend on (pmdb does not drop them): {}",
            users.join("; ")
        )));
    }
    Err(SqlError::user(
        state::DEPENDENT_OBJECTS_STILL_EXIST,
        format!("cannot drop {object} because other objects depend on it"),
    )
    .with_detail(users.join("\n")))
}

/// Checks that each enum column of `def` names a type the catalog has, each column of a
/// domain a domain of the column's type, and each hstore column an installed hstore.
fn check_types(
    def: &TableDef,
    enums: &EnumTypes,
    domains: &DomainTypes,
    extensions: &BTreeMap<String, Arc<ExtensionDef>>,
    what: impl Fn() -> String,
) -> Result<()> {
    for c in &def.columns {
        if c.ty == SqlType::Hstore && !extensions.contains_key(crate::extension::HSTORE.name) {
            return Err(mismatched(
                what(),
                format!(
                    "column {:?} is of type hstore, and the catalog has no hstore extension",
                    c.name
                ),
            ));
        }
        if let Some(id) = c.domain
            && crate::domain_rules::by_id(domains, id).is_none_or(|d| d.def.base != c.ty)
        {
            return Err(mismatched(
                what(),
                format!(
                    "column {:?} is of domain #{id}, which has no entry over its type",
                    c.name
                ),
            ));
        }
        if let SqlType::Enum(id) = c.ty
            && crate::enum_type::by_id(enums, id).is_none()
        {
            return Err(mismatched(
                what(),
                format!(
                    "column {:?} is of enum type #{id}, which has no entry",
                    c.name
                ),
            ));
        }
    }
    Ok(())
}

/// Whether `name` has the form of a table's subtable, `sql.<id>`, `sql.<id>.<id>` or
/// `sql.<id>.{columns,chunks}` (other subtables, whatever their names, are never the SQL
/// layer's to drop).
fn is_table_subtable(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("sql.") else {
        return false;
    };
    let number = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = rest.split('.').collect();
    match parts.as_slice() {
        [table] => number(table),
        [table, sub] => number(table) && (number(sub) || *sub == "columns" || *sub == "chunks"),
        _ => false,
    }
}
