//! The device layer's error type: every way opening, growing or using a pool can fail,
//! each with a message a user can act on.

use std::path::PathBuf;

use crate::off::PmOff;

/// Errors of the PM device layer.
#[derive(Debug, thiserror::Error)]
pub enum PmemError {
    #[error("pool directory {path} does not exist (create it with `pmdb pool create`)")]
    NotFound { path: PathBuf },

    /// A file of a directory the pool keeps (SSTs, manifests): its directory exists.
    #[error("{path} does not exist")]
    MissingFile { path: PathBuf },

    #[error("{path} holds no pool: no extent files in it")]
    NoPool { path: PathBuf },

    #[error("permission denied on {path}")]
    PermissionDenied { path: PathBuf },

    #[error("a pool already exists in {path}")]
    AlreadyExists { path: PathBuf },

    #[error("pool {path} is locked by another process (or another handle in this one)")]
    Locked { path: PathBuf },

    #[error("{path} is not a pmdb extent (bad magic): a foreign file in the pool directory")]
    ForeignFile { path: PathBuf },

    #[error("{path} belongs to another pool (uuid {found}, this pool is {expected})")]
    ForeignExtent {
        path: PathBuf,
        found: String,
        expected: String,
    },

    #[error("{path} has pool format version {found}; this build of pmdb reads version {supported}")]
    UnsupportedVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },

    #[error("{path} has zone size {found} bytes, but {expected} bytes was expected")]
    ZoneSizeMismatch {
        path: PathBuf,
        found: u64,
        expected: u64,
    },

    #[error("{path} is corrupt: {reason}")]
    Corrupt { path: PathBuf, reason: String },

    #[error("{path} is truncated: {found} bytes, the header says {expected}")]
    Truncated {
        path: PathBuf,
        found: u64,
        expected: u64,
    },

    #[error(
        "the pool is full: all {max_extents} extents ({max_bytes} bytes) are in use; raise the maximum size"
    )]
    PoolFull { max_extents: u32, max_bytes: u64 },

    #[error("the owner table is full: all {max_owners} owner slots are live")]
    OwnersFull { max_owners: u32 },

    #[error("invalid option {name}: {reason}")]
    InvalidOption { name: &'static str, reason: String },

    #[error("the pool is open read-only: {what} would write to it")]
    ReadOnly { what: &'static str },

    #[error("owner {owner:#x} is not live")]
    DeadOwner { owner: u64 },

    #[error("{off} + {len} bytes lies outside the pool's data area")]
    OutOfBounds { off: PmOff, len: u64 },

    #[error("{off} is not 8-byte aligned")]
    Misaligned { off: PmOff },

    #[error(
        "the DAX backend was requested but {path} cannot be mapped with MAP_SYNC (not a DAX filesystem)"
    )]
    DaxUnavailable { path: PathBuf },

    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl PmemError {
    /// Maps an I/O error on `path` to the most specific variant.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        match source.kind() {
            std::io::ErrorKind::NotFound => PmemError::NotFound { path },
            std::io::ErrorKind::PermissionDenied => PmemError::PermissionDenied { path },
            _ => PmemError::Io { path, source },
        }
    }

    /// As [`PmemError::io`], for an operation on a file of a directory that exists: a
    /// missing file is not a missing pool.
    pub(crate) fn file_io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        match source.kind() {
            std::io::ErrorKind::NotFound => PmemError::MissingFile { path: path.into() },
            _ => PmemError::io(path, source),
        }
    }
}

/// Result alias of the device layer.
pub type Result<T, E = PmemError> = std::result::Result<T, E>;
