//! What a client session's statements run with: the database, the catalog, the row locks
//! and the runtime DataFusion's executions run on, which every session shares, and a
//! DataFusion context of the session's own (its settings: one client's `SET` reaches no
//! other), over the tables and functions every context shares; a statement's session
//! state at its read point; the parsing of SQL text.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::catalog::{CatalogProvider, CatalogProviderList, MemoryCatalogProviderList};
use datafusion::common::Result as DfResult;
use datafusion::dataframe::DataFrame;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParser, Statement as DfStatement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use pmdb_engine::Db;
use tokio_util::task::AbortOnDropHandle;

use crate::catalog::{Catalog, Viewer};
use crate::error::{Result, SqlError, df_error, state};
use crate::notices::Notices;
use crate::read_point::ReadPoint;
use crate::row_locks::ClientLocks;
use crate::search_path::SearchPath;
use crate::sequence_functions::SequenceCalls;
use crate::temp_tables::TempSchema;
use crate::transaction_ids::TransactionIds;

pub(crate) struct Session {
    pub db: Db,
    pub catalog: Arc<Catalog>,
    /// The DataFusion context: the engine's own (which new sessions copy), or a client
    /// session's.
    pub ctx: SessionContext,
    pub row_locks: Arc<ClientLocks>,
    /// The SQL engine's own multi-threaded runtime.
    pub executor: tokio::runtime::Handle,
    /// What this session's `nextval` calls gave (its sequence functions, registered in
    /// its context, remember them there).
    pub sequence_calls: Arc<SequenceCalls>,
    /// Where the session's temporary relations live.
    pub temp: TempSchema,
    /// Where its unqualified names are looked up and made.
    pub search_path: SearchPath,
    /// Who the session is to the catalog, which it reads as last committed while
    /// another session's transaction changes it.
    pub viewer: Viewer,
    /// Makes the catalog a session's DataFusion context plans against, as that session
    /// (its viewer) sees it.
    pub provider_for: ProviderFor,
    /// What the running statement has to tell the client beside its outcome.
    pub notices: Notices,
    /// The id `txid_current()` gives its transaction.
    pub transaction_ids: Arc<TransactionIds>,
}

/// The catalog provider for each viewer of the catalog.
pub(crate) type ProviderFor = Arc<dyn Fn(Viewer) -> Arc<dyn CatalogProvider> + Send + Sync>;

impl Session {
    /// The same database, catalog, locks and runtime, with a DataFusion context of its
    /// own, copied from this one's (settings, functions; the tables are the same).
    pub(crate) fn for_client(&self) -> Session {
        let row_locks = Arc::new(self.row_locks.for_client());
        let mut state = self.ctx.state();
        // INSERTs DataFusion plans take their claims on unique keys with these.
        state.config_mut().set_extension(Arc::clone(&row_locks));
        let viewer = self.catalog.new_viewer();
        // Relations and functions built from the catalog (pg_catalog) read it as the
        // session does.
        state.config_mut().options_mut().extensions.insert(viewer);
        let search_path = SearchPath::default();
        state
            .config_mut()
            .options_mut()
            .extensions
            .insert(search_path.clone());
        let ctx = SessionContext::new_with_state(state);
        // The session's own list of catalogs, whose tables it reads as it sees them.
        let catalogs = MemoryCatalogProviderList::new();
        catalogs.register_catalog("pmdb".into(), (self.provider_for)(viewer));
        ctx.register_catalog_list(Arc::new(catalogs));
        let sequence_calls = Arc::default();
        crate::sequence_functions::register(&ctx, &self.catalog, &sequence_calls);
        let transaction_ids = Arc::new(self.transaction_ids.for_client());
        crate::transaction_ids::register(&ctx, &transaction_ids);
        Session {
            db: self.db.clone(),
            catalog: Arc::clone(&self.catalog),
            ctx,
            row_locks,
            executor: self.executor.clone(),
            sequence_calls,
            temp: TempSchema::new(),
            search_path,
            viewer,
            provider_for: Arc::clone(&self.provider_for),
            notices: Notices::default(),
            transaction_ids,
        }
    }

    /// The session state a statement plans and runs with, at `read_point`.
    pub(crate) fn statement_state(&self, read_point: ReadPoint) -> SessionState {
        let mut state = self.ctx.state();
        state.config_mut().set_extension(Arc::new(read_point));
        state
    }

    /// Plans a statement (built by pmdb itself) at `read_point` and gives its batches.
    pub(crate) async fn plan_and_collect(
        &self,
        statement: DfStatement,
        read_point: &ReadPoint,
    ) -> Result<Vec<RecordBatch>> {
        let state = self.statement_state(read_point.clone());
        let plan = crate::select_names::plan_unnamed(&state, statement).await?;
        self.collect(DataFrame::new(state, plan)).await
    }

