//! Blocks of sorted entries, the unit data and index blocks are made of: each entry is
//! `shared | unshared | value_len` (varints), the key bytes not shared with the previous
//! key, and the value; every `restart_interval` entries a key is stored whole (a restart
//! point), and the block ends with the restart offsets (u32 each) and their count. A
//! reader binary-searches the restart points, then scans at most one interval.
//!
//! This module owns the block bytes handed out without copying ([`Block`]), the builder,
//! the parsed block ([`DataBlock`]) and its cursor ([`BlockIter`]). Block contents are
//! checksummed before they get here, yet every offset, length and count is still checked
//! against the bytes present: a block that decodes wrongly gives a [`FormatError`], never
//! a panic.

use std::ops::{Deref, Range};
use std::sync::Arc;

use pmdb_pmem::FileBytes;

use crate::format::FormatError;
use crate::format::sst::{get_varint, put_varint};
use crate::keys;

/// Bytes of a restart offset, and of the count at the end.
const U32: usize = 4;

#[derive(Clone)]
enum Backing {
    /// The file's shared read-only mapping.
    Mapped(FileBytes),
    /// A buffer of our own: read, copied or decompressed.
    Owned(Arc<[u8]>),
}

/// Bytes of a block (or of a part of one), shared: a range of the file's mapping or of a
/// buffer. Cloning shares; holding one keeps the bytes alive.
#[derive(Clone)]
pub(crate) struct Block {
    backing: Backing,
    /// Always inside the backing bytes (checked where made).
    range: Range<usize>,
}

impl Block {
    /// The bytes `range` of the mapping `map`, if they lie inside it.
    pub fn mapped(map: FileBytes, range: Range<usize>) -> Option<Block> {
        let len = (*map).as_ref().len();
        (range.start <= range.end && range.end <= len).then_some(Block {
            backing: Backing::Mapped(map),
            range,
        })
    }

    pub fn owned(bytes: Arc<[u8]>) -> Block {
        let range = 0..bytes.len();
        Block {
            backing: Backing::Owned(bytes),
            range,
        }
    }

    /// The bytes `range` of this block, sharing them. `range` must lie inside the block.
    pub fn slice(&self, range: Range<usize>) -> Block {
        assert!(range.start <= range.end && range.end <= self.len());
        Block {
            backing: self.backing.clone(),
            range: self.range.start + range.start..self.range.start + range.end,
        }
    }

    /// Whether the bytes are the file's mapping, not a copy.
    #[cfg(test)]
    pub fn is_mapped(&self) -> bool {
        matches!(self.backing, Backing::Mapped(_))
    }
}

impl Deref for Block {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        let all = match &self.backing {
            Backing::Mapped(map) => (**map).as_ref(),
            Backing::Owned(buf) => buf,
        };
        &all[self.range.clone()]
    }
}

/// Builds one block, entry by entry, in ascending key order.
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    /// Entries since the last restart point.
    counter: usize,
    interval: usize,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    pub fn new(restart_interval: usize) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            interval: restart_interval.max(1),
            last_key: Vec::new(),
        }
    }

    /// Adds an entry. The caller keeps the block far below 4 GiB (restart offsets are
    /// 32-bit) and adds keys in ascending order.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter < self.interval {
            let max = self.last_key.len().min(key.len());
            (0..max)
                .find(|&i| self.last_key[i] != key[i])
                .unwrap_or(max)
        } else {
            let at = u32::try_from(self.buf.len()).expect("blocks stay below 4 GiB");
            self.restarts.push(at);
            self.counter = 0;
            0
        };
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (key.len() - shared) as u64);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.counter += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes the block would take if finished now.
    pub fn estimated_len(&self) -> usize {
        self.buf.len() + U32 * (self.restarts.len() + 1)
    }

    /// Appends the restart array and returns the finished block; [`Self::reset`] starts
    /// the next one.
    pub fn finish(&mut self) -> &[u8] {
        for r in &self.restarts {
            self.buf.extend_from_slice(&r.to_le_bytes());
        }
        let count = u32::try_from(self.restarts.len()).expect("blocks stay below 4 GiB");
        self.buf.extend_from_slice(&count.to_le_bytes());
        &self.buf
    }

    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
    }
}

fn u32_le(b: &[u8], at: usize) -> usize {
    let mut w = [0u8; U32];
    w.copy_from_slice(&b[at..at + U32]);
    u32::from_le_bytes(w) as usize
}

/// A block whose restart array has been checked: cheap to clone (the bytes are shared),
/// what the block cache holds.
#[derive(Clone)]
pub(crate) struct DataBlock {
    bytes: Block,
    /// Where the entries end and the restart array starts.
    entries_end: usize,
    /// Restart points: at least 1.
    count: usize,
}

