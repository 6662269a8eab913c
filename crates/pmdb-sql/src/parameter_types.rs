//! The types of a statement's parameters, as PostgreSQL infers them: where DataFusion's
//! inference leaves one open, a parameter cast to a type (`$1::int`, `CAST($1 AS
//! BIGINT)`) has that type, one that is a LIMIT or OFFSET is a BIGINT, the array of
//! `x = ANY($1)` is an array of `x`'s type, and a parameter in a row of a row IN list
//! (`(a, b) IN (($1, $2), …)`) has the type of the column it stands against. Drivers
//! that encode by the described type (asyncpg) need them, and those that send every
//! value as text (lib/pq) get their values read as the column's type, not as text.
//!
//! A type Arrow holds as text (uuid, json, jsonb, an enum type) is told by its field's
//! metadata, so a parameter's type is a field: `$1::json` is read by the function that
//! reads json text, and is described as json, not as the text that function takes.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::Result as DfResult;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::ExprSchemable as _;
use datafusion::logical_expr::expr::{Cast, InList, Placeholder, TryCast};
use datafusion::logical_expr::{Expr, LogicalPlan};

/// The type of each parameter (`$1` at 0) up to the highest one `plan` names; `None`
/// where nothing tells it.
pub(crate) fn of(plan: &LogicalPlan) -> DfResult<Vec<Option<FieldRef>>> {
    // As fields: a parameter DataFusion types from a column (`INSERT … VALUES ($1)`)
    // keeps the column's metadata, so one for a uuid or hstore column is described so.
    let inferred = plan.get_parameter_fields()?;
    let mut implied: HashMap<String, DataType> = HashMap::new();
    // Parameters read as a type Arrow holds as text, described as that type.
    let mut read_as: HashMap<String, FieldRef> = HashMap::new();
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Limit(limit) = node {
            for e in [&limit.skip, &limit.fetch].into_iter().flatten() {
                if let Expr::Placeholder(Placeholder { id, .. }) = e.as_ref() {
                    implied.entry(id.clone()).or_insert(DataType::Int64);
                }
            }
        }
        // The schema the node's expressions read: its input's (a join's is its own).
        let schema = match node.inputs().as_slice() {
            [input] => Arc::clone(input.schema()),
            _ => Arc::clone(node.schema()),
        };
        for e in node.expressions() {
            e.apply(|e| {
                if let Expr::ScalarFunction(f) = e
                    && crate::type_input::reads_as_its_type(f.name())
                    && let Some(Expr::Placeholder(Placeholder { id, .. })) =
                        f.args.first().map(read_operand)
                    && let Ok((_, field)) = e.to_field(&schema)
                {
                    read_as.entry(id.clone()).or_insert(field);
                }
                if let Expr::ScalarFunction(f) = e
                    && f.name() == "array_has"
                    && let [Expr::Placeholder(Placeholder { id, .. }), item] = f.args.as_slice()
                    && let Ok(item_type) = item.get_type(&schema)
                {
                    let list = DataType::List(Arc::new(Field::new_list_field(item_type, true)));
                    implied.entry(id.clone()).or_insert(list);
                }
                for (id, column) in row_list_placeholders(e) {
                    if let Ok(t) = column.get_type(&schema) {
                        implied.entry(id.to_owned()).or_insert(t);
                    }
                }
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
    let count = count.max(
        read_as
            .keys()
            .filter_map(|k| k.strip_prefix('$')?.parse::<usize>().ok())
            .max()
            .unwrap_or(0),
    );
    Ok((1..=count)
        .map(|i| {
            let id = format!("${i}");
            if let Some(field) = read_as.get(&id) {
                return Some(Arc::clone(field));
            }
            let (ty, metadata) = match inferred.get(&id).cloned().flatten() {
                Some(f) => (f.data_type().clone(), f.metadata().clone()),
                None => (implied.get(&id).cloned()?, HashMap::new()),
            };
            // In microseconds, as the plan's times are once analyzed.
            let ty = crate::time_of_day::in_microseconds(&ty).unwrap_or(ty);
            Some(Arc::new(Field::new(id, ty, true).with_metadata(metadata)))
        })
        .collect())
}

/// What a function that reads its argument as its type reads: `e` without the casts
/// around it, and without the call a cast to a domain's base type may be (`$1::d`, with
/// `d` a domain over json, reads `$1` as the domain, not as json).
fn read_operand(e: &Expr) -> &Expr {
    match uncast(e) {
        Expr::ScalarFunction(f) if crate::type_input::reads_text_as_its_type(f.name()) => {
            f.args.first().map_or(e, uncast)
        }
        other => other,
    }
}

/// `e` without the casts around it.
fn uncast(e: &Expr) -> &Expr {
    match e {
        Expr::Cast(Cast { expr, .. }) => uncast(expr),
        _ => e,
    }
}

/// The placeholders among the rows of a row IN list, `(a, b) IN (($1, $2), …)`, each
/// with the expression it is compared with. DataFusion plans each row as a `struct`
/// call, those of the list cast to the row type of the columns.
fn row_list_placeholders(e: &Expr) -> Vec<(&str, &Expr)> {
    let Expr::InList(InList { expr, list, .. }) = e else {
        return Vec::new();
    };
    let Some(columns) = row(expr) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|item| match item {
            Expr::Cast(Cast { expr, .. }) => row(expr),
            _ => row(item),
        })
        .flat_map(|values| values.iter().zip(columns))
        .filter_map(|(value, column)| match value {
            Expr::Placeholder(Placeholder { id, .. }) => Some((id.as_str(), column)),
            _ => None,
        })
        .collect()
}

/// The values of a row DataFusion plans as a `struct` call.
fn row(e: &Expr) -> Option<&[Expr]> {
    match e {
        Expr::ScalarFunction(f) if f.name() == "struct" => Some(f.args.as_slice()),
        _ => None,
    }
}
