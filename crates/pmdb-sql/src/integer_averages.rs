//! An average of integers is a NUMERIC, as in PostgreSQL; DataFusion's is a double,
//! which a driver then decodes as a float, and which holds a bigint's average to 15
//! digits or so. The argument of an `avg` over an integer is made a NUMERIC without a
//! precision before DataFusion coerces types: after it, `avg(a)` and `avg(a::float8)`
//! look alike. The analyzer may run again over its own output, which stays as it is.

use std::sync::LazyLock;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::{DFSchema, Result as DfResult};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

use crate::types::SqlType;

/// The type integers are averaged in: pmdb's NUMERIC without a precision (DataFusion's
/// `avg` adds 4 places to it, as `/` does to a quotient).
static INTEGER_AVG: LazyLock<DataType> =
    LazyLock::new(|| crate::arrow_conv::arrow_type(SqlType::UNCONSTRAINED_NUMERIC));

/// Runs before DataFusion's type coercion.
#[derive(Debug)]
pub(crate) struct IntegerAverages;

impl AnalyzerRule for IntegerAverages {
    fn name(&self) -> &str {
        "pmdb_integer_averages"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        crate::expr_rewrite::rewrite_expressions(plan, |e, schema| {
            Ok(crate::expr_rewrite::cast_aggregate_arguments(
                e,
                "avg",
                |args| of_integer(schema, args),
                &INTEGER_AVG,
            ))
        })
    }
}

/// Whether `args` are one integer.
fn of_integer(schema: &DFSchema, args: &[Expr]) -> bool {
    matches!(args, [arg] if matches!(
        arg.get_type(schema),
        Ok(DataType::Int16 | DataType::Int32 | DataType::Int64)
    ))
}
