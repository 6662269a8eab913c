//! RocksDB through rust-rocksdb (linked to the system librocksdb), configured as its
//! documentation recommends for a small machine: background jobs for the cores, dynamic
//! level sizes. Durable is the write-ahead log with `sync = true` on every write (each
//! acknowledged write is fsynced); relaxed keeps the WAL but does not sync it.

use std::path::Path;

use rocksdb::{DB, Options, WriteOptions};

use super::interface::{Durability, Engine, Result, Worker};

pub struct RocksEngine {
    db: DB,
    durability: Durability,
}

impl RocksEngine {
    pub fn open(dir: &Path, durability: Durability) -> Result<RocksEngine> {
        let mut options = Options::default();
        options.create_if_missing(true);
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as i32;
        options.increase_parallelism(cores);
        options.set_level_compaction_dynamic_level_bytes(true);
        Ok(RocksEngine {
            db: DB::open(&options, dir)?,
            durability,
        })
    }
}

impl Engine for RocksEngine {
    fn name(&self) -> String {
        "RocksDB (system librocksdb)".into()
    }

    fn settings(&self) -> String {
        match self.durability {
            Durability::Durable => "WAL on, WriteOptions::set_sync(true)".into(),
            Durability::Relaxed => "WAL on, WriteOptions::set_sync(false)".into(),
        }
    }

    fn worker(&self) -> Result<Box<dyn Worker + '_>> {
        let mut write = WriteOptions::default();
        write.set_sync(self.durability == Durability::Durable);
        Ok(Box::new(RocksWorker {
            db: &self.db,
            write,
        }))
    }
}

struct RocksWorker<'a> {
    db: &'a DB,
    write: WriteOptions,
}

impl Worker for RocksWorker<'_> {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_opt(key, value, &self.write)?)
    }

    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_opt(key, value, &self.write)?)
    }

    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        Ok(match self.db.get_pinned(key)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(&v);
                true
            }
            None => false,
        })
    }

    fn scan(&mut self, start: &[u8], count: usize, out: &mut Vec<u8>) -> Result<usize> {
        let mut it = self.db.raw_iterator();
        it.seek(start);
        let mut n = 0;
        while n < count && it.valid() {
            if let Some(v) = it.value() {
                out.clear();
                out.extend_from_slice(v);
            }
            n += 1;
            it.next();
        }
        it.status()?;
        Ok(n)
    }
}
