//! Reading and rebuilding a table's columnar segments (their layout and writing:
//! [`crate::segment_layout`]): the scan that hands DataFusion one record batch per
//! chunk, and ANALYZE's build of the segments from the rows.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Result as DfResult;
use datafusion::error::DataFusionError;
use pmdb_engine::{Scan, Snapshot, WriteBatch};
use pmdb_prefetch::Prefetcher;

use crate::arrow_conv::BatchBuilder;
use crate::column_chunk::{MAX_CHUNK_ROWS, chunk_rows, decode_chunk};
use crate::error::CodecError;
use crate::error::SqlError;
use crate::pushdown::KeyRange;
use crate::segment_layout::{COVERED, SegmentBuilder, chunk_key, covered_key};
use crate::table::{Table, count_key};
use crate::types::SqlType;

/// The batches of a scan of segments: one record batch per chunk, the projected columns
/// read in step, each range's chunks in row order.
pub struct SegmentBatches {
    table: Arc<Table>,
    /// Table columns read: the projection, or the first column alone to count rows
    /// when nothing is projected.
    columns: Vec<usize>,
    counting: bool,
    ranges: VecDeque<KeyRange>,
    scans: Vec<Scan>,
    snapshot: Arc<Snapshot>,
    schema: SchemaRef,
    left: usize,
    failed: bool,
    prefetcher: Option<Arc<Prefetcher>>,
    /// Scans of the same chunks, [`LEAD_CHUNKS`] ahead, whose chunks go to the
    /// prefetcher.
    lead: Vec<Scan>,
}

/// How many chunks ahead of the scan the prefetcher is handed chunks.
const LEAD_CHUNKS: usize = 2;

impl SegmentBatches {
    pub fn new(
        table: Arc<Table>,
        projection: &[usize],
        ranges: Vec<KeyRange>,
        snapshot: Arc<Snapshot>,
        schema: SchemaRef,
        limit: Option<usize>,
    ) -> SegmentBatches {
        let counting = projection.is_empty();
        SegmentBatches {
            table,
            columns: if counting {
                vec![0]
            } else {
                projection.to_vec()
            },
            counting,
            ranges: ranges.into(),
            scans: Vec::new(),
            snapshot,
            schema,
            left: limit.unwrap_or(usize::MAX),
            failed: false,
            prefetcher: None,
            lead: Vec::new(),
        }
    }

    /// The scan hands the chunks it will read next to `prefetcher`.
    pub fn prefetched_by(mut self, prefetcher: Option<Arc<Prefetcher>>) -> SegmentBatches {
        self.prefetcher = prefetcher;
        self
    }

    /// Moves the lead scans `steps` chunks on, handing each chunk to the prefetcher.
    /// Their errors are the main scans' to report.
    fn lead(&mut self, steps: usize) {
        let Some(prefetcher) = &self.prefetcher else {
            return;
        };
        for scan in &mut self.lead {
            for _ in 0..steps {
                match scan.next_ref() {
                    Some(Ok(e)) => {
                        prefetcher.push(e.value.as_ptr(), e.value.len());
                    }
                    _ => break,
                }
            }
        }
    }

    fn open(&mut self, range: &KeyRange) -> Result<(), SqlError> {
        self.scans = self.scans_of(range)?;
        if self.prefetcher.is_some() {
            self.lead = self.scans_of(range)?;
            self.lead(LEAD_CHUNKS);
        }
        Ok(())
    }

    /// A scan of each column read, over the chunks of `range`.
    fn scans_of(&self, range: &KeyRange) -> Result<Vec<Scan>, SqlError> {
        let segments = self.table.segments().ok_or_else(|| {
            SqlError::Query(format!(
                "table {:?} has no segments to scan",
                self.table.def().name
            ))
        })?;
        let mut scans = Vec::with_capacity(self.columns.len());
        for &c in &self.columns {
            let c = c as u16;
            let start = match &range.start {
                Bound::Unbounded => Bound::Included(chunk_key(c, &[])),
                Bound::Included(k) => Bound::Included(chunk_key(c, k)),
                Bound::Excluded(k) => Bound::Excluded(chunk_key(c, k)),
            };
            let end = match &range.end {
                Bound::Unbounded => match c.checked_add(1) {
                    Some(next) => Bound::Excluded(chunk_key(next, &[])),
                    None => Bound::Unbounded,
                },
                Bound::Included(k) => Bound::Included(chunk_key(c, k)),
                Bound::Excluded(k) => Bound::Excluded(chunk_key(c, k)),
            };
            scans.push(self.snapshot.scan(segments, (start, end))?);
        }
        Ok(scans)
    }

    /// The next chunk's arrays and rows; `None` when the ranges are done.
    fn next_chunk(&mut self) -> Result<Option<(Vec<ArrayRef>, usize)>, SqlError> {
        loop {
            if self.scans.is_empty() {
                let Some(range) = self.ranges.pop_front() else {
                    return Ok(None);
                };
                self.open(&range)?;
            }
            let types = self.table.types();
            let damaged = |source| damaged(&self.table, source);
            let mut first_key: Option<Vec<u8>> = None;
            let mut arrays = Vec::with_capacity(self.columns.len());
            let mut rows = None;
            let mut ended = 0;
            for (i, scan) in self.scans.iter_mut().enumerate() {
                let column = self.columns[i];
                let Some(entry) = scan.next_ref() else {
                    ended += 1;
                    continue;
                };
                let entry = entry?;
                let key = entry.key.get(2..).unwrap_or_default();
                match &first_key {
                    None => first_key = Some(key.to_vec()),
                    Some(k) if k.as_slice() == key => {}
                    Some(_) => {
                        return Err(damaged(CodecError::Mismatch(format!(
                            "column {column} holds a chunk the columns before it lack"
                        ))));
                    }
                }
                let n = if self.counting {
                    chunk_rows(entry.value)
                } else {
                    decode_chunk(types[column], entry.value).map(|a| {
                        let n = a.len();
                        arrays.push(a);
                        n
                    })
                }
                .map_err(&damaged)?;
                if *rows.get_or_insert(n) != n {
                    return Err(damaged(CodecError::Mismatch(format!(
                        "column {column} has {n} rows in a chunk where others have {rows:?}"
                    ))));
                }
            }
            match (ended, rows) {
                (0, Some(n)) => {
                    self.lead(1);
                    return Ok(Some((arrays, n)));
                }
                (e, _) if e == self.scans.len() => self.scans.clear(),
                _ => {
                    return Err(damaged(CodecError::Mismatch(
                        "its columns hold different numbers of chunks".into(),
                    )));
                }
            }
        }
    }
}

