//! Joins the fast path serves, recognised by their syntax tree: a SELECT of two or more
//! tables whose WHERE clause, comparisons joined by AND, lets one table (the driver) be
//! read by a range of its primary key and each other table by its whole key, every key
//! column equal to a value or to a column of a table read before it. New-Order reads its
//! customer and warehouse so, the driver by its whole key:
//!
//! `SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse
//!  WHERE w_id = $1 AND c_w_id = w_id AND c_d_id = $2 AND c_id = $3`
//!
//! and Stock-Level counts its items low in stock so, a range of order lines and a stock
//! row for each:
//!
//! `SELECT COUNT(DISTINCT (s_i_id)) stock_count FROM order_line, stock
//!  WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4 - 20
//!  AND s_w_id = $5 AND s_i_id = ol_i_id AND s_quantity < $6`
//!
//! The keys only narrow what is read: every comparison is also checked on the rows, so
//! each must be of a column whose values compare as the general way compares them.
//! Columns are named plainly (`c_id`) or by their table or its alias (`c.c_id`); the
//! select list shows columns, or aggregates them (no GROUP BY). Any other condition,
//! clause or item goes the general way.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Query, SelectItem, SetExpr, TableAlias, TableWithJoins,
};

use super::recognise::{PlainSelect, operand, plain_select, position, table_named};
use super::recognise_range::{aggregate, orderable};
use super::shape::{
    Compared, Comparison, Filter, GroupItem, JoinKey, JoinOutput, KeyJoin, KeyPart, Kind, Operand,
    RangeKeys, Shape,
};
use crate::ast_shape;
use crate::names::{ident_name, object_name};
use crate::session::Session;
use crate::table::Table;
use crate::types::{SqlType, Value};

/// Most tables a join of keyed rows names.
const MAX_TABLES: usize = 8;

pub(super) fn key_join(session: &Session, q: &Query) -> Option<Shape> {
    let (SetExpr::Select(sel), []) = ast_shape::bare_query(q)? else {
        return None;
    };
    let PlainSelect {
        projection,
        from,
        selection,
        distinct: false,
        group_by: [],
    } = plain_select(sel)?
    else {
        return None;
    };
    if from.len() < 2 || from.len() > MAX_TABLES {
        return None;
    }
    let tables = from
        .iter()
        .map(|t| bound_table(session, t))
        .collect::<Option<Vec<_>>>()?;
    let conditions = ast_shape::conjuncts(selection)
        .into_iter()
        .map(|e| conditions_of(&tables, e))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    let (order, keys) = reading_order(&tables, &conditions)?;
    // Each table's place in the reading order, by its place in the FROM list.
    let mut place = vec![0; tables.len()];
    for (at, &t) in order.iter().enumerate() {
        place[t] = at;
    }
    let placed = |(t, c): (usize, usize)| (place[t], c);
    let mut filters = vec![Vec::new(); tables.len()];
    for condition in conditions {
        let (at, filter) = match condition {
            Condition::Compare { column, op, value } => (
                place[column.0],
                Filter {
                    column: placed(column),
                    op,
                    with: Compared::Value(value),
                },
            ),
            Condition::Equal(a, b) => {
                let (a, b) = (placed(a), placed(b));
                (
                    a.0.max(b.0),
                    Filter {
                        column: a,
                        op: Comparison::Eq,
                        with: Compared::Column(b.0, b.1),
                    },
                )
            }
        };
        filters[at].push(filter);
    }
    let keys = keys
        .into_iter()
        .map(|key| match key {
            JoinKey::Whole(parts) => JoinKey::Whole(
                parts
                    .into_iter()
                    .map(|part| match part {
                        KeyPart::Column(t, c) => KeyPart::Column(place[t], c),
                        given => given,
                    })
                    .collect(),
            ),
            range => range,
        })
        .collect::<Vec<_>>();
    let mut columns = Vec::new();
    let output = output(&tables, projection, |named| {
        position(&mut columns, placed(named))
    })?;
    let tables: Vec<_> = order
        .iter()
        .map(|&t| Arc::clone(&tables[t].table))
        .zip(keys)
        .collect();
    Some(Shape {
        table: Arc::clone(&tables[0].0),
        kind: Kind::Join(Box::new(KeyJoin {
            tables,
            filters,
            columns,
            output,
        })),
    })
}

/// A table of the FROM list and the name its columns are qualified by.
struct Bound {
    table: Arc<Table>,
    name: String,
}

