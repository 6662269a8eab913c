//! The tree against an ordered map: random keys with shared prefixes (short and longer
//! than a node keeps), keys that are prefixes of others, versions and bounded walks in
//! both directions.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};

use proptest::prelude::*;

use super::*;

/// Records in a vector: record `i` is at address `8 * i`.
#[derive(Default)]
struct VecKeys {
    recs: Vec<(Vec<u8>, u64)>,
}

impl VecKeys {
    fn add(&mut self, key: &[u8], seq: u64) -> Version {
        self.recs.push((key.to_vec(), (seq << 8) | 1));
        Version {
            tag: (seq << 8) | 1,
            rec: 8 * (self.recs.len() as u64 - 1),
        }
    }
}

impl KeySource for VecKeys {
    fn record(&self, rec: u64) -> Result<(u64, &[u8])> {
        let (key, tag) = &self.recs[(rec / 8) as usize];
        Ok((*tag, key))
    }
}

/// The leaf of `key`, checking that the tag `get` reports is its newest version's.
fn get_leaf<'a>(art: &'a Art, keys: &VecKeys, key: &[u8]) -> Result<Option<Leaf<'a>>> {
    Ok(art.get(keys, key)?.map(|(leaf, tag)| {
        assert_eq!(tag, keys.record(leaf.any_record()).unwrap().0);
        leaf
    }))
}

fn seqs_of(keys: &VecKeys, leaf: Leaf<'_>) -> Vec<u64> {
    match leaf {
        Leaf::One { rec, .. } => vec![keys.record(rec).unwrap().0 >> 8],
        Leaf::Many(l) => l.versions().iter().map(Version::seq).collect(),
    }
}

