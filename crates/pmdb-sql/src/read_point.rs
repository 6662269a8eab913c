//! Where a statement reads and writes: [`ReadPoint`], set as a session-config extension
//! so every scan of one statement sees the same data. In autocommit, a snapshot taken
//! when the statement began (its writes commit at its end). In a transaction block, the
//! engine transaction ([`SqlTxn`]): its snapshot (under read committed, refreshed at each
//! statement) with its own writes laid over, the place the block's writes gather until
//! COMMIT, and the row locks it holds until then; its savepoints ([`SqlSavepoint`]).

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use pmdb_engine::{
    Db, EntryRef, Isolation, Savepoint, Scan, Snapshot, Subtable, Transaction, TxnScan, WriteBatch,
    WriteOptions,
};

use crate::error::{Result, SqlError, state};
use crate::large_rows::ChunkSource;
use crate::pending_checks::PendingChecks;
use crate::row_locks::{
    CATALOG_LOCK, ClientLocks, HeldLocks, LockMode, RelationMode, WaitPolicy, table_lock,
};

/// A table as a transaction block's commit needs it: its own bookkeeping.
pub trait TxnTable: Send + Sync {
    fn id(&self) -> u64;
    /// The table's name, for messages.
    fn name(&self) -> &str;
    /// The subtable of its rows.
    fn row_subtable(&self) -> &Subtable;
    /// Adds to `tx` what keeps the table's row count and segments honest after the
    /// block changed it by `delta` rows.
    fn bookkeeping(&self, tx: &mut Transaction, delta: i64) -> Result<()>;
    /// Takes note of the committed block.
    fn committed_elsewhere(&self, delta: i64);
}

#[derive(Clone)]
pub enum ReadPoint {
    /// A statement outside any block: its snapshot, and its locks.
    Snapshot(Arc<Snapshot>, StatementLocks),
    Transaction(Arc<SqlTxn>),
}

/// The locks of one statement outside any block. Every [`RowLocker`] of its read point
/// (and of the read point's clones) takes them as one owner, made by the first, so that
/// the statement never waits for a lock it holds itself and a wait of its closes a
/// cycle where one is closed; they are released when the statement is done with them
/// ([`RowLocker::statement_done`]) or when the last clone is dropped.
#[derive(Clone, Default)]
pub struct StatementLocks(Arc<OnceLock<Arc<tokio::sync::Mutex<HeldLocks>>>>);

impl StatementLocks {
    fn owner(&self, row_locks: &ClientLocks) -> Arc<tokio::sync::Mutex<HeldLocks>> {
        let made = || Arc::new(tokio::sync::Mutex::new(row_locks.owner()));
        Arc::clone(self.0.get_or_init(made))
    }
}

/// A scan through a read point.
pub enum RowScan {
    Snapshot(Scan),
    Transaction(TxnScan),
}

impl RowScan {
    /// The next entry, borrowed until the next call.
    pub fn next_ref(&mut self) -> Option<pmdb_engine::Result<EntryRef<'_>>> {
        match self {
            RowScan::Snapshot(s) => s.next_ref(),
            RowScan::Transaction(s) => s.next_ref(),
        }
    }
}

type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);

impl ReadPoint {
    /// The read point a statement that changes a table reads at once it holds the table's
    /// write lock: in autocommit, a snapshot taken now, so that it sees every change
    /// committed before it (and none can come until it commits); in a transaction block,
    /// the block's (its commit validates what changed since).
    pub fn under_lock(&self, db: &Db) -> ReadPoint {
        match self {
            ReadPoint::Snapshot(_, locks) => {
                ReadPoint::Snapshot(Arc::new(db.snapshot()), locks.clone())
            }
            ReadPoint::Transaction(_) => self.clone(),
        }
    }

    /// The transaction block, if the statement runs in one.
    pub fn txn(&self) -> Option<&Arc<SqlTxn>> {
        match self {
            ReadPoint::Snapshot(..) => None,
            ReadPoint::Transaction(t) => Some(t),
        }
    }

