//! The tree's storage: child words and the four node sizes, kept in per-size arenas and
//! named by index, so a node costs no allocation of its own and the whole tree is freed
//! at once.
//!
//! A child word is one `u64` whose low three bits say what it holds: nothing, a record
//! (its address — records are 8-byte aligned, so the low bits are free), a record whose
//! older versions were dropped, a version list, or an inner node of one of four sizes.

use super::slab::Slab;
use super::versions::VersionList;

/// Bytes of a node's key prefix kept in the node; a longer prefix is read from a record
/// under the node when it must be compared.
pub(crate) const INLINE_PREFIX: usize = 8;

const TAG_BITS: u32 = 3;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
const RECORD: u64 = 1;
const LIST: u64 = 2;
const N4: u64 = 3;
const N16: u64 = 4;
const N48: u64 = 5;
const N256: u64 = 6;
const RECORD_PRUNED: u64 = 7;

/// A child slot's content.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Word(u64);

/// What a child word holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Slot {
    Empty,
    /// One version, in the record at this address; `pruned` when older versions of the
    /// key in this tree were dropped.
    Record {
        rec: u64,
        pruned: bool,
    },
    List(u32),
    Node(NodeRef),
}

/// An inner node: its size class and index in that class's arena.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum NodeRef {
    N4(u32),
    N16(u32),
    N48(u32),
    N256(u32),
}

impl Word {
    pub const EMPTY: Word = Word(0);

    pub fn record(rec: u64, pruned: bool) -> Word {
        debug_assert_eq!(rec & TAG_MASK, 0, "record addresses are 8-byte aligned");
        Word(rec | if pruned { RECORD_PRUNED } else { RECORD })
    }

    pub fn list(i: u32) -> Word {
        Word((u64::from(i) << TAG_BITS) | LIST)
    }

    pub fn node(n: NodeRef) -> Word {
        let (tag, i) = match n {
            NodeRef::N4(i) => (N4, i),
            NodeRef::N16(i) => (N16, i),
            NodeRef::N48(i) => (N48, i),
            NodeRef::N256(i) => (N256, i),
        };
        Word((u64::from(i) << TAG_BITS) | tag)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn slot(self) -> Slot {
        let i = (self.0 >> TAG_BITS) as u32;
        match self.0 & TAG_MASK {
            0 => Slot::Empty,
            RECORD => Slot::Record {
                rec: self.0 & !TAG_MASK,
                pruned: false,
            },
            RECORD_PRUNED => Slot::Record {
                rec: self.0 & !TAG_MASK,
                pruned: true,
            },
            LIST => Slot::List(i),
            N4 => Slot::Node(NodeRef::N4(i)),
            N16 => Slot::Node(NodeRef::N16(i)),
            N48 => Slot::Node(NodeRef::N48(i)),
            _ => Slot::Node(NodeRef::N256(i)),
        }
    }
}

/// What every inner node has: its compressed path and the slot of the key that ends at
/// the node (a key that is a prefix of others).
#[derive(Clone, Default)]
pub(crate) struct Header {
    /// Length of the compressed path; its first `INLINE_PREFIX` bytes are in `prefix`.
    pub prefix_len: u32,
    pub prefix: [u8; INLINE_PREFIX],
    pub count: u16,
    pub end: Word,
}

impl Header {
    /// A header for the compressed path `path` (only its first bytes are kept).
    pub fn with_prefix(path: &[u8]) -> Header {
        let mut h = Header {
            prefix_len: u32::try_from(path.len()).expect("keys are far below 4 GiB"),
            ..Header::default()
        };
        let n = path.len().min(INLINE_PREFIX);
        h.prefix[..n].copy_from_slice(&path[..n]);
        h
    }

    pub fn prefix_len(&self) -> usize {
        self.prefix_len as usize
    }

