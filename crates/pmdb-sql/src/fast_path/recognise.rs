//! Which statements the fast path serves, recognised by the shape of their syntax tree.
//! Each node is taken apart with every one of its fields named (no `..`), and each field
//! that is not part of a served form must be empty: no clause can be overlooked, and a
//! parser upgrade that adds a field fails to build here until the field is judged.
//! Optimizer hints (`/*+ … */`, which the parser keeps for pg_hint_plan) are comments,
//! as PostgreSQL without that extension reads them: go-tpc's Stock-Level carries one.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    Assignment, AssignmentTarget, BinaryOperator, Delete, Distinct, Expr, FromTable,
    FunctionArgExpr, GroupByExpr, Insert, LockClause, ObjectName, Query, Select, SelectFlavor,
    SelectItem, SetExpr, Statement, TableFactor, TableObject, TableWithJoins, UnaryOperator,
    Update, Value as Literal, Values, WildcardAdditionalOptions,
};

use super::shape::{Base, Kind, NewValue, Operand, RowLock, Shape, delta_type, units};
use crate::arrow_conv::without_trailing_blanks;
use crate::ast_shape;
use crate::lock_clauses::clause;
use crate::names::{ident_name, object_name};
use crate::referential::reaches_references;
use crate::row_constructors;
use crate::sequence_functions::named_sequence;
use crate::session::Session;
use crate::table::Table;
use crate::types::{SqlType, Value};

/// What the fast path does for `s` by one row's key, an IN list of them or rows of
/// values; `None` if it does not.
pub(super) fn by_keys(session: &Session, s: &Statement) -> Option<Shape> {
    match s {
        Statement::Query(q) => select(session, q),
        Statement::Update(u) => update(session, u),
        Statement::Delete(d) => delete(session, d),
        Statement::Insert(i) => insert(session, i),
        _ => None,
    }
}

/// The table a plain reference names: no alias, no join, no clause of any kind.
pub(super) fn plain_table(t: &TableWithJoins, session: &Session) -> Option<Arc<Table>> {
    let TableWithJoins { relation, joins } = t;
    match ast_shape::plain_table(relation) {
        Some((name, None)) if joins.is_empty() => table_named(session, name),
        _ => None,
    }
}

pub(super) fn table_named(session: &Session, name: &ObjectName) -> Option<Arc<Table>> {
    session
        .catalog
        .table_seen_by(&object_name(name).ok()?, session.viewer)
}

/// `pk1 = v1 AND pk2 = v2 …`, each column of the primary key once, in any order: the
/// key's operands in key order.
fn key_equality(table: &Table, e: &Expr) -> Option<Vec<Operand>> {
    let pk = &table.def().primary_key;
    let mut key: Vec<Option<Operand>> = vec![None; pk.len()];
    for (left, right) in ast_shape::equalities(e)? {
        let column = column_of(table, left)?;
        let at = pk.iter().position(|&c| usize::from(c) == column)?;
        let operand = operand(right, table.types()[column])?;
        if matches!(operand, Operand::Value(Value::Null)) || key[at].is_some() {
            return None;
        }
        key[at] = Some(operand);
    }
    key.into_iter().collect()
}

/// The keys a WHERE clause names: one whole key by equalities, or an IN list of whole
/// keys or of prefixes of them (each naming every row whose key begins with it).
fn keys(table: &Table, e: &Expr) -> Option<Vec<Vec<Operand>>> {
    key_equality(table, e)
        .map(|key| vec![key])
        .or_else(|| key_list(table, e))
}

/// Most keys an IN list the fast path serves may name.
const MAX_KEYS: usize = 1000;