fn damaged(table: &Table, source: CodecError) -> SqlError {
    SqlError::Damaged {
        what: format!("columnar segment of table {:?}", table.def().name),
        source,
    }
}

impl Iterator for SegmentBatches {
    type Item = DfResult<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.left == 0 {
            return None;
        }
        let (mut arrays, mut rows) = match self.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return None,
            Err(e) => {
                self.failed = true;
                return Some(Err(DataFusionError::External(Box::new(e))));
            }
        };
        if rows > self.left {
            rows = self.left;
            arrays = arrays.iter().map(|a| a.slice(0, rows)).collect();
        }
        self.left -= rows;
        Some(
            RecordBatch::try_new_with_options(
                Arc::clone(&self.schema),
                arrays,
                &RecordBatchOptions::new().with_row_count(Some(rows)),
            )
            .map_err(DataFusionError::from),
        )
    }
}

/// Builds `table`'s segments from its rows when they are stale, and counts the rows (the
/// caller holds its write lock, so no autocommit statement changes the rows meanwhile; a
/// transaction block that commits meanwhile makes them stale again); `Ok(false)` when a chunk
/// would be larger than the engine takes as one value, and the rows are then scanned
/// as rows.
pub fn rebuild(table: &Table) -> Result<bool, SqlError> {
    let Some(segments) = table.segments() else {
        return Ok(false);
    };
    let db = table.db();
    // Serializable, with the rows' whole range read: the final batch fails if a
    // transaction block changed a row meanwhile (autocommit writers are held off by the
    // write lock), since the segments would then not hold its rows.
    let mut tx = db.transaction_with(pmdb_engine::Isolation::Serializable);
    drop(tx.scan::<[u8]>(table.rows(), ..)?);
    let at = tx.snapshot();
    if table.covered_at(&at)? {
        return Ok(true);
    }
    let write = |batch: WriteBatch| -> Result<(), SqlError> {
        db.write(batch, pmdb_engine::WriteOptions::default())?;
        Ok(())
    };
    // Chunks of an earlier build, or of a load cut short, go first.
    let mut batch = WriteBatch::new();
    let mut scan = at.scan::<[u8]>(segments, ..)?;
    while let Some(e) = scan.next_ref() {
        batch.delete(segments, e?.key);
        if batch.len() >= 64 << 10 {
            write(std::mem::take(&mut batch))?;
        }
    }
    if !batch.is_empty() {
        write(std::mem::take(&mut batch))?;
    }
    let max_value = db.options().max_value_size;
    let types: Arc<[SqlType]> = Arc::from(table.types());
    let schema = Arc::clone(table.schema());
    let all: Vec<usize> = (0..types.len()).collect();
    let mut rows = BatchBuilder::new(Arc::clone(&types), &schema, &all, MAX_CHUNK_ROWS)
        .with_missing(table.required_columns(), Arc::clone(table.missing_values()));
    let mut builder = SegmentBuilder::new(types);
    let limit = table.fill_batch_bytes();
    let (mut chunk_bytes, mut pending_bytes) = (0usize, 0usize);
    let mut count = 0i64;
    let mut scan = at.scan::<[u8]>(table.rows(), ..)?;
    let damaged = |source| SqlError::Damaged {
        what: format!("row in table {:?}", table.def().name),
        source,
    };
    loop {
        let entry = scan.next_ref().transpose()?;
        let end = entry.is_none();
        if let Some(e) = &entry {
            count += 1;
            builder.note_row(e.key);
            let row = table.whole(&at, e.key, e.value)?;
            rows.push(e.key, &row).map_err(damaged)?;
            chunk_bytes += e.key.len() + row.len();
        }
        if rows.is_full() || chunk_bytes >= limit || (end && rows.len() > 0) {
            let columns = rows.finish().map_err(|e| SqlError::Query(e.to_string()))?;
            builder.add_columns(columns.columns());
            pending_bytes += std::mem::take(&mut chunk_bytes);
        }
        if pending_bytes >= limit || end {
            if !builder.drain_into(&mut batch, segments, max_value)? {
                return Ok(false);
            }
            pending_bytes = 0;
            if end {
                break;
            }
            write(std::mem::take(&mut batch))?;
        }
    }
    batch.put(table.catalog(), covered_key(table.def().id), COVERED);
    // The rows were counted too: the count transaction blocks kept may have drifted.
    batch.put(
        table.catalog(),
        count_key(table.def().id),
        count.to_le_bytes(),
    );
    tx.apply(&batch)?;
    match tx.commit() {
        Ok(()) => {}
        // A block changed rows meanwhile: the segments stay stale, the rows answer.
        Err(pmdb_engine::DbError::Conflict { .. }) => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    table.set_covered();
    table.set_row_count(count);
    Ok(true)
}
