//! Writing an INSERT's rows, as computed before any lock is taken: under the table's
//! write lock, each row's keys claimed (see [`crate::table::TableWriter`]); when a claim
//! is held by another writer, the table's lock is let go, the claim waited for, and the
//! rows written anew, so that no writer waits for a claim while it holds a table. The
//! rows of an INSERT whose source is a query come from that query planned alone:
//! DataFusion's INSERT planning checks every VALUES list inside the query against the
//! target's columns (SQLAlchemy's `INSERT … SELECT … FROM (VALUES …)` fails there).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Insert, Query, SetExpr, Statement, TableObject};

use crate::arrow_conv::{cast_columns, cast_to_column, row_values};
use crate::catalog::Catalog;
use crate::error::{Result, SqlError, df_error, state, undefined_column};
use crate::names::{RelName, ident_name, object_name};
use crate::read_point::ReadPoint;
use crate::row_locks::ClientLocks;
use crate::session::Session;
use crate::table::{Table, TableWriter};
use crate::types::Value;
use crate::upsert::OnConflict;

/// What an INSERT wrote: the table, its rows (as `rows_of` gave them) and how many.
pub(crate) struct Inserted {
    pub table: Arc<Table>,
    pub rows: Vec<Vec<Value>>,
    pub count: u64,
}

/// Inserts into table `name` the rows `rows_of` gives for the table's current handle,
/// in one batch; with `on_conflict`, a row that conflicts is passed over or updates the
/// row it conflicts with (see [`crate::upsert`]). `Inserted::rows` are the rows written.
pub(crate) async fn insert_rows(
    catalog: &Catalog,
    row_locks: &ClientLocks,
    read_point: &ReadPoint,
    name: &RelName,
    rows_of: impl Fn(&Table) -> Result<Vec<Vec<Value>>>,
    on_conflict: Option<&OnConflict>,
) -> Result<Inserted> {
    let mut locker = read_point.locker(row_locks);
    loop {
        let (table, guard) = catalog.lock_table_async(name, &mut locker).await?;
        let rows = rows_of(&table)?;
        let upsert = on_conflict.map(|c| c.plan(&table)).transpose()?;
        let mut writer = TableWriter::new(&table, catalog.references(&table)?)
            .through(read_point)
            .claiming(&mut locker);
        let written = match &upsert {
            None => rows
                .iter()
                .try_for_each(|row| writer.insert(row))
                .map(|()| None),
            Some(u) => u.write(&mut writer, &table, read_point, &rows).map(Some),
        };
        if let Some(claim) = writer.blocked().cloned() {
            drop(writer);
            drop(guard);
            locker.claim_waiting(&claim).await?;
            continue;
        }
        let rows = written?.unwrap_or(rows);
        writer.commit().await?;
        let count = writer.rows();
        drop(writer);
        return Ok(Inserted { table, rows, count });
    }
}

/// The rows of `batches`, whose columns are the table's in its order (of any types that
/// cast to the columns').
pub(crate) fn rows_of_batches(table: &Table, batches: &[RecordBatch]) -> Result<Vec<Vec<Value>>> {
    let mut rows = Vec::new();
    for batch in batches {
        let columns = cast_columns(table.def(), batch.columns())?;
        rows.extend((0..batch.num_rows()).map(|r| row_values(&columns, table.types(), r)));
    }
    Ok(rows)
}

/// The table an INSERT names, and what it calls it.
pub(crate) fn inserted_into(insert: &Insert) -> Result<(RelName, String)> {
    let TableObject::TableName(name) = &insert.table else {
        return Err(SqlError::unsupported("INSERT into a table function"));
    };
    let name = object_name(name)?;
    let alias = insert
        .table_alias
        .as_ref()
        .map_or_else(|| name.name.clone(), |a| ident_name(&a.alias));
    Ok((name, alias))
}

