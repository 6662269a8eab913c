//! The OLTP fast path: statements that name rows by their primary key (or an index), or
//! insert rows of values, run straight on the engine, with no DataFusion planning (which
//! costs a hundred times what the row's read or write does). Served here:
//!
//! - `SELECT col, … | * FROM t WHERE pk = v [FOR UPDATE | NO KEY UPDATE | SHARE | KEY
//!   SHARE [NOWAIT | SKIP LOCKED]]`, or with `WHERE pk1 IN (v, …)` and `WHERE (pk1, pk2,
//!   …) IN ((v1, v2, …), …)` naming the key's leading columns, all of them or a prefix
//!   (rows in key order, each once; a prefix names every row under it)
//! - `UPDATE t SET col = v | col = other_col ± v, … WHERE pk = v` or an IN list of keys
//!   as SELECT takes it (integer and decimal columns for the arithmetic, a decimal's
//!   delta exact at its scale; the key itself is not assigned)
//! - `DELETE FROM t WHERE pk = v` or an IN list of keys
//!
//! where `pk = v` is each column of the primary key equal to a value, joined by AND.
//! - `INSERT INTO t [(col, …)] VALUES (v, …), …`
//! - reads of a range of the primary key or of an index, sorted, limited or aggregated
//!   ([`recognise_range`], run by [`range`])
//! - joins of rows read by their keys, one table by a range of its primary key and the
//!   others each by its whole key ([`recognise_join`], run by [`join`])
//!
//! where each `v` is a literal or a parameter `$n` of a prepared statement (or one of
//! those plus or minus a number, for an integer or decimal column). A statement
//! is recognised once ([`recognise`]: a [`Shape`]) and run with its parameters as often as
//! it is executed ([`execute`]). Values are converted only where the conversion is exact;
//! anything else, including every error a value might cause, goes the general way.

mod join;
mod range;
mod range_result;
mod recognise;
mod recognise_join;
mod recognise_range;
mod shape;

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::Statement;

use crate::arrow_conv::BatchBuilder;
use crate::error::{Result, SqlError, state};
use crate::keycode::encode_key;
use crate::output::{CommandTag, Output};
use crate::pushdown::KeyRange;
use crate::read_point::ReadPoint;
use crate::row_locks::{LockMode, WaitPolicy};
use crate::sequence_functions::SequenceCalls;
use crate::session::Session;
use crate::table::{Table, TableWriter};
use crate::types::{SqlType, Value};

pub(crate) use shape::Shape;
use shape::{Base, Kind, NewValue, Operand, RowLock, delta_type, of_units, resolve, units};

/// What the fast path does for `s`; `None` if it does not serve it.
pub(crate) fn recognise(session: &Session, s: &Statement) -> Option<Shape> {
    recognise::by_keys(session, s).or_else(|| match s {
        Statement::Query(q) => recognise_range::range_select(session, q)
            .or_else(|| recognise_join::key_join(session, q)),
        _ => None,
    })
}

/// Runs `s` if the fast path serves it; `None` sends it the general way.
pub(crate) async fn run(
    session: &Session,
    read_point: &ReadPoint,
    s: &Statement,
) -> Option<Result<Output>> {
    let shape = recognise(session, s)?;
    execute(session, read_point, &shape, &[]).await
}

/// Most rows the key prefixes of a statement may name: more go the general way.
const MAX_PREFIX_ROWS: usize = 10_000;

