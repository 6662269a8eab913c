//! What deleting a referenced row, or changing its referenced columns, does to the rows
//! that reference it: each foreign key's action (NO ACTION and RESTRICT refuse with
//! 23503, CASCADE deletes them or gives them the new values, SET NULL empties their
//! columns), applied after the statement's own changes, in its transaction block, so
//! that every table it touches commits together. Outside a block the statement gets a
//! block of its own ([`block_for`]).
//!
//! The parent's rows are locked by the statement (FOR UPDATE: it deletes them or changes
//! their key), and a writer of a referencing row locks its parent FOR KEY SHARE
//! (`table::references`): so once the statement holds its rows, no block that added a
//! referencing row is still open, and under read committed the lock moved the block's
//! snapshot past their commits. Under repeatable read and serializable, a referencing
//! row committed after the block's snapshot counts too, as in PostgreSQL: NO ACTION
//! refuses (23503), and an action on it fails with 40001.

use std::sync::Arc;

use futures::future::BoxFuture;
use pmdb_engine::Isolation;

use crate::error::{Result, SqlError, state};
use crate::keycode::{decode_key_prefix, encode_key};
use crate::pending_checks::ParentCheck;
use crate::read_point::{ReadPoint, SqlTxn, changed_since};
use crate::row_locks::{LockMode, WaitPolicy};
use crate::schema::{Action, ForeignKeyDef};
use crate::session::Session;
use crate::table::{Table, TableWriter, holds, in_types, shown};
use crate::types::Value;

/// A row a statement changed: its values before, and after (`None`: deleted).
pub(crate) type RowChange = (Vec<Value>, Option<Vec<Value>>);

/// The read point of a statement that may change rows other tables reference: the
/// statement's block, or outside one a block of its own (read committed), returned too
/// so that [`crate::deferred_checks::commit_own_block`] commits it once the statement
/// and its actions succeeded.
pub(crate) fn block_for(
    session: &Session,
    read_point: &ReadPoint,
) -> (ReadPoint, Option<Arc<SqlTxn>>) {
    if read_point.txn().is_some() {
        return (read_point.clone(), None);
    }
    let txn = Arc::new(SqlTxn::begin(
        session.db.transaction_with(Isolation::ReadCommitted),
        session.row_locks.owner(),
    ));
    (ReadPoint::Transaction(Arc::clone(&txn)), Some(txn))
}

/// Whether a change to `columns` of table `id` (all of them when `None`: a delete) may
/// reach rows that reference it.
pub(crate) fn reaches_references(session: &Session, id: u64, columns: Option<&[usize]>) -> bool {
    session.catalog.any_reference_to(id, |fk| match columns {
        None => true,
        Some(columns) => fk
            .parent_columns
            .iter()
            .any(|&c| columns.contains(&usize::from(c))),
    })
}

/// What a foreign key does to the rows that reference one changed parent row.
#[derive(Clone)]
enum Effect {
    Delete,
    /// The referencing columns take these values (of their own types).
    Set(Vec<Value>),
}

