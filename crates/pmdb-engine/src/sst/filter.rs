//! The table's Bloom filter over user keys (not internal keys: a point read asks whether
//! any version of a key may be in the table). The bits are fastbloom's; the source hash
//! is ours and fixed — SipHash-1-3 under a constant key over the key's bytes alone — so a
//! filter written by one process is probed identically by any other (fastbloom's default
//! hasher is seeded at random, and hashing a slice through `Hash` would mix in its length
//! as a platform-sized integer).

use std::hash::{BuildHasher, Hasher};

use fastbloom::{BloomFilter, DefaultHasher};

use crate::format::sst::{FilterBlock, MAX_FILTER_HASHES};

/// The SipHash key of the source hash: part of the format.
const SEED: [u8; 16] = *b"pmdb sst filter1";

/// The source hash of `user_key`, from which fastbloom derives the bits to set and test.
pub(crate) fn key_hash(user_key: &[u8]) -> u64 {
    let mut h = DefaultHasher::seeded(&SEED).build_hasher();
    h.write(user_key);
    h.finish()
}

/// The filter of the keys whose source hashes are `hashes`, at `bits_per_key` bits a key
/// (at least 1).
pub(crate) fn build(hashes: &[u64], bits_per_key: u32) -> FilterBlock {
    let bits = (hashes.len() as u64)
        .saturating_mul(u64::from(bits_per_key))
        .max(64);
    let words = usize::try_from(bits.div_ceil(64)).expect("one word per key at most");
    // ln 2 bits a hash is optimal.
    let k = (bits_per_key * 69 / 100).clamp(1, MAX_FILTER_HASHES);
    let mut filter = BloomFilter::from_vec(vec![0; words]).hashes(k);
    for &h in hashes {
        filter.insert_hash(h);
    }
    FilterBlock {
        hashes: k,
        words: filter.as_slice().to_vec(),
    }
}

/// A table's filter, loaded.
pub(crate) struct Filter(BloomFilter);

impl Filter {
    pub fn new(block: FilterBlock) -> Filter {
        Filter(BloomFilter::from_vec(block.words).hashes(block.hashes))
    }

    /// Hash functions per key, and bits.
    pub fn shape(&self) -> (u32, u64) {
        (self.0.num_hashes(), self.0.num_bits() as u64)
    }

    /// False only if the table holds no version of `user_key`.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.0.contains_hash(key_hash(user_key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter_of(keys: &[Vec<u8>], bits_per_key: u32) -> FilterBlock {
        let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
        build(&hashes, bits_per_key)
    }

    #[test]
    fn holds_every_key_and_few_others() {
        let keys: Vec<Vec<u8>> = (0..10_000u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let block = filter_of(&keys, 10);
        assert_eq!(block.hashes, 6);
        assert_eq!(block.words.len(), 10_000 * 10 / 64 + 1);
        let filter = Filter::new(FilterBlock::decode(&block.encode()).unwrap());
        assert!(keys.iter().all(|k| filter.may_contain(k)));
        let false_positives = (10_000..20_000u32)
            .filter(|i| filter.may_contain(&i.to_be_bytes()))
            .count();
        assert!(false_positives < 200, "{false_positives} in 10 000");
    }

    #[test]
    fn tiny_and_empty_filters_are_one_word() {
        assert_eq!(filter_of(&[], 10).words.len(), 1);
        assert_eq!(filter_of(&[b"k".to_vec()], 1).hashes, 1);
        let filter = Filter::new(filter_of(&[b"k".to_vec()], 40));
        assert!(filter.may_contain(b"k"));
    }

    /// The bits written for fixed keys never change: files written by an older build
    /// (or another fastbloom release) must be probed the same way, so a change here is a
    /// format change.
    #[test]
    fn the_layout_is_stable() {
        assert_eq!(key_hash(b"pmdb"), GOLDEN_HASH);
        let keys: Vec<Vec<u8>> = (0..100u32)
            .map(|i| format!("key{i}").into_bytes())
            .collect();
        let block = filter_of(&keys, 10);
        assert_eq!(crc32fast::hash(&block.encode()), GOLDEN_FILTER_CRC);
    }

    const GOLDEN_HASH: u64 = 0x3df79dda6d225b56;
    const GOLDEN_FILTER_CRC: u32 = 0xad192a90;
}
