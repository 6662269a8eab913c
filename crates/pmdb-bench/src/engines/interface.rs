//! The interface every engine adapter implements, and the durability it is asked for.

use std::path::Path;

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

/// What an acknowledged write must survive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Durability {
    Durable,
    Relaxed,
}

/// An engine under test; each benchmark thread gets its own [`Worker`].
pub trait Engine: Sync {
    /// Name and version.
    fn name(&self) -> String;
    /// The settings that give the durability asked for, stated for the report.
    fn settings(&self) -> String;
    fn worker(&self) -> Result<Box<dyn Worker + '_>>;
    /// The DRAM its in-memory index holds, for engines that report it.
    fn index_memory(&self) -> Option<IndexMemory> {
        None
    }
    /// What the engine keeps now: PM in use, and bytes of files on disk (`dir` is the
    /// directory it was opened in; engines with other places say so themselves).
    fn footprint(&self, dir: &Path) -> Footprint {
        Footprint {
            pm_bytes: 0,
            file_bytes: disk_usage(dir),
        }
    }
    /// Compacts everything it holds as far down as it goes (the engine's own manual
    /// compaction; nothing for engines without one).
    fn compact(&self) -> Result<()> {
        Ok(())
    }
    /// One line on the background work done since open (flushes, compactions, stalls),
    /// for engines that report it.
    fn background(&self) -> Option<String> {
        None
    }
}

/// Where an engine's data lies at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Footprint {
    /// Bytes of persistent memory in use (pmdb's pool zones owned).
    pub pm_bytes: u64,
    /// Bytes the filesystem allocates to the engine's files.
    pub file_bytes: u64,
}

impl Footprint {
    pub fn total(&self) -> u64 {
        self.pm_bytes + self.file_bytes
    }
}

/// Bytes the filesystem allocates under `path` (files a run deletes meanwhile are
/// skipped: their space is gone).
pub fn disk_usage(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.blocks() * 512;
    }
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| disk_usage(&e.path()))
                .sum::<u64>()
        })
        .unwrap_or(0)
}

/// An engine's DRAM index size at one moment.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IndexMemory {
    /// Index entries (one per key and memtable for pmdb).
    pub keys: u64,
    pub bytes: u64,
}

impl IndexMemory {
    pub fn bytes_per_key(&self) -> f64 {
        self.bytes as f64 / self.keys.max(1) as f64
    }
}

/// One thread's handle on an engine.
pub trait Worker {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Copies the value of `key` into `out`; false if absent.
    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;
    /// Visits up to `count` records from `start` on, in key order; returns how many.
    fn scan(&mut self, start: &[u8], count: usize, out: &mut Vec<u8>) -> Result<usize>;
}
