//! One connection: its SQL session and settings, and the handlers pgwire calls for it —
//! the simple query protocol (statements run in order, the first error ends the
//! string), and the extended one (a statement is planned once at Parse, for its parameter
//! and column types and for the plan its runs reuse, and run with its parameters at
//! each Execute). Statement outcomes become responses;
//! BEGIN, COMMIT and ROLLBACK move the transaction status clients see.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{DiscardObject, Statement};
use futures::{Sink, SinkExt, stream};
use pgwire::api::cancel::DefaultCancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler, send_describe_response};
use pgwire::api::results::{
    CopyResponse, DescribePortalResponse, FieldInfo, QueryResponse, Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, ConnectionHandle, DEFAULT_NAME, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::{ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Flush, Parse, ParseComplete,
    Sync as SyncMessage, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::ReadyForQuery;
use pmdb_sql::{
    CommandTag, CopyEncoding, Notice, Output, Prepared, SqlError, SqlSession, StatementKind,
    TxnStatus, copy_failed,
};
use tokio::sync::Mutex;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::activity::{Activity, Control, Notification, Registration};
use crate::auth::Gate;
use crate::channels::{self, ChannelChange, is_channel_command};
use crate::compat::{self, IsolationSetting, Settings};
use crate::copy::Receiving;
use crate::databases::{Database, Databases};
use crate::encode::{copy_rows, fields, rows};
use crate::params::{declared_type, param_type, values};
use crate::plan_cache::PlanCache;
use crate::sync_flush::{FlushRequest, SessionStatus};
use crate::timeouts;

mod named_statements;
mod portal_moves;

use named_statements::NamedStatements;

/// What the client's statements run in.
pub struct Client {
    pub sql: SqlSession,
    pub settings: Settings,
    /// A COPY … FROM STDIN whose data is arriving.
    copy: Option<Receiving>,
    /// What the next ReadyForQuery reports.
    status: SessionStatus,
    /// The statements prepared by name (Parse, PREPARE), which `EXECUTE` runs and
    /// `DEALLOCATE ALL` forgets: the portal store cannot list them.
    statements: NamedStatements,
    /// Whether the SQL session knows the user and database the client connected as.
    identified: bool,
    /// Whether a statement ran since the last Sync: the extended protocol's statements
    /// up to a Sync are one implicit transaction.
    in_group: bool,
    /// `idle_in_transaction_session_timeout` in milliseconds, which the socket reads
    /// between messages without taking the client's lock.
    idle_limit: Arc<AtomicU64>,
    /// The server's connections, and this one's place among them once identified.
    activity: Arc<Activity>,
    backend: Option<Registration>,
    /// Woken by `pg_terminate_backend` (see [`Handler::terminated`]).
    terminate: Arc<tokio::sync::Notify>,
    /// Where the notifications of the channels the connection listens to go.
    inbox: UnboundedSender<Notification>,
    /// LISTEN, UNLISTEN and NOTIFY of the open block, done when it commits.
    at_commit: Vec<ChannelChange>,
    /// The portals Bind named, which SQL's MOVE moves too.
    portals: portal_moves::NamedPortals,
    /// The plans of the statements Parse saw, by their text.
    plans: PlanCache,
    /// The server's databases, and the one CREATE DATABASE made that the client is
    /// on (`None`: the server's own).
    databases: Arc<Databases>,
    database: Option<Arc<Database>>,
    /// The database name the client connected with.
    database_name: String,
}

impl Client {
    /// Tells the SQL session who the client connected as, once (the startup message
    /// named them before any statement).
    fn identify(&mut self, info: &impl ClientInfo) {
        if self.identified {
            return;
        }
        let meta = info.metadata();
        let user = meta.get("user").map_or(pmdb_sql::OWNER, String::as_str);
        let database = meta.get("database").map_or(user, String::as_str);
        let application = meta.get("application_name").map_or("", String::as_str);
        let (pid, _) = info.pid_and_secret_key();
        // A database CREATE DATABASE made: its sessions, not the server's own database's
        // (no statement ran yet on the session this one replaces).
        if let Some((sql, made)) = self.databases.session(database) {
            self.sql = sql;
            self.settings = Settings::new(self.sql.setting_values());
            self.apply_settings();
            self.database = Some(made);
        }
        self.database_name = database.to_owned();
        self.sql.set_identity(user, database, pid);
        self.sql.set_extension(self.statements.shared());
        let address = info.socket_addr();
        let client = (!address.ip().is_unspecified() || address.port() != 0).then_some(address);
        let control = Control {
            cancel: info
                .session_extensions()
                .get::<Arc<ConnectionHandle>>()
                .map(|h| Arc::clone(&*h)),
            terminate: Arc::clone(&self.terminate),
            inbox: self.inbox.clone(),
        };
        self.backend =
            Some(
                self.activity
                    .register(pid, user, database, application, client, control),
            );
        self.identified = true;
    }

    /// Shows the connection running `query` (in `pg_stat_activity`).
    fn started(&self, query: &str) {
        if let Some(b) = &self.backend {
            b.started(query);
        }
    }
}

fn error_info(e: &SqlError) -> ErrorInfo {
    let mut info = ErrorInfo::new("ERROR".into(), e.sqlstate().into(), e.message());
    info.severity_nonlocalized = Some("ERROR".into());
    info.detail = e.detail().map(str::to_owned);
    info.hint = e.hint().map(str::to_owned);
    info.where_context = e.context().map(str::to_owned);
    info.routine = e.routine().map(str::to_owned);
    info
}

/// A notice as PostgreSQL's NoticeResponse carries it.
fn notice_info(n: &Notice) -> ErrorInfo {
    let severity = n.severity.name().to_owned();
    let mut info = ErrorInfo::new(severity.clone(), n.sqlstate.clone(), n.message.clone());
    info.severity_nonlocalized = Some(severity);
    info.detail = n.detail.clone();
    info.hint = n.hint.clone();
    info.where_context = n.context.clone();
    if let Some(routine) = n.routine {
        // Where in pmdb it was raised: the fields PostgreSQL fills with its own source's.
        info.file_name = Some(file!().to_owned());
        info.line = Some(line!() as usize);
        info.routine = Some(routine.to_owned());
    }
    info
}

/// Sends what the statements that ran had to tell the client beside their outcomes, as
/// far as its `client_min_messages` asks.
async fn send_notices<C>(sink: &mut C, client: &Client) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let least = client.settings.least_notice();
    for n in client.sql.take_notices() {
        if n.severity.reaches(least) {
            sink.feed(PgWireBackendMessage::NoticeResponse(notice_info(&n).into()))
                .await?;
        }
    }
    Ok(())
}

fn user_error(e: &SqlError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}

/// As [`error_info`], for an error of `query`: one about a relation or column that
/// does not exist points at its name, as PostgreSQL's does (the position drivers show).
fn error_info_in(e: &SqlError, query: &str) -> ErrorInfo {
    let mut info = error_info(e);
    if matches!(e.sqlstate(), "42P01" | "42703") {
        let message = e.message();
        let name = message.split('"').nth(1);
        info.position = name
            .and_then(|n| position_of(query, n))
            .map(|p| p.to_string());
    }
    info
}

/// Where `name` first stands as a word in `query` (case aside), in characters from 1.
fn position_of(query: &str, name: &str) -> Option<usize> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let lower = query.to_lowercase();
    let wanted = name.to_lowercase();
    if lower.len() != query.len() || wanted.is_empty() {
        return None;
    }
    lower.match_indices(&wanted).find_map(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let after = lower[at + wanted.len()..].chars().next();
        (!word(before) && !word(after)).then(|| lower[..at].chars().count() + 1)
    })
}

