//! Options for opening a database and for writes.

use std::path::PathBuf;
use std::time::Duration;

use pmdb_pmem::PoolOptions;

use crate::error::{DbError, Result};
use crate::sst::ReadMode;

/// Largest key accepted by default (bytes).
pub const DEFAULT_MAX_KEY: usize = 16 << 10;
/// Largest value accepted by default (bytes).
pub const DEFAULT_MAX_VALUE: usize = 1 << 20;

/// How to open a database.
#[derive(Clone, Debug)]
pub struct DbOptions {
    /// The pool underneath (geometry at create, backend, emulation).
    pub pool: PoolOptions,
    /// Create the database if the directory holds none.
    pub create_if_missing: bool,
    /// A memtable freezes and a new one starts once it holds this many bytes.
    pub memtable_size: u64,
    /// Most write batches one commit group takes.
    pub max_group_batches: usize,
    /// Most payload bytes one commit group takes (a larger single batch still commits).
    pub max_group_bytes: usize,
    /// Threads rebuilding the DRAM indexes at open; 0 means one per core.
    pub recovery_threads: usize,
    /// Free zones a background thread keeps pre-faulted (and the pool grown for) ahead of
    /// the commit path, so a memtable's next zone takes no page faults; 0: none. A
    /// read-only open starts no such thread.
    pub prefault_zones: usize,
    /// Largest key in bytes; at most 64 KiB. The default is lowered at open to half of
    /// what one zone holds where it does not fit (pools with zones under 32 KiB); any
    /// other value that does not fit is refused.
    pub max_key_size: usize,
    /// Largest value in bytes. Lowered at open to what fits in one zone beside a
    /// largest key (about 4 MiB minus the key with the default zones).
    pub max_value_size: usize,
    /// Directory of the SST files and the manifest; `None`: `<db>/sst`. On tmpfs this is
    /// the "everything in PM" configuration, on a disk the PM + SSD one.
    pub sst_dir: Option<PathBuf>,
    /// A global-index generation is sealed (it takes no more merges; a new one starts)
    /// once its memtables hold this many bytes of PM, or 3/8 of the pool's cap if that is
    /// less. A sealed generation stays in PM, read from there, until the flush watermark
    /// sends it to SSTs.
    pub gi_budget: u64,
    /// PM first: while the subtables' memtables and global-index generations hold less
    /// PM than this, nothing is flushed to SSTs; past it, the coldest generation (the
    /// one whose first memtable is oldest, whatever its subtable) is sealed if it is not
    /// yet and flushed, one at a time until they hold less. `None`: the pool's cap less
    /// one generation budget and room for the active and `max_frozen_memtables` frozen
    /// memtables, so that writes go on into PM while a generation is flushed. Resolved
    /// at open, where a value over the cap is lowered to it.
    pub flush_watermark: Option<u64>,
    /// Level 0 holds flushed generations, one file each, until this many wait; then they
    /// are merged into level 1 together, in a compaction thread, while flushes go on.
    pub l0_compaction_trigger: usize,
    /// Target bytes of level 1; each deeper level holds `level_ratio` times more.
    pub l1_target: u64,
    pub level_ratio: u64,
    /// Compaction cuts its output into files of about this many bytes.
    pub target_file_size: u64,
    /// Bytes of an SST data block before compression.
    pub block_size: usize,
    /// Compress SST blocks with LZ4.
    pub compression: bool,
    /// Bytes of the DRAM block cache serving the `pread` and `mmap-copy` read modes.
    pub block_cache_bytes: u64,
    /// How SST blocks are read.
    pub read_mode: ReadMode,
    /// A thread merges frozen memtables into the global index and compacts full
    /// generations to SSTs. Without it (and with no compaction threads) only
    /// [`crate::Db::compact`] does that work.
    pub background_flush: bool,
    /// Threads compacting SST levels into deeper ones.
    pub compaction_threads: usize,
    /// Most bytes per second compaction writes; 0: no limit.
    pub compaction_rate: u64,
    /// The commit path waits (a write stall, reported in [`crate::TierStats`]) while this
    /// many frozen memtables wait to be merged, or while the pool has less than two
    /// memtables of room and a flush could free some, at most `max_stall` per stall.
    pub max_frozen_memtables: usize,
    pub max_stall: Duration,
    /// What a writable open does when recovery finds a memtable damaged. By default the
    /// database opens read-only, saying why. With `fence_damaged`, it opens writable with
    /// each damaged subtable fenced off: read as far as it can be, never written, merged,
    /// flushed or compacted (its damaged zones stay as they are), while the other
    /// subtables work as usual.
    pub fence_damaged: bool,
    /// Deliberately wrong commit order (head words published before the chunks are
    /// persisted), so the crash tests can prove they catch a broken protocol. Exists only
    /// with the `crash-controls` feature, which only tests turn on.
    #[cfg(feature = "crash-controls")]
    pub broken_publish_before_persist: bool,
    /// Deliberately wrong flush order (a generation's memtables freed before the manifest
    /// edit that makes its SSTs live), for the crash-world tests. `crash-controls` only.
    #[cfg(feature = "crash-controls")]
    pub broken_free_before_manifest: bool,
    /// A commit leader panics at this stage of a group holding a write of this key, so
    /// tests can prove that a failed leader fails its group and stops commits instead of
    /// leaving writers waiting. `crash-controls` only.
    #[cfg(feature = "crash-controls")]
    pub panic_on_key: Option<(Vec<u8>, LeaderStage)>,
    /// Indexing a committed group fails, as damage to a record would make it, in the
    /// memtable that holds a write of this key, so tests can prove that the group is
    /// never made visible in part and that commits stop. `crash-controls` only.
    #[cfg(feature = "crash-controls")]
    pub index_error_on_key: Option<Vec<u8>>,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            pool: PoolOptions::default(),
            create_if_missing: true,
            memtable_size: 64 << 20,
            max_group_batches: 64,
            max_group_bytes: 4 << 20,
            recovery_threads: 0,
            prefault_zones: 2,
            max_key_size: DEFAULT_MAX_KEY,
            max_value_size: DEFAULT_MAX_VALUE,
            sst_dir: None,
            gi_budget: 1 << 30,
            flush_watermark: None,
            l0_compaction_trigger: 4,
            l1_target: 1 << 30,
            level_ratio: 10,
            target_file_size: 64 << 20,
            block_size: 4 << 10,
            compression: false,
            block_cache_bytes: 256 << 20,
            read_mode: ReadMode::default(),
            background_flush: true,
            compaction_threads: 1,
            compaction_rate: 0,
            max_frozen_memtables: 4,
            max_stall: Duration::from_secs(30),
            fence_damaged: false,
            #[cfg(feature = "crash-controls")]
            broken_publish_before_persist: false,
            #[cfg(feature = "crash-controls")]
            broken_free_before_manifest: false,
            #[cfg(feature = "crash-controls")]
            panic_on_key: None,
            #[cfg(feature = "crash-controls")]
            index_error_on_key: None,
        }
    }
}

