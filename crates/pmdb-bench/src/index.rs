//! Candidate DRAM index structures for the memtable, measured on the engine's internal
//! keys (escaped 16-byte key + inverted seq): inserts in random order, then lower-bound
//! lookups of random present keys, single-threaded, at given sizes.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::time::Instant;

use crossbeam_skiplist::SkipMap;
use parking_lot::RwLock;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use serde::Serialize;

use crate::engine::bench_key;
use crate::limits::{InvalidSetting, MAX_KEYS, MAX_OPERATIONS, check, check_memory};
use crate::machine::Machine;
use crate::progress::progress;

#[derive(Clone, Debug, Serialize)]
pub struct IndexResult {
    pub structure: String,
    pub keys: u64,
    pub insert_ns: f64,
    pub lookup_ns: f64,
    /// Lookups timed (fewer than asked if the time budget ran out).
    pub lookups: u64,
}

const LOOKUP_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Clone, Debug, Serialize)]
pub struct IndexReport {
    pub machine: Machine,
    pub command: String,
    pub lookups: u64,
    pub results: Vec<IndexResult>,
}

/// The memtable's key shape: the key escaped (no zero bytes here, so just the 0,0
/// terminator) and the inverted sequence number, big-endian.
fn internal_key(i: u64) -> Box<[u8]> {
    let mut k = bench_key(i, 16);
    k.extend_from_slice(&[0, 0]);
    k.extend_from_slice(&(!(i + 1)).to_be_bytes());
    k.into_boxed_slice()
}

/// A structure under test: ordered map with concurrent readers.
trait Candidate: Sync {
    const NAME: &'static str;
    fn new() -> Self;
    fn insert(&self, k: Box<[u8]>, v: u64);
    fn lower_bound(&self, k: &[u8]) -> Option<u64>;
}

impl Candidate for SkipMap<Box<[u8]>, u64> {
    const NAME: &'static str = "crossbeam-skiplist SkipMap";
    fn new() -> Self {
        SkipMap::new()
    }
    fn insert(&self, k: Box<[u8]>, v: u64) {
        SkipMap::insert(self, k, v);
    }
    fn lower_bound(&self, k: &[u8]) -> Option<u64> {
        SkipMap::lower_bound(self, Bound::Included(k)).map(|e| *e.value())
    }
}

/// Keys stored inline (up to 32 bytes) in the structure's nodes: no pointer to chase per
/// comparison.
type InlineKey = smallvec::SmallVec<[u8; 32]>;

impl Candidate for SkipMap<InlineKey, u64> {
    const NAME: &'static str = "crossbeam-skiplist SkipMap, inline keys";
    fn new() -> Self {
        SkipMap::new()
    }
    fn insert(&self, k: Box<[u8]>, v: u64) {
        SkipMap::insert(self, InlineKey::from_slice(&k), v);
    }
    fn lower_bound(&self, k: &[u8]) -> Option<u64> {
        SkipMap::lower_bound(self, Bound::Included(k)).map(|e| *e.value())
    }
}

impl Candidate for RwLock<BTreeMap<InlineKey, u64>> {
    const NAME: &'static str = "std BTreeMap behind a RwLock, inline keys";
    fn new() -> Self {
        RwLock::new(BTreeMap::new())
    }
    fn insert(&self, k: Box<[u8]>, v: u64) {
        self.write().insert(InlineKey::from_slice(&k), v);
    }
    fn lower_bound(&self, k: &[u8]) -> Option<u64> {
        self.read()
            .range::<[u8], _>((Bound::Included(k), Bound::Unbounded))
            .next()
            .map(|(_, v)| *v)
    }
}

impl Candidate for scc::TreeIndex<Box<[u8]>, u64> {
    const NAME: &'static str = "scc TreeIndex";
    fn new() -> Self {
        scc::TreeIndex::new()
    }
    fn insert(&self, k: Box<[u8]>, v: u64) {
        let _ = scc::TreeIndex::insert(self, k, v);
    }
    fn lower_bound(&self, k: &[u8]) -> Option<u64> {
        let guard = scc::ebr::Guard::new();
        self.range::<[u8], _>((Bound::Included(k), Bound::Unbounded), &guard)
            .next()
            .map(|(_, v)| *v)
    }
}

impl Candidate for RwLock<BTreeMap<Box<[u8]>, u64>> {
    const NAME: &'static str = "std BTreeMap behind a RwLock";
    fn new() -> Self {
        RwLock::new(BTreeMap::new())
    }
    fn insert(&self, k: Box<[u8]>, v: u64) {
        self.write().insert(k, v);
    }
    fn lower_bound(&self, k: &[u8]) -> Option<u64> {
        self.read()
            .range::<[u8], _>((Bound::Included(k), Bound::Unbounded))
            .next()
            .map(|(_, v)| *v)
    }
}

