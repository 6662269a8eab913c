//! The table reader: opens a file (footer, then the index, filter and properties, held in
//! DRAM for the table's life), fetches data blocks in its [`ReadMode`], answers point
//! reads and checks a whole file. Everything read is checked before use — block handles
//! against the file's length, every block's crc — and every failure is an error naming
//! the file.

use std::iter::repeat_n;
use std::sync::Arc;

use pmdb_pmem::{FileBytes, ReadableFile};

use super::block::{Block, BlockIter, DataBlock};
use super::cache::BlockCache;
use super::filter::Filter;
use super::{ReadMode, SstValue};
use crate::error::{DbError, Result};
use crate::format::FormatError;
use crate::format::record::Kind;
use crate::format::sst::{
    BlockHandle, Compression, FOOTER_LEN, FilterBlock, Footer, Properties, TRAILER_LEN,
    check_block, decompress_lz4, lz4_parts,
};
use crate::keys::{self, IKey};

/// Where a table's bytes come from.
struct Source {
    file: Arc<dyn ReadableFile>,
    /// The file's mapping, in the modes that read through one.
    map: Option<FileBytes>,
    name: String,
    /// Where the footer starts: every block must end by here.
    blocks_end: u64,
}

impl Source {
    fn corrupt(&self, what: std::fmt::Arguments<'_>) -> DbError {
        DbError::Corrupt(format!("{}: {what}", self.name))
    }

    /// `len` bytes at `off`, which the caller has bounded by the file's length: borrowed
    /// from the mapping (copied out of it if `copy`), or read into a buffer.
    fn raw(&self, off: u64, len: u64, copy: bool) -> Result<Block> {
        let range = off
            .checked_add(len)
            .and_then(|end| Some(usize::try_from(off).ok()?..usize::try_from(end).ok()?));
        let Some(range) = range else {
            return Err(self.corrupt(format_args!(
                "{len} bytes at {off}: beyond the address space"
            )));
        };
        match &self.map {
            Some(map) => {
                let block = Block::mapped(Arc::clone(map), range).ok_or_else(|| {
                    self.corrupt(format_args!("{len} bytes at {off}: past the mapping"))
                })?;
                Ok(match copy {
                    true => Block::owned(Arc::from(&block[..])),
                    false => block,
                })
            }
            None => {
                let mut buf: Arc<[u8]> = repeat_n(0, range.len()).collect();
                let dest = Arc::get_mut(&mut buf).expect("the buffer was just made");
                self.file.read_at(off, dest)?;
                Ok(Block::owned(buf))
            }
        }
    }

    /// The contents of the block at `handle`, named `what` in errors: bounded, its crc
    /// checked, decompressed.
    fn block(&self, handle: BlockHandle, what: &str, copy: bool) -> Result<Block> {
        let err = |e: FormatError| self.corrupt(format_args!("{what} at {}: {e}", handle.offset));
        handle.check(self.blocks_end).map_err(err)?;
        let raw = self.raw(handle.offset, handle.size + TRAILER_LEN as u64, copy)?;
        let (stored, kind) = check_block(&raw).map_err(err)?;
        match kind {
            Compression::None => Ok(raw.slice(0..stored.len())),
            Compression::Lz4 => {
                let (len, payload) = lz4_parts(stored).map_err(err)?;
                let mut out: Arc<[u8]> = repeat_n(0, len).collect();
                let dest = Arc::get_mut(&mut out).expect("the buffer was just made");
                decompress_lz4(payload, dest).map_err(err)?;
                Ok(Block::owned(out))
            }
        }
    }
}

/// An open table. Shared (`Arc`) by the readers and iterators using it.
pub(crate) struct Sst {
    source: Source,
    file_id: u64,
    mode: ReadMode,
    cache: Option<Arc<BlockCache>>,
    index: DataBlock,
    footer: Footer,
    filter: Option<Filter>,
    props: Properties,
}

