//! Whole numbers written in SQL typed as PostgreSQL types them: an `integer` when they
//! fit one, where DataFusion makes every one a bigint. So `SELECT 1`, `a + 1` over an
//! INT column and `CASE … THEN 1 ELSE 0 END` are integers on the wire (node-postgres
//! reads a bigint as a string), and `2147483647 + 1` fails as PostgreSQL's does (see
//! crate::integer_overflow). Before type coercion, a bigint literal that fits 32 bits
//! becomes an integer where its type decides the result's: a column a projection gives,
//! an operand of arithmetic with an integer or a numeric, a branch of a CASE, an argument of
//! COALESCE, NULLIF, GREATEST, LEAST or pg_typeof. Elsewhere (a comparison, another function's
//! argument, LIMIT) it stays as DataFusion plans it; its type decides nothing there
//! PostgreSQL's would not. A VALUES list, and a recursive query throughout, keep the
//! types they were planned with.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::{Alias, Case, ScalarFunction};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};
use datafusion::optimizer::AnalyzerRule;

use crate::expr_rewrite::Node;

#[derive(Debug)]
pub(crate) struct IntegerLiterals;

impl AnalyzerRule for IntegerLiterals {
    fn name(&self) -> &str {
        "pmdb_integer_literals"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        // A recursive query's recursive part reads its working table as typed when the
        // query was planned: its literals keep that type.
        let mut recursive = false;
        plan.apply_with_subqueries(|node| {
            recursive |= matches!(node, LogicalPlan::RecursiveQuery(_));
            Ok(if recursive {
                TreeNodeRecursion::Stop
            } else {
                TreeNodeRecursion::Continue
            })
        })?;
        if recursive {
            return Ok(plan);
        }
        crate::expr_rewrite::rewrite_whole_expressions(plan, |e, schema, node| match node {
            Node::Values => Ok(Transformed::no(e)),
            Node::Projection => e
                .transform_up(|e| Ok(within(e, schema)))?
                .transform_data(|e| Ok(projected_column(e))),
            Node::Other => e.transform_up(|e| Ok(within(e, schema))),
        })
    }
}

/// Makes `e` an integer if it is a bigint literal that fits one; whether it did.
fn narrow(e: &mut Expr) -> bool {
    if let Expr::Literal(value, _) = e
        && let ScalarValue::Int64(Some(v)) = value
        && let Ok(v) = i32::try_from(*v)
    {
        *value = ScalarValue::Int32(Some(v));
        return true;
    }
    false
}

/// Whether `e` is an integer or a numeric: arithmetic between those two takes the
/// integer literal's type.
fn exact(e: &Expr, schema: &DFSchema) -> bool {
    matches!(
        e.get_type(schema),
        Ok(DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Decimal128(..))
    )
}

/// A column of a projection: `1`, `1 AS one`.
fn projected_column(mut e: Expr) -> Transformed<Expr> {
    let changed = match &mut e {
        Expr::Alias(Alias { expr, .. }) => narrow(expr),
        other => narrow(other),
    };
    Transformed::new_transformed(e, changed)
}

/// `e` with the literals among its own operands narrowed where they decide its type.
fn within(mut e: Expr, schema: &DFSchema) -> Transformed<Expr> {
    let mut changed = false;
    match &mut e {
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(
                op,
                Operator::Plus
                    | Operator::Minus
                    | Operator::Multiply
                    | Operator::Divide
                    | Operator::Modulo
            ) && exact(left, schema)
                && exact(right, schema) =>
        {
            changed |= narrow(left);
            changed |= narrow(right);
        }
        Expr::Negative(inner) => changed |= narrow(inner),
        Expr::Case(Case {
            when_then_expr,
            else_expr,
            ..
        }) => {
            for (_, then) in when_then_expr {
                changed |= narrow(then);
            }
            if let Some(e) = else_expr {
                changed |= narrow(e);
            }
        }
        Expr::ScalarFunction(ScalarFunction { func, args })
            if matches!(
                func.name(),
                "coalesce" | "nullif" | "greatest" | "least" | "pg_typeof"
            ) =>
        {
            for a in args {
                changed |= narrow(a);
            }
        }
        _ => {}
    }
    Transformed::new_transformed(e, changed)
}
