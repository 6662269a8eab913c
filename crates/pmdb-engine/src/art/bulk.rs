//! Building a tree at once from the versions recovery found: they are sorted by key (the
//! first 16 key bytes cached beside each, so most comparisons read no record), only the
//! newest version of each key is kept, and the tree is built top-down over ranges of the
//! sorted input — each node made once, with room for exactly its children, in the order
//! a walk visits them. Inserting the same keys one by one misses the cache at every level
//! of the tree for every key; this reads the input in order.

use std::cell::Cell;
use std::cmp::Ordering;

use smallvec::SmallVec;

use super::node::{Header, Word};
use super::{Art, KeySource, Version};
use crate::error::{DbError, Result};
use crate::keys::compare_user_keys;

/// Key bytes kept in each entry.
const HEAD: usize = 16;
/// Nodes deeper than this on a path are not built recursively: the keys below are
/// inserted one by one afterwards, so a pathological key set (long keys that are
/// prefixes of one another) cannot exhaust the stack.
const MAX_LEVEL: u32 = 64;

/// A version with its key's length and first bytes (big-endian, zero-padded: integer
/// order is byte order).
#[derive(Clone, Copy, Debug)]
pub struct BulkEntry {
    head: u128,
    len: u32,
    pub version: Version,
}

impl BulkEntry {
    pub fn new(key: &[u8], version: Version) -> BulkEntry {
        let mut head = [0; HEAD];
        let n = key.len().min(HEAD);
        head[..n].copy_from_slice(&key[..n]);
        BulkEntry {
            head: u128::from_be_bytes(head),
            len: u32::try_from(key.len()).expect("keys are far below 4 GiB"),
            version,
        }
    }

    fn len(&self) -> usize {
        self.len as usize
    }
}

/// A key's bytes: from the entry when they all fit in it, else from its record.
enum KeyBytes<'a> {
    Inline([u8; HEAD], usize),
    Record(&'a [u8]),
}

impl std::ops::Deref for KeyBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            KeyBytes::Inline(head, len) => &head[..*len],
            KeyBytes::Record(key) => key,
        }
    }
}

fn key_bytes<'a, K: KeySource>(keys: &'a K, e: &BulkEntry) -> Result<KeyBytes<'a>> {
    if e.len() <= HEAD {
        return Ok(KeyBytes::Inline(e.head.to_be_bytes(), e.len()));
    }
    let key = keys.key(e.version.rec)?;
    if key.len() != e.len() {
        return Err(DbError::Corrupt(format!(
            "index: the record at {} changed its key length",
            e.version.rec
        )));
    }
    Ok(KeyBytes::Record(key))
}

/// The key byte at `d`, if the key is longer than `d`.
fn byte_at<K: KeySource>(keys: &K, e: &BulkEntry, d: usize) -> Result<Option<u8>> {
    if d >= e.len() {
        Ok(None)
    } else if d < HEAD {
        Ok(Some((e.head >> (8 * (HEAD - 1 - d))) as u8))
    } else {
        Ok(Some(key_bytes(keys, e)?[d]))
    }
}

/// Key order: by the cached bytes, then — when they tie and a key ends within them, it is
/// a prefix of the other — by length, else by the whole keys. Comparisons that fail (a
/// record that cannot be read) count as equal, and the first failure is kept for
/// `finish`: the order is then meaningless, and so is whatever was sorted by it.
struct Order<'k, K> {
    keys: &'k K,
    failed: Cell<Option<DbError>>,
}

impl<'k, K: KeySource> Order<'k, K> {
    fn new(keys: &'k K) -> Self {
        Order {
            keys,
            failed: Cell::new(None),
        }
    }

    #[inline]
    fn keys(&self, a: &BulkEntry, b: &BulkEntry) -> Ordering {
        if a.head != b.head {
            return a.head.cmp(&b.head);
        }
        if a.len().min(b.len()) <= HEAD {
            return a.len.cmp(&b.len);
        }
        let whole = key_bytes(self.keys, a)
            .and_then(|x| Ok(compare_user_keys(&x, &key_bytes(self.keys, b)?)));
        whole.unwrap_or_else(|e| {
            self.failed.set(Some(e));
            Ordering::Equal
        })
    }