    /// Runs `f` on a blocking thread: DDL and ANALYZE take table locks by blocking and
    /// read or write whole tables, which an async executor's thread must not wait for.
    /// The transaction of the catalog's changes is kept until `f` returns, even if the
    /// statement is cancelled meanwhile: its end then puts the catalog back after `f`'s
    /// changes, not among them.
    pub(crate) async fn off_executor<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Catalog) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let catalog = Arc::clone(&self.catalog);
        let changes = catalog.ddl_transaction();
        tokio::task::spawn_blocking(move || {
            let _changes = changes;
            f(&catalog)
        })
        .await
        .map_err(|e| SqlError::Query(format!("a catalog task failed: {e}")))?
    }

    /// Executes `frame` on the engine's runtime, whose threads run its partitions in
    /// parallel whatever runtime the caller is on (a server connection has a
    /// single-threaded one of its own); dropping the future stops the execution.
    pub(crate) async fn collect(&self, frame: DataFrame) -> Result<Vec<RecordBatch>> {
        self.on_executor(frame.collect()).await
    }

    /// Executes `plan`, which [`crate::optimized_plan`] optimized already, as
    /// [`Session::collect`] does, without optimizing it again.
    pub(crate) async fn collect_optimized(
        &self,
        state: SessionState,
        plan: LogicalPlan,
    ) -> Result<Vec<RecordBatch>> {
        self.on_executor(async move {
            let planner = Arc::clone(state.query_planner());
            let physical = planner.create_physical_plan(&plan, &state).await?;
            datafusion::physical_plan::collect(physical, state.task_ctx()).await
        })
        .await
    }

    async fn on_executor(
        &self,
        work: impl Future<Output = DfResult<Vec<RecordBatch>>> + Send + 'static,
    ) -> Result<Vec<RecordBatch>> {
        let task = AbortOnDropHandle::new(self.executor.spawn(work));
        match task.await {
            Ok(batches) => batches.map_err(df_error),
            Err(e) => Err(SqlError::Query(format!(
                "the query's execution failed: {e}"
            ))),
        }
    }
}

/// Splits `sql` into statements: PostgreSQL's grammar first (it knows COPY FROM), then
/// with `on` / `off` read as booleans where PostgreSQL takes them in COPY options
/// (`FREEZE ON`, which pgbench sends), then with the locking clauses the parser does not
/// know rewritten ([`crate::lock_clauses::rewrite_clauses`]), then with `FETCH FIRST (…)`
/// read as a LIMIT ([`crate::fetch_clause`]), then with a SELECT of no select list read
/// as one ([`crate::empty_select`]), then DataFusion's own grammar (COPY TO, CREATE
/// EXTERNAL TABLE) for what both refuse. A WITH clause before INSERT, UPDATE or DELETE
/// is then given to the statement ([`crate::dml_with`]). A statement nested too deep to
/// parse safely is refused first ([`crate::statement_depth`]).
pub fn parse(sql: &str) -> Result<std::collections::VecDeque<DfStatement>> {
    crate::statement_depth::check(sql)?;
    let mut parsed = parse_forms(sql)?;
    for statement in &mut parsed {
        if let DfStatement::Statement(s) = statement {
            crate::dml_with::unwrap(s)?;
        }
    }
    Ok(parsed)
}

fn parse_forms(sql: &str) -> Result<std::collections::VecDeque<DfStatement>> {
    let statements = |s: Vec<datafusion::sql::sqlparser::ast::Statement>| {
        s.into_iter()
            .map(|s| DfStatement::Statement(Box::new(s)))
            .collect()
    };
    let pg = match Parser::parse_sql(&PostgreSqlDialect {}, sql) {
        Ok(s) => return Ok(statements(s)),
        Err(e) => e,
    };
    if let Some(made) = crate::database_options::parse(sql)
        .or_else(|| crate::do_block::parse(sql))
        .or_else(|| crate::domain_syntax::parse(sql))
        .or_else(|| crate::copy_where::parse(sql))
        .or_else(|| crate::extension_ddl::parse(sql))
    {
        return made.map(statements);
    }
    if let Some(s) = with_boolean_options(sql)
        .or_else(|| vacuum(sql))
        .or_else(|| crate::cursors::parse_move(sql))
        .or_else(|| crate::cursors::parse_declare(sql))
        .or_else(|| crate::set_constraints::parse(sql))
        .or_else(|| crate::comments::parse(sql))
        .or_else(|| crate::refresh::parse(sql))
        .or_else(|| crate::lock_clauses::rewrite_clauses(sql))
        .or_else(|| crate::lock_clauses::without_tables(sql))
        .or_else(|| crate::fetch_clause::rewrite_parenthesized(sql))
        .or_else(|| crate::window_frames::parenthesize_cast_offsets(sql))
        .or_else(|| crate::empty_select::parse(sql))
        .or_else(|| crate::sequence_syntax::parse(sql))
        .or_else(|| crate::sequence_syntax::identity_options_in_order(sql))
    {
        return Ok(statements(s));
    }
    if let Some(parts) = split_statements(sql) {
        let mut all = std::collections::VecDeque::new();
        for part in parts {
            all.extend(parse_forms(&part)?);
        }
        return Ok(all);
    }
    DFParser::parse_sql_with_dialect(sql, &PostgreSqlDialect {})
        .map_err(|_| SqlError::user(state::SYNTAX, pg.to_string()))
}

