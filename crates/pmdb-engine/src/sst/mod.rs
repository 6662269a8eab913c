//! pmdb's sorted string tables: the files the capacity tier holds once PM data is
//! flushed. A table is a run of data blocks of internal keys (`keys`) in ascending order,
//! then a Bloom filter over the user keys, a properties block, an index block with one
//! entry per data block, and a fixed-size footer that locates them (byte by byte in
//! `docs/format.md`, "SST file"; the fixed encodings live in `format::sst`).
//!
//! This module owns the blocks and their cursors (`block`), the filter (`filter`), the
//! writer (`writer::SstWriter`), the reader (`table::Sst`: point reads, verification)
//! with its two-level cursor (`iter::SstIter`), the block cache shared by the tables
//! of a database (`cache::BlockCache`), the check that a file is the one the manifest
//! names (`place`), and the public read-only face of one file for
//! inspection tools (`file::SstFile`). How a reader fetches blocks is its [`ReadMode`].

mod block;
pub(crate) mod cache;
pub(crate) mod file;
mod filter;
pub(crate) mod iter;
pub(crate) mod place;
pub(crate) mod table;
pub(crate) mod writer;

#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use crate::format::sst::Compression;
use block::Block;

/// How a table reads its blocks from the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReadMode {
    /// `pread` each block into a buffer of its own (kept by the block cache, if any).
    #[default]
    Pread,
    /// Copy each block out of a read-only mapping of the file (kept by the block cache,
    /// if any): no system call per block.
    MmapCopy,
    /// Read blocks in place in the mapping, with no copy and no cache: values handed out
    /// borrow the mapping. Compressed blocks are still decompressed into a buffer.
    Direct,
}

impl ReadMode {
    /// The name `FromStr` accepts.
    pub fn name(self) -> &'static str {
        match self {
            ReadMode::Pread => "pread",
            ReadMode::MmapCopy => "mmap-copy",
            ReadMode::Direct => "direct",
        }
    }
}

impl fmt::Display for ReadMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ReadMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pread" => Ok(ReadMode::Pread),
            "mmap-copy" => Ok(ReadMode::MmapCopy),
            "direct" => Ok(ReadMode::Direct),
            other => Err(format!(
                "unknown read mode {other:?} (expected pread, mmap-copy or direct)"
            )),
        }
    }
}

/// How a table is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SstOptions {
    /// A data block is closed once it holds this many bytes (before compression).
    pub block_size: usize,
    /// Entries between two keys stored whole in a data block.
    pub restart_interval: usize,
    /// Bits of Bloom filter per distinct user key; 0 writes no filter.
    pub bloom_bits_per_key: u32,
    pub compression: Compression,
}

impl Default for SstOptions {
    fn default() -> SstOptions {
        SstOptions {
            block_size: 4 << 10,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
        }
    }
}

/// What a finished table holds, for whoever records it (flush, compaction).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SstMeta {
    /// Bytes of the file.
    pub file_len: u64,
    pub entries: u64,
    pub tombstones: u64,
    /// Smallest and largest internal keys; empty if the table is.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    /// 0 and 0 if the table is empty.
    pub min_seq: u64,
    pub max_seq: u64,
    /// Bytes of the internal keys and of the values, before prefix sharing and
    /// compression.
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
}

/// A value read from a table: shares the bytes of its block (in [`ReadMode::Direct`],
/// the file's mapping itself), which it keeps alive.
#[derive(Clone)]
pub(crate) struct SstValue(Block);

impl SstValue {
    /// Whether the value lies in the file's mapping rather than in a copy.
    #[cfg(test)]
    pub fn is_mapped(&self) -> bool {
        self.0.is_mapped()
    }
}

impl Deref for SstValue {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for SstValue {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl fmt::Debug for SstValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SstValue({:?})", &self[..])
    }
}
