//! The engine core: one open database's components side by side — the pool, the options,
//! the subtable registry, the sequence/snapshot tracker, the commit pipeline, the
//! capacity tier and the jobs that fill it — and the operations that need more than one
//! of them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pmdb_pmem::{Pool, Prefaulter};

use crate::background::Background;
use crate::batch::WriteBatch;
use crate::commit::{CommitCtx, Pipeline, Validation};
use crate::committer::{Committer, PendingCommit, Queue};
use crate::compaction::Jobs;
use crate::error::Result;
use crate::format::manifest::Change;
use crate::options::DbOptions;
use crate::recovery::RecoveryStats;
use crate::registry::{Registry, SubtableState};
use crate::seq::SeqTracker;
use crate::tiers::Tiers;

/// Tells open databases apart, so a batch or handle of one is refused by another.
static NEXT_DB_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) struct Core {
    /// The merge, flush and compaction threads; stopped and joined first.
    pub jobs: Jobs,
    /// Keeps the next zones pre-faulted while the database is open (writable only);
    /// dropped early, so its thread is stopped and joined before the rest goes.
    _prefaulter: Option<Prefaulter>,
    /// Builds frozen indexes' filters; its thread is stopped and joined when the last
    /// holder drops.
    pub background: Arc<Background>,
    pub id: u64,
    pub pool: Arc<Pool>,
    pub options: DbOptions,
    pub registry: Arc<Registry>,
    pub seqs: Arc<SeqTracker>,
    pub tiers: Arc<Tiers>,
    pub pipeline: Pipeline,
    pub committer: Committer,
    pub recovery: RecoveryStats,
}

impl Core {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        pool: Arc<Pool>,
        options: DbOptions,
        registry: Registry,
        seqs: SeqTracker,
        pipeline: Pipeline,
        recovery: RecoveryStats,
        prefaulter: Option<Prefaulter>,
        tiers: Tiers,
    ) -> Core {
        let background = Arc::new(Background::start(pool.is_simulated()));
        for state in registry.all() {
            let view = state.view.load();
            for m in &view.memtables {
                if m.index.is_frozen() {
                    background.build_filter(Arc::clone(m) as _);
                }
            }
            for g in &view.gis {
                if g.index.is_frozen() {
                    background.build_filter(Arc::clone(g) as _);
                }
            }
        }
        let registry = Arc::new(registry);
        let seqs = Arc::new(seqs);
        let tiers = Arc::new(tiers);
        let jobs = Jobs::start(
            Arc::clone(&pool),
            Arc::clone(&registry),
            Arc::clone(&seqs),
            Arc::clone(&tiers),
            options.clone(),
            Arc::clone(&background),
        );
        Core {
            jobs,
            _prefaulter: prefaulter,
            background,
            id: NEXT_DB_ID.fetch_add(1, Ordering::Relaxed),
            pool,
            options,
            registry,
            seqs,
            tiers,
            pipeline,
            committer: Committer::default(),
            recovery,
        }
    }

    /// Commits `batch` through the pipeline.
    pub fn write(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        self.commit(batch, sync, None)
    }

    /// Commits `batch` through the pipeline if it passes `validation`.
    pub fn commit(
        &self,
        batch: WriteBatch,
        sync: bool,
        validation: Option<Validation>,
    ) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.registry.writable()?;
        self.pipeline
            .write(&self.commit_ctx(), batch, sync, validation)
    }

    /// Queues `batch` (if it passes `validation`) for the committer thread and returns at
    /// once with the future of its outcome; on a thread that said
    /// [`crate::lead_commits_here`], commits it first.
    pub fn commit_async(
        self: &Arc<Self>,
        batch: WriteBatch,
        sync: bool,
        validation: Option<Validation>,
    ) -> PendingCommit {
        if batch.is_empty() {
            return PendingCommit::ready(Ok(()));
        }
        if let Err(e) = self.registry.writable() {
            return PendingCommit::ready(Err(e));
        }
        let request = self.pipeline.submit(batch, sync, validation);
        if crate::committer::leads_here() {
            return PendingCommit::ready(self.pipeline.drive(&self.commit_ctx(), &request));
        }
        if let Err(e) = self.committer.notify(self) {
            // Slower, but the commit is not left behind: it is led from here.
            log::warn!("{e}; committing on the caller's thread");
            return PendingCommit::ready(self.pipeline.drive(&self.commit_ctx(), &request));
        }
        PendingCommit::queued(request)
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
            jobs: &self.jobs,
        }
    }

    /// Drops a subtable durably, with no commit group and no job of it in flight: the
    /// catalog drop commits it, then a manifest edit deletes its SST files (a crash
    /// between the two leaves files the next open deletes).
    pub fn drop_subtable(&self, state: &SubtableState) -> Result<()> {
        let _no_jobs: Vec<_> = state.jobs.iter().map(|l| l.lock()).collect();
        let _no_commits = self.pipeline.exclusive();
        let levels = Arc::clone(&state.view.load().levels);
        self.registry.drop_subtable(state)?;
        if levels.files().next().is_some() {
            self.tiers
                .log(vec![Change::DropSubtable { subtable: state.id }])?;
            self.tiers
                .remove_files(&levels.files().map(|t| t.meta.number).collect());
        }
        Ok(())
    }
}

impl Queue for Core {
    fn lead_queued(&self) {
        while self.pipeline.has_pending() {
            if !self.pipeline.try_lead(&self.commit_ctx()) {
                self.pipeline.wait_for_leader(|| false);
            }
        }
    }
}
