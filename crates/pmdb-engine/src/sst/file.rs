//! [`SstFile`]: one SST file opened on its own, read-only, for the tools that inspect it
//! (`pmdb sst dump`); no database, manifest or block cache takes part. It is the table
//! reader ([`Sst`]) with a public face: what it reports was checked when the reader
//! opened the file, its entries come from the table's own cursor, and
//! [`SstFile::verify`] is the reader's full check.

use std::path::Path;
use std::sync::Arc;

use pmdb_pmem::{FileSystem, OsFiles, PmemError, format_uuid};

use super::ReadMode;
use super::iter::SstIter;
use super::table::Sst;
use crate::error::{DbError, Result};
use crate::format::record::Kind;
use crate::format::sst::{BlockHandle, SST_FORMAT_VERSION};
use crate::iter::InternalIterator;
use crate::keys::{self, IKey};

/// An SST file open for inspection.
pub struct SstFile {
    sst: Arc<Sst>,
}

/// Where a block lies in the file: its first byte and its size, the 5-byte trailer that
/// follows it excluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockExtent {
    pub offset: u64,
    pub size: u64,
}

impl From<BlockHandle> for BlockExtent {
    fn from(h: BlockHandle) -> BlockExtent {
        BlockExtent {
            offset: h.offset,
            size: h.size,
        }
    }
}

/// What the footer says: its format version (the only one the reader accepts) and where
/// the index, filter and properties blocks are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstFooter {
    pub format_version: u32,
    pub index: BlockExtent,
    /// `None` when the table has no filter.
    pub filter: Option<BlockExtent>,
    pub properties: BlockExtent,
}

/// An internal key taken apart: the user key and its version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstKey {
    pub user_key: Vec<u8>,
    pub seq: u64,
    pub kind: Kind,
}

impl SstKey {
    fn of(ikey: &[u8]) -> SstKey {
        SstKey {
            user_key: keys::user_key(ikey).to_vec(),
            seq: keys::seq_of(ikey),
            kind: keys::kind_of(ikey),
        }
    }
}

/// Where the table says it belongs (properties version 2 on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstPlace {
    /// The uuid of the database (its pool) that wrote it.
    pub database: String,
    /// The file number the manifest names it by.
    pub number: u64,
    pub subtable: u32,
}

/// What the properties block says the table holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstProperties {
    pub format_version: u32,
    /// `None` for a table written before tables named their place (version 1).
    pub place: Option<SstPlace>,
    /// The writer's data-block compression, `none` or `lz4` (a block that would not shrink
    /// is stored as it is).
    pub compression: &'static str,
    /// Versions, tombstones included.
    pub entries: u64,
    pub tombstones: u64,
    /// Bytes of the internal keys (each user key and its 8-byte tag) and of the values,
    /// before prefix sharing and compression.
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    pub data_blocks: u64,
    /// 0 and 0 when the table is empty.
    pub min_seq: u64,
    pub max_seq: u64,
    /// The first and last entries' keys; `None` when the table is empty.
    pub smallest: Option<SstKey>,
    pub largest: Option<SstKey>,
}

/// The Bloom filter over the table's user keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterSummary {
    /// Bits set per key.
    pub hashes: u32,
    pub bits: u64,
}

/// The index block: one entry per data block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexSummary {
    pub entries: u64,
    /// Bytes of the data blocks it names (as stored, trailers excluded), in all, the
    /// smallest and the largest.
    pub data_bytes: u64,
    pub smallest_block: u64,
    pub largest_block: u64,
}

/// One version the table holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstEntry {
    pub key: SstKey,
    /// Empty for a tombstone.
    pub value: Vec<u8>,
}

