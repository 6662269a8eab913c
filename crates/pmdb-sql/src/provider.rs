//! The DataFusion side of tables: a catalog provider whose schemas are pmdb's, a schema
//! provider that finds a schema's tables in the catalog, and a table provider per table
//! that plans scans (projection, key-range and index pushdown, the row count for the
//! optimizer) and INSERTs.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{CatalogProvider, SchemaProvider, Session, TableProvider};
use datafusion::common::{Constraint, Constraints, Result as DfResult};
use datafusion::datasource::TableType;
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};
use futures::StreamExt;
use pmdb_engine::Snapshot;
use pmdb_prefetch::Prefetcher;

use crate::access_path::{self, Access};
use crate::arrow_conv::{arrow_schema, cast_columns, row_values};
use crate::catalog::{Catalog, Viewer};
use crate::error::{SqlError, external};
use crate::insert::{insert_rows, rows_of_batches};
use crate::keyed::keyed;
use crate::names::{PUBLIC, RelName};
use crate::pushdown::KeyRange;
use crate::read_point::ReadPoint;
use crate::row_locks::ClientLocks;
use crate::scan_exec::TableScanExec;
use crate::table::{Table, TableWriter};

/// How scans read, set as a session-config extension (defaults when absent).
#[derive(Clone, Debug)]
pub struct ScanOptions {
    /// Full scans read the columnar segments when they hold the rows.
    pub columnar: bool,
    /// Scans of the columnar segments hand the chunks they will read next to these
    /// helper threads.
    pub prefetcher: Option<Arc<Prefetcher>>,
}

impl Default for ScanOptions {
    fn default() -> ScanOptions {
        ScanOptions {
            columnar: true,
            prefetcher: None,
        }
    }
}

/// pmdb's database as DataFusion sees it: a schema per schema of the catalog, and
/// schemas of other kinds a server adds (`pg_catalog`). A client session's reads the
/// catalog as that session sees it (see [`Catalog::table_seen_by`]).
pub struct PmdbCatalog {
    catalog: Arc<Catalog>,
    /// Shared by every session's, so a schema a server adds reaches them all.
    others: Arc<parking_lot::RwLock<std::collections::BTreeMap<String, Arc<dyn SchemaProvider>>>>,
    viewer: Option<Viewer>,
}

impl PmdbCatalog {
    pub fn new(catalog: Arc<Catalog>) -> PmdbCatalog {
        PmdbCatalog {
            catalog,
            others: Default::default(),
            viewer: None,
        }
    }

    /// The same database, as session `viewer` reads it.
    pub fn seen_by(&self, viewer: Viewer) -> PmdbCatalog {
        PmdbCatalog {
            catalog: Arc::clone(&self.catalog),
            others: Arc::clone(&self.others),
            viewer: Some(viewer),
        }
    }
}

impl fmt::Debug for PmdbCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PmdbCatalog")
    }
}

impl CatalogProvider for PmdbCatalog {
    fn schema_names(&self) -> Vec<String> {
        let mut names = vec![PUBLIC.to_owned()];
        names.extend(self.catalog.schemas().iter().map(|s| s.name.clone()));
        names.extend(self.others.read().keys().cloned());
        names
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if let Some(s) = self.others.read().get(name) {
            return Some(Arc::clone(s));
        }
        self.catalog.schema_exists(name).then(|| {
            Arc::new(PmdbSchema {
                catalog: Arc::clone(&self.catalog),
                schema: name.to_owned(),
                viewer: self.viewer,
            }) as Arc<dyn SchemaProvider>
        })
    }

    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> DfResult<Option<Arc<dyn SchemaProvider>>> {
        Ok(self.others.write().insert(name.to_owned(), schema))
    }
}

/// One schema of the catalog.
pub struct PmdbSchema {
    catalog: Arc<Catalog>,
    schema: String,
    viewer: Option<Viewer>,
}

impl PmdbSchema {
    fn table_named(&self, name: &RelName) -> Option<Arc<Table>> {
        match self.viewer {
            Some(v) => self.catalog.table_seen_by(name, v),
            None => self.catalog.table(name),
        }
    }
}

impl fmt::Debug for PmdbSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PmdbSchema({})", self.schema)
    }
}

