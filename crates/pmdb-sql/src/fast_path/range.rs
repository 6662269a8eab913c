//! Range reads of the fast path ([`RangeRead`]) run on the engine: the key range is read
//! in key order (stopped at LIMIT when the order is the key's), each row locked as it
//! is returned when the statement asks, and the rows then sorted, made distinct, cut
//! to LIMIT or aggregated ([`super::range_result`]).

use std::ops::Bound;
use std::sync::Arc;

use datafusion::common::ScalarValue;

use super::range_result;
use super::shape::{Operand, RangeOutput, RangeRead, RowLock, RowOrder, resolve};
use crate::arrow_conv::{BatchBuilder, arrow_schema};
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
const MAX_ROWS: usize = 10_000;

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
    let range = key_range(table, read, params, calls)?;
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
    let schema = arrow_schema(table.def(), None);
    let mut rows = BatchBuilder::new(
        Arc::from(table.types()),
        &schema,
        &read.columns,
        stop_at.unwrap_or(64).min(MAX_ROWS),
    )
    .with_missing(table.required_columns(), Arc::clone(table.missing_values()));
    let gathered = match read.lock {
        None => gather(table, read_point, range, descending, stop_at, &mut rows),
        Some(lock) => {
            let scope = (table, read_point, descending, stop_at);
            gather_locked(session, scope, range, lock, &mut rows).await
        }
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

/// The keys `read` reads with `params`: its prefix's, bounded on the next key column.
fn key_range(
    table: &Table,
    read: &RangeRead,
    params: &[ScalarValue],
    calls: &SequenceCalls,
) -> Option<KeyRange> {
    let key_types = table.key_types();
    let value = |op: &Operand, ty| resolve(op, ty, params, calls).filter(|v| *v != Value::Null);
    let fixed = read.prefix.len();
    let prefix_values = read
        .prefix
        .iter()
        .zip(key_types)
        .map(|(op, &ty)| value(op, ty))
        .collect::<Option<Vec<_>>>()?;
    let mut prefix = Vec::new();
    encode_key(&key_types[..fixed], &prefix_values, &mut prefix).ok()?;
    if read.low.is_none() && read.high.is_none() {
        return Some(KeyRange::prefixed(prefix));
    }
    let ty = *key_types.get(fixed)?;
    let bound = |b: &Option<(Operand, bool)>| match b {
        None => Some(None),
        Some((op, inclusive)) => Some(Some((value(op, ty)?, *inclusive))),
    };
    let (low, high) = (bound(&read.low)?, bound(&read.high)?);
    bounded(&prefix, ty, low.as_ref(), high.as_ref())
}

fn scan(
    read_point: &ReadPoint,
    table: &Table,
    range: KeyRange,
    descending: bool,
) -> Result<RowScan> {
    let bounds = (range.start, range.end);
    if descending {
        read_point.scan_rev(table.rows(), bounds)
    } else {
        read_point.scan(table.rows(), bounds)
    }
}

/// Adds the stored row `value` under `key` to `rows`.
fn push(
    table: &Table,
    read_point: &ReadPoint,
    rows: &mut BatchBuilder,
    key: &[u8],
    value: &[u8],
) -> Result<()> {
    let row = table.whole(read_point, key, value)?;
    rows.push(key, &row).map_err(|source| SqlError::Damaged {
        what: format!("row in table {:?}", table.def().name),
        source,
    })
}

/// Reads the rows of `range` into `rows`, up to `stop_at` of them; `false` if there are
/// more than [`MAX_ROWS`].
fn gather(
    table: &Table,
    read_point: &ReadPoint,
    range: KeyRange,
    descending: bool,
    stop_at: Option<usize>,
    rows: &mut BatchBuilder,
) -> Result<bool> {
    let mut scan = scan(read_point, table, range, descending)?;
    while stop_at.is_none_or(|n| rows.len() < n) {
        let Some(entry) = scan.next_ref() else {
            break;
        };
        let entry = entry?;
        if rows.len() == MAX_ROWS {
            return Ok(false);
        }
        push(table, read_point, rows, entry.key, entry.value)?;
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
            let mut scan = scan(read_point, table, range.clone(), descending)?;
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
                Some(value) => push(table, &under_lock, rows, key, value),
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
