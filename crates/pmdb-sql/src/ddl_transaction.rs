//! The transaction a statement that changes the catalog runs in (see
//! [`crate::catalog::block_ddl`]): its block's, or outside any block one of its own,
//! committed when the statement succeeds and rolled back when it fails, so that a
//! statement that changes the catalog in several steps is whole or absent.

use std::sync::Arc;

use pmdb_engine::Isolation;

use crate::error::Result;
use crate::output::Output;
use crate::read_point::{ReadPoint, RowLocker, SqlTxn};
use crate::row_locks::LockMode;
use crate::session::Session;

/// A statement's hold on the catalog: the catalog's lock, taken by its transaction.
pub(crate) struct DdlScope {
    /// The statement's own transaction, outside any block.
    own: Option<Arc<SqlTxn>>,
}

impl DdlScope {
    /// Takes the catalog's lock for the transaction of `read_point` (waiting while
    /// another transaction's DDL holds it) and makes the catalog's changes part of it.
    pub(crate) async fn enter(session: &Session, read_point: &ReadPoint) -> Result<DdlScope> {
        let (txn, own) = match read_point {
            ReadPoint::Transaction(t) => (Arc::clone(t), false),
            ReadPoint::Snapshot(_) => {
                let tx = session.db.transaction_with(Isolation::ReadCommitted);
                (Arc::new(SqlTxn::begin(tx, session.row_locks.owner())), true)
            }
        };
        RowLocker::Block(Arc::clone(&txn))
            .lock_catalog(LockMode::Update)
            .await?;
        session.catalog.begin_ddl(&txn)?;
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
