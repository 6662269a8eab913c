//! The memtable's DRAM index, after the seed's semi-persistent memtable: an adaptive
//! radix tree (nodes of 4, 16, 48 and 256 children, compressed paths, leaves as high as
//! their key allows) with one entry per user key. A key with one version is a single
//! word holding its record's address; a key with several holds a small array of
//! (tag, address). Key bytes are not kept in DRAM: they live in the records, and the tree
//! reads them through a [`KeySource`] when it must compare a whole key (at a leaf, and
//! for compressed paths longer than the 8 bytes a node keeps).
//!
//! The tree is single-writer; the memtable puts it behind a lock the commit leader takes
//! once per group, and moves it out from under the lock once nothing inserts any more.
//! Nodes live in per-size arenas and are named by index (`node`), so the tree is plain
//! safe Rust and a reader holding `&Art` sees a consistent tree.

mod bulk;
mod insert;
mod node;
mod slab;
mod versions;
mod walk;

use crate::error::{DbError, Result};
pub use bulk::{BulkEntry, sort_run};
use node::{Arena, NodeRef, Slot, Word};
pub use versions::{Version, VersionList};

/// Where the tree reads the keys of the records it indexes.
pub trait KeySource {
    /// The tag (`(seq << 8) | kind`) and the user key of the record at `rec`, in one read.
    fn record(&self, rec: u64) -> Result<(u64, &[u8])>;

    /// The user key of the record at `rec`.
    fn key(&self, rec: u64) -> Result<&[u8]> {
        Ok(self.record(rec)?.1)
    }
}

/// What the tree holds for one key.
#[derive(Clone, Copy, Debug)]
pub enum Leaf<'a> {
    /// One version: the record at `rec` (its tag is in the record). `pruned` when older
    /// versions of the key in this tree were dropped.
    One { rec: u64, pruned: bool },
    /// Several versions, oldest first.
    Many(&'a VersionList),
}

impl Leaf<'_> {
    /// A record of the key (the newest), to read the key bytes from.
    pub fn any_record(&self) -> u64 {
        match self {
            Leaf::One { rec, .. } => *rec,
            Leaf::Many(list) => list.newest().rec,
        }
    }
}

/// An adaptive radix tree from user keys to their versions.
#[derive(Default)]
pub struct Art {
    arena: Arena,
    root: Word,
    keys: u64,
    versions: u64,
    /// Heap bytes of the version lists' arrays.
    list_bytes: usize,
}

impl Art {
    pub fn new() -> Art {
        Art::default()
    }

    /// Distinct keys.
    pub fn len(&self) -> u64 {
        self.keys
    }

    pub fn is_empty(&self) -> bool {
        self.keys == 0
    }

    /// Versions held (at least one per key).
    pub fn versions(&self) -> u64 {
        self.versions
    }

    /// DRAM the tree occupies, in bytes.
    pub fn dram_bytes(&self) -> usize {
        std::mem::size_of::<Art>() + self.arena.bytes() + self.list_bytes
    }

    /// The versions of `key`, if the tree has any, with the tag of the record whose key
    /// confirmed it (the newest version's), which a reader of a single version needs.
    pub fn get<K: KeySource>(&self, keys: &K, key: &[u8]) -> Result<Option<(Leaf<'_>, u64)>> {
        let mut w = self.root;
        let mut depth = 0;
        loop {
            match w.slot() {
                Slot::Empty => return Ok(None),
                Slot::Node(n) => {
                    let h = self.arena.header(n);
                    let p = h.prefix_len();
                    let inline = h.inline_prefix();
                    // Bytes of the path beyond the inline ones are checked at the leaf.
                    if key.len() < depth + p || key[depth..depth + inline.len()] != *inline {
                        return Ok(None);
                    }
                    depth += p;
                    if key.len() == depth {
                        w = h.end;
                    } else {
                        w = self.arena.find(n, key[depth]);
                        depth += 1;
                    }
                }
                _ => {
                    let leaf = self.leaf(w);
                    let (tag, found) = keys.record(leaf.any_record())?;
                    return Ok((found == key).then_some((leaf, tag)));
                }
            }
        }
    }

    fn leaf(&self, w: Word) -> Leaf<'_> {
        match w.slot() {
            Slot::Record { rec, pruned } => Leaf::One { rec, pruned },
            Slot::List(i) => Leaf::Many(self.arena.list(i)),
            Slot::Empty | Slot::Node(_) => unreachable!("only leaves are read as leaves"),
        }
    }

    /// The compressed path of node `n`, which starts at key byte `depth`: from the node
    /// when it is short, else from the key of a record under the node.
    fn path<'a, K: KeySource>(&'a self, keys: &'a K, n: NodeRef, depth: usize) -> Result<&'a [u8]> {
        let h = self.arena.header(n);
        let p = h.prefix_len();
        if p <= node::INLINE_PREFIX {
            return Ok(h.inline_prefix());
        }
        let key = keys.key(self.record_under(n)?)?;
        key.get(depth..depth + p).ok_or_else(|| {
            DbError::Corrupt(format!(
                "index: a key of {} bytes under a path ending at byte {}",
                key.len(),
                depth + p
            ))
        })
    }

    /// Some record below node `n` (every key below it shares the node's path).
    fn record_under(&self, mut n: NodeRef) -> Result<u64> {
        loop {
            let h = self.arena.header(n);
            let w = if h.end.is_empty() {
                self.arena
                    .next_child(n, 0, true)
                    .map_or(Word::EMPTY, |(_, w)| w)
            } else {
                h.end
            };
            match w.slot() {
                Slot::Node(c) => n = c,
                Slot::Empty => {
                    return Err(DbError::Corrupt(
                        "index: an inner node with no children".into(),
                    ));
                }
                _ => return Ok(self.leaf(w).any_record()),
            }
        }
    }
}

/// Length of the common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests;
