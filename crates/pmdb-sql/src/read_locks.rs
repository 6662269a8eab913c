//! The lock a statement takes on every table it reads, PostgreSQL's ACCESS SHARE
//! ([`RelationMode::AccessShare`]), held as its row locks are: to the end of its block,
//! or of the statement outside one. DDL that drops, empties, rewrites or redefines a
//! table waits for the transactions that read it, so a block reads the same table from
//! its first statement to its last (under REPEATABLE READ, the same rows), and a
//! statement outside any block never reads storage that such DDL let go of meanwhile. A
//! reader, in turn, waits for such DDL that has not ended, then reads what it committed.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{CopySource, Statement, visit_relations};

use crate::error::Result;
use crate::names::{RelName, object_name};
use crate::read_point::ReadPoint;
use crate::row_locks::RelationMode;
use crate::session::Session;
use crate::table::Table;

/// The relations statement `s` reads (its views expanded before): those named in a
/// query, an INSERT, UPDATE or DELETE, or a COPY … TO. Names that are no table (a
/// common table expression, a catalog relation) are passed over when locked. Other
/// statements read nothing here: DDL takes its own locks ([`crate::ddl_transaction`]).
pub(crate) fn tables_read(s: &Statement) -> Vec<RelName> {
    let mut names = Vec::new();
    match s {
        Statement::Query(_)
        | Statement::Insert(_)
        | Statement::Update(_)
        | Statement::Delete(_) => {}
        Statement::Copy {
            source: CopySource::Table { table_name, .. },
            to: true,
            ..
        } => names.extend(object_name(table_name).ok()),
        Statement::Copy { to: true, .. } => {}
        _ => return names,
    }
    names.extend(named_relations(s));
    names.sort();
    names.dedup();
    names
}

/// Every relation statement `s` names, as it names it.
pub(crate) fn named_relations(s: &Statement) -> Vec<RelName> {
    let mut names = Vec::new();
    let _ = visit_relations(s, |name| {
        names.extend(object_name(name).ok());
        std::ops::ControlFlow::<()>::Continue(())
    });
    names
}

/// Takes the lock of each table of `names` for the statement at `read_point`, in table
/// id order, waiting for DDL of another transaction on it that has not ended. A table
/// such DDL replaced meanwhile is looked up again. The read point to read at: after a
/// wait, one that sees what the DDL committed (a new snapshot outside a block, the
/// block's refreshed under read committed).
pub(crate) async fn take(
    session: &Session,
    read_point: ReadPoint,
    names: &[RelName],
) -> Result<ReadPoint> {
    if names.is_empty() {
        return Ok(read_point);
    }
    let seen = || -> Vec<Arc<Table>> {
        let mut tables: Vec<Arc<Table>> = names
            .iter()
            .filter_map(|n| session.catalog.table_seen_by(n, session.viewer))
            .collect();
        tables.sort_by_key(|t| t.def().id);
        tables.dedup_by_key(|t| t.def().id);
        tables
    };
    let mut locker = read_point.locker(&session.row_locks);
    let mut waited = false;
    let mut tables = seen();
    loop {
        let mut waited_now = false;
        for table in &tables {
            let def = table.def();
            waited_now |= locker
                .lock_whole_table(def.id, &def.name, RelationMode::AccessShare)
                .await?;
        }
        waited |= waited_now;
        // DDL that replaced a table retired it, whether this waited for it or it ended
        // before: else the tables are the ones to read.
        if !waited_now && !tables.iter().any(|t| t.is_retired()) {
            break;
        }
        let now = seen();
        let same =
            now.len() == tables.len() && now.iter().zip(&tables).all(|(a, b)| Arc::ptr_eq(a, b));
        if same {
            break;
        }
        tables = now;
    }
    if !waited {
        return Ok(read_point);
    }
    if let ReadPoint::Transaction(t) = &read_point {
        t.refresh()?;
    }
    Ok(read_point.under_lock(&session.db))
}
