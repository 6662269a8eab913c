//! The layout of a table's columnar segments and their writing: beside the rows, the
//! same rows column by column, so a full scan hands DataFusion whole Arrow arrays
//! instead of decoding every row.
//!
//! They live in the subtable `sql.<id>.columns`: one entry per column chunk, keyed by
//! the column's position (u16, big-endian) followed by the row key of the chunk's first
//! row, so each column's chunks lie in row order and a key range of rows maps to one of
//! chunks. The catalog entry `c` + table id says that the segments hold exactly the rows.
//! A bulk load writes its chunks in the batch of the rows they hold and keeps the entry;
//! every other change to the rows deletes it in its own batch. A snapshot therefore sees
//! either the entry and segments that match its rows, or no entry, and then reads rows.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::compute::concat;
use pmdb_engine::{Subtable, WriteBatch};

use crate::column_chunk::{MAX_CHUNK_ROWS, encode_chunk};
use crate::error::SqlError;
use crate::types::SqlType;

/// The value of the catalog entry that says a table's segments hold its rows: the
/// version of the segment layout.
pub const COVERED: &[u8] = &[1];

/// Key of the catalog entry that says table `id`'s segments hold its rows: `c`, then
/// the table id (u64, big-endian).
pub fn covered_key(id: u64) -> Vec<u8> {
    let mut k = vec![b'c'];
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// Whether table `name`'s segment entry (`None`: absent) says its segments hold its
/// rows; a value other than [`COVERED`] is damage.
pub fn is_covered(name: &str, entry: Option<&[u8]>) -> Result<bool, SqlError> {
    match entry {
        None => Ok(false),
        Some(COVERED) => Ok(true),
        Some(v) => Err(SqlError::Damaged {
            what: format!("segment state of table {name:?}"),
            source: crate::error::CodecError::Mismatch(format!("{v:?}")),
        }),
    }
}

pub fn chunk_key(column: u16, row_key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + row_key.len());
    k.extend_from_slice(&column.to_be_bytes());
    k.extend_from_slice(row_key);
    k
}

/// Gathers the rows of a bulk load into column chunks: the row keys as rows are
/// written, the Arrow columns a batch at a time.
pub struct SegmentBuilder {
    types: Arc<[SqlType]>,
    pending: Vec<Vec<ArrayRef>>,
    /// The row keys noted, end to end, and where each ends.
    keys: Vec<u8>,
    key_ends: Vec<usize>,
}

impl SegmentBuilder {
    pub fn new(types: Arc<[SqlType]>) -> SegmentBuilder {
        SegmentBuilder {
            types,
            pending: Vec::new(),
            keys: Vec::new(),
            key_ends: Vec::new(),
        }
    }

    /// A row was written under `key`.
    pub fn note_row(&mut self, key: &[u8]) {
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
    }

    fn key(&self, row: usize) -> &[u8] {
        let start = row.checked_sub(1).map_or(0, |r| self.key_ends[r]);
        &self.keys[start..self.key_ends[row]]
    }

    /// The columns (in table order, of the columns' Arrow types) of the rows noted last.
    pub fn add_columns(&mut self, columns: &[ArrayRef]) {
        self.pending.push(columns.to_vec());
    }

    /// The chunks of the rows noted since the last call, put into `batch`. A chunk
    /// holds up to [`MAX_CHUNK_ROWS`] rows, fewer where a column's chunk would be larger
    /// than `max_value` bytes; `Ok(false)` (and nothing put) when even one row's would.
    pub fn drain_into(
        &mut self,
        batch: &mut WriteBatch,
        segments: &Subtable,
        max_value: usize,
    ) -> Result<bool, SqlError> {
        let pending = std::mem::take(&mut self.pending);
        let rows = self.key_ends.len();
        let given: usize = pending
            .iter()
            .map(|c| c.first().map_or(0, |a| a.len()))
            .sum();
        if given != rows {
            return Err(SqlError::Query(format!(
                "columnar segment: {rows} rows written, {given} given as columns"
            )));
        }
        let columns = (0..self.types.len())
            .map(|c| {
                let parts: Vec<&dyn Array> = pending.iter().map(|cols| cols[c].as_ref()).collect();
                concat(&parts).map_err(|e| SqlError::Query(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut puts = Vec::new();
        let mut start = 0;
        while start < rows {
            let mut len = MAX_CHUNK_ROWS.min(rows - start);
            let values = loop {
                let values: Vec<Vec<u8>> = columns
                    .iter()
                    .zip(self.types.iter())
                    .map(|(column, &ty)| {
                        let mut value = Vec::new();
                        encode_chunk(ty, column.slice(start, len).as_ref(), &mut value);
                        value
                    })
                    .collect();
                if values.iter().all(|v| v.len() <= max_value) {
                    break values;
                }
                if len == 1 {
                    return Ok(false);
                }
                len /= 2;
            };
            let first = self.key(start);
            for (c, value) in values.into_iter().enumerate() {
                puts.push((chunk_key(c as u16, first), value));
            }
            start += len;
        }
        self.keys.clear();
        self.key_ends.clear();
        for (k, v) in puts {
            batch.put(segments, k, v);
        }
        Ok(true)
    }
}
