//! Table rebuilds, for the changes that stored rows cannot follow in place (ADD PRIMARY
//! KEY on a table keyed by row ids, DROP COLUMN, ALTER COLUMN TYPE) and for TRUNCATE
//! outside a block: the rows are copied (or, for TRUNCATE, none) into the subtables of a
//! new table id under the changed definition, which then takes the table's name in one
//! catalog batch, together with every definition that names the
//! table by its id or its columns by their places (other tables' foreign keys, the
//! sequences its columns own). A crash before that batch leaves subtables no entry
//! names, dropped at the next open: the table is as it was.

use std::sync::Arc;

use pmdb_engine::WriteBatch;

use super::dependents::Dependent;
use super::{Catalog, settle, table_key};
use crate::error::{Result, SqlError, state};
use crate::key_rules::unique_key_of;
use crate::large_rows::Committed;
use crate::names::RelName;
use crate::schema::{ForeignKeyDef, TableDef};
use crate::segment_layout::covered_key;
use crate::sequence::{self, Sequence};
use crate::table::{Table, TableWriter, count_key};
use crate::types::Value;

/// What a rebuild makes of a table.
pub struct Rebuild {
    /// The new definition; its id is the rebuild's to give.
    pub def: TableDef,
    /// Where each old column is in `def`; `None` for a dropped one.
    pub positions: Vec<Option<u16>>,
    /// Foreign keys and views that need a dropped column or key go with it (otherwise
    /// they refuse the change, 2BP01).
    pub cascade: bool,
    /// What the change drops, for the messages of what depends on it (`column a of
    /// table t`).
    pub dropping: String,
}

impl Rebuild {
    /// `def`, whose columns are the old ones (only its keys differ).
    pub fn same_columns(def: TableDef, cascade: bool, dropping: String) -> Rebuild {
        Rebuild {
            positions: (0..def.columns.len() as u16).map(Some).collect(),
            def,
            cascade,
            dropping,
        }
    }
}

/// The rows as they are, for a rebuild whose columns stay.
pub fn unchanged_rows(_: &TableDef, _: &TableDef, _: &[Option<u16>]) -> Convert {
    Box::new(Ok)
}

/// Rows as a rebuild copies them: a batch of old rows in, the same rows under the new
/// definition out.
pub type Convert = Box<dyn Fn(Vec<Vec<Value>>) -> Result<Vec<Vec<Value>>>>;

impl Catalog {
    /// Rebuilds table `name` as `plan` says (given the table, under its write lock),
    /// its rows copied through what `convert` makes of the old definition, the new one
    /// and the columns' new places.
    pub fn rebuild_table(
        &self,
        name: &RelName,
        plan: impl FnOnce(&Table) -> Result<Rebuild>,
        convert: impl FnOnce(&TableDef, &TableDef, &[Option<u16>]) -> Convert,
    ) -> Result<()> {
        self.rebuild(name, plan, Some(convert))
    }

    /// Empties table `name` at once (TRUNCATE outside a block): it is rebuilt as it is,
    /// with none of its rows. A materialized view's rows change only at a REFRESH.
    pub fn empty_table(&self, name: &RelName) -> Result<()> {
        super::refuse_changes(&*self.table_or_error(name)?)?;
        let plan = |old: &Table| {
            Ok(Rebuild::same_columns(
                old.def().clone(),
                false,
                String::new(),
            ))
        };
        self.rebuild(
            name,
            plan,
            None::<fn(&TableDef, &TableDef, &[Option<u16>]) -> Convert>,
        )
    }

