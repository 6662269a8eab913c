//! The engine's error type.

use pmdb_pmem::PmemError;

/// Errors of the storage engine.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Pmem(#[from] PmemError),

    #[error("key of {len} bytes exceeds the limit of {max} bytes")]
    KeyTooLarge { len: usize, max: usize },

    #[error("value of {len} bytes exceeds the limit of {max} bytes")]
    ValueTooLarge { len: usize, max: usize },

    #[error("a write batch of {bytes} bytes exceeds the largest a commit takes, {max} bytes")]
    BatchTooLarge { bytes: u64, max: u64 },

    #[error("keys must not be empty")]
    EmptyKey,

    #[error("unknown subtable {name:?}")]
    UnknownSubtable { name: String },

    #[error("subtable handle belongs to another database")]
    ForeignSubtable,

    #[error("subtable {name:?} was dropped")]
    SubtableDropped { name: String },

    #[error("no subtable with id {id} exists (it was dropped)")]
    NoSuchSubtable { id: u32 },

    #[error("sequence numbers are exhausted (2^56 writes); no more writes are possible")]
    SequenceExhausted,

    #[error("subtable name {name:?} is invalid: {reason}")]
    InvalidName { name: String, reason: String },

    #[error(
        "the owner table is full: all {max_owners} owner slots are live (one per memtable and \
         one for the catalog); the write was not applied"
    )]
    OwnersFull { max_owners: u32 },

    #[error("the database is read-only: {reason}")]
    ReadOnly { reason: String },

    /// A subtable that recovery found damaged, opened with `DbOptions::fence_damaged`:
    /// it is read as far as it can be, never written, merged, flushed or compacted.
    #[error(
        "subtable {name:?} is fenced off because {reason}: it takes no writes and no compaction"
    )]
    Fenced { name: String, reason: String },

    #[error("the pool is full: the write was not applied; the database stays readable")]
    PoolFull,

    #[error("{path} holds a pool that is not a pmdb database (root word {found:#x})")]
    NotADatabase { path: String, found: u64 },

    #[error("no database at {path} (open with create_if_missing to create one)")]
    NoDatabase { path: String },

    #[error("corruption: {0}")]
    Corrupt(String),

    #[error("invalid option {name}: {reason}")]
    InvalidOption { name: &'static str, reason: String },

    #[error(
        "transaction conflict: key {} of subtable {subtable:?} changed after the \
         transaction's snapshot; nothing was applied (retry the transaction)",
        key.escape_ascii()
    )]
    Conflict { subtable: String, key: Vec<u8> },

    #[error("the commit group failed: {0}")]
    GroupFailed(String),

    #[error("the savepoint was released or rolled past; the transaction no longer has it")]
    NoSuchSavepoint,
}

impl DbError {
    /// Whether this is the pool having no zone left.
    pub(crate) fn is_pool_full(&self) -> bool {
        matches!(
            self,
            DbError::PoolFull | DbError::Pmem(PmemError::PoolFull { .. })
        )
    }

    /// The error each member of a failed commit group receives.
    pub(crate) fn for_group_member(&self) -> DbError {
        match self {
            e if e.is_pool_full() => DbError::PoolFull,
            DbError::OwnersFull { max_owners }
            | DbError::Pmem(PmemError::OwnersFull { max_owners }) => DbError::OwnersFull {
                max_owners: *max_owners,
            },
            DbError::ReadOnly { reason } => DbError::ReadOnly {
                reason: reason.clone(),
            },
            other => DbError::GroupFailed(other.to_string()),
        }
    }
}

/// Result alias of the engine.
pub type Result<T, E = DbError> = std::result::Result<T, E>;
