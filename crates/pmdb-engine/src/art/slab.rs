//! Chunked storage for the tree's nodes and version lists: elements live in chunks of
//! about 64 KiB that never grow, so adding one never moves or copies the others (no
//! pause while a large array doubles on the commit path) and at most one chunk per kind
//! is partly empty. Freed slots are reused.

/// Bytes a chunk aims at.
const CHUNK_BYTES: usize = 64 << 10;

pub(crate) struct Slab<T> {
    chunks: Vec<Vec<T>>,
    len: u32,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            chunks: Vec::new(),
            len: 0,
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    /// Elements per chunk: a power of two, so an index splits with a shift and a mask.
    const SHIFT: u32 = {
        let per = CHUNK_BYTES
            / if size_of::<T>() == 0 {
                1
            } else {
                size_of::<T>()
            };
        if per <= 1 { 0 } else { per.ilog2() }
    };
    const MASK: usize = (1 << Self::SHIFT) - 1;

    pub fn get(&self, i: u32) -> &T {
        let i = i as usize;
        &self.chunks[i >> Self::SHIFT][i & Self::MASK]
    }

    pub fn get_mut(&mut self, i: u32) -> &mut T {
        let i = i as usize;
        &mut self.chunks[i >> Self::SHIFT][i & Self::MASK]
    }

    /// Stores `x` in a freed slot or a new one, and returns its index.
    pub fn put(&mut self, x: T) -> u32 {
        if let Some(i) = self.free.pop() {
            *self.get_mut(i) = x;
            return i;
        }
        let i = self.len;
        let chunk = i as usize >> Self::SHIFT;
        if chunk == self.chunks.len() {
            self.chunks.push(Vec::with_capacity(1 << Self::SHIFT));
        }
        self.chunks[chunk].push(x);
        self.len = i
            .checked_add(1)
            .expect("fewer than 2^32 elements of a kind per tree");
        i
    }

    /// Marks slot `i` free; its content stays until the slot is reused.
    pub fn free(&mut self, i: u32) {
        self.free.push(i);
    }

    /// DRAM held, in bytes.
    pub fn bytes(&self) -> usize {
        self.chunks.len() * (1 << Self::SHIFT) * size_of::<T>()
            + self.chunks.capacity() * size_of::<Vec<T>>()
            + self.free.capacity() * size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_stay_put_across_chunks_and_freed_slots_are_reused() {
        let mut s: Slab<[u64; 300]> = Slab::default();
        let per = 1usize << Slab::<[u64; 300]>::SHIFT;
        assert!(per * size_of::<[u64; 300]>() <= CHUNK_BYTES);
        let ids: Vec<u32> = (0..3 * per as u64).map(|i| s.put([i; 300])).collect();
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(s.get(id)[299], i as u64);
        }
        s.free(ids[5]);
        assert_eq!(s.put([77; 300]), ids[5]);
        assert_eq!(s.get(ids[5])[0], 77);
        assert_eq!(s.put([1; 300]) as usize, 3 * per);
        assert_eq!(s.chunks.len(), 4);
    }
}