/// `pk1 IN (v, …)`, or `(pk1, pk2, …) IN ((v1, v2, …), …)` naming each of the key's
/// leading columns (all of them, or fewer: a prefix) once in any order: each key's or
/// prefix's operands in key order.
pub(super) fn key_list(table: &Table, e: &Expr) -> Option<Vec<Vec<Operand>>> {
    let Expr::InList {
        expr,
        list,
        negated: false,
    } = e
    else {
        return None;
    };
    let pk = &table.def().primary_key;
    let columns: Vec<&Expr> = row_constructors::items(expr).unwrap_or_else(|| vec![expr]);
    if columns.len() > pk.len() || list.is_empty() || list.len() > MAX_KEYS {
        return None;
    }
    // For each key column, where the row lists its value.
    let mut at = vec![None; columns.len()];
    for (i, c) in columns.iter().enumerate() {
        let column = column_of(table, c)?;
        let k = pk.iter().position(|&p| usize::from(p) == column)?;
        if at.get_mut(k)?.replace(i).is_some() {
            return None;
        }
    }
    let at: Vec<usize> = at.into_iter().collect::<Option<_>>()?;
    list.iter()
        .map(|item| {
            let values = match row_constructors::items(item) {
                Some(values) if columns.len() > 1 => values,
                None if columns.len() == 1 => vec![item],
                _ => return None,
            };
            if values.len() != columns.len() {
                return None;
            }
            at.iter()
                .zip(pk)
                .map(|(&i, &column)| {
                    let op = operand(values[i], table.types()[usize::from(column)])?;
                    (!matches!(op, Operand::Value(Value::Null))).then_some(op)
                })
                .collect()
        })
        .collect()
}

/// The position of the plain column `e` names.
pub(super) fn column_of(table: &Table, e: &Expr) -> Option<usize> {
    match e {
        Expr::Identifier(i) => table.def().column(&ident_name(i)),
        _ => None,
    }
}

/// `e` as a value of a column of type `ty`: a parameter, or a literal that converts
/// exactly.
pub(super) fn operand(e: &Expr, ty: SqlType) -> Option<Operand> {
    match e {
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Literal::Number(n, false) => number(&format!("-{n}"), ty).map(Operand::Value),
                _ => None,
            },
            _ => None,
        },
        Expr::Value(v) => match (&v.value, ty) {
            (Literal::Placeholder(p), _) => {
                let n: usize = p.strip_prefix('$')?.parse().ok()?;
                Some(Operand::Param(n.checked_sub(1)?))
            }
            (Literal::Null, _) => Some(Operand::Value(Value::Null)),
            (Literal::Number(n, false), _) => number(n, ty).map(Operand::Value),
            (Literal::Boolean(b), SqlType::Boolean) => Some(Operand::Value(Value::Boolean(*b))),
            (Literal::SingleQuotedString(s), SqlType::Char(_)) => Some(Operand::Value(Value::Str(
                without_trailing_blanks(s).to_owned(),
            ))),
            (Literal::SingleQuotedString(s), SqlType::Varchar(_) | SqlType::Text) => {
                Some(Operand::Value(Value::Str(s.clone())))
            }
            _ => None,
        },
        // `v ± number` (Stock-Level's `$4 - 20`), in the column's type.
        Expr::BinaryOp { left, op, right } if summable(ty) => {
            let negate = match op {
                BinaryOperator::Plus => false,
                BinaryOperator::Minus => true,
                _ => return None,
            };
            let base @ (Operand::Param(_) | Operand::Value(_)) = operand(left, ty)? else {
                return None;
            };
            let Expr::Value(v) = right.as_ref() else {
                return None;
            };
            let Literal::Number(n, false) = &v.value else {
                return None;
            };
            let n = units(&number(n, ty)?)?;
            Some(Operand::Offset(
                Box::new(base),
                if negate { n.checked_neg()? } else { n },
            ))
        }
        // The same function by either name, as DataFusion has it.
        Expr::Function(f)
            if ty == SqlType::Timestamp
                && ["CURRENT_TIMESTAMP", "now()"]
                    .iter()
                    .any(|name| f.to_string().eq_ignore_ascii_case(name)) =>
        {
            Some(Operand::Now)
        }
        _ => None,
    }
}

/// A call of a function named by one plain name with one unnamed argument and no other
/// clause: the function's name and the argument.
fn plain_call(e: &Expr) -> Option<(String, &FunctionArgExpr)> {
    let (name, args) = ast_shape::plain_call(e)?;
    let [arg] = args.as_slice() else {
        return None;
    };
    Some((ident_name(name), arg))
}

