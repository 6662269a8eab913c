//! The block cache: checked, decompressed data blocks of every open table, keyed by
//! (file id, block offset) and bounded by their bytes (quick_cache). It serves the
//! `pread` and `mmap-copy` read modes; `direct` reads in place and needs none. Blocks
//! are checked once, when loaded, so a hit costs no crc.

use quick_cache::Weighter;
use quick_cache::sync::Cache;

use super::block::DataBlock;
use crate::error::Result;

/// What an entry costs beyond its bytes: key, handle and the cache's own bookkeeping.
const ENTRY_OVERHEAD: u64 = 96;

#[derive(Clone)]
struct ByBytes;

impl Weighter<(u64, u64), DataBlock> for ByBytes {
    fn weight(&self, _key: &(u64, u64), block: &DataBlock) -> u64 {
        block.len() as u64 + ENTRY_OVERHEAD
    }
}

/// Data blocks shared by the tables of a database. File ids must be unique among the
/// tables that share it.
pub(crate) struct BlockCache {
    blocks: Cache<(u64, u64), DataBlock, ByBytes>,
}

impl BlockCache {
    /// A cache of at most about `capacity` bytes.
    pub fn new(capacity: u64) -> BlockCache {
        let items = usize::try_from(capacity / 4096)
            .unwrap_or(usize::MAX)
            .max(16);
        BlockCache {
            blocks: Cache::with_weighter(items, capacity, ByBytes),
        }
    }

    /// The block at `offset` of file `file_id`, loaded with `load` on a miss. Concurrent
    /// misses on one block load it once.
    pub(super) fn get_or_load(
        &self,
        file_id: u64,
        offset: u64,
        load: impl FnOnce() -> Result<DataBlock>,
    ) -> Result<DataBlock> {
        self.blocks.get_or_insert_with(&(file_id, offset), load)
    }

    /// Bytes held, overhead included.
    pub fn weight(&self) -> u64 {
        self.blocks.weight()
    }
}