impl DataBlock {
    /// Checks the restart array: a count that fits the block, offsets that start at 0,
    /// increase, and point into the entries (an empty block has the one restart 0).
    pub fn parse(bytes: Block) -> Result<DataBlock, FormatError> {
        let len = bytes.len();
        if len < 2 * U32 {
            return Err(FormatError::Truncated {
                needed: (2 * U32) as u64,
                found: len as u64,
            });
        }
        let count = u32_le(&bytes, len - U32);
        let entries_end = count
            .checked_add(1)
            .and_then(|n| n.checked_mul(U32))
            .and_then(|n| len.checked_sub(n))
            .ok_or(FormatError::Invalid("block restart count"))?;
        if count == 0 {
            return Err(FormatError::Invalid("block restart count"));
        }
        let block = DataBlock {
            bytes,
            entries_end,
            count,
        };
        let mut prev = None;
        for i in 0..count {
            let r = block.restart(i);
            let ok = match prev {
                None => r == 0,
                Some(p) => r > p && r < entries_end,
            };
            if !ok {
                return Err(FormatError::Invalid("block restart points"));
            }
            prev = Some(r);
        }
        Ok(block)
    }

    fn restart(&self, i: usize) -> usize {
        u32_le(&self.bytes, self.entries_end + U32 * i)
    }

    /// Bytes of the block, for the cache's weight.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    fn entries(&self) -> &[u8] {
        &self.bytes[..self.entries_end]
    }
}

/// One decoded entry: how much of the previous key it keeps, and where its key suffix
/// and value lie in the block.
struct Entry {
    shared: usize,
    suffix: Range<usize>,
    value: Range<usize>,
}

/// Decodes the entry at `at` of `entries`, whose previous key is `prev_len` bytes long.
fn decode_entry(entries: &[u8], at: usize, prev_len: usize) -> Result<Entry, FormatError> {
    let mut p = at;
    let shared = get_varint(entries, &mut p)?;
    let unshared = get_varint(entries, &mut p)?;
    let value_len = get_varint(entries, &mut p)?;
    if shared > prev_len as u64 {
        return Err(FormatError::Invalid(
            "block entry: shares more than the previous key",
        ));
    }
    let past = |n: u64, from: usize| {
        usize::try_from(n)
            .ok()
            .and_then(|n| from.checked_add(n))
            .filter(|&end| end <= entries.len())
            .ok_or(FormatError::Invalid(
                "block entry: past the end of the entries",
            ))
    };
    let key_end = past(unshared, p)?;
    let value_end = past(value_len, key_end)?;
    if shared as usize + (key_end - p) < keys::TAG {
        return Err(FormatError::Invalid(
            "block entry: key shorter than its tag",
        ));
    }
    Ok(Entry {
        shared: shared as usize,
        suffix: p..key_end,
        value: key_end..value_end,
    })
}

/// A cursor over one block, ordered by `keys::compare`. Owns its block, so it can live
/// as long as its holder wants. An entry that does not decode leaves it invalid for good,
/// with the reason in [`Self::status`].
pub(crate) struct BlockIter {
    block: DataBlock,
    /// Offset of the current entry; `entries_end` when not on one.
    current: usize,
    /// Offset of the entry after the current one.
    next: usize,
    /// The last restart point at or before `current`.
    restart_index: usize,
    key: Vec<u8>,
    value: Range<usize>,
    error: Option<FormatError>,
}

impl BlockIter {
    /// An unpositioned cursor over `block`.
    pub fn new(block: DataBlock) -> BlockIter {
        let end = block.entries_end;
        BlockIter {
            block,
            current: end,
            next: end,
            restart_index: 0,
            key: Vec::new(),
            value: 0..0,
            error: None,
        }
    }

    pub fn valid(&self) -> bool {
        self.error.is_none() && self.current < self.block.entries_end
    }

    pub fn status(&self) -> Result<(), FormatError> {
        self.error.map_or(Ok(()), Err)
    }

    /// The current key. Requires `valid()`.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current value. Requires `valid()`.
    pub fn value(&self) -> &[u8] {
        &self.block.bytes[self.value.clone()]
    }

    /// The current value, sharing the block's bytes. Requires `valid()`.
    pub fn value_block(&self) -> Block {
        self.block.bytes.slice(self.value.clone())
    }

    fn fail(&mut self, e: FormatError) {
        self.error.get_or_insert(e);
        self.current = self.block.entries_end;
        self.next = self.block.entries_end;
        self.key.clear();
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.restart_index = i;
        self.next = self.block.restart(i);
    }

