//! `SET CONSTRAINTS {ALL | name, …} {DEFERRED | IMMEDIATE}` and the checks deferred
//! foreign keys put off ([`crate::pending_checks`]), run when their key stops being
//! deferred and at the commit of the block: a referencing row written must find its
//! parent (locked FOR KEY SHARE, as the immediate check locks it), a parent key that
//! went must be held again by some row or referenced by none. A failed check at COMMIT
//! fails the commit (23503) and rolls the block back, as in PostgreSQL.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, state};
use crate::pending_checks::{ChildCheck, ParentCheck};
use crate::read_point::{ReadPoint, RowLocker, SqlTxn};
use crate::referential::{referencing_rows, still_referenced};
use crate::row_locks::{LockMode, WaitPolicy};
use crate::schema::Deferral;
use crate::session::Session;
use crate::table::{holds, in_types, key_of_row};

/// Checks that each of `names` is a deferrable foreign key of some table (42704 for
/// an unknown name, 55000 for a constraint that cannot be deferred).
pub(crate) fn check_names(catalog: &Catalog, names: &[String]) -> Result<()> {
    for name in names {
        let mut found = false;
        for table in catalog.tables() {
            let def = table.def();
            if let Some(fk) = def.foreign_keys.iter().find(|f| &f.name == name) {
                if fk.deferral == Deferral::NotDeferrable {
                    return Err(not_deferrable(name));
                }
                found = true;
            } else if def.has_constraint(name) || def.is_primary_key_name(name) {
                return Err(not_deferrable(name));
            }
        }
        if !found {
            return Err(SqlError::user(
                state::UNDEFINED_OBJECT,
                format!("constraint \"{name}\" does not exist"),
            ));
        }
    }
    Ok(())
}

fn not_deferrable(name: &str) -> SqlError {
    SqlError::user(
        state::OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("constraint \"{name}\" is not deferrable"),
    )
}

/// Runs the checks `txn` put off whose keys are no longer deferred, or all of them
/// (`all`, at the commit).
pub(crate) async fn run_due(session: &Session, txn: &Arc<SqlTxn>, all: bool) -> Result<()> {
    let (children, parents) = txn.pending_checks().take_due(all, |table, name| {
        let table = session.catalog.table_by_id(table)?;
        let fk = table.def().foreign_keys.iter().find(|f| f.name == name)?;
        Some(fk.deferral)
    });
    let read_point = ReadPoint::Transaction(Arc::clone(txn));
    let mut locker = read_point.locker(&session.row_locks);
    for check in children {
        child_has_parent(session, txn, &mut locker, &check).await?;
    }
    for check in parents {
        parent_key_unreferenced(session, &read_point, txn, &check)?;
    }
    Ok(())
}

/// The row of `check`, as the block sees it now, finds its parent (or no longer
/// references one: deleted, rolled back, its key NULL or the key dropped).
async fn child_has_parent(
    session: &Session,
    txn: &SqlTxn,
    locker: &mut RowLocker,
    check: &ChildCheck,
) -> Result<()> {
    let Some(table) = session.catalog.table_by_id(check.table) else {
        return Ok(());
    };
    let Some(fk) = table
        .def()
        .foreign_keys
        .iter()
        .find(|f| f.name == check.fk)
        .cloned()
    else {
        return Ok(());
    };
    let Some(row) = table.row_for_check(&check.key, Some(txn))? else {
        return Ok(());
    };
    let Some(values) = key_of_row(&fk, &row) else {
        return Ok(());
    };
    let parent = session.catalog.table_by_id(fk.parent).ok_or_else(|| {
        SqlError::Query(format!("the parent of foreign key {:?} is gone", fk.name))
    })?;
    let missing = || table.missing_parent(&fk, &parent, &values);
    let Some(wanted) = in_types(&values, &parent, &fk.parent_columns) else {
        return Err(missing());
    };
    for candidate in parent.keys_holding(&fk.parent_columns, &wanted, Some(txn))? {
        locker
            .lock(
                parent.as_ref(),
                &candidate,
                LockMode::KeyShare,
                WaitPolicy::Wait,
            )
            .await?;
        if let Some(r) = parent.row_for_check(&candidate, Some(txn))?
            && holds(&r, &fk.parent_columns, &wanted)
        {
            return Ok(());
        }
    }
    Err(missing())
}

/// The parent key of `check` is held by a row again, or referenced by no row.
fn parent_key_unreferenced(
    session: &Session,
    read_point: &ReadPoint,
    txn: &SqlTxn,
    check: &ParentCheck,
) -> Result<()> {
    let (Some(parent), Some(child)) = (
        session.catalog.table_by_id(check.parent),
        session.catalog.table_by_id(check.child),
    ) else {
        return Ok(());
    };
    let Some(fk) = child
        .def()
        .foreign_keys
        .iter()
        .find(|f| f.name == check.fk && f.parent == check.parent)
        .cloned()
    else {
        return Ok(());
    };
    for key in parent.keys_holding(&fk.parent_columns, &check.values, Some(txn))? {
        if let Some(r) = parent.row_for_check(&key, Some(txn))?
            && holds(&r, &fk.parent_columns, &check.values)
        {
            return Ok(());
        }
    }
    let Some(values) = in_types(&check.values, &child, &fk.columns) else {
        return Ok(());
    };
    if referencing_rows(session, read_point, &child, &fk, &values)?.is_empty() {
        Ok(())
    } else {
        Err(still_referenced(&parent, &fk, &child, &check.values))
    }
}

/// Commits the block a statement began for itself ([`crate::referential::block_for`]),
/// if it began one, after the checks its deferred foreign keys put off.
pub(crate) async fn commit_own_block(session: &Session, own: Option<Arc<SqlTxn>>) -> Result<()> {
    match own {
        Some(txn) => {
            run_due(session, &txn, true).await?;
            txn.commit().await
        }
        None => Ok(()),
    }
}
