//! Prepared queries optimized once. DataFusion's analyzer and optimizer cost a prepared
//! query more than reading its rows does, and their work does not depend on the
//! parameters: they run at Parse over the plan with its `$n` placeholders, and each
//! execution only fills the values in, simplifies the expressions they reach (so that a
//! scan narrows its key range on `id >= 5`, not on an unfolded cast of 5) and makes the
//! physical plan, where the statistics of the moment choose joins.
//!
//! Not optimized ahead: a plan calling a function that is not immutable (`now()`,
//! `nextval`, `random()`), whose value the optimizer may fold into a constant at the time
//! it runs; a plan with a parameter whose type planning left open, or an array, whose
//! comparisons (`= ANY($1)`, `<> ALL($1)`) are planned by what it holds; EXPLAIN, which
//! shows the optimizer's work.

use std::sync::Arc;

use datafusion::arrow::datatypes::FieldRef;
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{Expr, LogicalPlan, Volatility};
use datafusion::optimizer::Optimizer;
use datafusion::optimizer::simplify_expressions::SimplifyExpressions;

/// `plan` analyzed and optimized with its placeholders in it, if it may be run so.
pub(crate) fn ahead(
    state: &SessionState,
    plan: &LogicalPlan,
    parameters: &[Option<FieldRef>],
) -> Option<LogicalPlan> {
    let optimizable = !matches!(
        plan,
        LogicalPlan::Explain(_)
            | LogicalPlan::Analyze(_)
            | LogicalPlan::Statement(_)
            | LogicalPlan::Ddl(_)
            | LogicalPlan::DescribeTable(_)
            | LogicalPlan::Copy(_)
    );
    // An array parameter (`id <> ALL($1)`) is planned by what its value holds.
    let scalar = |p: &Option<FieldRef>| p.as_ref().is_some_and(|f| !f.data_type().is_nested());
    if !optimizable || !parameters.iter().all(scalar) || calls_unstable(plan) {
        return None;
    }
    state.optimize(plan).ok()
}

/// `optimized` with `params` in place of its placeholders and the expressions simplified
/// again; `None` where the values do not fit (the caller then plans the statement
/// afresh, which reports why).
pub(crate) fn bind(
    state: &SessionState,
    optimized: &LogicalPlan,
    params: Vec<ScalarValue>,
) -> Option<LogicalPlan> {
    let bound = optimized.clone().with_param_values(params).ok()?;
    let simplify = Optimizer::with_rules(vec![Arc::new(SimplifyExpressions::new())]);
    simplify.optimize(bound, state, |_, _| {}).ok()
}

/// Whether `plan` (its subqueries included) calls a scalar function that is not
/// immutable.
fn calls_unstable(plan: &LogicalPlan) -> bool {
    let mut found = false;
    let walked = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::ScalarFunction(f) = e
                    && f.func.signature().volatility != Volatility::Immutable
                {
                    found = true;
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    // A plan that cannot be walked is not optimized ahead.
    found || walked.is_err()
}

#[cfg(test)]
mod tests {
    use datafusion::physical_plan::displayable;
    use pmdb_engine::{Db, DbOptions};

    use crate::engine::SqlEngine;
    use crate::output::Output;
    use crate::prepared::Plan;
    use crate::read_point::ReadPoint;

    use super::*;

    fn rows(out: Output) -> Vec<String> {
        match out {
            Output::Rows { batches, .. } => {
                let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                    .unwrap()
                    .to_string();
                text.lines().map(str::to_owned).collect()
            }
            other => panic!("expected rows, got {other:?}"),
        }
    }

    #[test]
    fn a_query_optimized_at_parse_narrows_and_answers_as_planned_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
        engine
            .execute("CREATE TABLE t (id INT PRIMARY KEY, n BIGINT, c TEXT)")
            .unwrap();
        engine
            .execute(
                "INSERT INTO t SELECT v, v % 7, 'c' || (v % 5) FROM generate_series(1, 300) AS g(v)",
            )
            .unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mut session = engine.session();
        // Shapes the fast path does not take (an expression, a filter beside the key's).
        let queries = [
            "SELECT sum(n * 2) FROM t WHERE id BETWEEN $1 AND $2",
            "SELECT c, n + 1 FROM t WHERE id BETWEEN $1 AND $2 ORDER BY c, id",
            "SELECT DISTINCT c FROM t WHERE id >= $1 AND id <= $2 AND n >= 0 ORDER BY c",
            "SELECT id, n FROM t WHERE id > $1 AND n = $2 - 1 ORDER BY id LIMIT 3",
        ];
        for sql in queries {
            let statement = crate::session::parse(sql).unwrap().pop_front().unwrap();
            let prepared = rt.block_on(session.prepare(statement)).unwrap();
            let Plan::Logical {
                optimized: Some(optimized),
                ..
            } = &prepared.plan
            else {
                panic!("{sql}: not optimized at parse: {:?}", prepared.plan);
            };
            // The key range comes from the values bound at execution.
            let mut state = engine.context().state();
            state
                .config_mut()
                .set_extension(Arc::new(ReadPoint::new(engine.db())));
            let params = vec![ScalarValue::Int32(Some(10)), ScalarValue::Int32(Some(40))];
            let bound = bind(&state, optimized, prepared.typed(params).unwrap());
            let physical = rt
                .block_on(
                    state
                        .query_planner()
                        .create_physical_plan(&bound.unwrap(), &state),
                )
                .unwrap();
            let shown = displayable(physical.as_ref()).indent(false).to_string();
            assert!(shown.contains("1 range(s)"), "{sql}: {shown}");
            for (a, b) in [(1, 40), (250, 310), (40, 1), (-5, 3), (17, 17)] {
                let params = if sql.contains("$2 - 1") {
                    vec![
                        ScalarValue::Int32(Some(a)),
                        ScalarValue::Int64(Some(i64::from(b % 7))),
                    ]
                } else {
                    vec![ScalarValue::Int32(Some(a)), ScalarValue::Int32(Some(b))]
                };
                let kept = rt
                    .block_on(session.run_prepared(&prepared, params.clone()))
                    .unwrap();
                let literal = sql
                    .replace("$1", &params[0].to_string())
                    .replace("$2", &params[1].to_string());
                let afresh = rt.block_on(session.execute(&literal)).unwrap().remove(0);
                assert_eq!(rows(kept), rows(afresh), "{sql} with {params:?}");
            }
        }
    }

    #[test]
    fn a_query_calling_a_function_that_is_not_immutable_is_optimized_at_each_run() {
        let dir = tempfile::tempdir().unwrap();
        let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mut session = engine.session();
        let statement = crate::session::parse("SELECT now()")
            .unwrap()
            .pop_front()
            .unwrap();
        let prepared = rt.block_on(session.prepare(statement)).unwrap();
        let first = rt
            .block_on(session.run_prepared(&prepared, vec![]))
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let second = rt
            .block_on(session.run_prepared(&prepared, vec![]))
            .unwrap();
        assert_ne!(rows(first), rows(second));
        assert!(
            matches!(
                prepared.plan,
                Plan::Logical {
                    optimized: None,
                    ..
                }
            ),
            "{:?}",
            prepared.plan
        );
    }
}