/// A command tag as pgwire takes it.
fn tag(t: &CommandTag) -> Tag {
    let mut tag = Tag::new(t.command());
    if t.has_oid() {
        tag = tag.with_oid(0);
    }
    if let Some(n) = t.rows() {
        tag = tag.with_rows(n as usize);
    }
    tag
}

/// Rows as pgwire sends them, in `format`.
fn query_response(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    format: &Format,
) -> Result<QueryResponse, SqlError> {
    let fields = Arc::new(fields(schema, format));
    let data = rows(batches, Arc::clone(&fields))
        .map_err(|e| SqlError::Query(format!("cannot encode the result: {e}")))?;
    Ok(QueryResponse::new(
        fields,
        stream::iter(data.into_iter().map(Ok)),
    ))
}

/// A statement to run: as the simple protocol gives it, or prepared, with parameters.
enum Run<'p> {
    Statement(DfStatement),
    Prepared(&'p Prepared, Vec<ScalarValue>),
}

impl Client {
    /// Runs one statement; its rows in `format`. An error fails the open block. A
    /// statement still running after `statement_timeout` is stopped (its work dropped
    /// where it stood) and fails with 57014.
    async fn execute(&mut self, run: Run<'_>, format: &Format) -> Result<Response, SqlError> {
        let limit = timeouts::limit(self.settings.limits().statement_ms);
        let in_block = self.sql.in_block();
        let response = match limit {
            None => self.respond(run, format).await,
            Some(limit) => tokio::time::timeout(limit, self.respond(run, format))
                .await
                .unwrap_or_else(|_| Err(timeouts::statement_cancelled())),
        };
        if in_block && !self.sql.in_block() {
            self.block_ended();
        }
        if response.is_err() {
            self.sql.fail_block();
        }
        self.publish();
        response
    }

    /// The settings after a block ended: kept or undone as it committed or not (a
    /// COMMIT that failed rolled it back).
    fn block_ended(&mut self) {
        let committed = self.sql.committed_last_block();
        self.settings.block_ended(committed);
        self.apply_settings();
        let changes = std::mem::take(&mut self.at_commit);
        if committed {
            for change in changes {
                self.change_channels(change);
            }
        }
    }

    fn change_channels(&self, change: ChannelChange) {
        if let Some(backend) = &self.backend {
            change.apply(backend, &self.activity);
        }
    }