#[async_trait]
impl SchemaProvider for PmdbSchema {
    fn table_names(&self) -> Vec<String> {
        let tables = match self.viewer {
            Some(v) => self.catalog.tables_seen_by(v),
            None => self.catalog.tables(),
        };
        tables
            .iter()
            .filter(|t| t.def().schema == self.schema)
            .map(|t| t.def().name.clone())
            .collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let (name, key) = match keyed(name) {
            Some((n, key)) => (n, Some(key)),
            None => (name, None),
        };
        let name = RelName::new(self.schema.clone(), name);
        Ok(self.table_named(&name).map(|table| {
            Arc::new(TableSource::new(Arc::clone(&self.catalog), table, key))
                as Arc<dyn TableProvider>
        }))
    }

    fn table_exist(&self, name: &str) -> bool {
        let name = keyed(name).map_or(name, |(n, _)| n);
        self.table_named(&RelName::new(self.schema.clone(), name))
            .is_some()
    }
}

pub struct TableSource {
    catalog: Arc<Catalog>,
    table: Arc<Table>,
    schema: SchemaRef,
    /// The primary key, so that the planner knows what it determines (a query may group
    /// by the key and select the table's other columns, as in PostgreSQL).
    constraints: Option<Constraints>,
}

impl TableSource {
    pub fn new(catalog: Arc<Catalog>, table: Arc<Table>, key: Option<String>) -> TableSource {
        let schema = arrow_schema(table.def(), key.as_deref());
        let key_columns: Vec<usize> = table
            .def()
            .primary_key
            .iter()
            .map(|&c| usize::from(c))
            .collect();
        let constraints = (!key_columns.is_empty())
            .then(|| Constraints::new_unverified(vec![Constraint::PrimaryKey(key_columns)]));
        TableSource {
            catalog,
            table,
            schema,
            constraints,
        }
    }
}

impl fmt::Debug for TableSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TableSource({})", self.table.def().name)
    }
}

#[async_trait]
impl TableProvider for TableSource {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.constraints.as_ref()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let projection = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let read_point = ReadPoint::of(state.config(), self.table.db());
        let mut access = access_path::chosen(&self.table, &self.schema, filters);
        if matches!(&access, Access::Rows(_)) && access.is_whole() {
            let parts = state.config().target_partitions();
            let ranges = split(&self.table, &read_point.snapshot(), parts)
                .map_err(external)?
                .unwrap_or_else(|| vec![KeyRange::all()]);
            let options = state
                .config()
                .get_extension::<ScanOptions>()
                .map_or_else(ScanOptions::default, |o| o.as_ref().clone());
            let keyed = projection.contains(&self.table.types().len());
            access = if options.columnar
                && !keyed
                && read_point.may_read_segments(self.table.def().id)
                && self
                    .table
                    .covered_at(&read_point.snapshot())
                    .map_err(external)?
            {
                Access::Columns {
                    ranges,
                    prefetcher: options.prefetcher,
                }
            } else if ranges.len() > 1 {
                Access::Split(ranges)
            } else {
                access
            };
        }
        let counted =
            access_path::counted_rows(&self.table, &read_point, &access).map_err(external)?;
        Ok(Arc::new(
            TableScanExec::new(
                Arc::clone(&self.table),
                access,
                Arc::clone(&self.schema),
                projection,
                limit,
            )?
            .narrowed_by(filters.to_vec(), counted),
        ))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        // Each filter may narrow the key ranges; DataFusion still applies them all.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return Err(DataFusionError::NotImplemented(format!(
                "{insert_op} is not supported; use INSERT INTO"
            )));
        }
        let sink = InsertSink {
            catalog: Arc::clone(&self.catalog),
            name: self.table.name().clone(),
            schema: Arc::clone(self.table.schema()),
        };
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}

/// Writes an INSERT's rows: one batch for the whole statement, so it applies entirely
/// or not at all.
struct InsertSink {
    catalog: Arc<Catalog>,
    name: RelName,
    schema: SchemaRef,
}

impl fmt::Debug for InsertSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InsertSink({})", self.name)
    }
}

impl DisplayAs for InsertSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PmdbInsert: table={}", self.name)
    }
}

#[async_trait]
impl DataSink for InsertSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> DfResult<u64> {
        // The whole input first: the table's write lock is not held across an await.
        let mut batches = Vec::new();
        while let Some(batch) = data.next().await {
            batches.push(batch?);
        }
        let config = context.session_config();
        let read_point = ReadPoint::of(config, self.catalog.db());
        let row_locks = config.get_extension::<ClientLocks>().ok_or_else(|| {
            DataFusionError::Internal("no row locks in the session's configuration".into())
        })?;
        let inserted = insert_rows(
            &self.catalog,
            &row_locks,
            &read_point,
            &self.name,
            |t| rows_of_batches(t, &batches),
            None,
        )
        .await
        .map_err(external)?;
        Ok(inserted.count)
    }
}