    /// Rebuilds table `name` as `plan` says, its rows copied through `convert` (none
    /// without it).
    fn rebuild(
        &self,
        name: &RelName,
        plan: impl FnOnce(&Table) -> Result<Rebuild>,
        convert: Option<impl FnOnce(&TableDef, &TableDef, &[Option<u16>]) -> Convert>,
    ) -> Result<()> {
        let _ddl = self.ddl();
        let old = self.table_or_error(name)?;
        let _writes = old.write_lock();
        self.reading_rows(&old)?;
        let Rebuild {
            mut def,
            positions,
            cascade,
            dropping,
        } = plan(&old)?;
        let old_id = old.def().id;
        let dropped: Vec<&str> = old
            .def()
            .columns
            .iter()
            .zip(&positions)
            .filter(|(_, p)| p.is_none())
            .map(|(c, _)| c.name.as_str())
            .collect();
        let dependents = self.dependents_needing(name, &dropped, cascade, &dropping)?;
        let cat = self.catalog_subtable()?;
        let id = self.take_ids(&cat, 1)?;
        // A foreign key whose key is gone goes with it (given `cascade`).
        let depends = |fk: &ForeignKeyDef, table: &str| {
            SqlError::user(
                state::DEPENDENT_OBJECTS_STILL_EXIST,
                format!("cannot drop {dropping} because other objects depend on it"),
            )
            .with_detail(format!(
                "constraint {} on table {table} depends on {dropping} (use DROP ... CASCADE to \
                 drop the dependent objects too)",
                fk.name
            ))
        };
        let self_referencing = std::mem::take(&mut def.foreign_keys);
        for mut fk in self_referencing {
            if fk.parent == old_id {
                if unique_key_of(&def, &fk.parent_columns).is_none() {
                    if cascade {
                        continue;
                    }
                    return Err(depends(&fk, &name.name));
                }
                fk.parent = id;
            }
            def.foreign_keys.push(fk);
        }
        def.id = id;
        // Every row is copied whole: none lacks a column any more.
        for c in &mut def.columns {
            c.added = false;
            c.missing = None;
        }
        settle(&mut def)?;
        // Each referencing table, its keys following the columns, under its write lock
        // so that no writer checks them meanwhile.
        let mut children = Vec::new();
        for (child, _) in self.referenced_from_elsewhere(old_id) {
            if children
                .iter()
                .any(|(c, _, _): &(Arc<Table>, Table, _)| Arc::ptr_eq(c, &child))
            {
                continue;
            }
            let guard = child.write_lock();
            let mut child_def = child.def().clone();
            let mut kept = Vec::with_capacity(child_def.foreign_keys.len());
            for mut fk in std::mem::take(&mut child_def.foreign_keys) {
                if fk.parent == old_id {
                    match moved(&fk.parent_columns, &positions)
                        .filter(|columns| unique_key_of(&def, columns).is_some())
                    {
                        Some(columns) => {
                            fk.parent_columns = columns;
                            fk.parent = id;
                        }
                        None if cascade => continue,
                        None => return Err(depends(&fk, &child_def.name)),
                    }
                }
                kept.push(fk);
            }
            child_def.foreign_keys = kept;
            child_def.drop_stale_comments();
            let new = Table::replace(&self.db, &child, child_def)?;
            children.push((child, new, guard));
        }
        let new = Arc::new(self.open_table(&cat, def.clone())?);
        if let Some(convert) = convert {
            let convert = convert(old.def(), &def, &positions);
            if let Err(e) = copy_rows(&old, &new, &convert) {
                for sub in new.subtable_names() {
                    self.db.drop_subtable(&sub)?;
                }
                return Err(e);
            }
        }
        let owned: Vec<(Arc<Sequence>, Option<u16>)> = self
            .sequences()
            .into_iter()
            .filter_map(|s| match s.def().owned_by {
                Some((t, c)) if t == old_id => {
                    let at = positions.get(c as usize).copied().flatten();
                    Some((s, at))
                }
                _ => None,
            })
            .collect();
        let mut batch = WriteBatch::new();
        batch.put(&cat, table_key(name), def.encode());
        let mut counts = WriteBatch::new();
        counts.delete(&cat, count_key(old_id));
        counts.delete(&cat, covered_key(old_id));
        for (_, new, _) in &children {
            batch.put(&cat, table_key(new.name()), new.def().encode());
        }
        self.drop_dependents(&dependents, &mut batch)?;
        let mut moved_defs = Vec::with_capacity(owned.len());
        for (seq, at) in &owned {
            match at {
                Some(column) => {
                    let mut d = seq.def().clone();
                    d.owned_by = Some((id, *column));
                    batch.put(&cat, sequence::def_key(&d.rel_name()), d.encode());
                    moved_defs.push(Some(d));
                }
                None => {
                    batch.delete(&cat, sequence::def_key(&seq.def().rel_name()));
                    batch.delete(&cat, sequence::state_key(seq.def().id));
                    moved_defs.push(None);
                }
            }
        }
        // Each owned sequence is held, so that no nextval stores its state between the
        // batch and the handle that replaces it.
        let mut held: Vec<_> = owned.iter().map(|(s, _)| s.hold()).collect();
        self.write_with_bookkeeping(batch, counts)?;
        for ((seq, _), (held, d)) in owned.iter().zip(held.iter_mut().zip(moved_defs)) {
            let name = seq.def().rel_name();
            match d {
                Some(d) => {
                    let next = held.hand_over(&self.db, &cat, d);
                    self.sequences.write().insert(name, next);
                }
                None => {
                    held.mark_dropped();
                    self.sequences.write().remove(&name);
                }
            }
        }
        drop(held);
        self.publish(name, new);
        old.retire();
        for (old_child, new_child, _guard) in children {
            self.publish(old_child.name(), Arc::new(new_child));
            old_child.retire();
        }
        self.forget_views(&dependents);
        // Last: a crash before leaves subtables no entry names, dropped at the next open.
        for sub in old.subtable_names() {
            self.release(sub)?;
        }
        Ok(())
    }

