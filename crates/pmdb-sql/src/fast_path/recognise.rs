//! Which statements the fast path serves: a statement is taken only if printing back
//! the parts recognised gives its exact text, so no clause can be overlooked.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, BinaryOperator, Expr, FromTable, ObjectName, SelectItem, SetExpr, Statement,
    TableFactor, TableObject, TableWithJoins, UnaryOperator, Value as Literal,
};

use super::shape::{Kind, NewValue, Operand, Shape};
use crate::ddl::{ident_name, object_name};
use crate::session::Session;
use crate::table::Table;
use crate::types::{SqlType, Value};

/// What the fast path does for `s`; `None` if it does not serve it.
pub(crate) fn recognise(session: &Session, s: &Statement) -> Option<Shape> {
    match s {
        Statement::Query(_) => select(session, s),
        Statement::Update(_) => update(session, s),
        Statement::Delete(_) => delete(session, s),
        Statement::Insert(_) => insert(session, s),
        _ => None,
    }
}

/// The table a single plain table reference names.
fn plain_table(t: &TableWithJoins, session: &Session) -> Option<(Arc<Table>, String)> {
    if !t.joins.is_empty() {
        return None;
    }
    let TableFactor::Table {
        name, alias: None, ..
    } = &t.relation
    else {
        return None;
    };
    let table = session.catalog.table(&object_name(name).ok()?)?;
    Some((table, name.to_string()))
}

/// `pk = v` on a table with a one-column primary key: the key's operand, and the
/// condition as printed back.
fn key_equality(table: &Table, e: &Expr) -> Option<(Operand, String)> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = e
    else {
        return None;
    };
    let [pk] = table.def().primary_key.as_slice() else {
        return None;
    };
    let column = column_of(table, left)?;
    if column != *pk as usize {
        return None;
    }
    let key = operand(right, table.types()[column])?;
    if matches!(key, Operand::Value(Value::Null)) {
        return None;
    }
    Some((key, format!("{left} = {right}")))
}

/// The position of the plain column `e` names.
fn column_of(table: &Table, e: &Expr) -> Option<usize> {
    match e {
        Expr::Identifier(i) => table.def().column(&ident_name(i)),
        _ => None,
    }
}

/// `e` as a value of a column of type `ty`: a parameter, or a literal that converts
/// exactly.
fn operand(e: &Expr, ty: SqlType) -> Option<Operand> {
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
            (
                Literal::SingleQuotedString(s),
                SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text,
            ) => Some(Operand::Value(Value::Str(s.clone()))),
            _ => None,
        },
        Expr::Function(f)
            if ty == SqlType::Timestamp
                && f.to_string().eq_ignore_ascii_case("CURRENT_TIMESTAMP") =>
        {
            Some(Operand::Now)
        }
        _ => None,
    }
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

fn select(session: &Session, s: &Statement) -> Option<Shape> {
    let Statement::Query(q) = s else { return None };
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return None;
    };
    let [from] = sel.from.as_slice() else {
        return None;
    };
    let (table, name) = plain_table(from, session)?;
    let (key, condition) = key_equality(&table, sel.selection.as_ref()?)?;
    let mut projection = Vec::with_capacity(sel.projection.len());
    for item in &sel.projection {
        match item {
            SelectItem::Wildcard(w) if w.to_string() == "*" => {
                projection.extend(0..table.types().len())
            }
            SelectItem::UnnamedExpr(e) => projection.push(column_of(&table, e)?),
            _ => return None,
        }
    }
    let items: Vec<String> = sel.projection.iter().map(ToString::to_string).collect();
    let canonical = format!("SELECT {} FROM {name} WHERE {condition}", items.join(", "));
    (s.to_string() == canonical).then_some(Shape {
        table,
        kind: Kind::Select { key, projection },
    })
}

fn new_value(table: &Table, target: usize, e: &Expr) -> Option<NewValue> {
    let ty = table.types()[target];
    if let Some(v) = operand(e, ty) {
        return Some(NewValue::Set(v));
    }
    let Expr::BinaryOp { left, op, right } = e else {
        return None;
    };
    let column = column_of(table, left)?;
    let integer = |t: SqlType| matches!(t, SqlType::SmallInt | SqlType::Int | SqlType::BigInt);
    if !integer(ty) || table.types()[column] != ty {
        return None;
    }
    let delta = operand(right, SqlType::BigInt)?;
    if matches!(delta, Operand::Value(Value::Null)) {
        return None;
    }
    let negate = match op {
        BinaryOperator::Plus => false,
        BinaryOperator::Minus => true,
        _ => return None,
    };
    Some(NewValue::Add {
        column,
        delta,
        negate,
    })
}

fn update(session: &Session, s: &Statement) -> Option<Shape> {
    let Statement::Update(u) = s else { return None };
    let (table, name) = plain_table(&u.table, session)?;
    let (key, condition) = key_equality(&table, u.selection.as_ref()?)?;
    let mut changes = Vec::with_capacity(u.assignments.len());
    for a in &u.assignments {
        let AssignmentTarget::ColumnName(ObjectName(parts)) = &a.target else {
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
        changes.push((target, new_value(&table, target, &a.value)?));
    }
    let sets: Vec<String> = u.assignments.iter().map(ToString::to_string).collect();
    let canonical = format!("UPDATE {name} SET {} WHERE {condition}", sets.join(", "));
    (s.to_string() == canonical).then_some(Shape {
        table,
        kind: Kind::Update { key, changes },
    })
}

fn delete(session: &Session, s: &Statement) -> Option<Shape> {
    let Statement::Delete(d) = s else { return None };
    let (FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from)) = &d.from;
    let [from] = from.as_slice() else { return None };
    let (table, name) = plain_table(from, session)?;
    let (key, condition) = key_equality(&table, d.selection.as_ref()?)?;
    (s.to_string() == format!("DELETE FROM {name} WHERE {condition}")).then_some(Shape {
        table,
        kind: Kind::Delete { key },
    })
}

fn insert(session: &Session, s: &Statement) -> Option<Shape> {
    let Statement::Insert(i) = s else { return None };
    let TableObject::TableName(name) = &i.table else {
        return None;
    };
    let table = session.catalog.table(&object_name(name).ok()?)?;
    let positions: Vec<usize> = if i.columns.is_empty() {
        (0..table.types().len()).collect()
    } else {
        i.columns
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
    let SetExpr::Values(values) = i.source.as_ref()?.body.as_ref() else {
        return None;
    };
    let mut rows = Vec::with_capacity(values.rows.len());
    for exprs in &values.rows {
        let exprs = &exprs.content;
        if exprs.len() != positions.len() {
            return None;
        }
        let row = positions
            .iter()
            .zip(exprs)
            .map(|(&p, e)| operand(e, table.types()[p]))
            .collect::<Option<Vec<_>>>()?;
        rows.push(row);
    }
    let columns = if i.columns.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = i.columns.iter().map(ToString::to_string).collect();
        format!(" ({})", names.join(", "))
    };
    (s.to_string() == format!("INSERT INTO {name}{columns} {values}")).then_some(Shape {
        table,
        kind: Kind::Insert { positions, rows },
    })
}