    /// Moves to the entry at `next`; false at the end or on an error.
    fn parse_next(&mut self) -> bool {
        self.current = self.next;
        if self.error.is_some() || self.current >= self.block.entries_end {
            self.current = self.block.entries_end;
            return false;
        }
        let entry = match decode_entry(self.block.entries(), self.current, self.key.len()) {
            Ok(entry) => entry,
            Err(e) => {
                self.fail(e);
                return false;
            }
        };
        self.key.truncate(entry.shared);
        self.key
            .extend_from_slice(&self.block.bytes[entry.suffix.clone()]);
        self.value = entry.value.clone();
        self.next = entry.value.end;
        while self.restart_index + 1 < self.block.count
            && self.block.restart(self.restart_index + 1) <= self.current
        {
            self.restart_index += 1;
        }
        true
    }

    /// The whole key stored at restart point `i`.
    fn restart_key(&self, i: usize) -> Result<&[u8], FormatError> {
        let entry = decode_entry(self.block.entries(), self.block.restart(i), 0)?;
        Ok(&self.block.entries()[entry.suffix])
    }

    pub fn seek_to_first(&mut self) {
        self.seek_to_restart(0);
        self.parse_next();
    }

    pub fn seek_to_last(&mut self) {
        self.seek_to_restart(self.block.count - 1);
        while self.parse_next() && self.next < self.block.entries_end {}
    }

