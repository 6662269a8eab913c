//! The table writer: entries in, one file out — data blocks as they fill, then the
//! filter, properties and index blocks and the footer, then a sync. It appends only, so
//! any `WritableFile` will do; naming and publishing the finished file is the caller's.

use pmdb_pmem::WritableFile;

use super::block::BlockBuilder;
use super::filter;
use super::{SstMeta, SstOptions};
use crate::error::{DbError, Result};
use crate::format::record::Kind;
use crate::format::sst::{
    BlockHandle, Compression, FOOTER_LEN, Footer, PROPERTIES_VERSION, Properties, SstIdentity,
    block_trailer, compress_lz4,
};
use crate::keys::{self, IKey};

/// Largest block size an option may ask for.
const MAX_BLOCK_SIZE: usize = 64 << 20;
/// Largest key, and largest value, one entry may have: with the block size bound, a block
/// stays far below the 4 GiB its 32-bit restart offsets can address.
const MAX_ENTRY_PART: usize = 256 << 20;
const MAX_RESTART_INTERVAL: usize = 1 << 10;
const MAX_BLOOM_BITS: u32 = 64;
/// Index entries are few and searched often: each key is stored whole, so a seek
/// binary-searches all of them.
const INDEX_RESTART_INTERVAL: usize = 1;

impl SstOptions {
    fn validate(&self) -> Result<()> {
        let bad = |name, reason: String| Err(DbError::InvalidOption { name, reason });
        if !(1..=MAX_BLOCK_SIZE).contains(&self.block_size) {
            return bad("block_size", format!("must be 1..={MAX_BLOCK_SIZE} bytes"));
        }
        if !(1..=MAX_RESTART_INTERVAL).contains(&self.restart_interval) {
            return bad(
                "restart_interval",
                format!("must be 1..={MAX_RESTART_INTERVAL}"),
            );
        }
        if self.bloom_bits_per_key > MAX_BLOOM_BITS {
            return bad(
                "bloom_bits_per_key",
                format!("must be at most {MAX_BLOOM_BITS}"),
            );
        }
        Ok(())
    }
}

/// Writes blocks with their trailers, compressing those that shrink enough.
struct BlockSink {
    file: Box<dyn WritableFile>,
    scratch: Vec<u8>,
}

impl BlockSink {
    fn write(&mut self, raw: &[u8], compression: Compression) -> Result<BlockHandle> {
        let (stored, kind) = match compression {
            Compression::Lz4 => {
                compress_lz4(raw, &mut self.scratch);
                // Decompression costs every read; a block must save 1/8 to be worth it.
                if self.scratch.len() < raw.len() - raw.len() / 8 {
                    (&self.scratch[..], Compression::Lz4)
                } else {
                    (raw, Compression::None)
                }
            }
            Compression::None => (raw, Compression::None),
        };
        let handle = BlockHandle {
            offset: self.file.len(),
            size: stored.len() as u64,
        };
        self.file.append(stored)?;
        self.file.append(&block_trailer(stored, kind))?;
        Ok(handle)
    }
}

/// Builds one table from entries added in ascending internal-key order. After an error
/// the file is incomplete: drop the writer and the file.
pub(crate) struct SstWriter {
    sink: BlockSink,
    options: SstOptions,
    data: BlockBuilder,
    index: BlockBuilder,
    /// The last data block written, whose index entry waits for the next key: the
    /// separator between the two can then be shorter than the block's last key.
    pending: Option<BlockHandle>,
    last_key: Vec<u8>,
    /// Source hashes of the distinct user keys, for the filter.
    key_hashes: Vec<u64>,
    props: Properties,
    handle_buf: Vec<u8>,
}

impl SstWriter {
    /// A writer of a table into `file`, which must be empty, that belongs where
    /// `identity` says.
    pub fn new(
        file: Box<dyn WritableFile>,
        options: &SstOptions,
        identity: SstIdentity,
    ) -> Result<SstWriter> {
        options.validate()?;
        Ok(SstWriter {
            sink: BlockSink {
                file,
                scratch: Vec::new(),
            },
            options: options.clone(),
            data: BlockBuilder::new(options.restart_interval),
            index: BlockBuilder::new(INDEX_RESTART_INTERVAL),
            pending: None,
            last_key: Vec::new(),
            key_hashes: Vec::new(),
            props: Properties {
                format_version: PROPERTIES_VERSION,
                compression: options.compression,
                identity: Some(identity),
                ..Properties::default()
            },
            handle_buf: Vec::new(),
        })
    }

    /// Adds an entry: `ikey` is an internal key, after every key added so far.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        assert!(ikey.len() >= keys::TAG, "not an internal key: {ikey:?}");
        debug_assert!(
            self.props.entries == 0 || keys::compare(&self.last_key, ikey).is_lt(),
            "keys added out of order"
        );
        if ikey.len() > MAX_ENTRY_PART {
            return Err(DbError::KeyTooLarge {
                len: ikey.len(),
                max: MAX_ENTRY_PART,
            });
        }
        if value.len() > MAX_ENTRY_PART {
            return Err(DbError::ValueTooLarge {
                len: value.len(),
                max: MAX_ENTRY_PART,
            });
        }
        if let Some(handle) = self.pending.take() {
            let separator = separator(&self.last_key, ikey);
            self.add_index_entry(&separator, handle);
        }
        let user = keys::user_key(ikey);
        let first = self.props.entries == 0;
        if self.options.bloom_bits_per_key > 0 && (first || user != keys::user_key(&self.last_key))
        {
            self.key_hashes.push(filter::key_hash(user));
        }
        let seq = keys::seq_of(ikey);
        let p = &mut self.props;
        if first {
            p.smallest = ikey.to_vec();
            (p.min_seq, p.max_seq) = (seq, seq);
        }
        p.entries += 1;
        p.tombstones += u64::from(keys::kind_of(ikey) == Kind::Delete);
        p.raw_key_bytes += ikey.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.min_seq = p.min_seq.min(seq);
        p.max_seq = p.max_seq.max(seq);
        self.data.add(ikey, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        if self.data.estimated_len() >= self.options.block_size {
            self.flush_data()?;
        }
        Ok(())
    }

