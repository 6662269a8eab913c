//! Yield points after joins that multiply rows (nested-loop and cross joins): such a
//! join hands out batch after batch from one probe batch without ever waiting, so the
//! operator above it never returns to the runtime, and a cancelled or timed-out query
//! (whose task is aborted) would run on for seconds. Each batch leaving one of these
//! joins spends the task's cooperative budget (DataFusion's `CooperativeExec`), so the
//! task yields, and can be stopped, every few batches.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::joins::{CrossJoinExec, NestedLoopJoinExec};

#[derive(Debug)]
pub(crate) struct JoinsYield;

impl PhysicalOptimizerRule for JoinsYield {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if node.is::<NestedLoopJoinExec>() || node.is::<CrossJoinExec>() {
                let wrapped: Arc<dyn ExecutionPlan> = Arc::new(CooperativeExec::new(node));
                return Ok(Transformed::yes(wrapped));
            }
            Ok(Transformed::no(node))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "pmdb_joins_yield"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