    /// Moves to the first entry at or after `target`.
    pub fn seek(&mut self, target: &[u8]) {
        // The last restart point whose key is before the target: the first key at or
        // after it lies in that interval or is the next restart point's.
        let (mut left, mut right) = (0, self.block.count - 1);
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            match self.restart_key(mid) {
                Ok(key) if keys::compare(key, target).is_lt() => left = mid,
                Ok(_) => right = mid - 1,
                Err(e) => return self.fail(e),
            }
        }
        self.seek_to_restart(left);
        while self.parse_next() {
            if keys::compare(&self.key, target).is_ge() {
                return;
            }
        }
    }

    /// Moves to the last entry at or before `target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.valid() {
            if keys::compare(&self.key, target).is_gt() {
                self.prev();
            }
        } else if self.error.is_none() {
            self.seek_to_last();
        }
    }

    /// Requires `valid()`.
    pub fn next(&mut self) {
        self.parse_next();
    }

    /// Requires `valid()`. Entries only decode forward, so this rescans from the restart
    /// point before the current entry.
    pub fn prev(&mut self) {
        let original = self.current;
        while self.block.restart(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.current = self.block.entries_end;
                self.next = self.block.entries_end;
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index);
        while self.parse_next() && self.next < original {}
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::format::record::Kind;
    use crate::format::testing::fuzz_config;
    use crate::keys::IKey;

    fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> DataBlock {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in entries {
            b.add(k, v);
        }
        DataBlock::parse(Block::owned(b.finish().into())).unwrap()
    }

    fn entries(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..n)
            .map(|i| {
                let key = format!("key{:04}", i / 2);
                let ikey = IKey::new(key.as_bytes(), 1000 - i as u64, Kind::Put);
                (ikey.as_slice().to_vec(), vec![i as u8; i % 5])
            })
            .collect()
    }

    fn collect_forward(it: &mut BlockIter) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push(it.key().to_vec());
            it.next();
        }
        out
    }

    #[test]
    fn entries_share_prefixes_between_restarts() {
        let e = entries(40);
        let mut b = BlockBuilder::new(16);
        for (k, v) in &e {
            b.add(k, v);
        }
        let whole: usize = e.iter().map(|(k, v)| k.len() + v.len()).sum();
        assert!(b.estimated_len() < whole, "prefixes are not shared");
        let block = DataBlock::parse(Block::owned(b.finish().into())).unwrap();
        assert_eq!(block.count, 3);
    }

    #[test]
    fn iterates_both_ways_and_seeks_at_every_interval() {
        for interval in [1, 2, 3, 16, 100] {
            for n in [0, 1, 2, 15, 16, 17, 50] {
                let e = entries(n);
                let block = build(&e, interval);
                let mut it = BlockIter::new(block);
                let keys: Vec<_> = e.iter().map(|(k, _)| k.clone()).collect();
                assert_eq!(collect_forward(&mut it), keys);
                let mut back = Vec::new();
                it.seek_to_last();
                while it.valid() {
                    back.push((it.key().to_vec(), it.value().to_vec()));
                    it.prev();
                }
                back.reverse();
                assert_eq!(back, e, "interval {interval}, {n} entries");
                for (i, (k, v)) in e.iter().enumerate() {
                    it.seek(k);
                    assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
                    it.seek_for_prev(k);
                    assert_eq!(it.key(), &k[..]);
                    let user = keys::user_key(k);
                    it.seek(IKey::first_of(user).as_slice());
                    assert_eq!(it.key(), &e[i & !1].0[..]);
                    it.seek_for_prev(IKey::last_of(user).as_slice());
                    assert_eq!(it.key(), &e[(i | 1).min(n - 1)].0[..]);
                }
                it.seek(IKey::first_of(b"zzz").as_slice());
                assert!(!it.valid());
                it.seek_for_prev(IKey::first_of(b"a").as_slice());
                assert!(!it.valid());
                assert_eq!(it.status(), Ok(()));
            }
        }
    }

    #[test]
    fn values_are_shared_not_copied() {
        let e = entries(10);
        let mut it = BlockIter::new(build(&e, 4));
        it.seek(&e[7].0);
        let v = it.value_block();
        drop(it);
        assert_eq!(&v[..], &e[7].1[..]);
    }

    #[test]
    fn bad_restart_arrays_are_refused() {
        let good = {
            let mut b = BlockBuilder::new(2);
            for (k, v) in entries(6) {
                b.add(&k, &v);
            }
            b.finish().to_vec()
        };
        let parse = |b: &[u8]| DataBlock::parse(Block::owned(b.into()));
        assert!(parse(&good).is_ok());
        let n = good.len();
        let mut count = good.clone();
        count[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse(&count).is_err());
        count[n - 4..].copy_from_slice(&0u32.to_le_bytes());
        assert!(parse(&count).is_err());
        let mut order = good.clone();
        // Restart point 1 (at n - 12) equal to restart point 0.
        order[n - 12..n - 8].copy_from_slice(&0u32.to_le_bytes());
        assert!(parse(&order).is_err());
        let mut past = good.clone();
        past[n - 8..n - 4].copy_from_slice(&((n - 16) as u32).to_le_bytes());
        assert!(parse(&past).is_err());
        assert!(parse(&[0; 7]).is_err());
        assert!(parse(&[0, 0, 0, 0, 1, 0, 0, 0]).is_ok(), "the empty block");
    }

    proptest! {
        #![proptest_config(fuzz_config())]

        #[test]
        fn arbitrary_blocks_never_panic(
            mut bytes in prop::collection::vec(any::<u8>(), 0..200),
            count in 1u32..6,
            target in prop::collection::vec(any::<u8>(), 8..20),
        ) {
            // Give many cases a plausible restart array, so the entries get decoded.
            if bytes.len() >= 40 && count > 1 {
                let n = bytes.len();
                bytes[n - 4..].copy_from_slice(&count.to_le_bytes());
                let starts = n - 4 * (count as usize + 1);
                for i in 0..count as usize {
                    let r = (i * 7) as u32;
                    bytes[starts + 4 * i..starts + 4 * i + 4].copy_from_slice(&r.to_le_bytes());
                }
            }
            let Ok(block) = DataBlock::parse(Block::owned(bytes.into())) else {
                return Ok(());
            };
            let mut it = BlockIter::new(block);
            let mut steps = 0;
            it.seek_to_first();
            while it.valid() {
                let _ = (it.key(), it.value());
                it.next();
                steps += 1;
            }
            it.seek_to_last();
            while it.valid() && steps < 1000 {
                it.prev();
                steps += 1;
            }
            it.seek(&target);
            it.seek_for_prev(&target);
            if it.valid() {
                it.next();
            }
        }

        #[test]
        fn random_blocks_match_their_entries(
            mut user_keys in prop::collection::btree_set(prop::collection::vec(0..3u8, 0..6), 0..60),
            interval in 1usize..20,
            targets in prop::collection::vec((prop::collection::vec(0..3u8, 0..6), any::<u16>()), 1..20),
        ) {
            let e: Vec<(Vec<u8>, Vec<u8>)> = std::mem::take(&mut user_keys)
                .into_iter()
                .enumerate()
                .map(|(i, k)| (IKey::new(&k, i as u64, Kind::Put).as_slice().to_vec(), k))
                .collect();
            let mut it = BlockIter::new(build(&e, interval));
            for (user, seq) in targets {
                let target = IKey::new(&user, u64::from(seq % 64), Kind::Put);
                let t = target.as_slice();
                let at = e.partition_point(|(k, _)| keys::compare(k, t).is_lt());
                it.seek(t);
                prop_assert_eq!(it.valid().then(|| it.key().to_vec()), e.get(at).map(|x| x.0.clone()));
                let before = e.partition_point(|(k, _)| keys::compare(k, t).is_le());
                it.seek_for_prev(t);
                let want = before.checked_sub(1).map(|i| e[i].0.clone());
                prop_assert_eq!(it.valid().then(|| it.key().to_vec()), want);
                if it.valid() {
                    it.prev();
                    let want = before.checked_sub(2).map(|i| e[i].0.clone());
                    prop_assert_eq!(it.valid().then(|| it.key().to_vec()), want);
                }
            }
        }
    }
}
