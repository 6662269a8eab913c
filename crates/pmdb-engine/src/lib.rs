//! pmdb-engine: the storage engine of pmdb.
//!
//! It owns everything between the device layer and SQL: the [`Db`] and its named
//! [`Subtable`]s (LSM instances), atomic [`WriteBatch`]es committed by a log-free group
//! commit (no write-ahead log: records are appended to PM and published by 8-byte head
//! words), semi-persistent memtables (data in PM, a radix-tree index in DRAM, rebuilt in
//! parallel at open), [`Snapshot`]s, zero-copy point reads and ordered range scans.
//! Below PM it keeps the global index and the SST levels; tools inspect one SST file on
//! its own with [`SstFile`], and a database's write and space amplification with
//! [`Amplification`].
//!
//! ```
//! use pmdb_engine::{Db, DbOptions, WriteBatch, WriteOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path(), DbOptions::small())?;
//! let users = db.subtable("users")?;
//! let index = db.subtable("users_by_email")?;
//!
//! users.put(b"u1", b"Ada")?;
//! let mut batch = WriteBatch::new();                   // atomic across subtables
//! batch.put(&users, b"u2", b"Grace");
//! batch.put(&index, b"grace@example.com", b"u2");
//! db.write(batch, WriteOptions::default())?;
//!
//! let snap = db.snapshot();
//! users.delete(b"u1")?;
//! assert_eq!(users.get(b"u2")?.as_deref(), Some(&b"Grace"[..])); // borrowed from PM
//! assert!(users.get(b"u1")?.is_none());
//! assert!(snap.get(&users, b"u1")?.is_some());           // the snapshot still sees it
//! let keys: Vec<Vec<u8>> = users
//!     .scan::<&[u8]>(..)
//!     .map(|e| e.map(|e| e.key().to_vec()))
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(keys, vec![b"u2".to_vec()]);
//! drop((users, index, snap, db));
//!
//! let db = Db::open(dir.path(), DbOptions::small())?;       // recovery
//! assert_eq!(db.subtable("users")?.get_owned(b"u2")?, Some(b"Grace".to_vec()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod amplification;
pub mod art;
mod background;
mod batch;
mod catalog;
mod commit;
mod committer;
mod compaction;
mod core;
mod db;
mod error;
mod format;
mod gi;
mod gi_words;
mod index;
mod iter;
mod keys;
mod levels;
mod manifest;
mod memtable;
mod options;
mod read;
mod recovery;
mod registry;
mod seq;
mod snapshot;
mod sst;
mod subtable;
mod table;
mod tiers;
mod txn;
mod view;

pub use amplification::Amplification;
pub use batch::{SubtableId, WriteBatch};
pub use catalog::MAX_NAME;
pub use committer::{PendingCommit, lead_commits_here};
pub use db::{Db, DeviceStats, SubtableStats};
pub use error::{DbError, Result};
pub use format::record::Kind;
pub use options::{DEFAULT_MAX_KEY, DEFAULT_MAX_VALUE, DbOptions, LeaderStage, WriteOptions};
pub use read::{Entry, EntryRef, Scan, ValueRef};
pub use recovery::RecoveryStats;
pub use snapshot::Snapshot;
pub use sst::ReadMode;
pub use sst::file::{
    BlockExtent, FilterSummary, IndexSummary, SstEntries, SstEntry, SstFile, SstFooter, SstKey,
    SstPlace, SstProperties,
};
pub use subtable::Subtable;
pub use tiers::TierStats;
pub use txn::{Isolation, Savepoint, Transaction, TxnScan};
