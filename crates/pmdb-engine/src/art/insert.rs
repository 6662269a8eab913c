//! Inserting a version: a new key becomes a leaf (splitting a leaf or a compressed path
//! where it diverges); a version of a key the tree has joins its version list, which
//! drops what no reader can see.

use smallvec::SmallVec;

use super::node::{Header, NodeRef, Slot, Word};
use super::{Art, KeySource, Version, VersionList, common_prefix};
use crate::error::{DbError, Result};

/// Where a child word lives: the root, a node's child under a byte, or a node's slot
/// for the key that ends at it.
#[derive(Clone, Copy)]
enum Loc {
    Root,
    Child(NodeRef, u8),
    End(NodeRef),
}

fn corrupt(what: &str) -> DbError {
    DbError::Corrupt(format!("index: {what}"))
}

impl Art {
    fn store(&mut self, loc: Loc, w: Word) {
        match loc {
            Loc::Root => self.root = w,
            Loc::Child(n, b) => self.arena.set_child(n, b, w),
            Loc::End(n) => self.arena.header_mut(n).end = w,
        }
    }

    /// Puts `w` (for a key continuing past byte `d`, or ending there) into node `n`.
    fn place(&mut self, n: NodeRef, key: &[u8], d: usize, w: Word) -> NodeRef {
        match key.get(d) {
            None => {
                self.arena.header_mut(n).end = w;
                n
            }
            Some(&b) => self.arena.add_child(n, b, w),
        }
    }

    /// Adds version `v` of `key` (the key of the record at `v.rec`). Versions of the key
    /// older than its newest one at or below `horizon` are dropped: pass the oldest
    /// sequence number any reader may still read at.
    pub fn insert<K: KeySource>(
        &mut self,
        keys: &K,
        key: &[u8],
        v: Version,
        horizon: u64,
    ) -> Result<()> {
        if v.rec & 7 != 0 {
            return Err(corrupt("a record address that is not 8-byte aligned"));
        }
        let leaf = Word::record(v.rec, false);
        let mut loc = Loc::Root;
        let mut w = self.root;
        let mut depth = 0;
        loop {
            match w.slot() {
                Slot::Empty => {
                    self.store(loc, leaf);
                    return self.count_new_key();
                }
                Slot::Node(n) => {
                    let p = self.arena.header(n).prefix_len();
                    let path = self.path(keys, n, depth)?;
                    let rest = key
                        .get(depth..)
                        .ok_or_else(|| corrupt("a key shorter than its path"))?;
                    let i = common_prefix(path, rest);
                    if i < p {
                        // The key leaves the compressed path at byte i: a new node takes
                        // the shared part, the old one keeps what follows byte i.
                        let path: SmallVec<[u8; 32]> = SmallVec::from_slice(path);
                        let parent = self.arena.new_node4(Header::with_prefix(&path[..i]));
                        let rest_of_path = Header::with_prefix(&path[i + 1..]);
                        let h = self.arena.header_mut(n);
                        (h.prefix_len, h.prefix) = (rest_of_path.prefix_len, rest_of_path.prefix);
                        let parent = self.arena.add_child(parent, path[i], Word::node(n));
                        let parent = self.place(parent, key, depth + i, leaf);
                        self.store(loc, Word::node(parent));
                        return self.count_new_key();
                    }
                    depth += p;
                    let Some(&b) = key.get(depth) else {
                        loc = Loc::End(n);
                        w = self.arena.header(n).end;
                        continue;
                    };
                    let child = self.arena.find(n, b);
                    if child.is_empty() {
                        let grown = self.arena.add_child(n, b, leaf);
                        if grown != n {
                            self.store(loc, Word::node(grown));
                        }
                        return self.count_new_key();
                    }
                    (loc, w) = (Loc::Child(n, b), child);
                    depth += 1;
                }
                _ => {
                    let (other_tag, other) = keys.record(self.leaf(w).any_record())?;
                    if other == key {
                        return self.add_version(loc, w, other_tag, v, horizon);
                    }
                    if matches!(loc, Loc::End(_)) {
                        return Err(corrupt("two keys ending at the same node"));
                    }
                    // Two keys share this slot: a node takes their common bytes.
                    let (a, b) = (other.get(depth..), &key[depth..]);
                    let a = a.ok_or_else(|| corrupt("a key shorter than its path"))?;
                    let d = depth + common_prefix(a, b);
                    let n = self.arena.new_node4(Header::with_prefix(&key[depth..d]));
                    let n = self.place(n, other, d, w);
                    let n = self.place(n, key, d, leaf);
                    self.store(loc, Word::node(n));
                    return self.count_new_key();
                }
            }
        }
    }

    fn count_new_key(&mut self) -> Result<()> {
        self.keys += 1;
        self.versions += 1;
        Ok(())
    }

    /// Adds `v` to the versions of the key whose leaf `w` is at `loc`; `newest_tag` is
    /// the tag of the leaf's newest record, read when its key was compared.
    fn add_version(
        &mut self,
        loc: Loc,
        w: Word,
        newest_tag: u64,
        v: Version,
        horizon: u64,
    ) -> Result<()> {
        let mut list = match w.slot() {
            Slot::Record { rec, pruned } => VersionList::one(
                Version {
                    tag: newest_tag,
                    rec,
                },
                pruned,
            ),
            Slot::List(i) => {
                let list = self.arena.free_list(i);
                self.list_bytes -= list.heap_bytes();
                list
            }
            Slot::Empty | Slot::Node(_) => unreachable!("add_version is called on leaves"),
        };
        let before = list.versions().len() as u64;
        list.add(v, horizon);
        let after = list.versions().len() as u64;
        self.versions = self.versions + after - before;
        let w = if after == 1 {
            Word::record(list.newest().rec, list.pruned())
        } else {
            self.list_bytes += list.heap_bytes();
            Word::list(self.arena.put_list(list))
        };
        self.store(loc, w);
        Ok(())
    }
}