/// A plain table of the FROM list, aliased or not (without column aliases).
fn bound_table(session: &Session, t: &TableWithJoins) -> Option<Bound> {
    let TableWithJoins { relation, joins } = t;
    if !joins.is_empty() {
        return None;
    }
    let (name, alias) = ast_shape::plain_table(relation)?;
    let table = table_named(session, name)?;
    let name = match alias {
        None => object_name(name).ok()?.name,
        Some(TableAlias {
            explicit: _,
            name,
            columns,
            at: None,
        }) if columns.is_empty() => ident_name(name),
        Some(_) => return None,
    };
    Some(Bound { table, name })
}

/// The table (its place in the FROM list) and column that `e` names: a column of
/// exactly one of them, or one qualified by a table's name.
fn column(tables: &[Bound], e: &Expr) -> Option<(usize, usize)> {
    match e {
        Expr::Nested(e) => column(tables, e),
        Expr::Identifier(i) => {
            let name = ident_name(i);
            let mut found = tables
                .iter()
                .enumerate()
                .filter_map(|(t, b)| Some((t, b.table.def().column(&name)?)));
            let one = found.next()?;
            found.next().is_none().then_some(one)
        }
        Expr::CompoundIdentifier(parts) => {
            let [qualifier, name] = parts.as_slice() else {
                return None;
            };
            let qualifier = ident_name(qualifier);
            let mut named = tables
                .iter()
                .enumerate()
                .filter(|(_, b)| b.name == qualifier);
            let (t, b) = named.next()?;
            if named.next().is_some() {
                return None;
            }
            Some((t, b.table.def().column(&ident_name(name))?))
        }
        _ => None,
    }
}

fn type_of(tables: &[Bound], (t, c): (usize, usize)) -> SqlType {
    tables[t].table.types()[c]
}

/// Types whose values the fast path compares as the general way does: those it orders,
/// but CHAR, whose trailing blanks do not count.
fn comparable(ty: SqlType) -> bool {
    orderable(ty) && !matches!(ty, SqlType::Char(_))
}

/// A comparison of the WHERE clause, its columns as tables' places in the FROM list.
enum Condition {
    /// A column with a value of its type.
    Compare {
        column: (usize, usize),
        op: Comparison,
        value: Operand,
    },
    /// Two columns of one type, equal.
    Equal((usize, usize), (usize, usize)),
}

/// What the conjunct `e` says: a comparison of a column with a value or with another
/// column, or that a column lies BETWEEN two values.
fn conditions_of(tables: &[Bound], e: &Expr) -> Option<Vec<Condition>> {
    let compare = |named: (usize, usize), op: Comparison, value: &Expr| {
        let ty = type_of(tables, named);
        Some(Condition::Compare {
            column: named,
            op,
            value: operand(value, ty)?,
        })
    };
    match e {
        Expr::BinaryOp { left, op, right } => {
            let op = comparison(op)?;
            match (column(tables, left), column(tables, right)) {
                (Some(a), Some(b)) => {
                    let ty = type_of(tables, a);
                    let same = ty == type_of(tables, b) && comparable(ty);
                    (same && op == Comparison::Eq).then(|| vec![Condition::Equal(a, b)])
                }
                (Some(a), None) if comparable(type_of(tables, a)) => {
                    Some(vec![compare(a, op, right)?])
                }
                (None, Some(b)) if comparable(type_of(tables, b)) => {
                    Some(vec![compare(b, op.swapped(), left)?])
                }
                _ => None,
            }
        }
        Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } => {
            let named = column(tables, expr)?;
            if !comparable(type_of(tables, named)) {
                return None;
            }
            Some(vec![
                compare(named, Comparison::GtEq, low)?,
                compare(named, Comparison::LtEq, high)?,
            ])
        }
        _ => None,
    }
}

fn comparison(op: &BinaryOperator) -> Option<Comparison> {
    Some(match op {
        BinaryOperator::Eq => Comparison::Eq,
        BinaryOperator::NotEq => Comparison::NotEq,
        BinaryOperator::Lt => Comparison::Lt,
        BinaryOperator::LtEq => Comparison::LtEq,
        BinaryOperator::Gt => Comparison::Gt,
        BinaryOperator::GtEq => Comparison::GtEq,
        _ => return None,
    })
}

/// The order the tables are read in (their places in the FROM list) and how each is
/// read, with key columns named by FROM-list places: the driver first (one read by its
/// whole key if there is one, else the first whose key a range narrows), then each
/// table whose whole key the values and the tables before it give.
fn reading_order(tables: &[Bound], conditions: &[Condition]) -> Option<(Vec<usize>, Vec<JoinKey>)> {
    let drivers: Vec<(usize, RangeKeys)> = (0..tables.len())
        .filter_map(|t| Some((t, driver_keys(tables, conditions, t)?)))
        .collect();
    let whole =
        |(t, keys): &&(usize, RangeKeys)| keys.fixed() == tables[*t].table.def().primary_key.len();
    let preferred = drivers.iter().filter(whole).chain(drivers.iter());
    preferred.into_iter().find_map(|(driver, keys)| {
        let mut order = vec![*driver];
        let mut how = vec![JoinKey::Range(keys.clone())];
        while order.len() < tables.len() {
            let (t, parts) = (0..tables.len())
                .filter(|t| !order.contains(t))
                .find_map(|t| Some((t, whole_key(tables, conditions, &order, t)?)))?;
            order.push(t);
            how.push(JoinKey::Whole(parts));
        }
        Some((order, how))
    })
}

