//! pmdb through its engine API: one subtable, one-record batches; durable means
//! `WriteOptions { sync: true }` (on Memory and Dax persistence is always part of the
//! commit; on File it adds msync). Runs on any backend, and under PM latency emulation
//! for the NVM sweep.

use std::path::Path;

use pmdb_engine::{Db, DbOptions, Subtable, WriteBatch, WriteOptions};
use pmdb_pmem::{BackendChoice, Emulation};

use super::interface::{Durability, Engine, IndexMemory, Result, Worker};

pub struct PmdbEngine {
    db: Db,
    table: Subtable,
    sync: bool,
}

impl PmdbEngine {
    /// pmdb on `backend` (Auto: whatever the directory gives), with `emulation` of slower
    /// PM (off unless an NVM latency sweep asks for it).
    pub fn open(
        dir: &Path,
        durability: Durability,
        backend: BackendChoice,
        emulation: Emulation,
    ) -> Result<PmdbEngine> {
        let mut options = DbOptions::default();
        options.pool.max_extents = Some(256);
        options.pool.backend = backend;
        options.pool.emulation = emulation;
        let db = Db::open(dir, options)?;
        let table = db.subtable("usertable")?;
        Ok(PmdbEngine {
            db,
            table,
            sync: durability == Durability::Durable,
        })
    }
}

impl Engine for PmdbEngine {
    fn name(&self) -> String {
        format!(
            "pmdb {} ({})",
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
        format!(
            "{} backend, WriteOptions {{ sync: {} }}{emulated}",
            self.db.device().backend,
            self.sync
        )
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
