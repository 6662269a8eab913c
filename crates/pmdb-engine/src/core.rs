//! The engine core: one open database's components side by side — the pool, the options,
//! the subtable registry, the sequence/snapshot tracker and the commit pipeline — and the
//! operations that need more than one of them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pmdb_pmem::{Pool, Prefaulter};

use crate::background::Background;
use crate::batch::WriteBatch;
use crate::commit::{CommitCtx, Pipeline};
use crate::error::Result;
use crate::options::DbOptions;
use crate::recovery::RecoveryStats;
use crate::registry::{Registry, SubtableState};
use crate::seq::SeqTracker;

/// Tells open databases apart, so a batch or handle of one is refused by another.
static NEXT_DB_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) struct Core {
    /// Keeps the next zones pre-faulted while the database is open (writable only);
    /// dropped first, so its thread is stopped and joined before the rest goes.
    _prefaulter: Option<Prefaulter>,
    /// Builds frozen memtables' filters; its thread is stopped and joined when the core
    /// drops.
    pub background: Background,
    pub id: u64,
    pub pool: Arc<Pool>,
    pub options: DbOptions,
    pub registry: Registry,
    pub seqs: Arc<SeqTracker>,
    pub pipeline: Pipeline,
    pub recovery: RecoveryStats,
}

impl Core {
    pub fn new(
        pool: Arc<Pool>,
        options: DbOptions,
        registry: Registry,
        seqs: SeqTracker,
        pipeline: Pipeline,
        recovery: RecoveryStats,
        prefaulter: Option<Prefaulter>,
    ) -> Core {
        let background = Background::start();
        for state in registry.all() {
            for m in state.view.load().memtables() {
                if m.index.is_frozen() {
                    background.build_filter(Arc::clone(m) as _);
                }
            }
        }
        Core {
            _prefaulter: prefaulter,
            background,
            id: NEXT_DB_ID.fetch_add(1, Ordering::Relaxed),
            pool,
            options,
            registry,
            seqs: Arc::new(seqs),
            pipeline,
            recovery,
        }
    }

    /// Commits `batch` through the pipeline.
    pub fn write(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.registry.writable()?;
        self.pipeline.write(&self.commit_ctx(), batch, sync)
    }

    /// What the commit stages need of this database.
    pub fn commit_ctx(&self) -> CommitCtx<'_> {
        CommitCtx {
            db_id: self.id,
            pool: &self.pool,
            options: &self.options,
            registry: &self.registry,
            seqs: &self.seqs,
            background: &self.background,
        }
    }

    /// Drops a subtable durably, with no commit group in flight.
    pub fn drop_subtable(&self, state: &SubtableState) -> Result<()> {
        let _no_commits = self.pipeline.exclusive();
        self.registry.drop_subtable(state)
    }
}