    /// LISTEN, UNLISTEN and NOTIFY; `None` for another statement. In a block they take
    /// effect when it commits (a NOTIFY is sent then, and never if it rolls back), as in
    /// PostgreSQL.
    fn channel_command(&mut self, statement: &Statement) -> Option<Result<Response, SqlError>> {
        if is_channel_command(statement) && self.sql.status() == TxnStatus::Failed {
            return Some(Err(pmdb_sql::in_failed_block()));
        }
        let pid = self.backend.as_ref().map_or(0, Registration::pid);
        let (command, change) = match channels::change_of(statement, pid)? {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        if self.sql.in_block() {
            self.at_commit.push(change);
        } else {
            self.change_channels(change);
        }
        Some(Ok(Response::Execution(Tag::new(command))))
    }

    /// CREATE DATABASE and DROP DATABASE, which the server runs (each database is an
    /// engine of its own); neither runs inside a transaction block, as in PostgreSQL.
    fn database_command(&mut self, statement: &Statement) -> Result<Response, SqlError> {
        let (verb, name) = match statement {
            Statement::CreateDatabase { db_name, .. } => ("CREATE DATABASE", db_name),
            Statement::Drop { names, .. } if names.len() == 1 => ("DROP DATABASE", &names[0]),
            _ => {
                return Err(SqlError::unsupported(
                    "DROP DATABASE of more than one database",
                ));
            }
        };
        if self.sql.status() == TxnStatus::Failed {
            return Err(pmdb_sql::in_failed_block());
        }
        if self.sql.in_block() {
            return Err(SqlError::user(
                "25001",
                format!("{verb} cannot run inside a transaction block"),
            ));
        }
        let name = pmdb_sql::names::database_name(name)?;
        if let Statement::CreateDatabase {
            location,
            managed_location,
            or_replace,
            transient,
            clone,
            comment,
            ..
        } = statement
            && (location.is_some()
                || managed_location.is_some()
                || *or_replace
                || *transient
                || clone.is_some()
                || comment.is_some())
        {
            return Err(SqlError::unsupported(format!(
                "CREATE DATABASE with options ({statement})"
            )));
        }
        match statement {
            Statement::CreateDatabase { .. } => {
                self.databases.create(&name, &self.database_name)?;
            }
            Statement::Drop { if_exists, .. } => {
                self.databases.drop_database(
                    &name,
                    *if_exists,
                    &self.database_name,
                    self.database.as_ref(),
                )?;
            }
            _ => unreachable!("matched above"),
        }
        Ok(Response::Execution(Tag::new(verb)))
    }

    /// Ends the implicit transaction of a Query message's statements or of those up to
    /// a Sync, and the settings changed in it with it.
    async fn end_implicit(&mut self) -> Result<(), SqlError> {
        let in_block = self.sql.in_block();
        let ended = self.sql.end_implicit().await;
        if in_block && !self.sql.in_block() {
            self.block_ended();
        }
        self.publish();
        ended
    }

    /// Hands the SQL session and the socket the limits they enforce themselves.
    fn apply_settings(&self) {
        let limits = self.settings.limits();
        self.sql.set_lock_timeout(limits.lock_ms);
        self.sql.set_search_path(self.settings.search_path());
        self.idle_limit
            .store(limits.idle_in_transaction_ms, Ordering::Relaxed);
    }

    /// Makes the session's transaction status the one the next ReadyForQuery reports.
    fn publish(&self) {
        let status = self.sql.status();
        self.status.set(status);
        if let Some(b) = &self.backend {
            b.waiting(status);
        }
    }

    /// Plans the one statement of `sql` for Parse (`None` for empty text), its
    /// parameters of the types the client declared (`types`) where it declared one.
    async fn prepare(
        &mut self,
        sql: &str,
        types: &[Option<Type>],
    ) -> Result<Option<Arc<Prepared>>, SqlError> {
        let declared: Vec<Option<DataType>> = types
            .iter()
            .map(|t| t.as_ref().and_then(declared_type))
            .collect();
        let key = crate::plan_cache::key(sql, &declared);
        if let Some(kept) = self.plans.get(&key, &self.sql) {
            return Ok(Some(kept));
        }
        let mut statements = pmdb_sql::parse(sql)?;
        let Some(mut statement) = statements.pop_front() else {
            return Ok(None);
        };
        crate::pg_catalog::adapt(&mut statement);
        if !statements.is_empty() {
            return Err(SqlError::user(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        // EXECUTE is the statement it names (never kept by its text: the name may be
        // prepared again), its arguments bound in.
        if let Some(executed) = self.statements.executed(&statement) {
            let (target, arguments) = executed?;
            if arguments.is_empty() {
                return Ok(Some(target));
            }
            let bound = target.bind(&arguments)?;
            return Ok(Some(Arc::new(self.sql.prepare_declared(bound, &[]).await?)));
        }
        let prepared = match &statement {
            // SHOW is answered by the server's settings, in PostgreSQL's shape.
            DfStatement::Statement(s) if StatementKind::of(&statement) == StatementKind::Show => {
                let column = s.to_string().trim_start_matches("SHOW ").to_lowercase();
                let columns = Schema::new(vec![Field::new(column, DataType::Utf8, false)]);
                Prepared::unplanned(statement, Some(Arc::new(columns)))
            }
            // Answered by the server, which keeps the channels.
            DfStatement::Statement(s) if is_channel_command(s) => {
                Prepared::unplanned(statement, None)
            }
            _ => self.sql.prepare_declared(statement, &declared).await?,
        };
        let prepared = Arc::new(prepared);
        self.plans.keep(key, &prepared);
        Ok(Some(prepared))
    }

    async fn respond(&mut self, run: Run<'_>, format: &Format) -> Result<Response, SqlError> {
        let statement = match &run {
            Run::Statement(s) => s,
            Run::Prepared(p, _) => p.statement(),
        };
        let kind = match &run {
            Run::Statement(s) => StatementKind::of(s),
            Run::Prepared(p, _) => p.kind(),
        };
        if kind == StatementKind::CopyFromStdin {
            let copy = self.sql.copy_in(statement)?;
            let columns = copy.columns.len();
            let binary = i8::from(copy.format.binary);
            self.copy = Some(Receiving::new(copy));
            return Ok(Response::CopyIn(CopyResponse::new(
                binary,
                columns,
                stream::empty(),
            )));
        }
        if kind == StatementKind::Database
            && let DfStatement::Statement(s) = statement
        {
            return self.database_command(s);
        }
        if let DfStatement::Statement(s) = statement
            && let Some(out) = self.channel_command(s)
        {
            return out;
        }
        let before = self.sql.status();
        let setting = matches!(kind, StatementKind::Setting | StatementKind::Show);
        let intercepted = match compat::isolation(&self.sql, statement).filter(|_| setting) {
            Some(isolation) => Some(match isolation? {
                IsolationSetting::Shown(out) => out,
                IsolationSetting::Run(set) => Box::pin(self.sql.run(set)).await?,
            }),
            None if setting => {
                if before == TxnStatus::Failed {
                    return Err(pmdb_sql::in_failed_block());
                }
                let in_block = self.sql.in_block();
                let out = self.settings.intercept(statement, in_block).transpose()?;
                self.apply_settings();
                if let Some(defaults) = compat::resets_characteristics(statement) {
                    Box::pin(self.sql.run(defaults)).await?;
                }
                out
            }
            None => None,
        };
        let ran = match (intercepted, run) {
            (Some(out), _) => Ok(out),
            // Boxed: the general path's future is large, and a prepared statement's
            // would be as large, copied at each statement.
            (None, Run::Statement(s)) => Box::pin(self.sql.run(s)).await,
            (None, Run::Prepared(p, params)) => self.sql.run_prepared(p, params).await,
        };
        // What set_config asked for, taken once its statement succeeded (a failed one's
        // are undone with it, as in PostgreSQL).
        let changes = self.sql.setting_values().take_changes();
        let out = ran?;
        if !changes.is_empty() {
            let in_block = self.sql.in_block();
            for change in changes {
                self.settings.take(change, in_block);
            }
            self.apply_settings();
        }
        response(out, format, before, self.sql.status())
    }

    /// A statement of the simple protocol run by the plan kept for its shape
    /// ([`pmdb_sql::SqlSession::run_by_shape`]), as [`Client::execute`] runs one; `None`
    /// (nothing done) when there is none, or its plan declined the statement's values.
    async fn execute_by_shape(&mut self, sql: &str) -> Option<Result<Response, SqlError>> {
        let before = self.sql.status();
        let ran = match timeouts::limit(self.settings.limits().statement_ms) {
            None => self.sql.run_by_shape(sql).await,
            Some(limit) => tokio::time::timeout(limit, self.sql.run_by_shape(sql))
                .await
                .unwrap_or_else(|_| Some(Err(timeouts::statement_cancelled()))),
        }?;
        let response =
            ran.and_then(|out| response(out, &Format::UnifiedText, before, self.sql.status()));
        if response.is_err() {
            self.sql.fail_block();
        }
        self.publish();
        Some(response)
    }
}

/// What the client is sent for `out`, a statement's output (its rows in `format`), the
/// session's transaction status `before` and `after` it ran.
fn response(
    out: Output,
    format: &Format,
    before: TxnStatus,
    after: TxnStatus,
) -> Result<Response, SqlError> {
    Ok(match out {
        Output::Rows { schema, batches } => {
            Response::Query(query_response(&schema, &batches, format)?)
        }
        Output::Returned {
            tag,
            schema,
            batches,
        } => {
            let mut response = query_response(&schema, &batches, format)?;
            // pgwire appends the count of rows sent; INSERT's oid goes before it.
            response.set_command_tag(&match tag.has_oid() {
                true => format!("{} 0", tag.command()),
                false => tag.command().to_owned(),
            });
            Response::Query(response)
        }
        Output::CopyOut {
            schema,
            batches,
            format,
        } => {
            let data = copy_rows(&schema, &batches, &format)
                .map_err(|e| SqlError::Query(format!("cannot encode the rows: {e}")))?;
            let binary = i8::from(format.encoding == CopyEncoding::Binary);
            Response::CopyOut(CopyResponse::new(
                binary,
                schema.fields().len(),
                stream::iter(data.into_iter().map(Ok)),
            ))
        }
        Output::Command(command) => {
            let t = tag(&command);
            // A COMMIT or ROLLBACK outside a block still ends one for the client:
            // after a failed COMMIT (the block is gone, but the error left the
            // client's status failed) it sends ROLLBACK, which must clear it.
            let ends = matches!(command.command(), "COMMIT" | "ROLLBACK");
            match (before, after) {
                (TxnStatus::Idle, TxnStatus::InBlock) => Response::TransactionStart(t),
                (_, TxnStatus::Idle) if ends || before != TxnStatus::Idle => {
                    Response::TransactionEnd(t)
                }
                _ => Response::Execution(t),
            }
        }
    })
}

#[async_trait]
impl CopyHandler for Handler {
    async fn on_copy_data<C>(&self, _client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(r) = self.client.lock().await.copy.as_mut() {
            r.data(&data.data).await;
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut c = self.client.lock().await;
        let Some(mut r) = c.copy.take() else {
            return Err(user_error(&SqlError::user(
                "08P01",
                "CopyDone without a COPY",
            )));
        };
        r.done().await;
        let rows = match r.failed.take() {
            Some(e) => Err(c.sql.abort_copy(r.copy, e)),
            None => c.sql.finish_copy(r.copy).await,
        };
        c.publish();
        let rows = rows.map_err(|e| user_error(&e))?;
        client
            .send(PgWireBackendMessage::CommandComplete(
                Tag::new("COPY").with_rows(rows as usize).into(),
            ))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut c = self.client.lock().await;
        let e = match c.copy.take() {
            Some(r) => c.sql.abort_copy(r.copy, copy_failed(&fail.message)),
            None => copy_failed(&fail.message),
        };
        c.publish();
        user_error(&e)
    }
}

/// Plans statements for Parse, through the connection's session.
pub struct Planner {
    client: Arc<Mutex<Client>>,
}

#[async_trait]
impl QueryParser for Planner {
    type Statement = Arc<Prepared>;

    /// Plans the statement once: its parameter and result types, and what its runs
    /// reuse (see [`Prepared`]).
    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Arc<Prepared>>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let mut client = self.client.lock().await;
        client.identify(_client);
        let prepared = client.prepare(sql, types).await;
        if prepared.is_err() {
            client.sql.fail_block();
        }
        client.publish();
        prepared.map_err(|e| PgWireError::UserError(Box::new(error_info_in(&e, sql))))
    }

    fn get_parameter_types(&self, stmt: &Arc<Prepared>) -> PgWireResult<Vec<Type>> {
        Ok((0..stmt.parameters().len())
            .map(|i| param_type(&[], stmt.parameters(), i))
            .collect())
    }

    fn get_result_schema(
        &self,
        stmt: &Arc<Prepared>,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(match stmt.columns() {
            Some(schema) => fields(schema, format.unwrap_or(&Format::UnifiedText)),
            None => Vec::new(),
        })
    }
}

/// Whether `stmt` returns rows that have no column (a select list of none).
fn has_no_column(stmt: &Prepared) -> bool {
    stmt.columns()
        .is_some_and(|schema| schema.fields().is_empty())
}

/// The query handlers of one connection.
pub struct Handler {
    client: Arc<Mutex<Client>>,
    planner: Arc<Planner>,
    flush: FlushRequest,
    status: SessionStatus,
    /// Whether the message after the Execute being handled is a Sync, as far as the
    /// socket has received: a statement alone between two Syncs is its own transaction
    /// and needs no implicit block around it.
    sync_follows: AtomicBool,
    /// The client's `idle_in_transaction_session_timeout` (see [`Client::idle_limit`]).
    idle_limit: Arc<AtomicU64>,
    terminate: Arc<tokio::sync::Notify>,
    /// Notifications of the channels the connection listens to, not yet delivered.
    notifications: Mutex<UnboundedReceiver<Notification>>,
}

impl Handler {
    /// The next notification for the client, once one is there.
    pub async fn notification(&self) -> Option<Notification> {
        self.notifications.lock().await.recv().await
    }

    /// Whether the client waits outside a block, where PostgreSQL delivers
    /// notifications (those sent meanwhile wait for the block to end).
    pub fn between_blocks(&self) -> bool {
        self.status.get() == TxnStatus::Idle
    }

    /// Tells the session who the client is, once its start-up has ended, so that the
    /// connection shows in `pg_stat_activity` (and can be cancelled or ended) before its
    /// first statement, as in PostgreSQL.
    pub async fn identify(&self, info: &impl ClientInfo) {
        self.client.lock().await.identify(info);
    }

    /// Resolves once another session asked to end this connection (`pg_terminate_backend`).
    pub async fn terminated(&self) {
        self.terminate.notified().await;
    }

    /// Ends the session as its client leaves: what the session made for itself alone
    /// (its temporary relations) goes. An error leaves them to the next open, which
    /// drops what sessions left.
    pub async fn close(&self) {
        let mut client = self.client.lock().await;
        let _ = client.sql.close().await;
    }

    /// Fails the open block (if any) for an error pgwire found in a message: the rest of
    /// the block, or of the statements up to the Sync, must not commit.
    pub async fn fail_block(&self) {
        let mut client = self.client.lock().await;
        client.sql.fail_block();
        client.publish();
    }

    /// Makes the socket write what it holds at its next flush.
    pub fn flush_now(&self) {
        self.flush.request();
    }

    /// Tells the handler whether a Sync follows the Execute about to be handled.
    pub fn sync_follows(&self, follows: bool) {
        self.sync_follows.store(follows, Ordering::Relaxed);
    }

    /// How long the client may stay idle in a block: `None` outside one, or without a
    /// limit.
    pub fn idle_limit(&self) -> Option<Duration> {
        if self.status.get() == TxnStatus::Idle {
            return None;
        }
        timeouts::limit(self.idle_limit.load(Ordering::Relaxed))
    }
}

#[async_trait]
impl SimpleQueryHandler for Handler {
    async fn do_query<C>(&self, _client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut client = self.client.lock().await;
        client.identify(_client);
        client.started(query);
        if let Some(ran) = client.execute_by_shape(query).await {
            send_notices(_client, &client).await?;
            let mut responses =
                vec![ran.unwrap_or_else(|e| Response::Error(Box::new(error_info_in(&e, query))))];
            if let Err(e) = client.end_implicit().await {
                responses.push(Response::Error(Box::new(error_info(&e))));
            }
            return Ok(responses);
        }
        let statements = match pmdb_sql::parse(query) {
            Ok(s) => s,
            Err(e) => {
                client.sql.fail_block();
                client.publish();
                return Ok(vec![Response::Error(Box::new(error_info(&e)))]);
            }
        };
        let several = statements.len() > 1;
        let mut responses = Vec::with_capacity(statements.len());
        for mut statement in statements {
            crate::pg_catalog::adapt(&mut statement);
            // The statements of one Query are one transaction, as in PostgreSQL (a COPY
            // from the client commits as it goes).
            if several && StatementKind::of(&statement) != StatementKind::CopyFromStdin {
                client.sql.begin_implicit();
            }
            if let Some(out) = session_command(_client, &mut client, &statement, query).await {
                match out {
                    Ok(r) => responses.push(r),
                    Err(e) => {
                        // As any statement's error: the open block fails.
                        client.sql.fail_block();
                        responses.push(Response::Error(Box::new(error_info_in(&e, query))));
                        break;
                    }
                }
                continue;
            }
            let ran = match client.statements.executed(&statement) {
                Some(Ok((prepared, arguments))) => {
                    client
                        .execute(Run::Prepared(&prepared, arguments), &Format::UnifiedText)
                        .await
                }
                Some(Err(e)) => Err(e),
                None => {
                    client
                        .execute(Run::Statement(statement), &Format::UnifiedText)
                        .await
                }
            };
            send_notices(_client, &client).await?;
            match ran {
                Ok(r) => responses.push(r),
                Err(e) => {
                    responses.push(Response::Error(Box::new(error_info_in(&e, query))));
                    break;
                }
            }
        }
        if let Err(e) = client.end_implicit().await {
            responses.push(Response::Error(Box::new(error_info(&e))));
        }
        Ok(responses)
    }
}

#[async_trait]
impl ExtendedQueryHandler for Handler {
    type Statement = Arc<Prepared>;
    type QueryParser = Planner;

    fn query_parser(&self) -> Arc<Planner> {
        Arc::clone(&self.planner)
    }

    /// Describe: a portal no Bind made may be a cursor DECLAREd in SQL, which
    /// PostgreSQL describes as a portal too (psycopg's server-side cursors ask).
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        if message.target_type == b'P' && client.portal_store().get_portal(name).is_none() {
            let columns = self.client.lock().await.sql.cursor_columns(name);
            if let Some(schema) = columns {
                let response = DescribePortalResponse::new(fields(&schema, &Format::UnifiedText));
                return send_describe_response(client, &response).await;
            }
        }
        // A query of no column returns rows all the same: PostgreSQL describes them
        // with a RowDescription of no field, where pgwire would send NoData (which
        // drivers take for a statement returning no rows, then fail on its DataRows).
        let no_column_rows = match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => match client.portal_store().get_statement(name) {
                Some(Entry::Value(stmt)) if has_no_column(&stmt.statement) => {
                    Some(Some(self.planner.get_parameter_types(&stmt.statement)?))
                }
                _ => None,
            },
            TARGET_TYPE_BYTE_PORTAL => match client.portal_store().get_portal(name) {
                Some(Entry::Value(portal)) if has_no_column(&portal.statement.statement) => {
                    Some(None)
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(parameters) = no_column_rows {
            if let Some(types) = parameters {
                let oids = types.iter().map(Type::oid).collect();
                client
                    .send(PgWireBackendMessage::ParameterDescription(
                        ParameterDescription::new(oids),
                    ))
                    .await?;
            }
            client
                .send(PgWireBackendMessage::RowDescription(RowDescription::new(
                    Vec::new(),
                )))
                .await?;
            return Ok(());
        }
        self._on_describe(client, message).await
    }

    /// Parse, as pgwire's own, with the statement's name remembered for `DEALLOCATE ALL`.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message
            .name
            .clone()
            .unwrap_or_else(|| DEFAULT_NAME.to_owned());
        let named = name != DEFAULT_NAME;
        if named && self.client.lock().await.statements.contains(&name) {
            return Err(user_error(&SqlError::user(
                "42P05",
                format!("prepared statement \"{name}\" already exists"),
            )));
        }
        let parsed = StoredStatement::parse(client, &message, self.query_parser()).await?;
        if named {
            let prepared = parsed.as_ref().map(|s| Arc::clone(&s.statement));
            self.client
                .lock()
                .await
                .statements
                .add(&name, prepared, &message.query, false)
                .map_err(|e| user_error(&e))?;
        }
        match parsed {
            Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
            None => client.portal_store().put_empty_statement(&name),
        }
        client
            .send(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    /// Close, as pgwire's own, with a closed statement's name forgotten.
    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                self.client.lock().await.statements.remove(name);
                client.portal_store().rm_statement(name);
            }
            TARGET_TYPE_BYTE_PORTAL => client.portal_store().rm_portal(name),
            _ => {}
        }
        client
            .send(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
            .await?;
        Ok(())
    }

    /// Bind, as pgwire's own, with the count of parameters checked against the
    /// statement's (08P01, as PostgreSQL words it).
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
        let (required, statement) = match client.portal_store().get_statement(name) {
            Some(Entry::Value(statement)) => {
                (statement.statement.parameters().len(), Some(statement))
            }
            Some(Entry::Empty) => (0, None),
            None => return Err(PgWireError::StatementNotFound(name.to_owned())),
        };
        if message.parameters.len() != required {
            return Err(user_error(&SqlError::user(
                "08P01",
                format!(
                    "bind message supplies {} parameters, but prepared statement \"{}\" requires {required}",
                    message.parameters.len(),
                    message.statement_name.as_deref().unwrap_or_default()
                ),
            )));
        }
        match statement {
            Some(statement) => {
                let bound = Arc::new(Portal::try_new(&message, statement)?);
                if portal != DEFAULT_NAME {
                    self.client.lock().await.portals.bound(portal, &bound);
                }
                client.portal_store().put_portal(bound)
            }
            None => client.portal_store().put_empty_portal(portal),
        }
        client
            .send(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    /// Sync: ends the implicit transaction of the statements since the last one (a
    /// commit that fails is reported before ReadyForQuery), then as pgwire's own.
    async fn on_sync<C>(&self, client: &mut C, _message: SyncMessage) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let ended = {
            let mut session = self.client.lock().await;
            session.in_group = false;
            session.end_implicit().await
        };
        if let Err(e) = ended {
            client
                .feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into()))
                .await?;
        }
        client.portal_store().rm_portal(DEFAULT_NAME);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                client.transaction_status(),
            )))
            .await?;
        client.flush().await?;
        Ok(())
    }

    /// Flush: what the socket holds until Sync goes now.
    async fn on_flush<C>(&self, client: &mut C, _message: Flush) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.flush.request();
        client.flush().await?;
        Ok(())
    }

    async fn do_query<C>(
        &self,
        _client: &mut C,
        portal: &Portal<Arc<Prepared>>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Arc<Prepared>>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let prepared = &portal.statement.statement;
        let mut client = self.client.lock().await;
        client.started(prepared.text());
        client.statements.ran(&portal.statement.id);
        let first = !std::mem::replace(&mut client.in_group, true);
        let alone = first && self.sync_follows.load(Ordering::Relaxed);
        if !alone && prepared.kind() != StatementKind::CopyFromStdin {
            client.sql.begin_implicit();
        }
        let params = match values(portal, prepared.parameters()) {
            Ok(params) => params,
            Err(e) => {
                client.sql.fail_block();
                client.publish();
                return Err(e);
            }
        };
        let ran = client
            .execute(
                Run::Prepared(prepared, params),
                &portal.result_column_format,
            )
            .await;
        send_notices(_client, &client).await?;
        ran.map_err(|e| user_error(&e))
    }
}