    /// The bytes of the path kept in the node.
    pub fn inline_prefix(&self) -> &[u8] {
        &self.prefix[..self.prefix_len().min(INLINE_PREFIX)]
    }
}

/// Up to 4 children, bytes sorted.
#[derive(Clone, Default)]
pub(crate) struct Node4 {
    pub h: Header,
    keys: [u8; 4],
    children: [Word; 4],
}

/// Up to 16 children, bytes sorted.
#[derive(Clone)]
pub(crate) struct Node16 {
    pub h: Header,
    keys: [u8; 16],
    children: [Word; 16],
}

/// Up to 48 children, found through a 256-byte map of slot numbers (0: none).
#[derive(Clone)]
pub(crate) struct Node48 {
    pub h: Header,
    index: [u8; 256],
    children: [Word; 48],
}

/// A child per byte value.
#[derive(Clone)]
pub(crate) struct Node256 {
    pub h: Header,
    children: [Word; 256],
}

/// The sorted-array node sizes share their search and insert.
fn sorted_find(keys: &[u8], children: &[Word], count: usize, byte: u8) -> Word {
    keys[..count]
        .iter()
        .position(|&k| k == byte)
        .map_or(Word::EMPTY, |i| children[i])
}

fn sorted_insert(keys: &mut [u8], children: &mut [Word], count: usize, byte: u8, w: Word) {
    let at = keys[..count]
        .iter()
        .position(|&k| k > byte)
        .unwrap_or(count);
    keys.copy_within(at..count, at + 1);
    children.copy_within(at..count, at + 1);
    keys[at] = byte;
    children[at] = w;
}

fn sorted_set(keys: &[u8], children: &mut [Word], count: usize, byte: u8, w: Word) {
    let i = keys[..count]
        .iter()
        .position(|&k| k == byte)
        .expect("the child being replaced exists");
    children[i] = w;
}

/// The first child at or after `from` (`forward`) or at or before it.
fn sorted_next(
    keys: &[u8],
    children: &[Word],
    count: usize,
    from: u8,
    forward: bool,
) -> Option<(u8, Word)> {
    let keys = &keys[..count];
    let i = if forward {
        keys.iter().position(|&k| k >= from)?
    } else {
        keys.iter().rposition(|&k| k <= from)?
    };
    Some((keys[i], children[i]))
}

/// The per-size arenas.
#[derive(Default)]
pub(crate) struct Arena {
    n4: Slab<Node4>,
    n16: Slab<Node16>,
    n48: Slab<Node48>,
    n256: Slab<Node256>,
    lists: Slab<VersionList>,
}

impl Arena {
    pub fn header(&self, n: NodeRef) -> &Header {
        match n {
            NodeRef::N4(i) => &self.n4.get(i).h,
            NodeRef::N16(i) => &self.n16.get(i).h,
            NodeRef::N48(i) => &self.n48.get(i).h,
            NodeRef::N256(i) => &self.n256.get(i).h,
        }
    }

    pub fn header_mut(&mut self, n: NodeRef) -> &mut Header {
        match n {
            NodeRef::N4(i) => &mut self.n4.get_mut(i).h,
            NodeRef::N16(i) => &mut self.n16.get_mut(i).h,
            NodeRef::N48(i) => &mut self.n48.get_mut(i).h,
            NodeRef::N256(i) => &mut self.n256.get_mut(i).h,
        }
    }

    /// A new node of 4 with the given header and no children.
    pub fn new_node4(&mut self, h: Header) -> NodeRef {
        let node = Node4 {
            h,
            ..Node4::default()
        };
        NodeRef::N4(self.n4.put(node))
    }

    /// A new node with the given header, of the smallest size that holds `children`.
    pub fn new_node(&mut self, h: Header, children: usize) -> NodeRef {
        match children {
            0..=4 => self.new_node4(h),
            5..=16 => NodeRef::N16(self.n16.put(Node16 {
                h,
                keys: [0; 16],
                children: [Word::EMPTY; 16],
            })),
            17..=48 => NodeRef::N48(self.n48.put(Node48 {
                h,
                index: [0; 256],
                children: [Word::EMPTY; 48],
            })),
            _ => NodeRef::N256(self.n256.put(Node256 {
                h,
                children: [Word::EMPTY; 256],
            })),
        }
    }

