//! The transaction a statement that changes the catalog runs in (see
//! [`crate::catalog::block_ddl`]): its block's, or outside any block one of its own,
//! committed when the statement succeeds and rolled back when it fails, so that a
//! statement that changes the catalog in several steps is whole or absent. It also
//! holds, to its end, the own locks ([`crate::row_locks::table_lock`]) of the tables the
//! statement changes or must read whole, in PostgreSQL's relation lock modes
//! ([`RelationMode`]), so that it waits for the transactions writing them (and, where
//! it drops, empties or redefines them, reading them): an index, a constraint or a
//! rewrite then sees the rows they commit, none of their rows lands in a table the DDL
//! has let go of, and no block finds a table it read gone or emptied under it.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    AlterTable, AlterTableOperation, ColumnOption, ObjectName, ObjectType, Statement,
    TableConstraint,
};
use pmdb_engine::Isolation;

use crate::catalog::Catalog;
use crate::error::Result;
use crate::names::object_name;
use crate::output::Output;
use crate::read_point::{ReadPoint, RowLocker, SqlTxn};
use crate::row_locks::{LockMode, RelationMode};
use crate::session::Session;
use crate::table::Table;

/// A statement's hold on the catalog: the catalog's lock, taken by its transaction.
pub(crate) struct DdlScope {
    /// The statement's own transaction, outside any block.
    own: Option<Arc<SqlTxn>>,
}

impl DdlScope {
    /// Takes the catalog's lock for the transaction of `read_point` (waiting while
    /// another transaction's DDL holds it) and makes the catalog's changes part of it;
    /// then the locks of the tables `s` changes, waiting for the transactions using them
    /// in modes that conflict.
    pub(crate) async fn enter(
        session: &Session,
        read_point: &ReadPoint,
        s: &Statement,
    ) -> Result<DdlScope> {
        let (txn, own) = match read_point {
            ReadPoint::Transaction(t) => (Arc::clone(t), false),
            ReadPoint::Snapshot(..) => {
                let tx = session.db.transaction_with(Isolation::ReadCommitted);
                (Arc::new(SqlTxn::begin(tx, session.row_locks.owner())), true)
            }
        };
        let mut locker = RowLocker::Block(Arc::clone(&txn));
        locker.lock_catalog(LockMode::Update).await?;
        session.catalog.begin_ddl(&txn, session.viewer)?;
        for (table, mode) in tables_changed(&session.catalog, s) {
            let def = table.def();
            locker.lock_whole_table(def.id, &def.name, mode).await?;
        }
        Ok(DdlScope {
            own: own.then_some(txn),
        })
    }

    /// Ends the statement that gave `out`: outside a block, commits its changes if it
    /// succeeded (else they roll back with its transaction).
    pub(crate) async fn end(self, out: Result<Output>) -> Result<Output> {
        match (self.own, out) {
            (Some(txn), Ok(out)) => txn.commit().await.map(|()| out),
            (_, out) => out,
        }
    }
}

/// The existing tables DDL statement `s` changes or must read whole: the table it alters
/// or indexes, the parents of the foreign keys it adds, the tables and the indexes' tables
/// it drops (a schema's, for DROP SCHEMA), the tables it truncates; and the tables the
/// query of a CREATE TABLE … AS or CREATE MATERIALIZED VIEW reads. Names that are not
/// tables are passed over: the statement itself reports them.
fn tables_changed(catalog: &Catalog, s: &Statement) -> Vec<(Arc<Table>, RelationMode)> {
    let table = |name: &ObjectName| object_name(name).ok().and_then(|n| catalog.table(&n));
    let replaced = |t: Arc<Table>| (t, RelationMode::AccessExclusive);
    let read = |t: Arc<Table>| (t, RelationMode::AccessShare);
    let mut tables: Vec<(Arc<Table>, RelationMode)> = match s {
        Statement::AlterTable(alter) => {
            // A new foreign key's parent must keep its rows while they are checked, as
            // an index's table must: writers wait, readers go on.
            let parents = parents(alter).filter_map(table);
            let target = table(&alter.name).map(replaced);
            let kept = parents.map(|t| (t, RelationMode::Share));
            target.into_iter().chain(kept).collect()
        }
        Statement::CreateIndex(create) => table(&create.table_name)
            .map(|t| (t, RelationMode::Share))
            .into_iter()
            .collect(),
        Statement::CreateTable(create) if create.query.is_none() => Vec::new(),
        Statement::CreateView(view) if !view.materialized => Vec::new(),
        // What their query reads.
        Statement::CreateTable(_) | Statement::CreateView(_) => {
            let named = crate::read_locks::named_relations(s).into_iter();
            named.filter_map(|n| catalog.table(&n)).map(read).collect()
        }
        Statement::Drop {
            object_type, names, ..
        } => match object_type {
            ObjectType::Table => names.iter().filter_map(table).map(replaced).collect(),
            ObjectType::Index => names
                .iter()
                .filter_map(|n| object_name(n).ok())
                .filter_map(|n| catalog.table_of_index(&n))
                .map(replaced)
                .collect(),
            ObjectType::Schema => names
                .iter()
                .filter_map(|n| object_name(n).ok())
                .flat_map(|n| {
                    catalog
                        .tables()
                        .into_iter()
                        .filter(move |t| t.def().schema == n.name)
                })
                .map(replaced)
                .collect(),
            _ => Vec::new(),
        },
        Statement::Truncate(t) => crate::truncate::tables(catalog, t)
            .unwrap_or_default()
            .iter()
            .filter_map(|n| catalog.table(n))
            .map(replaced)
            .collect(),
        _ => Vec::new(),
    };
    // In id order, so that two statements' waits cannot cross; a table named twice
    // (a foreign key to its own table) in the stronger mode.
    tables.sort_by_key(|(t, mode)| (t.def().id, std::cmp::Reverse(*mode)));
    tables.dedup_by_key(|(t, _)| t.def().id);
    tables
}

/// The parent of each foreign key ALTER TABLE `alter` adds.
fn parents(alter: &AlterTable) -> impl Iterator<Item = &ObjectName> {
    alter.operations.iter().flat_map(|op| match op {
        AlterTableOperation::AddConstraint {
            constraint: TableConstraint::ForeignKey(fk),
            ..
        } => vec![&fk.foreign_table],
        AlterTableOperation::AddColumn { column_def, .. } => column_def
            .options
            .iter()
            .filter_map(|o| match &o.option {
                ColumnOption::ForeignKey(fk) => Some(&fk.foreign_table),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    })
}
