//! Range reads of the fast path ([`RangeRead`]) run on the engine: the key range (of the
//! rows, or of an index whose entries name them) is read in key order (stopped at LIMIT
//! when the order is the key's), each row locked as it is returned when the statement
//! asks, and the rows then sorted, made distinct, cut to LIMIT or aggregated
//! ([`super::range_result`]).

use std::ops::Bound;
use std::sync::Arc;

use datafusion::common::ScalarValue;
use pmdb_engine::Subtable;

use super::range_result;
use super::shape::{Operand, RangeKeys, RangeOutput, RangeRead, RowLock, RowOrder, resolve};
use crate::arrow_conv::BatchBuilder;
use crate::error::{Result, SqlError};
use crate::keycode::encode_key;
use crate::output::Output;
use crate::pushdown::{KeyRange, bounded};
use crate::read_point::{ReadPoint, RowScan};
use crate::sequence_functions::SequenceCalls;
use crate::session::Session;
use crate::table::Table;
use crate::types::{SqlType, Value};

/// Most rows a range read gathers: a larger range goes the general way, which streams
/// its rows and reads them in parallel.
pub(super) const MAX_ROWS: usize = 10_000;

/// Runs `read` on `table` with `params`; `None` (nothing done but the reading) when a
/// value does not convert exactly or the range holds more than [`MAX_ROWS`] rows.
pub(super) async fn read(
    session: &Session,
    table: &Arc<Table>,
    read_point: &ReadPoint,
    read: &RangeRead,
    params: &[ScalarValue],
) -> Option<Result<Output>> {
    let calls = &session.sequence_calls;
    let ranges = key_ranges(table, read.index, &read.keys, params, calls)?;
    let limit = match &read.limit {
        None => None,
        Some(n) => match resolve(n, SqlType::BigInt, params, calls)? {
            Value::BigInt(n) => Some(usize::try_from(n).ok()?),
            _ => return None,
        },
    };
    let (in_key_order, descending) = match read.order {
        RowOrder::Key { descending } => {
            (matches!(read.output, RangeOutput::Rows { .. }), descending)
        }
        RowOrder::Sorted { .. } => (false, false),
    };
    let stop_at = limit.filter(|_| in_key_order);
    let schema = Arc::clone(table.schema());
    let mut rows = BatchBuilder::new(
        Arc::from(table.types()),
        &schema,
        &read.columns,
        stop_at.unwrap_or(64).min(MAX_ROWS),
    )
    .with_missing(table.required_columns(), Arc::clone(table.missing_values()));
    let gathered = match read.lock {
        None => gather(
            table, read_point, read.index, &ranges, descending, stop_at, &mut rows,
        ),
        Some(lock) => match <[KeyRange; 1]>::try_from(ranges) {
            Ok([range]) if read.index.is_none() => {
                let scope = (table, read_point, descending, stop_at);
                gather_locked(session, scope, range, lock, &mut rows).await
            }
            // Locks are taken in one range of the primary key only, as recognised.
            _ => return None,
        },
    };
    match gathered {
        Ok(true) => {}
        Ok(false) => return None,
        Err(e) => return Some(Err(e)),
    }
    let batch = match rows.finish() {
        Ok(batch) => batch,
        Err(e) => return Some(Err(SqlError::Query(e.to_string()))),
    };
    range_result::output(batch, read, limit)
}

/// The ranges of `keys` (of the primary key, or of the index at `index`) with `params`,
/// in key order, disjoint: a prefix's, bounded on the next key column, or each of its
/// prefixes'.
pub(super) fn key_ranges(
    table: &Table,
    index: Option<usize>,
    keys: &RangeKeys,
    params: &[ScalarValue],
    calls: &SequenceCalls,
) -> Option<Vec<KeyRange>> {
    let key_types = match index {
        None => table.key_types(),
        Some(i) => &table.indexes()[i].types,
    };
    let value = |op: &Operand, ty| resolve(op, ty, params, calls).filter(|v| *v != Value::Null);
    let encoded = |prefix: &[Operand]| {
        let values = prefix
            .iter()
            .zip(key_types)
            .map(|(op, &ty)| value(op, ty))
            .collect::<Option<Vec<_>>>()?;
        let mut encoded = Vec::new();
        encode_key(&key_types[..prefix.len()], &values, &mut encoded).ok()?;
        Some(encoded)
    };
    let (prefix, low, high) = match keys {
        RangeKeys::Prefixes(prefixes) => {
            let mut prefixes = prefixes
                .iter()
                .map(|p| encoded(p))
                .collect::<Option<Vec<_>>>()?;
            // Of one length, so that none begins another: sorted, they are disjoint.
            prefixes.sort_unstable();
            prefixes.dedup();
            return Some(prefixes.into_iter().map(KeyRange::prefixed).collect());
        }
        RangeKeys::Bounded { prefix, low, high } => (prefix, low, high),
    };
    let fixed = prefix.len();
    let prefix = encoded(prefix)?;
    if low.is_none() && high.is_none() {
        return Some(vec![KeyRange::prefixed(prefix)]);
    }
    let ty = *key_types.get(fixed)?;
    let bound = |b: &Option<(Operand, bool)>| match b {
        None => Some(None),
        Some((op, inclusive)) => Some(Some((value(op, ty)?, *inclusive))),
    };
    let (low, high) = (bound(low)?, bound(high)?);
    Some(vec![bounded(&prefix, ty, low.as_ref(), high.as_ref())?])
}

