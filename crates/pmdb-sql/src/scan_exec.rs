//! The physical scan of a table: it reads key ranges of the rows subtable (or of an
//! index subtable, then each row by its key) at the statement's read point and fills Arrow arrays
//! straight from the stored bytes, a batch at a time.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result as DfResult, Statistics};
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::DynamicFilterTracking;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_expr_common::physical_expr::snapshot_physical_expr;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream, StatisticsArgs,
};
use futures::StreamExt;

use crate::access_path::{self, Access};
use crate::arrow_conv::BatchBuilder;
use crate::error::SqlError;
use crate::pushdown::KeyRange;
use crate::read_point::{ReadPoint, RowScan};
use crate::segments::SegmentBatches;
use crate::table::Table;

/// A scan of one table through its [`Access`]. Dynamic filters that a join above it
/// pushes down (its build side's keys) are read when the scan starts, once the build
/// side is done, and narrow the keys read further: a hash join whose other side is a few
/// hundred rows reads their matches by key instead of the whole range.
#[derive(Clone)]
pub struct TableScanExec {
    table: Arc<Table>,
    access: Access,
    /// Positions in the table's schema (the key column is the last).
    projection: Vec<usize>,
    table_schema: SchemaRef,
    limit: Option<usize>,
    props: Arc<PlanProperties>,
    /// The filters `access` was chosen by, which dynamic filters narrow with.
    filters: Arc<[Expr]>,
    /// How many rows `access` reads, where counted (see [`access_path::counted_rows`]).
    counted: Option<usize>,
    /// Dynamic filters pushed down from above.
    dynamic: Vec<Arc<dyn PhysicalExpr>>,
    /// `rows_read` per partition, which EXPLAIN ANALYZE shows.
    metrics: ExecutionPlanMetricsSet,
}

