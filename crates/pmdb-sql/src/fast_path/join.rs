//! Joins of rows read by their keys ([`KeyJoin`]) run on the engine, as a nested loop
//! of key reads at the statement's read point: the driver's range is scanned, and for
//! each of its rows the other tables' rows are read by their whole keys in turn; each
//! comparison is checked once the rows it names are read. The rows that pass all are
//! the join's, shown or aggregated ([`super::range_result`]).

use std::cmp::Ordering;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::common::ScalarValue;

use super::range::{self, MAX_ROWS};
use super::range_result::{aggregated, rows_of};
use super::shape::{Compared, Filter, JoinKey, JoinOutput, KeyJoin, KeyPart, resolve};
use crate::arrow_conv::{arrays_of, arrow_field};
use crate::error::{Result, SqlError};
use crate::keycode::encode_key;
use crate::output::Output;
use crate::pushdown::KeyRange;
use crate::read_point::ReadPoint;
use crate::session::Session;
use crate::types::Value;

/// Runs `join` with `params`; `None` (nothing done but reading) when a value does not
/// convert exactly, a key's is NULL, the driver's range holds more than [`MAX_ROWS`]
/// rows, a sum does not fit, or a table changed since: the general way then serves it.
pub(super) fn read(
    session: &Session,
    read_point: &ReadPoint,
    join: &KeyJoin,
    params: &[ScalarValue],
) -> Option<Result<Output>> {
    if join.tables.iter().any(|(t, _)| t.is_retired()) {
        return None;
    }
    let calls = &session.sequence_calls;
    let value =
        |op, (t, c): (usize, usize)| resolve(op, join.tables[t].0.types()[c], params, calls);
    let filters = join
        .filters
        .iter()
        .map(|filters| {
            filters
                .iter()
                .map(|f| {
                    let with = match &f.with {
                        Compared::Value(op) => With::Value(value(op, f.column)?),
                        Compared::Column(t, c) => With::Column(*t, *c),
                    };
                    Some((f, with))
                })
                .collect::<Option<Vec<_>>>()
        })
        .collect::<Option<Vec<_>>>()?;
    let mut keys = Vec::with_capacity(join.tables.len());
    for (t, (table, key)) in join.tables.iter().enumerate() {
        keys.push(match key {
            JoinKey::Range(range) => {
                Key::Range(range::key_ranges(table, None, range, params, calls)?)
            }
            JoinKey::Whole(parts) => Key::Whole(
                parts
                    .iter()
                    .zip(&table.def().primary_key)
                    .map(|(part, &k)| match part {
                        KeyPart::Given(op) => {
                            let v = value(op, (t, usize::from(k)))?;
                            (v != Value::Null).then_some(Part::Value(v))
                        }
                        KeyPart::Column(t, c) => Some(Part::Column(*t, *c)),
                    })
                    .collect::<Option<Vec<_>>>()?,
            ),
        });
    }
    joined(read_point, join, &keys, &filters).transpose()
}

/// A table's key with its values given.
enum Key {
    Range(Vec<KeyRange>),
    Whole(Vec<Part>),
}

enum Part {
    Value(Value),
    Column(usize, usize),
}

/// What a comparison compares its column with, its value given.
enum With {
    Value(Value),
    Column(usize, usize),
}

/// The rows read so far of each table, by its place.
type Rows = [Vec<Value>];