impl Sst {
    /// Opens the table in `file`. `file_id` keys its blocks in `cache` (unique among the
    /// tables sharing the cache); `name` is how errors name the file. `cache` serves the
    /// `Pread` and `MmapCopy` modes; `Direct` ignores it.
    pub fn open(
        file: Arc<dyn ReadableFile>,
        file_id: u64,
        name: String,
        mode: ReadMode,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Arc<Sst>> {
        let len = file.len();
        let Some(blocks_end) = len.checked_sub(FOOTER_LEN as u64) else {
            return Err(DbError::Corrupt(format!(
                "{name}: {len} bytes, too short for an SST file's {FOOTER_LEN}-byte footer"
            )));
        };
        let map = match mode {
            ReadMode::Pread => None,
            ReadMode::MmapCopy | ReadMode::Direct => Some(file.map()?),
        };
        if let Some(map) = &map
            && (**map).as_ref().len() as u64 != len
        {
            return Err(DbError::Corrupt(format!(
                "{name}: mapped {} bytes of a {len}-byte file",
                (**map).as_ref().len()
            )));
        }
        let source = Source {
            file,
            map,
            name,
            blocks_end,
        };
        let footer = source.raw(blocks_end, FOOTER_LEN as u64, false)?;
        let footer = Footer::decode(&footer).map_err(|e| match e {
            FormatError::BadMagic => source.corrupt(format_args!(
                "not a pmdb SST file (its last 8 bytes are not the SST magic)"
            )),
            e => source.corrupt(format_args!("footer at {blocks_end}: {e}")),
        })?;
        // The index, filter and properties stay in DRAM whatever the mode.
        let index = source.block(footer.index, "index block", true)?;
        let index = DataBlock::parse(index).map_err(|e| {
            source.corrupt(format_args!("index block at {}: {e}", footer.index.offset))
        })?;
        let filter = match footer.filter {
            None => None,
            Some(handle) => {
                let bytes = source.block(handle, "filter block", true)?;
                let block = FilterBlock::decode(&bytes).map_err(|e| {
                    source.corrupt(format_args!("filter block at {}: {e}", handle.offset))
                })?;
                Some(Filter::new(block))
            }
        };
        let handle = footer.properties;
        let bytes = source.block(handle, "properties block", true)?;
        let props = Properties::decode(&bytes).map_err(|e| {
            source.corrupt(format_args!("properties block at {}: {e}", handle.offset))
        })?;
        let cache = match mode {
            ReadMode::Direct => None,
            ReadMode::Pread | ReadMode::MmapCopy => cache,
        };
        Ok(Arc::new(Sst {
            source,
            file_id,
            mode,
            cache,
            index,
            footer,
            filter,
            props,
        }))
    }

    /// How errors name the file.
    pub fn name(&self) -> &str {
        &self.source.name
    }

    pub fn properties(&self) -> &Properties {
        &self.props
    }

    /// Where the index, filter and properties blocks are.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// The table's filter, if it has one.
    pub fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    /// Bytes of the file.
    pub fn file_len(&self) -> u64 {
        self.source.file.len()
    }

    #[cfg(test)]
    pub fn read_mode(&self) -> ReadMode {
        self.mode
    }

    /// A cursor over the index block.
    pub(super) fn index_iter(&self) -> BlockIter {
        BlockIter::new(self.index.clone())
    }

    /// The data block handle of the index entry `index` is on.
    pub(super) fn handle_at(&self, index: &BlockIter) -> Result<BlockHandle> {
        BlockHandle::decode_varint(index.value()).map_err(|e| {
            self.source
                .corrupt(format_args!("index entry {:?}: {e}", index.key()))
        })
    }

    /// The error of a block cursor that met an entry it could not decode.
    pub(super) fn block_error(&self, what: &str, offset: u64, e: FormatError) -> DbError {
        self.source.corrupt(format_args!("{what} at {offset}: {e}"))
    }

    /// The error of an index cursor that met an entry it could not decode.
    pub(super) fn index_error(&self, e: FormatError) -> DbError {
        self.block_error("index block", self.footer.index.offset, e)
    }

    /// The data block at `handle`: from the cache, if the table has one and `cached`,
    /// else from the file.
    pub(super) fn data_block(&self, handle: BlockHandle, cached: bool) -> Result<DataBlock> {
        let load = || {
            let copy = self.mode == ReadMode::MmapCopy;
            let bytes = self.source.block(handle, "data block", copy)?;
            DataBlock::parse(bytes).map_err(|e| self.block_error("data block", handle.offset, e))
        };
        match &self.cache {
            Some(cache) if cached => cache.get_or_load(self.file_id, handle.offset, load),
            _ => load(),
        }
    }

    /// The newest version of `user_key` with seq <= `snap`, as its tag and value; the
    /// caller tells a tombstone by the tag's kind.
    pub fn get(&self, user_key: &[u8], snap: u64) -> Result<Option<(u64, SstValue)>> {
        if let Some(filter) = &self.filter
            && !filter.may_contain(user_key)
        {
            return Ok(None);
        }
        let target = IKey::at_snapshot(user_key, snap);
        let mut index = self.index_iter();
        index.seek(target.as_slice());
        if !index.valid() {
            index.status().map_err(|e| self.index_error(e))?;
            return Ok(None);
        }
        // The version sought is in the first block whose index key is at or after the
        // target, if in the table at all: when the target falls past that block's last
        // key, the index key is a separator whose user key lies strictly between the
        // block's last user key and the next block's first, so the target's user key
        // is in no block.
        let handle = self.handle_at(&index)?;
        let mut data = BlockIter::new(self.data_block(handle, true)?);
        data.seek(target.as_slice());
        data.status()
            .map_err(|e| self.block_error("data block", handle.offset, e))?;
        if !data.valid() || keys::user_key(data.key()) != user_key {
            return Ok(None);
        }
        let tag = keys::tag_of(data.key());
        Ok(Some((tag, SstValue(data.value_block()))))
    }

    /// Reads every block from the file (not the cache) and checks it: crcs, entries in
    /// strictly ascending order, every key inside its index entry's bounds and in the
    /// filter, and the properties matching what the blocks hold. Returns the number of
    /// entries.
    pub fn verify(&self) -> Result<u64> {
        let mut seen = Properties {
            format_version: self.props.format_version,
            compression: self.props.compression,
            identity: self.props.identity,
            ..Properties::default()
        };
        let mut prev_separator: Option<Vec<u8>> = None;
        let mut index = self.index_iter();
        index.seek_to_first();
        while index.valid() {
            let handle = self.handle_at(&index)?;
            let at = handle.offset;
            let fail = |what: &str| {
                self.source
                    .corrupt(format_args!("data block at {at}: {what}"))
            };
            let mut data = BlockIter::new(self.data_block(handle, false)?);
            data.seek_to_first();
            if !data.valid() {
                data.status()
                    .map_err(|e| self.block_error("data block", at, e))?;
                return Err(fail("no entries"));
            }
            if let Some(sep) = &prev_separator
                && keys::compare(data.key(), sep).is_le()
            {
                return Err(fail("first key not after the previous block's index key"));
            }
            while data.valid() {
                let key = data.key();
                if seen.entries > 0 && keys::compare(&seen.largest, key).is_ge() {
                    return Err(fail("keys out of order"));
                }
                if keys::compare(key, index.key()).is_gt() {
                    return Err(fail("key after the block's index key"));
                }
                if let Some(filter) = &self.filter
                    && !filter.may_contain(keys::user_key(key))
                {
                    return Err(fail("a key the filter does not hold"));
                }
                let seq = keys::seq_of(key);
                if seen.entries == 0 {
                    seen.smallest = key.to_vec();
                    (seen.min_seq, seen.max_seq) = (seq, seq);
                }
                seen.entries += 1;
                seen.tombstones += u64::from(keys::kind_of(key) == Kind::Delete);
                seen.raw_key_bytes += key.len() as u64;
                seen.raw_value_bytes += data.value().len() as u64;
                seen.min_seq = seen.min_seq.min(seq);
                seen.max_seq = seen.max_seq.max(seq);
                seen.largest.clear();
                seen.largest.extend_from_slice(key);
                data.next();
            }
            data.status()
                .map_err(|e| self.block_error("data block", at, e))?;
            seen.data_blocks += 1;
            prev_separator = Some(index.key().to_vec());
            index.next();
        }
        index.status().map_err(|e| self.index_error(e))?;
        if seen != self.props {
            return Err(self.source.corrupt(format_args!(
                "the properties block says {:?}, the data blocks hold {seen:?}",
                self.props
            )));
        }
        Ok(seen.entries)
    }
}
