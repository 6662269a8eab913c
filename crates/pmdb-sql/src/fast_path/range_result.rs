//! The result of a range read from the rows it gathered: sorted by Arrow's row format
//! (the order DataFusion's sorts give the same arrays, NULLs placed as asked), repeats
//! dropped for DISTINCT, cut to LIMIT and projected to the columns shown; or a row of
//! aggregates for each group of rows (one in all without GROUP BY), with the types
//! DataFusion gives them (sums of integers as BIGINT, of a NUMERIC(p, s) as
//! NUMERIC(min(p + 10, 38), s)).

use std::cmp::Ordering;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Array, Int64Array, RecordBatch, UInt32Array, new_null_array,
};
use datafusion::arrow::compute::{SortOptions, cast, concat_batches, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Field, Int64Type, Schema};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::row::{RowConverter, Rows, SortField};

use super::shape::{Aggregate, GroupItem, RangeOutput, RangeRead, RowOrder, SortKey, sum_type};
use crate::error::{Result, SqlError};
use crate::output::Output;

/// What `read` returns from the rows it gathered (`batch`, its columns), `limit` of
/// them; `None` when a sum is out of its type's range (the general way reports it).
pub(super) fn output(
    batch: RecordBatch,
    read: &RangeRead,
    limit: Option<usize>,
) -> Option<Result<Output>> {
    let batch = match &read.output {
        RangeOutput::Rows { shown } => rows(batch, &read.order, limit, shown).map(Some),
        RangeOutput::Aggregates { by, items } => grouped(&batch, by, items),
    };
    match batch {
        Ok(None) => None,
        Ok(Some(batch)) => Some(Ok(rows_of(batch))),
        Err(e) => Some(Err(e)),
    }
}

/// `batch` as a result's rows.
pub(super) fn rows_of(batch: RecordBatch) -> Output {
    Output::Rows {
        schema: batch.schema(),
        // As DataFusion gives it: no batch for no row.
        batches: if batch.num_rows() == 0 {
            vec![]
        } else {
            vec![batch]
        },
    }
}

fn arrow_error(e: ArrowError) -> SqlError {
    SqlError::Query(e.to_string())
}

/// The rows in `order` (already in it when it is the key's, and then already cut to
/// `limit`), `limit` of them, with the columns `shown`.
fn rows(
    batch: RecordBatch,
    order: &RowOrder,
    limit: Option<usize>,
    shown: &[usize],
) -> Result<RecordBatch> {
    let batch = match order {
        RowOrder::Key { .. } => batch,
        RowOrder::Sorted { by, distinct } => sorted(&batch, by, *distinct, limit)?,
    };
    batch.project(shown).map_err(arrow_error)
}

/// Rows of `batch` in the order of their values in the columns `by` (`columns`, as
/// Arrow's row format compares them).
fn row_form(batch: &RecordBatch, by: &[SortKey]) -> Result<Rows> {
    let fields = by
        .iter()
        .map(|k| {
            let options = SortOptions {
                descending: k.descending,
                nulls_first: k.nulls_first,
            };
            SortField::new_with_options(batch.column(k.column).data_type().clone(), options)
        })
        .collect();
    let columns: Vec<ArrayRef> = by
        .iter()
        .map(|k| Arc::clone(batch.column(k.column)))
        .collect();
    RowConverter::new(fields)
        .and_then(|c| c.convert_columns(&columns))
        .map_err(arrow_error)
}

/// `batch` sorted by `by` (ties kept in key order), rows that compare equal dropped
/// after the first when `distinct` (`by` then covers every column shown), `limit` of
/// them.
fn sorted(
    batch: &RecordBatch,
    by: &[SortKey],
    distinct: bool,
    limit: Option<usize>,
) -> Result<RecordBatch> {
    let rows = row_form(batch, by)?;
    let n = u32::try_from(batch.num_rows()).map_err(|e| SqlError::Query(e.to_string()))?;
    let mut order: Vec<u32> = (0..n).collect();
    order.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
    if distinct {
        order.dedup_by(|a, b| rows.row(*a as usize) == rows.row(*b as usize));
    }
    if let Some(limit) = limit {
        order.truncate(limit);
    }
    take_record_batch(batch, &UInt32Array::from(order)).map_err(arrow_error)
}

/// A row of `items` for each group of `batch`'s rows equal in the columns `by`, in the
/// groups' order (one row in all when `by` is empty); `None` when a sum does not fit.
fn grouped(batch: &RecordBatch, by: &[usize], items: &[GroupItem]) -> Result<Option<RecordBatch>> {
    if by.is_empty() {
        return aggregated(batch, items);
    }
    let keys: Vec<SortKey> = by
        .iter()
        .map(|&column| SortKey {
            column,
            descending: false,
            nulls_first: false,
        })
        .collect();
    let rows = row_form(batch, &keys)?;
    let n = u32::try_from(batch.num_rows()).map_err(|e| SqlError::Query(e.to_string()))?;
    let mut order: Vec<u32> = (0..n).collect();
    order.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
    // The columns of a group's row, also when there is no group.
    let Some(empty) = aggregated(&batch.slice(0, 0), items)? else {
        return Ok(None);
    };
    let mut groups = Vec::new();
    for group in order.chunk_by(|&a, &b| rows.row(a as usize) == rows.row(b as usize)) {
        let group =
            take_record_batch(batch, &UInt32Array::from(group.to_vec())).map_err(arrow_error)?;
        match aggregated(&group, items)? {
            Some(row) => groups.push(row),
            None => return Ok(None),
        }
    }
    concat_batches(&empty.schema(), &groups)
        .map(Some)
        .map_err(arrow_error)
}