/// Runs INSERT `insert` with pmdb's writer: DataFusion computes the rows to insert (the
/// source query, or the VALUES cast to the table's columns, those missing NULL), and
/// pmdb writes them in one batch, with ON CONFLICT if the statement has it. What it
/// wrote, and the name the statement gives the table (for RETURNING).
pub(crate) async fn insert_statement(
    session: &Session,
    read_point: &ReadPoint,
    insert: &Insert,
) -> Result<(Inserted, String)> {
    let (name, alias) = inserted_into(insert)?;
    let on_conflict = OnConflict::of(session.ctx.state(), insert, &alias)?;
    // What DataFusion plans: the rows, to a table it knows by its name.
    let plain = Insert {
        returning: None,
        on: None,
        table_alias: None,
        ..insert.clone()
    };
    let inserted = match source_query(&plain) {
        Some(query) => {
            let statement =
                DfStatement::Statement(Box::new(Statement::Query(Box::new(query.clone()))));
            let batches = session.plan_and_collect(statement, read_point).await?;
            insert_batches(
                session,
                read_point,
                &plain,
                &name,
                &batches,
                on_conflict.as_ref(),
            )
            .await?
        }
        None => {
            let state = session.statement_state(read_point.clone());
            let plan = state
                .statement_to_plan(DfStatement::Statement(Box::new(Statement::Insert(
                    plain.clone(),
                ))))
                .await
                .map_err(df_error)?;
            let LogicalPlan::Dml(dml) = plan else {
                return Err(SqlError::Query("an INSERT that plans as no insert".into()));
            };
            let source = Arc::unwrap_or_clone(dml.input);
            let batches = session.collect(DataFrame::new(state, source)).await?;
            insert_rows(
                &session.catalog,
                &session.row_locks,
                read_point,
                &name,
                |table| rows_of_batches(table, &batches),
                on_conflict.as_ref(),
            )
            .await?
        }
    };
    Ok((inserted, alias))
}

/// The query an INSERT takes its rows from, unless they are a VALUES list.
pub(crate) fn source_query(insert: &Insert) -> Option<&Query> {
    let source = insert.source.as_deref()?;
    match source.body.as_ref() {
        SetExpr::Values(_) => None,
        _ => Some(source),
    }
}

/// Inserts into table `name` the rows of `query` (the source of `insert`, whose column
/// list, if any, says where its columns go; the others are NULL), planned and run at
/// `read_point` on its own.
pub(crate) async fn insert_from_query(
    session: &Session,
    read_point: &ReadPoint,
    insert: &Insert,
    name: &RelName,
    query: &Query,
) -> Result<Inserted> {
    let statement = DfStatement::Statement(Box::new(Statement::Query(Box::new(query.clone()))));
    let batches = session.plan_and_collect(statement, read_point).await?;
    insert_batches(session, read_point, insert, name, &batches, None).await
}

/// Inserts into table `name` the rows of `batches` (what the source query of `insert`
/// gave).
pub(crate) async fn insert_batches(
    session: &Session,
    read_point: &ReadPoint,
    insert: &Insert,
    name: &RelName,
    batches: &[RecordBatch],
    on_conflict: Option<&OnConflict>,
) -> Result<Inserted> {
    let listed: Vec<String> = insert
        .columns
        .iter()
        .map(|c| {
            c.0.last()
                .and_then(|p| p.as_ident())
                .map(ident_name)
                .unwrap_or_default()
        })
        .collect();
    insert_rows(
        &session.catalog,
        &session.row_locks,
        read_point,
        name,
        |table| {
            let def = table.def();
            let positions: Vec<usize> = if listed.is_empty() {
                (0..def.columns.len()).collect()
            } else {
                def.positions(&listed)
                    .map_err(|c| undefined_column(&c, &def.name))?
                    .into_iter()
                    .map(usize::from)
                    .collect()
            };
            let mut rows = Vec::new();
            for batch in batches {
                if batch.num_columns() != positions.len() {
                    return Err(SqlError::user(
                        state::SYNTAX,
                        format!(
                            "INSERT has {} target columns and {} expressions",
                            positions.len(),
                            batch.num_columns()
                        ),
                    ));
                }
                let columns = positions
                    .iter()
                    .zip(batch.columns())
                    .map(|(&p, a)| cast_to_column(a, &def.columns[p]))
                    .collect::<Result<Vec<_>>>()?;
                let types: Vec<_> = positions.iter().map(|&p| table.types()[p]).collect();
                for r in 0..batch.num_rows() {
                    let mut row = vec![Value::Null; def.columns.len()];
                    for (&p, v) in positions.iter().zip(row_values(&columns, &types, r)) {
                        row[p] = v;
                    }
                    rows.push(row);
                }
            }
            Ok(rows)
        },
        on_conflict,
    )
    .await
}
