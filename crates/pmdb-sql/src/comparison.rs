//! Which operators compare two values (and so see their operands' order and equality),
//! for the rewrites that make a type compare as PostgreSQL compares it.

use datafusion::logical_expr::Operator;

/// Whether `op` compares its operands.
pub(crate) fn compares(op: Operator) -> bool {
    use Operator::*;
    matches!(
        op,
        Eq | NotEq | Lt | LtEq | Gt | GtEq | IsDistinctFrom | IsNotDistinctFrom
    )
}
