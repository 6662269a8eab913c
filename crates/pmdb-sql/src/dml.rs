//! UPDATE, DELETE and COPY FROM. UPDATE and DELETE find their rows with a SELECT that
//! DataFusion plans like any query (so WHERE may hold subqueries, IN, EXISTS or a
//! constant), over the target table seen with its stored keys; pmdb then writes the
//! changes of the whole statement as one batch. The target table stays locked for
//! writes from before that SELECT's snapshot until the batch commits.

use std::collections::HashSet;
use std::ops::Bound;

use datafusion::arrow::array::{AsArray, BinaryArray, RecordBatch};
use datafusion::arrow::datatypes::Schema;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions};
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget,
    Delete, FromTable, Statement, TableFactor, TableWithJoins, Truncate, Update,
    UpdateTableFromKind,
};
use futures::StreamExt;

use crate::arrow_conv::{arrow_type, cast_to_column, row_values};
use crate::ddl::{ident_name, object_name};
use crate::error::df_error;
use crate::error::{Result, SqlError, state};
use crate::provider::{KEYED_PREFIX, load_batch};
use crate::read_point::ReadPoint;
use crate::session::Session;
use crate::table::TableWriter;

/// `"name"`, quoted for SQL.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The target table of a DELETE or UPDATE and the name its columns are qualified with.
fn target(t: &TableWithJoins) -> Result<(String, String)> {
    if !t.joins.is_empty() {
        return Err(SqlError::unsupported(
            "a join in the target of UPDATE or DELETE: put the other tables in FROM or USING",
        ));
    }
    match &t.relation {
        TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => {
            let name = object_name(name)?;
            let alias = match alias {
                Some(a) => ident_name(&a.name),
                None => name.clone(),
            };
            Ok((name, alias))
        }
        other => Err(SqlError::unsupported(format!(
            "{other} as the target of UPDATE or DELETE"
        ))),
    }
}

fn from_list(items: &[TableWithJoins]) -> String {
    items.iter().map(|t| format!(", {t}")).collect::<String>()
}

/// The SELECT that finds a statement's rows: the target's columns, its key column, then
/// `extra` expressions.
fn finding_query(
    name: &str,
    alias: &str,
    extra: &[String],
    from: &[TableWithJoins],
    selection: Option<&datafusion::sql::sqlparser::ast::Expr>,
) -> String {
    let mut sql = format!("SELECT {}.*", quoted(alias));
    // Named, so two that print alike (`SET a = 1, b = 1`, `SET n = n`) stay apart.
    for (i, e) in extra.iter().enumerate() {
        sql.push_str(&format!(", ({e}) AS \"__pmdb_new_{i}\""));
    }
    sql.push_str(&format!(
        " FROM {} AS {}{}",
        quoted(&format!("{KEYED_PREFIX}{name}")),
        quoted(alias),
        from_list(from)
    ));
    if let Some(w) = selection {
        sql.push_str(&format!(" WHERE {w}"));
    }
    sql
}

/// The stored keys in column `at` of a finding query's batch.
fn key_column(b: &RecordBatch, at: usize) -> Result<&BinaryArray> {
    b.columns()
        .get(at)
        .and_then(|c| c.as_binary_opt::<i32>())
        .ok_or_else(|| SqlError::Query(format!("the rows found carry no key column at {at}")))
}

pub async fn delete(session: &Session, read_point: &ReadPoint, d: &Delete) -> Result<u64> {
    if d.returning.is_some() || !d.order_by.is_empty() || d.limit.is_some() || !d.tables.is_empty()
    {
        return Err(SqlError::unsupported(
            "DELETE with RETURNING, ORDER BY, LIMIT or several target tables",
        ));
    }
    let targets = match &d.from {
        FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
    };
    let [t] = targets.as_slice() else {
        return Err(SqlError::unsupported("DELETE from several tables"));
    };
    let (name, alias) = target(t)?;
    let using = d.using.as_deref().unwrap_or(&[]);
    let (table, _guard) = session.catalog.lock_table_async(&name).await?;
    let read_point = read_point.under_lock(&session.db);
    let batches = session
        .query(
            &finding_query(&name, &alias, &[], using, d.selection.as_ref()),
            &read_point,
        )
        .await?;
    let ncols = table.types().len();
    let mut writer = TableWriter::new(&table).through(&read_point);
    let mut seen = HashSet::new();
    for b in &batches {
        let keys = key_column(b, ncols)?;
        for row in 0..b.num_rows() {
            let key = keys.value(row);
            if seen.insert(key.to_vec()) {
                let old = row_values(&b.columns()[..ncols], table.types(), row);
                writer.delete(key, &old)?;
            }
        }
    }
    writer.commit().await?;
    Ok(writer.rows())
}