/// A scan of `range` of `sub`, forwards or backwards.
pub(super) fn scan(
    read_point: &ReadPoint,
    sub: &Subtable,
    range: KeyRange,
    descending: bool,
) -> Result<RowScan> {
    let bounds = (range.start, range.end);
    if descending {
        read_point.scan_rev(sub, bounds)
    } else {
        read_point.scan(sub, bounds)
    }
}

/// Adds the whole stored row `row` under `key` to `rows`.
fn push(table: &Table, rows: &mut BatchBuilder, key: &[u8], row: &[u8]) -> Result<()> {
    rows.push(key, row).map_err(|source| SqlError::Damaged {
        what: format!("row in table {:?}", table.def().name),
        source,
    })
}

/// Reads the rows of `ranges` (of the rows, or of the index at `index`; in key order,
/// disjoint) into `rows`, up to `stop_at` of them; `false` if there are more than
/// [`MAX_ROWS`].
fn gather(
    table: &Table,
    read_point: &ReadPoint,
    index: Option<usize>,
    ranges: &[KeyRange],
    descending: bool,
    stop_at: Option<usize>,
    rows: &mut BatchBuilder,
) -> Result<bool> {
    let sub = index.map_or(table.rows(), |i| &table.indexes()[i].subtable);
    let ordered: Box<dyn Iterator<Item = &KeyRange>> = if descending {
        Box::new(ranges.iter().rev())
    } else {
        Box::new(ranges.iter())
    };
    for range in ordered {
        let mut scan = scan(read_point, sub, range.clone(), descending)?;
        while stop_at.is_none_or(|n| rows.len() < n) {
            let Some(entry) = scan.next_ref() else {
                break;
            };
            let entry = entry?;
            if rows.len() == MAX_ROWS {
                return Ok(false);
            }
            match index {
                None => {
                    let row = table.whole(read_point, entry.key, entry.value)?;
                    push(table, rows, entry.key, &row)?;
                }
                Some(i) => table.read_indexed(i, read_point, entry.key, |key, row| {
                    push(table, rows, key, row)
                })?,
            }
        }
    }
    Ok(true)
}

/// As [`gather`], locking each row first and reading it as it is once locked: a row
/// deleted meanwhile (or skipped as SKIP LOCKED asks) is not returned, and the range
/// is read on past it until `stop_at` rows are.
async fn gather_locked(
    session: &Session,
    (table, read_point, descending, stop_at): (&Arc<Table>, &ReadPoint, bool, Option<usize>),
    mut range: KeyRange,
    RowLock { mode, policy }: RowLock,
    rows: &mut BatchBuilder,
) -> Result<bool> {
    // Held to the statement's end outside a block; a block's are the block's.
    let mut locker = read_point.locker(&session.row_locks);
    loop {
        let wanted = stop_at.map(|n| n - rows.len());
        if wanted == Some(0) {
            return Ok(true);
        }
        let take = wanted.unwrap_or(MAX_ROWS + 1);
        let keys = {
            let mut scan = scan(read_point, table.rows(), range.clone(), descending)?;
            let mut keys = Vec::new();
            while keys.len() < take {
                let Some(entry) = scan.next_ref() else {
                    break;
                };
                keys.push(entry?.key.to_vec());
            }
            keys
        };
        if keys.len() > MAX_ROWS {
            return Ok(false);
        }
        let mut locked = Vec::with_capacity(keys.len());
        for key in &keys {
            if locker.lock(table.as_ref(), key, mode, policy).await? {
                locked.push(key);
            }
        }
        let under_lock = read_point.under_lock(&session.db);
        for key in locked {
            under_lock.get(table.rows(), key, |row| match row {
                Some(value) => push(table, rows, key, &table.whole(&under_lock, key, value)?),
                None => Ok(()),
            })??;
        }
        let Some(last) = keys.last().filter(|_| keys.len() == take) else {
            return Ok(true);
        };
        let past = Bound::Excluded(last.clone());
        if descending {
            range.end = past;
        } else {
            range.start = past;
        }
    }
}