impl DbOptions {
    /// A small geometry for tests: 32 KiB zones, 128 KiB memtables, 1 KiB keys, 4 KiB
    /// values.
    pub fn small() -> DbOptions {
        DbOptions {
            pool: PoolOptions {
                zone_size: Some(32 << 10),
                zones_per_extent: 16,
                max_owners: 256,
                initial_extents: 1,
                max_extents: Some(4),
                ..PoolOptions::default()
            },
            memtable_size: 128 << 10,
            max_key_size: 1 << 10,
            max_value_size: 4 << 10,
            gi_budget: 512 << 10,
            l1_target: 1 << 20,
            target_file_size: 256 << 10,
            block_cache_bytes: 1 << 20,
            ..DbOptions::default()
        }
    }

    /// These options with no background work: memtables stay as they are until
    /// [`crate::Db::compact`] merges and compacts them (deterministic, for tests).
    pub fn manual_tiering(self) -> DbOptions {
        DbOptions {
            background_flush: false,
            compaction_threads: 0,
            ..self
        }
    }

    /// The pool may grow to at most `bytes` (rounded down to whole extents, at least one).
    /// Applies to pools created with these options; an existing pool keeps its geometry
    /// unless `pool.max_extents` is given.
    pub fn pool_max(mut self, bytes: u64) -> DbOptions {
        let zone = self.pool.zone_size.unwrap_or(pmdb_pmem::DEFAULT_ZONE_SIZE);
        let extent = zone * u64::from(self.pool.zones_per_extent.max(1));
        self.pool.max_extents = Some((bytes / extent).clamp(1, u64::from(u32::MAX)) as u32);
        self
    }

    /// The PM the subtables may hold before generations are flushed (resolved at open).
    pub fn flush_watermark(&self) -> u64 {
        self.flush_watermark.unwrap_or(u64::MAX)
    }

    /// Whether the commit must use the deliberately broken publish order.
    pub(crate) fn broken_publish_order(&self) -> bool {
        #[cfg(feature = "crash-controls")]
        return self.broken_publish_before_persist;
        #[cfg(not(feature = "crash-controls"))]
        false
    }

    /// Whether flushes must use the deliberately broken free order.
    pub(crate) fn broken_free_order(&self) -> bool {
        #[cfg(feature = "crash-controls")]
        return self.broken_free_before_manifest;
        #[cfg(not(feature = "crash-controls"))]
        false
    }