/// `nextval('name')` of a sequence the catalog has: a serial column's default.
fn next_value(session: &Session, e: &Expr) -> Option<Operand> {
    let (function, FunctionArgExpr::Expr(Expr::Value(v))) = plain_call(e)? else {
        return None;
    };
    let Literal::SingleQuotedString(text) = &v.value else {
        return None;
    };
    if function != "nextval" {
        return None;
    }
    let seq = named_sequence(&session.catalog, &session.search_path.schemas(), text).ok()?;
    Some(Operand::NextVal(seq))
}

fn number(n: &str, ty: SqlType) -> Option<Value> {
    Some(match ty {
        SqlType::SmallInt => Value::SmallInt(n.parse().ok()?),
        SqlType::Int => Value::Int(n.parse().ok()?),
        SqlType::BigInt => Value::BigInt(n.parse().ok()?),
        SqlType::Decimal { scale, .. } => {
            let (whole, frac) = n.split_once('.').unwrap_or((n, ""));
            if frac.len() > scale as usize || !frac.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let digits = format!("{whole}{frac:0<width$}", width = scale as usize);
            Value::Decimal(digits.parse().ok()?)
        }
        _ => return None,
    })
}

/// The row lock the locking clauses `locks` of a SELECT from the table `name` ask for
/// (`Some(None)` for none); `None` if one names another table, or they disagree on
/// NOWAIT or SKIP LOCKED (the general way sorts those out).
pub(super) fn row_lock(locks: &[LockClause], name: &str) -> Option<Option<RowLock>> {
    let mut lock: Option<RowLock> = None;
    for c in locks {
        let c = clause(c).ok()?;
        if c.of.as_ref().is_some_and(|of| of != name) {
            return None;
        }
        // Several clauses on one row: the strongest mode.
        lock = Some(match lock {
            None => RowLock {
                mode: c.mode,
                policy: c.policy,
            },
            Some(l) if l.policy == c.policy => RowLock {
                mode: l.mode.max(c.mode),
                policy: c.policy,
            },
            Some(_) => return None,
        });
    }
    Some(lock)
}

/// A SELECT of one plain table with a WHERE clause and no other clause but DISTINCT
/// (without ON) and GROUP BY (without modifiers): the table, the select list, the WHERE
/// clause, whether it is DISTINCT, what it groups by, and the table's name as locking
/// clauses name it.
pub(super) struct SimpleSelect<'a> {
    pub table: Arc<Table>,
    pub projection: &'a [SelectItem],
    pub selection: &'a Expr,
    pub distinct: bool,
    pub group_by: &'a [Expr],
    pub name: String,
}

pub(super) fn simple_select<'a>(session: &Session, sel: &'a Select) -> Option<SimpleSelect<'a>> {
    let PlainSelect {
        projection,
        from,
        selection,
        distinct,
        group_by,
    } = plain_select(sel)?;
    let [from] = from else {
        return None;
    };
    let TableWithJoins {
        relation: TableFactor::Table { name, .. },
        ..
    } = from
    else {
        return None;
    };
    let name = object_name(name).ok()?.name;
    let table = plain_table(from, session)?;
    Some(SimpleSelect {
        table,
        projection,
        selection,
        distinct,
        group_by,
        name,
    })
}

/// A SELECT with a WHERE clause and no other clause but DISTINCT (without ON) and GROUP
/// BY (without modifiers): its select list, FROM list, WHERE clause, whether it is
/// DISTINCT and what it groups by.
pub(super) struct PlainSelect<'a> {
    pub projection: &'a [SelectItem],
    pub from: &'a [TableWithJoins],
    pub selection: &'a Expr,
    pub distinct: bool,
    pub group_by: &'a [Expr],
}