    /// The child under `byte`, or `EMPTY`.
    pub fn find(&self, n: NodeRef, byte: u8) -> Word {
        match n {
            NodeRef::N4(i) => {
                let x = self.n4.get(i);
                sorted_find(&x.keys, &x.children, x.h.count as usize, byte)
            }
            NodeRef::N16(i) => {
                let x = self.n16.get(i);
                sorted_find(&x.keys, &x.children, x.h.count as usize, byte)
            }
            NodeRef::N48(i) => {
                let x = self.n48.get(i);
                match x.index[byte as usize] {
                    0 => Word::EMPTY,
                    s => x.children[s as usize - 1],
                }
            }
            NodeRef::N256(i) => self.n256.get(i).children[byte as usize],
        }
    }

    /// Replaces the existing child under `byte`.
    pub fn set_child(&mut self, n: NodeRef, byte: u8, w: Word) {
        match n {
            NodeRef::N4(i) => {
                let x = self.n4.get_mut(i);
                sorted_set(&x.keys, &mut x.children, x.h.count as usize, byte, w);
            }
            NodeRef::N16(i) => {
                let x = self.n16.get_mut(i);
                sorted_set(&x.keys, &mut x.children, x.h.count as usize, byte, w);
            }
            NodeRef::N48(i) => {
                let x = self.n48.get_mut(i);
                let s = x.index[byte as usize];
                debug_assert_ne!(s, 0, "the child being replaced exists");
                x.children[s as usize - 1] = w;
            }
            NodeRef::N256(i) => self.n256.get_mut(i).children[byte as usize] = w,
        }
    }

    /// Adds a child under a byte that has none, growing the node when it is full; returns
    /// the node, which is a new one if it grew (the caller re-links it).
    pub fn add_child(&mut self, n: NodeRef, byte: u8, w: Word) -> NodeRef {
        let n = if self.is_full(n) { self.grow(n) } else { n };
        match n {
            NodeRef::N4(i) => {
                let x = self.n4.get_mut(i);
                sorted_insert(&mut x.keys, &mut x.children, x.h.count as usize, byte, w);
                x.h.count += 1;
            }
            NodeRef::N16(i) => {
                let x = self.n16.get_mut(i);
                sorted_insert(&mut x.keys, &mut x.children, x.h.count as usize, byte, w);
                x.h.count += 1;
            }
            NodeRef::N48(i) => {
                let x = self.n48.get_mut(i);
                let s = x.h.count as usize;
                x.children[s] = w;
                x.index[byte as usize] = (s + 1) as u8;
                x.h.count += 1;
            }
            NodeRef::N256(i) => {
                let x = self.n256.get_mut(i);
                x.children[byte as usize] = w;
                x.h.count += 1;
            }
        }
        n
    }

    fn is_full(&self, n: NodeRef) -> bool {
        let count = self.header(n).count as usize;
        match n {
            NodeRef::N4(_) => count == 4,
            NodeRef::N16(_) => count == 16,
            NodeRef::N48(_) => count == 48,
            NodeRef::N256(_) => false,
        }
    }

    /// Moves a full node into the next size up and frees its slot.
    fn grow(&mut self, n: NodeRef) -> NodeRef {
        match n {
            NodeRef::N4(i) => {
                let old = std::mem::take(self.n4.get_mut(i));
                self.n4.free(i);
                let mut keys = [0u8; 16];
                let mut children = [Word::EMPTY; 16];
                keys[..4].copy_from_slice(&old.keys);
                children[..4].copy_from_slice(&old.children);
                let node = Node16 {
                    h: old.h,
                    keys,
                    children,
                };
                NodeRef::N16(self.n16.put(node))
            }
            NodeRef::N16(i) => {
                let old = self.n16.get(i);
                let mut node = Node48 {
                    h: old.h.clone(),
                    index: [0; 256],
                    children: [Word::EMPTY; 48],
                };
                for s in 0..16 {
                    node.index[old.keys[s] as usize] = (s + 1) as u8;
                    node.children[s] = old.children[s];
                }
                self.n16.free(i);
                NodeRef::N48(self.n48.put(node))
            }
            NodeRef::N48(i) => {
                let old = self.n48.get(i);
                let mut node = Node256 {
                    h: old.h.clone(),
                    children: [Word::EMPTY; 256],
                };
                for (byte, &s) in old.index.iter().enumerate() {
                    if s != 0 {
                        node.children[byte] = old.children[s as usize - 1];
                    }
                }
                self.n48.free(i);
                NodeRef::N256(self.n256.put(node))
            }
            NodeRef::N256(_) => unreachable!("a node of 256 is never full"),
        }
    }

