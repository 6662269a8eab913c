//! [`SqlSession`]: one client's session. It runs statements in autocommit (each one
//! atomic, reading a snapshot of its own) or in a transaction block opened by BEGIN,
//! whose statements read the block's snapshot with its own changes, and whose changes
//! commit together at COMMIT, validated optimistically by the engine. After an error in
//! a block, every statement fails until ROLLBACK (or COMMIT, which then rolls back), as
//! in PostgreSQL. Isolation levels map onto the engine's: REPEATABLE READ (and READ
//! COMMITTED, READ UNCOMMITTED, which it is stronger than) to snapshot isolation,
//! SERIALIZABLE to serializable. A failed validation is SQLSTATE 40001, so clients
//! retry.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    Set, Statement, TransactionAccessMode, TransactionIsolationLevel, TransactionMode,
};
use pmdb_engine::Isolation;

use crate::copy_in::{CopyIn, copy_from_stdin};
use crate::error::{Result, SqlError, df_error, state};
use crate::output::Output;
use crate::read_point::{ReadPoint, SqlTxn};
use crate::session::{Session, parse};
use crate::statement;

/// What a statement takes and gives (see [`SqlSession::describe`]).
#[derive(Clone, Debug)]
pub struct Description {
    pub parameters: Vec<Option<DataType>>,
    pub columns: Option<SchemaRef>,
}

/// Where a session is, as the PostgreSQL protocol reports it before each query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnStatus {
    Idle,
    InBlock,
    /// In a block that failed: only ROLLBACK or COMMIT are accepted.
    Failed,
}

enum Block {
    None,
    Open {
        txn: Arc<SqlTxn>,
        read_only: bool,
        /// Whether a statement ran in the block yet.
        queried: bool,
    },
    Failed,
}

pub struct SqlSession {
    shared: Arc<Session>,
    block: Block,
    /// The isolation and access mode of blocks that do not name theirs.
    default_isolation: Isolation,
    default_read_only: bool,
}

/// What BEGIN or SET TRANSACTION asked for.
#[derive(Default)]
struct Modes {
    isolation: Option<Isolation>,
    read_only: Option<bool>,
}

fn modes(list: &[TransactionMode]) -> Modes {
    let mut m = Modes::default();
    for mode in list {
        match mode {
            TransactionMode::IsolationLevel(level) => {
                m.isolation = Some(match level {
                    TransactionIsolationLevel::Serializable => Isolation::Serializable,
                    // Snapshot isolation is at least as strong as each of these.
                    TransactionIsolationLevel::ReadUncommitted
                    | TransactionIsolationLevel::ReadCommitted
                    | TransactionIsolationLevel::RepeatableRead
                    | TransactionIsolationLevel::Snapshot => Isolation::Snapshot,
                })
            }
            TransactionMode::AccessMode(access) => {
                m.read_only = Some(*access == TransactionAccessMode::ReadOnly)
            }
        }
    }
    m
}

