//! Range reads the fast path serves, recognised by their syntax tree: a SELECT of one
//! table whose WHERE clause fixes the leading columns of the primary key and bounds the
//! next one, with ORDER BY, LIMIT, DISTINCT, locking clauses, or a select list of
//! aggregates:
//!
//! - `SELECT cols | * FROM t WHERE pk1 = v AND … AND pkn BETWEEN v AND v | > | >= | < | <= v
//!   [ORDER BY cols [ASC | DESC] [NULLS FIRST | LAST], …] [LIMIT v] [FOR …]`
//! - `SELECT DISTINCT cols …` (ORDER BY only what it shows)
//! - `SELECT count(*) | count(col) | sum(col) | min(col) | max(col) [AS name], … FROM t
//!   WHERE …`
//!
//! Locking clauses only with rows in key order (ORDER BY the key, or none): a row is
//! locked as it is returned. Everything else goes the general way.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArgExpr, LimitClause, OrderBy, OrderByExpr, OrderByKind,
    OrderByOptions, Query, SelectItem, SetExpr,
};

use super::recognise::{
    SimpleSelect, column_of, operand, plain_call, plain_wildcard, position, row_lock, simple_select,
};
use super::shape::{Aggregate, Kind, Operand, RangeOutput, RangeRead, RowOrder, Shape, SortKey};
use crate::ast_shape::{self, OrderedQuery};
use crate::names::ident_name;
use crate::session::Session;
use crate::table::Table;
use crate::types::{SqlType, Value};

