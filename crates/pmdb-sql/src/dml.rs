//! UPDATE, DELETE and COPY FROM. UPDATE and DELETE find their rows with a SELECT built
//! from the statement's own expressions, which DataFusion plans like any query (so WHERE
//! may hold subqueries, IN, EXISTS or a constant), over the target table seen with its
//! stored keys; pmdb then locks each row found, and writes the changes of the whole
//! statement as one batch under the table's write lock.

use std::collections::HashSet;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Schema;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Delete,
    Expr as AstExpr, FromTable, Ident, ObjectName, Query, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, Statement, TableWithJoins, Update,
    UpdateTableFromKind, WildcardAdditionalOptions,
};
use futures::StreamExt;
use std::sync::Arc;

use crate::arrow_conv::{arrow_type, cast_to_column, row_values};
use crate::ast_build;
use crate::ast_shape::plain_table;
use crate::copy_options::{CopyOptions, Encoding};
use crate::error::df_error;
use crate::error::{Result, SqlError, state};
use crate::keyed::{and_also, key_literal, key_of, keyed_column, keyed_name};
use crate::names::{RelName, ident_name, object_name};
use crate::provider::load_batch;
use crate::read_point::{ReadPoint, changed_since};
use crate::referential::{self, RowChange};
use crate::row_locks::{LockMode, WaitPolicy};
use crate::session::Session;
use crate::table::{Table, TableWriter};
use crate::types::Value;

/// The target table of a DELETE or UPDATE and the name its columns are qualified with.
pub(crate) fn target(t: &TableWithJoins) -> Result<(RelName, String)> {
    if !t.joins.is_empty() {
        return Err(SqlError::unsupported(
            "a join in the target of UPDATE or DELETE: put the other tables in FROM or USING",
        ));
    }
    match plain_table(&t.relation) {
        Some((name, alias)) => {
            let name = object_name(name)?;
            let alias = match alias {
                Some(a) if !a.columns.is_empty() => {
                    return Err(SqlError::unsupported(
                        "column aliases on the target of UPDATE or DELETE",
                    ));
                }
                Some(a) => ident_name(&a.name),
                None => name.name.clone(),
            };
            Ok((name, alias))
        }
        None => Err(SqlError::unsupported(format!(
            "{} as the target of UPDATE or DELETE",
            t.relation
        ))),
    }
}

/// What finds the rows of an UPDATE or DELETE, as a query planned from the statement's
/// own expressions: the target's columns, its stored key, then the new values.
struct Finding {
    name: RelName,
    alias: String,
    query: Query,
}

impl Finding {
    fn new(
        name: &RelName,
        alias: &str,
        new_values: Vec<AstExpr>,
        from: &[TableWithJoins],
        selection: Option<&AstExpr>,
    ) -> Result<Finding> {
        let qualifier = ObjectName::from(vec![Ident::with_quote('"', alias)]);
        let mut projection = vec![SelectItem::QualifiedWildcard(
            SelectItemQualifiedWildcardKind::ObjectName(qualifier),
            WildcardAdditionalOptions::default(),
        )];
        // Named, so two that are alike (`SET a = 1, b = 1`, `SET n = n`) stay apart.
        for (i, e) in new_values.into_iter().enumerate() {
            projection.push(SelectItem::ExprWithAlias {
                expr: AstExpr::Nested(Box::new(e)),
                alias: Ident::new(format!("__pmdb_new_{i}")),
            });
        }
        let mut tables = vec![ast_build::table(
            &name.sibling(keyed_name(&name.name, None)),
            alias,
        )];
        tables.extend_from_slice(from);
        let mut query = ast_build::select(projection, tables)?;
        if let SetExpr::Select(select) = query.body.as_mut() {
            select.selection = selection.cloned();
        }
        Ok(Finding {
            name: name.clone(),
            alias: alias.to_string(),
            query,
        })
    }

    /// The rows found at `read_point`.
    async fn run(&self, session: &Session, read_point: &ReadPoint) -> Result<Vec<RecordBatch>> {
        let statement =
            DfStatement::Statement(Box::new(Statement::Query(Box::new(self.query.clone()))));
        session.plan_and_collect(statement, read_point).await
    }

    /// The rows found at `read_point` among those with the stored `keys`.
    async fn run_for(
        &self,
        session: &Session,
        read_point: &ReadPoint,
        keys: &[Vec<u8>],
    ) -> Result<Vec<RecordBatch>> {
        let mut narrowed = Finding {
            name: self.name.clone(),
            alias: self.alias.clone(),
            query: self.query.clone(),
        };
        if let SetExpr::Select(select) = narrowed.query.body.as_mut() {
            let condition = AstExpr::InList {
                expr: Box::new(key_of(&self.alias, &keyed_column(None))),
                list: keys.iter().map(|k| key_literal(k)).collect(),
                negated: false,
            };
            and_also(&mut select.selection, condition);
        }
        narrowed.run(session, read_point).await
    }
}

