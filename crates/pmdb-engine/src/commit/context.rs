//! The context the commit stages work in: what they need of the database.

use pmdb_pmem::Pool;

use crate::background::Background;
use crate::compaction::Jobs;
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