/// Applies the actions of every foreign key that references `table` to the rows that
/// reference the rows `changes` changed, and theirs in turn.
pub(crate) fn parents_changed<'a>(
    session: &'a Session,
    read_point: &'a ReadPoint,
    table: &'a Arc<Table>,
    changes: &'a [RowChange],
) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        for (child, fk) in session.catalog.referencing(table.def().id) {
            // Each referencing row, what it was found by, and what becomes of it.
            let mut targets: Vec<(Vec<u8>, Vec<Value>, Effect)> = Vec::new();
            for (old, new) in changes {
                let parent_values: Vec<Value> = fk
                    .parent_columns
                    .iter()
                    .map(|&c| old[usize::from(c)].clone())
                    .collect();
                if parent_values.contains(&Value::Null) {
                    continue;
                }
                if let Some(new) = new
                    && fk
                        .parent_columns
                        .iter()
                        .all(|&c| new[usize::from(c)] == old[usize::from(c)])
                {
                    continue;
                }
                let Some(values) = in_types(&parent_values, &child, &fk.columns) else {
                    continue;
                };
                let keys = referencing_rows(session, read_point, &child, &fk, &values)?;
                if keys.is_empty() {
                    continue;
                }
                let action = match new {
                    None => fk.on_delete,
                    Some(_) => fk.on_update,
                };
                // A deferred NO ACTION checks at the commit (RESTRICT never waits).
                if action == Action::NoAction
                    && let Some(txn) = read_point.txn()
                    && txn.pending_checks().defers(&fk)
                {
                    txn.pending_checks().parent(ParentCheck {
                        parent: table.def().id,
                        child: child.def().id,
                        fk: fk.name.clone(),
                        values: parent_values,
                    });
                    continue;
                }
                let effect = match (action, new) {
                    (Action::NoAction | Action::Restrict, _) => {
                        return Err(still_referenced(table, &fk, &child, &parent_values));
                    }
                    (Action::Cascade, None) => Effect::Delete,
                    (Action::SetNull, _) => Effect::Set(vec![Value::Null; fk.columns.len()]),
                    (Action::Cascade, Some(new)) => {
                        let moved: Vec<Value> = fk
                            .parent_columns
                            .iter()
                            .map(|&c| new[usize::from(c)].clone())
                            .collect();
                        Effect::Set(in_types(&moved, &child, &fk.columns).ok_or_else(|| {
                            SqlError::user(
                                state::NUMERIC_OUT_OF_RANGE,
                                format!(
                                    "the new key of table {:?} does not fit the columns \
                                             of foreign key {:?}",
                                    table.def().name,
                                    fk.name
                                ),
                            )
                        })?)
                    }
                };
                for key in keys {
                    targets.push((key, values.clone(), effect.clone()));
                }
            }
            if targets.is_empty() {
                continue;
            }
            let (child, changed) =
                change_referencing(session, read_point, &child, &fk, targets).await?;
            parents_changed(session, read_point, &child, &changed).await?;
        }
        Ok(())
    })
}

/// The 23503 of a change that leaves rows of `child` without their parent.
pub(crate) fn still_referenced(
    parent: &Table,
    fk: &ForeignKeyDef,
    child: &Table,
    values: &[Value],
) -> SqlError {
    SqlError::user(
        state::FOREIGN_KEY_VIOLATION,
        format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \
             \"{}\"",
            parent.def().name,
            fk.name,
            child.def().name
        ),
    )
    .with_detail(format!(
        "Key ({})=({}) is still referenced from table \"{}\".",
        parent.column_names(&fk.parent_columns).join(", "),
        shown(values, &fk.parent_columns, parent),
        child.def().name
    ))
}

/// The keys of the rows of `child` whose `fk` columns hold `values`: as the block reads
/// them and, above read committed, also those a commit after the block's snapshot made
/// hold them (added, or moved to this parent), as PostgreSQL's check reads the rows
/// committed now: NO ACTION then refuses with 23503, and an action fails with 40001
/// when it locks a row changed since the snapshot. A row committed now that no later
/// commit changed, and that the block does not find, is one the block itself took away.
pub(crate) fn referencing_rows(
    session: &Session,
    read_point: &ReadPoint,
    child: &Table,
    fk: &ForeignKeyDef,
    values: &[Value],
) -> Result<Vec<Vec<u8>>> {
    let mut found = rows_holding(read_point, child, &fk.columns, values)?;
    if let Some(txn) = read_point.txn()
        && txn.isolation() != Isolation::ReadCommitted
    {
        let now = ReadPoint::new(&session.db);
        let seen = read_point.snapshot();
        for key in rows_holding(&now, child, &fk.columns, values)? {
            if !found.contains(&key) && changed_since(&seen, child.rows(), &key)? {
                found.push(key);
            }
        }
    }
    Ok(found)
}