impl TableScanExec {
    pub fn new(
        table: Arc<Table>,
        access: Access,
        table_schema: SchemaRef,
        projection: Vec<usize>,
        limit: Option<usize>,
    ) -> DfResult<TableScanExec> {
        let schema = Arc::new(table_schema.project(&projection)?);
        let partitions = match &access {
            Access::Split(r) | Access::Columns { ranges: r, .. } => r.len().max(1),
            _ => 1,
        };
        let props = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(TableScanExec {
            table,
            access,
            projection,
            table_schema,
            limit,
            props: Arc::new(props),
            filters: Arc::from(Vec::new()),
            counted: None,
            dynamic: Vec::new(),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The scan, with the filters its access was chosen by and the rows it was counted
    /// to read.
    pub fn narrowed_by(mut self, filters: Vec<Expr>, counted: Option<usize>) -> TableScanExec {
        self.filters = Arc::from(filters);
        self.counted = counted;
        self
    }

    /// The access the dynamic filters narrow the scan to, as they are now: `None` when
    /// they narrow nothing further.
    fn narrowed(&self) -> Option<Access> {
        let learnt: Vec<Expr> = self
            .dynamic
            .iter()
            .filter_map(|d| snapshot_physical_expr(Arc::clone(d)).ok())
            .flat_map(|e| access_path::key_lists(&e))
            .collect();
        if learnt.is_empty() {
            return None;
        }
        let filters: Vec<Expr> = self.filters.iter().cloned().chain(learnt).collect();
        let access = access_path::chosen(&self.table, &self.table_schema, &filters);
        let ranges = match &access {
            _ if access.is_whole() => return None,
            Access::Rows(r) | Access::Index { ranges: r, .. } => r.len(),
            Access::Split(_) | Access::Columns { .. } => return None,
        };
        // A row read by key is taken to cost what four read in key order do.
        (ranges.saturating_mul(4) <= self.estimated_rows()).then_some(access)
    }

    /// How many rows the scan's access reads, as the optimizer is told.
    fn estimated_rows(&self) -> usize {
        let stored = self.table.row_count() as usize;
        match &self.access {
            access if access.is_whole() => stored,
            Access::Rows(r) | Access::Index { ranges: r, .. } => {
                // Without value statistics: a tenth of the table, at least one row a
                // range, unless the rows were counted.
                let guess = (stored / 10).max(r.len()).min(stored);
                match self.counted {
                    Some(n) if n < access_path::MORE_THAN_COUNTED => n,
                    Some(n) => guess.max(n),
                    None => guess,
                }
            }
            Access::Split(_) | Access::Columns { .. } => stored,
        }
    }

    /// The batches `access` gives in `partition`.
    fn batches(
        &self,
        access: &Access,
        partition: usize,
        read_point: ReadPoint,
        batch_rows: usize,
    ) -> Box<dyn Iterator<Item = DfResult<RecordBatch>> + Send> {
        if let Access::Columns { ranges, prefetcher } = access {
            return Box::new(
                SegmentBatches::new(
                    Arc::clone(&self.table),
                    &self.projection,
                    ranges.get(partition).cloned().into_iter().collect(),
                    read_point.snapshot(),
                    Arc::clone(self.props.eq_properties.schema()),
                    self.limit,
                )
                .prefetched_by(prefetcher.clone()),
            );
        }
        let builder = BatchBuilder::new(
            Arc::from(self.table.types()),
            &self.table_schema,
            &self.projection,
            batch_rows,
        )
        .with_missing(
            self.table.required_columns(),
            Arc::clone(self.table.missing_values()),
        );
        let ranges = match access {
            Access::Rows(r) | Access::Index { ranges: r, .. } => r.iter().cloned().collect(),
            Access::Split(r) | Access::Columns { ranges: r, .. } => {
                r.get(partition).cloned().into_iter().collect()
            }
        };
        Box::new(RowBatches {
            table: Arc::clone(&self.table),
            index: match access {
                Access::Rows(_) | Access::Split(_) | Access::Columns { .. } => None,
                Access::Index { index, .. } => Some(*index),
            },
            ranges,
            scan: None,
            read_point,
            builder,
            left: self.limit.unwrap_or(usize::MAX),
            failed: false,
        })
    }
}

impl fmt::Debug for TableScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableScanExec")
            .field("table", &self.table.def().name)
            .field("access", &self.access)
            .finish()
    }
}

impl DisplayAs for TableScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match &self.access {
            Access::Rows(r) if r.len() == 1 && r[0] == KeyRange::all() => "full".to_string(),
            Access::Rows(r) => format!("primary key, {} range(s)", r.len()),
            Access::Split(r) => format!("full, {} partitions", r.len()),
            Access::Columns { ranges, prefetcher } => format!(
                "columnar segments, {} partitions{}",
                ranges.len(),
                if prefetcher.is_some() {
                    ", prefetched"
                } else {
                    ""
                }
            ),
            Access::Index { index, ranges } => format!(
                "index {}, {} range(s)",
                self.table.indexes()[*index].def.name,
                ranges.len()
            ),
        };
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => write!(
                f,
                "PmdbScan: table={}, access={how}, projection={:?}",
                self.table.def().name,
                self.projection
            ),
            DisplayFormatType::TreeRender => {
                write!(f, "table={}\naccess={how}", self.table.def().name)
            }
        }
    }
}