/// The row keys `keys` name at `read_point`, in key order, each once (as a scan of their
/// ranges gives them): a whole key's own, and those of the rows whose keys begin with a
/// prefix; `None` if a value is NULL or does not convert exactly, or the prefixes name
/// more than [`MAX_PREFIX_ROWS`] rows.
fn row_keys(
    table: &Table,
    read_point: &ReadPoint,
    keys: &[Vec<Operand>],
    params: &[ScalarValue],
    calls: &SequenceCalls,
) -> Result<Option<Vec<Vec<u8>>>> {
    let whole = table.key_types().len();
    let mut found = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(encoded) = row_key(table, key, params, calls) else {
            return Ok(None);
        };
        if key.len() == whole {
            found.push(encoded);
            continue;
        }
        let range = KeyRange::prefixed(encoded);
        let mut scan = read_point.scan(table.rows(), (range.start, range.end))?;
        while let Some(entry) = scan.next_ref() {
            found.push(entry?.key.to_vec());
            if found.len() > MAX_PREFIX_ROWS {
                return Ok(None);
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    Ok(Some(found))
}

/// The row key, or the prefix of row keys, `key` names (its operands in key order), if
/// each of its values is one that is not NULL.
fn row_key(
    table: &Table,
    key: &[Operand],
    params: &[ScalarValue],
    calls: &SequenceCalls,
) -> Option<Vec<u8>> {
    let pk = &table.def().primary_key;
    let values = pk
        .iter()
        .zip(key)
        .map(|(&column, op)| resolve(op, table.types()[usize::from(column)], params, calls))
        .map(|v| v.filter(|v| *v != Value::Null))
        .collect::<Option<Vec<_>>>()?;
    let mut encoded = Vec::new();
    encode_key(&table.key_types()[..values.len()], &values, &mut encoded).ok()?;
    Some(encoded)
}

/// Runs a recognised statement with `params` for its `$n`; `None` (nothing done) when a
/// parameter does not convert exactly or the table changed since, which the general way
/// then serves.
pub(crate) async fn execute(
    session: &Session,
    read_point: &ReadPoint,
    shape: &Shape,
    params: &[ScalarValue],
) -> Option<Result<Output>> {
    let table = &shape.table;
    if table.is_retired() {
        return None;
    }
    let keys = match &shape.kind {
        Kind::Select { keys, .. } | Kind::Update { keys, .. } | Kind::Delete { keys } => {
            match row_keys(table, read_point, keys, params, &session.sequence_calls).transpose()? {
                Ok(keys) => keys,
                Err(e) => return Some(Err(e)),
            }
        }
        Kind::Insert { .. } | Kind::Range(_) | Kind::Join(_) => Vec::new(),
    };
    match &shape.kind {
        Kind::Select {
            keys: _,
            columns,
            shown,
            lock,
        } => {
            let columns = (columns.as_slice(), shown.as_slice());
            Some(select(session, table, read_point, keys, columns, *lock).await)
        }
        Kind::Update { keys: _, changes } => {
            let changes = changes
                .iter()
                .map(|(target, change)| {
                    let change = change.resolve(table, *target, params, &session.sequence_calls)?;
                    Some((*target, change))
                })
                .collect::<Option<Vec<_>>>()?;
            let n = change_rows(
                session,
                table,
                read_point,
                (&keys, LockMode::NoKeyUpdate),
                |writer, key, old| {
                    let mut new = old.clone();
                    for (target, change) in &changes {
                        new[*target] = change.apply(&old, table.types()[*target])?;
                    }
                    writer.update(key, &old, &new)
                },
            )
            .await?;
            Some(n.map(|n| Output::Command(CommandTag::update(n as u64))))
        }
        Kind::Delete { keys: _ } => {
            let n = change_rows(
                session,
                table,
                read_point,
                (&keys, LockMode::Update),
                |writer, key, old| writer.delete(key, &old),
            )
            .await?;
            Some(n.map(|n| Output::Command(CommandTag::delete(n as u64))))
        }
        Kind::Insert { positions, rows } => {
            let mut values = Vec::with_capacity(rows.len());
            for ops in rows {
                let mut row = vec![Value::Null; table.types().len()];
                for (&p, op) in positions.iter().zip(ops) {
                    row[p] = resolve(op, table.types()[p], params, &session.sequence_calls)?;
                }
                values.push(row);
            }
            let n = locked(
                session,
                table,
                read_point,
                (&[], LockMode::Update),
                |writer, _| {
                    for row in &values {
                        writer.insert(row)?;
                    }
                    Ok(values.len())
                },
            )
            .await?;
            Some(n.map(|n| Output::Command(CommandTag::insert(n as u64))))
        }
        Kind::Range(read) => range::read(session, table, read_point, read, params).await,
        Kind::Join(join) => join::read(session, read_point, join, params),
    }
}

/// Runs `f` with a writer of `table` under its write lock (after the locks of the rows
/// `rows` names, in key order, when it writes rows by their keys), reading at the read
/// point a writer reads at once locked, and commits what it wrote; `None` (nothing
/// done) if the table was replaced since it was recognised.
async fn locked<R>(
    session: &Session,
    table: &Arc<Table>,
    read_point: &ReadPoint,
    (rows, mode): (&[Vec<u8>], LockMode),
    f: impl Fn(&mut TableWriter<'_>, &ReadPoint) -> Result<R>,
) -> Option<Result<R>> {
    // The rows' locks first: they may be held until another block ends, and no table
    // lock may be held meanwhile.
    let mut locker = read_point.locker(&session.row_locks);
    for key in rows {
        if let Err(e) = locker
            .lock(table.as_ref(), key, mode, WaitPolicy::Wait)
            .await
        {
            return Some(Err(e));
        }
    }
    loop {
        let (current, guard) = match session
            .catalog
            .lock_table_async(table.name(), &mut locker)
            .await
        {
            Ok(locked) => locked,
            Err(e) => return Some(Err(e)),
        };
        if !Arc::ptr_eq(&current, table) {
            return None;
        }
        let read_point = read_point.under_lock(&session.db);
        let references = match session.catalog.references(table) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let mut writer = TableWriter::new(table, references)
            .through(&read_point)
            .claiming(&mut locker);
        let out = f(&mut writer, &read_point);
        if let Some(claim) = writer.blocked().cloned() {
            // A key it writes is claimed by another writer: wait for it without the
            // table, then run again.
            drop(writer);
            drop(guard);
            if let Err(e) = locker.claim_waiting(&claim).await {
                return Some(Err(e));
            }
            continue;
        }
        return Some(
            async {
                let out = out?;
                writer.commit().await?;
                Ok(out)
            }
            .await,
        );
    }
}

/// Changes each row `keys` name (in key order, each once) with `f`, given its key and
/// values, under the rows' locks and the table's, all in one commit; how many rows it
/// changed (a key with no row changes none). `None` as for [`locked`].
async fn change_rows(
    session: &Session,
    table: &Arc<Table>,
    read_point: &ReadPoint,
    rows: (&[Vec<u8>], LockMode),
    f: impl Fn(&mut TableWriter<'_>, &[u8], Vec<Value>) -> Result<()>,
) -> Option<Result<usize>> {
    locked(session, table, read_point, rows, |writer, read_point| {
        let mut changed = 0;
        for key in rows.0 {
            if let Some(old) = read_row(table, read_point, key)? {
                f(writer, key, old)?;
                changed += 1;
            }
        }
        Ok(changed)
    })
    .await
}

/// The row `key` names, decoded, if there is one.
fn read_row(table: &Table, read_point: &ReadPoint, key: &[u8]) -> Result<Option<Vec<Value>>> {
    read_point
        .get(table.rows(), key, |row| {
            row.map(|r| table.decode(read_point, key, r))
        })?
        .transpose()
}

/// The rows `keys` name (in key order), each locked first if `lock` asks for it (and
/// then read as it is once locked).
async fn select(
    session: &Session,
    table: &Arc<Table>,
    read_point: &ReadPoint,
    mut keys: Vec<Vec<u8>>,
    columns: (&[usize], &[usize]),
    lock: Option<RowLock>,
) -> Result<Output> {
    // Held to the statement's end outside a block; a block's are the block's.
    let mut locker = read_point.locker(&session.row_locks);
    let mut read_point = read_point.clone();
    if let Some(RowLock { mode, policy }) = lock {
        let mut locked = Vec::with_capacity(keys.len());
        for key in keys {
            if locker.lock(table.as_ref(), &key, mode, policy).await? {
                locked.push(key);
            }
        }
        keys = locked;
        read_point = read_point.under_lock(&session.db);
    }
    select_rows(table, &read_point, &keys, columns)
}

/// The rows `keys` name at `read_point`, as a result: the table columns `columns`
/// read, and those at the places `shown` among them shown.
fn select_rows(
    table: &Table,
    read_point: &ReadPoint,
    keys: &[Vec<u8>],
    (columns, shown): (&[usize], &[usize]),
) -> Result<Output> {
    let batch = rows_batch(table, read_point, keys, columns)?
        .project(shown)
        .map_err(|e| SqlError::Query(e.to_string()))?;
    Ok(range_result::rows_of(batch))
}

/// The table columns `columns` of the rows `keys` name at `read_point` (in their
/// order; a key with no row gives none).
fn rows_batch(
    table: &Table,
    read_point: &ReadPoint,
    keys: &[Vec<u8>],
    columns: &[usize],
) -> Result<RecordBatch> {
    let schema = Arc::clone(table.schema());
    let mut builder = BatchBuilder::new(
        Arc::from(table.types()),
        &schema,
        columns,
        keys.len().max(1),
    )
    .with_missing(table.required_columns(), Arc::clone(table.missing_values()));
    for key in keys {
        read_point.get(table.rows(), key, |row| match row {
            Some(bytes) => builder
                .push(key, &table.whole(read_point, key, bytes)?)
                .map_err(|source| SqlError::Damaged {
                    what: format!("row in table {:?}", table.def().name),
                    source,
                }),
            None => Ok(()),
        })??;
    }
    builder.finish().map_err(|e| SqlError::Query(e.to_string()))
}

/// A new value of an UPDATE with its parameters given.
enum Change {
    Set(Value),
    /// A column plus a delta in the column's own units (a decimal's at its scale).
    Add(usize, i128),
}

impl NewValue {
    fn resolve(
        &self,
        table: &Table,
        target: usize,
        params: &[ScalarValue],
        calls: &SequenceCalls,
    ) -> Option<Change> {
        let ty = table.types()[target];
        Some(match self {
            NewValue::Set(v) => Change::Set(resolve(v, ty, params, calls)?),
            NewValue::Add {
                base,
                delta,
                negate,
            } => {
                let n = units(&resolve(delta, delta_type(ty), params, calls)?)?;
                let n = if *negate { n.checked_neg()? } else { n };
                match base {
                    Base::Column(column) => Change::Add(*column, n),
                    // Known before the row is read: a sum that does not fit goes the
                    // general way, which reports it.
                    Base::Value(v) => {
                        let base = units(&resolve(v, delta_type(ty), params, calls)?)?;
                        Change::Set(of_units(ty, base.checked_add(n)?)?)
                    }
                }
            }
        })
    }
}

impl Change {
    /// The new value of a column of type `ty` in the row that was `old`.
    fn apply(&self, old: &[Value], ty: SqlType) -> Result<Value> {
        let (column, delta) = match self {
            Change::Set(v) => return Ok(v.clone()),
            Change::Add(column, delta) => (*column, *delta),
        };
        if old[column] == Value::Null {
            return Ok(Value::Null);
        }
        let old = units(&old[column])
            .ok_or_else(|| SqlError::Query("a summed column holds another type".into()))?;
        old.checked_add(delta)
            .and_then(|n| of_units(ty, n))
            .ok_or_else(|| {
                let message = match ty {
                    SqlType::Decimal { .. } => "numeric field overflow".to_string(),
                    _ => format!("{ty:?} out of range"),
                };
                SqlError::user(state::NUMERIC_OUT_OF_RANGE, message)
            })
    }
}
