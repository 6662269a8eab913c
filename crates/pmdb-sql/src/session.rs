//! The state every statement of every client session shares: the database, the catalog
//! and the DataFusion context; a statement's session state at its read point; the
//! parsing of SQL text.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::execution::context::SessionState;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParser, Statement as DfStatement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use pmdb_engine::Db;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, df_error, state};
use crate::read_point::ReadPoint;

pub(crate) struct Session {
    pub db: Db,
    pub catalog: Arc<Catalog>,
    pub ctx: SessionContext,
}

impl Session {
    /// The session state a statement plans and runs with, at `read_point`.
    pub(crate) fn statement_state(&self, read_point: ReadPoint) -> SessionState {
        let mut state = self.ctx.state();
        state.config_mut().set_extension(Arc::new(read_point));
        state
    }

    /// Runs a query (built by pmdb itself) at `read_point` and gives its batches.
    pub(crate) async fn query(
        &self,
        sql: &str,
        read_point: &ReadPoint,
    ) -> Result<Vec<RecordBatch>> {
        let state = self.statement_state(read_point.clone());
        let mut statements = parse(sql)?;
        let statement = statements
            .pop_front()
            .ok_or_else(|| SqlError::Query("no statement".into()))?;
        let plan = state.statement_to_plan(statement).await.map_err(df_error)?;
        DataFrame::new(state, plan)
            .collect()
            .await
            .map_err(df_error)
    }
}

/// Splits `sql` into statements: PostgreSQL's grammar first (it knows COPY FROM), then
/// DataFusion's own (COPY TO, CREATE EXTERNAL TABLE) for what it refuses.
pub fn parse(sql: &str) -> Result<std::collections::VecDeque<DfStatement>> {
    match Parser::parse_sql(&PostgreSqlDialect {}, sql) {
        Ok(statements) => Ok(statements
            .into_iter()
            .map(|s| DfStatement::Statement(Box::new(s)))
            .collect()),
        Err(pg) => DFParser::parse_sql_with_dialect(sql, &PostgreSqlDialect {})
            .map_err(|_| SqlError::user(state::SYNTAX, pg.to_string())),
    }
}
