//! [`Output`]: what a statement gives back.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;

/// What a statement gives back.
#[derive(Debug)]
pub enum Output {
    /// A result set (possibly empty).
    Rows {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    },
    /// A command's tag, as PostgreSQL reports it ("CREATE TABLE", "INSERT 0 3").
    Command(String),
}
