//! Range reads the fast path serves, recognised by their syntax tree: a SELECT of one
//! table whose WHERE clause fixes the leading columns of the primary key (or, where it
//! names columns outside it, of an index) and bounds the next one, with ORDER BY, LIMIT,
//! DISTINCT, locking clauses, or a select list of aggregates:
//!
//! - `SELECT cols | * FROM t WHERE pk1 = v AND … AND pkn BETWEEN v AND v | > | >= | < | <= v
//!   [ORDER BY cols [ASC | DESC] [NULLS FIRST | LAST], …] [LIMIT v] [FOR …]`
//! - `SELECT DISTINCT cols …` (ORDER BY only what it shows)
//! - `SELECT count(*) | count(col) | sum(col) | min(col) | max(col) [AS name], … FROM t
//!   WHERE …`
//!
//! Locking clauses only by the primary key, with rows in key order (ORDER BY the key, or
//! none): a row is locked as it is returned. Everything else goes the general way.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArgExpr, LimitClause, OrderBy, OrderByExpr, OrderByKind,
    OrderByOptions, Query, SelectItem, SetExpr,
};

use super::recognise::{
    SimpleSelect, column_of, key_list, operand, plain_wildcard, position, row_lock, simple_select,
    summable,
};
use super::shape::{
    Aggregate, GroupItem, Kind, Operand, RangeKeys, RangeOutput, RangeRead, RowOrder, Shape,
    SortKey,
};
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
        group_by,
        name,
    } = simple_select(session, sel)?;
    let lock = row_lock(locks, &name)?;
    let (index, keys) = narrowed(&table, selection)?;
    if lock.is_some() && (index.is_some() || matches!(keys, RangeKeys::Prefixes(_))) {
        return None;
    }
    // The order rows are read in: an index's entries end with the row's key.
    let pk = &table.def().primary_key;
    let key: Vec<u16> = match index {
        None => pk.clone(),
        Some(i) => table.indexes()[i]
            .def
            .columns
            .iter()
            .chain(pk)
            .copied()
            .collect(),
    };
    let mut columns = Vec::new();
    let output = items(&table, projection, group_by, &mut columns)?;
    if matches!(output, RangeOutput::Aggregates { .. })
        && (distinct || order_by.is_some() || limit.is_some() || lock.is_some())
    {
        return None;
    }
    let order = match (&output, order_by) {
        (RangeOutput::Aggregates { .. }, _) => RowOrder::Key { descending: false },
        (RangeOutput::Rows { shown }, order_by) => {
            let items = order_items(&table, order_by)?;
            match key_order(&table, &key, keys.fixed(), &items) {
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
            index,
            keys,
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

/// What a WHERE clause says of a key: operands its leading columns equal, and bounds on
/// the next one.
type KeyRead = (Vec<Operand>, KeyBound, KeyBound);

/// The key the WHERE clause `e` narrows and its ranges: the primary key's (by an IN
/// list of its keys or their prefixes, or a range), else those of the index whose
/// leading columns it narrows furthest (`Some` of its place in the table), of an index
/// whose columns compare as their encoding does (no floats, with their signed zeros
/// and NaN).
fn narrowed(table: &Table, e: &Expr) -> Option<(Option<usize>, RangeKeys)> {
    if let Some(prefixes) = key_list(table, e) {
        return Some((None, RangeKeys::Prefixes(prefixes)));
    }
    let bounded = |(prefix, low, high)| RangeKeys::Bounded { prefix, low, high };
    if let Some(read) = key_range(table, &table.def().primary_key, e) {
        return Some((None, bounded(read)));
    }
    let reach = |(prefix, low, high): &KeyRead| {
        prefix.len() * 2 + usize::from(low.is_some() || high.is_some())
    };
    let mut best: Option<(usize, KeyRead)> = None;
    for (i, ix) in table.indexes().iter().enumerate() {
        let comparable = ix.types.iter().all(|&ty| orderable(ty));
        if comparable
            && let Some(read) = key_range(table, &ix.def.columns, e)
            && best.as_ref().is_none_or(|(_, b)| reach(&read) > reach(b))
        {
            best = Some((i, read));
        }
    }
    best.map(|(i, read)| (Some(i), bounded(read)))
}

/// The WHERE clause `e` as equalities on the leading columns of `key` (table columns)
/// and bounds on the next one; `None` if it says anything else, or nothing that narrows
/// the key.
fn key_range(table: &Table, key: &[u16], e: &Expr) -> Option<KeyRead> {
    let mut conditions: Vec<Vec<Condition>> = key.iter().map(|_| Vec::new()).collect();
    for e in ast_shape::conjuncts(e) {
        match e {
            Expr::BinaryOp { left, op, right } => {
                let (at, ty, op, value) = match key_column(table, key, left) {
                    Some((at, ty)) => (at, ty, op.clone(), right),
                    None => {
                        let (at, ty) = key_column(table, key, right)?;
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
                let (at, ty) = key_column(table, key, expr)?;
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

/// `e` as a column of `key`: its place in the key and its type.
fn key_column(table: &Table, key: &[u16], e: &Expr) -> Option<(usize, SqlType)> {
    let column = column_of(table, e)?;
    let at = key.iter().position(|&c| usize::from(c) == column)?;
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
/// from), or of aggregates over them, beside the columns of `group_by` (plain columns).
fn items(
    table: &Table,
    projection: &[SelectItem],
    group_by: &[Expr],
    columns: &mut Vec<usize>,
) -> Option<RangeOutput> {
    let by = group_by
        .iter()
        .map(|e| Some(position(columns, column_of(table, e)?)))
        .collect::<Option<Vec<_>>>()?;
    let name = |c: usize| table.def().columns[c].name.clone();
    let mut items = Vec::new();
    for item in projection {
        items.push(match item {
            SelectItem::Wildcard(options) if *options == plain_wildcard(options) => {
                for c in 0..table.types().len() {
                    items.push(GroupItem::Column(position(columns, c), name(c)));
                }
                continue;
            }
            SelectItem::UnnamedExpr(e) => match column_of(table, e) {
                Some(c) => GroupItem::Column(position(columns, c), name(c)),
                None => {
                    let (f, name) = aggregate(e, |e| table_column(table, columns, e))?;
                    GroupItem::Aggregate(f, name)
                }
            },
            SelectItem::ExprWithAlias { expr, alias } => match column_of(table, expr) {
                // A row's columns are served by their own names only.
                Some(c) if !by.is_empty() => {
                    GroupItem::Column(position(columns, c), ident_name(alias))
                }
                Some(_) => return None,
                None => {
                    let (f, _) = aggregate(expr, |e| table_column(table, columns, e))?;
                    GroupItem::Aggregate(f, ident_name(alias))
                }
            },
            _ => return None,
        });
    }
    let grouped = |item: &GroupItem| match item {
        GroupItem::Column(at, _) => by.contains(at),
        GroupItem::Aggregate(..) => true,
    };
    let aggregates = items.iter().any(|i| matches!(i, GroupItem::Aggregate(..)));
    if by.is_empty() && !aggregates {
        let shown = items
            .iter()
            .filter_map(|i| match i {
                GroupItem::Column(at, _) => Some(*at),
                GroupItem::Aggregate(..) => None,
            })
            .collect();
        return Some(RangeOutput::Rows { shown });
    }
    // A column neither grouped by nor aggregated: the general way refuses it (or finds
    // it determined by a grouped key).
    items
        .iter()
        .all(grouped)
        .then_some(RangeOutput::Aggregates { by, items })
}

/// `count(*)`, `count([DISTINCT] col)`, `sum(col)`, `min(col)` or `max(col)` of a column
/// whose type the fast path counts, sums or orders as the general way does, named as
/// PostgreSQL names it; `column` gives the place among the columns read, and the type,
/// of the column an argument names.
pub(super) fn aggregate(
    e: &Expr,
    mut column: impl FnMut(&Expr) -> Option<(usize, SqlType)>,
) -> Option<(Aggregate, String)> {
    let (name, args, distinct) = ast_shape::aggregate_call(e)?;
    let [arg] = args.as_slice() else {
        return None;
    };
    let function = ident_name(name);
    let arg = match arg {
        FunctionArgExpr::Wildcard if function == "count" && !distinct => {
            return Some((Aggregate::CountRows, function));
        }
        FunctionArgExpr::Expr(e) => e,
        _ => return None,
    };
    let (at, ty) = column(arg)?;
    let f = match (function.as_str(), distinct) {
        ("count", false) => Aggregate::Count(at),
        ("count", true) if orderable(ty) => Aggregate::CountDistinct(at),
        ("sum", false) if summable(ty) => Aggregate::Sum(at),
        // The least and greatest of the distinct values are those of all.
        ("min", _) if orderable(ty) => Aggregate::Min(at),
        ("max", _) if orderable(ty) => Aggregate::Max(at),
        _ => return None,
    };
    Some((f, function))
}

/// Types whose order (and equality) is their Arrow form's, as the general way sorts
/// them (not an enum's declared order, not a float's signed zeros).
pub(super) fn orderable(ty: SqlType) -> bool {
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

/// The place among `columns` (added if it is not there) and the type of the column of
/// `table` that `e` names.
fn table_column(table: &Table, columns: &mut Vec<usize>, e: &Expr) -> Option<(usize, SqlType)> {
    let c = column_of(table, e)?;
    Some((position(columns, c), table.types()[c]))
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

/// Whether `items` are served by the order of `key` (table columns) past its `fixed`
/// leading columns: `Some(descending)` when they name the next key columns in order,
/// all one way (the fixed ones may be named anywhere: they hold one value), and put
/// NULLs where the key's order has them, first (read forwards) or last (backwards),
/// unless the column holds none.
fn key_order(table: &Table, key: &[u16], fixed: usize, items: &[OrderItem]) -> Option<bool> {
    let def = table.def();
    let key: Vec<usize> = key.iter().map(|&c| usize::from(c)).collect();
    let holds_no_null =
        |c: usize| def.columns[c].not_null || def.primary_key.iter().any(|&k| usize::from(k) == c);
    let rest: Vec<&OrderItem> = items
        .iter()
        .filter(|(c, _, _)| !key[..fixed].contains(c))
        .collect();
    let descending = rest.first().is_some_and(|(_, d, _)| *d);
    let in_key_order = rest.len() <= key.len() - fixed
        && rest
            .iter()
            .zip(&key[fixed..])
            .all(|((c, d, nulls_first), k)| {
                c == k && *d == descending && (holds_no_null(*c) || *nulls_first != descending)
            });
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
