//! COPY … FROM STDIN: the client sends the rows in pieces (in text, CSV, or binary,
//! whose fields the server writes as their text). [`CopyIn`] hands them, as record
//! batches of text columns, to a task that loads them into the table as a bulk
//! load does (casting each column strictly to the column's type, committing as it goes
//! in autocommit; in a transaction block, into the block). With a column list, the rows
//! hold those columns and the others take their defaults, computed for each batch by a
//! query of the default expressions (so `nextval` gives each row its own value).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::sql::sqlparser::ast::{CopySource, CopyTarget as Target, Expr, Statement};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::copy_options::{CopyOptions, Encoding, check_listed};
use crate::copy_where::RowFilter;
use crate::error::{Result, SqlError, state, undefined_column};
use crate::names::{RelName, ident_name, object_name};
use crate::provider::load_batch;
use crate::read_point::ReadPoint;
use crate::schema::TableDef;
use crate::session::Session;
use crate::table::TableWriter;
use crate::types::SqlType;

/// How the rows are written: PostgreSQL's text format (the default), CSV or binary.
#[derive(Clone, Debug)]
pub struct CopyFormat {
    pub csv: bool,
    /// PostgreSQL's binary format (the other fields do not apply).
    pub binary: bool,
    pub delimiter: u8,
    pub header: bool,
    /// The text of a NULL: `\N` in text, an unquoted empty field in CSV.
    pub null: String,
    /// CSV's quote and escape characters (`"` unless given; the escape is the quote's).
    pub quote: u8,
    pub escape: u8,
    /// CSV: columns whose unquoted NULL text is that text.
    pub force_not_null: Vec<String>,
    /// CSV: columns whose quoted NULL text is NULL too.
    pub force_null: Vec<String>,
}

/// A COPY … FROM STDIN under way.
pub struct CopyIn {
    /// The table's columns, in the order the rows give them.
    pub columns: Vec<String>,
    /// Their types.
    pub types: Vec<SqlType>,
    pub format: CopyFormat,
    batches: Option<mpsc::Sender<RecordBatch>>,
    task: JoinHandle<Result<u64>>,
}

/// The COPY … FROM STDIN `statement` asks for, if it is one: its table, format, and
/// the columns it lists (none: every column).
pub fn copy_from_stdin(statement: &Statement) -> Option<Result<CopyTarget>> {
    let Statement::Copy {
        source,
        to: false,
        target: Target::Stdin,
        options,
        legacy_options,
        ..
    } = statement
    else {
        return None;
    };
    Some((|| {
        let (table, listed, condition) = match source {
            CopySource::Table {
                table_name,
                columns,
            } => (
                object_name(table_name)?,
                columns.iter().map(ident_name).collect(),
                None,
            ),
            _ => match crate::copy_where::target(source) {
                Some(found) => {
                    let (table, listed, condition) = found?;
                    (table, listed, Some(condition))
                }
                None => return Err(SqlError::unsupported("COPY (query) FROM STDIN")),
            },
        };
        let o = CopyOptions::parse(options, legacy_options)?;
        o.check_direction(false)?;
        let (csv, binary) = match o.encoding.unwrap_or(Encoding::Text) {
            Encoding::Text => (false, false),
            Encoding::Csv => (true, false),
            Encoding::Binary => (false, true),
            Encoding::Parquet => {
                return Err(SqlError::unsupported(
                    "COPY … FROM STDIN in Parquet: give a file",
                ));
            }
        };
        let f = CopyFormat {
            csv,
            binary,
            delimiter: o.delimiter.unwrap_or(if csv { b',' } else { b'\t' }),
            header: o.header,
            null: o
                .null
                .unwrap_or_else(|| if csv { "" } else { "\\N" }.into()),
            quote: o.quote.unwrap_or(b'"'),
            escape: o.escape.or(o.quote).unwrap_or(b'"'),
            force_not_null: o.force_not_null,
            force_null: o.force_null,
        };
        Ok(CopyTarget {
            table,
            format: f,
            listed,
            condition,
        })
    })())
}

/// Where a COPY … FROM STDIN loads, and which of its rows.
pub struct CopyTarget {
    pub table: RelName,
    pub format: CopyFormat,
    /// The columns the rows hold, as listed (none: every column).
    pub listed: Vec<String>,
    /// The WHERE condition the rows loaded meet ([`crate::copy_where`]).
    pub condition: Option<Expr>,
}

