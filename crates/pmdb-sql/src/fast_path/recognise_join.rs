//! Joins of rows read by their whole keys, recognised by their syntax tree: a SELECT of
//! two or more tables whose WHERE clause sets every primary-key column of each equal to
//! a value, directly or through key columns of the others, as New-Order reads its
//! customer and warehouse:
//!
//! `SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse
//!  WHERE w_id = $1 AND c_w_id = w_id AND c_d_id = $2 AND c_id = $3`
//!
//! Each table then gives at most one row, and the join at most one. Columns are named
//! plainly (`c_id`) or by their table or its alias (`c.c_id`); the select list shows
//! columns, aliased or not. Any other condition, clause or item goes the general way.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    Expr, Query, SelectItem, SetExpr, TableAlias, TableWithJoins,
};

use super::recognise::{PlainSelect, operand, plain_select, table_named};
use super::shape::{Kind, Operand, PointJoin, Shape};
use crate::ast_shape;
use crate::names::{ident_name, object_name};
use crate::session::Session;
use crate::table::Table;
use crate::types::Value;

/// Most tables a join of keyed rows names.
const MAX_TABLES: usize = 8;

pub(super) fn point_join(session: &Session, q: &Query) -> Option<Shape> {
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
    let keys = keys(&tables, selection)?;
    let mut columns: Vec<Vec<usize>> = vec![Vec::new(); tables.len()];
    let mut shown = Vec::with_capacity(projection.len());
    for item in projection {
        let (e, name) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(ident_name(alias))),
            _ => return None,
        };
        let (t, c) = column(&tables, e)?;
        let name = name.unwrap_or_else(|| tables[t].table.def().columns[c].name.clone());
        let at = super::recognise::position(&mut columns[t], c);
        shown.push((t, at, name));
    }
    let tables: Vec<_> = tables.into_iter().map(|b| b.table).zip(keys).collect();
    Some(Shape {
        table: Arc::clone(&tables[0].0),
        kind: Kind::Join(Box::new(PointJoin {
            tables,
            columns,
            shown,
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

/// Each table's key operands (in key order) that the WHERE clause `e` sets: equalities
/// between key columns, or of a key column and a value, joined by AND, that leave each
/// key column equal to exactly one value.
fn keys(tables: &[Bound], e: &Expr) -> Option<Vec<Vec<Operand>>> {
    // Key columns as (table, place in its key), grouped into the classes the
    // equalities make; each class with the value it equals.
    let key_of = |(t, c): (usize, usize)| {
        let pk = &tables[t].table.def().primary_key;
        let at = pk.iter().position(|&k| usize::from(k) == c)?;
        Some((t, at))
    };
    let mut class: Vec<Vec<usize>> = tables
        .iter()
        .map(|b| vec![usize::MAX; b.table.def().primary_key.len()])
        .collect();
    let mut classes: Vec<Class> = Vec::new();
    for (left, right) in ast_shape::equalities(e)? {
        let mut member = |e: &Expr| -> Option<Option<usize>> {
            let Some(named) = column(tables, e) else {
                return Some(None);
            };
            let (t, at) = key_of(named)?;
            if class[t][at] == usize::MAX {
                class[t][at] = classes.len();
                classes.push((vec![(t, at)], None));
            }
            Some(Some(class[t][at]))
        };
        match (member(left)?, member(right)?) {
            (Some(a), Some(b)) if a != b => {
                let (moved, value) = std::mem::take(&mut classes[b]);
                for &(t, at) in &moved {
                    class[t][at] = a;
                }
                classes[a].0.extend(moved);
                classes[a].1 = one_value(classes[a].1, value)?;
            }
            (Some(_), Some(_)) => {}
            (Some(a), None) => classes[a].1 = one_value(classes[a].1, Some(right))?,
            (None, Some(b)) => classes[b].1 = one_value(classes[b].1, Some(left))?,
            (None, None) => return None,
        }
    }
    tables
        .iter()
        .zip(&class)
        .map(|(b, members)| {
            if members.is_empty() {
                return None;
            }
            members
                .iter()
                .enumerate()
                .map(|(at, &c)| {
                    let value = classes.get(c)?.1?;
                    let column = usize::from(b.table.def().primary_key[at]);
                    let op = operand(value, b.table.types()[column])?;
                    (!matches!(op, Operand::Value(Value::Null))).then_some(op)
                })
                .collect()
        })
        .collect()
}

/// Key columns found equal (each as its table and its place in the table's key), and
/// the value they equal, once one is named.
type Class<'a> = (Vec<(usize, usize)>, Option<&'a Expr>);

/// The one value a class of key columns equals, given what it had and a new one.
fn one_value<'a>(had: Option<&'a Expr>, new: Option<&'a Expr>) -> Option<Option<&'a Expr>> {
    match (had, new) {
        (Some(_), Some(_)) => None,
        (had, new) => Some(had.or(new)),
    }
}
