//! `txid_current()`: the id of the calling session's transaction, given it when it
//! first asks, the same for the rest of that transaction (a block, or a statement run
//! outside one, or the statements of one Query message or up to one Sync, as PostgreSQL
//! groups them) and a new one for the next. Drivers and pools compare two of them to
//! tell whether a connection is still in the transaction it was in.
//!
//! pmdb's commits write no transaction id, so an id is a number of the database's: one
//! counter for every session, never below the newest visible commit's sequence number
//! plus one. Ids rise while the server runs and every id is given once; after a restart
//! they go on above every commit made before it (an id given to a transaction that
//! wrote nothing, after the last commit, may then be given again).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use parking_lot::Mutex;
use pmdb_engine::Db;

use crate::udf_identity::Held;

/// One session's transaction id, from the database's counter.
pub(crate) struct TransactionIds {
    db: Db,
    /// The next id to give, shared by every session of the database.
    next: Arc<AtomicU64>,
    /// The running transaction's id, once asked for.
    current: Mutex<Option<u64>>,
}

impl TransactionIds {
    /// The ids of a database's first session: the counter starts with it.
    pub(crate) fn first(db: &Db) -> TransactionIds {
        TransactionIds {
            db: db.clone(),
            next: Arc::new(AtomicU64::new(1)),
            current: Mutex::new(None),
        }
    }

    /// Another session's ids, from the same counter.
    pub(crate) fn for_client(&self) -> TransactionIds {
        TransactionIds {
            db: self.db.clone(),
            next: Arc::clone(&self.next),
            current: Mutex::new(None),
        }
    }

    /// A new transaction begins: the next one asked for is a new id.
    pub(crate) fn forget(&self) {
        *self.current.lock() = None;
    }

    /// The running transaction's id, given now if it has none.
    fn current(&self) -> u64 {
        *self.current.lock().get_or_insert_with(|| {
            let floor = self.db.last_seq().saturating_add(1);
            let mut next = self.next.load(Ordering::Relaxed);
            loop {
                let id = next.max(floor);
                match self.next.compare_exchange_weak(
                    next,
                    id.saturating_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return id,
                    Err(now) => next = now,
                }
            }
        })
    }
}

pub(crate) fn register(ctx: &SessionContext, ids: &Arc<TransactionIds>) {
    ctx.register_udf(ScalarUDF::new_from_impl(TxidCurrent {
        ids: Held(Arc::clone(ids)),
        signature: Signature::exact(Vec::new(), Volatility::Volatile),
    }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TxidCurrent {
    ids: Held<TransactionIds>,
    signature: Signature,
}

impl ScalarUDFImpl for TxidCurrent {
    fn name(&self) -> &str {
        "txid_current"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let id = i64::try_from(self.ids.current()).unwrap_or(i64::MAX);
        Ok(ColumnarValue::Scalar(ScalarValue::Int64(Some(id))))
    }
}
