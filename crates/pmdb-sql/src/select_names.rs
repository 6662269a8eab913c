//! Select lists that name two items alike (`SELECT a, a`, two scalar subqueries,
//! `SELECT 1 AS c, 2 AS c`), which PostgreSQL allows and DataFusion refuses. When
//! DataFusion refuses one, each select list's unnamed items are named as PostgreSQL
//! names them (a column by its name, a function by its own, a subquery by its
//! column's, else `?column?`), a repeated name made unique with a suffix; the result's columns then take the names
//! PostgreSQL would show, repeats and all.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, Query, SelectItem, SetExpr, Statement, VisitMut, VisitorMut,
};

use crate::error::{Result, SqlError, df_error};
use crate::names::ident_name;

/// DataFusion's refusals of a select list that names two items alike: two items
/// (`1 AS c, 2 AS c`), or an item and a column it also shows (`c, c + 1 AS c`).
const REPEATED: [&str; 2] = [
    "Projections require unique expression names",
    "which would be ambiguous",
];

/// Plans `statement` with `state`, naming the select lists' items when DataFusion
/// refuses repeated names; the names of the result's columns then come back too.
pub(crate) async fn plan(
    state: &SessionState,
    statement: DfStatement,
) -> Result<(LogicalPlan, Option<Vec<String>>)> {
    let refused = match state.statement_to_plan(statement.clone()).await {
        Ok(plan) => return Ok((plan, None)),
        Err(e) if REPEATED.iter().any(|r| e.to_string().contains(r)) => e,
        Err(e) => return Err(df_error(e)),
    };
    let mut statement = statement;
    let DfStatement::Statement(s) = &mut statement else {
        return Err(df_error(refused));
    };
    let Statement::Query(top) = s.as_mut() else {
        return Err(df_error(refused));
    };
    let Some(shown) = shown_names(top) else {
        return Err(df_error(refused));
    };
    let _ = s.visit(&mut Namer);
    let plan = state.statement_to_plan(statement).await.map_err(df_error)?;
    Ok((plan, Some(shown)))
}

/// `schema` with its fields named `names`.
pub(crate) fn renamed_schema(schema: &Schema, names: &[String]) -> SchemaRef {
    Arc::new(Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .zip(names)
            .map(|(f, n)| Field::clone(f).with_name(n))
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ))
}

/// `batches` under `schema` (the same columns, renamed).
pub(crate) fn renamed_batches(
    batches: Vec<RecordBatch>,
    schema: &SchemaRef,
) -> Result<Vec<RecordBatch>> {
    batches
        .into_iter()
        .map(|b| {
            RecordBatch::try_new(Arc::clone(schema), b.columns().to_vec())
                .map_err(|e| SqlError::Query(e.to_string()))
        })
        .collect()
}

/// The names PostgreSQL shows for the columns of `query`'s select list; `None` when it
/// has a `*` (or is not a plain select).
fn shown_names(query: &Query) -> Option<Vec<String>> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(e) => Some(name_of(e)),
            SelectItem::ExprWithAlias { alias, .. } => Some(ident_name(alias)),
            _ => None,
        })
        .collect()
}

/// The name PostgreSQL gives a select item `e` has no alias for.
fn name_of(e: &Expr) -> String {
    match e {
        Expr::Identifier(i) => ident_name(i),
        Expr::CompoundIdentifier(parts) => parts.last().map(ident_name).unwrap_or_default(),
        Expr::Function(f) => f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(ident_name)
            .unwrap_or_else(|| "?column?".into()),
        Expr::Cast { expr, .. } | Expr::Nested(expr) => name_of(expr),
        Expr::Subquery(q) => shown_names(q)
            .and_then(|n| n.into_iter().next())
            .unwrap_or_else(|| "?column?".into()),
        Expr::Case { .. } => "case".into(),
        Expr::Exists { .. } => "exists".into(),
        _ => "?column?".into(),
    }
}

/// Names every select list's items, each name once per list: an unnamed item as
/// PostgreSQL names it, a name repeated (`13 AS c, x AS c`) with a suffix.
struct Namer;

impl VisitorMut for Namer {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let SetExpr::Select(select) = query.body.as_mut() else {
            return ControlFlow::Continue(());
        };
        let mut taken: Vec<String> = Vec::new();
        for item in &mut select.projection {
            let (expr, wanted) = match item {
                SelectItem::UnnamedExpr(e) => (e.clone(), name_of(e)),
                SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), ident_name(alias)),
                _ => continue,
            };
            let name = (1..)
                .map(|n| match n {
                    1 => wanted.clone(),
                    n => format!("{wanted}_{n}"),
                })
                .find(|n| !taken.contains(n))
                .expect("some suffix is free");
            taken.push(name.clone());
            *item = SelectItem::ExprWithAlias {
                expr,
                alias: Ident::with_quote('"', name),
            };
        }
        ControlFlow::Continue(())
    }
}