    /// The snapshot under the read point (a transaction's own writes are not in it).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self {
            ReadPoint::Snapshot(s, _) => Arc::clone(s),
            ReadPoint::Transaction(t) => Arc::clone(&t.snapshot.lock()),
        }
    }

    /// Who takes a statement's row locks (see [`crate::row_locks`]): in a block, the
    /// block, which holds them until it ends (and under read committed reads on from
    /// a snapshot taken after each lock); in autocommit, the statement
    /// ([`StatementLocks`]).
    pub(crate) fn locker(&self, row_locks: &ClientLocks) -> RowLocker {
        match self {
            ReadPoint::Snapshot(_, locks) => RowLocker::Statement(locks.owner(row_locks)),
            ReadPoint::Transaction(t) => RowLocker::Block(Arc::clone(t)),
        }
    }

    pub fn scan(&self, sub: &Subtable, range: Range) -> Result<RowScan> {
        Ok(match self {
            ReadPoint::Snapshot(s, _) => RowScan::Snapshot(s.scan(sub, range)?),
            ReadPoint::Transaction(t) => RowScan::Transaction(t.with(|tx| tx.scan(sub, range))?),
        })
    }

    /// As [`ReadPoint::scan`], in descending key order.
    pub fn scan_rev(&self, sub: &Subtable, range: Range) -> Result<RowScan> {
        Ok(match self {
            ReadPoint::Snapshot(s, _) => RowScan::Snapshot(s.scan_rev(sub, range)?),
            ReadPoint::Transaction(t) => {
                RowScan::Transaction(t.with(|tx| tx.scan_rev(sub, range))?)
            }
        })
    }

    /// Calls `f` with the value of `key` in `sub`.
    pub fn get<R>(
        &self,
        sub: &Subtable,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R> {
        Ok(match self {
            ReadPoint::Snapshot(s, _) => f(s.get(sub, key)?.as_deref()),
            ReadPoint::Transaction(t) => f(t.with(|tx| tx.get(sub, key))?.as_deref()),
        })
    }

    /// Whether full scans of `table` may read its columnar segments: they hold the rows as
    /// of the snapshot, not a transaction's own changes, and reads of them are not
    /// validated (so not under serializable).
    pub fn may_read_segments(&self, table_id: u64) -> bool {
        match self {
            ReadPoint::Snapshot(..) => true,
            ReadPoint::Transaction(t) => {
                t.isolation != Isolation::Serializable && !t.tables.lock().contains_key(&table_id)
            }
        }
    }

    /// The statement's read point in `config`, or a snapshot of `db` taken now when
    /// there is none.
    pub fn of(config: &datafusion::prelude::SessionConfig, db: &Db) -> ReadPoint {
        match config.get_extension::<ReadPoint>() {
            Some(r) => r.as_ref().clone(),
            None => ReadPoint::new(db),
        }
    }

    /// A statement's read point outside any block: a snapshot of `db` taken now.
    pub fn new(db: &Db) -> ReadPoint {
        ReadPoint::Snapshot(Arc::new(db.snapshot()), StatementLocks::default())
    }
}

impl ChunkSource for ReadPoint {
    fn chunk(&self, chunks: &Subtable, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get(chunks, key, |v| v.map(<[u8]>::to_vec))
    }
}

/// A block's own writes, else the committed state as it is now (see
/// [`SqlTxn::own_or_committed`]).
pub(crate) struct OwnOrCommitted<'a>(pub &'a SqlTxn);

impl ChunkSource for OwnOrCommitted<'_> {
    fn chunk(&self, chunks: &Subtable, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.0.own_or_committed(chunks, key)
    }
}

/// Takes a statement's row locks (see [`ReadPoint::locker`]).
pub(crate) enum RowLocker {
    Block(Arc<SqlTxn>),
    Statement(Arc<tokio::sync::Mutex<HeldLocks>>),
}

impl RowLocker {
    /// Locks row `key` of `table` in `mode`; `false` if `SKIP LOCKED` gave it up.
    pub(crate) async fn lock(
        &mut self,
        table: &dyn TxnTable,
        key: &[u8],
        mode: LockMode,
        policy: WaitPolicy,
    ) -> Result<bool> {
        let (id, name) = (table.id(), table.name());
        match self {
            RowLocker::Statement(held) => held.lock().await.lock(id, key, mode, policy, name).await,
            RowLocker::Block(t) => {
                let locked = t
                    .locks
                    .lock()
                    .await
                    .lock(id, key, mode, policy, name)
                    .await?;
                if !locked {
                    return Ok(false);
                }
                t.refresh()?;
                // Above read committed the block cannot act on a row as a later commit
                // left it, as PostgreSQL's REPEATABLE READ cannot.
                if t.isolation != Isolation::ReadCommitted
                    && changed_since(&t.snapshot.lock(), table.row_subtable(), key)?
                {
                    return Err(concurrent_update());
                }
                Ok(true)
            }
        }
    }
}

