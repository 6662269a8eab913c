//! [`SqlSession`]: one client's session. It runs statements in autocommit (each one
//! atomic, reading a snapshot of its own) or in a transaction block opened by BEGIN,
//! whose statements read with the block's own changes laid over, and whose changes commit
//! together at COMMIT, validated optimistically by the engine. After an error in a block,
//! every statement fails until ROLLBACK (or COMMIT, which then rolls back), as in
//! PostgreSQL; a savepoint (SAVEPOINT, ROLLBACK TO SAVEPOINT, RELEASE SAVEPOINT) undoes
//! part of a block, and a rollback to one revives a failed block. Isolation levels map
//! onto the engine's: READ COMMITTED (the default, as in
//! PostgreSQL; READ UNCOMMITTED gets it too) to read committed, each statement reading a
//! snapshot taken when it starts; REPEATABLE READ to snapshot isolation, the block reading
//! the snapshot of its first statement; SERIALIZABLE to serializable. A failed
//! validation is SQLSTATE 40001, so clients retry; writes by primary key take row locks
//! ([`crate::row_locks`]), so that writers of one row mostly wait for each other instead.

mod shapes;

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    CloseCursor, DeclareType, Ident, Set, Statement, TransactionAccessMode,
    TransactionIsolationLevel, TransactionMode,
};
use pmdb_engine::Isolation;

use crate::copy_in::{CopyIn, copy_from_stdin};
use crate::cursors::Cursors;
use crate::error::{Result, SqlError, df_error, state};
use crate::fast_path;
use crate::notices::{Notice, Severity};
use crate::output::{CommandTag, Output};
use crate::prepared::{Plan, Prepared};
use crate::read_point::{ReadPoint, SqlSavepoint, SqlTxn};
use crate::returning::Returning;
use crate::session::{Session, parse};
use crate::set_constraints::SetConstraints;
use crate::setting_functions::SettingValues;
use crate::statement;
use crate::statement_kind::StatementKind;

/// What [`SqlSession::prepare`] does with a statement.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Planning {
    /// Transaction control, DDL, COPY: nothing to plan.
    None,
    /// Planned for its parameter and column types only (the fast path may keep the
    /// shape of an UPDATE or DELETE, which pmdb otherwise runs itself; a locking query's
    /// plan would not lock).
    Described,
    /// Planned by DataFusion, the plan kept.
    Kept,
}

fn planning(kind: StatementKind) -> Planning {
    use StatementKind as K;
    match kind {
        K::Query | K::Insert => Planning::Kept,
        K::LockingQuery | K::Update | K::Delete | K::Explain | K::ExplainWrite | K::Show => {
            Planning::Described
        }
        K::TransactionControl
        | K::Setting
        | K::CopyFromStdin
        | K::CopyFromFile
        | K::CopyToStdout
        | K::Ddl
        | K::Vacuum
        | K::Cursor
        | K::Database
        | K::Other => Planning::None,
    }
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
    Open(OpenBlock),
}

struct OpenBlock {
    /// Begun at the block's first statement, as PostgreSQL takes a block's snapshot
    /// then and not at BEGIN: the snapshot is as fresh as it can be.
    txn: Option<Arc<SqlTxn>>,
    isolation: TransactionIsolationLevel,
    read_only: bool,
    /// While a statement runs (so that one abandoned half-way, a cancelled query,
    /// leaves it so) and after one failed: only ROLLBACK [TO SAVEPOINT] and COMMIT are
    /// accepted.
    failed: bool,
    /// Open savepoints by name, oldest first (a name may repeat: the latest wins).
    savepoints: Vec<(String, SqlSavepoint)>,
    /// Opened by [`SqlSession::begin_implicit`], not by BEGIN: ended by
    /// [`SqlSession::end_implicit`], and shown to the client as no block at all.
    implicit: bool,
}

impl OpenBlock {
    fn new(isolation: TransactionIsolationLevel, read_only: bool) -> OpenBlock {
        OpenBlock {
            txn: None,
            isolation,
            read_only,
            failed: false,
            savepoints: Vec::new(),
            implicit: false,
        }
    }

    /// The index of the latest savepoint called `name`.
    fn savepoint(&self, name: &str) -> Result<usize> {
        self.savepoints
            .iter()
            .rposition(|(n, _)| n == name)
            .ok_or_else(|| {
                SqlError::user(
                    state::INVALID_SAVEPOINT_SPECIFICATION,
                    format!("savepoint \"{name}\" does not exist"),
                )
            })
    }
}

/// A savepoint's name as PostgreSQL folds identifiers.
fn savepoint_name(name: &Ident) -> String {
    match name.quote_style {
        Some(_) => name.value.clone(),
        None => name.value.to_lowercase(),
    }
}

fn outside_block(statement: &str) -> SqlError {
    SqlError::user(
        state::NO_ACTIVE_SQL_TRANSACTION,
        format!("{statement} can only be used in transaction blocks"),
    )
}

