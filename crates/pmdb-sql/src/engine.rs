//! [`SqlEngine`]: SQL over a pmdb database. It parses each statement, runs pmdb's own
//! DDL, DML rewrites and COPY itself, and hands everything else to DataFusion over the
//! catalog's tables; every statement reads one snapshot.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider};
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement;
use pmdb_engine::Db;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, df_error};
use crate::provider::{PmdbSchema, ScanOptions};
use crate::session::{Session, parse};
use crate::table::TableWriter;
use crate::{ddl, dml};

/// What a statement gives back.
#[derive(Debug)]
pub enum Output {
    /// A result set (possibly empty).
    Rows {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    },
    /// A command's tag, as PostgreSQL reports it ("CREATE TABLE", "INSERT 0 3").
    Command(String),
}

pub struct SqlEngine {
    /// Dropped first: it stops every task a query spawned, and the tables they hold,
    /// before the session lets go of the database.
    runtime: tokio::runtime::Runtime,
    session: Session,
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
        // pmdb's string columns are Utf8; keep SQL's string types the same.
        config.options_mut().sql_parser.map_string_types_to_utf8view = false;
        let ctx = SessionContext::new_with_config(config);
        let cat = MemoryCatalogProvider::new();
        cat.register_schema("public", Arc::new(PmdbSchema::new(Arc::clone(&catalog))))
            .map_err(df_error)?;
        ctx.register_catalog("pmdb", Arc::new(cat));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("pmdb-sql")
            .build()
            .map_err(|e| SqlError::Query(format!("cannot start the SQL runtime: {e}")))?;
        Ok(SqlEngine {
            session: Session { db, catalog, ctx },
            runtime,
        })
    }

    pub fn db(&self) -> &Db {
        &self.session.db
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.session.catalog
    }

    /// Sets how scans read from here on: the columnar segments on or off, and the
    /// prefetcher their scans hand chunks to.
    pub fn set_scan_options(&self, options: ScanOptions) {
        self.session
            .ctx
            .state_ref()
            .write()
            .config_mut()
            .set_extension(Arc::new(options));
    }

    /// The DataFusion context the engine plans with (its tables are pmdb's).
    pub fn context(&self) -> &SessionContext {
        &self.session.ctx
    }

    /// Runs every statement of `sql` in order; stops at the first error, after which
    /// the statements before it stay done.
    pub fn execute(&self, sql: &str) -> Result<Vec<Output>> {
        let statements = parse(sql)?;
        let mut out = Vec::with_capacity(statements.len());
        for s in statements {
            out.push(self.run(s)?);
        }
        Ok(out)
    }

    /// Runs one statement of those [`parse`] gives.
    pub fn run(&self, statement: DfStatement) -> Result<Output> {
        self.runtime.block_on(self.run_async(statement))
    }

    async fn run_async(&self, statement: DfStatement) -> Result<Output> {
        if let DfStatement::Statement(s) = &statement {
            match s.as_ref() {
                Statement::CreateTable(create) => {
                    let def = ddl::table_def(create)?;
                    self.session
                        .catalog
                        .create_table(def, create.if_not_exists)?;
                    return Ok(Output::Command("CREATE TABLE".into()));
                }
                Statement::CreateIndex(create) => {
                    ddl::create_index(&self.session.catalog, create)?;
                    return Ok(Output::Command("CREATE INDEX".into()));
                }
                Statement::Drop {
                    object_type,
                    if_exists,
                    names,
                    ..
                } => {
                    let tag = ddl::drop(&self.session.catalog, object_type, names, *if_exists)?;
                    return Ok(Output::Command(tag.into()));
                }
                Statement::Delete(delete) => {
                    let n = dml::delete(&self.session, delete).await?;
                    return Ok(Output::Command(format!("DELETE {n}")));
                }
                Statement::Update(update) => {
                    let n = dml::update(&self.session, update).await?;
                    return Ok(Output::Command(format!("UPDATE {n}")));
                }
                Statement::Copy { to: false, .. } => {
                    let n = dml::copy_from(&self.session, s).await?;
                    return Ok(Output::Command(format!("COPY {n}")));
                }
                Statement::Analyze(analyze) => {
                    let tables = match &analyze.table_name {
                        Some(name) => vec![crate::ddl::object_name(name)?],
                        None => self
                            .session
                            .catalog
                            .tables()
                            .iter()
                            .map(|t| t.def().name.clone())
                            .collect(),
                    };
                    for name in tables {
                        let (table, _guard) = self.session.catalog.lock_table(&name)?;
                        crate::segments::rebuild(&table)?;
                    }
                    return Ok(Output::Command("ANALYZE".into()));
                }
                Statement::CreateView(_) => {
                    return Err(SqlError::unsupported("CREATE VIEW: use WITH ... SELECT"));
                }
                _ => {}
            }
        }
        let state = self.session.statement_state();
        let plan = state.statement_to_plan(statement).await.map_err(df_error)?;
        let is_insert = matches!(&plan, LogicalPlan::Dml(d) if d.op.name() == "Insert Into");
        let is_command = matches!(&plan, LogicalPlan::Statement(_) | LogicalPlan::Ddl(_));
        let tag = plan.display().to_string();
        let schema = plan.schema().inner().clone();
        let batches = match &plan {
            // Statements that change the session (SET) act on the context itself.
            LogicalPlan::Statement(_) | LogicalPlan::Ddl(_) => self
                .session
                .ctx
                .execute_logical_plan(plan)
                .await
                .map_err(df_error)?
                .collect()
                .await
                .map_err(df_error)?,
            _ => DataFrame::new(state, plan)
                .collect()
                .await
                .map_err(df_error)?,
        };
        if is_insert {
            return Ok(Output::Command(format!("INSERT 0 {}", count_of(&batches))));
        }
        if is_command {
            return Ok(Output::Command(tag));
        }
        Ok(Output::Rows { schema, batches })
    }

    /// Loads record batches into `table` (its columns in order, types that cast to the
    /// columns'), committing every few megabytes; the rows loaded. On an error, the
    /// rows of the commits before it stay.
    pub fn load(
        &self,
        table: &str,
        batches: impl IntoIterator<Item = Result<RecordBatch>>,
    ) -> Result<u64> {
        let (table, _guard) = self.session.catalog.lock_table(table)?;
        let mut writer = TableWriter::for_load(&table)?;
        for batch in batches {
            crate::provider::load_batch(&table, &mut writer, &batch?)?;
        }
        writer.commit()?;
        Ok(writer.rows())
    }
}

/// The rows an INSERT, UPDATE or DELETE plan reports in its one-row count batch.
fn count_of(batches: &[RecordBatch]) -> u64 {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::UInt64Type;
    batches
        .iter()
        .filter(|b| b.num_columns() == 1 && b.num_rows() > 0)
        .filter_map(|b| b.column(0).as_primitive_opt::<UInt64Type>())
        .map(|a| a.values().iter().sum::<u64>())
        .sum()
}