/// A row lock a writer needs and found held: it lets the table's write lock go, waits
/// for this with [`RowLocker::claim_waiting`], and starts its statement again.
#[derive(Clone, Debug)]
pub(crate) struct Claim {
    pub table: u64,
    /// The table's name, for messages.
    pub name: String,
    pub key: Vec<u8>,
    pub mode: LockMode,
}

impl RowLocker {
    /// Takes `claim` if that needs no wait; `false` (nothing taken) if another owner
    /// holds a lock in conflict, and the caller must wait for it
    /// ([`RowLocker::claim_waiting`]) without the table's lock.
    pub(crate) fn try_claim(&mut self, claim: &Claim) -> bool {
        match self {
            RowLocker::Statement(held) => Self::try_take(held, claim.table, &claim.key, claim.mode),
            RowLocker::Block(t) => Self::try_take(&t.locks, claim.table, &claim.key, claim.mode),
        }
    }

    /// Takes the lock of row `key` of table `id` in `mode` if that needs no wait. A
    /// statement's (and a block's, whose statements run one at a time) locks are free
    /// unless a lock wait of its own is under way, and then the request waits too.
    fn try_take(held: &tokio::sync::Mutex<HeldLocks>, id: u64, key: &[u8], mode: LockMode) -> bool {
        match held.try_lock() {
            Ok(mut held) => held.try_lock(id, key, mode),
            Err(_) => false,
        }
    }

    /// Waits for, and takes, `claim`, which [`RowLocker::try_claim`] found held (with
    /// no table lock held meanwhile).
    pub(crate) async fn claim_waiting(&mut self, claim: &Claim) -> Result<()> {
        self.wait_for(claim.table, &claim.key, claim.mode, &claim.name)
            .await
    }

    /// Takes the catalog's lock ([`CATALOG_LOCK`]) in `mode`, waiting while a transaction
    /// whose DDL has not ended holds it in a mode that conflicts.
    pub(crate) async fn lock_catalog(&mut self, mode: LockMode) -> Result<()> {
        self.wait_for(CATALOG_LOCK, &[], mode, "pg_class").await
    }

    /// Takes table `id`'s own lock ([`table_lock`]) in `mode`, waiting while another
    /// transaction holds it, or waits for it ahead of this one, in a mode that conflicts;
    /// `name` names the table in messages. Whether it waited.
    pub(crate) async fn lock_whole_table(
        &mut self,
        id: u64,
        name: &str,
        mode: RelationMode,
    ) -> Result<bool> {
        let (id, mode) = (table_lock(id), mode.held_as());
        let held = match self {
            RowLocker::Statement(held) => held,
            RowLocker::Block(t) => &t.locks,
        };
        if Self::try_take(held, id, &[], mode) {
            return Ok(false);
        }
        self.wait_for(id, &[], mode, name).await?;
        Ok(true)
    }

    /// Takes the lock of row `key` of table `id` in `mode`, waiting as long as it is held
    /// in a mode that conflicts; `name` names the table in messages.
    async fn wait_for(&mut self, id: u64, key: &[u8], mode: LockMode, name: &str) -> Result<()> {
        match self {
            RowLocker::Statement(held) => {
                held.lock()
                    .await
                    .lock(id, key, mode, WaitPolicy::Wait, name)
                    .await?
            }
            RowLocker::Block(t) => {
                t.locks
                    .lock()
                    .await
                    .lock(id, key, mode, WaitPolicy::Wait, name)
                    .await?
            }
        };
        Ok(())
    }

    /// Gives back a statement's locks once its changes are committed (a block keeps
    /// its own to its end).
    pub(crate) fn statement_done(&mut self) {
        if let RowLocker::Statement(held) = self
            && let Ok(mut held) = held.try_lock()
        {
            held.release();
        }
    }
}

/// Whether row `key` of `sub` was changed by a commit after `seen` was taken.
pub(crate) fn changed_since(seen: &Snapshot, sub: &Subtable, key: &[u8]) -> Result<bool> {
    let then = seen.get(sub, key)?;
    let now = sub.get(key)?;
    Ok(then.as_deref() != now.as_deref())
}

/// A row this transaction must act on was changed by another after its snapshot.
pub(crate) fn concurrent_update() -> SqlError {
    SqlError::user(
        state::SERIALIZATION_FAILURE,
        "could not serialize access due to concurrent update",
    )
}

/// A table a block changed, and how many rows it added (less those it removed).
type Changed = (Arc<dyn TxnTable>, i64);