/// The operands a value equals, in the comparisons of column `named`.
fn equal_values(conditions: &[Condition], named: (usize, usize)) -> impl Iterator<Item = &Operand> {
    conditions.iter().filter_map(move |c| match c {
        Condition::Compare {
            column,
            op: Comparison::Eq,
            value,
        } if *column == named && !is_null(value) => Some(value),
        _ => None,
    })
}

fn is_null(op: &Operand) -> bool {
    matches!(op, Operand::Value(Value::Null))
}

/// The range of table `t`'s primary key its comparisons with values narrow: the
/// leading columns equal to a value, and bounds on the next one; `None` if they narrow
/// nothing. Any one value serves where a column has several: all are checked on the
/// rows.
fn driver_keys(tables: &[Bound], conditions: &[Condition], t: usize) -> Option<RangeKeys> {
    let mut prefix = Vec::new();
    let (mut low, mut high) = (None, None);
    for &k in &tables[t].table.def().primary_key {
        let named = (t, usize::from(k));
        if let Some(value) = equal_values(conditions, named).next() {
            prefix.push(value.clone());
            continue;
        }
        for c in conditions {
            let Condition::Compare { column, op, value } = c else {
                continue;
            };
            if *column != named || is_null(value) {
                continue;
            }
            let (side, inclusive) = match op {
                Comparison::Gt => (&mut low, false),
                Comparison::GtEq => (&mut low, true),
                Comparison::Lt => (&mut high, false),
                Comparison::LtEq => (&mut high, true),
                Comparison::Eq | Comparison::NotEq => continue,
            };
            side.get_or_insert_with(|| (value.clone(), inclusive));
        }
        break;
    }
    (!prefix.is_empty() || low.is_some() || high.is_some()).then_some(RangeKeys::Bounded {
        prefix,
        low,
        high,
    })
}

/// Each column of table `t`'s primary key as a value it equals, or as a column of the
/// same type of a table in `read` that it equals; `None` if one has neither.
fn whole_key(
    tables: &[Bound],
    conditions: &[Condition],
    read: &[usize],
    t: usize,
) -> Option<Vec<KeyPart>> {
    tables[t]
        .table
        .def()
        .primary_key
        .iter()
        .map(|&k| {
            let named = (t, usize::from(k));
            if let Some(value) = equal_values(conditions, named).next() {
                return Some(KeyPart::Given(value.clone()));
            }
            conditions.iter().find_map(|c| match c {
                Condition::Equal(a, b) if *a == named && read.contains(&b.0) => {
                    Some(KeyPart::Column(b.0, b.1))
                }
                Condition::Equal(a, b) if *b == named && read.contains(&a.0) => {
                    Some(KeyPart::Column(a.0, a.1))
                }
                _ => None,
            })
        })
        .collect()
}

/// The select list as the join's result: columns, each with its name (its alias, or
/// the column's own), or aggregates of columns (each named by its alias, or as
/// PostgreSQL names it), never both; `column` gives the place among the columns read
/// of a table's column (by its FROM-list place).
fn output(
    tables: &[Bound],
    projection: &[SelectItem],
    mut column_at: impl FnMut((usize, usize)) -> usize,
) -> Option<JoinOutput> {
    let mut shown = Vec::new();
    let mut aggregates = Vec::new();
    for item in projection {
        let (e, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(ident_name(alias))),
            _ => return None,
        };
        match column(tables, e) {
            Some(named) => {
                let (t, c) = named;
                let name = alias.unwrap_or_else(|| tables[t].table.def().columns[c].name.clone());
                shown.push((column_at(named), name));
            }
            None => {
                let (f, name) = aggregate(e, |e| {
                    let named = column(tables, e)?;
                    Some((column_at(named), type_of(tables, named)))
                })?;
                aggregates.push(GroupItem::Aggregate(f, alias.unwrap_or(name)));
            }
        }
    }
    match (shown.is_empty(), aggregates.is_empty()) {
        (false, true) => Some(JoinOutput::Rows(shown)),
        (true, false) => Some(JoinOutput::Aggregates(aggregates)),
        _ => None,
    }
}