fn aborted() -> SqlError {
    SqlError::user(
        state::IN_FAILED_SQL_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

/// Whether a statement may change data or the catalog (refused in a READ ONLY block).
fn writes(s: &Statement) -> bool {
    matches!(
        s,
        Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Copy { to: false, .. }
            | Statement::CreateTable(_)
            | Statement::CreateIndex(_)
            | Statement::Drop { .. }
            | Statement::Truncate(_)
            | Statement::AlterTable(_)
            | Statement::Analyze(_)
    )
}

impl SqlSession {
    pub(crate) fn new(shared: Arc<Session>) -> SqlSession {
        SqlSession {
            shared,
            block: Block::None,
            default_isolation: Isolation::Snapshot,
            default_read_only: false,
        }
    }

    pub fn status(&self) -> TxnStatus {
        match self.block {
            Block::None => TxnStatus::Idle,
            Block::Open { .. } => TxnStatus::InBlock,
            Block::Failed => TxnStatus::Failed,
        }
    }

    /// Runs every statement of `sql` in order; stops at the first error.
    pub async fn execute(&mut self, sql: &str) -> Result<Vec<Output>> {
        let statements = parse(sql)?;
        let mut out = Vec::with_capacity(statements.len());
        for s in statements {
            out.push(self.run(s).await?);
        }
        Ok(out)
    }

    /// Runs one statement of those [`parse`] gives.
    pub async fn run(&mut self, statement: DfStatement) -> Result<Output> {
        if let DfStatement::Statement(s) = &statement
            && let Some(out) = self.control(s).await
        {
            return out;
        }
        let (read_point, in_block) = match &mut self.block {
            Block::None => (
                ReadPoint::Snapshot(Arc::new(self.shared.db.snapshot())),
                false,
            ),
            Block::Failed => return Err(aborted()),
            Block::Open {
                txn,
                read_only,
                queried,
            } => {
                *queried = true;
                if *read_only && matches!(&statement, DfStatement::Statement(s) if writes(s)) {
                    self.block = Block::Failed;
                    return Err(SqlError::user(
                        state::READ_ONLY_SQL_TRANSACTION,
                        "cannot change data in a read-only transaction",
                    ));
                }
                (ReadPoint::Transaction(Arc::clone(txn)), true)
            }
        };
        // A block counts as failed while a statement runs in it: if the statement is
        // abandoned half-way (a cancelled query), the block stays failed.
        let open = in_block.then(|| std::mem::replace(&mut self.block, Block::Failed));
        let out = statement::run(&self.shared, read_point, statement).await;
        if let (Some(block), true) = (open, out.is_ok()) {
            self.block = block;
        }
        out
    }

    /// Starts `statement` if it is COPY … FROM STDIN (`None` for any other): the caller
    /// then sends the rows and ends it with [`SqlSession::finish_copy`] or
    /// [`SqlSession::abort_copy`].
    pub fn copy_in(&mut self, statement: &DfStatement) -> Option<Result<CopyIn>> {
        let DfStatement::Statement(s) = statement else {
            return None;
        };
        let (table, format) = match copy_from_stdin(s)? {
            Ok(found) => found,
            Err(e) => return Some(Err(self.failed(e))),
        };
        let read_point = match &self.block {
            Block::None => ReadPoint::Snapshot(Arc::new(self.shared.db.snapshot())),
            Block::Failed => return Some(Err(aborted())),
            Block::Open {
                read_only: true, ..
            } => {
                return Some(Err(self.failed(SqlError::user(
                    state::READ_ONLY_SQL_TRANSACTION,
                    "cannot change data in a read-only transaction",
                ))));
            }
            Block::Open { txn, .. } => ReadPoint::Transaction(Arc::clone(txn)),
        };
        Some(CopyIn::start(&self.shared, read_point, &table, format).map_err(|e| self.failed(e)))
    }

    /// Ends a COPY … FROM STDIN: the rows loaded.
    pub async fn finish_copy(&mut self, copy: CopyIn) -> Result<u64> {
        copy.finish().await.map_err(|e| self.failed(e))
    }

    /// Abandons a COPY … FROM STDIN for `error` (see [`crate::copy_in::copy_failed`]
    /// for a client that gave up); gives the error back.
    pub fn abort_copy(&mut self, copy: CopyIn, error: SqlError) -> SqlError {
        copy.abort();
        self.failed(error)
    }

    /// `e`, after failing the open block (if any).
    fn failed(&mut self, e: SqlError) -> SqlError {
        if matches!(self.block, Block::Open { .. }) {
            self.block = Block::Failed;
        }
        e
    }

    /// What `statement` takes and gives, found by planning it without running it: the
    /// types of its parameters (`$1`…; `None` where the plan does not fix one) and the
    /// columns of its rows (`None` for a command).
    pub async fn describe(&self, statement: &DfStatement) -> Result<Description> {
        let command = Description {
            parameters: Vec::new(),
            columns: None,
        };
        if let DfStatement::Statement(s) = statement {
            match s.as_ref() {
                Statement::Update(_) | Statement::Delete(_) | Statement::Insert(_) => {}
                Statement::Query(_)
                | Statement::Explain { .. }
                | Statement::ShowVariable { .. } => {}
                _ => return Ok(command),
            }
        }
        let read_point = match &self.block {
            Block::Open { txn, .. } => ReadPoint::Transaction(Arc::clone(txn)),
            _ => ReadPoint::Snapshot(Arc::new(self.shared.db.snapshot())),
        };
        let state = self.shared.statement_state(read_point);
        let plan = state
            .statement_to_plan(statement.clone())
            .await
            .map_err(df_error)?;
        let types = plan.get_parameter_types().map_err(df_error)?;
        let count = types
            .keys()
            .filter_map(|k| k.strip_prefix('$')?.parse::<usize>().ok())
            .max()
            .unwrap_or(0);
        let parameters = (1..=count)
            .map(|i| types.get(&format!("${i}")).cloned().flatten())
            .collect();
        let columns = match &plan {
            LogicalPlan::Dml(_) | LogicalPlan::Statement(_) | LogicalPlan::Ddl(_) => None,
            _ => Some(Arc::clone(plan.schema().inner())),
        };
        Ok(Description {
            parameters,
            columns,
        })
    }

    /// Runs a transaction-control statement; `None` for any other.
    async fn control(&mut self, s: &Statement) -> Option<Result<Output>> {
        let command = |tag: &str| Some(Ok(Output::Command(tag.into())));
        match s {
            Statement::StartTransaction { modes: list, .. } => {
                if !matches!(self.block, Block::None) {
                    // PostgreSQL warns and stays in the block.
                    return command("BEGIN");
                }
                let m = modes(list);
                let isolation = m.isolation.unwrap_or(self.default_isolation);
                let txn = SqlTxn::begin(self.shared.db.transaction_with(isolation));
                self.block = Block::Open {
                    txn: Arc::new(txn),
                    read_only: m.read_only.unwrap_or(self.default_read_only),
                    queried: false,
                };
                command("BEGIN")
            }
            Statement::Commit { chain: false, .. } => {
                match std::mem::replace(&mut self.block, Block::None) {
                    Block::None => command("COMMIT"),
                    Block::Failed => command("ROLLBACK"),
                    Block::Open { txn, .. } => Some(
                        txn.commit()
                            .await
                            .map(|()| Output::Command("COMMIT".into())),
                    ),
                }
            }
            Statement::Rollback {
                chain: false,
                savepoint: None,
            } => {
                self.block = Block::None;
                command("ROLLBACK")
            }
            Statement::Commit { chain: true, .. } | Statement::Rollback { chain: true, .. } => {
                Some(Err(SqlError::unsupported("AND CHAIN")))
            }
            Statement::Rollback {
                savepoint: Some(_), ..
            }
            | Statement::Savepoint { .. }
            | Statement::ReleaseSavepoint { .. } => Some(Err(SqlError::unsupported("savepoints"))),
            Statement::Set(Set::SetTransaction {
                modes: list,
                snapshot: None,
                session,
            }) => {
                let m = modes(list);
                if *session {
                    self.default_isolation = m.isolation.unwrap_or(self.default_isolation);
                    self.default_read_only = m.read_only.unwrap_or(self.default_read_only);
                    return command("SET");
                }
                match &mut self.block {
                    Block::Open {
                        txn,
                        read_only,
                        queried,
                    } => {
                        if let Some(isolation) = m.isolation.filter(|i| *i != txn.isolation()) {
                            if *queried {
                                return Some(Err(SqlError::user(
                                    state::ACTIVE_SQL_TRANSACTION,
                                    "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                                )));
                            }
                            *txn =
                                Arc::new(SqlTxn::begin(self.shared.db.transaction_with(isolation)));
                        }
                        *read_only = m.read_only.unwrap_or(*read_only);
                        command("SET")
                    }
                    Block::None => Some(Err(SqlError::user(
                        state::NO_ACTIVE_SQL_TRANSACTION,
                        "SET TRANSACTION can only be used in transaction blocks",
                    ))),
                    Block::Failed => None,
                }
            }
            _ => None,
        }
    }
}