/// A row an UPDATE or DELETE acts on: its stored key, its values as found, and for an
/// UPDATE its new values.
struct FoundRow {
    key: Vec<u8>,
    old: Vec<Value>,
    new: Option<Vec<Value>>,
}

/// The rows in a finding query's batches, each key once; `targets` are the columns an
/// UPDATE assigns (their new values follow the key column).
fn found_rows(
    table: &Table,
    batches: &[RecordBatch],
    targets: &[usize],
    update: bool,
) -> Result<Vec<FoundRow>> {
    let ncols = table.types().len();
    let def = table.def();
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    for b in batches {
        let keys = b
            .columns()
            .get(ncols)
            .and_then(|c| c.as_binary_opt::<i32>())
            .ok_or_else(|| {
                SqlError::Query(format!("the rows found carry no key column at {ncols}"))
            })?;
        let new_columns = if update {
            let mut columns: Vec<_> = b.columns()[..ncols].to_vec();
            for (i, &pos) in targets.iter().enumerate() {
                columns[pos] = cast_to_column(b.column(ncols + 1 + i), &def.columns[pos])?;
            }
            Some(columns)
        } else {
            None
        };
        for row in 0..b.num_rows() {
            let key = keys.value(row);
            if seen.insert(key.to_vec()) {
                rows.push(FoundRow {
                    key: key.to_vec(),
                    old: row_values(&b.columns()[..ncols], table.types(), row),
                    new: new_columns
                        .as_ref()
                        .map(|c| row_values(c, table.types(), row)),
                });
            }
        }
    }
    Ok(rows)
}

/// Finds the rows of an UPDATE (`targets` assigned) or DELETE and changes them: each
/// row is locked in `mode` first (waiting for its holder), then, under the table's write
/// lock, a row a commit changed since the statement's snapshot is found again as it is
/// now (under read committed; it may no longer qualify) and the new values computed
/// from it, as PostgreSQL does.
async fn change_found(
    session: &Session,
    read_point: &ReadPoint,
    finding: &Finding,
    targets: &[usize],
    mode: LockMode,
) -> Result<Changed> {
    let update = mode != LockMode::Update || !targets.is_empty();
    // The statement's locks, kept across its attempts.
    let mut locker = read_point.locker(&session.row_locks);
    loop {
        let table = session.catalog.table_or_error(&finding.name)?;
        let seen = read_point.snapshot();
        let batches = finding.run(session, read_point).await?;
        let mut rows = found_rows(&table, &batches, targets, update)?;
        // Row locks before the table's: a row's may be held until another block ends.
        let mut changed = Vec::new();
        for row in &rows {
            locker
                .lock(table.as_ref(), &row.key, mode, WaitPolicy::Wait)
                .await?;
            if changed_since(&seen, table.rows(), &row.key)? {
                changed.push(row.key.clone());
            }
        }
        let (current, guard) = session
            .catalog
            .lock_table_async(&finding.name, &mut locker)
            .await?;
        if !Arc::ptr_eq(&current, &table) {
            // A schema change replaced the table meanwhile: find its rows anew.
            continue;
        }
        let read_point = read_point.under_lock(&session.db);
        if !changed.is_empty() {
            let again = finding.run_for(session, &read_point, &changed).await?;
            let again = found_rows(&table, &again, targets, update)?;
            let changed: HashSet<&Vec<u8>> = changed.iter().collect();
            rows.retain(|r| !changed.contains(&r.key));
            rows.extend(again);
        }
        let mut writer = TableWriter::new(&table, session.catalog.references(&table)?)
            .through(&read_point)
            .claiming(&mut locker);
        let written = rows.iter().try_for_each(|row| match &row.new {
            Some(new) => writer.update(&row.key, &row.old, new),
            None => writer.delete(&row.key, &row.old),
        });
        if let Some(claim) = writer.blocked().cloned() {
            // Another writer holds a key this statement writes: wait for it without the
            // table, then find the rows anew.
            drop(writer);
            drop(guard);
            locker.claim_waiting(&claim).await?;
            continue;
        }
        written?;
        writer.commit().await?;
        let count = writer.rows();
        drop(writer);
        let changes = rows.into_iter().map(|r| (r.old, r.new)).collect();
        return Ok(Changed {
            count,
            table,
            alias: finding.alias.clone(),
            changes,
        });
    }
}

/// What an UPDATE or DELETE changed: how many rows, and each row before and after
/// (`None`: deleted).
pub(crate) struct Changed {
    pub count: u64,
    pub table: Arc<Table>,
    /// The name the statement gave the table.
    pub alias: String,
    pub changes: Vec<RowChange>,
}

impl Changed {
    /// Each row as the statement left it (an UPDATE's new values, a DELETE's old
    /// ones), for RETURNING.
    pub fn rows(self) -> Vec<Vec<Value>> {
        self.changes
            .into_iter()
            .map(|(old, new)| new.unwrap_or(old))
            .collect()
    }
}

