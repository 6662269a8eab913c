//! LMDB through heed: one database, one write transaction per write. Durable is LMDB's
//! default (every commit syncs: no NO_SYNC, no NO_META_SYNC); relaxed sets NO_SYNC.

use std::ops::Bound;
use std::path::Path;

use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions};

use super::interface::{Durability, Engine, Result, Worker};

pub struct LmdbEngine {
    env: Env,
    db: Database<Bytes, Bytes>,
    durability: Durability,
}

/// The map is reserved address space, not memory: room for the largest benchmark.
const MAP_SIZE: usize = 64 << 30;

impl LmdbEngine {
    pub fn open(dir: &Path, durability: Durability) -> Result<LmdbEngine> {
        let mut options = EnvOpenOptions::new();
        options.map_size(MAP_SIZE).max_dbs(1);
        if durability == Durability::Relaxed {
            // SAFETY: NO_SYNC only weakens durability (the relaxed mode asks for exactly
            // that); it does not affect memory safety.
            unsafe { options.flags(EnvFlags::NO_SYNC) };
        }
        // SAFETY: the directory is fresh and opened once by this process, as heed
        // requires (no second environment on the same path).
        let env = unsafe { options.open(dir)? };
        let mut txn = env.write_txn()?;
        let db = env.create_database(&mut txn, None)?;
        txn.commit()?;
        Ok(LmdbEngine {
            env,
            db,
            durability,
        })
    }
}

impl Engine for LmdbEngine {
    fn name(&self) -> String {
        let v = heed::lmdb_version();
        format!("LMDB {}.{}.{} (heed)", v.major, v.minor, v.patch)
    }

    fn settings(&self) -> String {
        match self.durability {
            Durability::Durable => "default flags: every write transaction syncs on commit".into(),
            Durability::Relaxed => "NO_SYNC".into(),
        }
    }

    fn worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(Box::new(LmdbWorker { engine: self }))
    }
}

struct LmdbWorker<'a> {
    engine: &'a LmdbEngine,
}

impl LmdbWorker<'_> {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut txn = self.engine.env.write_txn()?;
        self.engine.db.put(&mut txn, key, value)?;
        txn.commit()?;
        Ok(())
    }
}

impl Worker for LmdbWorker<'_> {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(key, value)
    }

    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(key, value)
    }

    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let txn = self.engine.env.read_txn()?;
        match self.engine.db.get(&txn, key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn scan(&mut self, start: &[u8], count: usize, out: &mut Vec<u8>) -> Result<usize> {
        let txn = self.engine.env.read_txn()?;
        let range = (Bound::Included(start), Bound::Unbounded);
        let mut n = 0;
        for item in self.engine.db.range(&txn, &range)?.take(count) {
            let (_, v) = item?;
            out.clear();
            out.extend_from_slice(v);
            n += 1;
        }
        Ok(n)
    }
}