fn measure<C: Candidate>(keys: u64, lookups: u64) -> IndexResult {
    let mut order: Vec<u64> = (0..keys).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(keys));
    let ks: Vec<Box<[u8]>> = order.iter().map(|&i| internal_key(i)).collect();
    let map = C::new();
    let bar = progress(&format!("{}: insert {keys}", C::NAME), keys);
    let start = Instant::now();
    for (i, k) in ks.iter().enumerate() {
        map.insert(k.clone(), i as u64);
        if i % 65536 == 0 {
            bar.set_position(i as u64);
        }
    }
    let insert_ns = start.elapsed().as_nanos() as f64 / keys as f64;
    bar.finish_and_clear();
    // Look up keys in another random order than they were inserted in.
    let probe: Vec<&[u8]> = (0..lookups)
        .map(|i| &*ks[(crate::dist::fnv64(i) % keys) as usize])
        .collect();
    // A structure whose lookups turn out orders of magnitude slower is cut off after a
    // time budget; the cost per lookup is then over the lookups done.
    let start = Instant::now();
    let mut done = 0u64;
    for chunk in probe.chunks(16) {
        for k in chunk {
            assert!(map.lower_bound(k).is_some(), "present key not found");
        }
        done += chunk.len() as u64;
        if start.elapsed() > LOOKUP_BUDGET {
            break;
        }
    }
    let lookup_ns = start.elapsed().as_nanos() as f64 / done as f64;
    IndexResult {
        structure: C::NAME.into(),
        keys,
        insert_ns,
        lookup_ns,
        lookups: done,
    }
}

/// Refuses sizes that would divide by zero, run for days or exhaust memory: each index
/// holds its keys twice (the list inserted from and the structure), and the lookups are
/// drawn up front, a reference each.
pub fn validate(key_counts: &[u64], lookups: u64) -> Result<(), InvalidSetting> {
    for &keys in key_counts {
        check("keys", keys, 1..=MAX_KEYS)?;
    }
    check("lookups", lookups, 1..=MAX_OPERATIONS)?;
    let largest = key_counts.iter().copied().max().unwrap_or(0);
    let key_len = internal_key(0).len() as u64;
    check_memory("keys", largest * 2 * key_len)?;
    check_memory("lookups", lookups * size_of::<&[u8]>() as u64)
}

pub fn run(
    key_counts: &[u64],
    lookups: u64,
    command: String,
) -> Result<IndexReport, InvalidSetting> {
    validate(key_counts, lookups)?;
    let mut results = Vec::new();
    for &keys in key_counts {
        results.push(measure::<SkipMap<Box<[u8]>, u64>>(keys, lookups));
        results.push(measure::<scc::TreeIndex<Box<[u8]>, u64>>(keys, lookups));
        results.push(measure::<RwLock<BTreeMap<Box<[u8]>, u64>>>(keys, lookups));
        results.push(measure::<SkipMap<InlineKey, u64>>(keys, lookups));
        results.push(measure::<RwLock<BTreeMap<InlineKey, u64>>>(keys, lookups));
    }
    Ok(IndexReport {
        machine: Machine::detect(),
        command,
        lookups,
        results,
    })
}

pub fn markdown(r: &IndexReport) -> String {
    let mut out = String::from("# Memtable index candidates\n\n");
    out.push_str(&format!(
        "Machine: {} ({} cores). Command: `{}`. Keys: 26-byte internal keys (16-byte key, terminator, inverted seq), inserted in random order; {} lower-bound lookups of random present keys. One thread.\n\n",
        r.machine.cpu, r.machine.cores, r.command, r.lookups
    ));
    out.push_str("| structure | keys | insert ns/op | lookup ns/op | lookups timed |\n|---|---:|---:|---:|---:|\n");
    for x in &r.results {
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} | {} |\n",
            x.structure, x.keys, x.insert_ns, x.lookup_ns, x.lookups
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_candidate_finds_every_key() {
        let r = run(&[2000], 500, "test".into()).unwrap();
        assert_eq!(r.results.len(), 5);
        assert!(
            r.results
                .iter()
                .all(|x| x.insert_ns > 0.0 && x.lookup_ns > 0.0)
        );
        assert!(markdown(&r).contains("scc TreeIndex"));
    }

    #[test]
    fn refuses_empty_and_absurd_sizes() {
        for (keys, lookups) in [(0, 10), (10, 0), (MAX_KEYS + 1, 10)] {
            let e = run(&[keys], lookups, "test".into()).unwrap_err();
            assert!(e.to_string().contains("must be"), "{e}");
        }
    }
}
