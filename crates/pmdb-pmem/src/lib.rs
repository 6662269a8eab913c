//! pmdb-pmem: the persistent-memory device layer of pmdb.
//!
//! It owns everything that touches the media and nothing that knows about keys: pools of
//! extent files mapped into memory and addressed by [`PmOff`]; the persistence primitives
//! (`flush`, `fence`, `persist`) over the backends ([`Backend`]: Dax, Memory, File);
//! latency and bandwidth emulation ([`Emulation`]); the crash-consistent zone allocator
//! halloc (owners, zones, small object pools) with its [`Prefaulter`], which keeps the
//! next zones' pages mapped off the caller's path; the files that live beside a pool
//! ([`FileSystem`]: a flat directory of write-once files, [`OsFiles`] on a real
//! directory, handed out by [`Pool::files`]); and the crash simulator with its test
//! harness (`CrashTest`), with which every persistent protocol in pmdb is tested. The
//! simulator crashes a pool's words and its files at the same points — every fence and
//! every file operation that changes what a crash could leave — so protocols that span
//! both are tested as one.
//!
//! The crash simulator (the CrashSim backend and its filesystem, `Pool::create_sim`,
//! `Pool::open_image`, `Pool::crash`, `CrashImage` and the `CrashTest` harness) is built
//! only with the `crashsim` feature, which test suites turn on through their
//! dev-dependencies: no shipped build carries it.
//!
//! ```
//! use pmdb_pmem::{Pool, PoolOptions};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let pool = Pool::create(dir.path(), &PoolOptions::small()).unwrap();
//! let owner = pool.create_owner().unwrap();
//! let zone = pool.alloc_zone(owner).unwrap();          // get
//! pool.write(zone.off(), b"hello").unwrap();            // initialise
//! pool.persist(zone.off(), 5).unwrap();                 // persist
//! let off = zone.commit().unwrap();                     // commit: one 8-byte publish
//! pool.publish_root(0, owner.to_raw()).unwrap();        // make the owner reachable
//! drop(pool);
//!
//! let pool = Pool::open(dir.path(), &PoolOptions::default()).unwrap();
//! assert_eq!(pool.read(off, 5).unwrap(), b"hello");
//! ```

#![deny(clippy::undocumented_unsafe_blocks)]

mod backend;
#[cfg(feature = "crashsim")]
mod crashsim;
mod emulation;
mod error;
mod extent_check;
mod extent_file;
mod files;
mod flush;
mod halloc;
#[cfg(feature = "crashsim")]
mod harness;
mod layout;
mod mapping;
mod media;
mod objpool;
mod off;
mod options;
mod persist;
mod pool;
mod prefault;
mod uuid;

pub use backend::{Backend, BackendChoice, FsKind, filesystem_kind};
#[cfg(feature = "crashsim")]
pub use crashsim::CrashImage;
pub use emulation::Emulation;
pub use error::{PmemError, Result};
pub use files::{FileBytes, FileSystem, OsFiles, ReadableFile, WritableFile};
pub use flush::{CACHE_LINE, CacheLevel, FlushInsn, flush_insn, prefetch_range};
pub use halloc::{AllocStats, OwnerId, RecoveryReport, ZoneGrant};
#[cfg(feature = "crashsim")]
pub use harness::{AckLog, CrashFailure, CrashReport, CrashTest};
pub use layout::{FORMAT_VERSION, ROOT_WORDS};
pub use objpool::{ObjPool, ObjSlot};
pub use off::PmOff;
pub use options::{
    DEFAULT_MAX_EXTENTS, DEFAULT_MAX_OWNERS, DEFAULT_ZONE_SIZE, DEFAULT_ZONES_PER_EXTENT,
    PoolOptions,
};
pub use pool::Pool;
pub use prefault::Prefaulter;
pub use uuid::format_uuid;
