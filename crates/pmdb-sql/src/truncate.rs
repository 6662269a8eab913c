//! TRUNCATE: every row of its tables goes, with their index entries and columnar
//! segments, and with CASCADE those of every table that references them (a referenced
//! table goes only with the tables referencing it). In a block the rows are deleted
//! through the block, and come back if it rolls back. Outside a block each table gets
//! new, empty subtables under a new id ([`Catalog::empty_table`]), all of them in the
//! one catalog batch of the statement's own transaction, the old subtables dropped once
//! it commits: the statement is whole or absent, however many rows the tables hold.

use std::ops::Bound;

use datafusion::sql::sqlparser::ast::{CascadeOption, Truncate};

use crate::catalog::Catalog;
use crate::error::{Result, SqlError};
use crate::names::{RelName, object_name};
use crate::read_point::ReadPoint;
use crate::row_locks::RelationMode;
use crate::session::Session;
use crate::table::TableWriter;

/// The tables `t` truncates: those it names, and with CASCADE the tables that reference
/// them, in turn; a table others reference without CASCADE is refused.
pub(crate) fn tables(catalog: &Catalog, t: &Truncate) -> Result<Vec<RelName>> {
    let mut names: Vec<RelName> = Vec::with_capacity(t.table_names.len());
    for target in &t.table_names {
        let name = object_name(&target.name)?;
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let cascade = matches!(t.cascade, Some(CascadeOption::Cascade));
    let mut i = 0;
    while i < names.len() {
        let table = catalog.table_or_error(&names[i])?;
        for (child, _) in catalog.referencing(table.def().id) {
            let child = child.name();
            if names.contains(child) {
                continue;
            }
            if !cascade {
                return Err(SqlError::unsupported(format!(
                    "cannot truncate a table referenced in a foreign key constraint: table \
                     \"{child}\" references \"{}\" (truncate table \"{child}\" at the same \
                     time, or use TRUNCATE ... CASCADE)",
                    names[i]
                )));
            }
            names.push(child.clone());
        }
        i += 1;
    }
    Ok(names)
}

/// TRUNCATE outside a block, in the transaction the statement runs in (which holds the
/// tables' own locks): each table emptied.
pub(crate) async fn empty(session: &Session, t: &Truncate) -> Result<()> {
    let names = tables(&session.catalog, t)?;
    session
        .off_executor(move |catalog| names.iter().try_for_each(|name| catalog.empty_table(name)))
        .await
}

/// TRUNCATE in a block: every row of each table, with its index entries, deleted
/// through the block. The rows deleted.
pub(crate) async fn delete_rows(
    session: &Session,
    read_point: &ReadPoint,
    t: &Truncate,
) -> Result<u64> {
    let names = tables(&session.catalog, t)?;
    let mut deleted = 0;
    let mut locker = read_point.locker(&session.row_locks);
    // Every table's own lock first, in id order, as PostgreSQL's TRUNCATE takes its
    // exclusive locks: it waits for the transactions writing them, whose rows it then
    // deletes too, and keeps new writers out until it ends.
    let mut ids: Vec<(u64, String)> = names
        .iter()
        .map(|n| session.catalog.table_or_error(n))
        .map(|t| t.map(|t| (t.def().id, t.def().name.clone())))
        .collect::<Result<_>>()?;
    ids.sort();
    ids.dedup();
    for (id, name) in &ids {
        locker
            .lock_whole_table(*id, name, RelationMode::AccessExclusive)
            .await?;
    }
    for name in names {
        let (table, _guard) = session.catalog.lock_table_async(&name, &mut locker).await?;
        let read_point = read_point.under_lock(&session.db);
        // Deletes check no parent (a table that others reference is refused above).
        let mut writer = TableWriter::new(&table, Vec::new()).through(&read_point);
        let mut scan = read_point.scan(table.rows(), (Bound::Unbounded, Bound::Unbounded))?;
        while let Some(entry) = scan.next_ref() {
            let entry = entry?;
            let old = table.decode(&read_point, entry.key, entry.value)?;
            writer.delete(entry.key, &old)?;
        }
        writer.commit().await?;
        deleted += writer.rows();
    }
    Ok(deleted)
}