pub struct SqlSession {
    /// What the session's statements run with, its DataFusion context its own.
    shared: Arc<Session>,
    block: Block,
    cursors: Cursors,
    /// The isolation and access mode of blocks that do not name theirs.
    default_isolation: TransactionIsolationLevel,
    default_read_only: bool,
    /// Whether the last block that ended committed.
    committed: bool,
    /// The connection's settings, which `current_setting` reads.
    settings: SettingValues,
    /// What the server does to a statement before it runs, done as well to those of DO
    /// blocks.
    adapt: Option<Adapter>,
    /// Plans of the simple protocol's statements by their shape.
    shapes: shapes::Shapes,
}

/// See [`SqlSession::adapt_statements_with`].
pub type Adapter = Arc<dyn Fn(&mut DfStatement) + Send + Sync>;

/// What BEGIN or SET TRANSACTION asked for.
#[derive(Default)]
struct Modes {
    isolation: Option<TransactionIsolationLevel>,
    read_only: Option<bool>,
}

/// The engine's isolation a level asked for in SQL runs at. A block keeps the level as
/// asked, which is what PostgreSQL shows (READ UNCOMMITTED, which runs as READ
/// COMMITTED, included).
fn engine_isolation(level: TransactionIsolationLevel) -> Isolation {
    match level {
        TransactionIsolationLevel::Serializable => Isolation::Serializable,
        TransactionIsolationLevel::RepeatableRead | TransactionIsolationLevel::Snapshot => {
            Isolation::Snapshot
        }
        // Read committed is at least as strong as read uncommitted.
        TransactionIsolationLevel::ReadUncommitted | TransactionIsolationLevel::ReadCommitted => {
            Isolation::ReadCommitted
        }
    }
}

fn modes(list: &[TransactionMode]) -> Modes {
    let mut m = Modes::default();
    for mode in list {
        match mode {
            TransactionMode::IsolationLevel(level) => m.isolation = Some(*level),
            TransactionMode::AccessMode(access) => {
                m.read_only = Some(*access == TransactionAccessMode::ReadOnly)
            }
        }
    }
    m
}