impl CopyIn {
    /// Starts loading into `table` at `read_point` (the statement's).
    pub(crate) fn start(
        session: &Arc<Session>,
        read_point: ReadPoint,
        target: CopyTarget,
    ) -> Result<CopyIn> {
        let CopyTarget {
            table,
            format,
            listed,
            condition,
        } = target;
        let table = &table;
        let def = session.catalog.table_or_error(table)?.def().clone();
        let filter = match &condition {
            Some(c) => Some(RowFilter::plan(
                &session.statement_state(read_point.clone()),
                &def,
                c,
            )?),
            None => None,
        };
        for (i, c) in listed.iter().enumerate() {
            if def.column(c).is_none() {
                return Err(undefined_column(c, &table.name));
            }
            if listed[..i].contains(c) {
                return Err(SqlError::user(
                    state::DUPLICATE_COLUMN,
                    format!("column \"{c}\" specified more than once"),
                ));
            }
        }
        let columns: Vec<String> = if listed.is_empty() {
            def.columns.iter().map(|c| c.name.clone()).collect()
        } else {
            listed
        };
        check_listed("FORCE_NOT_NULL", &format.force_not_null, &columns)?;
        check_listed("FORCE_NULL", &format.force_null, &columns)?;
        let types = columns
            .iter()
            .map(|c| def.columns[def.column(c).expect("a checked column")].ty)
            .collect();
        let given = columns.clone();
        let (tx, mut rx) = mpsc::channel::<RecordBatch>(4);
        let session = Arc::clone(session);
        let name = table.to_owned();
        let task = tokio::spawn(async move {
            let mut locker = read_point.locker(&session.row_locks);
            let (table, _guard) = session.catalog.lock_table_async(&name, &mut locker).await?;
            let read_point = read_point.under_lock(&session.db);
            // A claim held by another writer fails the COPY (55P03): it holds the table.
            let mut writer = TableWriter::for_load(&table, session.catalog.references(&table)?)?
                .through(&read_point)
                .claiming(&mut locker);
            while let Some(batch) = rx.recv().await {
                let batch =
                    with_defaults(&session, &read_point, table.def(), &given, batch).await?;
                let batch = match &filter {
                    Some(filter) => filter.keep(table.def(), &batch)?,
                    None => batch,
                };
                load_batch(&table, &mut writer, &batch).await?;
            }
            writer.commit().await?;
            Ok(writer.rows())
        });
        Ok(CopyIn {
            columns,
            types,
            format,
            batches: Some(tx),
            task,
        })
    }

    /// Loads the rows of `batch` (text columns, in table order).
    pub async fn send(&mut self, batch: RecordBatch) -> Result<()> {
        let stopped = match &self.batches {
            Some(tx) => tx.send(batch).await.is_err(),
            None => true,
        };
        if stopped {
            // The task ended early: its error says why.
            self.batches = None;
            return Err(self
                .outcome()
                .await
                .err()
                .unwrap_or_else(|| SqlError::Query("the COPY stopped taking rows".into())));
        }
        Ok(())
    }

    async fn outcome(&mut self) -> Result<u64> {
        (&mut self.task)
            .await
            .map_err(|e| SqlError::Query(format!("the COPY task failed: {e}")))?
    }

    /// Ends the COPY: the rows loaded.
    pub(crate) async fn finish(mut self) -> Result<u64> {
        self.batches = None;
        self.outcome().await
    }

    /// Abandons the COPY (rows it committed in autocommit stay).
    pub(crate) fn abort(self) {
        self.task.abort();
    }
}

/// `batch` (the columns `given` of table `def`, in that order) as a batch of every
/// column in table order, those not given filled with their defaults (NULL without).
async fn with_defaults(
    session: &Session,
    read_point: &ReadPoint,
    def: &TableDef,
    given: &[String],
    batch: RecordBatch,
) -> Result<RecordBatch> {
    let all_given = given.len() == def.columns.len()
        && given.iter().zip(&def.columns).all(|(g, c)| *g == c.name);
    if all_given {
        return Ok(batch);
    }
    let rows = batch.num_rows();
    let missing: Vec<usize> = (0..def.columns.len())
        .filter(|&i| !given.contains(&def.columns[i].name))
        .collect();
    let defaults = match missing.is_empty() {
        true => None,
        false => Some(defaults_of(session, read_point, def, &missing, rows).await?),
    };
    let columns: Vec<ArrayRef> = (0..def.columns.len())
        .map(
            |i| match given.iter().position(|g| *g == def.columns[i].name) {
                Some(at) => Arc::clone(batch.column(at)),
                None => {
                    let at = missing
                        .iter()
                        .position(|&m| m == i)
                        .expect("a missing column");
                    Arc::clone(defaults.as_ref().expect("defaults computed").column(at))
                }
            },
        )
        .collect();
    let fields: Vec<Field> = def
        .columns
        .iter()
        .zip(&columns)
        .map(|(c, a)| Field::new(&c.name, a.data_type().clone(), true))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| SqlError::Query(e.to_string()))
}

/// The defaults of the columns `missing` of `def` for `rows` rows, one column each,
/// from one query: `SELECT d1, d2 … FROM generate_series(1, rows)`.
async fn defaults_of(
    session: &Session,
    read_point: &ReadPoint,
    def: &TableDef,
    missing: &[usize],
    rows: usize,
) -> Result<RecordBatch> {
    // Each named: two alike (`NULL, NULL`) must stay apart.
    let items: Vec<String> = missing
        .iter()
        .enumerate()
        .map(|(n, &i)| match def.columns[i].default.as_deref() {
            Some(d) => format!("({d}) AS d{n}"),
            None => format!("NULL AS d{n}"),
        })
        .collect();
    let sql = format!(
        "SELECT {} FROM generate_series(1, {rows})",
        items.join(", ")
    );
    let statement = crate::session::parse(&sql)?
        .pop_front()
        .ok_or_else(|| SqlError::Query("no default query".into()))?;
    let defaults = session.plan_and_collect(statement, read_point).await?;
    datafusion::arrow::compute::concat_batches(
        &defaults
            .first()
            .map(|b| b.schema())
            .unwrap_or_else(|| Arc::new(Schema::empty())),
        &defaults,
    )
    .map_err(|e| SqlError::Query(e.to_string()))
}

/// The error of a COPY whose data the client gave up on.
pub fn copy_failed(message: &str) -> SqlError {
    SqlError::user(
        state::QUERY_CANCELED,
        format!("COPY from stdin failed: {message}"),
    )
}
