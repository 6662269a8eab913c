//! What a commit group is made of: each writer's request, with the outcome the pipeline
//! gives it, and the context the stages work in.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use pmdb_pmem::Pool;

use crate::background::Background;
use crate::batch::WriteBatch;
use crate::compaction::Jobs;
use crate::error::Result;
use crate::options::DbOptions;
use crate::registry::Registry;
use crate::seq::SeqTracker;

/// What the stages need of the database.
pub(crate) struct CommitCtx<'a> {
    pub db_id: u64,
    pub pool: &'a Pool,
    pub options: &'a DbOptions,
    pub registry: &'a Registry,
    pub seqs: &'a SeqTracker,
    pub background: &'a Background,
    pub jobs: &'a Jobs,
}

/// One writer's batch and, once the pipeline is done with it, its outcome.
pub(super) struct Request {
    pub batch: WriteBatch,
    pub sync: bool,
    done: AtomicBool,
    outcome: Mutex<Option<Result<()>>>,
}

impl Request {
    pub fn new(batch: WriteBatch, sync: bool) -> Request {
        Request {
            batch,
            sync,
            done: AtomicBool::new(false),
            outcome: Mutex::new(None),
        }
    }

    /// Whether the request has its outcome (read without taking it).
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    pub fn finish(&self, outcome: Result<()>) {
        *self.outcome.lock() = Some(outcome);
        self.done.store(true, Ordering::Release);
    }

    pub fn take(&self) -> Option<Result<()>> {
        if self.done.load(Ordering::Acquire) {
            self.outcome.lock().take()
        } else {
            None
        }
    }
}