/// The statements about the connection itself, answered here: `DISCARD ALL`, outside a
/// block (the session as a new connection has it: no cursor, no setting changed, no
/// sequence value handed out, no statement prepared, no channel listened to);
/// `DISCARD PLANS`, which forgets the plans kept by text;
/// `DEALLOCATE [PREPARE] {name | ALL}`, which
/// forgets one statement prepared by name (26000 if there is none of that name) or
/// all of them; `PREPARE name AS statement`, which EXECUTE then runs (the protocol's
/// Bind does not find it; `query`, the Query message it came in, is its text as
/// `pg_prepared_statements` shows it); MOVE of a portal Bind named. `None` for another
/// statement.
async fn session_command<C>(
    protocol: &C,
    client: &mut Client,
    statement: &DfStatement,
    query: &str,
) -> Option<Result<Response, SqlError>>
where
    C: ClientPortalStore,
    C::PortalStore: PortalStore,
{
    if let Some(moved) = portal_moves::move_portal(client, statement).await {
        return Some(moved);
    }
    let DfStatement::Statement(s) = statement else {
        return None;
    };
    let store = protocol.portal_store();
    let forget_all = |names: &mut NamedStatements| {
        for n in names.drain() {
            store.rm_statement(&n);
        }
    };
    let name = match s.as_ref() {
        Statement::Discard {
            object_type: DiscardObject::ALL,
        } => {
            return Some(client.sql.discard_all().await.map(|()| {
                client.plans.clear();
                client.settings = Settings::new(client.sql.setting_values());
                client.apply_settings();
                forget_all(&mut client.statements);
                if let Some(b) = &client.backend {
                    b.unlisten(None);
                }
                Response::Execution(Tag::new("DISCARD ALL"))
            }));
        }
        // Allowed in a block, as in PostgreSQL; a statement prepared by name keeps its
        // plan all the same (pmdb replans it only after DDL).
        Statement::Discard {
            object_type: DiscardObject::PLANS,
        } => {
            client.plans.clear();
            client.sql.forget_shapes();
            return Some(Ok(Response::Execution(Tag::new("DISCARD PLANS"))));
        }
        Statement::Deallocate { name, .. } => name,
        Statement::Prepare {
            name,
            data_types,
            statement,
        } => {
            if !data_types.is_empty() {
                return Some(Err(SqlError::unsupported(
                    "PREPARE with parameter types (pmdb infers them from the statement)",
                )));
            }
            let name = named_statements::folded(name);
            let text = statement.to_string();
            let prepared = match client.prepare(&text, &[]).await {
                Ok(p) => p,
                Err(e) => return Some(Err(e)),
            };
            // Kept for EXECUTE, not in the protocol's store, whose statements are of the
            // handler's type alone: a Bind does not find it.
            return Some(
                client
                    .statements
                    .add(&name, prepared, query, true)
                    .map(|()| Response::Execution(Tag::new("PREPARE"))),
            );
        }
        _ => return None,
    };
    if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") {
        forget_all(&mut client.statements);
        return Some(Ok(Response::Execution(Tag::new("DEALLOCATE ALL"))));
    }
    let n = named_statements::folded(name);
    Some(if client.statements.remove(&n) {
        store.rm_statement(&n);
        Ok(Response::Execution(Tag::new("DEALLOCATE")))
    } else {
        Err(SqlError::user(
            "26000",
            format!("prepared statement \"{n}\" does not exist"),
        ))
    })
}