impl SstFile {
    /// Opens the SST file at `path` for reading, checking its footer and its index,
    /// filter and properties blocks. Nothing is written. A file that is not a pmdb SST
    /// file, or is damaged there, is an error naming it.
    pub fn open(path: impl AsRef<Path>) -> Result<SstFile> {
        let path = path.as_ref();
        let not_a_file = |why: &str| {
            DbError::Pmem(PmemError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
            })
        };
        let name = path
            .file_name()
            .ok_or_else(|| not_a_file("not a file name"))?
            .to_str()
            .ok_or_else(|| not_a_file("the file name is not UTF-8"))?;
        let dir = OsFiles::existing(path.parent().unwrap_or(Path::new("")))?;
        let file = dir.open(name)?;
        let sst = Sst::open(file, 0, dir.describe(name), ReadMode::Pread, None)?;
        Ok(SstFile { sst })
    }

    /// How errors name the file: its path.
    pub fn name(&self) -> &str {
        self.sst.name()
    }

    /// Bytes of the file.
    pub fn len(&self) -> u64 {
        self.sst.file_len()
    }

    /// Whether the file is empty (never so for a file that opened).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn footer(&self) -> SstFooter {
        let f = self.sst.footer();
        SstFooter {
            format_version: SST_FORMAT_VERSION,
            index: f.index.into(),
            filter: f.filter.map(BlockExtent::from),
            properties: f.properties.into(),
        }
    }

    pub fn properties(&self) -> SstProperties {
        let p = self.sst.properties();
        let key = |k: &[u8]| (p.entries > 0).then(|| SstKey::of(k));
        SstProperties {
            format_version: p.format_version,
            place: p.identity.map(|id| SstPlace {
                database: format_uuid(&id.database),
                number: id.number,
                subtable: id.subtable,
            }),
            compression: p.compression.name(),
            entries: p.entries,
            tombstones: p.tombstones,
            raw_key_bytes: p.raw_key_bytes,
            raw_value_bytes: p.raw_value_bytes,
            data_blocks: p.data_blocks,
            min_seq: p.min_seq,
            max_seq: p.max_seq,
            smallest: key(&p.smallest),
            largest: key(&p.largest),
        }
    }

    /// The filter, if the table has one.
    pub fn filter(&self) -> Option<FilterSummary> {
        self.sst.filter().map(|f| {
            let (hashes, bits) = f.shape();
            FilterSummary { hashes, bits }
        })
    }

    /// Walks the index block (in memory since the open) and sums up the data blocks it
    /// names.
    pub fn index(&self) -> Result<IndexSummary> {
        let mut summary = IndexSummary {
            smallest_block: u64::MAX,
            ..IndexSummary::default()
        };
        let mut index = self.sst.index_iter();
        index.seek_to_first();
        while index.valid() {
            let size = self.sst.handle_at(&index)?.size;
            summary.entries += 1;
            summary.data_bytes = summary.data_bytes.saturating_add(size);
            summary.smallest_block = summary.smallest_block.min(size);
            summary.largest_block = summary.largest_block.max(size);
            index.next();
        }
        index.status().map_err(|e| self.sst.index_error(e))?;
        summary.smallest_block = summary.smallest_block.min(summary.largest_block);
        Ok(summary)
    }

    /// Every entry, in the table's order: user key ascending, newest version first.
    pub fn entries(&self) -> SstEntries {
        // The least internal key there is: the empty user key with the highest tag.
        self.entries_from(b"")
    }

    /// The entries from the first version of `user_key`, or of the next key after it.
    pub fn entries_from(&self, user_key: &[u8]) -> SstEntries {
        SstEntries {
            iter: self.sst.iter(),
            seek: Some(IKey::first_of(user_key)),
            done: false,
        }
    }

    /// Reads every data block from the file and checks it: crcs, keys in strictly
    /// ascending order and inside their index entries, every key in the filter, and the
    /// properties matching what the blocks hold. Returns the number of entries.
    pub fn verify(&self) -> Result<u64> {
        self.sst.verify()
    }
}

/// The entries of an [`SstFile`], in order; ends after the first error.
pub struct SstEntries {
    iter: SstIter,
    /// Where the first step seeks to.
    seek: Option<IKey>,
    done: bool,
}

impl Iterator for SstEntries {
    type Item = Result<SstEntry>;

    fn next(&mut self) -> Option<Result<SstEntry>> {
        if self.done {
            return None;
        }
        match self.seek.take() {
            Some(target) => self.iter.seek(target.as_slice()),
            None => self.iter.next(),
        }
        if !self.iter.valid() {
            self.done = true;
            return self.iter.status().err().map(Err);
        }
        let key = SstKey::of(self.iter.key());
        match self.iter.value() {
            Ok(value) => Some(Ok(SstEntry {
                key,
                value: value.to_vec(),
            })),
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
