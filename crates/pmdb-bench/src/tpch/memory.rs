//! The ceiling: DataFusion over the generated Arrow tables held in memory, with the
//! same executor settings as pmdb's SQL and no storage at all.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::prelude::{SessionConfig, SessionContext};

/// A session whose tables are `tables` (name, batches) in memory, split into as many
/// partitions as the machine has cores.
pub fn context(tables: &[(&str, Vec<RecordBatch>)]) -> Result<SessionContext> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(threads));
    for (name, batches) in tables {
        let schema = batches
            .first()
            .map(|b| b.schema())
            .ok_or_else(|| datafusion::error::DataFusionError::Plan(format!("{name} is empty")))?;
        let mut parts: Vec<Vec<RecordBatch>> = vec![Vec::new(); threads];
        for (i, b) in batches.iter().enumerate() {
            parts[i % threads].push(b.clone());
        }
        ctx.register_table(*name, Arc::new(MemTable::try_new(schema, parts)?))?;
    }
    Ok(ctx)
}