/// The statements of `sql` as texts, split at the semicolons between them (never
/// inside a string or a quoted name); `None` for one statement: each of several may
/// need a different one of the forms [`parse`] tries.
fn split_statements(sql: &str) -> Option<Vec<String>> {
    use datafusion::sql::sqlparser::tokenizer::Token;
    let tokens = crate::tokens::located(sql)?;
    let mut parts = Vec::new();
    let mut from = 0;
    for t in tokens.iter().filter(|t| t.token == Token::SemiColon) {
        let at = t.bytes.start;
        parts.push(sql.get(from..at)?.to_owned());
        from = at + 1;
    }
    parts.push(sql.get(from..)?.to_owned());
    parts.retain(|p| !p.trim().is_empty());
    (parts.len() > 1).then_some(parts)
}

/// PostgreSQL's `VACUUM [options] [tables]`, which the parser knows only in another
/// dialect's form: one VACUUM, whose options and tables do not matter to pmdb (it
/// reclaims space by its own merges and compactions).
fn vacuum(sql: &str) -> Option<Vec<datafusion::sql::sqlparser::ast::Statement>> {
    use datafusion::sql::sqlparser::ast::{Statement, VacuumStatement};
    let first = sql.split_whitespace().next()?;
    if !first.eq_ignore_ascii_case("vacuum") || sql.trim_end().trim_end_matches(';').contains(';') {
        return None;
    }
    Some(vec![Statement::Vacuum(VacuumStatement {
        full: false,
        sort_only: false,
        delete_only: false,
        reindex: false,
        recluster: false,
        table_name: None,
        threshold: None,
        boost: false,
    })])
}

/// `sql` parsed with `ON` / `OFF` after `FREEZE` or `HEADER` taken as TRUE / FALSE.
fn with_boolean_options(sql: &str) -> Option<Vec<datafusion::sql::sqlparser::ast::Statement>> {
    use datafusion::sql::sqlparser::keywords::Keyword;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = PostgreSqlDialect {};
    let mut tokens = Tokenizer::new(&dialect, sql).tokenize().ok()?;
    let mut option = false;
    let mut changed = false;
    for t in &mut tokens {
        let keyword = match t {
            Token::Word(w) => w.keyword,
            Token::Whitespace(_) => continue,
            _ => {
                option = false;
                continue;
            }
        };
        if option && matches!(keyword, Keyword::ON | Keyword::OFF) {
            let value = if keyword == Keyword::ON {
                "TRUE"
            } else {
                "FALSE"
            };
            *t = Token::make_keyword(value);
            changed = true;
        }
        option = matches!(keyword, Keyword::FREEZE | Keyword::HEADER);
    }
    if !changed {
        return None;
    }
    Parser::new(&dialect)
        .with_tokens(tokens)
        .parse_statements()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Statements of one text are parsed each in the form it needs: a SET CONSTRAINTS
    /// (which the grammar lacks) after an ALTER TABLE, as Django sends them.
    #[test]
    fn statements_of_one_text_are_parsed_one_by_one() {
        let sql = "ALTER TABLE t ADD COLUMN c INT DEFAULT 1;\n SET CONSTRAINTS \"a;b\" \
                   IMMEDIATE; SELECT 'it''s; é', $$x;y$$ -- a comment; here\n";
        let parsed = parse(sql).unwrap();
        assert_eq!(parsed.len(), 3);
        // Each part is the text as written, strings and comments included.
        let parts = split_statements(sql).unwrap();
        assert_eq!(parts[2], " SELECT 'it''s; é', $$x;y$$ -- a comment; here\n");
        assert!(parse("SELECT 1; SELECT 1 +").is_err());
        assert_eq!(split_statements("SELECT 1"), None);
    }
}