/// Finds and changes the rows of an UPDATE or DELETE (see [`change_found`]), then
/// applies the actions of the foreign keys that reference the rows it deleted or whose
/// referenced columns (among `targets`) it changed: in the statement's block, or in
/// one of its own, so that every table changed commits together.
async fn change_found_and_referencing(
    session: &Session,
    read_point: &ReadPoint,
    finding: &Finding,
    targets: &[usize],
    mode: LockMode,
) -> Result<Changed> {
    let table = session.catalog.table_or_error(&finding.name)?;
    let changed_columns = (mode != LockMode::Update || !targets.is_empty()).then_some(targets);
    if !referential::reaches_references(session, table.def().id, changed_columns) {
        return change_found(session, read_point, finding, targets, mode).await;
    }
    let (read_point, own) = referential::block_for(session, read_point);
    let changed = change_found(session, &read_point, finding, targets, mode).await?;
    referential::parents_changed(session, &read_point, &changed.table, &changed.changes).await?;
    crate::deferred_checks::commit_own_block(session, own).await?;
    Ok(changed)
}

pub async fn delete(session: &Session, read_point: &ReadPoint, d: &Delete) -> Result<Changed> {
    if !d.order_by.is_empty() || d.limit.is_some() || !d.tables.is_empty() {
        return Err(SqlError::unsupported(
            "DELETE with ORDER BY, LIMIT or several target tables",
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
    let finding = Finding::new(&name, &alias, Vec::new(), using, d.selection.as_ref())?;
    change_found_and_referencing(session, read_point, &finding, &[], LockMode::Update).await
}

pub async fn update(session: &Session, read_point: &ReadPoint, u: &Update) -> Result<Changed> {
    if !u.order_by.is_empty() || u.limit.is_some() || u.or.is_some() {
        return Err(SqlError::unsupported("UPDATE with ORDER BY, LIMIT or OR"));
    }
    let (name, alias) = target(&u.table)?;
    let from: &[TableWithJoins] = match &u.from {
        None => &[],
        Some(UpdateTableFromKind::AfterSet(f) | UpdateTableFromKind::BeforeSet(f)) => f,
    };
    let table = session.catalog.table_or_error(&name)?;
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
        crate::numeric_places::check_assigned(&a.value, def.columns[pos].ty)?;
        targets.push(pos);
        exprs.push(a.value.clone());
    }
    // Assigning a key column (the primary key's, or a unique index's, which foreign
    // keys may reference) takes the lock a DELETE takes, as in PostgreSQL.
    let mode = if targets.iter().any(|&t| {
        def.primary_key.contains(&(t as u16))
            || def
                .indexes
                .iter()
                .any(|ix| ix.unique && ix.columns.contains(&(t as u16)))
    }) {
        LockMode::Update
    } else {
        LockMode::NoKeyUpdate
    };
    let finding = Finding::new(&name, &alias, exprs, from, u.selection.as_ref())?;
    change_found_and_referencing(session, read_point, &finding, &targets, mode).await
}

/// How COPY reads its file: CSV unless the statement says otherwise or the file's name
/// ends in `.parquet`.
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
    let o = CopyOptions::parse(options, legacy)?;
    o.check_direction(false)?;
    if o.null.is_some() {
        return Err(SqlError::unsupported(
            "COPY … FROM a file with NULL: empty fields are NULL",
        ));
    }
    if o.quote.is_some()
        || o.escape.is_some()
        || !o.force_not_null.is_empty()
        || !o.force_null.is_empty()
    {
        return Err(SqlError::unsupported(
            "COPY … FROM a file with QUOTE, ESCAPE or FORCE options (give the rows FROM STDIN)",
        ));
    }
    let default = if filename.ends_with(".parquet") {
        Encoding::Parquet
    } else {
        Encoding::Csv
    };
    let encoding = o.encoding.unwrap_or(default);
    if encoding == Encoding::Binary {
        return Err(SqlError::unsupported(
            "COPY … FROM a file in binary (pmdb reads CSV, text and Parquet files)",
        ));
    }
    Ok(CopyFormat {
        parquet: encoding == Encoding::Parquet,
        header: o.header,
        delimiter: o.delimiter.unwrap_or(match encoding {
            Encoding::Text => b'\t',
            Encoding::Csv | Encoding::Parquet | Encoding::Binary => b',',
        }),
    })
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
        return Err(SqlError::unsupported(
            "COPY … FROM a file with WHERE (COPY … FROM STDIN takes one)",
        ));
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
    let mut locker = read_point.locker(&session.row_locks);
    let (table, _guard) = session.catalog.lock_table_async(&name, &mut locker).await?;
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
    // A claim held by another writer fails the COPY (55P03): it holds the table.
    let mut writer = TableWriter::for_load(&table, session.catalog.references(&table)?)?
        .through(read_point)
        .claiming(&mut locker);
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

fn copy_error(table: &RelName, committed: u64, e: SqlError) -> SqlError {
    let message = format!(
        "COPY {table}: {} ({committed} rows were loaded before the error)",
        e.message()
    );
    e.with_message(message)
}