    /// Gives table `name`, keyed by hidden row ids, the primary key `columns` (its
    /// constraint called `constraint`, else `<table>_pkey`): its rows are copied into a
    /// table keyed by them.
    pub fn add_primary_key(
        &self,
        name: &RelName,
        columns: &[String],
        constraint: Option<String>,
    ) -> Result<()> {
        self.rebuild_table(
            name,
            |old| {
                if !old.def().primary_key.is_empty() {
                    return Err(SqlError::user(
                        state::INVALID_DEFINITION,
                        format!("multiple primary keys for table {name:?} are not allowed"),
                    ));
                }
                let mut def = old.def().clone();
                def.primary_key = def
                    .positions(columns)
                    .map_err(|c| crate::error::undefined_column(&c, &name.name))?;
                for &p in &def.primary_key {
                    def.columns[p as usize].not_null = true;
                }
                def.primary_key_name =
                    Some(constraint.unwrap_or_else(|| def.primary_key_constraint()));
                Ok(Rebuild::same_columns(def, false, String::new()))
            },
            unchanged_rows,
        )
    }

    /// The views and materialized views over table `name` that may read one of the
    /// `dropped` columns (with those over them): refused (2BP01) unless `cascade`,
    /// which drops them too.
    fn dependents_needing(
        &self,
        name: &RelName,
        dropped: &[&str],
        cascade: bool,
        dropping: &str,
    ) -> Result<Vec<Dependent>> {
        let mut found: Vec<Dependent> = Vec::new();
        for d in self.relations_over(name) {
            let Some(column) = dropped
                .iter()
                .find(|c| crate::names::may_refer_to(d.query(), c))
            else {
                continue;
            };
            if !cascade {
                return Err(SqlError::user(
                    state::DEPENDENT_OBJECTS_STILL_EXIST,
                    format!("cannot drop {dropping} because other objects depend on it"),
                )
                .with_detail(format!(
                    "{} {} depends on column {column} of table {name} (use DROP ... CASCADE \
                     to drop the dependent objects too)",
                    d.kind(),
                    d.rel_name().name
                )));
            }
            let over = self.dependents(&d.rel_name(), true)?;
            for d in std::iter::once(d).chain(over) {
                if !found.iter().any(|f| f.rel_name() == d.rel_name()) {
                    found.push(d);
                }
            }
        }
        Ok(found)
    }

    /// REFRESH MATERIALIZED VIEW: table `name`'s rows replaced by those `fill` writes
    /// into a new table id under the same definition (its indexes refilled with them),
    /// which takes the name in one catalog batch. A crash before that batch leaves
    /// subtables no entry names, dropped at the next open: the rows are as they were.
    pub fn refill_table(
        &self,
        name: &RelName,
        fill: impl FnOnce(&Arc<Table>) -> Result<()>,
    ) -> Result<()> {
        let _ddl = self.ddl();
        let old = self.table_or_error(name)?;
        let _writes = old.write_lock();
        let old_id = old.def().id;
        let cat = self.catalog_subtable()?;
        let mut def = old.def().clone();
        def.id = self.take_ids(&cat, 1)?;
        settle(&mut def)?;
        let new = Arc::new(self.open_table(&cat, def.clone())?);
        if let Err(e) = fill(&new) {
            for sub in new.subtable_names() {
                self.db.drop_subtable(&sub)?;
            }
            return Err(e);
        }
        // The writer that filled the table stored its row count.
        let mut batch = WriteBatch::new();
        batch.put(&cat, table_key(name), def.encode());
        let mut counts = WriteBatch::new();
        counts.delete(&cat, count_key(old_id));
        counts.delete(&cat, covered_key(old_id));
        self.write_with_bookkeeping(batch, counts)?;
        self.forget_rows_of(old_id);
        self.publish(name, new);
        old.retire();
        for sub in old.subtable_names() {
            self.release(sub)?;
        }
        Ok(())
    }
}

/// `columns` at their places after a rebuild; `None` if one of them was dropped.
fn moved(columns: &[u16], positions: &[Option<u16>]) -> Option<Vec<u16>> {
    columns
        .iter()
        .map(|&c| positions.get(c as usize).copied().flatten())
        .collect()
}

/// Copies the rows of `from` (committed now) into `to` through `convert`, a batch at a
/// time (the writer keeps the row count).
fn copy_rows(from: &Table, to: &Arc<Table>, convert: &Convert) -> Result<()> {
    const BATCH: usize = 1024;
    let runtime = tokio::runtime::Handle::current();
    // The rows are those `from` holds, whose foreign keys were checked when written.
    let mut writer = TableWriter::for_load(to, Vec::new())?;
    let limit = to.fill_batch_bytes();
    let mut scan = from.rows().scan::<[u8]>(..);
    let mut rows = Vec::with_capacity(BATCH);
    loop {
        let next = scan.next_ref();
        let end = next.is_none();
        if let Some(e) = next {
            let e = e?;
            rows.push(from.decode(&Committed, e.key, e.value)?);
        }
        if rows.len() == BATCH || (end && !rows.is_empty()) {
            for row in convert(std::mem::take(&mut rows))? {
                writer.insert(&row)?;
                if writer.bytes >= limit {
                    runtime.block_on(writer.commit())?;
                }
            }
        }
        if end {
            break;
        }
    }
    runtime.block_on(writer.commit())
}