pub(super) fn range_select(session: &Session, q: &Query) -> Option<Shape> {
    let OrderedQuery {
        body: SetExpr::Select(sel),
        order_by,
        limit,
        locks,
    } = ast_shape::ordered_query(q)?
    else {
        return None;
    };
    let SimpleSelect {
        table,
        projection,
        selection,
        distinct,
        name,
    } = simple_select(session, sel)?;
    let lock = row_lock(locks, &name)?;
    let (prefix, low, high) = key_range(&table, selection)?;
    let mut columns = Vec::new();
    let output = items(&table, projection, &mut columns)?;
    if matches!(output, RangeOutput::Aggregates(_))
        && (distinct || order_by.is_some() || limit.is_some() || lock.is_some())
    {
        return None;
    }
    let order = match (&output, order_by) {
        (RangeOutput::Aggregates(_), _) => RowOrder::Key { descending: false },
        (RangeOutput::Rows { shown }, order_by) => {
            let items = order_items(&table, order_by)?;
            match key_order(&table, prefix.len(), &items) {
                Some(descending) if !distinct => RowOrder::Key { descending },
                _ => sorted(&table, &mut columns, shown, &items, distinct)?,
            }
        }
    };
    if lock.is_some() && !matches!(order, RowOrder::Key { .. }) {
        return None;
    }
    let limit = match limit {
        None => None,
        Some(LimitClause::LimitOffset {
            limit: Some(n),
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => match operand(n, SqlType::BigInt)? {
            Operand::Value(Value::Null) => return None,
            n => Some(n),
        },
        Some(_) => return None,
    };
    Some(Shape {
        table,
        kind: Kind::Range(Box::new(RangeRead {
            prefix,
            low,
            high,
            columns,
            output,
            order,
            limit,
            lock,
        })),
    })
}

/// A bound on a key column: its operand and whether it is included.
type KeyBound = Option<(Operand, bool)>;

/// What a comparison of a key column with an operand says of the column.
enum Condition {
    Equal(Operand),
    Low(Operand, bool),
    High(Operand, bool),
}

/// The WHERE clause `e` as equalities on the primary key's leading columns and bounds
/// on the next one; `None` if it says anything else, or nothing that narrows the key.
fn key_range(table: &Table, e: &Expr) -> Option<(Vec<Operand>, KeyBound, KeyBound)> {
    let pk = &table.def().primary_key;
    let mut conditions: Vec<Vec<Condition>> = pk.iter().map(|_| Vec::new()).collect();
    let mut conjuncts = vec![e];
    while let Some(e) = conjuncts.pop() {
        match e {
            Expr::Nested(e) => conjuncts.push(e),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                conjuncts.push(left);
                conjuncts.push(right);
            }
            Expr::BinaryOp { left, op, right } => {
                let (at, ty, op, value) = match key_column(table, left) {
                    Some((at, ty)) => (at, ty, op.clone(), right),
                    None => {
                        let (at, ty) = key_column(table, right)?;
                        (at, ty, swapped(op)?, left)
                    }
                };
                let value = not_null(operand(value, ty)?)?;
                conditions[at].push(match op {
                    BinaryOperator::Eq => Condition::Equal(value),
                    BinaryOperator::Gt => Condition::Low(value, false),
                    BinaryOperator::GtEq => Condition::Low(value, true),
                    BinaryOperator::Lt => Condition::High(value, false),
                    BinaryOperator::LtEq => Condition::High(value, true),
                    _ => return None,
                });
            }
            Expr::Between {
                expr,
                negated: false,
                low,
                high,
            } => {
                let (at, ty) = key_column(table, expr)?;
                conditions[at].push(Condition::Low(not_null(operand(low, ty)?)?, true));
                conditions[at].push(Condition::High(not_null(operand(high, ty)?)?, true));
            }
            _ => return None,
        }
    }
    let mut conditions = conditions.into_iter();
    let mut prefix = Vec::new();
    let (mut low, mut high) = (None, None);
    for column in conditions.by_ref() {
        match column.as_slice() {
            [] => break,
            [Condition::Equal(v)] => prefix.push(v.clone()),
            column => {
                bounds(column, &mut low, &mut high)?;
                break;
            }
        }
    }
    // Nothing may be said of the columns after the bounded one.
    let narrows = !prefix.is_empty() || low.is_some() || high.is_some();
    (narrows && conditions.all(|c| c.is_empty())).then_some((prefix, low, high))
}

/// Takes one column's conditions as its bounds: at most one of each side, no equality.
fn bounds(conditions: &[Condition], low: &mut KeyBound, high: &mut KeyBound) -> Option<()> {
    for c in conditions {
        let (side, bound) = match c {
            Condition::Equal(_) => return None,
            Condition::Low(v, inclusive) => (&mut *low, (v.clone(), *inclusive)),
            Condition::High(v, inclusive) => (&mut *high, (v.clone(), *inclusive)),
        };
        if side.replace(bound).is_some() {
            return None;
        }
    }
    Some(())
}

/// `e` as a column of the primary key: its place in the key and its type.
fn key_column(table: &Table, e: &Expr) -> Option<(usize, SqlType)> {
    let column = column_of(table, e)?;
    let at = table
        .def()
        .primary_key
        .iter()
        .position(|&c| usize::from(c) == column)?;
    Some((at, table.types()[column]))
}

/// `v op column` as `column op' v`.
fn swapped(op: &BinaryOperator) -> Option<BinaryOperator> {
    Some(match op {
        BinaryOperator::Eq => BinaryOperator::Eq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        _ => return None,
    })
}

/// A comparison with a NULL written out passes no row: the general way says so.
fn not_null(op: Operand) -> Option<Operand> {
    (!matches!(op, Operand::Value(Value::Null))).then_some(op)
}

/// A select list of table columns (each added to `columns`, which they are shown
/// from), or of aggregates over them.
fn items(
    table: &Table,
    projection: &[SelectItem],
    columns: &mut Vec<usize>,
) -> Option<RangeOutput> {
    let mut shown = Vec::new();
    let mut aggregates = Vec::new();
    for item in projection {
        match item {
            SelectItem::Wildcard(options) if *options == plain_wildcard(options) => {
                shown.extend((0..table.types().len()).map(|c| position(columns, c)))
            }
            SelectItem::UnnamedExpr(e) => match column_of(table, e) {
                Some(c) => shown.push(position(columns, c)),
                None => aggregates.push(aggregate(table, e, columns)?),
            },
            SelectItem::ExprWithAlias { expr, alias } => {
                let (f, _) = aggregate(table, expr, columns)?;
                aggregates.push((f, ident_name(alias)));
            }
            _ => return None,
        }
    }
    match (shown.is_empty(), aggregates.is_empty()) {
        (false, true) => Some(RangeOutput::Rows { shown }),
        (true, false) => Some(RangeOutput::Aggregates(aggregates)),
        // Columns beside aggregates with no GROUP BY: the general way refuses them.
        _ => None,
    }
}

/// `count(*)`, `count(col)`, `sum(col)`, `min(col)` or `max(col)` of a column whose type
/// the fast path sums or orders as the general way does, named as PostgreSQL names it.
fn aggregate(table: &Table, e: &Expr, columns: &mut Vec<usize>) -> Option<(Aggregate, String)> {
    let (function, arg) = plain_call(e)?;
    let column = match arg {
        FunctionArgExpr::Wildcard if function == "count" => {
            return Some((Aggregate::CountRows, function));
        }
        FunctionArgExpr::Expr(e) => column_of(table, e)?,
        _ => return None,
    };
    let ty = table.types()[column];
    let f = match function.as_str() {
        "count" => Aggregate::Count,
        "sum" if summable(ty) => Aggregate::Sum,
        "min" if orderable(ty) => Aggregate::Min,
        "max" if orderable(ty) => Aggregate::Max,
        _ => return None,
    };
    let f = f(position(columns, column));
    Some((f, function))
}

/// Types whose sum the fast path takes exactly as the general way does.
fn summable(ty: SqlType) -> bool {
    matches!(
        ty,
        SqlType::SmallInt | SqlType::Int | SqlType::BigInt | SqlType::Decimal { .. }
    )
}

/// Types whose order (and equality) is their Arrow form's, as the general way sorts
/// them (not an enum's declared order, not a float's signed zeros).
fn orderable(ty: SqlType) -> bool {
    matches!(
        ty,
        SqlType::SmallInt
            | SqlType::Int
            | SqlType::BigInt
            | SqlType::Decimal { .. }
            | SqlType::Char(_)
            | SqlType::Varchar(_)
            | SqlType::Text
            | SqlType::Date
            | SqlType::Time
            | SqlType::Timestamp
            | SqlType::TimestampTz
            | SqlType::Boolean
    )
}

/// One ORDER BY item: a table column, descending, NULLs first.
type OrderItem = (usize, bool, bool);

/// The ORDER BY items, each a plain column (`ORDER BY 1` and expressions go the
/// general way), with PostgreSQL's default NULL placement: last ascending, first
/// descending.
fn order_items(table: &Table, order_by: Option<&OrderBy>) -> Option<Vec<OrderItem>> {
    let Some(OrderBy {
        kind: OrderByKind::Expressions(exprs),
        interpolate: None,
    }) = order_by
    else {
        return order_by.is_none().then(Vec::new);
    };
    exprs
        .iter()
        .map(|item| {
            let OrderByExpr {
                expr,
                options: OrderByOptions { asc, nulls_first },
                with_fill: None,
            } = item
            else {
                return None;
            };
            let descending = *asc == Some(false);
            Some((
                column_of(table, expr)?,
                descending,
                nulls_first.unwrap_or(descending),
            ))
        })
        .collect()
}

/// Whether `items` are served by the key's own order past its `fixed` leading columns:
/// `Some(descending)` when they name the next key columns in order, all one way (the
/// fixed ones may be named anywhere: they hold one value). Key columns hold no NULL, so
/// where NULLs would go does not matter.
fn key_order(table: &Table, fixed: usize, items: &[OrderItem]) -> Option<bool> {
    let pk: Vec<usize> = table
        .def()
        .primary_key
        .iter()
        .map(|&c| usize::from(c))
        .collect();
    let rest: Vec<&OrderItem> = items
        .iter()
        .filter(|(c, _, _)| !pk[..fixed].contains(c))
        .collect();
    let descending = rest.first().is_some_and(|(_, d, _)| *d);
    let in_key_order = rest.len() <= pk.len() - fixed
        && rest
            .iter()
            .zip(&pk[fixed..])
            .all(|((c, d, _), k)| c == k && *d == descending);
    in_key_order.then_some(descending)
}

/// The order of rows sorted by `items` (with DISTINCT, then by the other columns it
/// shows, so that repeats fall together); columns sorted by but not shown are read too.
fn sorted(
    table: &Table,
    columns: &mut Vec<usize>,
    shown: &[usize],
    items: &[OrderItem],
    distinct: bool,
) -> Option<RowOrder> {
    let mut by = Vec::with_capacity(items.len());
    for &(column, descending, nulls_first) in items {
        let at = position(columns, column);
        // DISTINCT sorts only by what it shows (PostgreSQL refuses the rest).
        if !orderable(table.types()[column]) || (distinct && !shown.contains(&at)) {
            return None;
        }
        by.push(SortKey {
            column: at,
            descending,
            nulls_first,
        });
    }
    if distinct {
        for &at in shown {
            if !orderable(table.types()[columns[at]]) {
                return None;
            }
            if !by.iter().any(|k| k.column == at) {
                by.push(SortKey {
                    column: at,
                    descending: false,
                    nulls_first: false,
                });
            }
        }
    }
    Some(RowOrder::Sorted { by, distinct })
}