impl ExecutionPlan for TableScanExec {
    fn name(&self) -> &'static str {
        "PmdbScan"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        // A join fills in its dynamic filter only where it finds the filter below it.
        for d in &self.dynamic {
            if f(d)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        // The row count is exact as of the last committed statement; the scan may read
        // a later snapshot, so the optimizer is told it is an estimate.
        let rows = self.estimated_rows();
        let rows = self.limit.map_or(rows, |l| l.min(rows));
        let mut stats = Statistics::new_unknown(self.props.eq_properties.schema());
        stats.num_rows = Precision::Inexact(rows);
        Ok(Arc::new(stats))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        // The filters are used to read fewer keys only: DataFusion still applies them.
        let filters: Vec<_> = child_pushdown_result
            .parent_filters
            .into_iter()
            .map(|f| f.filter)
            .collect();
        let result = FilterPushdownPropagation::with_parent_pushdown_result(vec![
            PushedDown::No;
            filters.len()
        ]);
        let dynamic: Vec<_> = filters
            .into_iter()
            .filter(|f| DynamicFilterTracking::classify(f).contains_dynamic_filter())
            .collect();
        if phase != FilterPushdownPhase::Post || dynamic.is_empty() {
            return Ok(result);
        }
        let mut scan = self.clone();
        scan.dynamic.extend(dynamic);
        Ok(result.with_updated_node(Arc::new(scan)))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        // The read point of the execution's statement (a plan may run more than once).
        let read_point = ReadPoint::of(context.session_config(), self.table.db());
        let batch_rows = context.session_config().batch_size().max(1);
        let schema = Arc::clone(self.props.eq_properties.schema());
        let read = MetricBuilder::new(&self.metrics).counter("rows_read", partition);
        let counted = move |b: &DfResult<RecordBatch>| {
            if let Ok(b) = b {
                read.add(b.num_rows());
            }
        };
        if self.dynamic.is_empty() {
            let batches = self.batches(&self.access, partition, read_point, batch_rows);
            return Ok(Box::pin(RecordBatchStreamAdapter::new(
                schema,
                futures::stream::iter(batches.inspect(counted)),
            )));
        }
        // What the dynamic filters say is known once the scan is first polled: a join
        // polls its probe side only after its build side is done.
        let scan = self.clone();
        let batches = futures::stream::once(async move {
            let batches = match scan.narrowed() {
                // Read whole by the first partition.
                Some(access) if partition == 0 => scan.batches(&access, 0, read_point, batch_rows),
                Some(_) => Box::new(std::iter::empty()),
                None => scan.batches(&scan.access, partition, read_point, batch_rows),
            };
            futures::stream::iter(batches.inspect(counted))
        })
        .flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
    }
}

/// The batches of one scan, produced as the stream is polled.
struct RowBatches {
    table: Arc<Table>,
    index: Option<usize>,
    ranges: VecDeque<KeyRange>,
    scan: Option<RowScan>,
    read_point: ReadPoint,
    builder: BatchBuilder,
    /// Rows still wanted (the LIMIT).
    left: usize,
    failed: bool,
}

impl RowBatches {
    /// Fills the builder up to one batch; `false` when the ranges are done.
    fn fill(&mut self) -> Result<bool, SqlError> {
        while !self.builder.is_full() && self.left > 0 {
            let scan = match &mut self.scan {
                Some(s) => s,
                None => match self.ranges.pop_front() {
                    None => return Ok(false),
                    Some(r) => {
                        let sub = match self.index {
                            None => self.table.rows(),
                            Some(i) => &self.table.indexes()[i].subtable,
                        };
                        self.scan
                            .insert(self.read_point.scan(sub, (r.start, r.end))?)
                    }
                },
            };
            let Some(entry) = scan.next_ref() else {
                self.scan = None;
                continue;
            };
            let entry = entry?;
            match self.index {
                None => {
                    let row = self.table.whole(&self.read_point, entry.key, entry.value)?;
                    self.builder
                        .push(entry.key, &row)
                        .map_err(|source| SqlError::Damaged {
                            what: format!("row in table {:?}", self.table.def().name),
                            source,
                        })?
                }
                Some(i) => {
                    let (table, builder) = (&self.table, &mut self.builder);
                    table.read_indexed(i, &self.read_point, entry.key, |row_key, row| {
                        builder
                            .push(row_key, row)
                            .map_err(|source| SqlError::Damaged {
                                what: format!("row in table {:?}", table.def().name),
                                source,
                            })
                    })?;
                }
            }
            self.left -= 1;
        }
        Ok(true)
    }
}

impl Iterator for RowBatches {
    type Item = DfResult<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let more = match self.fill() {
            Ok(more) => more,
            Err(e) => {
                self.failed = true;
                return Some(Err(DataFusionError::External(Box::new(e))));
            }
        };
        if self.builder.len() == 0 && (!more || self.left == 0) {
            return None;
        }
        Some(self.builder.finish().map_err(DataFusionError::from))
    }
}
