//! Options for opening a database and for writes.

use pmdb_pmem::PoolOptions;

use crate::error::{DbError, Result};

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
    /// Deliberately wrong commit order (head words published before the chunks are
    /// persisted), so the crash tests can prove they catch a broken protocol. Exists only
    /// with the `crash-controls` feature, which only tests turn on.
    #[cfg(feature = "crash-controls")]
    pub broken_publish_before_persist: bool,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            pool: PoolOptions::default(),
            create_if_missing: true,
            memtable_size: 256 << 20,
            max_group_batches: 64,
            max_group_bytes: 4 << 20,
            recovery_threads: 0,
            prefault_zones: 2,
            max_key_size: DEFAULT_MAX_KEY,
            max_value_size: DEFAULT_MAX_VALUE,
            #[cfg(feature = "crash-controls")]
            broken_publish_before_persist: false,
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
            ..DbOptions::default()
        }
    }

    /// Whether the commit must use the deliberately broken publish order.
    pub(crate) fn broken_publish_order(&self) -> bool {
        #[cfg(feature = "crash-controls")]
        return self.broken_publish_before_persist;
        #[cfg(not(feature = "crash-controls"))]
        false
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
    /// with small zones opens with the default options).
    pub(crate) fn fit_to(&mut self, zone_size: u64) -> Result<()> {
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