fn walk_keys(
    art: &Art,
    keys: &VecKeys,
    from: Bound<&[u8]>,
    forward: bool,
    n: usize,
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    art.walk(keys, from, forward, |leaf| {
        out.push(keys.key(leaf.any_record()).unwrap().to_vec());
        if out.len() == n {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    out
}

fn model_walk(
    model: &BTreeMap<Vec<u8>, Vec<u64>>,
    from: Bound<&[u8]>,
    forward: bool,
    n: usize,
) -> Vec<Vec<u8>> {
    let from = from.map(<[u8]>::to_vec);
    if forward {
        model
            .range((from, Bound::Unbounded))
            .take(n)
            .map(|(k, _)| k.clone())
            .collect()
    } else {
        model
            .range((Bound::Unbounded, from))
            .rev()
            .take(n)
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// Keys over a small alphabet with a long common stem, so that paths are shared,
/// compressed beyond 8 bytes, split, and keys end where others go on.
fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec![0usize, 1, 3, 12]),
        prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', b'b', 255]), 0..6),
    )
        .prop_map(|(stem, tail)| {
            let mut k = b"stem-of-a-long-key"[..stem].to_vec();
            k.extend(tail);
            k
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn matches_an_ordered_map(
        inserts in prop::collection::vec(key_strategy(), 1..200),
        probes in prop::collection::vec((key_strategy(), any::<bool>(), any::<bool>(), 1usize..8), 1..30),
    ) {
        let mut keys = VecKeys::default();
        let mut art = Art::new();
        let mut model: BTreeMap<Vec<u8>, Vec<u64>> = BTreeMap::new();
        for (seq, k) in inserts.iter().enumerate() {
            let v = keys.add(k, seq as u64 + 1);
            // A horizon of 0 keeps every version.
            art.insert(&keys, k, v, 0).unwrap();
            model.entry(k.clone()).or_default().push(seq as u64 + 1);
        }
        prop_assert_eq!(art.len(), model.len() as u64);
        prop_assert_eq!(art.versions(), inserts.len() as u64);
        for (k, seqs) in &model {
            let leaf = get_leaf(&art, &keys, k).unwrap().expect("inserted key is found");
            prop_assert_eq!(&seqs_of(&keys, leaf), seqs);
        }
        for (k, inclusive, forward, n) in probes {
            if !model.contains_key(&k) {
                prop_assert!(get_leaf(&art, &keys, &k).unwrap().is_none());
            }
            let from = if inclusive { Bound::Included(&k[..]) } else { Bound::Excluded(&k[..]) };
            prop_assert_eq!(
                walk_keys(&art, &keys, from, forward, n),
                model_walk(&model, from, forward, n),
                "from {:?} forward {}", from, forward
            );
        }
        for forward in [true, false] {
            prop_assert_eq!(
                walk_keys(&art, &keys, Bound::Unbounded, forward, usize::MAX),
                model_walk(&model, Bound::Unbounded, forward, usize::MAX)
            );
        }
    }
}

#[test]
fn versions_below_the_horizon_are_dropped_and_marked() {
    let mut keys = VecKeys::default();
    let mut art = Art::new();
    for seq in 1..=3 {
        let v = keys.add(b"k", seq);
        art.insert(&keys, b"k", v, 0).unwrap();
    }
    assert_eq!(art.versions(), 3);
    let v = keys.add(b"k", 4);
    art.insert(&keys, b"k", v, 3).unwrap();
    let leaf = get_leaf(&art, &keys, b"k").unwrap().unwrap();
    assert_eq!(seqs_of(&keys, leaf), [3, 4]);
    assert!(matches!(leaf, Leaf::Many(l) if l.pruned()));
    let v = keys.add(b"k", 5);
    art.insert(&keys, b"k", v, 9).unwrap();
    let leaf = get_leaf(&art, &keys, b"k").unwrap().unwrap();
    assert!(matches!(leaf, Leaf::One { pruned: true, .. }));
    assert_eq!(art.versions(), 1);
    assert_eq!(art.len(), 1);
}

#[test]
fn dense_keys_fill_every_node_size() {
    let mut keys = VecKeys::default();
    let mut art = Art::new();
    for i in 0..70_000u32 {
        let k = i.to_be_bytes();
        let v = keys.add(&k, u64::from(i) + 1);
        art.insert(&keys, &k, v, 0).unwrap();
    }
    let all = walk_keys(&art, &keys, Bound::Unbounded, true, usize::MAX);
    assert_eq!(all.len(), 70_000);
    assert!(all.windows(2).all(|w| w[0] < w[1]));
    let back = walk_keys(
        &art,
        &keys,
        Bound::Excluded(&5000u32.to_be_bytes()[..]),
        false,
        3,
    );
    assert_eq!(
        back,
        [4999u32, 4998, 4997].map(|i| i.to_be_bytes().to_vec())
    );
    // 16-byte keys, 8-byte addresses: far less DRAM than a copy of every key.
    assert!(art.dram_bytes() < 70_000 * 40, "{} bytes", art.dram_bytes());
}

fn newest_seq(keys: &VecKeys, leaf: Leaf<'_>) -> u64 {
    *seqs_of(keys, leaf).last().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_bulk_build_holds_the_newest_version_of_each_key(
        inserts in prop::collection::vec(key_strategy(), 1..300),
        shuffle in any::<u64>(),
    ) {
        let mut keys = VecKeys::default();
        let mut entries = Vec::new();
        let mut model: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        for (seq, k) in inserts.iter().enumerate() {
            let v = keys.add(k, seq as u64 + 1);
            entries.push(BulkEntry::new(k, v));
            model.insert(k.clone(), seq as u64 + 1);
        }
        // Recovery hands zones over in any order.
        let n = entries.len();
        entries.rotate_left((shuffle % n as u64) as usize);
        let art = Art::build(&keys, entries).unwrap();
        prop_assert_eq!(art.len(), model.len() as u64);
        prop_assert_eq!(art.versions(), model.len() as u64);
        for (k, seq) in &model {
            let leaf = get_leaf(&art, &keys, k).unwrap().expect("built key is found");
            prop_assert_eq!(newest_seq(&keys, leaf), *seq);
        }
        for forward in [true, false] {
            prop_assert_eq!(
                walk_keys(&art, &keys, Bound::Unbounded, forward, usize::MAX),
                model_walk(&model.keys().map(|k| (k.clone(), vec![])).collect(), Bound::Unbounded, forward, usize::MAX)
            );
        }
    }
}

#[test]
fn a_bulk_build_of_keys_nested_deeper_than_its_recursion_still_holds_them_all() {
    let mut keys = VecKeys::default();
    let mut entries = Vec::new();
    // Each key is a prefix of the next: one node per key on a single path.
    let all: Vec<Vec<u8>> = (1..=300).map(|n| vec![b'a'; n]).collect();
    for (seq, k) in all.iter().enumerate() {
        entries.push(BulkEntry::new(k, keys.add(k, seq as u64 + 1)));
    }
    let mut art = Art::build(&keys, entries).unwrap();
    assert_eq!(art.len(), 300);
    assert_eq!(
        walk_keys(&art, &keys, Bound::Unbounded, true, usize::MAX),
        all
    );
    // The tree takes ordinary inserts afterwards.
    let v = keys.add(b"ab", 1000);
    art.insert(&keys, b"ab", v, 0).unwrap();
    let v = keys.add(b"aaa", 1001);
    art.insert(&keys, b"aaa", v, 0).unwrap();
    assert_eq!(art.len(), 301);
    assert_eq!(
        seqs_of(&keys, get_leaf(&art, &keys, b"aaa").unwrap().unwrap()),
        [3, 1001]
    );
}
