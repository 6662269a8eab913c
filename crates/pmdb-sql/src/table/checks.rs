//! CHECK constraints as a table's writer evaluates them: each expression planned once,
//! when the table's handle is made, into a DataFusion physical expression over the
//! row's columns, then run on each row written (false refuses it with 23514; true and
//! NULL pass, as in PostgreSQL).

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::physical_plan::PhysicalExpr;
use datafusion::prelude::SessionContext;

use super::Table;
use crate::arrow_conv::{arrays_of, arrow_schema};
use crate::error::{Result, SqlError, df_error, state};
use crate::large_rows::Committed;
use crate::schema::TableDef;
use crate::types::{SqlType, Value};

/// A CHECK constraint, planned.
pub(crate) struct Check {
    name: String,
    expr: Arc<dyn PhysicalExpr>,
}

/// The checks of a table: planned over the schema of its rows.
pub(crate) struct Checks {
    schema: SchemaRef,
    checks: Vec<Check>,
}

/// Plans `text`, a CHECK expression, over the columns of `def`: it must name only
/// them and give a boolean (42804).
fn plan(def: &TableDef, schema: &SchemaRef, text: &str) -> Result<Arc<dyn PhysicalExpr>> {
    let df_schema = DFSchema::try_from(schema.as_ref().clone()).map_err(df_error)?;
    let ctx = SessionContext::new();
    let expr = ctx.parse_sql_expr(text, &df_schema).map_err(df_error)?;
    let physical = ctx
        .create_physical_expr(expr, &df_schema)
        .map_err(df_error)?;
    let ty = physical.data_type(schema).map_err(df_error)?;
    if ty != DataType::Boolean && ty != DataType::Null {
        return Err(SqlError::user(
            state::DATATYPE_MISMATCH,
            format!(
                "argument of CHECK must be type boolean, not type {ty} (table {:?})",
                def.name
            ),
        ));
    }
    Ok(physical)
}

impl Checks {
    /// The checks of `def`, planned.
    pub(crate) fn plan(def: &TableDef) -> Result<Checks> {
        let schema = arrow_schema(def, None);
        let checks = def
            .checks
            .iter()
            .map(|c| {
                Ok(Check {
                    name: c.name.clone(),
                    expr: plan(def, &schema, &c.expr)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Checks { schema, checks })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }
}

impl Table {
    fn check_labels(&self, rows: &[&[Value]]) -> Result<()> {
        for (c, ty) in self.types.iter().enumerate() {
            let SqlType::Enum(id) = *ty else {
                continue;
            };
            let def = crate::enum_type::by_id(&self.enums, id).ok_or_else(|| {
                SqlError::Query(format!(
                    "the type of column {:?} of table {:?} is gone",
                    self.def.columns[c].name, self.def.name
                ))
            })?;
            for row in rows {
                if let Some(Value::Str(label)) = row.get(c)
                    && def.position(label).is_none()
                {
                    return Err(crate::enum_type::invalid_label(&def, label));
                }
            }
        }
        Ok(())
    }

    /// Runs the CHECK constraints on every stored row (committed now), for ALTER TABLE
    /// ADD CHECK: a row that fails check `name` is 23514.
    pub(crate) fn check_stored_rows(&self, name: &str) -> Result<()> {
        const BATCH: usize = 1024;
        let mut scan = self.rows.scan::<[u8]>(..);
        let mut rows = Vec::with_capacity(BATCH);
        loop {
            let next = scan.next_ref();
            let end = next.is_none();
            if let Some(e) = next {
                let e = e?;
                rows.push(self.decode(&Committed, e.key, e.value)?);
            }
            if rows.len() == BATCH || (end && !rows.is_empty()) {
                let refs: Vec<&[Value]> = rows.iter().map(Vec::as_slice).collect();
                self.check_constraints(&refs)
                    .map_err(|e| match e.sqlstate() {
                        state::CHECK_VIOLATION => SqlError::user(
                            state::CHECK_VIOLATION,
                            format!(
                                "check constraint \"{name}\" of relation \"{}\" is violated by \
                             some row",
                                self.def.name
                            ),
                        ),
                        _ => e,
                    })?;
                rows.clear();
            }
            if end {
                return Ok(());
            }
        }
    }

    /// Runs the table's CHECK constraints on `rows`; the first a row fails is 23514.
    /// A value of an enum column that is none of its type's labels is 22P02 first.
    pub(crate) fn check_constraints(&self, rows: &[&[Value]]) -> Result<()> {
        self.check_labels(rows)?;
        let checks = &self.checks;
        if checks.is_empty() || rows.is_empty() {
            return Ok(());
        }
        let batch = RecordBatch::try_new(Arc::clone(&checks.schema), arrays_of(&self.types, rows))
            .map_err(|e| SqlError::Query(e.to_string()))?;
        for check in &checks.checks {
            let result = check
                .expr
                .evaluate(&batch)
                .and_then(|v| v.into_array(batch.num_rows()))
                .map_err(df_error)?;
            if result.data_type() == &DataType::Null {
                continue;
            }
            let passed = result.as_boolean();
            if let Some(i) = (0..passed.len()).find(|&i| passed.is_valid(i) && !passed.value(i)) {
                return Err(SqlError::user(
                    state::CHECK_VIOLATION,
                    format!(
                        "new row for relation \"{}\" violates check constraint \"{}\"",
                        self.def.name, check.name
                    ),
                )
                .with_detail(self.failing_row(rows[i])));
            }
        }
        Ok(())
    }
}