    /// The first child at or after `from` (`forward`), or at or before it.
    pub fn next_child(&self, n: NodeRef, from: u8, forward: bool) -> Option<(u8, Word)> {
        let scan = |get: &dyn Fn(u8) -> Word| {
            let mut b = from;
            loop {
                let w = get(b);
                if !w.is_empty() {
                    return Some((b, w));
                }
                b = if forward {
                    b.checked_add(1)?
                } else {
                    b.checked_sub(1)?
                };
            }
        };
        match n {
            NodeRef::N4(i) => {
                let x = self.n4.get(i);
                sorted_next(&x.keys, &x.children, x.h.count as usize, from, forward)
            }
            NodeRef::N16(i) => {
                let x = self.n16.get(i);
                sorted_next(&x.keys, &x.children, x.h.count as usize, from, forward)
            }
            NodeRef::N48(i) => {
                let x = self.n48.get(i);
                scan(&|b| match x.index[b as usize] {
                    0 => Word::EMPTY,
                    s => x.children[s as usize - 1],
                })
            }
            NodeRef::N256(i) => {
                let x = self.n256.get(i);
                scan(&|b| x.children[b as usize])
            }
        }
    }

    /// Stores a version list, reusing a freed slot.
    pub fn put_list(&mut self, list: VersionList) -> u32 {
        self.lists.put(list)
    }

    /// Frees a version list's slot (its versions moved elsewhere).
    pub fn free_list(&mut self, i: u32) -> VersionList {
        self.lists.free(i);
        std::mem::take(self.lists.get_mut(i))
    }

    /// A stored version list.
    pub fn list(&self, i: u32) -> &VersionList {
        self.lists.get(i)
    }

    /// DRAM the arenas hold (freed slots included) besides spilled version arrays.
    pub fn bytes(&self) -> usize {
        self.n4.bytes()
            + self.n16.bytes()
            + self.n48.bytes()
            + self.n256.bytes()
            + self.lists.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        assert_eq!(Word::EMPTY.slot(), Slot::Empty);
        let rec = (7u64 << 48) | 0x1234_5670;
        assert_eq!(
            Word::record(rec, true).slot(),
            Slot::Record { rec, pruned: true }
        );
        assert_eq!(
            Word::record(0x40, false).slot(),
            Slot::Record {
                rec: 0x40,
                pruned: false
            }
        );
        assert_eq!(Word::list(9).slot(), Slot::List(9));
        for n in [
            NodeRef::N4(0),
            NodeRef::N16(3),
            NodeRef::N48(u32::MAX >> 3),
            NodeRef::N256(1),
        ] {
            assert_eq!(Word::node(n).slot(), Slot::Node(n));
        }
    }

    #[test]
    fn nodes_grow_and_keep_children_in_order() {
        let mut a = Arena::default();
        let mut n = a.new_node4(Header::default());
        let bytes: Vec<u8> = (0..=255u8).rev().step_by(3).collect();
        for (i, &b) in bytes.iter().enumerate() {
            n = a.add_child(n, b, Word::record((i as u64 + 1) * 8, false));
            assert_eq!(a.header(n).count as usize, i + 1);
        }
        assert!(matches!(n, NodeRef::N256(_)));
        for (i, &b) in bytes.iter().enumerate() {
            assert_eq!(a.find(n, b), Word::record((i as u64 + 1) * 8, false));
        }
        let mut seen = Vec::new();
        let mut from = 0u8;
        while let Some((b, _)) = a.next_child(n, from, true) {
            seen.push(b);
            match b.checked_add(1) {
                Some(x) => from = x,
                None => break,
            }
        }
        let mut sorted = bytes.clone();
        sorted.sort();
        assert_eq!(seen, sorted);
        assert_eq!(a.next_child(n, 1, false).map(|c| c.0), Some(0));
    }
}
