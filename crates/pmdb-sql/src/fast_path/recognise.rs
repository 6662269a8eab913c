//! The OLTP fast path: statements that name one row by its whole primary key, or insert
//! literal rows, run straight on the engine, with no DataFusion planning (which costs a
//! hundred times what the row's read or write does). Served here:
//!
//! - `SELECT col, … | * FROM t WHERE pk = literal`
//! - `UPDATE t SET col = literal | col = other_col ± literal, … WHERE pk = literal`
//!   (integer columns for the arithmetic; the key itself is not assigned)
//! - `DELETE FROM t WHERE pk = literal`
//! - `INSERT INTO t [(col, …)] VALUES (literal, …), …`
//!
//! A statement is taken only if printing back the parts recognised gives its exact text,
//! so no clause can be overlooked; literals are converted only where the conversion is
//! exact. Anything else, including every error a literal might cause, goes the general
//! way.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, BinaryOperator, Expr, FromTable, ObjectName, SelectItem, SetExpr, Statement,
    TableFactor, TableObject, TableWithJoins, UnaryOperator, Value as Literal,
};

use crate::arrow_conv::{BatchBuilder, arrow_schema};
use crate::ddl::{ident_name, object_name};
use crate::error::{Result, SqlError, state};
use crate::output::Output;
use crate::read_point::ReadPoint;
use crate::session::Session;
use crate::table::{Table, TableWriter};
use crate::types::{SqlType, Value};

