//! The walk pmdb's analyzer rules share: every expression of a plan and of its
//! subqueries rewritten bottom-up against the schema its node reads, each keeping its
//! name. A node keeps the schema it was made with until asked to work it out anew, so
//! one whose expressions changed, and every node visited after it (its parents among
//! them: children come first), works it out again.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::{Cast, WindowFunctionDefinition};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, LogicalPlan};

/// `plan` with each expression `e` of its nodes (innermost first) replaced as
/// `rewrite(e, schema its node reads)` says.
pub(crate) fn rewrite_expressions(
    plan: LogicalPlan,
    mut rewrite: impl FnMut(Expr, &DFSchema) -> DfResult<Transformed<Expr>>,
) -> DfResult<LogicalPlan> {
    rewrite_whole_expressions(plan, |e, schema, _| e.transform_up(|e| rewrite(e, schema)))
}

/// The kind of node an expression is of, where a rewrite depends on it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Node {
    /// A column a projection gives.
    Projection,
    /// A value of a VALUES list, whose node keeps the types it was planned with.
    Values,
    Other,
}

/// `plan` with each whole expression of each node replaced as `rewrite(e, schema the
/// node reads, the kind of node)` says.
pub(crate) fn rewrite_whole_expressions(
    plan: LogicalPlan,
    mut rewrite: impl FnMut(Expr, &DFSchema, Node) -> DfResult<Transformed<Expr>>,
) -> DfResult<LogicalPlan> {
    let mut changed_before = false;
    plan.transform_up_with_subqueries(|node| {
        let mut schema = DFSchema::empty();
        for input in node.inputs() {
            schema.merge(input.schema());
        }
        let names = NamePreserver::new(&node);
        let kind = match node {
            LogicalPlan::Projection(_) => Node::Projection,
            LogicalPlan::Values(_) => Node::Values,
            _ => Node::Other,
        };
        let changed = node.map_expressions(|e| {
            let name = names.save(&e);
            Ok(rewrite(e, &schema, kind)?.update_data(|e| name.restore(e)))
        })?;
        changed_before |= changed.transformed;
        if changed_before {
            changed.map_data(LogicalPlan::recompute_schema)
        } else {
            Ok(changed)
        }
    })
    .map(|t| t.data)
}

/// `e` with the arguments of a call of the aggregate `name`, as an aggregate or as a
/// window, cast to `to` where `applies(arguments)`; any other expression as it is.
pub(crate) fn cast_aggregate_arguments(
    e: Expr,
    name: &str,
    applies: impl Fn(&[Expr]) -> bool,
    to: &DataType,
) -> Transformed<Expr> {
    let cast_all = |args: &mut Vec<Expr>| {
        for arg in args {
            let inner = std::mem::replace(arg, Expr::Literal(ScalarValue::Null, None));
            *arg = Expr::Cast(Cast::new(Box::new(inner), to.clone()));
        }
    };
    match e {
        Expr::AggregateFunction(mut f) if f.func.name() == name && applies(&f.params.args) => {
            cast_all(&mut f.params.args);
            Transformed::yes(Expr::AggregateFunction(f))
        }
        Expr::WindowFunction(mut w)
            if matches!(&w.fun, WindowFunctionDefinition::AggregateUDF(f) if f.name() == name)
                && applies(&w.params.args) =>
        {
            cast_all(&mut w.params.args);
            Transformed::yes(Expr::WindowFunction(w))
        }
        other => Transformed::no(other),
    }
}