/// The error of a statement in a block an error failed (25P02).
pub fn in_failed_block() -> SqlError {
    SqlError::user(
        state::IN_FAILED_SQL_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

/// The open block's transaction, begun now if no statement ran in the block yet, else
/// refreshed for the statement about to run (read committed).
fn begun(
    shared: &Session,
    txn: &mut Option<Arc<SqlTxn>>,
    isolation: TransactionIsolationLevel,
) -> Result<Arc<SqlTxn>> {
    match txn {
        Some(t) => {
            t.refresh()?;
            Ok(Arc::clone(t))
        }
        None => {
            let begun = SqlTxn::begin(
                shared.db.transaction_with(engine_isolation(isolation)),
                shared.row_locks.owner(),
            );
            Ok(Arc::clone(txn.insert(Arc::new(begun))))
        }
    }
}

impl SqlSession {
    /// A session over what `engine` holds, with a DataFusion context of its own.
    pub(crate) fn new(engine: &Session) -> SqlSession {
        let shared = Arc::new(engine.for_client());
        let settings = SettingValues::default();
        crate::setting_functions::register_current_setting(&shared.ctx, settings.clone());
        SqlSession {
            shared,
            settings,
            block: Block::None,
            cursors: Cursors::default(),
            // PostgreSQL's default.
            default_isolation: TransactionIsolationLevel::ReadCommitted,
            default_read_only: false,
            committed: false,
            adapt: None,
            shapes: shapes::Shapes::default(),
        }
    }

    /// Has `adapt` done to each statement a DO block runs, as the server does to the
    /// statements its clients send (PostgreSQL's catalog queries).
    pub fn adapt_statements_with(&mut self, adapt: Adapter) {
        self.adapt = Some(adapt);
    }

    /// Where the connection's settings go for `current_setting` to read.
    pub fn setting_values(&self) -> SettingValues {
        self.settings.clone()
    }

    /// What the statements run since the last call had to tell the client beside their
    /// outcomes, in the order they said it.
    pub fn take_notices(&self) -> Vec<Notice> {
        self.shared.notices.take()
    }

    /// Whether the block that ended last committed (else it rolled back).
    pub fn committed_last_block(&self) -> bool {
        self.committed
    }

    /// Sets an extension of the session's DataFusion configuration (how scans read).
    pub fn set_extension<T: Send + Sync + 'static>(&self, value: Arc<T>) {
        self.shared
            .ctx
            .state_ref()
            .write()
            .config_mut()
            .set_extension(value);
    }

    /// Names the user and the database the session's client connected as
    /// (`current_user`, `current_database()`), and the process id of the backend that
    /// serves it (`pg_backend_pid()`).
    pub fn set_identity(&self, user: &str, database: &str, backend_pid: i32) {
        crate::identity::register(&self.shared.ctx, user, database, backend_pid);
    }

    /// Takes `value`, the session's `search_path` setting: where its unqualified names
    /// are looked up and made from its next statement on.
    pub fn set_search_path(&self, value: &str) {
        self.shared.search_path.set(value);
    }

    /// Limits each wait for a row lock to `ms` milliseconds (0: no limit), PostgreSQL's
    /// `lock_timeout`: a wait that lasts longer fails its statement with 55P03.
    pub fn set_lock_timeout(&self, ms: u64) {
        self.shared.row_locks.limit_waits(ms);
    }

    /// What DISCARD ALL does to the SQL session, outside a block (25001 in one): closes
    /// every cursor, forgets the sequence values it was handed (`currval`) and drops its
    /// temporary relations. The server forgets its settings and prepared statements.
    pub async fn discard_all(&mut self) -> Result<()> {
        if !matches!(self.block, Block::None) {
            return Err(SqlError::user(
                state::ACTIVE_SQL_TRANSACTION,
                "DISCARD ALL cannot run inside a transaction block",
            ));
        }
        self.cursors = Cursors::default();
        self.forget_shapes();
        self.shared.sequence_calls.forget();
        self.default_isolation = TransactionIsolationLevel::ReadCommitted;
        self.default_read_only = false;
        self.drop_temporary().await
    }

    /// Ends the session as a client that leaves ends it: an open block rolls back, and
    /// the temporary relations are dropped.
    pub async fn close(&mut self) -> Result<()> {
        if !matches!(self.block, Block::None) {
            self.execute("ROLLBACK").await?;
        }
        self.drop_temporary().await
    }

    /// Drops the session's temporary relations with their schema, in a transaction of
    /// its own.
    async fn drop_temporary(&mut self) -> Result<()> {
        let schema = self.shared.temp.name.clone();
        if !self.shared.catalog.schema_exists(&schema) {
            return Ok(());
        }
        let sql = format!(
            "DROP SCHEMA {} CASCADE",
            crate::quote_functions::ident(&schema)
        );
        self.execute(&sql).await.map(|_| ())
    }

    /// The isolation of the open block, else of the blocks to come.
    pub fn isolation(&self) -> TransactionIsolationLevel {
        match &self.block {
            Block::Open(open) => open.isolation,
            Block::None => self.default_isolation,
        }
    }

    /// The isolation of blocks that do not name theirs.
    pub fn default_isolation(&self) -> TransactionIsolationLevel {
        self.default_isolation
    }

    pub fn status(&self) -> TxnStatus {
        match &self.block {
            Block::None | Block::Open(OpenBlock { implicit: true, .. }) => TxnStatus::Idle,
            Block::Open(OpenBlock { failed: false, .. }) => TxnStatus::InBlock,
            Block::Open(OpenBlock { failed: true, .. }) => TxnStatus::Failed,
        }
    }

    /// Opens an implicit block, unless a block is open: the statements that follow, up
    /// to [`SqlSession::end_implicit`], commit together or not at all, as PostgreSQL
    /// runs the statements of one Query message or of the extended protocol's messages
    /// up to Sync. A BEGIN among them makes the block an explicit one; a COMMIT or
    /// ROLLBACK ends it, and the statements after it run outside any block.
    pub fn begin_implicit(&mut self) {
        if matches!(self.block, Block::None) {
            let mut open = OpenBlock::new(self.default_isolation, self.default_read_only);
            open.implicit = true;
            self.block = Block::Open(open);
            self.shared.transaction_ids.forget();
        }
    }

    /// Ends the implicit block [`SqlSession::begin_implicit`] opened, if it is still
    /// open: commits it, or rolls it back if one of its statements failed. An explicit
    /// block stays open.
    pub async fn end_implicit(&mut self) -> Result<()> {
        if !matches!(self.block, Block::Open(OpenBlock { implicit: true, .. })) {
            return Ok(());
        }
        self.cursors.block_ended();
        let ended = match std::mem::replace(&mut self.block, Block::None) {
            Block::Open(OpenBlock { failed: true, .. }) => {
                self.committed = false;
                return Ok(());
            }
            Block::Open(OpenBlock { txn: Some(txn), .. }) => {
                async {
                    crate::deferred_checks::run_due(&self.shared, &txn, true).await?;
                    txn.commit().await
                }
                .await
            }
            _ => Ok(()),
        };
        self.committed = ended.is_ok();
        ended
    }

    /// Whether a block is open, an implicit one included.
    pub fn in_block(&self) -> bool {
        matches!(self.block, Block::Open(_))
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

    /// Runs one statement of those [`parse`] gives. The notices of the statements before
    /// it that [`SqlSession::take_notices`] did not take are forgotten.
    pub async fn run(&mut self, statement: DfStatement) -> Result<Output> {
        self.shared.notices.take();
        self.run_one(statement).await
    }

    async fn run_one(&mut self, statement: DfStatement) -> Result<Output> {
        if let DfStatement::Statement(s) = &statement
            && let Some(body) = crate::do_block::body_of(s)
        {
            let body = body.to_owned();
            return self.do_block(&body).await;
        }
        let kind = StatementKind::of(&statement);
        if kind == StatementKind::TransactionControl
            && let DfStatement::Statement(s) = &statement
            && let Some(out) = self.control(s).await
        {
            return out.map_err(|e| self.failed(e));
        }
        if kind == StatementKind::Cursor
            && let DfStatement::Statement(s) = &statement
        {
            return self.cursor(s).await.map_err(|e| self.failed(e));
        }
        let read_point = self.enter(kind)?;
        let out = match &statement {
            // EXPLAIN in PostgreSQL's JSON (it runs its statement with ANALYZE).
            DfStatement::Statement(s) => match crate::explain_options::json_request(s) {
                Ok(Some(explain)) => crate::explain::run(&self.shared, read_point, explain).await,
                Ok(None) => statement::run(&self.shared, read_point, kind, statement).await,
                Err(e) => Err(e),
            },
            _ => statement::run(&self.shared, read_point, kind, statement).await,
        };
        self.leave(out.is_ok());
        out
    }

    /// Runs a DO block, as one statement: in the open block, else in an implicit one of
    /// its own that commits when the block succeeds.
    async fn do_block(&mut self, body: &str) -> Result<Output> {
        if let Block::Open(OpenBlock { failed: true, .. }) = self.block {
            return Err(in_failed_block());
        }
        let own = matches!(self.block, Block::None);
        if own {
            self.begin_implicit();
        }
        let mut host = BlockHost {
            session: self,
            savepoints: 0,
        };
        let ran = crate::do_block::run(&mut host, body).await;
        if ran.is_err() {
            self.fail_block();
        }
        let ended = match own {
            true => self.end_implicit().await,
            false => Ok(()),
        };
        ran.and(ended)
            .map(|()| Output::Command(CommandTag::of("DO")))
    }

    /// The columns of the cursor called `name`, if the session has one: a DECLAREd
    /// cursor is also a portal of the protocol, as in PostgreSQL.
    pub fn cursor_columns(&self, name: &str) -> Option<SchemaRef> {
        self.cursors.schema(name)
    }

    /// DECLARE … CURSOR, FETCH or CLOSE (see [`crate::cursors`]).
    async fn cursor(&mut self, s: &Statement) -> Result<Output> {
        match s {
            Statement::Declare { stmts } => {
                let [d] = stmts.as_slice() else {
                    return Err(SqlError::unsupported("DECLARE of several cursors"));
                };
                let (Some(DeclareType::Cursor), Some(query), [name]) =
                    (&d.declare_type, &d.for_query, d.names.as_slice())
                else {
                    return Err(SqlError::unsupported(
                        "DECLARE of anything but one cursor FOR a query",
                    ));
                };
                // As PostgreSQL, the block is checked for first.
                let hold = d.hold == Some(true);
                if !hold && matches!(self.block, Block::None) {
                    return Err(outside_block("DECLARE CURSOR"));
                }
                if d.binary == Some(true) || d.data_type.is_some() || d.assignment.is_some() {
                    return Err(SqlError::unsupported("DECLARE BINARY CURSOR"));
                }
                // Its locks would outlive the block that holds them, as in PostgreSQL.
                if hold && !query.locks.is_empty() {
                    return Err(SqlError::unsupported(
                        "DECLARE CURSOR WITH HOLD … FOR UPDATE/SHARE",
                    ));
                }
                let query = DfStatement::Statement(Box::new(Statement::Query(query.clone())));
                let kind = StatementKind::of(&query);
                let read_point = self.enter(kind)?;
                let out = statement::run(&self.shared, read_point, kind, query).await;
                self.leave(out.is_ok());
                let Output::Rows { schema, batches } = out? else {
                    return Err(SqlError::Query("a cursor's query gave no rows".into()));
                };
                self.cursors
                    .declare(name, schema, &batches, d.scroll != Some(false), hold)?;
                Ok(Output::Command(CommandTag::of("DECLARE CURSOR")))
            }
            Statement::Fetch {
                name,
                direction,
                position: _,
                into,
            } => {
                if let Block::Open(OpenBlock { failed: true, .. }) = self.block {
                    return Err(in_failed_block());
                }
                let moved = crate::cursors::is_move(into)?;
                match self.cursors.fetch(name, direction)? {
                    Output::Returned { tag, .. } if moved => {
                        Ok(Output::Command(CommandTag::moved(tag.rows().unwrap_or(0))))
                    }
                    out => Ok(out),
                }
            }
            Statement::Close { cursor } => {
                self.cursors.close(cursor)?;
                Ok(Output::Command(CommandTag::of(match cursor {
                    CloseCursor::All => "CLOSE CURSOR ALL",
                    CloseCursor::Specific { .. } => "CLOSE CURSOR",
                })))
            }
            _ => Err(SqlError::unsupported(format!("{s}"))),
        }
    }

    /// Runs a statement [`SqlSession::prepare`] gave, with `params` for its `$n`.
    pub async fn run_prepared(
        &mut self,
        prepared: &Prepared,
        params: Vec<ScalarValue>,
    ) -> Result<Output> {
        let params = prepared.typed(params)?;
        if matches!(prepared.plan, Plan::Unplanned) {
            // Boxed: the general path's future is large, and the fast path's would be as
            // large, copied at each statement.
            return Box::pin(self.run(prepared.bind(&params)?)).await;
        }
        let read_point = self.enter(prepared.kind())?;
        let out = statement::run_prepared(&self.shared, read_point, prepared, params).await;
        self.leave(out.is_ok());
        out
    }

    /// The read point of a statement about to run. In a block, the block counts as
    /// failed until [`SqlSession::leave`] says the statement succeeded.
    fn enter(&mut self, kind: StatementKind) -> Result<ReadPoint> {
        let Block::Open(open) = &mut self.block else {
            // A transaction of its own.
            self.shared.transaction_ids.forget();
            return Ok(ReadPoint::new(&self.shared.db));
        };
        if open.failed {
            return Err(in_failed_block());
        }
        open.failed = true;
        if open.read_only && kind.writes() {
            return Err(SqlError::user(
                state::READ_ONLY_SQL_TRANSACTION,
                "cannot change data in a read-only transaction",
            ));
        }
        let txn = begun(&self.shared, &mut open.txn, open.isolation)?;
        Ok(ReadPoint::Transaction(txn))
    }

    /// Ends a statement [`SqlSession::enter`] began.
    fn leave(&mut self, succeeded: bool) {
        if let (Block::Open(open), true) = (&mut self.block, succeeded) {
            open.failed = false;
        }
    }

    /// Starts `statement`, a COPY … FROM STDIN ([`StatementKind::CopyFromStdin`]): the
    /// caller then sends the rows and ends it with [`SqlSession::finish_copy`] or
    /// [`SqlSession::abort_copy`].
    pub fn copy_in(&mut self, statement: &DfStatement) -> Result<CopyIn> {
        let found = match statement {
            DfStatement::Statement(s) => {
                // The table its name finds: the session's temporary table of that
                // name, else the first in the search path.
                let mut s = s.clone();
                match self.shared.search_path.qualify(
                    &self.shared.catalog,
                    &self.shared.temp,
                    &mut s,
                ) {
                    Ok(()) => copy_from_stdin(&s),
                    Err(e) => Some(Err(e)),
                }
            }
            _ => None,
        };
        let target = match found {
            Some(Ok(found)) => found,
            Some(Err(e)) => return Err(self.failed(e)),
            None => {
                return Err(self.failed(SqlError::user(
                    state::PROTOCOL_VIOLATION,
                    "not a COPY … FROM STDIN",
                )));
            }
        };
        let read_point = match &mut self.block {
            Block::None => ReadPoint::new(&self.shared.db),
            Block::Open(OpenBlock { failed: true, .. }) => return Err(in_failed_block()),
            Block::Open(OpenBlock {
                read_only: true, ..
            }) => {
                return Err(self.failed(SqlError::user(
                    state::READ_ONLY_SQL_TRANSACTION,
                    "cannot change data in a read-only transaction",
                )));
            }
            Block::Open(open) => match begun(&self.shared, &mut open.txn, open.isolation) {
                Ok(txn) => ReadPoint::Transaction(txn),
                Err(e) => return Err(self.failed(e)),
            },
        };
        CopyIn::start(&self.shared, read_point, target).map_err(|e| self.failed(e))
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

    /// Fails the open block (if any), as any error in a block does in PostgreSQL: for
    /// errors found outside the session, a statement that does not parse among them.
    pub fn fail_block(&mut self) {
        if let Block::Open(open) = &mut self.block {
            open.failed = true;
        }
    }

    /// `e`, after failing the open block (if any).
    fn failed(&mut self, e: SqlError) -> SqlError {
        self.fail_block();
        e
    }

    /// Whether `prepared` holds the plan its statement would get now: no DDL ran since
    /// it was planned, and its names were resolved with the search path there is now.
    pub fn plan_is_current(&self, prepared: &Prepared) -> bool {
        prepared.generation == self.shared.catalog.generation()
            && *prepared.search_path == *self.shared.search_path.schemas()
    }

    /// Plans `statement` for [`SqlSession::run_prepared`], without running it: the
    /// types of its parameters (`$1`…; `None` where the plan does not fix one), the
    /// columns of its rows (`None` for a command), and the plan kept for its runs. A
    /// statement that cannot be planned fails the open block.
    pub async fn prepare(&mut self, statement: DfStatement) -> Result<Prepared> {
        self.prepare_declared(statement, &[]).await
    }

    /// [`SqlSession::prepare`] with the types the client declared for the parameters
    /// (`None` where it left one to the server): one the plan would type otherwise and
    /// lose values of (no type, an integer for a numeric) takes the declared type, as in
    /// PostgreSQL (see [`crate::declared_parameters`]).
    pub async fn prepare_declared(
        &mut self,
        statement: DfStatement,
        declared: &[Option<DataType>],
    ) -> Result<Prepared> {
        let planned = if declared.iter().any(Option::is_some) {
            let planned = self.plan(statement.clone()).await;
            let parameters = planned.as_ref().map_or(&[][..], |p| p.parameters());
            let casts = crate::declared_parameters::retyped(parameters, declared);
            if casts.is_empty() {
                planned
            } else {
                let mut statement = statement;
                crate::declared_parameters::cast(&mut statement, &casts);
                self.plan(statement).await
            }
        } else {
            self.plan(statement).await
        };
        planned.map_err(|e| self.failed(e))
    }

    async fn plan(&self, mut statement: DfStatement) -> Result<Prepared> {
        let generation = self.shared.catalog.generation();
        let search_path = self.shared.search_path.schemas();
        let shown = crate::select_names::shown(&statement);
        if StatementKind::of(&statement) == StatementKind::Database {
            // The server runs it; an engine alone refuses it when it runs.
            return Ok(
                Prepared::new(statement, Vec::new(), None, generation, Plan::Unplanned)
                    .resolved_with(search_path),
            );
        }
        if let DfStatement::Statement(s) = &statement
            && let Some(explain) = crate::explain_options::json_request(s)?
        {
            // Its parameters are its statement's.
            let inner = DfStatement::Statement(Box::new(explain.inner));
            let parameters = Box::pin(self.plan(inner)).await?.parameters().to_vec();
            let columns = Some(crate::explain::json_schema());
            return Ok(
                Prepared::new(statement, parameters, columns, generation, Plan::Unplanned)
                    .resolved_with(search_path),
            );
        }
        if let DfStatement::Statement(s) = &mut statement {
            statement::rewrite(&self.shared, s)?;
            crate::unhonoured::check(s)?;
        }
        let planning = planning(StatementKind::of(&statement));
        if planning == Planning::None {
            // A FETCH gives its cursor's columns.
            let columns = match &statement {
                DfStatement::Statement(s) => match s.as_ref() {
                    // A MOVE (marked by its INTO) returns no rows.
                    Statement::Fetch {
                        name, into: None, ..
                    } => self.cursors.schema(&savepoint_name(name)),
                    _ => None,
                },
                _ => None,
            };
            return Ok(
                Prepared::new(statement, Vec::new(), columns, generation, Plan::Unplanned)
                    .resolved_with(search_path),
            );
        }
        let read_point = match &self.block {
            Block::Open(OpenBlock { txn: Some(txn), .. }) => {
                ReadPoint::Transaction(Arc::clone(txn))
            }
            _ => ReadPoint::new(&self.shared.db),
        };
        let state = self.shared.statement_state(read_point);
        // DataFusion plans no RETURNING: the statement without it, for its parameters.
        let returning = Returning::of(&statement)?;
        let mut planned = returning
            .as_ref()
            .map_or_else(|| statement.clone(), |r| r.without.clone());
        // Nor UPDATE … FROM and DELETE … USING: a query over the same tables types their
        // parameters.
        let parameter_query = match &planned {
            DfStatement::Statement(s) => crate::dml_parameters::parameter_query(s).transpose()?,
            _ => None,
        };
        let parameters_only = parameter_query.is_some();
        if let Some(query) = parameter_query {
            planned = DfStatement::Statement(Box::new(Statement::Query(Box::new(query))));
        }
        // DataFusion plans no ON CONFLICT either: pmdb runs it, its parameters bound as
        // literals at each run.
        if let DfStatement::Statement(s) = &mut planned {
            crate::view_expansion::expand(&self.shared.catalog, self.shared.viewer, s)?;
        }
        let reads = match &planned {
            DfStatement::Statement(s) => crate::read_locks::tables_read(s),
            _ => Vec::new(),
        };
        let mut upsert = false;
        if let DfStatement::Statement(s) = &mut planned
            && let Statement::Insert(i) = s.as_mut()
            && i.on.take().is_some()
        {
            upsert = true;
        }
        // An INSERT from a query: the query alone, for its parameters (see
        // [`crate::insert`]); pmdb runs it.
        let from_query = match &planned {
            DfStatement::Statement(s) => match s.as_ref() {
                Statement::Insert(i) => crate::insert::source_query(i).map(|q| {
                    DfStatement::Statement(Box::new(Statement::Query(Box::new(q.clone()))))
                }),
                _ => None,
            },
            _ => None,
        };
        let query_only = from_query.is_some();
        // Frame offsets given as parameters: planned with literals in their place, and
        // again at each run with the values bound in.
        let offsets = match &mut statement {
            DfStatement::Statement(s) => crate::window_frames::offset_parameters(s),
            _ => Vec::new(),
        };
        let mut planned = from_query.unwrap_or(planned);
        if !offsets.is_empty()
            && let DfStatement::Statement(s) = &mut planned
        {
            **s = crate::window_frames::with_literal_offsets(s);
        }
        let (plan, names) = crate::select_names::plan(&state, planned, shown).await?;
        let mut parameters = crate::parameter_types::of(&plan).map_err(df_error)?;
        for o in &offsets {
            if parameters.len() < o.number {
                parameters.resize(o.number, None);
            }
            parameters[o.number - 1] = Some(Arc::new(Field::new("", o.ty.clone(), true)));
        }
        let columns = match (&returning, &plan) {
            (Some(r), _) => Some(r.columns(&self.shared).await?),
            (None, _) if query_only || parameters_only => None,
            (None, LogicalPlan::Dml(_) | LogicalPlan::Statement(_) | LogicalPlan::Ddl(_)) => None,
            (None, _) => Some(match &names {
                Some(names) => crate::select_names::renamed_schema(plan.schema().inner(), names),
                None => Arc::clone(plan.schema().inner()),
            }),
        };
        let fast = match &statement {
            DfStatement::Statement(s) => fast_path::recognise(&self.shared, s),
            _ => None,
        };
        let kept = match (fast, planning) {
            (_, _) if upsert || !offsets.is_empty() => Plan::Unplanned,
            (Some(shape), _) if shape.gives(columns.as_deref()) => Plan::Fast(shape),
            // A plan's columns are renamed as `columns` names them when it runs.
            (_, Planning::Kept) if returning.is_none() && query_only => Plan::InsertQuery(plan),
            (_, Planning::Kept) if returning.is_none() => Plan::Logical {
                optimized: crate::optimized_plan::ahead(&state, &plan, &parameters),
                plan,
            },
            (_, _) => Plan::Unplanned,
        };
        Ok(
            Prepared::new(statement, parameters, columns, generation, kept)
                .reading(reads)
                .resolved_with(search_path),
        )
    }

    /// SET CONSTRAINTS: outside a block it does nothing (PostgreSQL warns); in one, the
    /// keys it names are deferred or not from now on, and the checks of those no longer
    /// deferred run at once.
    async fn set_constraints(&mut self, set: SetConstraints) -> Result<Output> {
        if matches!(self.block, Block::None) {
            // PostgreSQL checks the names, then warns that it does nothing.
            if let Some(names) = &set.names {
                crate::deferred_checks::check_names(&self.shared.catalog, names)?;
            }
            return Ok(Output::Command(CommandTag::of("SET CONSTRAINTS")));
        }
        let read_point = self.enter(StatementKind::TransactionControl)?;
        let out = async {
            if let Some(names) = &set.names {
                crate::deferred_checks::check_names(&self.shared.catalog, names)?;
            }
            let Some(txn) = read_point.txn() else {
                return Err(SqlError::Query("a block without its transaction".into()));
            };
            txn.pending_checks().set(set.names.as_deref(), set.deferred);
            crate::deferred_checks::run_due(&self.shared, txn, false).await
        }
        .await;
        self.leave(out.is_ok());
        out.map(|()| Output::Command(CommandTag::of("SET CONSTRAINTS")))
    }

    /// Runs a transaction-control statement; `None` for any other.
    async fn control(&mut self, s: &Statement) -> Option<Result<Output>> {
        let command = |tag: &'static str| Some(Ok(Output::Command(CommandTag::of(tag))));
        match s {
            Statement::StartTransaction { modes: list, .. } => {
                match &mut self.block {
                    Block::None => {}
                    Block::Open(OpenBlock { failed: true, .. }) => {
                        return Some(Err(in_failed_block()));
                    }
                    // The statements before it belong to the block it begins.
                    Block::Open(open) if open.implicit => {
                        open.implicit = false;
                        let m = modes(list);
                        if open.txn.is_none() {
                            open.isolation = m.isolation.unwrap_or(open.isolation);
                        }
                        open.read_only = m.read_only.unwrap_or(open.read_only);
                        return command("BEGIN");
                    }
                    // PostgreSQL warns and stays in the block.
                    Block::Open(_) => {
                        self.shared.notices.push(Notice::new(
                            Severity::Warning,
                            state::ACTIVE_SQL_TRANSACTION,
                            "there is already a transaction in progress",
                        ));
                        return command("BEGIN");
                    }
                }
                let m = modes(list);
                self.block = Block::Open(OpenBlock::new(
                    m.isolation.unwrap_or(self.default_isolation),
                    m.read_only.unwrap_or(self.default_read_only),
                ));
                self.shared.transaction_ids.forget();
                command("BEGIN")
            }
            Statement::Commit { chain: false, .. } => {
                self.cursors.block_ended();
                self.committed = false;
                let out = match std::mem::replace(&mut self.block, Block::None) {
                    Block::None => {
                        self.no_block_warning();
                        return command("COMMIT");
                    }
                    Block::Open(OpenBlock { failed: true, .. }) => return command("ROLLBACK"),
                    Block::Open(OpenBlock { txn: None, .. }) => Ok(()),
                    Block::Open(OpenBlock { txn: Some(txn), .. }) => {
                        async {
                            crate::deferred_checks::run_due(&self.shared, &txn, true).await?;
                            txn.commit().await
                        }
                        .await
                    }
                };
                self.committed = out.is_ok();
                Some(out.map(|()| Output::Command(CommandTag::of("COMMIT"))))
            }
            Statement::Rollback {
                chain: false,
                savepoint: None,
            } => {
                self.committed = false;
                if matches!(std::mem::replace(&mut self.block, Block::None), Block::None) {
                    self.no_block_warning();
                }
                self.cursors.block_ended();
                command("ROLLBACK")
            }
            Statement::Commit { chain: true, .. } | Statement::Rollback { chain: true, .. } => {
                Some(Err(SqlError::unsupported("AND CHAIN")))
            }
            Statement::Savepoint { name } => Some(self.savepoint(savepoint_name(name)).await),
            Statement::Rollback {
                chain: false,
                savepoint: Some(name),
            } => Some(self.rollback_to(&savepoint_name(name)).await),
            Statement::ReleaseSavepoint { name } => Some(self.release(&savepoint_name(name))),
            s if let Some(set) = crate::set_constraints::of_statement(s) => {
                Some(self.set_constraints(set).await)
            }
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
                    Block::Open(OpenBlock { failed: true, .. }) => None,
                    Block::Open(OpenBlock {
                        txn,
                        isolation,
                        read_only,
                        ..
                    }) => {
                        if let Some(asked) = m.isolation.filter(|i| i != isolation) {
                            if txn.is_some() {
                                return Some(Err(SqlError::user(
                                    state::ACTIVE_SQL_TRANSACTION,
                                    "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                                )));
                            }
                            *isolation = asked;
                        }
                        *read_only = m.read_only.unwrap_or(*read_only);
                        command("SET")
                    }
                    Block::None => Some(Err(outside_block("SET TRANSACTION"))),
                }
            }
            _ => None,
        }
    }

    /// What PostgreSQL says of a COMMIT or ROLLBACK outside a block.
    fn no_block_warning(&self) {
        self.shared.notices.push(Notice::new(
            Severity::Warning,
            state::NO_ACTIVE_SQL_TRANSACTION,
            "there is no transaction in progress",
        ));
    }

    /// SAVEPOINT: begins the block's transaction if no statement did yet.
    async fn savepoint(&mut self, name: String) -> Result<Output> {
        match &self.block {
            Block::None | Block::Open(OpenBlock { implicit: true, .. }) => {
                return Err(outside_block("SAVEPOINT"));
            }
            Block::Open(OpenBlock { failed: true, .. }) => return Err(in_failed_block()),
            Block::Open(_) => {}
        }
        self.open_savepoint(name).await?;
        Ok(Output::Command(CommandTag::of("SAVEPOINT")))
    }

    /// ROLLBACK TO SAVEPOINT: undoes what the block did after it, the savepoints opened
    /// since gone, and revives the block if it had failed.
    async fn rollback_to(&mut self, name: &str) -> Result<Output> {
        if !matches!(&self.block, Block::Open(open) if !open.implicit) {
            return Err(outside_block("ROLLBACK TO SAVEPOINT"));
        }
        self.undo_to(name).await?;
        Ok(Output::Command(CommandTag::of("ROLLBACK")))
    }

    /// RELEASE SAVEPOINT: forgets it and those opened after it.
    fn release(&mut self, name: &str) -> Result<Output> {
        match &self.block {
            Block::None | Block::Open(OpenBlock { implicit: true, .. }) => {
                return Err(outside_block("RELEASE SAVEPOINT"));
            }
            Block::Open(OpenBlock { failed: true, .. }) => return Err(in_failed_block()),
            Block::Open(_) => {}
        }
        self.forget_savepoint(name)?;
        Ok(Output::Command(CommandTag::of("RELEASE")))
    }

    /// Opens a savepoint called `name` in the open block (an implicit one too, for a
    /// DO block's handlers), beginning its transaction if no statement did yet.
    async fn open_savepoint(&mut self, name: String) -> Result<()> {
        let Block::Open(open) = &mut self.block else {
            return Err(outside_block("SAVEPOINT"));
        };
        let txn = match &open.txn {
            Some(txn) => Arc::clone(txn),
            None => begun(&self.shared, &mut open.txn, open.isolation)?,
        };
        let savepoint = txn.savepoint().await?;
        open.savepoints.push((name, savepoint));
        Ok(())
    }

    /// Undoes what the open block did after the savepoint called `name` (the savepoints
    /// opened since gone), and revives the block if it had failed.
    async fn undo_to(&mut self, name: &str) -> Result<()> {
        let Block::Open(open) = &mut self.block else {
            return Err(outside_block("ROLLBACK TO SAVEPOINT"));
        };
        let at = open.savepoint(name)?;
        let txn = open
            .txn
            .clone()
            .expect("a savepoint begins the transaction");
        // The engine forgets the later ones with the rollback.
        open.savepoints.truncate(at + 1);
        txn.rollback_to(&open.savepoints[at].1).await?;
        open.failed = false;
        Ok(())
    }

    /// Forgets the savepoint called `name` and those opened after it, keeping what was
    /// done since.
    fn forget_savepoint(&mut self, name: &str) -> Result<()> {
        let Block::Open(open) = &mut self.block else {
            return Err(outside_block("RELEASE SAVEPOINT"));
        };
        let at = open.savepoint(name)?;
        let txn = open
            .txn
            .clone()
            .expect("a savepoint begins the transaction");
        if let Some((_, released)) = open.savepoints.drain(at..).next() {
            txn.release(released)?;
        }
        Ok(())
    }
}

/// A DO block's way into its session: statements run in the session's block, and the
/// exception handlers' savepoints are the block's, under names no SQL can write (a
/// name with a NUL).
struct BlockHost<'a> {
    session: &'a mut SqlSession,
    /// How many of the block's savepoints are open.
    savepoints: usize,
}

impl BlockHost<'_> {
    fn savepoint_name(&self) -> String {
        format!("\0do {}", self.savepoints)
    }
}

#[async_trait::async_trait]
impl crate::do_block::Host for BlockHost<'_> {
    async fn statement(&mut self, sql: &str) -> Result<Output> {
        let mut statements = parse(sql)?;
        let (Some(mut statement), None) = (statements.pop_front(), statements.pop_front()) else {
            return Err(SqlError::user(
                state::SYNTAX,
                "a DO block's statement must be one statement",
            ));
        };
        if let Some(adapt) = &self.session.adapt {
            adapt(&mut statement);
        }
        Box::pin(self.session.run_one(statement)).await
    }

    fn notice(&self, notice: Notice) {
        self.session.shared.notices.push(notice);
    }

    async fn savepoint(&mut self) -> Result<()> {
        self.savepoints += 1;
        let name = self.savepoint_name();
        self.session.open_savepoint(name).await
    }

    async fn roll_back_savepoint(&mut self) -> Result<()> {
        let name = self.savepoint_name();
        self.savepoints -= 1;
        self.session.undo_to(&name).await?;
        self.session.forget_savepoint(&name)
    }

    fn release_savepoint(&mut self) -> Result<()> {
        let name = self.savepoint_name();
        self.savepoints -= 1;
        self.session.forget_savepoint(&name)
    }
}