/// Runs `s` if the fast path serves it; `None` sends it the general way.
pub async fn run(
    session: &Session,
    read_point: &ReadPoint,
    s: &Statement,
) -> Option<Result<Output>> {
    match s {
        Statement::Query(_) => select(session, read_point, s),
        Statement::Update(_) => update(session, read_point, s).await,
        Statement::Delete(_) => delete(session, read_point, s).await,
        Statement::Insert(_) => insert(session, read_point, s).await,
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

/// `pk = literal` on a table with a one-column primary key: the row key.
fn key_equality(table: &Table, e: &Expr) -> Option<(Vec<u8>, String)> {
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
    let value = literal(right, table.types()[column])?;
    if value == Value::Null {
        return None;
    }
    let key = table.key_for(&[value]).ok()?;
    Some((key, format!("{left} = {right}")))
}

/// The position of the plain column `e` names.
fn column_of(table: &Table, e: &Expr) -> Option<usize> {
    match e {
        Expr::Identifier(i) => table.def().column(&ident_name(i)),
        _ => None,
    }
}

/// `e` as a value of a column of type `ty`, when it is a literal that converts exactly.
fn literal(e: &Expr, ty: SqlType) -> Option<Value> {
    match e {
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Literal::Number(n, false) => number(&format!("-{n}"), ty),
                _ => None,
            },
            _ => None,
        },
        Expr::Value(v) => match (&v.value, ty) {
            (Literal::Null, _) => Some(Value::Null),
            (Literal::Number(n, false), _) => number(n, ty),
            (Literal::Boolean(b), SqlType::Boolean) => Some(Value::Boolean(*b)),
            (
                Literal::SingleQuotedString(s),
                SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text,
            ) => Some(Value::Str(s.clone())),
            _ => None,
        },
        Expr::Function(f)
            if ty == SqlType::Timestamp
                && f.to_string().eq_ignore_ascii_case("CURRENT_TIMESTAMP") =>
        {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            Some(Value::Timestamp(i64::try_from(now.as_micros()).ok()?))
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

fn select(session: &Session, read_point: &ReadPoint, s: &Statement) -> Option<Result<Output>> {
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
    if s.to_string() != canonical {
        return None;
    }
    Some((|| {
        let schema = arrow_schema(table.def(), false);
        let mut builder = BatchBuilder::new(Arc::from(table.types()), &schema, &projection, 1);
        read_point.get(table.rows(), &key, |row| match row {
            Some(bytes) => builder
                .push(&key, bytes)
                .map_err(|source| SqlError::Damaged {
                    what: format!("row in table {:?}", table.def().name),
                    source,
                }),
            None => Ok(()),
        })??;
        let batch = builder
            .finish()
            .map_err(|e| SqlError::Query(e.to_string()))?;
        Ok(Output::Rows {
            schema: batch.schema(),
            // As DataFusion gives it: no batch for no row.
            batches: if batch.num_rows() == 0 {
                vec![]
            } else {
                vec![batch]
            },
        })
    })())
}

/// A new value of an UPDATE: a literal, or a column plus or minus an integer literal.
enum NewValue {
    Literal(Value),
    Add { column: usize, delta: i64 },
}

fn new_value(table: &Table, target: usize, e: &Expr) -> Option<NewValue> {
    let ty = table.types()[target];
    if let Some(v) = literal(e, ty) {
        return Some(NewValue::Literal(v));
    }
    let Expr::BinaryOp { left, op, right } = e else {
        return None;
    };
    let column = column_of(table, left)?;
    let integer = |t: SqlType| matches!(t, SqlType::SmallInt | SqlType::Int | SqlType::BigInt);
    if !integer(ty) || table.types()[column] != ty {
        return None;
    }
    let Some(Value::BigInt(n)) = literal(right, SqlType::BigInt) else {
        return None;
    };
    let delta = match op {
        BinaryOperator::Plus => n,
        BinaryOperator::Minus => n.checked_neg()?,
        _ => return None,
    };
    Some(NewValue::Add { column, delta })
}

fn apply(old: &Value, delta: i64, ty: SqlType) -> Result<Value> {
    let overflow = || SqlError::user(state::NUMERIC_OUT_OF_RANGE, format!("{ty:?} out of range"));
    Ok(match old {
        Value::Null => Value::Null,
        Value::SmallInt(v) => {
            Value::SmallInt(i16::try_from(i64::from(*v) + delta).map_err(|_| overflow())?)
        }
        Value::Int(v) => Value::Int(i32::try_from(i64::from(*v) + delta).map_err(|_| overflow())?),
        Value::BigInt(v) => Value::BigInt(v.checked_add(delta).ok_or_else(overflow)?),
        _ => {
            return Err(SqlError::Query(
                "an integer column holds another type".into(),
            ));
        }
    })
}

async fn update(
    session: &Session,
    read_point: &ReadPoint,
    s: &Statement,
) -> Option<Result<Output>> {
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
    if s.to_string() != format!("UPDATE {name} SET {} WHERE {condition}", sets.join(", ")) {
        return None;
    }
    Some(
        async {
            let (table, _guard) = session.catalog.lock_table_async(&table.def().name).await?;
            let read_point = read_point.under_lock(&session.db);
            let Some(old) =
                read_point.get(table.rows(), &key, |row| row.map(|r| table.decode(r)))?
            else {
                return Ok(Output::Command("UPDATE 0".into()));
            };
            let old = old?;
            let mut new = old.clone();
            for (target, change) in &changes {
                new[*target] = match change {
                    NewValue::Literal(v) => v.clone(),
                    NewValue::Add { column, delta } => {
                        apply(&old[*column], *delta, table.types()[*target])?
                    }
                };
            }
            let mut writer = TableWriter::new(&table).through(&read_point);
            writer.update(&key, &old, &new)?;
            writer.commit().await?;
            Ok(Output::Command("UPDATE 1".into()))
        }
        .await,
    )
}

async fn delete(
    session: &Session,
    read_point: &ReadPoint,
    s: &Statement,
) -> Option<Result<Output>> {
    let Statement::Delete(d) = s else { return None };
    let (FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from)) = &d.from;
    let [from] = from.as_slice() else { return None };
    let (table, name) = plain_table(from, session)?;
    let (key, condition) = key_equality(&table, d.selection.as_ref()?)?;
    if s.to_string() != format!("DELETE FROM {name} WHERE {condition}") {
        return None;
    }
    Some(
        async {
            let (table, _guard) = session.catalog.lock_table_async(&table.def().name).await?;
            let read_point = read_point.under_lock(&session.db);
            let Some(old) =
                read_point.get(table.rows(), &key, |row| row.map(|r| table.decode(r)))?
            else {
                return Ok(Output::Command("DELETE 0".into()));
            };
            let mut writer = TableWriter::new(&table).through(&read_point);
            writer.delete(&key, &old?)?;
            writer.commit().await?;
            Ok(Output::Command("DELETE 1".into()))
        }
        .await,
    )
}

async fn insert(
    session: &Session,
    read_point: &ReadPoint,
    s: &Statement,
) -> Option<Result<Output>> {
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
    let SetExpr::Values(values) = i.source.as_ref()?.body.as_ref() else {
        return None;
    };
    let mut rows = Vec::with_capacity(values.rows.len());
    for exprs in &values.rows {
        let exprs = &exprs.content;
        if exprs.len() != positions.len() {
            return None;
        }
        let mut row = vec![Value::Null; table.types().len()];
        for (&p, e) in positions.iter().zip(exprs) {
            row[p] = literal(e, table.types()[p])?;
        }
        rows.push(row);
    }
    let columns = if i.columns.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = i.columns.iter().map(ToString::to_string).collect();
        format!(" ({})", names.join(", "))
    };
    if s.to_string() != format!("INSERT INTO {name}{columns} {values}") {
        return None;
    }
    Some(
        async {
            let (table, _guard) = session.catalog.lock_table_async(&table.def().name).await?;
            let read_point = read_point.under_lock(&session.db);
            let mut writer = TableWriter::new(&table).through(&read_point);
            for row in &rows {
                writer.insert(row)?;
            }
            writer.commit().await?;
            Ok(Output::Command(format!("INSERT 0 {}", rows.len())))
        }
        .await,
    )
}