/// One row of `items` over `batch`'s rows (a grouped column's value from its first);
/// `None` when a sum does not fit.
pub(super) fn aggregated(batch: &RecordBatch, items: &[GroupItem]) -> Result<Option<RecordBatch>> {
    let mut fields = Vec::with_capacity(items.len());
    let mut columns = Vec::with_capacity(items.len());
    for item in items {
        let (aggregate, name) = match item {
            GroupItem::Column(c, name) => {
                let values = batch.column(*c);
                let value = match values.len() {
                    0 => new_null_array(values.data_type(), 1),
                    _ => values.slice(0, 1),
                };
                fields.push(batch.schema().field(*c).clone().with_name(name));
                columns.push(value);
                continue;
            }
            GroupItem::Aggregate(aggregate, name) => (aggregate, name),
        };
        let count = |n: usize| -> (Field, ArrayRef) {
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            (
                Field::new(name, DataType::Int64, false),
                Arc::new(Int64Array::from(vec![n])),
            )
        };
        let (field, column) = match *aggregate {
            Aggregate::CountRows => count(batch.num_rows()),
            Aggregate::Count(c) => count(batch.num_rows() - batch.column(c).null_count()),
            Aggregate::CountDistinct(c) => count(distinct_values(batch, c)?),
            Aggregate::Sum(c) => match sum(batch.column(c))? {
                Some(column) => (Field::new(name, column.data_type().clone(), true), column),
                None => return Ok(None),
            },
            Aggregate::Min(c) => extreme(batch, c, name, Ordering::Less)?,
            Aggregate::Max(c) => extreme(batch, c, name, Ordering::Greater)?,
        };
        fields.push(field);
        columns.push(column);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map(Some)
        .map_err(arrow_error)
}

/// How many distinct values other than NULL column `c` of `batch` holds.
fn distinct_values(batch: &RecordBatch, c: usize) -> Result<usize> {
    let key = SortKey {
        column: c,
        descending: false,
        nulls_first: false,
    };
    let rows = row_form(batch, &[key])?;
    let values = batch.column(c);
    let mut seen: Vec<_> = (0..values.len())
        .filter(|&i| values.is_valid(i))
        .map(|i| rows.row(i))
        .collect();
    seen.sort_unstable();
    seen.dedup();
    Ok(seen.len())
}

/// The sum of `values` as one value (NULL when none is not NULL); `None` if it does
/// not fit its type.
fn sum(values: &ArrayRef) -> Result<Option<ArrayRef>> {
    let values = &match values.data_type() {
        DataType::Int64 => cast(values, &sum_type(values.data_type())).map_err(arrow_error)?,
        _ => Arc::clone(values),
    };
    Ok(Some(match values.data_type() {
        DataType::Decimal128(_, scale) => {
            let mut total: Option<i128> = None;
            for v in values.as_primitive::<Decimal128Type>().iter().flatten() {
                match total.unwrap_or(0).checked_add(v) {
                    Some(t) => total = Some(t),
                    None => return Ok(None),
                }
            }
            let DataType::Decimal128(precision, _) = sum_type(values.data_type()) else {
                return Ok(None);
            };
            let limit = 10i128.pow(u32::from(precision));
            if total.is_some_and(|t| t.unsigned_abs() >= limit.unsigned_abs()) {
                return Ok(None);
            }
            let sum = Decimal128Array::from(vec![total])
                .with_precision_and_scale(precision, *scale)
                .map_err(arrow_error)?;
            Arc::new(sum)
        }
        _ => {
            let values = cast(values, &DataType::Int64).map_err(arrow_error)?;
            let mut total: Option<i64> = None;
            for v in values.as_primitive::<Int64Type>().iter().flatten() {
                match total.unwrap_or(0).checked_add(v) {
                    Some(t) => total = Some(t),
                    None => return Ok(None),
                }
            }
            Arc::new(Int64Array::from(vec![total]))
        }
    }))
}

/// The least (`want` Less) or greatest value of column `c` that is not NULL, as a
/// column of one row named `name` (NULL when there is none).
fn extreme(batch: &RecordBatch, c: usize, name: &str, want: Ordering) -> Result<(Field, ArrayRef)> {
    let values = batch.column(c);
    let key = SortKey {
        column: c,
        descending: false,
        nulls_first: false,
    };
    let rows = row_form(batch, &[key])?;
    let best = (0..values.len())
        .filter(|&i| values.is_valid(i))
        .reduce(|best, i| {
            if rows.row(i).cmp(&rows.row(best)) == want {
                i
            } else {
                best
            }
        });
    let column = match best {
        Some(i) => values.slice(i, 1),
        None => new_null_array(values.data_type(), 1),
    };
    let field = batch.schema().field(c).clone().with_name(name);
    Ok((field, column))
}
