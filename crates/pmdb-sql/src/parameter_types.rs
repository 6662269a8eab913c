//! The types of a statement's parameters, as PostgreSQL infers them: where DataFusion's
//! inference leaves one open, a parameter cast to a type (`$1::int`, `CAST($1 AS
//! BIGINT)`) has that type, and one that is a LIMIT or OFFSET is a BIGINT. Drivers that
//! encode by the described type (asyncpg) need them.

use std::collections::HashMap;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result as DfResult;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::expr::{Cast, Placeholder, TryCast};
use datafusion::logical_expr::{Expr, LogicalPlan};

/// The type of each parameter (`$1` at 0) up to the highest one `plan` names; `None`
/// where nothing tells it.
pub(crate) fn of(plan: &LogicalPlan) -> DfResult<Vec<Option<DataType>>> {
    let inferred = plan.get_parameter_types()?;
    let mut implied: HashMap<String, DataType> = HashMap::new();
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Limit(limit) = node {
            for e in [&limit.skip, &limit.fetch].into_iter().flatten() {
                if let Expr::Placeholder(Placeholder { id, .. }) = e.as_ref() {
                    implied.entry(id.clone()).or_insert(DataType::Int64);
                }
            }
        }
        for e in node.expressions() {
            e.apply(|e| {
                let cast = match e {
                    Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
                        Some((expr.as_ref(), field.data_type()))
                    }
                    _ => None,
                };
                if let Some((Expr::Placeholder(Placeholder { id, .. }), to)) = cast {
                    implied.entry(id.clone()).or_insert_with(|| to.clone());
                }
                Ok(TreeNodeRecursion::Continue)
            })?;
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    let count = inferred
        .keys()
        .chain(implied.keys())
        .filter_map(|k| k.strip_prefix('$')?.parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    Ok((1..=count)
        .map(|i| {
            let id = format!("${i}");
            inferred
                .get(&id)
                .cloned()
                .flatten()
                .or_else(|| implied.get(&id).cloned())
        })
        .collect())
}