pub(super) fn plain_select(sel: &Select) -> Option<PlainSelect<'_>> {
    let Select {
        select_token: _,
        optimizer_hints: _,
        distinct,
        select_modifiers: None,
        top: None,
        top_before_distinct: _,
        projection,
        exclude: None,
        into: None,
        from,
        lateral_views,
        prewhere: None,
        selection: Some(selection),
        connect_by,
        group_by: GroupByExpr::Expressions(group_by, modifiers),
        cluster_by,
        distribute_by,
        sort_by,
        having: None,
        named_window,
        qualify: None,
        window_before_qualify: _,
        value_table_mode: None,
        flavor: SelectFlavor::Standard,
    } = sel
    else {
        return None;
    };
    let distinct = match distinct {
        None => false,
        Some(Distinct::Distinct) => true,
        Some(Distinct::All | Distinct::On(_)) => return None,
    };
    let empty = lateral_views.is_empty()
        && connect_by.is_empty()
        && modifiers.is_empty()
        && cluster_by.is_empty()
        && distribute_by.is_empty()
        && sort_by.is_empty()
        && named_window.is_empty();
    empty.then_some(PlainSelect {
        projection,
        from,
        selection,
        distinct,
        group_by,
    })
}

fn select(session: &Session, q: &Query) -> Option<Shape> {
    let (SetExpr::Select(sel), locks) = ast_shape::bare_query(q)? else {
        return None;
    };
    let SimpleSelect {
        table,
        projection,
        selection,
        distinct: false,
        group_by: [],
        name,
    } = simple_select(session, sel)?
    else {
        return None;
    };
    let lock = row_lock(locks, &name)?;
    let keys = keys(&table, selection)?;
    let mut columns = Vec::with_capacity(projection.len());
    let mut shown = Vec::with_capacity(projection.len());
    for item in projection {
        match item {
            SelectItem::Wildcard(options) if *options == plain_wildcard(options) => {
                shown.extend((0..table.types().len()).map(|c| position(&mut columns, c)))
            }
            SelectItem::UnnamedExpr(e) => shown.push(position(&mut columns, column_of(&table, e)?)),
            _ => return None,
        }
    }
    Some(Shape {
        table,
        kind: Kind::Select {
            keys,
            columns,
            shown,
            lock,
        },
    })
}

/// The place of table column `column` among `columns`, added if it is not there: each
/// column is read once, however often a select list shows it.
pub(super) fn position<C: PartialEq + Copy>(columns: &mut Vec<C>, column: C) -> usize {
    columns
        .iter()
        .position(|&c| c == column)
        .unwrap_or_else(|| {
            columns.push(column);
            columns.len() - 1
        })
}

/// `*` as written with no option, keeping `options`' token.
pub(super) fn plain_wildcard(options: &WildcardAdditionalOptions) -> WildcardAdditionalOptions {
    WildcardAdditionalOptions {
        wildcard_token: options.wildcard_token.clone(),
        ..Default::default()
    }
}

/// Types the fast path adds to: the integers and decimals.
pub(super) fn summable(ty: SqlType) -> bool {
    matches!(
        ty,
        SqlType::SmallInt | SqlType::Int | SqlType::BigInt | SqlType::Decimal { .. }
    )
}

fn new_value(table: &Table, target: usize, e: &Expr) -> Option<NewValue> {
    let ty = table.types()[target];
    if let Some(v) = operand(e, ty) {
        return Some(NewValue::Set(v));
    }
    let Expr::BinaryOp { left, op, right } = e else {
        return None;
    };
    if !summable(ty) {
        return None;
    }
    // `col ± v` of a column of the target's type, or `v ± v` (`$1 + 1`).
    let base = match column_of(table, left) {
        Some(column) if table.types()[column] == ty => Base::Column(column),
        Some(_) => return None,
        None => Base::Value(operand(left, delta_type(ty))?),
    };
    let delta = operand(right, delta_type(ty))?;
    let null = |o: &Operand| matches!(o, Operand::Value(Value::Null));
    if null(&delta) || matches!(&base, Base::Value(v) if null(v)) {
        return None;
    }
    let negate = match op {
        BinaryOperator::Plus => false,
        BinaryOperator::Minus => true,
        _ => return None,
    };
    Some(NewValue::Add {
        base,
        delta,
        negate,
    })
}