/// The keys of the rows of `table` holding `values` in `columns` at `read_point`:
/// through an index that leads with those columns, else by a scan of the rows.
fn rows_holding(
    read_point: &ReadPoint,
    table: &Table,
    columns: &[u16],
    values: &[Value],
) -> Result<Vec<Vec<u8>>> {
    let n = columns.len();
    let leads = |key: &[u16]| key.len() >= n && key[..n].iter().all(|c| columns.contains(c));
    let value_of = |c: &u16| values[columns.iter().position(|x| x == c).expect("a column")].clone();
    let mut keys = Vec::new();
    let index = table.indexes().iter().find(|ix| leads(&ix.def.columns));
    if let Some(ix) = index {
        let leading: Vec<Value> = ix.def.columns[..n].iter().map(value_of).collect();
        let mut prefix = Vec::new();
        encode_key(&ix.types[..n], &leading, &mut prefix)
            .map_err(|e| SqlError::user(state::DATA_EXCEPTION, e.to_string()))?;
        let mut scan = read_point.scan(
            &ix.subtable,
            (
                std::ops::Bound::Included(prefix.clone()),
                std::ops::Bound::Unbounded,
            ),
        )?;
        while let Some(e) = scan.next_ref() {
            let entry = e?.key;
            if !entry.starts_with(&prefix) {
                break;
            }
            let (_, row_key) =
                decode_key_prefix(&ix.types, entry).map_err(|source| SqlError::Damaged {
                    what: format!("index {:?} of table {:?}", ix.def.name, table.def().name),
                    source,
                })?;
            keys.push(row_key.to_vec());
        }
        return Ok(keys);
    }
    let mut scan = read_point.scan(
        table.rows(),
        (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
    )?;
    while let Some(e) = scan.next_ref() {
        let e = e?;
        let row = table.decode(read_point, e.key, e.value)?;
        if holds(&row, columns, values) {
            keys.push(e.key.to_vec());
        }
    }
    Ok(keys)
}

/// Applies to each of `targets` (a row of `child`, the values of `fk`'s columns it was
/// found with, and its effect) that effect: each row locked first (waiting for its
/// holder, with no table lock held), then, under the table's write lock, read again as
/// the block sees it now and passed over if it no longer references the parent. The
/// table's current handle and the rows changed, for the keys that reference it.
async fn change_referencing(
    session: &Session,
    read_point: &ReadPoint,
    child: &Arc<Table>,
    fk: &ForeignKeyDef,
    targets: Vec<(Vec<u8>, Vec<Value>, Effect)>,
) -> Result<(Arc<Table>, Vec<RowChange>)> {
    let def = child.def();
    let key_columns = fk.columns.iter().any(|c| {
        def.primary_key.contains(c)
            || def
                .indexes
                .iter()
                .any(|ix| ix.unique && ix.columns.contains(c))
    });
    let mode = if key_columns || targets.iter().any(|t| matches!(t.2, Effect::Delete)) {
        LockMode::Update
    } else {
        LockMode::NoKeyUpdate
    };
    let mut locker = read_point.locker(&session.row_locks);
    for (key, _, _) in &targets {
        locker
            .lock(child.as_ref(), key, mode, WaitPolicy::Wait)
            .await?;
    }
    loop {
        let (table, guard) = session
            .catalog
            .lock_table_async(child.name(), &mut locker)
            .await?;
        let mut writer = TableWriter::new(&table, session.catalog.references(&table)?)
            .through(read_point)
            .claiming(&mut locker);
        let mut changed = Vec::new();
        let mut written = Ok(());
        for (key, values, effect) in &targets {
            let Some(old) = read_point.get(table.rows(), key, |v| {
                v.map(|v| table.decode(read_point, key, v))
            })?
            else {
                continue;
            };
            let old = old?;
            if !holds(&old, &fk.columns, values) {
                continue;
            }
            let new = match effect {
                Effect::Delete => None,
                Effect::Set(to) => {
                    let mut new = old.clone();
                    for (&c, v) in fk.columns.iter().zip(to) {
                        new[usize::from(c)] = v.clone();
                    }
                    Some(new)
                }
            };
            written = match &new {
                None => writer.delete(key, &old),
                Some(new) => writer.update(key, &old, new),
            };
            if written.is_err() {
                break;
            }
            changed.push((old, new));
        }
        if let Some(claim) = writer.blocked().cloned() {
            drop(writer);
            drop(guard);
            locker.claim_waiting(&claim).await?;
            continue;
        }
        written?;
        writer.commit().await?;
        return Ok((table, changed));
    }
}
