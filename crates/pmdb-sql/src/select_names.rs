//! The names of a query's columns as PostgreSQL gives them (FigureColname): an item
//! without an alias is named by its column, its function, its subquery's column, its
//! cast's type (`1::int` is `int4`), `case`, `exists`, `array` or `row`, else
//! `?column?`. DataFusion names them by their expressions (`count(*)`, `Int64(1)`), so
//! the result's columns are renamed when the names differ. A select list may also name
//! two items alike (`SELECT a, a`, two scalar subqueries, `SELECT 1 AS c, 2 AS c`), which
//! PostgreSQL allows and DataFusion refuses: then each select list's items are given
//! unique aliases for DataFusion, and the result's columns PostgreSQL's names, repeats and
//! all.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, DataType, ExactNumberInfo, Expr, Ident, Query, SelectItem, SetExpr,
    Statement, TimezoneInfo, VisitMut, VisitorMut,
};

use crate::error::{Result, SqlError, df_error};
use crate::names::ident_name;
use crate::output::Output;

/// DataFusion's refusals of a select list that names two items alike: two items
/// (`1 AS c, 2 AS c`), an item and a column it also shows (`c, c + 1 AS c`), or two
/// calls whose arguments differ by a cast ([`crate::cast_names`]).
const REPEATED: [&str; 3] = [
    "Projections require unique expression names",
    "which would be ambiguous",
    crate::cast_names::DUPLICATE_NAME,
];

/// The names PostgreSQL gives the columns of `statement`, a query whose select list
/// names its items (no `*`); `None` for another statement. Taken before pmdb rewrites
/// the statement (casts, views), as the client wrote it.
pub(crate) fn shown(statement: &DfStatement) -> Option<Vec<String>> {
    let DfStatement::Statement(s) = statement else {
        return None;
    };
    let Statement::Query(q) = s.as_ref() else {
        return None;
    };
    shown_names(q)
}

/// Plans `statement` with `state`, naming its select lists' items apart when DataFusion
/// refuses repeated names (`INSERT … SELECT a, a`): for a statement whose result's
/// column names no one sees.
pub(crate) async fn plan_unnamed(
    state: &SessionState,
    statement: DfStatement,
) -> Result<LogicalPlan> {
    match state.statement_to_plan(statement.clone()).await {
        Ok(plan) => Ok(plan),
        Err(e) if REPEATED.iter().any(|r| e.to_string().contains(r)) => {
            let mut statement = statement;
            if let DfStatement::Statement(s) = &mut statement {
                name_apart(s);
            }
            state.statement_to_plan(statement).await.map_err(df_error)
        }
        Err(e) => Err(df_error(e)),
    }
}

