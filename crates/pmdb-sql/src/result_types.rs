//! A query's result types as its rows will have them. DataFusion types a plan's
//! expressions as they are written until its analyzer coerces them: a CASE has the
//! type of its first branch (`CASE … THEN 0 ELSE 1.5::numeric END` is Int64 until then,
//! Decimal after), a UNION its first input's. The columns a client is told of, and the
//! rows it then decodes, must agree, so a query is analyzed when it is planned.

use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;

use crate::error::{Result, df_error};

/// `plan` with its types coerced, when it is a query (EXPLAIN, DML and commands as
/// they are: they describe no rows of their plan's types).
pub(crate) fn typed(state: &SessionState, plan: LogicalPlan) -> Result<LogicalPlan> {
    match plan {
        LogicalPlan::Explain(_)
        | LogicalPlan::Analyze(_)
        | LogicalPlan::Dml(_)
        | LogicalPlan::Ddl(_)
        | LogicalPlan::Statement(_)
        | LogicalPlan::Copy(_)
        | LogicalPlan::DescribeTable(_)
        | LogicalPlan::Extension(_) => Ok(plan),
        query => state
            .analyzer()
            .execute_and_check(query, state.config_options(), |_, _| {})
            .map_err(df_error),
    }
}
