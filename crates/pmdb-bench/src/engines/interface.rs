//! The interface every engine adapter implements, and the durability it is asked for.

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