/// Everything pgwire asks of one connection.
pub struct Connection {
    pub handler: Arc<Handler>,
    pub gate: Arc<Gate>,
    pub cancel: Arc<DefaultCancelHandler>,
}

impl Connection {
    pub fn new(
        databases: Arc<Databases>,
        gate: Gate,
        cancel: Arc<DefaultCancelHandler>,
        activity: Arc<Activity>,
    ) -> Connection {
        let status = SessionStatus::default();
        let idle_limit = Arc::new(AtomicU64::new(0));
        let terminate = Arc::new(tokio::sync::Notify::new());
        let (inbox, notifications) = unbounded_channel();
        // The server's own database until the start-up names another.
        let sql = databases.main_session();
        let settings = Settings::new(sql.setting_values());
        let client = Arc::new(Mutex::new(Client {
            sql,
            settings,
            copy: None,
            status: status.clone(),
            statements: NamedStatements::default(),
            identified: false,
            in_group: false,
            idle_limit: Arc::clone(&idle_limit),
            activity,
            backend: None,
            terminate: Arc::clone(&terminate),
            inbox,
            at_commit: Vec::new(),
            portals: Default::default(),
            plans: PlanCache::default(),
            databases,
            database: None,
            database_name: String::new(),
        }));
        let planner = Arc::new(Planner {
            client: Arc::clone(&client),
        });
        Connection {
            handler: Arc::new(Handler {
                client,
                planner,
                flush: FlushRequest::default(),
                status,
                sync_follows: AtomicBool::new(false),
                idle_limit,
                terminate,
                notifications: Mutex::new(notifications),
            }),
            gate: Arc::new(gate),
            cancel,
        }
    }
}

