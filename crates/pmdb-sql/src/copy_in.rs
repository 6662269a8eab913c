//! COPY … FROM STDIN: the client sends the rows in pieces. [`CopyIn`] hands them, as
//! record batches of text columns, to a task that loads them into the table as a bulk
//! load does (casting each column strictly to the column's type, committing as it goes
//! in autocommit; in a transaction block, into the block).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::sql::sqlparser::ast::{CopySource, CopyTarget, Statement};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::copy_options::{CopyOptions, Encoding};
use crate::error::{Result, SqlError, state};
use crate::names::object_name;
use crate::provider::load_batch;
use crate::read_point::ReadPoint;
use crate::session::Session;
use crate::table::TableWriter;

/// How the rows are written: PostgreSQL's text format (the default) or CSV.
#[derive(Clone, Debug)]
pub struct CopyFormat {
    pub csv: bool,
    pub delimiter: u8,
    pub header: bool,
    /// The text of a NULL: `\N` in text, an unquoted empty field in CSV.
    pub null: String,
}

/// A COPY … FROM STDIN under way.
pub struct CopyIn {
    /// The table's columns, in the order the rows give them.
    pub columns: Vec<String>,
    pub format: CopyFormat,
    batches: Option<mpsc::Sender<RecordBatch>>,
    task: JoinHandle<Result<u64>>,
}

/// The COPY … FROM STDIN `statement` asks for, if it is one: its table and format.
pub fn copy_from_stdin(statement: &Statement) -> Option<Result<(String, CopyFormat)>> {
    let Statement::Copy {
        source,
        to: false,
        target: CopyTarget::Stdin,
        options,
        legacy_options,
        ..
    } = statement
    else {
        return None;
    };
    Some((|| {
        let CopySource::Table {
            table_name,
            columns,
        } = source
        else {
            return Err(SqlError::unsupported("COPY (query) FROM STDIN"));
        };
        if !columns.is_empty() {
            return Err(SqlError::unsupported(
                "COPY with a column list: the rows must hold every column in order",
            ));
        }
        let o = CopyOptions::parse(options, legacy_options)?;
        let csv = match o.encoding.unwrap_or(Encoding::Text) {
            Encoding::Text => false,
            Encoding::Csv => true,
            Encoding::Parquet => {
                return Err(SqlError::unsupported(
                    "COPY … FROM STDIN in Parquet: give a file",
                ));
            }
        };
        let f = CopyFormat {
            csv,
            delimiter: o.delimiter.unwrap_or(if csv { b',' } else { b'\t' }),
            header: o.header,
            null: o
                .null
                .unwrap_or_else(|| if csv { "" } else { "\\N" }.into()),
        };
        Ok((object_name(table_name)?, f))
    })())
}

impl CopyIn {
    /// Starts loading into `table` at `read_point` (the statement's).
    pub(crate) fn start(
        session: &Arc<Session>,
        read_point: ReadPoint,
        table: &str,
        format: CopyFormat,
    ) -> Result<CopyIn> {
        let columns = session
            .catalog
            .table_or_error(table)?
            .def()
            .columns
            .iter()
            .map(|c| c.name.clone())
            .collect();
        let (tx, mut rx) = mpsc::channel::<RecordBatch>(4);
        let session = Arc::clone(session);
        let name = table.to_owned();
        let task = tokio::spawn(async move {
            let (table, _guard) = session.catalog.lock_table_async(&name).await?;
            let read_point = read_point.under_lock(&session.db);
            let mut locker = read_point.locker(&session.row_locks);
            // A claim held by another writer fails the COPY (55P03): it holds the table.
            let mut writer = TableWriter::for_load(&table, session.catalog.references(&table)?)?
                .through(&read_point)
                .claiming(&mut locker);
            while let Some(batch) = rx.recv().await {
                load_batch(&table, &mut writer, &batch).await?;
            }
            writer.commit().await?;
            Ok(writer.rows())
        });
        Ok(CopyIn {
            columns,
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

/// The error of a COPY whose data the client gave up on.
pub fn copy_failed(message: &str) -> SqlError {
    SqlError::user(
        state::QUERY_CANCELED,
        format!("COPY from stdin failed: {message}"),
    )
}
