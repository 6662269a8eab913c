//! Joins of rows read by their keys ([`PointJoin`]) run on the engine: each table's row
//! is read by its key at the statement's read point, and the join is the one row they
//! make together, or none when one of them is missing.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::Schema;
use datafusion::common::ScalarValue;

use super::range_result::rows_of;
use super::shape::PointJoin;
use super::{row_key, rows_batch};
use crate::error::{Result, SqlError};
use crate::output::Output;
use crate::read_point::ReadPoint;
use crate::session::Session;

/// Runs `join` with `params`; `None` (nothing done) when a key's value does not convert
/// exactly or is NULL, or a table changed since, which the general way then serves.
pub(super) fn read(
    session: &Session,
    read_point: &ReadPoint,
    join: &PointJoin,
    params: &[ScalarValue],
) -> Option<Result<Output>> {
    if join.tables.iter().any(|(t, _)| t.is_retired()) {
        return None;
    }
    let keys = join
        .tables
        .iter()
        .map(|(table, key)| row_key(table, key, params, &session.sequence_calls))
        .collect::<Option<Vec<_>>>()?;
    Some(joined(read_point, join, &keys))
}

fn joined(read_point: &ReadPoint, join: &PointJoin, keys: &[Vec<u8>]) -> Result<Output> {
    let mut rows = Vec::with_capacity(keys.len());
    for (((table, _), key), columns) in join.tables.iter().zip(keys).zip(&join.columns) {
        rows.push(rows_batch(
            table,
            read_point,
            std::slice::from_ref(key),
            columns,
        )?);
    }
    let n = usize::from(rows.iter().all(|r| r.num_rows() == 1));
    let (fields, columns): (Vec<_>, Vec<ArrayRef>) = join
        .shown
        .iter()
        .map(|(t, at, name)| {
            let row = &rows[*t];
            let field = row.schema().field(*at).clone().with_name(name);
            (field, row.column(*at).slice(0, n))
        })
        .unzip();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| SqlError::Query(e.to_string()))?;
    Ok(rows_of(batch))
}