fn update(session: &Session, u: &Update) -> Option<Shape> {
    let Update {
        update_token: _,
        optimizer_hints: _,
        table,
        assignments,
        from: None,
        selection: Some(selection),
        returning: None,
        output: None,
        or: None,
        order_by,
        limit: None,
    } = u
    else {
        return None;
    };
    if !order_by.is_empty() {
        return None;
    }
    let table = plain_table(table, session)?;
    let keys = keys(&table, selection)?;
    let mut changes = Vec::with_capacity(assignments.len());
    for Assignment { target, value } in assignments {
        let AssignmentTarget::ColumnName(ObjectName(parts)) = target else {
            return None;
        };
        let [part] = parts.as_slice() else {
            return None;
        };
        let target = table.def().column(&ident_name(part.as_ident()?))?;
        if table.def().primary_key.contains(&(target as u16))
            || changes.iter().any(|(t, _)| *t == target)
        {
            return None;
        }
        changes.push((target, new_value(&table, target, value)?));
    }
    // Rows that reference the changed columns need their foreign keys' actions.
    let targets: Vec<usize> = changes.iter().map(|(t, _)| *t).collect();
    if reaches_references(session, table.def().id, Some(&targets)) {
        return None;
    }
    Some(Shape {
        table,
        kind: Kind::Update { keys, changes },
    })
}

fn delete(session: &Session, d: &Delete) -> Option<Shape> {
    let Delete {
        delete_token: _,
        optimizer_hints: _,
        tables,
        from: FromTable::WithFromKeyword(from),
        using: None,
        selection: Some(selection),
        returning: None,
        output: None,
        order_by,
        limit: None,
    } = d
    else {
        return None;
    };
    if !tables.is_empty() || !order_by.is_empty() {
        return None;
    }
    let [from] = from.as_slice() else { return None };
    let table = plain_table(from, session)?;
    let keys = keys(&table, selection)?;
    if reaches_references(session, table.def().id, None) {
        return None;
    }
    Some(Shape {
        table,
        kind: Kind::Delete { keys },
    })
}

fn insert(session: &Session, i: &Insert) -> Option<Shape> {
    let Insert {
        insert_token: _,
        optimizer_hints: _,
        or: None,
        ignore: false,
        into: true,
        table: TableObject::TableName(name),
        table_alias: None,
        columns,
        overwrite: false,
        source: Some(source),
        assignments,
        partitioned: None,
        after_columns,
        has_table_keyword: false,
        on: None,
        returning: None,
        output: None,
        replace_into: false,
        priority: None,
        insert_alias: None,
        settings: None,
        format_clause: None,
        multi_table_insert_type: None,
        multi_table_into_clauses,
        multi_table_when_clauses,
        multi_table_else_clause: None,
    } = i
    else {
        return None;
    };
    if !assignments.is_empty()
        || !after_columns.is_empty()
        || !multi_table_into_clauses.is_empty()
        || !multi_table_when_clauses.is_empty()
    {
        return None;
    }
    let table = table_named(session, name)?;
    let positions: Vec<usize> = if columns.is_empty() {
        (0..table.types().len()).collect()
    } else {
        columns
            .iter()
            .map(|c| match c.0.as_slice() {
                [part] => table.def().column(&ident_name(part.as_ident()?)),
                _ => None,
            })
            .collect::<Option<_>>()?
    };
    if (1..positions.len()).any(|i| positions[..i].contains(&positions[i])) {
        return None;
    }
    let (body, []) = ast_shape::bare_query(source)? else {
        return None;
    };
    let SetExpr::Values(Values {
        explicit_row: false,
        value_keyword: _,
        rows: values,
    }) = body
    else {
        return None;
    };
    let mut rows = Vec::with_capacity(values.len());
    for exprs in values {
        let exprs = &exprs.content;
        if exprs.len() != positions.len() {
            return None;
        }
        let row = positions
            .iter()
            .zip(exprs)
            .map(|(&p, e)| next_value(session, e).or_else(|| operand(e, table.types()[p])))
            .collect::<Option<Vec<_>>>()?;
        rows.push(row);
    }
    Some(Shape {
        table,
        kind: Kind::Insert { positions, rows },
    })
}
