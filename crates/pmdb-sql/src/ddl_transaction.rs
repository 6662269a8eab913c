//! The transaction a statement that changes the catalog runs in (see
//! [`crate::catalog::block_ddl`]): its block's, or outside any block one of its own,
//! committed when the statement succeeds and rolled back when it fails, so that a
//! statement that changes the catalog in several steps is whole or absent. It also
//! holds, to its end, the own locks ([`crate::row_locks::table_lock`]) of the tables the
//! statement changes or must read whole, so that it waits for the transactions writing
//! them, as PostgreSQL's DDL waits for their relation locks: an index, a constraint or a
//! rewrite then sees the rows they commit, and none of their rows lands in a table the
//! DDL has let go of.

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
use crate::row_locks::LockMode;
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
    /// then the locks of the tables `s` changes, waiting for their writers.
    pub(crate) async fn enter(
        session: &Session,
        read_point: &ReadPoint,
        s: &Statement,
    ) -> Result<DdlScope> {
        let (txn, own) = match read_point {
            ReadPoint::Transaction(t) => (Arc::clone(t), false),
            ReadPoint::Snapshot(_) => {
                let tx = session.db.transaction_with(Isolation::ReadCommitted);
                (Arc::new(SqlTxn::begin(tx, session.row_locks.owner())), true)
            }
        };
        let mut locker = RowLocker::Block(Arc::clone(&txn));
        locker.lock_catalog(LockMode::Update).await?;
        session.catalog.begin_ddl(&txn, session.viewer)?;
        for table in tables_changed(&session.catalog, s) {
            let def = table.def();
            locker
                .lock_whole_table(def.id, &def.name, LockMode::Update)
                .await?;
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
/// it drops (a schema's, for DROP SCHEMA), the tables it truncates. Names that are not
/// tables are passed over: the statement itself reports them.
fn tables_changed(catalog: &Catalog, s: &Statement) -> Vec<Arc<Table>> {
    let table = |name: &ObjectName| object_name(name).ok().and_then(|n| catalog.table(&n));
    let mut tables: Vec<Arc<Table>> = match s {
        Statement::AlterTable(alter) => altered(alter).filter_map(table).collect(),
        Statement::CreateIndex(create) => table(&create.table_name).into_iter().collect(),
        Statement::Drop {
            object_type, names, ..
        } => match object_type {
            ObjectType::Table => names.iter().filter_map(table).collect(),
            ObjectType::Index => names
                .iter()
                .filter_map(|n| object_name(n).ok())
                .filter_map(|n| catalog.table_of_index(&n))
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
                .collect(),
            _ => Vec::new(),
        },
        Statement::Truncate(t) => crate::truncate::tables(catalog, t)
            .unwrap_or_default()
            .iter()
            .filter_map(|n| catalog.table(n))
            .collect(),
        _ => Vec::new(),
    };
    // In id order, so that two statements' waits cannot cross.
    tables.sort_by_key(|t| t.def().id);
    tables.dedup_by_key(|t| t.def().id);
    tables
}

/// The names ALTER TABLE `alter` changes or reads whole: its table, and the parent of
/// each foreign key it adds.
fn altered(alter: &AlterTable) -> impl Iterator<Item = &ObjectName> {
    let parents = alter.operations.iter().flat_map(|op| match op {
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
    });
    std::iter::once(&alter.name).chain(parents)
}
