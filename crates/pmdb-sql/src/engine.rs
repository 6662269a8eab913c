//! [`SqlEngine`]: SQL over a pmdb database. It holds what every client session shares
//! (the database, the catalog, the DataFusion context each session's own is copied
//! from), hands out sessions
//! ([`SqlSession`]), and runs statements in a session of its own on a runtime of its own
//! for synchronous callers (the shell, the benchmarks, tests).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::execution::SessionStateBuilder;
use datafusion::optimizer::{Analyzer, AnalyzerRule};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::Statement as DfStatement;
use parking_lot::Mutex;
use pmdb_engine::Db;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, df_error};
use crate::output::Output;
use crate::provider::{PmdbCatalog, ScanOptions};
use crate::read_point::ReadPoint;
use crate::row_locks::ClientLocks;
use crate::session::Session;
use crate::sql_session::SqlSession;
use crate::table::TableWriter;

/// Opens client sessions on one database (see [`SqlEngine::sessions`]).
#[derive(Clone)]
pub struct Sessions(Arc<Session>);

impl Sessions {
    pub fn open(&self) -> SqlSession {
        SqlSession::new(&self.0)
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.0.catalog
    }

    /// The DataFusion context every session opened from here on copies, for functions
    /// a server adds.
    pub fn context(&self) -> &SessionContext {
        &self.0.ctx
    }

    /// Adds a schema beside `public` (a server's `pg_catalog`), for every session.
    pub fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn datafusion::catalog::SchemaProvider>,
    ) -> datafusion::common::Result<()> {
        let catalog = self.0.ctx.catalog("pmdb").ok_or_else(|| {
            datafusion::error::DataFusionError::Internal("no pmdb catalog".into())
        })?;
        catalog.register_schema(name, schema)?;
        Ok(())
    }
}

pub struct SqlEngine {
    /// Dropped first: it stops every task a query spawned, and the tables they hold,
    /// before the session lets go of the database.
    runtime: tokio::runtime::Runtime,
    /// The session [`SqlEngine::execute`] runs in.
    own: Mutex<SqlSession>,
    session: Arc<Session>,
}

impl SqlEngine {
    /// SQL over `db`: loads the catalog (a damaged entry is an error naming it).
    pub fn open(db: Db) -> Result<SqlEngine> {
        let catalog = Arc::new(Catalog::open(&db)?);
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut config = SessionConfig::new()
            .with_default_catalog_and_schema("pmdb", "public")
            .with_create_default_catalog_and_schema(false)
            .with_information_schema(true)
            .with_target_partitions(threads);
        // INSERTs DataFusion plans take their claims on unique keys with these.
        let row_locks = Arc::new(ClientLocks::new(Arc::default()));
        config = config.with_extension(Arc::clone(&row_locks));
        // now() and current_timestamp are TIMESTAMPTZ, as in PostgreSQL (shown in UTC).
        config.options_mut().execution.time_zone = Some(crate::arrow_conv::UTC.into());
        // A scan estimated to give fewer rows than a batch (a key range, a small table)
        // runs in one partition: spreading a few rows over threads costs more than
        // reading them.
        config
            .options_mut()
            .execution
            .use_row_number_estimates_to_optimize_partitioning = true;
        // A hash join hands its build side's keys to the probe side's scan as an IN
        // list, which the scan reads by key (see crate::scan_exec): as many as one
        // scan's key narrowing takes.
        config
            .options_mut()
            .optimizer
            .hash_join_inlist_pushdown_max_distinct_values = crate::pushdown::MAX_POINTS;
        // pmdb's string columns are Utf8; keep SQL's string types the same.
        config.options_mut().sql_parser.map_string_types_to_utf8view = false;
        // A number with a fraction is a numeric, exact (see crate::numeric_literals).
        config.options_mut().sql_parser.parse_float_as_decimal = true;
        // Subqueries DataFusion leaves in a plan run per row (see crate::subplans).
        // Interval operands are read, and times made microseconds, before DataFusion
        // coerces types (crate::interval_ops, crate::time_of_day).
        let mut analyzer_rules: Vec<Arc<dyn AnalyzerRule + Send + Sync>> = vec![
            Arc::new(crate::enum_order::EnumOrder {
                catalog: Arc::clone(&catalog),
            }),
            Arc::new(crate::interval_ops::IntervalOperators),
            Arc::new(crate::time_of_day::MicrosecondTimes),
        ];
        analyzer_rules.push(Arc::new(crate::integer_literals::IntegerLiterals));
        analyzer_rules.push(Arc::new(crate::integer_averages::IntegerAverages));
        analyzer_rules.extend(Analyzer::new().rules);
        analyzer_rules.push(Arc::new(crate::decimal_scales::DecimalScales));
        analyzer_rules.push(Arc::new(crate::numeric_places::ExactInput));
        analyzer_rules.push(Arc::new(crate::integer_overflow::IntegerOverflow));
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .with_analyzer_rules(analyzer_rules)
            .with_query_planner(crate::subplans::planner())
            .with_optimizer_rule(Arc::new(crate::constant_errors::ConstantErrors))
            .with_physical_optimizer_rule(Arc::new(crate::join_yield::JoinsYield))
            .build();
        let mut ctx = SessionContext::new_with_state(state);
        let provider = Arc::new(PmdbCatalog::new(Arc::clone(&catalog)));
        ctx.register_catalog("pmdb", Arc::clone(&provider) as _);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("pmdb-sql")
            .thread_stack_size(crate::statement_depth::STATEMENT_STACK)
            // Lock waits limited by lock_timeout may run on it.
            .enable_time()
            .build()
            .map_err(|e| SqlError::Query(format!("cannot start the SQL runtime: {e}")))?;
        let sequence_calls = Arc::default();
        crate::sequence_functions::register(&ctx, &catalog, &sequence_calls);
        let transaction_ids = Arc::new(crate::transaction_ids::TransactionIds::first(&db));
        crate::transaction_ids::register(&ctx, &transaction_ids);
        crate::type_input::register(&ctx);
        crate::enum_values::register(&ctx, &catalog);
        crate::domain_input::register(&ctx, &catalog);
        crate::array_input::register(&ctx, &catalog);
        crate::like_escape::register(&ctx);
        crate::length_casts::register(&ctx);
        crate::make_interval::register(&ctx);
        crate::literal_arguments::register(&ctx);
        crate::scalar_subqueries::register(&ctx);
        crate::branch_types::register(&ctx);
        crate::cast_names::register(&ctx);
        crate::hstore_functions::register(&mut ctx).map_err(df_error)?;
        crate::json_functions::register(&mut ctx).map_err(df_error)?;
        datafusion::execution::FunctionRegistry::register_expr_planner(
            &mut ctx,
            Arc::new(crate::interval_ops::IntervalScaling),
        )
        .map_err(df_error)?;
        crate::setting_functions::register(&ctx);
        crate::sleep_function::register(&ctx);
        crate::quote_functions::register(&ctx);
        crate::date_format::register(&ctx);
        let pid = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        crate::identity::register(&ctx, crate::identity::OWNER, crate::identity::OWNER, pid);
        let catalog_viewer = catalog.new_viewer();
        let session = Arc::new(Session {
            db,
            catalog,
            ctx,
            row_locks,
            executor: runtime.handle().clone(),
            sequence_calls,
            temp: crate::temp_tables::TempSchema::new(),
            search_path: crate::search_path::SearchPath::default(),
            viewer: catalog_viewer,
            provider_for: Arc::new(move |viewer| Arc::new(provider.seen_by(viewer)) as _),
            notices: Default::default(),
            transaction_ids,
        });
        let engine = SqlEngine {
            own: Mutex::new(SqlSession::new(&session)),
            session,
            runtime,
        };
        engine.drop_left_temporary()?;
        Ok(engine)
    }