    /// Panics if one of `keys` is the `panic_on_key` test control's key at `stage`.
    pub(crate) fn panic_if_told<'k>(
        &self,
        stage: LeaderStage,
        keys: impl Iterator<Item = &'k [u8]>,
    ) {
        #[cfg(feature = "crash-controls")]
        if let Some((key, at)) = &self.panic_on_key {
            let mut keys = keys;
            if *at == stage && keys.any(|k| k == key.as_slice()) {
                panic!("panic_on_key: a write of {key:?} reached the commit leader's {stage:?}");
            }
        }
        #[cfg(not(feature = "crash-controls"))]
        drop((stage, keys));
    }

    /// Fails if one of `keys` is the `index_error_on_key` test control's key.
    pub(crate) fn index_error_if_told<'k>(
        &self,
        keys: impl Iterator<Item = Result<&'k [u8]>>,
    ) -> Result<()> {
        #[cfg(feature = "crash-controls")]
        if let Some(key) = &self.index_error_on_key {
            for k in keys {
                if k? == key.as_slice() {
                    return Err(DbError::Corrupt(format!(
                        "index_error_on_key: the index refused a write of {key:?}"
                    )));
                }
            }
        }
        #[cfg(not(feature = "crash-controls"))]
        drop(keys);
        Ok(())
    }

    /// Checks one write against the key and value limits.
    pub(crate) fn check_limits(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if key.is_empty() {
            return Err(DbError::EmptyKey);
        }
        if key.len() > self.max_key_size {
            return Err(DbError::KeyTooLarge {
                len: key.len(),
                max: self.max_key_size,
            });
        }
        if value.len() > self.max_value_size {
            return Err(DbError::ValueTooLarge {
                len: value.len(),
                max: self.max_value_size,
            });
        }
        Ok(())
    }

    pub(crate) fn threads(&self) -> usize {
        if self.recovery_threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.recovery_threads
        }
    }

    /// Checks the options against the pool's zone size, and lowers the default
    /// `max_key_size` and any `max_value_size` to what fits in one zone (so a pool made
    /// with small zones opens with the default options). A global-index generation gets
    /// at most 3/8 of what the pool may grow to, so that one filling while another is
    /// flushed still leaves a quarter of the pool for the memtables; the flush watermark
    /// is resolved against the cap.
    pub(crate) fn fit_to(&mut self, pool: &pmdb_pmem::Pool) -> Result<()> {
        let zone_size = pool.zone_size();
        let cap = pool.max_zones().saturating_mul(zone_size);
        self.gi_budget = self.gi_budget.min(cap / 8 * 3).max(1);
        let memtables = (self.max_frozen_memtables as u64 + 1).saturating_mul(self.memtable_size);
        let watermark = self
            .flush_watermark
            .unwrap_or_else(|| cap.saturating_sub(self.gi_budget.saturating_add(memtables)));
        self.flush_watermark = Some(watermark.min(cap));
        let invalid = |name, reason: String| Err(DbError::InvalidOption { name, reason });
        if self.max_key_size == 0 || self.max_key_size > 64 << 10 {
            return invalid(
                "max_key_size",
                format!("{} is not in 1..=65536", self.max_key_size),
            );
        }
        let overhead = crate::format::record::RECORD_HEADER
            + crate::format::chunk::CHUNK_HEADER
            + crate::format::zone::ZONE_HEADER
            + 8;
        let record_room = (zone_size as usize).saturating_sub(overhead);
        if self.max_key_size == DEFAULT_MAX_KEY && self.max_key_size >= record_room {
            // A limit nobody chose: keep half of a zone's room for keys, half for values.
            self.max_key_size = record_room / 2;
        }
        let room = record_room.saturating_sub(self.max_key_size);
        if room == 0 {
            return invalid(
                "max_key_size",
                format!(
                    "a {}-byte key does not fit in a {zone_size}-byte zone",
                    self.max_key_size
                ),
            );
        }
        self.max_value_size = self.max_value_size.min(room);
        if self.memtable_size < zone_size || self.memtable_size > u32::MAX as u64 / 2 {
            return invalid(
                "memtable_size",
                format!(
                    "{} is not between one zone ({zone_size}) and 2 GiB",
                    self.memtable_size
                ),
            );
        }
        if self.level_ratio < 2 || self.l1_target == 0 || self.target_file_size == 0 {
            return invalid(
                "level_ratio",
                "levels need a ratio of at least 2 and non-zero targets".into(),
            );
        }
        if !(256..=(4 << 20)).contains(&self.block_size) {
            return invalid(
                "block_size",
                format!("{} is not between 256 bytes and 4 MiB", self.block_size),
            );
        }
        if self.max_group_batches == 0 {
            return invalid("max_group_batches", "must be at least 1".into());
        }
        Ok(())
    }
}

/// Options of one write.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// On the File backend, acknowledge only after msync (durable against power loss).
    /// Without it the write survives a process crash, not a power loss. On Memory and
    /// Dax, persistence is always part of the commit and this changes nothing.
    pub sync: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions { sync: true }
    }
}

/// Where in a commit group's way the `panic_on_key` test control strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaderStage {
    /// While the leader appends the group to the memtables, before it is durable.
    Append,
    /// After the group is durable, while it is indexed, with the leadership handed on.
    Index,
}
