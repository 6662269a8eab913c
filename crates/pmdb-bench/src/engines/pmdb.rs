//! pmdb through its engine API: one subtable, one-record batches; durable means
//! `WriteOptions { sync: true }` (on Memory and Dax persistence is always part of the
//! commit; on File it adds msync). Runs on any backend, under PM latency emulation for
//! the NVM sweep, with its pool capped and its SSTs in a directory of their own.

use std::path::{Path, PathBuf};

use pmdb_engine::{Db, DbOptions, ReadMode, Subtable, WriteBatch, WriteOptions};
use pmdb_pmem::{BackendChoice, Emulation};

use super::interface::{Durability, Engine, Footprint, IndexMemory, Result, Worker, disk_usage};

/// What a run sets of pmdb beyond durability; the default is pmdb's own defaults.
#[derive(Clone, Debug, Default)]
pub struct PmdbSetup {
    /// Emulated slower PM (off unless an NVM latency sweep asks for it).
    pub emulation: Emulation,
    /// Most bytes the pool may grow to [default: `DbOptions`'s].
    pub pool_max: Option<u64>,
    /// Where the SSTs go [default: `<dir>/sst`].
    pub sst_dir: Option<PathBuf>,
    /// How SST blocks are read [default: `DbOptions`'s].
    pub read_mode: Option<ReadMode>,
}

pub struct PmdbEngine {
    db: Db,
    table: Subtable,
    sync: bool,
    sst_dir: PathBuf,
    read_mode: Option<ReadMode>,
}

impl PmdbEngine {
    /// pmdb on `backend` (Auto: whatever the directory gives) as `setup` says.
    pub fn open(
        dir: &Path,
        durability: Durability,
        backend: BackendChoice,
        setup: &PmdbSetup,
    ) -> Result<PmdbEngine> {
        let mut options = DbOptions::default();
        options.pool.backend = backend;
        options.pool.emulation = setup.emulation;
        if let Some(bytes) = setup.pool_max {
            options = options.pool_max(bytes);
        }
        if let Some(mode) = setup.read_mode {
            options.read_mode = mode;
        }
        let sst_dir = setup.sst_dir.clone().unwrap_or_else(|| dir.join("sst"));
        if setup.sst_dir.is_some() {
            let _ = std::fs::remove_dir_all(&sst_dir);
            options.sst_dir = Some(sst_dir.clone());
        }
        let db = Db::open(dir, options)?;
        let table = db.subtable("usertable")?;
        Ok(PmdbEngine {
            db,
            table,
            sync: durability == Durability::Durable,
            sst_dir,
            read_mode: setup.read_mode,
        })
    }
}

impl Engine for PmdbEngine {
    fn name(&self) -> String {
        let mode = self
            .read_mode
            .map_or(String::new(), |m| format!(", {m} reads"));
        format!(
            "pmdb {} ({}{mode})",
            env!("CARGO_PKG_VERSION"),
            self.db.device().backend
        )
    }

    fn settings(&self) -> String {
        let emulation = self.db.device().emulation;
        let emulated = if emulation.is_off() {
            String::new()
        } else {
            format!(
                ", emulated PM: +{} ns per read access, +{} ns per flushed line",
                emulation.read_latency_ns, emulation.write_latency_ns
            )
        };
        let device = self.db.device();
        let o = self.db.options();
        format!(
            "{} backend, WriteOptions {{ sync: {} }}, pool of at most {} MiB, memtables of {} MiB, global-index generations of {} MiB, SSTs in {} read by {}, block cache {} MiB, {} compaction thread(s){emulated}",
            device.backend,
            self.sync,
            (device.max_zones * device.zone_size) >> 20,
            o.memtable_size >> 20,
            o.gi_budget >> 20,
            self.sst_dir.display(),
            o.read_mode,
            o.block_cache_bytes >> 20,
            o.compaction_threads,
        )
    }

    fn footprint(&self, _dir: &Path) -> Footprint {
        let device = self.db.device();
        Footprint {
            pm_bytes: (device.alloc.zones - device.alloc.free_zones) * device.zone_size,
            file_bytes: disk_usage(&self.sst_dir),
        }
    }

    fn compact(&self) -> Result<()> {
        Ok(self.db.compact()?)
    }

    fn background(&self) -> Option<String> {
        let t = self.db.tier_stats();
        let write_amp = self
            .db
            .amplification()
            .write_amp()
            .map_or(String::new(), |w| format!(" (write amplification {w:.2})"));
        Some(format!(
            "{} merges into the global index, {} flushes to SSTs, {} compactions; {} MiB written to SSTs{write_amp}, {} MiB read by compactions; {} write stalls, {:.2} s in all, the longest {:.3} s{}",
            t.merges,
            t.flushes,
            t.compactions,
            t.sst_bytes_written >> 20,
            t.compaction_bytes_read >> 20,
            t.stalls,
            t.stall_time.as_secs_f64(),
            t.longest_stall.as_secs_f64(),
            t.last_error
                .map_or(String::new(), |e| format!("; last background error: {e}"))
        ))
    }

    fn worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(Box::new(PmdbWorker { engine: self }))
    }

    fn index_memory(&self) -> Option<IndexMemory> {
        let stats = self.db.subtable_stats();
        Some(IndexMemory {
            keys: stats.iter().map(|s| s.index_keys).sum(),
            bytes: stats.iter().map(|s| s.index_bytes).sum(),
        })
    }
}

struct PmdbWorker<'a> {
    engine: &'a PmdbEngine,
}

impl PmdbWorker<'_> {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(&self.engine.table, key, value);
        self.engine.db.write(
            batch,
            WriteOptions {
                sync: self.engine.sync,
            },
        )?;
        Ok(())
    }
}

impl Worker for PmdbWorker<'_> {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(key, value)
    }

    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(key, value)
    }

    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        match self.engine.table.get(key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(&mut self, start: &[u8], count: usize, out: &mut Vec<u8>) -> Result<usize> {
        let mut n = 0;
        let mut scan = self.engine.table.scan(start..);
        while n < count {
            let Some(entry) = scan.next_ref() else { break };
            out.clear();
            out.extend_from_slice(entry?.value);
            n += 1;
        }
        Ok(n)
    }
}