    /// Drops the temporary relations sessions left behind (a crash, or a session that
    /// ended without closing), schema by schema, as PostgreSQL does at start-up.
    fn drop_left_temporary(&self) -> Result<()> {
        if self.session.db.read_only().is_some() {
            return Ok(());
        }
        for schema in self.session.catalog.schemas() {
            if crate::temp_tables::is_temporary(&schema.name) {
                let name = crate::quote_functions::ident(&schema.name);
                self.execute(&format!("DROP SCHEMA {name} CASCADE"))?;
            }
        }
        Ok(())
    }

    pub fn db(&self) -> &Db {
        &self.session.db
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.session.catalog
    }

    /// Sets how scans read from here on, in the engine's own session and the sessions
    /// opened after: the columnar segments on or off, and the prefetcher their scans
    /// hand chunks to.
    pub fn set_scan_options(&self, options: ScanOptions) {
        let options = Arc::new(options);
        self.session
            .ctx
            .state_ref()
            .write()
            .config_mut()
            .set_extension(Arc::clone(&options));
        self.own.lock().set_extension(options);
    }

    /// The DataFusion context sessions opened from here on copy (its tables are
    /// pmdb's).
    pub fn context(&self) -> &SessionContext {
        &self.session.ctx
    }

    /// A new client session (its own transaction block), for async callers such as
    /// the server: its statements run on the caller's runtime.
    pub fn session(&self) -> SqlSession {
        SqlSession::new(&self.session)
    }

    /// What opens sessions, to hand to a server: it holds the database but not the
    /// engine's runtime, so it may be dropped on an async executor.
    pub fn sessions(&self) -> Sessions {
        Sessions(Arc::clone(&self.session))
    }

    /// Runs every statement of `sql` in order, in the engine's own session; stops at the
    /// first error, after which the statements before it stay done (in autocommit) or the
    /// transaction block has failed.
    pub fn execute(&self, sql: &str) -> Result<Vec<Output>> {
        self.runtime.block_on(self.own.lock().execute(sql))
    }

    /// Runs one statement of those [`parse`] gives, in the engine's own session.
    pub fn run(&self, statement: DfStatement) -> Result<Output> {
        self.runtime.block_on(self.own.lock().run(statement))
    }

    /// Loads record batches into `table` (its columns in order, types that cast to the
    /// columns'), committing every few megabytes; the rows loaded. On an error, the
    /// rows of the commits before it stay.
    pub fn load(
        &self,
        table: &str,
        batches: impl IntoIterator<Item = Result<RecordBatch>>,
    ) -> Result<u64> {
        let (table, _guard) = self
            .session
            .catalog
            .lock_table_for_load(&crate::names::RelName::public(table))?;
        let mut locker = ReadPoint::new(&self.session.db).locker(&self.session.row_locks);
        self.runtime.block_on(async {
            // A claim held by another writer fails the load (55P03): it holds the table.
            let mut writer =
                TableWriter::for_load(&table, self.session.catalog.references(&table)?)?
                    .claiming(&mut locker);
            for batch in batches {
                crate::provider::load_batch(&table, &mut writer, &batch?).await?;
            }
            writer.commit().await?;
            Ok(writer.rows())
        })
    }
}