impl Connection {
    /// What tells this connection's socket that the client sent Flush.
    pub fn flush_request(&self) -> FlushRequest {
        self.handler.flush.clone()
    }

    /// What this connection's socket reports in each ReadyForQuery.
    pub fn session_status(&self) -> SessionStatus {
        self.handler.status.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::pg_type;

    #[test]
    fn command_tags_carry_their_oid_and_rows_to_pgwire() {
        let render = |t: &Tag| format!("{t:?}");
        assert_eq!(
            render(&tag(&CommandTag::insert(3))),
            render(&Tag::new("INSERT").with_oid(0).with_rows(3))
        );
        assert_eq!(
            render(&tag(&CommandTag::update(2))),
            render(&Tag::new("UPDATE").with_rows(2))
        );
        assert_eq!(
            render(&tag(&CommandTag::of("CREATE TABLE"))),
            render(&Tag::new("CREATE TABLE"))
        );
    }

    #[test]
    fn a_missing_relation_or_column_is_pointed_at_in_the_query() {
        let missing = SqlError::user("42P01", "relation \"_nonexistent_\" does not exist");
        let info = error_info_in(&missing, "SELECT * FROM _nonexistent_");
        assert_eq!(info.position.as_deref(), Some("15"));
        let column = SqlError::user("42703", "column \"b\" does not exist");
        let info = error_info_in(&column, "SELECT ab, b FROM t");
        assert_eq!(info.position.as_deref(), Some("12"));
        let other = SqlError::user("22012", "division by zero");
        assert_eq!(error_info_in(&other, "SELECT 1/0").position, None);
    }

    #[test]
    fn arrow_types_map_to_postgres_types() {
        assert_eq!(pg_type(&DataType::Int64), Type::INT8);
        assert_eq!(pg_type(&DataType::Utf8), Type::TEXT);
        assert_eq!(pg_type(&DataType::Decimal128(12, 2)), Type::NUMERIC);
    }
}