pub async fn update(session: &Session, read_point: &ReadPoint, u: &Update) -> Result<u64> {
    if u.returning.is_some() || !u.order_by.is_empty() || u.limit.is_some() || u.or.is_some() {
        return Err(SqlError::unsupported(
            "UPDATE with RETURNING, ORDER BY, LIMIT or OR",
        ));
    }
    let (name, alias) = target(&u.table)?;
    let from: &[TableWithJoins] = match &u.from {
        None => &[],
        Some(UpdateTableFromKind::AfterSet(f) | UpdateTableFromKind::BeforeSet(f)) => f,
    };
    let (table, _guard) = session.catalog.lock_table_async(&name).await?;
    let read_point = read_point.under_lock(&session.db);
    let def = table.def();
    let mut targets = Vec::with_capacity(u.assignments.len());
    let mut exprs = Vec::with_capacity(u.assignments.len());
    for a in &u.assignments {
        let AssignmentTarget::ColumnName(col) = &a.target else {
            return Err(SqlError::unsupported("assigning a tuple of columns"));
        };
        let col_name = col
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(ident_name)
            .ok_or_else(|| SqlError::user(state::SYNTAX, format!("bad column {col}")))?;
        let pos = def.column(&col_name).ok_or_else(|| {
            SqlError::user(
                state::UNDEFINED_COLUMN,
                format!("column {col_name:?} of table {name:?} does not exist"),
            )
        })?;
        if targets.contains(&pos) {
            return Err(SqlError::user(
                state::SYNTAX,
                format!("column {col_name:?} is assigned more than once"),
            ));
        }
        targets.push(pos);
        exprs.push(a.value.to_string());
    }
    let batches = session
        .query(
            &finding_query(&name, &alias, &exprs, from, u.selection.as_ref()),
            &read_point,
        )
        .await?;
    let ncols = table.types().len();
    let mut writer = TableWriter::new(&table).through(&read_point);
    let mut seen = HashSet::new();
    for b in &batches {
        let keys = key_column(b, ncols)?;
        let mut new_columns: Vec<_> = b.columns()[..ncols].to_vec();
        for (i, &pos) in targets.iter().enumerate() {
            new_columns[pos] = cast_to_column(b.column(ncols + 1 + i), &def.columns[pos])?;
        }
        for row in 0..b.num_rows() {
            let key = keys.value(row);
            if seen.insert(key.to_vec()) {
                let old = row_values(&b.columns()[..ncols], table.types(), row);
                let new = row_values(&new_columns, table.types(), row);
                writer.update(key, &old, &new)?;
            }
        }
    }
    writer.commit().await?;
    Ok(writer.rows())
}

/// How COPY reads its file.
struct CopyFormat {
    parquet: bool,
    header: bool,
    delimiter: u8,
}

fn copy_format(
    filename: &str,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
) -> Result<CopyFormat> {
    let mut f = CopyFormat {
        parquet: filename.ends_with(".parquet"),
        header: false,
        delimiter: b',',
    };
    let ascii = |c: char| -> Result<u8> {
        u8::try_from(c)
            .ok()
            .filter(u8::is_ascii)
            .ok_or_else(|| SqlError::unsupported(format!("delimiter {c:?}: one ASCII character")))
    };
    for o in options {
        match o {
            CopyOption::Format(fmt) => match fmt.value.to_lowercase().as_str() {
                "csv" => f.parquet = false,
                "parquet" => f.parquet = true,
                "text" => {
                    f.parquet = false;
                    f.delimiter = b'\t';
                }
                other => return Err(SqlError::unsupported(format!("COPY format {other}"))),
            },
            CopyOption::Header(h) => f.header = *h,
            CopyOption::Delimiter(c) => f.delimiter = ascii(*c)?,
            other => return Err(SqlError::unsupported(format!("COPY option {other}"))),
        }
    }
    for o in legacy {
        match o {
            CopyLegacyOption::Csv(csv) => {
                for c in csv {
                    match c {
                        CopyLegacyCsvOption::Header => f.header = true,
                        other => {
                            return Err(SqlError::unsupported(format!("COPY option {other}")));
                        }
                    }
                }
            }
            CopyLegacyOption::Delimiter(c) => f.delimiter = ascii(*c)?,
            CopyLegacyOption::Header => f.header = true,
            other => return Err(SqlError::unsupported(format!("COPY option {other}"))),
        }
    }
    Ok(f)
}