/// The catalog as a transaction's DDL changed it: its entries are written in the
/// transaction, and what the catalog holds in memory goes back when the transaction
/// does not commit (see [`crate::catalog::block_ddl`]).
pub(crate) trait BlockCatalog: Send + Sync {
    /// Where the catalog is now, for a savepoint.
    fn mark(&self) -> usize;
    /// Puts the catalog back as it was at `mark`.
    fn roll_back_to(&self, mark: usize);
    /// The transaction committed (`true`) or did not.
    fn ended(&self, committed: bool);
}

/// A point a block can roll back to: the engine transaction's savepoint, the row counts
/// of the tables changed by then, the row locks held then (a rollback to it gives
/// back those taken since, as PostgreSQL's aborted subtransaction does), and where the
/// catalog was if the block's DDL had begun.
pub(crate) struct SqlSavepoint {
    tx: Savepoint,
    tables: HashMap<u64, Changed>,
    locks: usize,
    catalog: Option<usize>,
}

/// An open transaction block: the engine transaction, and per table it changed, how many
/// rows it added (less those it removed).
pub struct SqlTxn {
    /// Taken by COMMIT.
    tx: Mutex<Option<Transaction>>,
    /// The transaction's snapshot, as of its last refresh.
    snapshot: Mutex<Arc<Snapshot>>,
    isolation: Isolation,
    tables: Mutex<HashMap<u64, Changed>>,
    locks: tokio::sync::Mutex<HeldLocks>,
    /// Its deferred foreign keys and the checks they put off.
    pending: Mutex<PendingChecks>,
    /// The catalog its DDL changed, told how the transaction ends.
    catalog: Mutex<Option<Arc<dyn BlockCatalog>>>,
}

impl SqlTxn {
    pub(crate) fn begin(tx: Transaction, locks: HeldLocks) -> SqlTxn {
        SqlTxn {
            snapshot: Mutex::new(Arc::new(tx.snapshot())),
            isolation: tx.isolation(),
            tx: Mutex::new(Some(tx)),
            tables: Mutex::new(HashMap::new()),
            locks: tokio::sync::Mutex::new(locks),
            pending: Mutex::default(),
            catalog: Mutex::new(None),
        }
    }

    /// From now on the transaction's end ends `catalog`'s changes too (once per
    /// transaction: later calls keep the first).
    pub(crate) fn attach_catalog(&self, catalog: Arc<dyn BlockCatalog>) {
        self.catalog.lock().get_or_insert(catalog);
    }

    /// Writes catalog `entries` in the transaction, and `bookkeeping` with its commit
    /// without validation (see [`Transaction::apply_untracked`]).
    pub(crate) fn write_catalog(
        &self,
        entries: &WriteBatch,
        bookkeeping: &WriteBatch,
    ) -> Result<()> {
        self.with(|tx| {
            tx.apply(entries)?;
            tx.apply_untracked(bookkeeping)
        })
    }

    /// Whether the transaction changed rows of table `id`.
    pub(crate) fn changed(&self, id: u64) -> bool {
        self.tables.lock().contains_key(&id)
    }

    /// Forgets the rows the transaction changed in table `id`, which its DDL dropped:
    /// no row count is kept for it at commit.
    pub(crate) fn forget_table(&self, id: u64) {
        self.tables.lock().remove(&id);
    }

    /// The block's deferred foreign keys and the checks they put off.
    pub(crate) fn pending_checks(&self) -> parking_lot::MutexGuard<'_, PendingChecks> {
        self.pending.lock()
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Under read committed, moves the block's reads to a snapshot taken now (at each
    /// statement, and after a row lock was waited for); nothing under the other levels.
    pub fn refresh(&self) -> Result<()> {
        if self.isolation == Isolation::ReadCommitted {
            let snapshot = self.with(|tx| {
                tx.refresh();
                Ok(tx.snapshot())
            })?;
            *self.snapshot.lock() = Arc::new(snapshot);
        }
        Ok(())
    }

    fn with<R>(&self, f: impl FnOnce(&mut Transaction) -> pmdb_engine::Result<R>) -> Result<R> {
        match self.tx.lock().as_mut() {
            Some(tx) => Ok(f(tx)?),
            None => Err(SqlError::user(
                state::INVALID_TRANSACTION_STATE,
                "the transaction has ended",
            )),
        }
    }

    /// Adds a statement's changes to `table` to the transaction.
    pub fn write(
        &self,
        table: Arc<dyn TxnTable>,
        batch: &WriteBatch,
        rows_added: i64,
    ) -> Result<()> {
        self.with(|tx| tx.apply(batch))?;
        let mut tables = self.tables.lock();
        let entry = tables.entry(table.id()).or_insert_with(|| (table, 0));
        entry.1 += rows_added;
        Ok(())
    }