/// The join's result; `None` as for [`read`].
fn joined(
    read_point: &ReadPoint,
    join: &KeyJoin,
    keys: &[Key],
    filters: &[Vec<(&Filter, With)>],
) -> Result<Option<Output>> {
    let (driver, _) = &join.tables[0];
    let Key::Range(ranges) = &keys[0] else {
        return Ok(None);
    };
    let mut current: Vec<Vec<Value>> = vec![Vec::new(); join.tables.len()];
    let mut found: Vec<Vec<Value>> = Vec::new();
    let mut scanned = 0;
    let mut key = Vec::new();
    for range in ranges {
        let mut scan = range::scan(read_point, driver.rows(), range.clone(), false)?;
        while let Some(entry) = scan.next_ref() {
            let entry = entry?;
            scanned += 1;
            if scanned > MAX_ROWS {
                return Ok(None);
            }
            current[0] = driver.decode(read_point, entry.key, entry.value)?;
            if !passes(&filters[0], &current) {
                continue;
            }
            let mut all = true;
            for (t, (table, _)) in join.tables.iter().enumerate().skip(1) {
                let Key::Whole(parts) = &keys[t] else {
                    return Ok(None);
                };
                let values: Option<Vec<Value>> = parts
                    .iter()
                    .map(|p| match p {
                        Part::Value(v) => Some(v.clone()),
                        Part::Column(u, c) => {
                            Some(current[*u][*c].clone()).filter(|v| *v != Value::Null)
                        }
                    })
                    .collect();
                let Some(values) = values else {
                    all = false;
                    break;
                };
                key.clear();
                if encode_key(table.key_types(), &values, &mut key).is_err() {
                    return Ok(None);
                }
                let row = read_point.get(table.rows(), &key, |row| {
                    row.map(|r| table.decode(read_point, &key, r)).transpose()
                })??;
                match row {
                    Some(row) => current[t] = row,
                    None => {
                        all = false;
                        break;
                    }
                }
                if !passes(&filters[t], &current) {
                    all = false;
                    break;
                }
            }
            if all {
                found.push(
                    join.columns
                        .iter()
                        .map(|&(t, c)| current[t][c].clone())
                        .collect(),
                );
            }
        }
    }
    result(join, &found)
}

/// Whether the rows read pass each of `filters`: a comparison with a NULL passes none.
fn passes(filters: &[(&Filter, With)], rows: &Rows) -> bool {
    filters.iter().all(|(f, with)| {
        let (t, c) = f.column;
        let other = match with {
            With::Value(v) => v,
            With::Column(u, d) => &rows[*u][*d],
        };
        compare(&rows[t][c], other).is_some_and(|o| f.op.passes(o))
    })
}

/// The order of two values of one comparable type, `None` if either is NULL.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    Some(match (a, b) {
        (Value::Boolean(a), Value::Boolean(b)) => a.cmp(b),
        (Value::SmallInt(a), Value::SmallInt(b)) => a.cmp(b),
        (Value::Int(a), Value::Int(b)) => a.cmp(b),
        (Value::BigInt(a), Value::BigInt(b)) => a.cmp(b),
        (Value::Decimal(a), Value::Decimal(b)) => a.cmp(b),
        (Value::Str(a), Value::Str(b)) => a.cmp(b),
        (Value::Date(a), Value::Date(b)) => a.cmp(b),
        (Value::Time(a), Value::Time(b)) => a.cmp(b),
        (Value::Timestamp(a), Value::Timestamp(b)) => a.cmp(b),
        _ => return None,
    })
}

/// The result of the joined rows `found` (each of the join's columns).
fn result(join: &KeyJoin, found: &[Vec<Value>]) -> Result<Option<Output>> {
    let types: Vec<_> = join
        .columns
        .iter()
        .map(|&(t, c)| join.tables[t].0.types()[c])
        .collect();
    let rows: Vec<&[Value]> = found.iter().map(Vec::as_slice).collect();
    let arrays = arrays_of(&types, &rows);
    let fields: Vec<Field> = join
        .columns
        .iter()
        .zip(&types)
        .map(|(&(t, c), &ty)| arrow_field(&join.tables[t].0.def().columns[c].name, ty))
        .collect();
    // `count(*)` alone reads no column: the batch still has its rows.
    let options = RecordBatchOptions::new().with_row_count(Some(found.len()));
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
        .map_err(|e| SqlError::Query(e.to_string()))?;
    let batch = match &join.output {
        JoinOutput::Aggregates(items) => match aggregated(&batch, items)? {
            Some(batch) => batch,
            None => return Ok(None),
        },
        JoinOutput::Rows(shown) => {
            let (fields, columns): (Vec<_>, Vec<_>) = shown
                .iter()
                .map(|(at, name)| {
                    let field = batch.schema().field(*at).clone().with_name(name);
                    (field, Arc::clone(batch.column(*at)))
                })
                .unzip();
            RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
                .map_err(|e| SqlError::Query(e.to_string()))?
        }
    };
    Ok(Some(rows_of(batch)))
}
