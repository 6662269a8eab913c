//! A CHECK expression planned: the SQL text of a table's or a domain's constraint made,
//! once, into a DataFusion physical expression over the columns it may name, and run on
//! a batch of values. False refuses a value; true and NULL pass, as in PostgreSQL.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::physical_plan::PhysicalExpr;
use datafusion::prelude::SessionContext;

use crate::error::{Result, SqlError, df_error, state};

/// A CHECK constraint, planned.
#[derive(Clone, Debug)]
pub(crate) struct PlannedCheck {
    pub name: String,
    expr: Arc<dyn PhysicalExpr>,
}

impl PlannedCheck {
    /// Plans `text` over `schema`: it must name only its columns and give a boolean
    /// (42804, naming `owner`, "table \"t\"" or "domain d").
    pub(crate) fn plan(
        name: &str,
        schema: &SchemaRef,
        text: &str,
        owner: &str,
    ) -> Result<PlannedCheck> {
        let df_schema = DFSchema::try_from(schema.as_ref().clone()).map_err(df_error)?;
        let ctx = SessionContext::new();
        let expr = ctx.parse_sql_expr(text, &df_schema).map_err(df_error)?;
        let expr = ctx
            .create_physical_expr(expr, &df_schema)
            .map_err(df_error)?;
        let ty = expr.data_type(schema).map_err(df_error)?;
        if ty != DataType::Boolean && ty != DataType::Null {
            return Err(SqlError::user(
                state::DATATYPE_MISMATCH,
                format!("argument of CHECK must be type boolean, not type {ty} ({owner})"),
            ));
        }
        Ok(PlannedCheck {
            name: name.to_owned(),
            expr,
        })
    }

    /// The first row of `batch` the check refuses.
    pub(crate) fn first_refused(&self, batch: &RecordBatch) -> Result<Option<usize>> {
        let result = self
            .expr
            .evaluate(batch)
            .and_then(|v| v.into_array(batch.num_rows()))
            .map_err(df_error)?;
        if result.data_type() == &DataType::Null {
            return Ok(None);
        }
        let passed = result.as_boolean();
        Ok((0..passed.len()).find(|&i| passed.is_valid(i) && !passed.value(i)))
    }
}