    /// Key order, newest version first.
    #[inline]
    fn versions(&self, a: &BulkEntry, b: &BulkEntry) -> Ordering {
        self.keys(a, b).then(b.version.tag.cmp(&a.version.tag))
    }

    fn finish(self) -> Result<()> {
        self.failed.take().map_or(Ok(()), Err)
    }
}

/// Sorts entries by key, newest version first: a run that a bulk build merges cheaply
/// with others (recovery sorts each zone's run in the task that scanned it).
pub fn sort_run<K: KeySource>(keys: &K, run: &mut [BulkEntry]) -> Result<()> {
    let order = Order::new(keys);
    run.sort_unstable_by(|a, b| order.versions(a, b));
    order.finish()
}

/// Sorts by key, newest version first, and keeps the newest version of each key. The
/// stable sort finds sorted runs and merges them.
fn sort_newest<K: KeySource>(keys: &K, entries: &mut Vec<BulkEntry>) -> Result<()> {
    let order = Order::new(keys);
    entries.sort_by(|a, b| order.versions(a, b));
    entries.dedup_by(|later, kept| order.keys(later, kept) == Ordering::Equal);
    order.finish()
}

impl Art {
    /// A tree holding the newest version of each key of `entries` (in any order).
    pub fn build<K: KeySource>(keys: &K, mut entries: Vec<BulkEntry>) -> Result<Art> {
        sort_newest(keys, &mut entries)?;
        let mut art = Art::new();
        let mut deferred = Vec::new();
        if !entries.is_empty() {
            art.root = art.build_range(keys, &entries, 0, 0, &mut deferred)?;
        }
        for e in deferred {
            let key = key_bytes(keys, &e)?;
            art.insert(keys, &key, e.version, u64::MAX)?;
        }
        Ok(art)
    }

    /// The subtree of the sorted, distinct keys `entries`, which agree on their first
    /// `depth` bytes. Ranges deeper than `MAX_LEVEL` go to `deferred` (and `EMPTY` is
    /// returned for them).
    fn build_range<K: KeySource>(
        &mut self,
        keys: &K,
        entries: &[BulkEntry],
        depth: usize,
        level: u32,
        deferred: &mut Vec<BulkEntry>,
    ) -> Result<Word> {
        if let [only] = entries {
            self.keys += 1;
            self.versions += 1;
            return Ok(Word::record(only.version.rec, false));
        }
        if level > MAX_LEVEL {
            deferred.extend_from_slice(entries);
            return Ok(Word::EMPTY);
        }
        let (first, last) = (&entries[0], &entries[entries.len() - 1]);
        let first_key = key_bytes(keys, first)?;
        let last_key = key_bytes(keys, last)?;
        // Sorted keys share what the first and the last share.
        let common = super::common_prefix(&first_key[depth..], &last_key[depth..]);
        let d = depth + common;
        let header = Header::with_prefix(&first_key[depth..d]);
        // The key that ends at the node, if any, sorts first.
        let (end, rest) = if first.len() == d {
            (Some(first), &entries[1..])
        } else {
            (None, entries)
        };
        let mut groups: SmallVec<[(u8, usize, usize); 16]> = SmallVec::new();
        for (i, e) in rest.iter().enumerate() {
            let b = byte_at(keys, e, d)?.ok_or_else(|| {
                DbError::Corrupt("index: keys out of order in a bulk build".into())
            })?;
            match groups.last_mut() {
                Some((gb, _, until)) if *gb == b => *until = i + 1,
                _ => groups.push((b, i, i + 1)),
            }
        }
        let mut n = self.arena.new_node(header, groups.len());
        if let Some(e) = end {
            self.keys += 1;
            self.versions += 1;
            self.arena.header_mut(n).end = Word::record(e.version.rec, false);
        }
        for (b, from, until) in groups {
            let child = self.build_range(keys, &rest[from..until], d + 1, level + 1, deferred)?;
            if !child.is_empty() {
                n = self.arena.add_child(n, b, child);
            }
        }
        Ok(Word::node(n))
    }
}