    /// Whether the transaction reads `key` of `sub` as present.
    pub fn exists(&self, sub: &Subtable, key: &[u8]) -> Result<bool> {
        Ok(self.with(|tx| tx.get(sub, key))?.is_some())
    }

    /// The value of `key` in `sub` as this block wrote it, else as committed now: what
    /// a constraint check must see (the block's own changes, and the commits of others
    /// its snapshot may predate).
    pub(crate) fn own_or_committed(&self, sub: &Subtable, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let view = self.with(|tx| tx.get(sub, key))?;
        let seen = self.snapshot.lock().get(sub, key)?;
        if view.as_deref() != seen.as_deref() {
            return Ok(view);
        }
        Ok(sub.get(key)?.map(|v| v.to_vec()))
    }

    /// Whether the block's snapshot holds `key` of `sub`.
    pub(crate) fn saw(&self, sub: &Subtable, key: &[u8]) -> Result<bool> {
        Ok(self.snapshot.lock().get(sub, key)?.is_some())
    }

    /// The keys of `sub` that start with `prefix`, as the block reads them (its own
    /// changes over its snapshot).
    pub(crate) fn keys_with_prefix(&self, sub: &Subtable, prefix: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.with(|tx| {
            let mut scan = tx.scan(sub, prefix.to_vec()..)?;
            let mut keys = Vec::new();
            while let Some(e) = scan.next_ref() {
                let e = e?;
                if !e.key.starts_with(prefix) {
                    break;
                }
                keys.push(e.key.to_vec());
            }
            Ok(keys)
        })
    }

    pub(crate) async fn savepoint(&self) -> Result<SqlSavepoint> {
        let tx = self.with(|tx| Ok(tx.savepoint()))?;
        let tables = self.tables.lock().clone();
        let locks = self.locks.lock().await.mark();
        let catalog = self.catalog.lock().as_ref().map(|c| c.mark());
        Ok(SqlSavepoint {
            tx,
            tables,
            locks,
            catalog,
        })
    }

    /// Undoes what the block did after `savepoint` (which stays).
    pub(crate) async fn rollback_to(&self, savepoint: &SqlSavepoint) -> Result<()> {
        self.with(|tx| tx.rollback_to(&savepoint.tx))?;
        *self.tables.lock() = savepoint.tables.clone();
        // Before the catalog's lock (taken after the savepoint if the block's DDL began
        // after it) goes back with the others.
        let attached = self.catalog.lock().clone();
        if let Some(catalog) = attached {
            match savepoint.catalog {
                Some(mark) => catalog.roll_back_to(mark),
                None => {
                    self.catalog.lock().take();
                    catalog.ended(false);
                }
            }
        }
        self.locks.lock().await.release_to(savepoint.locks);
        Ok(())
    }

    /// Forgets `savepoint` and those after it, keeping what the block did since.
    pub(crate) fn release(&self, savepoint: SqlSavepoint) -> Result<()> {
        self.with(|tx| tx.release(savepoint.tx))
    }

    /// Commits the block, with each changed table's row count and the staleness of its
    /// segments as writes no other transaction conflicts on.
    pub async fn commit(&self) -> Result<()> {
        let Some(mut tx) = self.tx.lock().take() else {
            return Err(SqlError::user(
                state::INVALID_TRANSACTION_STATE,
                "the transaction has ended",
            ));
        };
        let tables = std::mem::take(&mut *self.tables.lock());
        for (table, delta) in tables.values() {
            table.bookkeeping(&mut tx, *delta)?;
        }
        let committed = tx.commit_async(WriteOptions::default()).await;
        // The catalog first: its lock goes with the others.
        let catalog = self.catalog.lock().take();
        if let Some(catalog) = catalog {
            catalog.ended(committed.is_ok());
        }
        // Visible (or refused) now: whoever waits for the block's rows may read them.
        self.locks.lock().await.release();
        committed?;
        for (table, delta) in tables.values() {
            table.committed_elsewhere(*delta);
        }
        Ok(())
    }
}

/// A transaction dropped without COMMIT (a ROLLBACK, a client gone) puts the catalog back
/// before its locks go.
impl Drop for SqlTxn {
    fn drop(&mut self) {
        if let Some(catalog) = self.catalog.get_mut().take() {
            catalog.ended(false);
        }
    }
}
