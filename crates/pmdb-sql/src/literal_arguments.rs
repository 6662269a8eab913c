//! Function arguments that are casts of literals, folded into literals right after
//! DataFusion coerces types. Some functions type their result by a literal argument
//! (`round(numeric, 2)` has scale 2), but coercion wraps the literal in a cast
//! (`round(x, CAST(Int64(2) AS Int32))`), so the plan was typed as if the places were
//! unknown while execution, which sees the folded literal, returned the narrower type:
//! every `round` of a decimal to a given number of places failed.

use std::sync::Arc;

use datafusion::common::Result as DfResult;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::logical_expr::expr::{Cast, ScalarFunction};
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionContext;

/// Registers the analyzer rule in `ctx`.
pub(crate) fn register(ctx: &SessionContext) {
    ctx.add_analyzer_rule(Arc::new(LiteralArguments));
}

#[derive(Debug)]
struct LiteralArguments;

impl AnalyzerRule for LiteralArguments {
    fn name(&self) -> &str {
        "pmdb_literal_arguments"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        crate::expr_rewrite::rewrite_expressions(plan, |e, _| {
            let Expr::ScalarFunction(ScalarFunction { func, args }) = e else {
                return Ok(Transformed::no(e));
            };
            let mut folded = false;
            let args = args
                .into_iter()
                .map(|a| match a {
                    Expr::Cast(Cast { expr, field }) => match *expr {
                        // A cast that fails is left to fail where it would have.
                        Expr::Literal(v, meta) => match v.cast_to(field.data_type()) {
                            Ok(v) => {
                                folded = true;
                                Expr::Literal(v, meta)
                            }
                            Err(_) => Expr::Cast(Cast {
                                expr: Box::new(Expr::Literal(v, meta)),
                                field,
                            }),
                        },
                        other => Expr::Cast(Cast {
                            expr: Box::new(other),
                            field,
                        }),
                    },
                    other => other,
                })
                .collect();
            let e = Expr::ScalarFunction(ScalarFunction { func, args });
            Ok(if folded {
                Transformed::yes(e)
            } else {
                Transformed::no(e)
            })
        })
    }
}
