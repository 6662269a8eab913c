//! PostgreSQL folds a statement's constant expressions when it plans it, so an error in
//! one (`1 / 0`, `'x'::int`) fails the statement even when no row ever reaches it.
//! DataFusion's simplifier leaves such an expression unfolded instead, to fail only if a
//! row evaluates it. This optimizer rule, run after DataFusion's own, evaluates each
//! constant expression left in the plan, whole (so a CASE still chooses its branch
//! first), and fails the statement with the first error. Only expressions of operators,
//! casts and immutable functions count: a volatile or stable function (`nextval`, `now`)
//! is never called at plan time.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::array::RecordBatchOptions;
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result};
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, LogicalPlan, Volatility};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};
use datafusion::physical_expr::create_physical_expr;

#[derive(Debug)]
pub(crate) struct ConstantErrors;

impl OptimizerRule for ConstantErrors {
    fn name(&self) -> &str {
        "pmdb_constant_errors"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let mut props = ExecutionProps::new();
        props.config_options = Some(config.options());
        plan.apply_expressions(|e| {
            e.apply(|sub| {
                if matches!(sub, Expr::Literal(..)) || !constant(sub) {
                    return Ok(TreeNodeRecursion::Continue);
                }
                evaluate(sub, &props)?;
                Ok(TreeNodeRecursion::Jump)
            })
        })?;
        Ok(Transformed::no(plan))
    }
}

/// Whether `e` reads nothing but constants through operators, casts and immutable
/// functions.
fn constant(e: &Expr) -> bool {
    let mut only = true;
    let _ = e.apply(|sub| {
        only &= match sub {
            Expr::Literal(..)
            | Expr::Alias(..)
            | Expr::BinaryExpr(_)
            | Expr::Not(_)
            | Expr::IsNotNull(_)
            | Expr::IsNull(_)
            | Expr::IsTrue(_)
            | Expr::IsFalse(_)
            | Expr::IsUnknown(_)
            | Expr::IsNotTrue(_)
            | Expr::IsNotFalse(_)
            | Expr::IsNotUnknown(_)
            | Expr::Negative(_)
            | Expr::Between(_)
            | Expr::Like(_)
            | Expr::Case(_)
            | Expr::InList(_) => true,
            Expr::Cast(c) => !matches!(c.field.data_type(), DataType::Struct(_)),
            Expr::TryCast(c) => !matches!(c.field.data_type(), DataType::Struct(_)),
            Expr::ScalarFunction(f) => f.func.signature().volatility == Volatility::Immutable,
            _ => false,
        };
        Ok(if only {
            TreeNodeRecursion::Continue
        } else {
            TreeNodeRecursion::Stop
        })
    });
    only
}

/// Evaluates the constant `e` on one row of nothing: its error, if it has one.
fn evaluate(e: &Expr, props: &ExecutionProps) -> Result<()> {
    let schema = Arc::new(Schema::empty());
    let context = PhysicalPlanningContext::default();
    let Ok(physical) = create_physical_expr(e, &DFSchema::empty(), props, &context) else {
        // Not ours to judge: planning it is DataFusion's.
        return Ok(());
    };
    let row = RecordBatch::try_new_with_options(
        schema,
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    physical.evaluate(&row).map(drop)
}
