//! The merging iterator: many sources as one ordered stream. A binary heap of the valid
//! sources, keyed by their current internal key (smallest on top going forward, largest
//! going backward), so a step costs O(log sources). Changing direction re-positions every
//! other source around the current key, as LevelDB's MergingIterator does.

use std::cmp::Ordering;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::keys;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

fn move_child(child: &mut dyn InternalIterator, direction: Direction) {
    match direction {
        Direction::Forward => child.next(),
        Direction::Reverse => child.prev(),
    }
}

pub(crate) struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    /// Indices of the valid children, a heap ordered by `direction`.
    heap: Vec<usize>,
    direction: Direction,
}

impl MergingIterator {
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> MergingIterator {
        MergingIterator {
            heap: Vec::with_capacity(children.len()),
            children,
            direction: Direction::Forward,
        }
    }

    /// Whether child `a` belongs above child `b` in the heap.
    fn above(&self, a: usize, b: usize) -> bool {
        let order = keys::compare(self.children[a].key(), self.children[b].key());
        match self.direction {
            Direction::Forward => order == Ordering::Less,
            Direction::Reverse => order == Ordering::Greater,
        }
    }

    fn rebuild(&mut self, direction: Direction) {
        self.direction = direction;
        self.heap.clear();
        for i in 0..self.children.len() {
            if self.children[i].valid() {
                self.heap.push(i);
            }
        }
        for at in (0..self.heap.len() / 2).rev() {
            self.sift_down(at);
        }
    }

    fn sift_down(&mut self, mut at: usize) {
        loop {
            let (l, r) = (2 * at + 1, 2 * at + 2);
            let mut top = at;
            if l < self.heap.len() && self.above(self.heap[l], self.heap[top]) {
                top = l;
            }
            if r < self.heap.len() && self.above(self.heap[r], self.heap[top]) {
                top = r;
            }
            if top == at {
                return;
            }
            self.heap.swap(at, top);
            at = top;
        }
    }

    /// After the top child moved: drop it if it ran out, else restore the heap.
    fn settle_top(&mut self) {
        if !self.children[self.heap[0]].valid() {
            self.heap.swap_remove(0);
        }
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
    }

    /// Moves one entry in `direction`. Going on the same way moves the top child; turning
    /// around first stands every other child on its first entry past the current key.
    fn step(&mut self, direction: Direction) {
        let cur = self.heap[0];
        if self.direction == direction {
            move_child(self.children[cur].as_mut(), direction);
            self.settle_top();
            return;
        }
        let key = self.children[cur].key().to_vec();
        for (i, child) in self.children.iter_mut().enumerate() {
            if i == cur {
                continue;
            }
            match direction {
                Direction::Forward => child.seek(&key),
                Direction::Reverse => child.seek_for_prev(&key),
            }
            if child.valid() && keys::compare(child.key(), &key) == Ordering::Equal {
                move_child(child.as_mut(), direction);
            }
        }
        move_child(self.children[cur].as_mut(), direction);
        self.rebuild(direction);
    }

    fn current(&self) -> &dyn InternalIterator {
        self.children[self.heap[0]].as_ref()
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_first());
        self.rebuild(Direction::Forward);
    }

    fn seek_to_last(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_last());
        self.rebuild(Direction::Reverse);
    }

    fn seek(&mut self, target: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek(target));
        self.rebuild(Direction::Forward);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.children
            .iter_mut()
            .for_each(|c| c.seek_for_prev(target));
        self.rebuild(Direction::Reverse);
    }

    fn next(&mut self) {
        self.step(Direction::Forward);
    }

    fn prev(&mut self) {
        self.step(Direction::Reverse);
    }

    fn key(&self) -> &[u8] {
        self.current().key()
    }

    fn value(&self) -> Result<&[u8]> {
        self.current().value()
    }

    fn status(&self) -> Result<()> {
        self.children.iter().try_for_each(|c| c.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::DbError;
    use crate::format::record::Kind;
    use crate::keys::IKey;

    /// A source over a sorted vector, for testing the merge alone.
    struct VecIter {
        entries: Vec<(IKey, Vec<u8>)>,
        pos: Option<usize>,
    }

    impl VecIter {
        fn boxed(entries: &[(&str, u64)]) -> Box<dyn InternalIterator> {
            let mut entries: Vec<_> = entries
                .iter()
                .map(|(k, s)| {
                    (
                        IKey::new(k.as_bytes(), *s, Kind::Put),
                        s.to_le_bytes().to_vec(),
                    )
                })
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Box::new(VecIter { entries, pos: None })
        }
    }

    impl InternalIterator for VecIter {
        fn valid(&self) -> bool {
            self.pos.is_some()
        }
        fn seek_to_first(&mut self) {
            self.pos = (!self.entries.is_empty()).then_some(0);
        }
        fn seek_to_last(&mut self) {
            self.pos = self.entries.len().checked_sub(1);
        }
        fn seek(&mut self, target: &[u8]) {
            let i = self
                .entries
                .partition_point(|(k, _)| keys::compare(k.as_slice(), target) == Ordering::Less);
            self.pos = (i < self.entries.len()).then_some(i);
        }
        fn seek_for_prev(&mut self, target: &[u8]) {
            let i = self
                .entries
                .partition_point(|(k, _)| keys::compare(k.as_slice(), target) != Ordering::Greater);
            self.pos = i.checked_sub(1);
        }
        fn next(&mut self) {
            self.pos = self.pos.map(|p| p + 1).filter(|&p| p < self.entries.len());
        }
        fn prev(&mut self) {
            self.pos = self.pos.and_then(|p| p.checked_sub(1));
        }
        fn key(&self) -> &[u8] {
            self.entries[self.pos.unwrap()].0.as_slice()
        }
        fn value(&self) -> Result<&[u8], DbError> {
            Ok(&self.entries[self.pos.unwrap()].1)
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
    }

    fn merged() -> MergingIterator {
        MergingIterator::new(vec![
            VecIter::boxed(&[("a", 5), ("c", 7), ("e", 9)]),
            VecIter::boxed(&[("a", 3), ("b", 4), ("e", 2)]),
            VecIter::boxed(&[]),
            VecIter::boxed(&[("d", 1)]),
        ])
    }

    fn label(m: &MergingIterator) -> String {
        let k = m.key();
        format!(
            "{}{}",
            String::from_utf8_lossy(keys::user_key(k)),
            keys::seq_of(k)
        )
    }

    #[test]
    fn merges_both_ways_and_turns_around() {
        let all = ["a5", "a3", "b4", "c7", "d1", "e9", "e2"];
        let mut m = merged();
        m.seek_to_first();
        let mut fwd = Vec::new();
        while m.valid() {
            fwd.push(label(&m));
            m.next();
        }
        assert_eq!(fwd, all);
        m.seek_to_last();
        let mut rev = Vec::new();
        while m.valid() {
            rev.push(label(&m));
            m.prev();
        }
        rev.reverse();
        assert_eq!(rev, all);
        // Turning around in the middle visits the neighbours exactly.
        m.seek(IKey::first_of(b"c").as_slice());
        assert_eq!(label(&m), "c7");
        m.prev();
        assert_eq!(label(&m), "b4");
        m.prev();
        assert_eq!(label(&m), "a3");
        m.next();
        assert_eq!(label(&m), "b4");
        m.next();
        assert_eq!(label(&m), "c7");
        m.seek_for_prev(IKey::last_of(b"d").as_slice());
        assert_eq!(label(&m), "d1");
        m.next();
        assert_eq!(label(&m), "e9");
        assert_eq!(m.value().unwrap(), 9u64.to_le_bytes());
    }
}