    /// Bytes the file would have if finished now, about.
    pub fn estimated_len(&self) -> u64 {
        let filter = self.key_hashes.len() as u64 * u64::from(self.options.bloom_bits_per_key) / 8;
        self.sink.file.len()
            + (self.data.estimated_len() + self.index.estimated_len() + FOOTER_LEN) as u64
            + filter
    }

    fn add_index_entry(&mut self, separator: &[u8], handle: BlockHandle) {
        self.handle_buf.clear();
        handle.encode_varint(&mut self.handle_buf);
        self.index.add(separator, &self.handle_buf);
    }

    fn flush_data(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let handle = self
            .sink
            .write(self.data.finish(), self.options.compression)?;
        self.data.reset();
        self.props.data_blocks += 1;
        self.pending = Some(handle);
        Ok(())
    }

    /// Writes the rest of the table and syncs the file.
    pub fn finish(mut self) -> Result<SstMeta> {
        self.flush_data()?;
        if let Some(handle) = self.pending.take() {
            let last = std::mem::take(&mut self.last_key);
            self.add_index_entry(&last, handle);
            self.last_key = last;
        }
        let filter = match self.key_hashes.is_empty() {
            true => None,
            false => {
                let block = filter::build(&self.key_hashes, self.options.bloom_bits_per_key);
                Some(self.sink.write(&block.encode(), Compression::None)?)
            }
        };
        self.props.largest = self.last_key.clone();
        let properties = self.sink.write(&self.props.encode(), Compression::None)?;
        let index = self.sink.write(self.index.finish(), Compression::None)?;
        let footer = Footer {
            index,
            filter,
            properties,
        };
        self.sink.file.append(&footer.encode())?;
        self.sink.file.sync()?;
        let p = self.props;
        Ok(SstMeta {
            file_len: self.sink.file.len(),
            entries: p.entries,
            tombstones: p.tombstones,
            smallest: p.smallest,
            largest: p.largest,
            min_seq: p.min_seq,
            max_seq: p.max_seq,
            raw_key_bytes: p.raw_key_bytes,
            raw_value_bytes: p.raw_value_bytes,
        })
    }
}

/// A key at or after `last` and before `next` (`last < next`), as short as a byte
/// increment makes it: index entries only need to separate blocks, and shorter ones make
/// a smaller index.
fn separator(last: &[u8], next: &[u8]) -> Vec<u8> {
    let (a, b) = (keys::user_key(last), keys::user_key(next));
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if let (Some(&x), Some(&y)) = (a.get(common), b.get(common))
        && x < 0xff
        && x + 1 < y
    {
        // Before every version of a user key greater than `last`'s and less than
        // `next`'s.
        let mut short = a[..=common].to_vec();
        short[common] += 1;
        let sep = IKey::first_of(&short).as_slice().to_vec();
        debug_assert!(keys::compare(last, &sep).is_lt() && keys::compare(&sep, next).is_lt());
        return sep;
    }
    last.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ik(user: &[u8], seq: u64) -> Vec<u8> {
        IKey::new(user, seq, Kind::Put).as_slice().to_vec()
    }

    #[test]
    fn separators_are_short_and_between() {
        let cases: [(&[u8], &[u8], &[u8]); 6] = [
            (b"apple", b"cherry", b"b"),
            (b"apple", b"banana", b"apple"),
            (b"user0042xyz", b"user0097", b"user005"),
            (b"abc", b"abd", b"abc"),
            (b"ab", b"abc", b"ab"),
            (b"a\xff", b"b", b"a\xff"),
        ];
        for (last, next, want) in cases {
            let (l, n) = (ik(last, 5), ik(next, 9));
            let sep = separator(&l, &n);
            assert_eq!(keys::user_key(&sep), want, "{last:?} .. {next:?}");
            assert!(keys::compare(&l, &sep).is_le() && keys::compare(&sep, &n).is_lt());
        }
        let (newer, older) = (ik(b"k", 9), ik(b"k", 5));
        assert_eq!(separator(&newer, &older), newer);
    }

    #[test]
    fn options_are_checked() {
        let bad = [
            SstOptions {
                block_size: 0,
                ..SstOptions::default()
            },
            SstOptions {
                restart_interval: 0,
                ..SstOptions::default()
            },
            SstOptions {
                bloom_bits_per_key: 65,
                ..SstOptions::default()
            },
        ];
        for o in bad {
            assert!(o.validate().is_err(), "{o:?}");
        }
        assert!(SstOptions::default().validate().is_ok());
    }
}
