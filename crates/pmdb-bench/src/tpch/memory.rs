//! The ceiling: DataFusion over the generated Arrow tables held in memory, with the
//! same executor settings as pmdb's SQL and no storage at all.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::error::Result;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::tpch::run::{SqlTarget, timed};
use crate::tpch::verify::rows_of;

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

/// DataFusion over in-memory tables as a [`SqlTarget`].
pub struct MemoryTarget {
    ctx: SessionContext,
    runtime: tokio::runtime::Runtime,
}

impl MemoryTarget {
    pub fn new(tables: &[(&str, Vec<RecordBatch>)]) -> Result<MemoryTarget> {
        Ok(MemoryTarget {
            ctx: context(tables)?,
            runtime: tokio::runtime::Runtime::new()?,
        })
    }
}

impl SqlTarget for MemoryTarget {
    fn name(&self) -> String {
        "DataFusion in memory".into()
    }

    fn run(&mut self, sql: &str) -> std::result::Result<(Vec<Vec<String>>, f64), String> {
        let (batches, secs) = timed(|| {
            self.runtime
                .block_on(async { self.ctx.sql(sql).await?.collect().await })
        })
        .map_err(|e| e.to_string())?;
        Ok((rows_of(&batches).map_err(|e| e.to_string())?, secs))
    }
}