/// COPY table [(columns)] FROM 'file' [WITH (FORMAT csv|parquet, HEADER, DELIMITER)]:
/// a bulk load that commits every few megabytes. On an error, the rows of the commits
/// before it stay, and the error says how many.
pub async fn copy_from(
    session: &Session,
    read_point: &ReadPoint,
    statement: &Statement,
) -> Result<u64> {
    let Statement::Copy {
        source,
        target,
        options,
        legacy_options,
        ..
    } = statement
    else {
        return Err(SqlError::Query("not a COPY".into()));
    };
    let CopySource::Table {
        table_name,
        columns,
    } = source
    else {
        return Err(SqlError::unsupported("COPY (query) FROM"));
    };
    let CopyTarget::File { filename } = target else {
        return Err(SqlError::unsupported(
            "COPY FROM STDIN or a program: give a file name",
        ));
    };
    if !columns.is_empty() {
        return Err(SqlError::unsupported(
            "COPY with a column list: the file must hold every column in order",
        ));
    }
    let name = object_name(table_name)?;
    let format = copy_format(filename, options, legacy_options)?;
    if let Err(e) = std::fs::File::open(filename) {
        return Err(SqlError::user(
            state::UNDEFINED_FILE,
            format!("COPY {name}: cannot open {filename:?}: {e}"),
        ));
    }
    let (table, _guard) = session.catalog.lock_table_async(&name).await?;
    let fields: Vec<_> = table
        .def()
        .columns
        .iter()
        .map(|c| datafusion::arrow::datatypes::Field::new(&c.name, arrow_type(c.ty), true))
        .collect();
    let schema = Schema::new(fields);
    // One partition reads the file in its order: a load in key order keeps the bulk
    // path (no duplicate lookups) and builds the columnar segments.
    let ctx = &datafusion::prelude::SessionContext::new_with_config(
        session.ctx.copied_config().with_target_partitions(1),
    );
    let frame = if format.parquet {
        ctx.read_parquet(
            filename.as_str(),
            ParquetReadOptions::default().file_extension(""),
        )
        .await
    } else {
        ctx.read_csv(
            filename.as_str(),
            CsvReadOptions::new()
                .has_header(format.header)
                .delimiter(format.delimiter)
                .schema(&schema)
                .file_extension(""),
        )
        .await
    }
    .map_err(|e| copy_error(&name, 0, df_error(e)))?;
    let mut stream = frame
        .execute_stream()
        .await
        .map_err(|e| copy_error(&name, 0, df_error(e)))?;
    let mut writer = TableWriter::for_load(&table)?.through(read_point);
    while let Some(batch) = stream.next().await {
        let step = match batch.map_err(df_error) {
            Ok(b) => load_batch(&table, &mut writer, &b).await,
            Err(e) => Err(e),
        };
        if let Err(e) = step {
            return Err(copy_error(&name, writer.committed(), e));
        }
    }
    writer
        .commit()
        .await
        .map_err(|e| copy_error(&name, writer.committed(), e))?;
    Ok(writer.rows())
}

fn copy_error(table: &str, committed: u64, e: SqlError) -> SqlError {
    let message = format!("COPY {table}: {e} ({committed} rows were loaded before the error)");
    match e {
        SqlError::User { sqlstate, .. } => SqlError::user(sqlstate, message),
        SqlError::Db(_) | SqlError::Damaged { .. } | SqlError::Query(_) => {
            SqlError::user(e.sqlstate(), message)
        }
    }
}

/// TRUNCATE: every row of each table, with its index entries, is deleted (in a block,
/// through the block; in autocommit, committed as it goes, table by table). The rows
/// deleted.
pub async fn truncate(session: &Session, read_point: &ReadPoint, t: &Truncate) -> Result<u64> {
    let mut deleted = 0;
    for target in &t.table_names {
        let name = object_name(&target.name)?;
        let (table, _guard) = session.catalog.lock_table_async(&name).await?;
        let read_point = read_point.under_lock(&session.db);
        let mut writer = TableWriter::new(&table).through(&read_point);
        let limit = table.fill_batch_bytes();
        let mut scan = read_point.scan(table.rows(), (Bound::Unbounded, Bound::Unbounded))?;
        while let Some(entry) = scan.next_ref() {
            let entry = entry?;
            let old = table.decode(entry.value)?;
            writer.delete(entry.key, &old)?;
            if writer.bytes >= limit && read_point.txn().is_none() {
                writer.commit().await?;
            }
        }
        writer.commit().await?;
        deleted += writer.rows();
    }
    Ok(deleted)
}
