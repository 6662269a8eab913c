//! Ordered walks: the leaves from a bound on, ascending or descending. A walk first
//! descends along the bound, leaving on a stack each node with the next position to
//! visit in it, then visits in order from the stack (an explicit stack: keys may be
//! 64 KiB long, far deeper than a thread's stack would like).

use std::cmp::Ordering;
use std::ops::{Bound, ControlFlow};

use smallvec::SmallVec;

use super::node::{NodeRef, Slot, Word};
use super::{Art, KeySource, Leaf};
use crate::error::Result;

/// The position at which a node's key-ending slot is visited; child bytes are 0..=255.
const END: i32 = -1;

/// A node being walked and the next position to visit in it: ascending, the end slot
/// (`END`), then bytes up to 255 (256: done); descending, bytes down to 0, then the end
/// slot, then done (-2).
struct Frame {
    n: NodeRef,
    next: i32,
}

impl Frame {
    fn start(n: NodeRef, forward: bool) -> Frame {
        Frame {
            n,
            next: if forward { END } else { 255 },
        }
    }
}

type Stack = SmallVec<[Frame; 16]>;

impl Art {
    /// Calls `f` on each key's leaf from `from` on — ascending when `forward`, else
    /// descending from `from` down — until `f` breaks or the keys run out.
    pub fn walk<K: KeySource>(
        &self,
        keys: &K,
        from: Bound<&[u8]>,
        forward: bool,
        mut f: impl FnMut(Leaf<'_>) -> ControlFlow<()>,
    ) -> Result<()> {
        let mut stack = Stack::new();
        let first = match from {
            Bound::Unbounded => self.enter(self.root, forward, &mut stack),
            Bound::Included(k) => self.position(keys, k, true, forward, &mut stack)?,
            Bound::Excluded(k) => self.position(keys, k, false, forward, &mut stack)?,
        };
        if let Some(w) = first
            && f(self.leaf(w)).is_break()
        {
            return Ok(());
        }
        while let Some(top) = stack.last_mut() {
            let next = if forward {
                self.step_forward(top)
            } else {
                self.step_back(top)
            };
            let Some(w) = next else {
                stack.pop();
                continue;
            };
            if let Some(leaf) = self.enter(w, forward, &mut stack)
                && f(self.leaf(leaf)).is_break()
            {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Visits `w`: a leaf is returned, a node is pushed to be walked whole.
    fn enter(&self, w: Word, forward: bool, stack: &mut Stack) -> Option<Word> {
        match w.slot() {
            Slot::Empty => None,
            Slot::Node(n) => {
                stack.push(Frame::start(n, forward));
                None
            }
            _ => Some(w),
        }
    }

    fn step_forward(&self, top: &mut Frame) -> Option<Word> {
        if top.next == END {
            top.next = 0;
            let end = self.arena.header(top.n).end;
            if !end.is_empty() {
                return Some(end);
            }
        }
        let from = u8::try_from(top.next).ok()?;
        match self.arena.next_child(top.n, from, true) {
            Some((b, w)) => {
                top.next = i32::from(b) + 1;
                Some(w)
            }
            None => {
                top.next = 256;
                None
            }
        }
    }

    fn step_back(&self, top: &mut Frame) -> Option<Word> {
        if let Ok(from) = u8::try_from(top.next) {
            if let Some((b, w)) = self.arena.next_child(top.n, from, false) {
                top.next = i32::from(b) - 1;
                return Some(w);
            }
            top.next = END;
        }
        if top.next == END {
            top.next = END - 1;
            let end = self.arena.header(top.n).end;
            if !end.is_empty() {
                return Some(end);
            }
        }
        None
    }

    /// Descends along `k`, pushing each node on the way with the position after (or
    /// before) `k`'s branch, and returns the leaf to visit first, if the descent ends on
    /// one that is on the right side of `k`.
    fn position<K: KeySource>(
        &self,
        keys: &K,
        k: &[u8],
        inclusive: bool,
        forward: bool,
        stack: &mut Stack,
    ) -> Result<Option<Word>> {
        let wanted = |ord: Ordering| match ord {
            Ordering::Equal => inclusive,
            Ordering::Greater => forward,
            Ordering::Less => !forward,
        };
        let mut w = self.root;
        let mut depth = 0;
        loop {
            let n = match w.slot() {
                Slot::Empty => return Ok(None),
                Slot::Node(n) => n,
                _ => {
                    let key = keys.key(self.leaf(w).any_record())?;
                    return Ok(wanted(crate::keys::compare_user_keys(key, k)).then_some(w));
                }
            };
            let p = self.arena.header(n).prefix_len();
            let path = self.path(keys, n, depth)?;
            let rest = &k[depth..];
            let m = p.min(rest.len());
            // Compared with the node's path, `k` is below every key under the node, or
            // above all of them, or it follows the path (and then, if it ends inside it,
            // is below them all).
            let ord = crate::keys::compare_user_keys(&path[..m], &rest[..m]);
            let ord = if ord == Ordering::Equal && rest.len() < p {
                Ordering::Greater
            } else {
                ord
            };
            match ord {
                Ordering::Greater | Ordering::Less => {
                    if wanted(ord) {
                        stack.push(Frame::start(n, forward));
                    }
                    return Ok(None);
                }
                Ordering::Equal => {}
            }
            depth += p;
            let end = self.arena.header(n).end;
            let Some(&b) = k.get(depth) else {
                // `k` ends at this node: its end slot holds `k` itself, and every child
                // is above it.
                if forward {
                    stack.push(Frame { n, next: 0 });
                }
                return Ok((inclusive && !end.is_empty()).then_some(end));
            };
            // Below `k`'s byte: the end slot and smaller bytes; above it: larger bytes.
            let next = if forward {
                i32::from(b) + 1
            } else {
                i32::from(b) - 1
            };
            stack.push(Frame { n, next });
            w = self.arena.find(n, b);
            depth += 1;
        }
    }
}