/// Adds the rows of `batch` (columns in table order, any types that cast to the
/// columns') to a bulk load's `writer`,
/// committing whenever its batch holds [`Table::fill_batch_bytes`].
pub async fn load_batch(
    table: &Table,
    writer: &mut TableWriter<'_>,
    batch: &RecordBatch,
) -> Result<(), SqlError> {
    let columns = cast_columns(table.def(), batch.columns())?;
    let slice = |from: usize, to: usize| -> Vec<datafusion::arrow::array::ArrayRef> {
        columns.iter().map(|c| c.slice(from, to - from)).collect()
    };
    let limit = table.fill_batch_bytes();
    let mut from = 0;
    for row in 0..batch.num_rows() {
        writer.insert(&row_values(&columns, table.types(), row))?;
        if writer.bytes >= limit {
            writer.add_columns(&slice(from, row + 1));
            writer.commit().await?;
            from = row + 1;
        }
    }
    writer.add_columns(&slice(from, batch.num_rows()));
    Ok(())
}

/// Cuts the whole table into `parts` key ranges of about equal width, by the first and
/// last values of the key's leading column, when that column is an integer (or a date
/// or timestamp); `None` when it cannot or need not be cut.
fn split(table: &Table, at: &Snapshot, parts: usize) -> Result<Option<Vec<KeyRange>>, SqlError> {
    use crate::keycode::{decode_key_prefix, encode_key};
    use crate::types::{SqlType, Value};
    let ty = table.key_types()[0];
    let as_int = |v: &Value| match v {
        Value::SmallInt(x) => Some(i128::from(*x)),
        Value::Int(x) | Value::Date(x) => Some(i128::from(*x)),
        Value::BigInt(x) | Value::Timestamp(x) => Some(i128::from(*x)),
        _ => None,
    };
    let of_int = |x: i128| -> Option<Value> {
        Some(match ty {
            SqlType::SmallInt => Value::SmallInt(x.try_into().ok()?),
            SqlType::Int => Value::Int(x.try_into().ok()?),
            SqlType::Date => Value::Date(x.try_into().ok()?),
            SqlType::BigInt => Value::BigInt(x.try_into().ok()?),
            SqlType::Timestamp => Value::Timestamp(x.try_into().ok()?),
            _ => return None,
        })
    };
    if parts < 2 || of_int(0).is_none() || table.row_count() < 2 * 8192 {
        return Ok(None);
    }
    let leading = |key: Option<Vec<u8>>| -> Result<Option<i128>, SqlError> {
        let Some(key) = key else { return Ok(None) };
        let (values, _) = decode_key_prefix(&[ty], &key).map_err(|source| SqlError::Damaged {
            what: format!("key in table {:?}", table.def().name),
            source,
        })?;
        Ok(as_int(&values[0]))
    };
    let first = at.scan::<[u8]>(table.rows(), ..)?.next().transpose()?;
    let last = at.scan_rev::<[u8]>(table.rows(), ..)?.next().transpose()?;
    let (Some(lo), Some(hi)) = (
        leading(first.map(|e| e.key().to_vec()))?,
        leading(last.map(|e| e.key().to_vec()))?,
    ) else {
        return Ok(None);
    };
    let width = hi - lo + 1;
    if width < parts as i128 {
        return Ok(None);
    }
    let mut cuts = Vec::with_capacity(parts - 1);
    for i in 1..parts as i128 {
        let Some(v) = of_int(lo + width * i / parts as i128) else {
            return Ok(None);
        };
        let mut k = Vec::new();
        encode_key(&[ty], &[v], &mut k)
            .map_err(|e| SqlError::Query(format!("cutting a scan: {e}")))?;
        cuts.push(k);
    }
    let mut ranges = Vec::with_capacity(parts);
    let mut start = std::ops::Bound::Unbounded;
    for cut in cuts {
        ranges.push(KeyRange {
            start,
            end: std::ops::Bound::Excluded(cut.clone()),
        });
        start = std::ops::Bound::Included(cut);
    }
    ranges.push(KeyRange {
        start,
        end: std::ops::Bound::Unbounded,
    });
    Ok(Some(ranges))
}