/// Plans `statement` with `state` (its types coerced, [`crate::result_types`]), naming the select lists' items when DataFusion
/// refuses repeated names. The names of the result's columns come back when they are
/// not DataFusion's: `shown`, as [`shown`] gave them before the statement was rewritten.
pub(crate) async fn plan(
    state: &SessionState,
    statement: DfStatement,
    shown: Option<Vec<String>>,
) -> Result<(LogicalPlan, Option<Vec<String>>)> {
    let refused = match state.statement_to_plan(statement.clone()).await {
        Ok(plan) => {
            let plan = crate::result_types::typed(state, plan)?;
            let fields = plan.schema().fields();
            let renamed = shown.filter(|names| {
                names.len() == fields.len() && fields.iter().zip(names).any(|(f, n)| f.name() != n)
            });
            return Ok((plan, renamed));
        }
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
    let Some(shown) = shown.or_else(|| shown_names(top)) else {
        return Err(df_error(refused));
    };
    name_apart(s);
    let plan = state.statement_to_plan(statement).await.map_err(df_error)?;
    Ok((crate::result_types::typed(state, plan)?, Some(shown)))
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

/// `out` with its rows' columns named `names` (other outputs as they are).
pub(crate) fn renamed(out: Output, names: &[String]) -> Result<Output> {
    match out {
        Output::Rows { schema, batches }
            if schema
                .fields()
                .iter()
                .zip(names)
                .any(|(f, n)| f.name() != n) =>
        {
            let schema = renamed_schema(&schema, names);
            let batches = renamed_batches(batches, &schema)?;
            Ok(Output::Rows { schema, batches })
        }
        out => Ok(out),
    }
}

/// `batches` under `schema` (the same columns, renamed).
fn renamed_batches(batches: Vec<RecordBatch>, schema: &SchemaRef) -> Result<Vec<RecordBatch>> {
    batches
        .into_iter()
        .map(|b| {
            RecordBatch::try_new(Arc::clone(schema), b.columns().to_vec())
                .map_err(|e| SqlError::Query(e.to_string()))
        })
        .collect()
}

/// The names PostgreSQL shows for the columns of `query`'s select list (of its first
/// select, for a UNION, INTERSECT or EXCEPT); `None` when it has a `*` (or is no select).
fn shown_names(query: &Query) -> Option<Vec<String>> {
    first_select_names(query.body.as_ref())
}

fn first_select_names(body: &SetExpr) -> Option<Vec<String>> {
    let select = match body {
        SetExpr::Select(select) => select,
        SetExpr::SetOperation { left, .. } => return first_select_names(left),
        SetExpr::Query(q) => return shown_names(q),
        _ => return None,
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
pub fn name_of(e: &Expr) -> String {
    figured(e).0
}

/// How firmly a name was found, as PostgreSQL ranks them: a cast names its value by its
/// type unless the value has a name of the first kind.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Strength {
    /// `?column?`.
    None,
    /// `case`, a type's name.
    Weak,
    /// A column's, a function's, a subquery's, `array`, `row`.
    Firm,
}

fn unnamed() -> (String, Strength) {
    ("?column?".into(), Strength::None)
}

/// PostgreSQL's name for `e` and how firmly it holds.
fn figured(e: &Expr) -> (String, Strength) {
    let firm = |name: &str| (name.to_owned(), Strength::Firm);
    let weak = |name: &str| (name.to_owned(), Strength::Weak);
    match e {
        Expr::Identifier(i) => (ident_name(i), Strength::Firm),
        Expr::CompoundIdentifier(parts) => parts
            .last()
            .map_or_else(unnamed, |p| (ident_name(p), Strength::Firm)),
        Expr::Function(f) => f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map_or_else(unnamed, |i| (ident_name(i), Strength::Firm)),
        Expr::Cast {
            expr, data_type, ..
        } => match figured(expr) {
            named @ (_, Strength::Firm) => named,
            _ => weak(&type_name(data_type)),
        },
        Expr::TypedString(t) => weak(&type_name(&t.data_type)),
        Expr::Interval(_) => weak("interval"),
        Expr::Nested(inner) | Expr::Collate { expr: inner, .. } => figured(inner),
        Expr::Subquery(q) => shown_names(q)
            .and_then(|n| n.into_iter().next())
            .filter(|n| n != "?column?")
            .map_or_else(unnamed, |n| (n, Strength::Firm)),
        Expr::Exists { .. } => firm("exists"),
        // Named by its ELSE, if that has a name of the first kind.
        Expr::Case { else_result, .. } => match else_result.as_deref().map(figured) {
            Some(named @ (_, Strength::Firm)) => named,
            _ => weak("case"),
        },
        // Named as functions are.
        Expr::Array(_) => firm("array"),
        Expr::Tuple(_) => firm("row"),
        Expr::Extract { .. } => firm("extract"),
        Expr::Substring { .. } => firm("substring"),
        Expr::Position { .. } => firm("position"),
        Expr::Overlay { .. } => firm("overlay"),
        Expr::Trim { .. } => firm("btrim"),
        Expr::Ceil { .. } => firm("ceil"),
        Expr::Floor { .. } => firm("floor"),
        Expr::AtTimeZone { .. } => firm("timezone"),
        _ => unnamed(),
    }
}

/// The name PostgreSQL gives type `t` (`int4`, `varchar`, `timestamptz`).
fn type_name(t: &DataType) -> String {
    let name = match t {
        DataType::SmallInt(_) | DataType::Int2(_) => "int2",
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => "int4",
        DataType::BigInt(_) | DataType::Int8(_) => "int8",
        DataType::Real | DataType::Float4 => "float4",
        DataType::Float(ExactNumberInfo::Precision(p)) if *p <= 24 => "float4",
        DataType::Double(_) | DataType::DoublePrecision | DataType::Float8 => "float8",
        DataType::Float(_) => "float8",
        DataType::Numeric(_) | DataType::Decimal(_) | DataType::Dec(_) => "numeric",
        DataType::Bool | DataType::Boolean => "bool",
        DataType::Varchar(_) | DataType::CharacterVarying(_) => "varchar",
        DataType::Char(_) | DataType::Character(_) => "bpchar",
        DataType::Text => "text",
        DataType::Date => "date",
        DataType::Time(_, TimezoneInfo::WithTimeZone) => "timetz",
        DataType::Time(..) => "time",
        DataType::Timestamp(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => "timestamptz",
        DataType::Timestamp(..) => "timestamp",
        DataType::Interval { .. } => "interval",
        DataType::Uuid => "uuid",
        DataType::JSON => "json",
        DataType::JSONB => "jsonb",
        DataType::Bytea => "bytea",
        // An array is named by its element type, as PostgreSQL names a cast to one.
        DataType::Array(ArrayElemTypeDef::SquareBracket(element, _)) => return type_name(element),
        DataType::Custom(name, _) => {
            return name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map_or_else(|| name.to_string(), ident_name);
        }
        other => return other.to_string().to_lowercase(),
    };
    name.into()
}

/// `s` with every select list's items named once ([`Namer`]) and casts in calls named
/// apart.
fn name_apart(s: &mut Statement) {
    let _ = s.visit(&mut Namer);
    crate::cast_names::name_apart(s);
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
